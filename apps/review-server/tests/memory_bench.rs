#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What incremental review saves, measured with the scripted model (ignored by a plain `cargo
//! test`; run by `bench/review/incremental.sh`): a pull request pushed five times, each push
//! reviewed once from the last reviewed head (the default; docs/review-service.md, "Incremental
//! review") and once as a whole diff (`/review full`), with the tokens of each review.

mod common;

use common::*;
use test_doubles::scripted_model::Behavior;

/// One push's code: `lines` small functions and one with an `unwrap()`, so every review has a
/// finding to post and verify.
fn module(push: usize, lines: usize) -> String {
    let mut s = format!(
        "//! Module {push}.\n\npub fn load_{push}(v: &[i32]) -> i32 {{\n    *v.first().unwrap()\n}}\n"
    );
    for i in 0..lines {
        s.push_str(&format!(
            "\npub fn step_{push}_{i}(x: i32) -> i32 {{\n    x.wrapping_mul({i}).wrapping_add({push})\n}}\n"
        ));
    }
    s
}

/// The tokens of each of five reviews of PR 1, pushed five times; `whole` asks for the whole
/// diff each time (`/review full`), else each push is a synchronize. Returns (PR diff bytes,
/// tokens) per push.
async fn five_pushes(whole: bool) -> Vec<(usize, i64)> {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", false).await;
    let mut out = Vec::new();
    w.review_once().await;
    for push in 1..=5usize {
        if push > 1 {
            // Each push appends to the file the scripted reviewer reads either way, so the
            // two modes differ only in the diff the model is shown.
            git(&w.upstream.work, &["checkout", "-q", "feature"]);
            let lib = std::fs::read_to_string(w.upstream.work.join("src/lib.rs")).unwrap();
            git(&w.upstream.work, &["checkout", "-q", "main"]);
            let grown = format!("{lib}\n{}", module(push, 60));
            commit_on(
                &w.upstream,
                "feature",
                &[("src/lib.rs", &grown)],
                &format!("push {push}"),
            );
            w.upstream.publish_pull(1, "feature");
            if whole {
                w.deliver_pr_comment("/review full", "MEMBER").await;
            } else {
                w.deliver_pull_request("synchronize").await;
            }
        }
        let rows = w.server.wait_reviews(&w.full_name(), 1, push).await;
        assert_eq!(rows[0]["status"], "completed", "{}", w.server.log());
        let head = w.upstream.sha("feature");
        let diff = git(&w.upstream.work, &["diff", &format!("main...{head}")]);
        out.push((diff.len(), rows[0]["tokens"].as_i64().unwrap()));
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement: bench/review/incremental.sh"]
async fn incremental_review_tokens_per_push() {
    let incremental = five_pushes(false).await;
    let whole = five_pushes(true).await;
    println!("| push | PR diff (bytes) | tokens, incremental | tokens, whole diff | saved |");
    println!("|---|---|---|---|---|");
    let (mut sum_i, mut sum_w) = (0i64, 0i64);
    for (n, ((bytes, i), (_, w))) in incremental.iter().zip(&whole).enumerate() {
        sum_i += i;
        sum_w += w;
        println!(
            "| {} | {bytes} | {i} | {w} | {:.0}% |",
            n + 1,
            100.0 * (1.0 - *i as f64 / *w as f64)
        );
    }
    println!(
        "| all five | | {sum_i} | {sum_w} | {:.0}% |",
        100.0 * (1.0 - sum_i as f64 / sum_w as f64)
    );
}
