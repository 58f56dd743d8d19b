//! Read-only tools over the worktree: read_file, list_files, grep, and git_diff over the job's
//! base...head diff. Output is capped so one call cannot flood the context.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::path::Root;
use super::{ToolContext, ToolHandler, parse_args};
use crate::provider::ToolSpec;

/// read_file returns at most this many bytes of a file's text.
const READ_CAP_BYTES: usize = 128 * 1024;
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

    async fn handle(&self, ctx: &ToolContext<'_>, args: Value) -> Result<String, String> {
        let args: ReadArgs = parse_args("read_file", args)?;
        let root = ctx.root.clone();
        blocking(move || read_file(&root, &args)).await
    }
}

fn read_file(root: &Root, args: &ReadArgs) -> Result<String, String> {
    let path = root.resolve(&args.path)?;
    if path.is_dir() {
        return Err(format!("{} is a directory; use list_files", args.path));
    }
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", args.path))?;
    if is_binary(&bytes) {
        return Err(format!(
            "{} is a binary file ({} bytes)",
            args.path,
            bytes.len()
        ));
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let start = args.start_line.unwrap_or(1).max(1);
    if start > total.max(1) {
        return Err(format!(
            "start_line {start} is past the end of {} ({total} lines)",
            args.path
        ));
    }
    let want_end = args.end_line.unwrap_or(total).min(total);
    if want_end < start && total > 0 {
        return Err(format!("end_line {want_end} is before start_line {start}"));
    }
    let rel = root.relative(&path);
    let mut out = String::new();
    let mut last = start.saturating_sub(1);
    for (i, line) in lines.iter().enumerate().take(want_end).skip(start - 1) {
        let n = i + 1;
        if n - start >= READ_CAP_LINES || out.len() + line.len() > READ_CAP_BYTES {
            break;
        }
        out.push_str(&format!("{n:>6}\t{line}\n"));
        last = n;
    }
    let mut header = format!("{rel} (lines {start}-{last} of {total})\n");
    if last < want_end {
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

    async fn handle(&self, ctx: &ToolContext<'_>, args: Value) -> Result<String, String> {
        let args: ListArgs = parse_args("list_files", args)?;
        let root = ctx.root.clone();
        blocking(move || list_files(&root, &args)).await
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

    async fn handle(&self, ctx: &ToolContext<'_>, args: Value) -> Result<String, String> {
        let args: GrepArgs = parse_args("grep", args)?;
        let root = ctx.root.clone();
        blocking(move || grep(&root, &args)).await
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
}

#[async_trait::async_trait]
impl ToolHandler for GitDiff {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "git_diff".into(),
            description: "The pull request's diff (`git diff base...head`). Without arguments: the whole diff (very large diffs are capped at file boundaries, with a note naming the omitted files). With `path`: only that file's diff.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Show only this file's diff"}
                },
                "additionalProperties": false
            }),
        }
    }

    async fn handle(&self, ctx: &ToolContext<'_>, args: Value) -> Result<String, String> {
        let args: DiffArgs = parse_args("git_diff", args)?;
        match args
            .path
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            None if ctx.capped.text.is_empty() => Ok("the diff is empty".into()),
            None => Ok(ctx.capped.text.clone()),
            Some(p) => {
                let file = ctx.diff.file(p).ok_or_else(|| {
                    format!(
                        "{p} is not changed by this PR; changed files: {}",
                        ctx.diff
                            .files
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
