#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Measurements of the review pipeline's quality machinery with the scripted model (ignored by
//! a plain `cargo test`): what verification before posting costs in tokens per candidate
//! finding, run by `bench/review-quality/verification-overhead.sh` (docs/review-service.md,
//! "Verification before posting"), and `review-server eval` over the committed cases, run by
//! `bench/review-quality/scripted-eval.sh` (docs/review-service.md, "Measuring the reviewer").

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

/// `review-server eval` over a case file with the scripted model as reviewer, verifier and
/// judge; prints the results table (the run's markdown) and the run's wall time.
async fn scripted_eval(cases: &std::path::Path, extra: &[&str]) -> String {
    let model = test_doubles::scripted_model::ScriptedModel::start(Behavior::Reviewer);
    let data = tempfile::tempdir().unwrap();
    let base = model.base_url();
    let mut args = vec![
        "eval".to_owned(),
        cases.to_str().unwrap().to_owned(),
        "--out".to_owned(),
        data.path().join("out").to_str().unwrap().to_owned(),
    ];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let dir = data.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_review-server"))
            .args(&args)
            .env("ANTHROPIC_BASE_URL", base)
            .env("AGENT_API_KEY", "k")
            .env("AGENT_MODEL", "anthropic/claude-sonnet-4-5")
            .env("DATA_DIR", &dir)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement: bench/review-quality/scripted-eval.sh"]
async fn scripted_eval_of_the_committed_cases() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for (name, file) in [
        (
            "scripted cases (tests/fixtures/eval)",
            "tests/fixtures/eval/cases.json",
        ),
        (
            "committed dataset (bench/review-quality/cases)",
            "bench/review-quality/cases/cases.json",
        ),
    ] {
        let started = std::time::Instant::now();
        let table = scripted_eval(&root.join(file), &[]).await;
        println!("## {name}\n");
        // The table and its totals line, without the heading of the run.
        let from = table.find("| case |").unwrap_or(0);
        println!("{}", table[from..].trim_end());
        println!("\nwall time {:.1} s\n", started.elapsed().as_secs_f64());
    }
}
