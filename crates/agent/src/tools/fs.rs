//! Read-only tools over the worktree: read_file, list_files, grep, and git_diff over the job's
//! base...head diff. Output is capped so one call cannot flood the context.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::path::Root;
use super::{ToolContext, ToolError, ToolHandler, parse_args};
use crate::error::AgentError;
use crate::provider::ToolSpec;

/// read_file returns at most this many bytes of a file's text.
const READ_CAP_BYTES: usize = 128 * 1024;
/// read_file's read buffer: lines before `start_line` pass through it without being kept.
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// read_file returns at most this many lines per call.
const READ_CAP_LINES: usize = 2000;
/// list_files returns at most this many entries.
const LIST_CAP: usize = 1000;
/// grep returns at most this many matching lines.
const GREP_CAP: usize = 200;
/// grep skips files larger than this.
const GREP_FILE_CAP: u64 = 2 * 1024 * 1024;

fn is_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8192).any(|b| *b == 0)
}

fn skip_dir(name: &str) -> bool {
    name == ".git"
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("tool task failed: {e}"))?
}

/// A file tool's outcome: its error goes back to the model, unless the worktree itself is gone
/// (removed under the run; then even an empty search result would be false), which no later
/// call can mend: then the run stops with [`AgentError::Worktree`].
fn on_worktree(root: &Root, result: Result<String, String>) -> Result<String, ToolError> {
    if !root.path().is_dir() {
        return Err(ToolError::Fatal(AgentError::Worktree {
            path: root.path().display().to_string(),
            source: result.err().map(Into::into),
        }));
    }
    result.map_err(ToolError::RespondToModel)
}

pub(super) struct ReadFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    #[serde(default, alias = "startLine")]
    start_line: Option<usize>,
    #[serde(default, alias = "endLine")]
    end_line: Option<usize>,
}

#[async_trait::async_trait]
impl ToolHandler for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: format!(
                "Read a text file of the repository at the PR head, with line numbers. Paths are relative to the repository root. Optional 1-based inclusive start_line/end_line; at most {READ_CAP_LINES} lines or {} KiB per call.",
                READ_CAP_BYTES / 1024
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the repository root"},
                    "start_line": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    async fn handle(&self, ctx: &ToolContext<'_>, args: Value) -> Result<String, ToolError> {
        let args: ReadArgs = parse_args("read_file", args)?;
        let root = ctx.root.clone();
        on_worktree(&ctx.root, blocking(move || read_file(&root, &args)).await)
    }
}

/// Reads `args.path` from `start_line` on, holding at most one 64 KiB buffer plus
/// `READ_CAP_BYTES + 1` bytes of the file in memory whatever its size: the
/// lines before `start_line` are skipped through the buffer without being kept, and the rest
/// is read through `Read::take(READ_CAP_BYTES + 1)`, so a larger file is never read whole.
fn read_file(root: &Root, args: &ReadArgs) -> Result<String, String> {
    let path = root.resolve(&args.path)?;
    if path.is_dir() {
        return Err(format!("{} is a directory; use list_files", args.path));
    }
    let cannot = |e: std::io::Error| format!("cannot read {}: {e}", args.path);
    let file = std::fs::File::open(&path).map_err(cannot)?;
    let size = file.metadata().map_err(cannot)?.len();
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, file);
    if is_binary(reader.fill_buf().map_err(cannot)?) {
        return Err(format!("{} is a binary file ({size} bytes)", args.path));
    }
    let start = args.start_line.unwrap_or(1).max(1);
    let mut skipped = 0usize;
    while skipped + 1 < start {
        if reader.skip_until(b'\n').map_err(cannot)? == 0 {
            return Err(format!(
                "start_line {start} is past the end of {} ({skipped} lines)",
                args.path
            ));
        }
        skipped += 1;
    }
    if let Some(end) = args.end_line
        && end < start
    {
        return Err(format!("end_line {end} is before start_line {start}"));
    }
    let mut bytes = Vec::new();
    (&mut reader)
        .take(READ_CAP_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    // All of the rest of the file fits under the cap: the line count is known.
    let complete = bytes.len() <= READ_CAP_BYTES;
    bytes.truncate(READ_CAP_BYTES);
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut cut_line = false;
    if !complete && lines.last().is_some_and(|l| !l.ends_with('\n')) {
        if lines.len() > 1 {
            lines.pop();
        } else {
            cut_line = true;
        }
    }
    let total = complete.then(|| skipped + lines.len());
    let want_end = match (args.end_line, total) {
        (Some(end), Some(total)) => end.min(total),
        (Some(end), None) => end,
        (None, Some(total)) => total,
        (None, None) => usize::MAX,
    };
    let rel = root.relative(&path);
    let mut out = String::new();
    let mut last = start - 1;
    for (i, line) in lines.iter().enumerate() {
        let n = start + i;
        if n > want_end || n - start >= READ_CAP_LINES {
            break;
        }
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        out.push_str(&format!("{n:>6}\t{line}\n"));
        last = n;
    }
    let mut header = match total {
        Some(total) => format!("{rel} (lines {start}-{last} of {total})\n"),
        None => format!("{rel} (lines {start}-{last} of a {size}-byte file)\n"),
    };
    if cut_line {
        header.push_str(&format!(
            "[line {start} is longer than {} KiB; only its start is shown]\n",
            READ_CAP_BYTES / 1024
        ));
    } else if last < want_end {
        header.push_str(&format!(
            "[output capped; continue with start_line {}]\n",
            last + 1
        ));
    }
    Ok(header + &out)
}

pub(super) struct ListFiles;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    recursive: Option<bool>,
}

#[async_trait::async_trait]
impl ToolHandler for ListFiles {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_files".into(),
            description: format!(
                "List a directory of the repository (default: the root). Directories end in '/'. recursive=true lists the whole subtree (skipping .git). At most {LIST_CAP} entries."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory relative to the repository root; default \".\""},
                    "recursive": {"type": "boolean", "description": "List the whole subtree; default false"}
                },
                "additionalProperties": false
            }),
        }
    }

    async fn handle(&self, ctx: &ToolContext<'_>, args: Value) -> Result<String, ToolError> {
        let args: ListArgs = parse_args("list_files", args)?;
        let root = ctx.root.clone();
        on_worktree(&ctx.root, blocking(move || list_files(&root, &args)).await)
    }
}

fn list_files(root: &Root, args: &ListArgs) -> Result<String, String> {
    let rel = args.path.clone().unwrap_or_else(|| ".".into());
    let dir = root.resolve(&rel)?;
    if !dir.is_dir() {
        return Err(format!("{rel} is not a directory; use read_file"));
    }
    let depth = if args.recursive.unwrap_or(false) {
        usize::MAX
    } else {
        1
    };
    let mut entries = Vec::new();
    let mut capped = false;
    let walker = walkdir::WalkDir::new(&dir)
        .min_depth(1)
        .max_depth(depth)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !skip_dir(&e.file_name().to_string_lossy()));
    for entry in walker.flatten() {
        if entries.len() >= LIST_CAP {
            capped = true;
            break;
        }
        let shown = root.relative(entry.path());
        if entry.file_type().is_dir() {
            entries.push(format!("{shown}/"));
        } else if entry.path_is_symlink() && !root.contains(entry.path()) {
            entries.push(format!("{shown} (symlink outside the repository)"));
        } else {
            entries.push(shown);
        }
    }
    let mut out = entries.join("\n");
    if entries.is_empty() {
        out = format!("{rel} is empty");
    }
    if capped {
        out.push_str(&format!("\n[listing capped at {LIST_CAP} entries]"));
    }
    Ok(out)
}

pub(super) struct Grep;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    pattern: String,
    #[serde(default, alias = "glob", alias = "include")]
    path: Option<String>,
    #[serde(default)]
    ignore_case: Option<bool>,
}

#[async_trait::async_trait]
impl ToolHandler for Grep {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".into(),
            description: format!(
                "Search the repository's text files for a regular expression (Rust regex syntax). Optional `path`: a directory or a glob over repository-relative paths (e.g. \"src/**/*.rs\"). Prints path:line: text; at most {GREP_CAP} matches."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression"},
                    "path": {"type": "string", "description": "Directory or glob restricting the files searched"},
                    "ignore_case": {"type": "boolean"}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        }
    }

    async fn handle(&self, ctx: &ToolContext<'_>, args: Value) -> Result<String, ToolError> {
        let args: GrepArgs = parse_args("grep", args)?;
        let root = ctx.root.clone();
        on_worktree(&ctx.root, blocking(move || grep(&root, &args)).await)
    }
}

enum Filter {
    All,
    Dir(String),
    Glob(glob::Pattern),
}

impl Filter {
    fn matches(&self, rel: &str) -> bool {
        match self {
            Filter::All => true,
            Filter::Dir(d) => rel.starts_with(&format!("{d}/")) || rel == d,
            Filter::Glob(g) => {
                g.matches(rel) || rel.rsplit('/').next().is_some_and(|name| g.matches(name))
            }
        }
    }
}

fn grep(root: &Root, args: &GrepArgs) -> Result<String, String> {
    let re = regex::RegexBuilder::new(&args.pattern)
        .case_insensitive(args.ignore_case.unwrap_or(false))
        .size_limit(1 << 20)
        .build()
        .map_err(|e| format!("invalid regular expression: {e}"))?;
    let filter = match args
        .path
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty() && *p != ".")
    {
        None => Filter::All,
        Some(p) if p.contains(['*', '?', '[']) => {
            if Path::new(p).is_absolute() || p.split('/').any(|c| c == "..") {
                return Err(format!("path {p:?} must stay inside the repository"));
            }
            Filter::Glob(glob::Pattern::new(p).map_err(|e| format!("invalid glob {p:?}: {e}"))?)
        }
        Some(p) => {
            let dir = root.resolve(p)?;
            Filter::Dir(root.relative(&dir))
        }
    };
    let mut out = Vec::new();
    let mut files_searched = 0usize;
    let mut capped = false;
    let walker = walkdir::WalkDir::new(root.path())
        .min_depth(1)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !skip_dir(&e.file_name().to_string_lossy()));
    'files: for entry in walker.flatten() {
        if !entry.file_type().is_file() {
            continue; // symlinks are not followed: their targets may lie outside the root
        }
        let rel = root.relative(entry.path());
        if !filter.matches(&rel) {
            continue;
        }
        if entry
            .metadata()
            .map(|m| m.len() > GREP_FILE_CAP)
            .unwrap_or(true)
        {
            continue;
        }
        let Ok(bytes) = std::fs::read(entry.path()) else {
            continue;
        };
        if is_binary(&bytes) {
            continue;
        }
        files_searched += 1;
        let text = String::from_utf8_lossy(&bytes);
        for (i, line) in text.lines().enumerate() {
            if re.is_match(line) {
                if out.len() >= GREP_CAP {
                    capped = true;
                    break 'files;
                }
                let shown: String = line.chars().take(300).collect();
                out.push(format!("{rel}:{}: {shown}", i + 1));
            }
        }
    }
    if out.is_empty() {
        return Ok(format!("no matches ({files_searched} files searched)"));
    }
    let mut text = out.join("\n");
    if capped {
        text.push_str(&format!(
            "\n[matches capped at {GREP_CAP}; narrow the pattern or path]"
        ));
    }
    Ok(text)
}

pub(super) struct GitDiff;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DiffArgs {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    scope: Option<DiffScope>,
}

/// Which diff git_diff shows.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum DiffScope {
    /// The change since the last reviewed head (a re-review), else the pull request's diff.
    SinceLastReview,
    /// The pull request's whole diff, base...head.
    PullRequest,
}

#[async_trait::async_trait]
impl ToolHandler for GitDiff {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "git_diff".into(),
            description: "The pull request's diff (`git diff base...head`). Without arguments: the whole diff (very large diffs are capped at file boundaries, with a note naming the omitted files); on a re-review, the change since the last reviewed head. With `path`: only that file's diff. With `scope`: \"pull_request\" for the whole pull request's diff, \"since_last_review\" for the change since the last review.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Show only this file's diff"},
                    "scope": {"type": "string", "enum": ["since_last_review", "pull_request"], "description": "Which diff: default since_last_review on a re-review, else pull_request"}
                },
                "additionalProperties": false
            }),
        }
    }

    async fn handle(&self, ctx: &ToolContext<'_>, args: Value) -> Result<String, ToolError> {
        let args: DiffArgs = parse_args("git_diff", args)?;
        let (diff, capped, what) = match (&ctx.since, args.scope) {
            (Some(s), None | Some(DiffScope::SinceLastReview)) => {
                (&s.parsed, &s.capped, "the change since the last review")
            }
            _ => (&ctx.diff, &ctx.capped, "this PR"),
        };
        match args
            .path
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            None if capped.text.is_empty() => Ok("the diff is empty".into()),
            None => Ok(capped.text.clone()),
            Some(p) => {
                let file = diff.file(p).ok_or_else(|| {
                    format!(
                        "{p} is not changed by {what}; changed files: {}",
                        diff.files
                            .iter()
                            .map(|f| f.path())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?;
                if file.text.len() > ctx.cap_bytes {
                    let mut cut = ctx.cap_bytes;
                    while !file.text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    Ok(format!(
                        "{}\n[this file's diff is {} bytes; cut at {} bytes. Use read_file for the rest.]",
                        &file.text[..cut],
                        file.text.len(),
                        ctx.cap_bytes
                    ))
                } else {
                    Ok(file.text.clone())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(root: &Root, path: &str, start: Option<usize>, end: Option<usize>) -> String {
        let args = ReadArgs {
            path: path.into(),
            start_line: start,
            end_line: end,
        };
        read_file(root, &args).unwrap_or_else(|e| format!("error: {e}"))
    }

    /// 40 000 lines of 100 bytes: 4 MB, thirty times the cap.
    fn large(dir: &Path) -> Root {
        let line = format!("{}\n", "x".repeat(99));
        std::fs::write(dir.join("big.txt"), line.repeat(40_000)).unwrap();
        Root::new(dir).unwrap()
    }

    #[test]
    fn a_large_file_is_read_up_to_the_cap_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = large(dir.path());
        let out = read(&root, "big.txt", None, None);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "big.txt (lines 1-1310 of a 4000000-byte file)");
        assert_eq!(lines[1], "[output capped; continue with start_line 1311]");
        assert_eq!(lines.len(), 2 + 1310);
        assert!(
            out.len() <= READ_CAP_BYTES + READ_CAP_BYTES / 8,
            "{}",
            out.len()
        );
    }

    #[test]
    fn a_start_line_deep_in_a_large_file_is_reached_by_skipping() {
        let dir = tempfile::tempdir().unwrap();
        let root = large(dir.path());
        let out = read(&root, "big.txt", Some(39_999), None);
        assert!(
            out.starts_with("big.txt (lines 39999-40000 of 40000)\n 39999\txxx"),
            "{}",
            &out[..80]
        );
        assert_eq!(
            read(&root, "big.txt", Some(40_002), None),
            "error: start_line 40002 is past the end of big.txt (40000 lines)"
        );
    }

    #[test]
    fn a_line_longer_than_the_cap_is_cut_and_said_so() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("one.min.js"), "y".repeat(1 << 20)).unwrap();
        let root = Root::new(dir.path()).unwrap();
        let out = read(&root, "one.min.js", None, None);
        let mut lines = out.lines();
        assert_eq!(
            lines.next(),
            Some("one.min.js (lines 1-1 of a 1048576-byte file)")
        );
        assert_eq!(
            lines.next(),
            Some("[line 1 is longer than 128 KiB; only its start is shown]")
        );
        assert_eq!(lines.next().map(str::len), Some(7 + READ_CAP_BYTES));
    }

    #[test]
    fn small_files_keep_their_line_count_and_ranges() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\r\ntwo\nthree").unwrap();
        let root = Root::new(dir.path()).unwrap();
        assert_eq!(
            read(&root, "a.txt", None, None),
            "a.txt (lines 1-3 of 3)\n     1\tone\n     2\ttwo\n     3\tthree\n"
        );
        assert_eq!(
            read(&root, "a.txt", Some(2), Some(2)),
            "a.txt (lines 2-2 of 3)\n     2\ttwo\n"
        );
        assert_eq!(
            read(&root, "a.txt", Some(3), Some(1)),
            "error: end_line 1 is before start_line 3"
        );
        std::fs::write(dir.path().join("bin"), b"\x7fELF\x00\x01").unwrap();
        assert_eq!(
            read(&root, "bin", None, None),
            "error: bin is a binary file (6 bytes)"
        );
    }
}
