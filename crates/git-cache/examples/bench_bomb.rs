//! Benchmark: how fast and in how much memory a git bomb is refused.
//!
//! Usage: `cargo run -p git-cache --example bench_bomb -- <levels>`: builds a repository whose
//! head tree has `levels` levels of 10 entries each pointing at the same subtree (10^levels
//! files), runs the review's `diff_bytes main...bomb` with the default [`Limits`], and prints
//! one Markdown table row: levels, files, pack size, outcome, milliseconds, and the process's
//! peak resident memory (VmHWM) before and after. One process per row keeps the peaks apart.
//! `bench_bomb flat <files>` times the same check on a tree of distinct files instead.

use std::error::Error;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use git_cache::{Limits, Repo};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn git(dir: &Path, args: &[&str]) -> Result<String> {
    Ok(test_doubles::git_bomb::git_stdin(dir, args, b"")?)
}

/// Peak resident set size of this process so far, in MiB (`VmHWM` of /proc/self/status).
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// `flat <files>`: a real-shaped tree of `files` distinct files in directories of 100, built
/// with `git fast-import`; prints how long the limits check (`Repo::tree_size`) and a checkout
/// take on it, the overhead the check adds to a legitimate large repository.
fn flat(files: usize) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let repo_dir = dir.path();
    git(repo_dir, &["init", "-q", "-b", "main"])?;
    let mut stream = String::from(
        "commit refs/heads/main\ncommitter Bench <bench@example.com> 0 +0000\ndata 4\nbig\n",
    );
    for i in 0..files {
        let content = format!("file {i}\n");
        stream += &format!(
            "M 644 inline d{}/f{i}.txt\ndata {}\n{content}\n",
            i / 100,
            content.len()
        );
    }
    test_doubles::git_bomb::git_stdin(repo_dir, &["fast-import", "--quiet"], stream.as_bytes())?;
    git(repo_dir, &["gc", "-q"])?;
    let repo = Repo::open(repo_dir)?;
    let never = AtomicBool::new(false);
    let start = Instant::now();
    let size = repo.tree_size("main", Limits::default(), &never)?;
    let check_ms = start.elapsed().as_secs_f64() * 1000.0;
    let start = Instant::now();
    let worktree = repo.checkout("main", None, Limits::default(), &never)?;
    let checkout_ms = start.elapsed().as_secs_f64() * 1000.0;
    drop(worktree);
    println!(
        "| {files} distinct files ({} entries) | {check_ms:.1} ms | {checkout_ms:.1} ms |",
        size.entries
    );
    Ok(())
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    if std::env::args().nth(1).as_deref() == Some("flat") {
        let files = args
            .nth(1)
            .map(|a| a.parse())
            .transpose()?
            .unwrap_or(100_000);
        return flat(files);
    }
    let levels: u32 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(6);
    let dir = tempfile::tempdir()?;
    let repo_dir = dir.path();
    git(repo_dir, &["init", "-q", "-b", "main"])?;
    git(repo_dir, &["commit", "-q", "--allow-empty", "-m", "base"])?;
    test_doubles::git_bomb::git_bomb(repo_dir, "main", levels, "bomb")?;
    git(repo_dir, &["gc", "-q"])?;
    let pack_bytes: u64 = std::fs::read_dir(repo_dir.join(".git/objects/pack"))?
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "pack"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();

    let repo = Repo::open(repo_dir)?;
    let before = peak_rss_mib();
    let start = Instant::now();
    let result = repo.diff_bytes("main", "bomb", Limits::default(), &AtomicBool::new(false));
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    let after = peak_rss_mib();
    let outcome = match result {
        Ok(diff) => format!("diffed ({} bytes)", diff.len()),
        Err(git_cache::GitError::TooLarge { what, .. }) => format!("refused ({what})"),
        Err(e) => format!("error: {e}"),
    };
    println!(
        "| {levels} | 10^{levels} | {:.1} | {outcome} | {ms:.1} | {before:.1} | {after:.1} |",
        pack_bytes as f64 / 1024.0
    );
    Ok(())
}
