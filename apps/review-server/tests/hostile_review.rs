#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The review pipeline against a hostile pull request and an unlucky process, through
//! the real binary with the fake forge and the scripted model:
//!
//! - a PR that edits REVIEW.md and `.gitattributes` changes neither what the reviewer is told
//!   nor what it is shown (both are read at the merge base), and the summary says so;
//! - an APPROVE from the model posts COMMENT unless it clears this App's own REQUEST_CHANGES;
//! - two deliveries for one head post one review (one server; two replicas on PostgreSQL);
//! - a failure no retry can fix (no API key) is not retried and says why.
//!
//! The restart case (a killed server's run failed at boot) is in e2e_lifecycle.rs.

mod common;

use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use test_doubles::scripted_model::Behavior;

const MODEL: &str = "anthropic/claude-sonnet-4-5";

/// The system prompt of the model's first request (Anthropic wire).
fn first_system_prompt(w: &World) -> String {
    let requests = w.model.requests();
    requests[0]["system"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pull_request_cannot_rewrite_its_reviewers_instructions_or_hide_its_hunks() {
    let up = Upstream::rewriting_its_instructions();
    let w = World::start_with(up, Behavior::Reviewer, MODEL, false, &[]).await;
    let review = w.review_once().await;

    let system = first_system_prompt(&w);
    assert!(system.contains("BASE-RULE-7"), "{system}");
    assert!(!system.contains("INJECTED-RULE-9"), "{system}");
    // The scripted reviewer flags every added unwrap() it sees in the diff: with the head's
    // attributes it would have seen "Binary files ... differ" and flagged nothing.
    let flagged: Vec<(String, i64)> = review["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_owned(),
                c["line"].as_i64().unwrap(),
            )
        })
        .collect();
    let head = w.upstream.sha("feature");
    assert_eq!(flagged, w.upstream.flagged_lines("main", &head));
    assert_eq!(review["event"], "REQUEST_CHANGES");
    let body = review["body"].as_str().unwrap();
    assert!(
        body.contains(
            "This pull request changes the review instructions (.gitattributes, REVIEW.md)"
        ),
        "{body}"
    );
    // The model was told the same, and shown the change itself as code.
    let user = w.model.requests()[0]["messages"][0].to_string();
    assert!(
        user.contains("This pull request changes .gitattributes, REVIEW.md"),
        "{user}"
    );
}

/// The event of every review posted on PR `n`, oldest first.
fn posted_events(w: &World, n: i64) -> Vec<String> {
    w.forge
        .posted("POST", "/reviews")
        .into_iter()
        .filter(|r| r.path.ends_with(&format!("/pulls/{n}/reviews")))
        .map(|r| r.body["event"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn approve_posts_comment_unless_it_clears_this_apps_request_for_changes() {
    let up = Upstream::new();
    // PR 2: a clean change from the start (nothing for the reviewer to flag).
    git(&up.work, &["checkout", "-q", "-b", "clean", "main"]);
    git(&up.work, &["checkout", "-q", "main"]);
    commit_on(
        &up,
        "clean",
        &[(
            "src/mul.rs",
            "pub fn mul(a: i32, b: i32) -> i32 {\n    a * b\n}\n",
        )],
        "mul",
    );
    up.publish_pull(2, "clean");
    let w = World::start_with(up, Behavior::Reviewer, MODEL, false, &[]).await;
    w.server.enable(&w.full_name(), None).await;

    // The model approves a clean PR, but this App never asked for changes on it: COMMENT.
    let clean = w.upstream.sha("clean");
    let mut payload: Value =
        serde_json::from_slice(&w.pull_request_payload("opened", &clean)).unwrap();
    payload["number"] = json!(2);
    payload["pull_request"]["number"] = json!(2);
    payload["pull_request"]["head"]["ref"] = json!("clean");
    let r = w
        .server
        .deliver(
            "pull_request",
            &serde_json::to_vec(&payload).unwrap(),
            Some(SECRET),
        )
        .await;
    assert_eq!(r.status(), 200);
    let rows = w.server.wait_reviews(&w.full_name(), 2, 1).await;
    assert_eq!(rows[0]["status"], "completed", "{}", w.server.log());
    assert_eq!(posted_events(&w, 2), vec!["COMMENT"]);
    let transcript = w.model.requests().last().unwrap().to_string();
    assert!(
        transcript.contains("event changed from APPROVE to COMMENT"),
        "the model is told: {transcript}"
    );

    // PR 1: this App requests changes, the author fixes them, and the approval clears it.
    w.deliver_pull_request("opened").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(rows[0]["status"], "completed", "{}", w.server.log());
    commit_on(
        &w.upstream,
        "feature",
        &[
            (
                "src/parse.rs",
                "use std::str::FromStr;\n\npub fn parse(s: &str) -> Option<i32> {\n    i32::from_str(s).ok()\n}\n",
            ),
            (
                "src/lib.rs",
                "pub mod parse;\n\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\npub fn sub(a: i32, b: i32) -> i32 {\n    a - b\n}\n\npub fn first(v: &[i32]) -> Option<i32> {\n    v.first().copied()\n}\n",
            ),
        ],
        "handle errors",
    );
    w.upstream.publish_pull(1, "feature");
    w.deliver_pull_request("synchronize").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    assert_eq!(rows[0]["status"], "completed", "{}", w.server.log());
    assert_eq!(posted_events(&w, 1), vec!["REQUEST_CHANGES", "APPROVE"]);
}

/// (status, error) of PR 1's review rows, oldest first.
async fn states(server: &Server, full_name: &str) -> Vec<(String, Option<String>)> {
    let rows = server.pr_rows(full_name, 1).await;
    rows.into_iter().map(|(_, s, e)| (s, e)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_deliveries_for_one_head_post_one_review() {
    let w = World::start(Behavior::Reviewer, MODEL, false).await;
    w.server.enable(&w.full_name(), None).await;
    // opened and reopened (two delivery ids) for the same head, back to back.
    w.deliver_pull_request("opened").await;
    w.deliver_pull_request("reopened").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    assert_eq!(rows.len(), 2);
    let got = states(&w.server, &w.full_name()).await;
    let head = w.upstream.sha("feature");
    let first = rows
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .min()
        .unwrap();
    assert_eq!(got[0].0, "completed", "{got:?}");
    // The first is still waiting, already running, or (on a fast machine) done.
    let short = &head[..12];
    let allowed = [
        format!("coalesced into the pending review #{first} of {short}"),
        format!("coalesced into the running review #{first} of {short}"),
        format!("already reviewed at {short} (review #{first})"),
    ];
    assert_eq!(got[1].0, "skipped", "{got:?}");
    assert!(allowed.contains(got[1].1.as_ref().unwrap()), "{got:?}");
    // A redelivery under a third id after it completed is skipped as already reviewed.
    w.deliver_pull_request("reopened").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 3).await;
    assert_eq!(rows.len(), 3);
    let got = states(&w.server, &w.full_name()).await;
    assert_eq!(
        got[2],
        (
            "skipped".to_owned(),
            Some(format!(
                "already reviewed at {} (review #{first})",
                &head[..12]
            ))
        )
    );
    assert_eq!(w.forge.reviews().len(), 1, "one review posted");
    assert_eq!(w.forge.completed_check_runs().len(), 1, "one check run");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_on_postgres_post_one_review_per_head() {
    let Some(url) = postgres_database_url().await else {
        return;
    };
    let w = World::start_with(
        Upstream::new(),
        Behavior::Reviewer,
        MODEL,
        false,
        &[("DATABASE_URL", url.clone())],
    )
    .await;
    let b = w.replica("replica-b").await;
    w.server.enable(&w.full_name(), None).await;
    const PRS: i64 = 10;
    w.publish_pulls(PRS);
    // Each PR gets opened on one replica and reopened on the other, under different ids, at
    // the same head: the finding's 20 of 20 PRs were reviewed twice.
    let payloads: Vec<(i64, Vec<u8>, Vec<u8>)> = (1..=PRS)
        .map(|n| {
            (
                n,
                w.pull_payload(n, "opened"),
                w.pull_payload(n, "reopened"),
            )
        })
        .collect();
    let mut sends = Vec::new();
    for (n, opened, reopened) in &payloads {
        let (one, other) = if n % 2 == 0 {
            (&w.server, &b)
        } else {
            (&b, &w.server)
        };
        sends.push(one.deliver("pull_request", opened, Some(SECRET)));
        sends.push(other.deliver("pull_request", reopened, Some(SECRET)));
    }
    for r in futures::future::join_all(sends).await {
        assert_eq!(r.status(), 200);
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let done = w
            .server
            .db_count(
                "SELECT count(*) FROM reviews WHERE status IN ('completed', 'skipped', 'failed')",
            )
            .await;
        if done == 2 * PRS {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{done} of {} rows ended\n{}\n----\n{}",
            2 * PRS,
            w.server.log(),
            b.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let completed = w
        .server
        .db_count("SELECT count(*) FROM reviews WHERE status = 'completed'")
        .await;
    let skipped = w
        .server
        .db_count("SELECT count(*) FROM reviews WHERE status = 'skipped'")
        .await;
    assert_eq!((completed, skipped), (PRS, PRS));
    let mut posted = std::collections::BTreeMap::new();
    for r in w.forge.posted("POST", "/reviews") {
        let n: i64 = r.path.rsplit('/').nth(1).unwrap().parse().unwrap();
        *posted.entry(n).or_insert(0) += 1;
    }
    assert_eq!(posted, (1..=PRS).map(|n| (n, 1)).collect());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failure_no_retry_can_fix_is_not_retried_and_says_why() {
    // No API key for the model's provider (SECOND_API_KEY is unset): a retry minutes later
    // meets the same configuration, and would only post a "retry failed" comment.
    let w = World::without_the_models_key().await;
    w.server.enable(&w.full_name(), None).await;
    w.deliver_pull_request("opened").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(rows[0]["status"], "failed");
    let error = rows[0]["error"].as_str().unwrap();
    assert!(
        error.starts_with("no API key for provider zai-coding-plan"),
        "{error}"
    );
    assert!(
        error.ends_with("(no automatic retry: a configuration or credentials error, which a retry cannot fix; fix it and retry by hand)"),
        "{error}"
    );
    w.assert_no_automatic_retry().await;
    tokio::time::sleep(Duration::from_millis(1500)).await; // past RETRY_DELAY_SECS
    let rows = w
        .server
        .get_json(&format!("/api/repos/{}/pr/1", w.full_name()))
        .await;
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert!(
        w.forge.posted("POST", "/comments").is_empty(),
        "no retry-failed comment"
    );
}
