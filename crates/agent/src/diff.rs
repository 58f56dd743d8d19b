//! Unified diffs as `git diff base...head` prints them: split into files and hunks, to check
//! inline comments against the lines GitHub accepts (a review with one comment outside the diff
//! fails whole with 422, docs/background.md, "What users of PR reviewers complain about") and to cap very large diffs at file boundaries.

use review_domain::Side;

/// One `diff --git` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// Path on the old side (`a/`), None for an added file.
    pub old_path: Option<String>,
    /// Path on the new side (`b/`), None for a deleted file.
    pub new_path: Option<String>,
    /// The section's text, headers included, ending in a newline.
    pub text: String,
    /// Hunks in order.
    pub hunks: Vec<Hunk>,
}

impl FileDiff {
    /// The path comments use: the new path, or the old one for a deleted file.
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("")
    }

    fn matches(&self, path: &str) -> bool {
        let path = path.trim_start_matches("./");
        self.new_path.as_deref() == Some(path) || self.old_path.as_deref() == Some(path)
    }
}

/// One hunk: the commentable line numbers of each side.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hunk {
    /// Old-file line numbers of removed and context lines (LEFT side).
    pub left: Vec<i64>,
    /// New-file line numbers of added and context lines (RIGHT side).
    pub right: Vec<i64>,
    /// New-file line numbers of added lines only.
    pub added: Vec<i64>,
}

/// A parsed diff.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParsedDiff {
    /// Text before the first `diff --git` (normally empty).
    pub preamble: String,
    /// Files in order.
    pub files: Vec<FileDiff>,
}

fn strip_prefix_path(p: &str, prefix: &str) -> Option<String> {
    let p = p.trim_end_matches('\t').trim();
    if p == "/dev/null" {
        return None;
    }
    let p = p
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(p);
    Some(p.strip_prefix(prefix).unwrap_or(p).to_owned())
}

fn parse_range(s: &str) -> Option<i64> {
    // "-12,3" or "+7" -> start line
    s[1..].split(',').next()?.parse().ok()
}

/// Parses `git diff` output. Never fails: what it cannot read it keeps as text without hunks.
pub fn parse(diff: &str) -> ParsedDiff {
    let mut out = ParsedDiff::default();
    let mut current: Option<FileDiff> = None;
    let mut old_line = 0i64;
    let mut new_line = 0i64;
    let mut in_hunk = false;
    for line in diff.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        if let Some(rest) = body.strip_prefix("diff --git ") {
            if let Some(f) = current.take() {
                out.files.push(f);
            }
            in_hunk = false;
            // Best effort from the header; `---`/`+++` lines refine it.
            let (a, b) = match rest.split_once(" b/") {
                Some((a, b)) => (strip_prefix_path(a, "a/"), Some(b.to_owned())),
                None => (None, None),
            };
            current = Some(FileDiff {
                old_path: a,
                new_path: b,
                text: String::new(),
                hunks: Vec::new(),
            });
        }
        let Some(file) = current.as_mut() else {
            out.preamble.push_str(line);
            continue;
        };
        file.text.push_str(line);
        if body.starts_with("@@") {
            let mut parts = body.split_whitespace().skip(1);
            let old = parts.next().and_then(parse_range);
            let new = parts.next().and_then(parse_range);
            if let (Some(o), Some(n)) = (old, new) {
                old_line = o;
                new_line = n;
                in_hunk = true;
                file.hunks.push(Hunk::default());
            }
            continue;
        }
        if !in_hunk {
            if let Some(p) = body.strip_prefix("--- ") {
                file.old_path = strip_prefix_path(p, "a/");
            } else if let Some(p) = body.strip_prefix("+++ ") {
                file.new_path = strip_prefix_path(p, "b/");
            } else if body.starts_with("new file mode") {
                file.old_path = None;
            } else if body.starts_with("deleted file mode") {
                file.new_path = None;
            } else if let Some(p) = body.strip_prefix("rename from ") {
                file.old_path = Some(p.to_owned());
            } else if let Some(p) = body.strip_prefix("rename to ") {
                file.new_path = Some(p.to_owned());
            }
            continue;
        }
        let Some(hunk) = file.hunks.last_mut() else {
            continue;
        };
        match body.as_bytes().first() {
            Some(b'+') => {
                hunk.right.push(new_line);
                hunk.added.push(new_line);
                new_line += 1;
            }
            Some(b'-') => {
                hunk.left.push(old_line);
                old_line += 1;
            }
            Some(b' ') | None => {
                hunk.left.push(old_line);
                hunk.right.push(new_line);
                old_line += 1;
                new_line += 1;
            }
            Some(b'\\') => {} // "\ No newline at end of file"
            _ => in_hunk = false,
        }
    }
    if let Some(f) = current.take() {
        out.files.push(f);
    }
    out
}

impl ParsedDiff {
    /// The section of one file (by new or old path).
    pub fn file(&self, path: &str) -> Option<&FileDiff> {
        self.files.iter().find(|f| f.matches(path))
    }

    /// Whether GitHub accepts an inline comment here: `line` (and `start_line`, when given, in
    /// the same hunk and not after `line`) is an added or context line for RIGHT, a removed or
    /// context line for LEFT. Err says why not, for the folded section.
    pub fn check_comment(
        &self,
        path: &str,
        line: i64,
        start_line: Option<i64>,
        side: Side,
    ) -> Result<(), String> {
        let Some(file) = self.file(path) else {
            return Err(format!("{path} is not part of the diff"));
        };
        let lines = |h: &Hunk| -> Vec<i64> {
            match side {
                Side::Right => h.right.clone(),
                Side::Left => h.left.clone(),
            }
        };
        let Some(hunk) = file.hunks.iter().find(|h| lines(h).contains(&line)) else {
            return Err(format!(
                "line {line} ({side}) of {path} is outside the diff's hunks"
            ));
        };
        if let Some(start) = start_line {
            if start > line {
                return Err(format!("start_line {start} is after line {line}"));
            }
            if !lines(hunk).contains(&start) {
                return Err(format!(
                    "start_line {start} is not in the same hunk as line {line}"
                ));
            }
        }
        Ok(())
    }
}

/// A diff cut to a byte budget at file boundaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CappedDiff {
    /// The kept files' text, followed by a note naming the omitted files when any were cut.
    pub text: String,
    /// Paths left out.
    pub omitted: Vec<String>,
    /// Size of the whole diff in bytes.
    pub total_bytes: usize,
}

impl CappedDiff {
    /// Whether anything was left out.
    pub fn is_capped(&self) -> bool {
        !self.omitted.is_empty()
    }
}

/// Keeps whole files in order while they fit in `cap` bytes; files that do not fit are named in
/// a note at the end (smaller later files may still be kept).
pub fn cap(parsed: &ParsedDiff, cap: usize) -> CappedDiff {
    let total_bytes =
        parsed.preamble.len() + parsed.files.iter().map(|f| f.text.len()).sum::<usize>();
    let mut text = parsed.preamble.clone();
    let mut omitted = Vec::new();
    if total_bytes <= cap {
        for f in &parsed.files {
            text.push_str(&f.text);
        }
        return CappedDiff {
            text,
            omitted,
            total_bytes,
        };
    }
    for f in &parsed.files {
        if text.len() + f.text.len() <= cap {
            text.push_str(&f.text);
        } else {
            omitted.push(f.path().to_owned());
        }
    }
    text.push_str(&format!(
        "\n[diff capped: the full diff is {total_bytes} bytes, over the {cap}-byte limit; {} file(s) omitted: {}. Use read_file or git_diff with `path` to inspect them.]\n",
        omitted.len(),
        omitted.join(", ")
    ));
    CappedDiff {
        text,
        omitted,
        total_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const DIFF: &str = "diff --git a/src/a.rs b/src/a.rs
index 1111111..2222222 100644
--- a/src/a.rs
+++ b/src/a.rs
@@ -1,4 +1,5 @@
 fn main() {
-    old();
+    let x = y.unwrap();
+    // TODO later
     done();
 }
@@ -20,2 +21,3 @@ fn other() {
 a
+b
 c
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+one
+two
";

    #[test]
    fn hunks_record_commentable_lines_per_side() {
        let d = parse(DIFF);
        assert_eq!(d.files.len(), 2);
        let a = &d.files[0];
        assert_eq!(a.path(), "src/a.rs");
        assert_eq!(a.hunks[0].added, vec![2, 3]);
        assert_eq!(a.hunks[0].right, vec![1, 2, 3, 4, 5]);
        assert_eq!(a.hunks[0].left, vec![1, 2, 3, 4]);
        assert_eq!(a.hunks[1].added, vec![22]);
        let n = &d.files[1];
        assert_eq!((n.old_path.clone(), n.path()), (None, "new.txt"));
        assert_eq!(n.hunks[0].added, vec![1, 2]);
    }

    #[test]
    fn comments_outside_hunks_or_spanning_hunks_are_refused() {
        let d = parse(DIFF);
        assert_eq!(d.check_comment("src/a.rs", 2, None, Side::Right), Ok(()));
        assert_eq!(d.check_comment("src/a.rs", 2, None, Side::Left), Ok(()));
        assert!(d.check_comment("src/a.rs", 10, None, Side::Right).is_err());
        assert!(d.check_comment("src/a.rs", 5, None, Side::Left).is_err());
        assert_eq!(d.check_comment("src/a.rs", 3, Some(1), Side::Right), Ok(()));
        assert!(
            d.check_comment("src/a.rs", 22, Some(3), Side::Right)
                .is_err()
        );
        assert!(d.check_comment("other.rs", 1, None, Side::Right).is_err());
    }

    #[test]
    fn cap_cuts_at_file_boundaries_and_names_what_was_left_out() {
        let d = parse(DIFF);
        let first = d.files[0].text.len();
        let c = cap(&d, first + 5);
        assert_eq!(c.omitted, vec!["new.txt".to_owned()]);
        assert!(c.text.starts_with(&d.files[0].text));
        assert!(c.text.contains("omitted: new.txt"));
        let whole = cap(&d, 1 << 20);
        assert!(!whole.is_capped());
        assert_eq!(whole.text, DIFF);
    }
}
