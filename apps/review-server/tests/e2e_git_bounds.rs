#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The git bounds against the real binary: a git bomb fails the review with a clear
//! error before any diff or checkout, a stop interrupts a long checkout, checkouts left by a
//! crash are swept at boot, and the CLI leaves no checkout behind when killed by SIGTERM.

mod common;

use common::*;
use pretty_assertions::assert_eq;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use test_doubles::git_bomb::git_bomb;
use test_doubles::scripted_model::Behavior;

const MODEL: &str = "anthropic/claude-sonnet-4-5";

/// A git bomb of 10^`levels` files on top of `feature`, published as the head of PR 1; its
/// commit id.
fn push_bomb(up: &Upstream, levels: u32) -> String {
    let commit = git_bomb(&up.work, "feature", levels, "bomb").unwrap();
    up.publish_pull(1, "bomb");
    commit
}

async fn open_pr(w: &World, head: &str) -> i64 {
    w.server.enable(&w.full_name(), None).await;
    let body = w.pull_request_payload("opened", head);
    let r = w.server.deliver("pull_request", &body, Some(SECRET)).await;
    assert_eq!(r.status(), 200);
    w.server.wait_reviews_any(&w.full_name(), 1).await["id"]
        .as_i64()
        .unwrap()
}

/// Polls until `done` holds; panics with the server log after `secs`.
async fn wait_until(w: &World, secs: u64, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(
            Instant::now() < deadline,
            "{what} never happened; log:\n{}",
            w.server.log()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_git_bomb_fails_the_review_with_a_clear_error_before_any_checkout() {
    let up = Upstream::new();
    // 10^9 files from about 2 KB of trees.
    let bomb = push_bomb(&up, 9);
    let retry_after_1s = [("RETRY_DELAY_SECS", "1".to_owned())];
    let w = World::start_with(up, Behavior::Reviewer, MODEL, true, &retry_after_1s).await;
    open_pr(&w, &bomb).await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    let error = rows[0]["error"].as_str().unwrap();
    assert_eq!(rows[0]["status"], "failed");
    assert_eq!(
        error,
        format!(
            "the tree of commit {bomb} has more than 1000000 entries; a tree this large is not \
             diffed or checked out (limits: REVIEW_MAX_TREE_ENTRIES, REVIEW_MAX_TREE_BYTES)"
        )
    );
    // The check run says the same; nothing reached the model or the PR; no checkout was made.
    let check = &w.forge.completed_check_runs()[0];
    assert_eq!(check["conclusion"], "failure");
    assert_eq!(check["output"]["summary"], error);
    assert_eq!(w.model.requests(), Vec::<Value>::new());
    assert_eq!(w.forge.reviews(), Vec::<Value>::new());
    assert!(!w.server.data_dir.join("worktrees").exists());
    // The cap is the operator's limit working: no automatic retry runs into it again.
    w.assert_no_automatic_retry().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_diff_is_skipped_before_any_checkout() {
    let up = Upstream::new();
    // The PR's head is its base: nothing to review.
    up.publish_pull(1, "main");
    let head = up.sha("main");
    let w = World::start_with(up, Behavior::Reviewer, MODEL, true, &[]).await;
    open_pr(&w, &head).await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(rows[0]["status"], "skipped", "{}", rows[0]);
    let check = &w.forge.completed_check_runs()[0];
    assert_eq!(check["conclusion"], "skipped");
    assert_eq!(
        check["output"]["summary"],
        "The pull request's diff against its base is empty; nothing to review."
    );
    assert_eq!(w.model.requests(), Vec::<Value>::new());
    assert!(!w.server.data_dir.join("worktrees").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_interrupts_a_long_checkout_and_removes_it() {
    let up = Upstream::new();
    // 100 000 files: within the limits, and long to check out.
    let big = push_bomb(&up, 5);
    let w = World::start_with(up, Behavior::Reviewer, MODEL, true, &[]).await;
    let id = open_pr(&w, &big).await;
    let worktrees = w.server.data_dir.join("worktrees");
    let checking_out = || {
        std::fs::read_dir(&worktrees).is_ok_and(|d| {
            d.flatten()
                .any(|wt| std::fs::read_dir(wt.path()).is_ok_and(|mut f| f.next().is_some()))
        })
    };
    wait_until(&w, 60, "the checkout", checking_out).await;
    let r = w
        .server
        .http
        .post(format!("{}/api/reviews/{id}/stop", w.server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(rows[0]["error"], "Stopped by user");
    let cancelled = format!("checkout of {big} was cancelled");
    wait_until(&w, 60, "the interrupted checkout", || {
        w.server.log().contains(&cancelled)
    })
    .await;
    wait_until(&w, 10, "the checkout's removal", || {
        w.leftover_worktrees().is_empty()
    })
    .await;
    assert_eq!(w.model.requests(), Vec::<Value>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn checkouts_left_by_a_crash_are_removed_at_boot() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let left = data.join("worktrees/git-cache-wt-crashed");
    std::fs::create_dir_all(left.join("src")).unwrap();
    std::fs::write(left.join("src/lib.rs"), "fn main() {}\n").unwrap();
    std::fs::write(data.join("worktrees/stray-file"), "x").unwrap();
    let server = Server::start(&data, &[]).await;
    let remaining: Vec<PathBuf> = std::fs::read_dir(data.join("worktrees"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(remaining, Vec::<PathBuf>::new());
    assert!(
        server
            .log()
            .contains("worktrees left by an earlier process removed")
    );
}

/// Checkouts the CLI made under `tmp`.
fn cli_checkouts(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("git-cache-wt-")
        })
        .collect()
}

#[test]
fn the_cli_killed_by_sigterm_leaves_no_checkout() {
    let up = Upstream::new();
    let scratch = tempfile::tempdir().unwrap();
    let tmp = scratch.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    // A model endpoint that accepts the connection and never answers: the review waits on it.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", silent.local_addr().unwrap());
    let mut child = Command::new(env!("CARGO_BIN_EXE_review-server"))
        .args(["review", "--repo"])
        .arg(&up.work)
        .args(["--base", "main", "--head", "feature"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TMPDIR", &tmp)
        .env("DATA_DIR", scratch.path().join("data"))
        .env("AGENT_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", &base)
        .env("AGENT_MODEL", MODEL)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the model request (the checkout is made before it), then SIGTERM.
    silent.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let _conn = loop {
        match silent.accept() {
            Ok((conn, _)) => break conn,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Some(status) = child.try_wait().unwrap() {
                    panic!("the CLI ended before calling the model: {status}");
                }
                assert!(Instant::now() < deadline, "the CLI never called the model");
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(cli_checkouts(&tmp).len(), 1);
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("interrupted by a signal; the checkout was removed"),
        "{stderr}"
    );
    assert_eq!(cli_checkouts(&tmp), Vec::<PathBuf>::new());
}
