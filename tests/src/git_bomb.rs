//! A "git bomb" for the tests and benches: a commit whose tree has
//! `levels` levels of 10 entries, each pointing at the same tree below, so it holds 10^levels
//! files (one 5-byte blob, `boom\n`) in `levels` tree objects of a few hundred bytes.
//! Built with the real `git` CLI (`hash-object`, `mktree`, `commit-tree`).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `git <args>` in `dir` with `input` on stdin, isolated from system config; its trimmed
/// stdout, or git's stderr as the error.
pub fn git_stdin(dir: &Path, args: &[&str], input: &[u8]) -> Result<String, String> {
    let mut child = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Bomb")
        .env("GIT_AUTHOR_EMAIL", "bomb@example.com")
        .env("GIT_COMMITTER_NAME", "Bomb")
        .env("GIT_COMMITTER_EMAIL", "bomb@example.com")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if let Some(mut pipe) = child.stdin.take() {
        pipe.write_all(input)
            .map_err(|e| format!("cannot write to git: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("git {args:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Writes a git bomb into the repository at `repo`: a commit with parent `parent` (any
/// revision) whose tree holds 10^`levels` files, at branch `branch`. Returns the commit id.
pub fn git_bomb(repo: &Path, parent: &str, levels: u32, branch: &str) -> Result<String, String> {
    let blob = git_stdin(repo, &["hash-object", "-w", "--stdin"], b"boom\n")?;
    let listing: String = (0..10)
        .map(|i| format!("100644 blob {blob}\tf{i}\n"))
        .collect();
    let mut tree = git_stdin(repo, &["mktree"], listing.as_bytes())?;
    for _ in 1..levels {
        let listing: String = (0..10)
            .map(|i| format!("040000 tree {tree}\td{i}\n"))
            .collect();
        tree = git_stdin(repo, &["mktree"], listing.as_bytes())?;
    }
    let commit = git_stdin(
        repo,
        &["commit-tree", &tree, "-p", parent, "-m", "bomb"],
        b"",
    )?;
    git_stdin(
        repo,
        &["update-ref", &format!("refs/heads/{branch}"), &commit],
        b"",
    )?;
    Ok(commit)
}
