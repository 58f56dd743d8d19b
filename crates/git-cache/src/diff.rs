//! A git-style patch printer over gix's tree and blob diffs.
//!
//! gix computes which files changed and, per file, which line ranges changed (Myers with git's
//! indent heuristic); this module turns that into the exact bytes `git diff` prints with its
//! default options: `a/` `b/` prefixes, 3 lines of context, function-name context in hunk
//! headers (git's default `def_ff`: a line starting with a letter, `_` or `$`), mode, rename and
//! binary headers, `index` lines abbreviated like git's, quoted paths (`core.quotePath`), and
//! `\ No newline at end of file`. The rules follow git's `diff.c` and `xdiff/xemit.c`.
//!
//! The `diff` attribute is honoured as git's `userdiff.c` does: `-diff` (and
//! the `binary` macro) prints "Binary files ... differ", `diff` forces a text diff, and
//! `diff=<driver>` takes the hunk-header patterns of git's built-in driver of that name.

use std::rc::Rc;

use gix::ObjectId;
use gix::bstr::BString;
use gix::diff::blob::{Algorithm, InternedInput, diff_with_slider_heuristics, sources::byte_lines};
use gix::objs::tree::EntryKind;

use crate::GitError;
use crate::ctype::is_git_space;
use crate::funcname::{FUNC_LINE_MAX, FuncName};
use crate::quote::{quote, quote_two};

/// Lines of context around each change (`diff.context`, default 3).
const CONTEXT: u32 = 3;
/// git's `MAX_SCORE`: similarity scores range over `0..=60000`.
pub(crate) const MAX_SCORE: f64 = 60000.0;
/// git's binary sniffing window (`FIRST_FEW_BYTES`).
const FIRST_FEW_BYTES: usize = 8000;
/// `core.bigFileThreshold`: larger files are binary without looking (512 MiB).
const BIG_FILE_THRESHOLD: usize = 512 << 20;

/// What the `diff` attribute of a path says (git's `userdiff_find_by_path`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Driver {
    /// `Some(true)` for `-diff` (or `binary`), `Some(false)` for `diff`; `None`: look at the
    /// content.
    pub binary: Option<bool>,
    /// The hunk-header patterns of `diff=<built-in driver>`; `None`: git's default rule.
    pub funcname: Option<&'static FuncName>,
}

impl Driver {
    /// git's `diff_filespec_is_binary`.
    fn is_binary(&self, data: &[u8]) -> bool {
        self.binary
            .unwrap_or_else(|| data.len() > BIG_FILE_THRESHOLD || is_binary(data))
    }
}

/// One side of a file pair: where it lives, its mode and its object id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Side {
    pub path: BString,
    pub kind: EntryKind,
    pub id: ObjectId,
}

impl Side {
    /// `S_ISREG`: regular files, executable or not.
    pub(crate) fn is_regular(&self) -> bool {
        matches!(self.kind, EntryKind::Blob | EntryKind::BlobExecutable)
    }

    /// The `S_IFMT` part of the mode: file, symlink, submodule or tree.
    fn format(&self) -> u8 {
        match self.kind {
            EntryKind::Blob | EntryKind::BlobExecutable => 0,
            EntryKind::Link => 1,
            EntryKind::Commit => 2,
            EntryKind::Tree => 3,
        }
    }

    fn mode(&self) -> &'static [u8] {
        self.kind.as_octal_str().as_ref()
    }
}

/// A file-level change as git's diff queue holds it after rename detection.
#[derive(Debug)]
pub(crate) enum FilePair {
    Added(Side),
    Deleted(Side),
    Modified(Side, Side),
    /// A rename with its similarity score in `0..=MAX_SCORE`.
    Renamed {
        old: Side,
        new: Side,
        score: i32,
    },
}

impl FilePair {
    /// The path git sorts the queue by (a rename sits where its destination is).
    pub(crate) fn sort_path(&self) -> &BString {
        match self {
            FilePair::Added(s) | FilePair::Deleted(s) => &s.path,
            FilePair::Modified(_, new) | FilePair::Renamed { new, .. } => &new.path,
        }
    }
}

/// Where blob contents come from.
pub(crate) trait Blobs {
    /// The bytes git diffs for `side`: the blob, or `Subproject commit <hex>\n` for a submodule.
    fn get(&mut self, side: &Side) -> Result<Rc<[u8]>, GitError>;
    /// The object id abbreviated as git prints it on `index` lines.
    fn abbrev(&mut self, id: &ObjectId) -> String;
    /// The diff driver of `path`, from the `.gitattributes` of the head commit.
    fn driver(&mut self, path: &BString) -> Driver;
    /// [`GitError::Interrupted`] once the caller's cancel flag is raised.
    fn interrupted(&self) -> Result<(), GitError>;
}

/// git's `buffer_is_binary`: a NUL byte in the first 8000 bytes.
pub(crate) fn is_binary(data: &[u8]) -> bool {
    data[..data.len().min(FIRST_FEW_BYTES)].contains(&0)
}

/// Appends the patch of one queue entry to `out`.
pub(crate) fn write_pair(
    out: &mut Vec<u8>,
    pair: &FilePair,
    blobs: &mut dyn Blobs,
) -> Result<(), GitError> {
    match pair {
        FilePair::Added(new) => write_file(out, None, Some(new), None, blobs),
        FilePair::Deleted(old) => write_file(out, Some(old), None, None, blobs),
        // A change between file, symlink and submodule is printed as a deletion and a creation.
        FilePair::Modified(old, new) if old.format() != new.format() => {
            write_file(out, Some(old), None, None, blobs)?;
            write_file(out, None, Some(new), None, blobs)
        }
        FilePair::Modified(old, new) => write_file(out, Some(old), Some(new), None, blobs),
        FilePair::Renamed { old, new, score } => {
            write_file(out, Some(old), Some(new), Some(*score), blobs)
        }
    }
}

fn write_file(
    out: &mut Vec<u8>,
    old: Option<&Side>,
    new: Option<&Side>,
    score: Option<i32>,
    blobs: &mut dyn Blobs,
) -> Result<(), GitError> {
    let (Some(name_a), Some(name_b)) = (old.or(new), new.or(old)) else {
        return Ok(());
    };
    let a_one = quote_two(b"a/", &name_a.path);
    let b_two = quote_two(b"b/", &name_b.path);
    let dev_null = b"/dev/null".to_vec();
    let label_a = if old.is_some() {
        a_one.clone()
    } else {
        dev_null.clone()
    };
    let label_b = if new.is_some() {
        b_two.clone()
    } else {
        dev_null
    };

    // git's fill_metainfo: similarity and rename lines, then the index line.
    let mut meta = Vec::new();
    if let (Some(score), Some(o), Some(n)) = (score, old, new) {
        let percent = (f64::from(score) * 100.0 / MAX_SCORE) as i32;
        meta.extend_from_slice(format!("similarity index {percent}%\n").as_bytes());
        meta.extend_from_slice(b"rename from ");
        meta.extend_from_slice(&quote(&o.path));
        meta.extend_from_slice(b"\nrename to ");
        meta.extend_from_slice(&quote(&n.path));
        meta.push(b'\n');
    }
    let null = ObjectId::null(gix::hash::Kind::Sha1);
    let old_id = old.map_or(null, |s| s.id);
    let new_id = new.map_or(null, |s| s.id);
    if old_id != new_id {
        meta.extend_from_slice(b"index ");
        meta.extend_from_slice(blobs.abbrev(&old_id).as_bytes());
        meta.extend_from_slice(b"..");
        meta.extend_from_slice(blobs.abbrev(&new_id).as_bytes());
        if let (Some(o), Some(n)) = (old, new)
            && o.kind == n.kind
        {
            meta.push(b' ');
            meta.extend_from_slice(o.mode());
        }
        meta.push(b'\n');
    }

    // git's builtin_diff: the header, and whether it shows even without content changes.
    let mut header = Vec::new();
    header.extend_from_slice(b"diff --git ");
    header.extend_from_slice(&a_one);
    header.push(b' ');
    header.extend_from_slice(&b_two);
    header.push(b'\n');
    let must_show_header = match (old, new) {
        (None, Some(n)) => {
            header.extend_from_slice(b"new file mode ");
            header.extend_from_slice(n.mode());
            header.push(b'\n');
            true
        }
        (Some(o), None) => {
            header.extend_from_slice(b"deleted file mode ");
            header.extend_from_slice(o.mode());
            header.push(b'\n');
            true
        }
        (Some(o), Some(n)) => {
            let mode_changed = o.kind != n.kind;
            if mode_changed {
                header.extend_from_slice(b"old mode ");
                header.extend_from_slice(o.mode());
                header.extend_from_slice(b"\nnew mode ");
                header.extend_from_slice(n.mode());
                header.push(b'\n');
            }
            mode_changed || score.is_some()
        }
        (None, None) => false,
    };
    header.extend_from_slice(&meta);

    let empty: Rc<[u8]> = Rc::from(Vec::new());
    let old_data = match old {
        Some(s) => blobs.get(s)?,
        None => empty.clone(),
    };
    let new_data = match new {
        Some(s) => blobs.get(s)?,
        None => empty,
    };

    let (driver_a, driver_b) = (blobs.driver(&name_a.path), blobs.driver(&name_b.path));
    if driver_a.is_binary(&old_data) || driver_b.is_binary(&new_data) {
        if old_data == new_data {
            if must_show_header {
                out.extend_from_slice(&header);
            }
            return Ok(());
        }
        out.extend_from_slice(&header);
        out.extend_from_slice(b"Binary files ");
        out.extend_from_slice(&label_a);
        out.extend_from_slice(b" and ");
        out.extend_from_slice(&label_b);
        out.extend_from_slice(b" differ\n");
        return Ok(());
    }

    let mut body = Vec::new();
    let funcname = driver_a.funcname.or(driver_b.funcname);
    if !write_hunks(&mut body, &old_data, &new_data, funcname) {
        if must_show_header {
            out.extend_from_slice(&header);
        }
        return Ok(());
    }
    out.extend_from_slice(&header);
    for (marker, label) in [(b"--- ", &label_a), (b"+++ ", &label_b)] {
        out.extend_from_slice(marker);
        out.extend_from_slice(label);
        // git appends a tab to labels containing a space, so patch tools find the name's end.
        if label.contains(&b' ') {
            out.push(b'\t');
        }
        out.push(b'\n');
    }
    out.extend_from_slice(&body);
    Ok(())
}

/// One change of xdiff's edit script: `c1` lines at `i1` of the old file became `c2` lines at
/// `i2` of the new one (0-based).
#[derive(Clone, Copy, Debug)]
struct Change {
    i1: u32,
    c1: u32,
    i2: u32,
    c2: u32,
}

/// Writes the hunks of `old` -> `new` as xdiff's `xdl_emit_diff` does, function lines found by
/// `funcname` (else git's default rule); false when equal.
fn write_hunks(out: &mut Vec<u8>, old: &[u8], new: &[u8], funcname: Option<&FuncName>) -> bool {
    let old_lines: Vec<&[u8]> = byte_lines(old).collect();
    let new_lines: Vec<&[u8]> = byte_lines(new).collect();
    let input = InternedInput::new(byte_lines(old), byte_lines(new));
    let diff = diff_with_slider_heuristics(Algorithm::Myers, &input);
    let changes: Vec<Change> = diff
        .hunks()
        .map(|h| Change {
            i1: h.before.start,
            c1: h.before.end - h.before.start,
            i2: h.after.start,
            c2: h.after.end - h.after.start,
        })
        .collect();
    if changes.is_empty() {
        return false;
    }
    let n1 = old_lines.len() as u32;
    let n2 = new_lines.len() as u32;

    // The function line is remembered across hunks: each search only covers the lines
    // between the previous hunk's start and this one's (xemit.c's funclineprev).
    let mut func_line: Vec<u8> = Vec::new();
    let mut func_search_limit: i64 = -1;

    let mut first = 0;
    while first < changes.len() {
        // xdl_get_hunk: merge changes separated by at most 2 * context unchanged lines.
        let mut last = first;
        while last + 1 < changes.len() {
            let prev = changes[last];
            if changes[last + 1].i1 - (prev.i1 + prev.c1) > 2 * CONTEXT {
                break;
            }
            last += 1;
        }
        let (f, l) = (changes[first], changes[last]);
        let mut s1 = f.i1.saturating_sub(CONTEXT);
        let mut s2 = f.i2.saturating_sub(CONTEXT);
        let trailing = CONTEXT.min(n1 - (l.i1 + l.c1)).min(n2 - (l.i2 + l.c2));
        let e1 = l.i1 + l.c1 + trailing;
        let e2 = l.i2 + l.c2 + trailing;

        let start = i64::from(s1) - 1;
        let mut line = start;
        while line > func_search_limit && line >= 0 {
            let record = old_lines[line as usize];
            let found = match funcname {
                Some(f) => f.find(record),
                None => def_ff(record),
            };
            if let Some(found) = found {
                func_line = found;
                break;
            }
            line -= 1;
        }
        func_search_limit = start;

        write_hunk_header(out, s1 + 1, e1 - s1, s2 + 1, e2 - s2, &func_line);
        for change in &changes[first..=last] {
            while s1 < change.i1 && s2 < change.i2 {
                write_record(out, b' ', new_lines[s2 as usize]);
                s1 += 1;
                s2 += 1;
            }
            for i in change.i1..change.i1 + change.c1 {
                write_record(out, b'-', old_lines[i as usize]);
            }
            for i in change.i2..change.i2 + change.c2 {
                write_record(out, b'+', new_lines[i as usize]);
            }
            s1 = change.i1 + change.c1;
            s2 = change.i2 + change.c2;
        }
        for i in s2..e2 {
            write_record(out, b' ', new_lines[i as usize]);
        }
        first = last + 1;
    }
    true
}

/// git's default function-name rule (`def_ff` in xemit.c): lines starting with a letter, `_`
/// or `$`, cut to 80 bytes, trailing whitespace removed.
fn def_ff(record: &[u8]) -> Option<Vec<u8>> {
    let first = *record.first()?;
    if !(first.is_ascii_alphabetic() || first == b'_' || first == b'$') {
        return None;
    }
    let mut line = &record[..record.len().min(FUNC_LINE_MAX)];
    while let Some((&last, rest)) = line.split_last() {
        if !is_git_space(last) {
            break;
        }
        line = rest;
    }
    Some(line.to_vec())
}

/// `@@ -s1,c1 +s2,c2 @@ func` (xutils.c's xdl_emit_hunk_hdr): a count of 1 is omitted and an
/// empty side starts one line earlier.
fn write_hunk_header(out: &mut Vec<u8>, s1: u32, c1: u32, s2: u32, c2: u32, func: &[u8]) {
    let side = |start: u32, count: u32| -> String {
        let start = if count == 0 { start - 1 } else { start };
        if count == 1 {
            start.to_string()
        } else {
            format!("{start},{count}")
        }
    };
    out.extend_from_slice(format!("@@ -{} +{} @@", side(s1, c1), side(s2, c2)).as_bytes());
    if !func.is_empty() {
        out.push(b' ');
        out.extend_from_slice(func);
    }
    out.push(b'\n');
}

fn write_record(out: &mut Vec<u8>, prefix: u8, record: &[u8]) {
    out.push(prefix);
    out.extend_from_slice(record);
    if record.last() != Some(&b'\n') {
        out.extend_from_slice(b"\n\\ No newline at end of file\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunks(old: &str, new: &str) -> String {
        let mut out = Vec::new();
        write_hunks(&mut out, old.as_bytes(), new.as_bytes(), None);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn single_line_counts_are_omitted_and_empty_sides_start_at_zero() {
        assert_eq!(hunks("", "a\n"), "@@ -0,0 +1 @@\n+a\n");
        assert_eq!(hunks("a\nb\n", ""), "@@ -1,2 +0,0 @@\n-a\n-b\n");
    }

    #[test]
    fn missing_final_newline_is_marked() {
        assert_eq!(
            hunks("a\n", "a"),
            "@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn function_context_comes_from_the_old_side_above_the_hunk() {
        let old = "fn main() {\n  1\n  2\n  3\n  4\n  5\n}\n";
        let new = "fn main() {\n  1\n  2\n  3\n  4\n  five\n}\n";
        assert_eq!(
            hunks(old, new),
            "@@ -3,5 +3,5 @@ fn main() {\n   2\n   3\n   4\n-  5\n+  five\n }\n"
        );
    }
}
