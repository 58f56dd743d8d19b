#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Incremental review against the real binary, the fake forge and the scripted model
//! (docs/review-service.md, "Incremental review"): a push after a review shows the model only
//! the change since the reviewed head, `/review full` and a force-push the whole diff, and each
//! summary says which range it covered.

mod common;

use common::*;
use serde_json::Value;
use test_doubles::scripted_model::Behavior;

/// The first git_diff result the model got after request `from`: the content of the first
/// tool result (Anthropic wire) that holds a diff.
fn first_diff_result(requests: &[Value], from: usize) -> String {
    requests[from..]
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .filter_map(|b| b["content"].as_str().map(str::to_owned))
        .find(|c| c.contains("diff --git"))
        .expect("no git_diff result after the request")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_push_is_reviewed_from_the_last_head_and_a_force_push_or_review_full_whole() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", false).await;
    w.review_once().await;
    let first_head = w.upstream.sha("feature");
    let short = &first_head[..7];

    // A push: only the new commit's change is shown, and only its finding is posted.
    let seen = w.model.requests().len();
    let head2 = w.upstream.push_feature_commit();
    w.deliver_pull_request("synchronize").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    assert_eq!(rows[0]["status"], "completed", "{}", w.server.log());
    let shown = first_diff_result(&w.model.requests(), seen);
    assert!(shown.contains("v.last().unwrap()"), "{shown}");
    assert!(
        !shown.contains("src/parse.rs"),
        "the whole diff was shown: {shown}"
    );
    let review = w.forge.reviews()[1].clone();
    let lines: Vec<i64> = review["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["line"].as_i64().unwrap())
        .collect();
    let lib = git(&w.upstream.work, &["show", &format!("{head2}:src/lib.rs")]);
    let last_line = lib
        .lines()
        .position(|l| l.contains("v.last().unwrap()"))
        .unwrap() as i64
        + 1;
    assert_eq!(lines, vec![last_line], "{review}");
    let body = review["body"].as_str().unwrap();
    assert!(
        body.contains(&format!("Reviewed the changes since `{short}`")),
        "{body}"
    );

    // `/review full`: the whole diff again.
    let seen = w.model.requests().len();
    w.deliver_pr_comment("/review full", "MEMBER").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 3).await;
    assert_eq!(
        (rows[0]["status"].as_str(), rows[0]["trigger"].as_str()),
        (Some("completed"), Some("command"))
    );
    let shown = first_diff_result(&w.model.requests(), seen);
    assert!(
        shown.contains("src/parse.rs") && shown.contains("v.last()"),
        "{shown}"
    );
    let body = w.forge.reviews()[2]["body"].as_str().unwrap().to_owned();
    assert!(!body.contains("Reviewed the changes since"), "{body}");

    // A force-push: the last reviewed head is not an ancestor any more, so the whole diff.
    git(&w.upstream.work, &["checkout", "-q", "feature"]);
    let lib = std::fs::read_to_string(w.upstream.work.join("src/lib.rs")).unwrap();
    std::fs::write(
        w.upstream.work.join("src/lib.rs"),
        format!("{lib}\npub fn two() -> i32 {{\n    2\n}}\n"),
    )
    .unwrap();
    git(
        &w.upstream.work,
        &["commit", "-q", "--amend", "-am", "last, amended"],
    );
    git(&w.upstream.work, &["checkout", "-q", "main"]);
    w.upstream.publish_pull(1, "feature");
    let seen = w.model.requests().len();
    w.deliver_pull_request("synchronize").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 4).await;
    assert_eq!(rows[0]["status"], "completed", "{}", w.server.log());
    let shown = first_diff_result(&w.model.requests(), seen);
    assert!(shown.contains("src/parse.rs"), "{shown}");
    let body = w.forge.reviews()[3]["body"].as_str().unwrap().to_owned();
    let head2_short = &head2[..7];
    assert!(
        body.contains(&format!(
            "The last reviewed head `{head2_short}` is not an ancestor of this head"
        )),
        "{body}"
    );
}

/// `src/lib.rs` of the feature branch with `extra` and `lines` comment lines put on top (the
/// code below moves down; the lines around each finding stay as they were).
fn lib_moved(w: &World, lines: usize, extra: &str) -> String {
    let lib = git(&w.upstream.work, &["show", "feature:src/lib.rs"]);
    let top: String = (0..lines).map(|i| format!("// note {i}\n")).collect();
    format!("{extra}{top}{lib}")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_finding_at_the_same_code_is_posted_once_across_pushes_even_when_it_moves() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", false).await;
    let first = w.review_once().await;
    let posted_first = first["comments"].as_array().unwrap().len();
    assert_eq!(posted_first, 3, "{first}");

    // Push 2 moves every flagged line of lib.rs down; the whole diff is reviewed again and the
    // reviewer finds the same three, which are not posted again.
    let moved = lib_moved(&w, 3, "");
    commit_on(
        &w.upstream,
        "feature",
        &[("src/lib.rs", &moved)],
        "notes on top",
    );
    w.upstream.publish_pull(1, "feature");
    w.deliver_pr_comment("/review full", "MEMBER").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    assert_eq!(rows[0]["status"], "completed", "{}", w.server.log());
    let second = w.forge.reviews()[1].clone();
    assert_eq!(second["comments"].as_array().unwrap().len(), 0, "{second}");
    let body = second["body"].as_str().unwrap();
    assert!(
        body.contains("3 finding(s) already posted on this pull request at the same code were not posted again"),
        "{body}"
    );
    assert_eq!(
        second["event"], "COMMENT",
        "nothing blocking was posted: {second}"
    );

    // Push 3 moves them again and adds a new unwrap(): only the new one is posted.
    let extra = "pub fn last(v: &[i32]) -> i32 {\n    *v.last().unwrap()\n}\n\n";
    let moved = lib_moved(&w, 2, extra);
    commit_on(&w.upstream, "feature", &[("src/lib.rs", &moved)], "last");
    w.upstream.publish_pull(1, "feature");
    w.deliver_pr_comment("/review full", "MEMBER").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 3).await;
    assert_eq!(rows[0]["status"], "completed", "{}", w.server.log());
    let third = w.forge.reviews()[2].clone();
    let lines: Vec<i64> = third["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["line"].as_i64().unwrap())
        .collect();
    let new_line = moved
        .lines()
        .position(|l| l.contains("v.last().unwrap()"))
        .unwrap() as i64
        + 1;
    assert_eq!(lines, vec![new_line], "{third}");
    // Every posted inline finding carries its fingerprint.
    assert_eq!(
        w.server
            .db_count(
                "SELECT count(*) FROM findings WHERE kind = 'inline' AND fingerprint IS NOT NULL"
            )
            .await,
        4
    );
}
