#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The main job end to end (issue: the review pipeline on real repositories): a real git
//! repository, the real binary, a real-format signed pull_request delivery, the fake forge and
//! the scripted model, for both wire formats.

mod common;

use common::*;
use pretty_assertions::assert_eq;
use serde_json::Value;
use sqlx::Connection;
use test_doubles::scripted_model::Behavior;

/// An earlier finding's text that no file, commit or diff of the test repository contains.
const EARLIER_CANARY: &str = "CANARY-7f3a: is the retry budget shared across pull requests?";

/// The text of the first user message of a captured model request, for both wire formats
/// (a string, or Anthropic's list of text blocks).
fn first_user_text(request: &Value) -> String {
    let message = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap_or_else(|| panic!("no user message in {request}"));
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => panic!("unexpected content {other}"),
    }
}

fn inline_positions(review: &Value) -> Vec<(String, i64)> {
    let mut v: Vec<(String, i64)> = review["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert_eq!(c["side"], "RIGHT");
            (
                c["path"].as_str().unwrap().to_owned(),
                c["line"].as_i64().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// `review-server session export <session_id>` on `server`'s data folder.
fn session_export(server: &Server, session_id: &str) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_review-server"))
        .args(["session", "export", session_id])
        .env("DATA_DIR", &server.data_dir)
        .output()
        .unwrap()
}

/// The bodies of a posted review's inline comments.
fn comment_bodies(review: &Value) -> Vec<String> {
    field_strings(&review["comments"], "body")
}

async fn review_opened_then_synchronized(model_spec: &str, stream: bool) {
    let w = World::start(Behavior::Reviewer, model_spec, stream).await;
    opened_then_synchronized(w, model_spec, None).await;
}

/// The review of `review_opened_then_synchronized` in a started world whose database is
/// `database` (None: the SQLite file in DATA_DIR).
async fn opened_then_synchronized(w: World, model_spec: &str, database: Option<&str>) {
    let (base, head) = (w.upstream.sha("main"), w.upstream.sha("feature"));

    // First delivery registers the repo disabled: nothing is reviewed.
    let r = w.deliver_pull_at("opened", &head).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        serde_json::json!({ "ok": true })
    );
    let repo = w
        .server
        .get_json(&format!("/api/repos/{}", w.full_name()))
        .await;
    assert_eq!(
        (repo["enabled"].as_i64(), repo["installation_id"].as_i64()),
        (Some(0), Some(INSTALLATION))
    );
    assert!(w.server.reviews_of(&w.full_name(), 1).await.is_empty());

    // Enabled, the same delivery runs a review.
    w.server.enable(&w.full_name(), None).await;
    let r = w.deliver_pull_at("opened", &head).await;
    assert_eq!(r.status(), 200);
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    let review = &rows[0];
    assert_eq!(
        review["status"],
        "completed",
        "{review}\n{}",
        w.server.log()
    );
    assert_eq!(review["trigger"], "opened");
    assert_eq!(review["model"], model_spec);
    assert!(review["tokens"].as_i64().unwrap() > 0);
    assert!(review["cost"].as_f64().unwrap() > 0.0);
    assert!(review["completed_at"].as_i64().is_some());
    assert_eq!(
        review["patch_id"].as_str().unwrap(),
        git_patch_id(&w.upstream.work, &base, &head)
    );
    assert!(review["session_id"].as_str().is_some());

    // The forge got one review at the head commit whose inline comments sit on real added lines.
    let reviews = w.forge.reviews();
    assert_eq!(reviews.len(), 1);
    assert_eq!(reviews[0]["commit_id"], head.as_str());
    assert_eq!(reviews[0]["event"], "REQUEST_CHANGES");
    let expected = w.upstream.flagged_lines(&base, &head);
    assert_eq!(expected.len(), 3, "fixture adds two unwrap() and one TODO");
    assert_eq!(inline_positions(&reviews[0]), expected);
    // One check run, created on the head and completed successfully.
    let created = w.forge.posted("POST", "/check-runs");
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].body["head_sha"], head.as_str());
    let completed = w.forge.completed_check_runs();
    assert_eq!(completed.len(), 1);
    assert_eq!(
        (
            completed[0]["status"].as_str(),
            completed[0]["conclusion"].as_str()
        ),
        (Some("completed"), Some("success"))
    );
    assert!(review["check_run_id"].as_i64().is_some());

    // Findings rows: the summary and one inline row per comment, with forge ids.
    let id = review["id"].as_i64().unwrap();
    let findings = w
        .server
        .get_json(&format!("/api/reviews/{id}/findings"))
        .await;
    let findings = findings.as_array().unwrap();
    assert_eq!(
        findings.iter().filter(|f| f["kind"] == "summary").count(),
        1
    );
    let inline: Vec<_> = findings.iter().filter(|f| f["kind"] == "inline").collect();
    assert_eq!(inline.len(), 3);
    assert!(
        inline
            .iter()
            .all(|f| f["github_comment_id"].as_i64().is_some() && f["severity"].is_string())
    );

    // The bare clone is at the documented path and no worktree is left behind.
    let clone = w.bare_clone_path();
    assert!(
        clone.join("HEAD").exists(),
        "no bare clone at {}",
        clone.display()
    );
    assert_eq!(w.leftover_worktrees(), Vec::<std::path::PathBuf>::new());
    // The transcript is served, every item as the API's schema names it.
    let session = w.server.transcript_fitting_schema(id).await;
    assert!(session.get("error").is_none(), "{session}");
    // Summed over the run, the model answers' costs are the row's cost: what the dashboard
    // shows as the cost so far while a review runs.
    let cost: f64 = session["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["cost"].as_f64())
        .sum();
    let row_cost = review["cost"].as_f64().unwrap();
    assert!(row_cost > 0.0, "{review}");
    assert!(
        (cost - row_cost).abs() < 1e-9,
        "items {cost} against the row's {row_cost}"
    );
    // `review-server session export <id>` prints the same transcript.
    let session_id = review["session_id"].as_str().unwrap();
    let out = session_export(&w.server, session_id);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exported: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(exported, session);
    let out = session_export(&w.server, "no-such-session");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-session"));

    // An earlier finding whose text stands nowhere in the repository, beside the ones the
    // first review posted, so the re-review's prompt can only have it from the findings.
    let url = database.map_or_else(|| w.server.database_url.clone(), str::to_owned);
    sqlx::any::install_default_drivers();
    let mut db = sqlx::AnyConnection::connect(&url).await.unwrap();
    sqlx::query(&format!(
        "INSERT INTO findings (review_id, repo_full_name, pr_number, kind, severity, path, line, body, created_at)
         VALUES ({}, '{}', 1, 'inline', 'question', 'src/lib.rs', 2, '{EARLIER_CANARY}', 0)",
        review["id"],
        w.full_name()
    ))
    .execute(&mut db)
    .await
    .unwrap();
    db.close().await.unwrap();
    let first_review_findings: Vec<String> = w
        .server
        .get_json(&format!("/api/reviews/{}/findings", review["id"]))
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["body"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        first_review_findings.len() >= 3,
        "{first_review_findings:?}"
    );
    let history = git(&w.upstream.work, &["log", "-p", "--all"]);

    // A synchronize with a new commit fetches into the same clone and reviews again.
    let marker = clone.join("e2e-marker");
    std::fs::write(&marker, "still the same clone").unwrap();
    let head2 = w.upstream.push_feature_commit();
    let r = w.deliver_pull_at("synchronize", &head2).await;
    assert_eq!(r.status(), 200);
    let rows = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    assert_eq!(rows[0]["status"], "completed", "{}", w.server.log());
    assert_eq!(rows[0]["trigger"], "synchronize");
    assert!(
        marker.exists(),
        "the cache was re-cloned instead of fetched"
    );
    assert_eq!(w.forge.reviews().len(), 2);
    assert_eq!(w.forge.reviews()[1]["commit_id"], head2.as_str());
    assert_eq!(w.leftover_worktrees(), Vec::<std::path::PathBuf>::new());
    // The re-review was told what the first review already said: every earlier finding (the
    // posted ones and the canary) stands under its heading in the re-review's first user
    // message, and none of them is text of the repository the diff could have carried.
    // The re-review's last request of the review pass (the verifier's come after it).
    let requests = w.model.requests();
    let review_pass = requests
        .iter()
        .rev()
        .find(|r| !r["tools"].to_string().contains("report_verdicts"))
        .unwrap();
    let first_user = first_user_text(review_pass);
    let (_, earlier) = first_user
        .split_once("Earlier findings on this pull request")
        .unwrap_or_else(|| panic!("no earlier findings in the prompt: {first_user}"));
    let earlier = earlier.split("The diff changes").next().unwrap();
    for body in &first_review_findings {
        let shown = body.trim().replace('\n', " ");
        let shown: String = shown.chars().take(200).collect();
        assert!(
            earlier.contains(&shown),
            "earlier finding {shown:?} not in the prompt's list: {earlier}"
        );
        assert!(!history.contains(&shown), "{shown:?} is repository text");
    }
    assert!(earlier.contains(&format!("- [question] src/lib.rs:2: {EARLIER_CANARY}")));
    let first_prompt = first_user_text(&w.model.requests()[0]);
    assert!(
        !first_prompt.contains("Earlier findings"),
        "the first review had no earlier findings: {first_prompt}"
    );
    // Both check runs are completed (each before its row ended).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while w.forge.completed_check_runs().len() < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(w.forge.completed_check_runs().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_streaming_review_lands_on_added_lines_and_refetches_on_synchronize() {
    review_opened_then_synchronized("anthropic/claude-sonnet-4-5", true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_review_lands_on_added_lines_and_refetches_on_synchronize() {
    review_opened_then_synchronized("openai/gpt-4o", false).await;
}

/// The same review on PostgreSQL (DATABASE_URL `postgres://...`): the server boots on it and
/// the review, its findings and the stats it feeds go through the PostgreSQL store.
#[tokio::test(flavor = "multi_thread")]
async fn review_on_postgres_lands_on_added_lines_and_refetches_on_synchronize() {
    let Some(url) = postgres_database_url().await else {
        return;
    };
    let w = World::start_with(
        Upstream::new(),
        Behavior::Reviewer,
        "anthropic/claude-sonnet-4-5",
        true,
        &[("DATABASE_URL", url.clone())],
    )
    .await;
    assert!(
        !w.server.data_dir.join("review.db").exists(),
        "no SQLite file next to a PostgreSQL store"
    );
    opened_then_synchronized(w, "anthropic/claude-sonnet-4-5", Some(&url)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn synchronize_with_unchanged_patch_id_is_skipped() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", true).await;
    w.server.enable(&w.full_name(), None).await;
    let head = w.upstream.sha("feature");
    w.deliver_pull_at("opened", &head).await;
    w.server.wait_reviews(&w.full_name(), 1, 1).await;
    // Same changes again under a new head (the feature rebased onto the newer main): recorded
    // skipped by the patch-id rule, nothing posted.
    let work = &w.upstream.work;
    git(work, &["checkout", "-q", "-b", "rebased", "feature"]);
    git(work, &["rebase", "-q", "main"]);
    git(work, &["checkout", "-q", "main"]);
    w.upstream.publish_pull(1, "rebased");
    let rebased = w.upstream.sha("rebased");
    assert_ne!(rebased, head);
    w.deliver_pull_at("synchronize", &rebased).await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    assert_eq!(rows[0]["status"], "skipped");
    assert_eq!(rows[0]["patch_id"], rows[1]["patch_id"]);
    assert_eq!(w.forge.reviews().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn review_command_from_a_collaborator_reviews_the_pull_request() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", true).await;
    w.server.enable(&w.full_name(), None).await;
    // A contributor without write access cannot trigger a review; a member can.
    w.deliver_pr_comment("/review", "CONTRIBUTOR").await;
    w.deliver_pr_comment("/review", "MEMBER").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0]["status"].as_str(), rows[0]["trigger"].as_str()),
        (Some("completed"), Some("command"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn draft_pull_request_waits_for_ready_for_review() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", true).await;
    w.server.enable(&w.full_name(), None).await;
    let head = w.upstream.sha("feature");
    let mut v: Value = serde_json::from_slice(&w.pull_request_payload("opened", &head)).unwrap();
    v["pull_request"]["draft"] = serde_json::json!(true);
    w.deliver_payload(&serde_json::to_vec(&v).unwrap()).await;
    // The handler creates a review row before it answers, so none exists now means none will.
    assert!(w.server.reviews_of(&w.full_name(), 1).await.is_empty());
    v["action"] = serde_json::json!("ready_for_review");
    v["pull_request"]["draft"] = serde_json::json!(false);
    w.deliver_payload(&serde_json::to_vec(&v).unwrap()).await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(rows[0]["status"], "completed");
}

/// GitHub refuses a whole review (422) when one inline comment is off the diff; the fake forge
/// refuses it the same way. A comment the model puts on an unchanged line must reach the PR
/// folded into the summary, and the rest of the review must still be posted inline.
#[tokio::test]
async fn an_inline_comment_off_the_diff_is_folded_and_the_review_still_posts() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-test", true).await;
    // README.md line 1 is not part of the PR's diff.
    w.model.push_extra_comment(serde_json::json!({
        "path": "README.md", "line": 1, "side": "RIGHT", "severity": "question",
        "body": "Should the README mention parse()?"
    }));
    let review = w.review_once().await;
    let body = review["body"].as_str().unwrap();
    assert!(body.contains("Comments outside the diff"), "{body}");
    assert!(body.contains("README.md:1"), "{body}");
    let (base, head) = (w.upstream.sha("main"), w.upstream.sha("feature"));
    assert_eq!(
        inline_positions(&review),
        w.upstream.flagged_lines(&base, &head)
    );
}

/// An inline comment's `suggestion` reaches the PR as
/// GitHub's suggestion block, and the finding keeps it. One that cannot apply as meant (the same
/// text as the lines it replaces, a code fence inside) is left out of a comment that is still
/// posted, and a range across two hunks is folded into the summary without it: never a 422.
#[tokio::test]
async fn a_suggestion_is_posted_as_a_suggestion_block_and_one_that_cannot_apply_is_left_out() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-test", true).await;
    // src/parse.rs is new in the PR (one hunk): line 3 opens parse(), line 4 is the TODO
    // comment, line 5 is `    i32::from_str(s).unwrap()`.
    let fix = "    i32::from_str(s).unwrap_or_default()";
    for comment in [
        serde_json::json!({"path": "src/parse.rs", "line": 5, "severity": "nit",
            "body": "Fall back instead of panicking.", "suggestion": fix}),
        serde_json::json!({"path": "src/parse.rs", "start_line": 3, "line": 4, "severity": "nit",
            "body": "Same text.",
            "suggestion": "pub fn parse(s: &str) -> i32 {\n    // TODO: report bad input instead of panicking\n"}),
        serde_json::json!({"path": "src/parse.rs", "line": 1, "severity": "question",
            "body": "Fenced.", "suggestion": "```rust\nuse std::str::FromStr;\n```"}),
        serde_json::json!({"path": "src/lib.rs", "start_line": 2, "line": 12, "severity": "nit",
            "body": "Across hunks.", "suggestion": "pub mod parse;"}),
    ] {
        w.model.push_extra_comment(comment);
    }
    let review = w.review_once().await;
    let body_of = |start: &str| -> String {
        comment_bodies(&review)
            .into_iter()
            .find(|b| b.starts_with(start))
            .unwrap_or_else(|| panic!("no inline comment starting {start:?}: {review}"))
    };
    assert_eq!(
        body_of("Fall back"),
        format!("Fall back instead of panicking.\n\n```suggestion\n{fix}\n```")
    );
    assert_eq!(body_of("Same text."), "Same text.");
    assert_eq!(body_of("Fenced."), "Fenced.");
    let summary = review["body"].as_str().unwrap();
    assert!(summary.contains("Across hunks."), "{summary}");
    assert!(!summary.contains("```suggestion"), "{summary}");

    // The finding records what was posted, the block included.
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    let findings = w
        .server
        .get_json(&format!("/api/reviews/{}/findings", rows[0]["id"]))
        .await;
    assert!(
        findings.as_array().unwrap().iter().any(|f| f["body"]
            .as_str()
            .unwrap()
            .ends_with(&format!("```suggestion\n{fix}\n```"))),
        "{findings}"
    );
    // The model is told which suggestions were left out and why.
    let told = w.model.requests().iter().any(|r| {
        r.to_string()
            .contains("the suggestion on src/parse.rs:4 was left out")
    });
    assert!(
        told,
        "the tool result does not name the left-out suggestion"
    );
}

/// PUT /api/settings on `server`, asserting 200.
async fn put_settings(server: &Server, body: Value) {
    let (status, answer) = server.put_json("/api/settings", body).await;
    assert_eq!(status, 200, "{answer}");
}

/// The scripted reviewer's world with the global `settings` written (PUT /api/settings).
async fn world_with_settings(settings: Value) -> World {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-test", true).await;
    put_settings(&w.server, settings).await;
    w
}

/// With `review_min_severity` at `question`, the reviewer's
/// nit (the TODO) is not posted inline; the summary and the check run count it.
#[tokio::test]
async fn findings_under_the_minimum_severity_are_counted_not_posted() {
    let w = world_with_settings(serde_json::json!({"review_min_severity": "question"})).await;
    let review = w.review_once().await;
    let bodies = comment_bodies(&review);
    assert!(!bodies.is_empty(), "{review}");
    assert!(
        bodies.iter().all(|b| b.starts_with("`unwrap()`")),
        "{bodies:?}"
    );
    let summary = review["body"].as_str().unwrap();
    assert!(
        summary
            .contains("1 finding(s) under the minimum severity `question` were not posted inline"),
        "{summary}"
    );
    let runs = w.forge.completed_check_runs();
    assert!(
        runs[0]["output"]["summary"]
            .as_str()
            .unwrap()
            .contains("1 finding(s) under the minimum severity were not posted"),
        "{runs:?}"
    );
}

/// A repository's own min_severity wins over the global setting: `nit` there posts
/// the TODO that the global `blocking` would have left out.
#[tokio::test]
async fn a_repositorys_min_severity_wins_over_the_global_setting() {
    let w = world_with_settings(serde_json::json!({"review_min_severity": "blocking"})).await;
    w.server.enable(&w.full_name(), None).await;
    let (status, row) = w
        .server
        .put_json(
            &format!("/api/repos/{}", w.full_name()),
            serde_json::json!({"min_severity": "nit"}),
        )
        .await;
    assert_eq!(status, 200, "{row}");
    let review = w.review_once().await;
    let bodies = review["comments"].to_string();
    assert!(bodies.contains("A TODO in new code"), "{bodies}");
    assert!(bodies.contains("`unwrap()`"), "{bodies}");
}

/// `review_quiet`: a review with nothing to post inline posts no review at all; the
/// row completes and the check run says "No findings". Off, the same change gets its review.
#[tokio::test]
async fn review_quiet_posts_nothing_when_there_is_no_finding() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-test", true).await;
    // The PR becomes a clean change: no unwrap, no TODO.
    git(&w.upstream.work, &["branch", "-q", "-f", "feature", "main"]);
    let mul = "pub fn mul(a: i32, b: i32) -> i32 {\n    a * b\n}\n";
    commit_on(&w.upstream, "feature", &[("src/mul.rs", mul)], "mul");
    w.upstream.publish_pull(1, "feature");
    put_settings(&w.server, serde_json::json!({"review_quiet": "true"})).await;
    w.server.enable(&w.full_name(), None).await;
    w.deliver_pull_request("opened").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(rows[0]["status"], "completed", "{}", w.server.log());
    assert!(w.forge.reviews().is_empty(), "{:?}", w.forge.reviews());
    let runs = w.forge.completed_check_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["conclusion"], "success");
    assert_eq!(runs[0]["output"]["title"], "No findings");
    let findings = w
        .server
        .get_json(&format!("/api/reviews/{}/findings", rows[0]["id"]))
        .await;
    assert_eq!(findings, serde_json::json!([]));

    // An empty string deletes the setting (the spec's rule 2): the next push gets its review.
    put_settings(&w.server, serde_json::json!({"review_quiet": ""})).await;
    let div = "pub fn div(a: i32, b: i32) -> Option<i32> {\n    a.checked_div(b)\n}\n";
    commit_on(&w.upstream, "feature", &[("src/div.rs", div)], "div");
    w.upstream.publish_pull(1, "feature");
    w.deliver_pull_request("synchronize").await;
    w.server.wait_reviews(&w.full_name(), 1, 2).await;
    assert_eq!(w.forge.reviews().len(), 1, "{:?}", w.forge.reviews());
}

/// The requests the verifier got (its tools include report_verdicts).
fn verifier_requests(w: &World) -> Vec<Value> {
    w.model
        .requests()
        .into_iter()
        .filter(|r| r["tools"].to_string().contains("report_verdicts"))
        .collect()
}

/// Every inline candidate goes to an independent
/// verifier before anything is posted. One it rejects is not posted and is recorded with its
/// reason (GET /api/reviews/:id/dropped); confirmed ones are posted as they are; one it cannot
/// decide is posted marked unverified; the verdict line counts what was posted.
#[tokio::test]
async fn a_candidate_the_verifier_rejects_is_not_posted_and_is_recorded_with_its_reason() {
    use test_doubles::scripted_model::{FALSE_POSITIVE, UNDECIDABLE};
    let w = World::start(Behavior::Reviewer, "anthropic/claude-test", true).await;
    w.model.push_extra_comment(serde_json::json!({
        "path": "src/parse.rs", "line": 3, "severity": "nit",
        "body": format!("Name the error type. {FALSE_POSITIVE}")
    }));
    w.model.push_extra_comment(serde_json::json!({
        "path": "src/parse.rs", "line": 1, "severity": "question",
        "body": format!("Is FromStr needed? {UNDECIDABLE}")
    }));
    let review = w.review_once().await;
    let bodies = comment_bodies(&review);
    assert!(
        !bodies.iter().any(|b| b.contains(FALSE_POSITIVE)),
        "{bodies:?}"
    );
    let undecided = bodies
        .iter()
        .find(|b| b.contains(UNDECIDABLE))
        .unwrap_or_else(|| panic!("the undecided candidate was lost: {bodies:?}"));
    assert!(
        undecided.ends_with("_Unverified: the verifier gave no verdict for it._"),
        "{undecided}"
    );
    // The reviewer's own three findings (two unwrap, one TODO) were confirmed and posted.
    assert_eq!(bodies.len(), 4, "{bodies:?}");
    let summary = review["body"].as_str().unwrap();
    assert!(
        summary.contains("Verification: 5 candidate finding(s) checked by an independent verifier; 4 posted, 1 dropped, 1 of the posted ones unverified."),
        "{summary}"
    );
    assert!(
        summary.ends_with("Blocking: 2 · Nits: 1 · Questions: 1"),
        "the verdict line counts what was posted: {summary}"
    );
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    let dropped = w
        .server
        .get_json(&format!("/api/reviews/{}/dropped", rows[0]["id"]))
        .await;
    let dropped = dropped.as_array().unwrap();
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert_eq!(dropped[0]["path"], "src/parse.rs");
    assert_eq!(dropped[0]["line"], 3);
    assert_eq!(dropped[0]["severity"], "nit");
    assert!(
        dropped[0]["reason"]
            .as_str()
            .unwrap()
            .contains("handles this already"),
        "{dropped:?}"
    );
    // The posted findings are the confirmed and the unverified ones, never the dropped one.
    let findings = w
        .server
        .get_json(&format!("/api/reviews/{}/findings", rows[0]["id"]))
        .await;
    assert!(!findings.to_string().contains(FALSE_POSITIVE), "{findings}");
    // One verifier conversation for the five candidates: it read a file, then reported.
    let verifier = verifier_requests(&w);
    assert_eq!(verifier.len(), 2, "{verifier:?}");
    assert!(
        verifier[0]["system"]
            .to_string()
            .contains("You verify candidate findings"),
        "{}",
        verifier[0]["system"]
    );
    // The check run says what verification did.
    let runs = w.forge.completed_check_runs();
    assert!(
        runs[0]["output"]["summary"]
            .as_str()
            .unwrap()
            .contains("Verification dropped 1 finding(s); 1 posted unverified."),
        "{runs:?}"
    );
}

/// `review_verify` set to "false" posts the candidates as the reviewer wrote them,
/// with no verifier call.
#[tokio::test]
async fn with_review_verify_false_candidates_are_posted_unchecked() {
    use test_doubles::scripted_model::FALSE_POSITIVE;
    let w = world_with_settings(serde_json::json!({"review_verify": "false"})).await;
    w.model.push_extra_comment(serde_json::json!({
        "path": "src/parse.rs", "line": 3, "severity": "nit",
        "body": format!("Name the error type. {FALSE_POSITIVE}")
    }));
    let review = w.review_once().await;
    assert!(
        review["comments"].to_string().contains(FALSE_POSITIVE),
        "{review}"
    );
    assert!(verifier_requests(&w).is_empty());
    assert!(!review["body"].as_str().unwrap().contains("Verification:"));
}

/// Verification counts against the review's budget. Stopped by the budget during
/// verification, the review posts only confirmed findings (here none) and says so; the
/// undecided candidates are recorded as dropped with the budget as the reason.
#[tokio::test]
async fn a_budget_stop_during_verification_posts_only_confirmed_findings_and_says_so() {
    // The review pass alone, measured without verification.
    let measure = world_with_settings(serde_json::json!({"review_verify": "false"})).await;
    measure.review_once().await;
    let rows = measure
        .server
        .wait_reviews(&measure.full_name(), 1, 1)
        .await;
    let review_pass = rows[0]["tokens"].as_i64().unwrap();

    // The same review with a budget that the review pass stays under (the tool result of a
    // deferred post_review is a few tokens longer) and the verifier's first answer passes.
    let limit = review_pass + 200;
    let w = world_with_settings(serde_json::json!({"review_max_tokens": limit.to_string()})).await;
    let review = w.review_once().await;
    assert_eq!(review["comments"], serde_json::json!([]), "{review}");
    let summary = review["body"].as_str().unwrap();
    assert!(
        summary.contains(
            "Verification stopped at the review's budget: only confirmed findings are posted"
        ),
        "{summary}"
    );
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(rows[0]["status"], "completed");
    assert!(rows[0]["tokens"].as_i64().unwrap() >= limit, "{rows:?}");
    let dropped = w
        .server
        .get_json(&format!("/api/reviews/{}/dropped", rows[0]["id"]))
        .await;
    let dropped = dropped.as_array().unwrap();
    assert_eq!(dropped.len(), 3, "{dropped:?}");
    assert!(
        dropped
            .iter()
            .all(|d| d["reason"].as_str().unwrap().contains("budget ran out")),
        "{dropped:?}"
    );
}

/// With `review_passes` at 2 the reviewer reads the diff twice (its
/// files in another order the second time); the candidates both passes found are merged, so
/// each is verified and posted once, and the summary says how many passes found them.
#[tokio::test]
async fn two_passes_merge_their_candidates_before_verification() {
    let w = world_with_settings(serde_json::json!({"review_passes": "2"})).await;
    let review = w.review_once().await;
    let (base, head) = (w.upstream.sha("main"), w.upstream.sha("feature"));
    // Each flagged line once, not twice.
    assert_eq!(
        inline_positions(&review),
        w.upstream.flagged_lines(&base, &head)
    );
    let summary = review["body"].as_str().unwrap();
    assert!(
        summary.contains("Passes: 2 independent passes over the diff; 3 candidate finding(s) after merging, 3 found by more than one pass."),
        "{summary}"
    );
    assert!(
        summary.ends_with("Blocking: 2 · Nits: 1 · Questions: 0"),
        "{summary}"
    );
    // Two review passes (each starting with git_diff) and one verifier conversation.
    let requests = w.model.requests();
    let diffs = requests
        .iter()
        .filter(|r| !r["tools"].to_string().contains("report_verdicts"))
        .filter(|r| r["messages"].as_array().is_some_and(|m| m.len() == 1))
        .count();
    assert_eq!(diffs, 2, "two passes start afresh");
    assert_eq!(verifier_requests(&w).len(), 2);
    // The passes and the verifier's conversation are items the API's schema names.
    let rows = w.server.reviews_of(&w.full_name(), 1).await;
    let session = w
        .server
        .transcript_fitting_schema(rows[0]["id"].as_i64().unwrap())
        .await;
    let kinds: Vec<&str> = session["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    for kind in [
        "pass",
        "passes",
        "verify",
        "verification",
        "tool_call",
        "tool_result",
    ] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
}
