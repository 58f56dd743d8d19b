#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Reviews a range of this project's own git history: a real-world diff of many files, through
//! the webhook path and through `review-server review`.

mod common;

use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use test_doubles::scripted_model::{Behavior, ScriptedModel};

fn project_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// (early, later) commits of this project: the first commit and the newest one.
fn history_range() -> (String, String) {
    let root = project_root();
    let early = git(root, &["rev-list", "--max-parents=0", "HEAD"]);
    let early = early.lines().last().unwrap().to_owned();
    let later = git(root, &["rev-parse", "HEAD"]);
    assert_ne!(
        early, later,
        "this test needs a history of at least two commits"
    );
    (early, later)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_range_of_this_projects_history_is_reviewed_through_the_webhook() {
    let (early, later) = history_range();
    // Publish this repository as acme/widgets with the range as PR 1.
    let up = Upstream::new();
    std::fs::remove_dir_all(&up.bare).unwrap();
    git(
        up.root.path(),
        &[
            "clone",
            "-q",
            "--bare",
            project_root().to_str().unwrap(),
            up.bare.to_str().unwrap(),
        ],
    );
    git(&up.bare, &["update-ref", "refs/heads/main", &early]);
    git(&up.bare, &["update-ref", "refs/pull/1/head", &later]);
    let w = World::reviewing(up).await;
    w.server.enable(&w.full_name(), None).await;
    let mut v: Value = serde_json::from_slice(&w.pull_request_payload("opened", &later)).unwrap();
    v["pull_request"]["base"]["sha"] = json!(early);
    w.server
        .deliver(
            "pull_request",
            &serde_json::to_vec(&v).unwrap(),
            Some(SECRET),
        )
        .await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(
        rows[0]["status"],
        "completed",
        "{}\n{}",
        rows[0],
        w.server.log()
    );
    let reviews = w.forge.reviews();
    assert_eq!(reviews.len(), 1);
    let files: std::collections::BTreeSet<&str> = reviews[0]["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert!(
        files.len() >= 2,
        "a many-file diff gets comments on several files: {files:?}"
    );
    assert_eq!(
        rows[0]["patch_id"].as_str().unwrap(),
        git_patch_id(project_root(), &early, &later)
    );
    assert_eq!(w.leftover_worktrees(), Vec::<std::path::PathBuf>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn review_command_prints_the_review_of_a_local_range_as_markdown() {
    let (early, later) = history_range();
    let model = ScriptedModel::start(Behavior::Reviewer);
    let data = tempfile::tempdir().unwrap();
    let out = tokio::task::spawn_blocking({
        let base = model.base_url();
        let data = data.path().to_owned();
        move || {
            Command::new(env!("CARGO_BIN_EXE_review-server"))
                .args([
                    "review",
                    "--repo",
                    project_root().to_str().unwrap(),
                    "--base",
                    &early,
                    "--head",
                    &later,
                ])
                .args(["--model", "anthropic/claude-sonnet-4-5"])
                .env("ANTHROPIC_BASE_URL", base)
                .env("AGENT_API_KEY", "k")
                .env("DATA_DIR", data)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("# Review (REQUEST_CHANGES)"), "{stdout}");
    assert!(stdout.contains("## Inline comments"));
    assert!(stdout.contains("(blocking)"));
    assert!(stdout.contains("tokens") && stdout.contains('$'));

    // Bad input: an unknown revision is a clear error, not a panic.
    let out = Command::new(env!("CARGO_BIN_EXE_review-server"))
        .args([
            "review",
            "--repo",
            project_root().to_str().unwrap(),
            "--base",
            "no-such-rev",
        ])
        .env("AGENT_API_KEY", "k")
        .env("DATA_DIR", data.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no-such-rev") && !stderr.contains("panicked"),
        "{stderr}"
    );
}
