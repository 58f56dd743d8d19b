#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Measurements of the review pipeline's quality machinery with the scripted model, run by
//! `bench/review-quality/verification-overhead.sh` (ignored by a plain `cargo test`): what
//! verification before posting costs in tokens per candidate finding (issue 27;
//! docs/review-service.md, "Verification before posting").

mod common;

use common::*;
use serde_json::json;
use test_doubles::scripted_model::Behavior;

/// One review of PR 1 with `extra` more candidate findings than the reviewer's own three;
/// returns the review row's tokens and the number of model requests.
async fn review_tokens(extra: usize, verify: bool) -> (i64, usize) {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-test", true).await;
    let r = reqwest::Client::new()
        .put(format!("{}/api/settings", w.server.url))
        .json(&json!({"review_verify": verify.to_string()}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    for i in 0..extra {
        w.model.push_extra_comment(json!({
            "path": "src/parse.rs", "line": 1 + (i % 6) as i64, "severity": "question",
            "body": format!("Candidate {i}: is this line needed here, and is it tested?")
        }));
    }
    w.review_once().await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    (
        rows[0]["tokens"].as_i64().unwrap(),
        w.model.requests().len(),
    )
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement: bench/review-quality/verification-overhead.sh"]
async fn verification_overhead_in_tokens_per_candidate() {
    println!(
        "| candidates | tokens without verification | with verification | model calls added | tokens per candidate |"
    );
    println!("|---|---|---|---|---|");
    for extra in [0usize, 5, 13, 29] {
        let candidates = extra + 3;
        let (off, calls_off) = review_tokens(extra, false).await;
        let (on, calls_on) = review_tokens(extra, true).await;
        println!(
            "| {candidates} | {off} | {on} | {} | {:.0} |",
            calls_on - calls_off,
            (on - off) as f64 / candidates as f64
        );
    }
}
