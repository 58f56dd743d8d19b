//! Repeated findings (docs/review-service.md, "Repeated findings"): the fingerprint of an
//! inline finding is a hash of its file and the code it anchors to, with two lines before and
//! after, each line trimmed and its inner whitespace collapsed. Moving the lines (code added
//! above them) keeps it; changing that code changes it. A later review of the pull request does
//! not post a finding whose fingerprint was already posted there with the same claim.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Share of distinct words (of three letters or more) two bodies must have in common to make
/// the same claim (Jaccard index).
const SAME_CLAIM: f64 = 0.3;

/// Whether two finding bodies make the same claim: they share at least [`SAME_CLAIM`] of their
/// words of three letters or more, case aside. Used to merge the candidates of several passes
/// and to recognise a repeated finding.
pub fn same_claim(a: &str, b: &str) -> bool {
    fn words(body: &str) -> BTreeSet<String> {
        body.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 3)
            .map(str::to_lowercase)
            .collect()
    }
    let (wa, wb) = (words(a), words(b));
    let union = wa.union(&wb).count();
    union == 0 || wa.intersection(&wb).count() as f64 / union as f64 >= SAME_CLAIM
}

/// Lines of context on each side that belong to the fingerprint.
const CONTEXT_LINES: usize = 2;

/// Largest file read to fingerprint a finding, in bytes; larger files give none.
const MAX_FILE_BYTES: u64 = 4 << 20;

/// The fingerprint of lines `start..=end` (1-based, new file) of `text` in `path`: 16 hex
/// characters of a SHA-256; None when the range is not in the text.
pub fn of_lines(path: &str, text: &str, start: i64, end: i64) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let (start, end) = (usize::try_from(start).ok()?, usize::try_from(end).ok()?);
    if start == 0 || end < start || end > lines.len() {
        return None;
    }
    let from = (start - 1).saturating_sub(CONTEXT_LINES);
    let to = (end + CONTEXT_LINES).min(lines.len());
    let mut hasher = Sha256::new();
    hasher.update(path.as_bytes());
    for (i, line) in lines[from..to].iter().enumerate() {
        // The anchored lines and the context are told apart, so a shift of the range is not
        // the same fingerprint.
        let anchored = from + i + 1 >= start && from + i < end;
        hasher.update(if anchored { b"\n>" } else { b"\n " });
        hasher.update(
            line.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .as_bytes(),
        );
    }
    let digest = hasher.finalize();
    Some(digest.iter().take(8).map(|b| format!("{b:02x}")).collect())
}

/// Line `line` (1-based) of `text`, trimmed and with its inner whitespace collapsed, as the
/// fingerprint reads it; None when out of range. A dismissed finding is recognised by it
/// (docs/review-service.md, "Finding outcomes").
pub fn normalized_line(text: &str, line: i64) -> Option<String> {
    let at = usize::try_from(line).ok()?.checked_sub(1)?;
    let l = text.lines().nth(at)?;
    Some(l.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The text of `file` (a path resolved in the worktree by the caller), or None when it cannot
/// be read as text within [`MAX_FILE_BYTES`].
pub fn read_text(file: &Path) -> Option<String> {
    let file = std::fs::File::open(file).ok()?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .ok()?;
    (text.len() as u64 <= MAX_FILE_BYTES).then_some(text)
}

/// [`of_lines`] of `path` as read from `file` (its place in the head's worktree, resolved by
/// the caller inside the worktree); None when it cannot be read as text within
/// [`MAX_FILE_BYTES`].
pub fn of_file(file: &Path, path: &str, start: i64, end: i64) -> Option<String> {
    of_lines(path, &read_text(file)?, start, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODE: &str = "fn a() {\n    let x = 1;\n    let y = x.unwrap();\n    y\n}\n";

    #[test]
    fn moving_the_lines_keeps_the_fingerprint_and_changing_them_does_not() {
        let here = of_lines("src/a.rs", CODE, 3, 3).unwrap();
        let moved = format!("// new\n// lines\n{CODE}");
        assert_eq!(of_lines("src/a.rs", &moved, 5, 5).as_ref(), Some(&here));
        let reindented = CODE.replace("    let y", "\tlet  y");
        assert_eq!(
            of_lines("src/a.rs", &reindented, 3, 3).as_ref(),
            Some(&here)
        );
        let changed = CODE.replace("x.unwrap()", "x.expect(\"x\")");
        assert_ne!(of_lines("src/a.rs", &changed, 3, 3).as_ref(), Some(&here));
        assert_ne!(of_lines("src/b.rs", CODE, 3, 3).as_ref(), Some(&here));
        assert_ne!(of_lines("src/a.rs", CODE, 2, 3).as_ref(), Some(&here));
        assert_eq!(of_lines("src/a.rs", CODE, 9, 9), None);
        assert_eq!(here.len(), 16);
    }
}
