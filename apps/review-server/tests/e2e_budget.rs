#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Monthly budgets against the real binary, the fake forge and the scripted model
//! (docs/review-service.md, "Monthly budget"): once the month-to-date spend reaches the
//! budget, a new review is recorded skipped with the reason and makes no model request, and
//! the PR gets one comment about it however many pushes follow; a repository's own budget
//! replaces the global one for that repository; two replicas on one PostgreSQL database post
//! that comment once between them (skipped without a PostgreSQL server, see tests/common).

mod common;

use common::*;
use serde_json::{Value, json};
use test_doubles::scripted_model::Behavior;

/// The PR comments that say a monthly budget is reached.
fn budget_comments(w: &World) -> Vec<String> {
    w.forge
        .posted("POST", "/issues/1/comments")
        .into_iter()
        .map(|r| r.body["body"].as_str().unwrap_or_default().to_owned())
        .filter(|b| b.contains("monthly budget"))
        .collect()
}

/// Pushes a commit on the feature branch, delivers `synchronize` and waits for PR 1's
/// `count`th review to end; returns the newest row.
async fn push_and_review(w: &World, count: usize) -> Value {
    w.upstream.push_feature_commit();
    w.deliver_pull_request("synchronize").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, count).await;
    rows[0].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reached_monthly_budget_skips_reviews_without_the_model_and_says_so_once() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", false).await;
    w.review_once().await;
    let first = w.server.wait_reviews(&w.full_name(), 1, 1).await[0].clone();
    let cost = first["cost"].as_f64().unwrap();
    assert!(cost > 0.0, "{first}");

    // The whole service's budget, under what the first review spent.
    let (status, body) = w
        .server
        .put_json("/api/settings", json!({ "monthly_budget": "0.000001" }))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["monthly_budget"], "0.000001");

    let requests = w.model.requests().len();
    for count in 2..=4 {
        let row = push_and_review(&w, count).await;
        assert_eq!(row["status"], "skipped", "{row}\n{}", w.server.log());
        let error = row["error"].as_str().unwrap();
        assert!(
            error.starts_with("monthly budget reached: $")
                && error.contains(" of $0.0000 spent this month by the whole service (monthly_budget setting) (resets ")
                && error.ends_with("-01 UTC)"),
            "{error}"
        );
        assert_eq!(row["cost"], Value::Null, "{row}");
    }
    assert_eq!(
        w.model.requests().len(),
        requests,
        "a review over the budget made a model request"
    );
    let comments = budget_comments(&w);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(
        comments[0].contains("monthly budget of the review service is reached"),
        "{}",
        comments[0]
    );
    assert_eq!(
        w.forge.reviews().len(),
        1,
        "only the first review was posted"
    );

    // The prompt improver, which also calls the model, declines for the same reason.
    let (status, body) = w
        .server
        .post_json(&format!("/api/repos/{}/improve", w.full_name()), json!({}))
        .await;
    assert_eq!(status, 202, "{body}");
    w.server
        .wait_log_line(&["improver declined", "monthly budget reached"])
        .await;
    assert_eq!(w.model.requests().len(), requests);

    // The dashboard's numbers: this month's spend is the first review's cost.
    let report = w.server.get_json("/api/budget").await;
    assert_eq!(report["budget"], json!(0.000001), "{report}");
    let spent = report["spent"].as_f64().unwrap();
    assert!((spent - cost).abs() < 1e-9, "{report}");
    assert!(report["projected"].as_f64().unwrap() >= spent, "{report}");
    assert_eq!(report["repos"][0]["repo_full_name"], w.full_name());
    assert_eq!(report["repos"][0]["budget"], Value::Null);
    assert!((report["repos"][0]["spent"].as_f64().unwrap() - cost).abs() < 1e-9);
    assert_eq!(
        w.server
            .db_count("SELECT count(*) FROM budget_notices")
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repositorys_own_monthly_budget_replaces_the_global_one() {
    // MONTHLY_BUDGET: the first review runs (nothing spent yet) and reaches it.
    let w = World::start_with(
        Upstream::new(),
        Behavior::Reviewer,
        "anthropic/claude-sonnet-4-5",
        false,
        &[("MONTHLY_BUDGET", "0.000001".to_owned())],
    )
    .await;
    w.review_once().await;
    let repo_path = format!("/api/repos/{}", w.full_name());

    // Its own budget is higher: the next review runs although the global one is reached.
    let (status, row) = w
        .server
        .put_json(&repo_path, json!({ "enabled": 1, "monthly_budget": 1000 }))
        .await;
    assert_eq!(
        (status, &row["monthly_budget"]),
        (200, &json!(1000.0)),
        "{row}"
    );
    let requests = w.model.requests().len();
    let second = push_and_review(&w, 2).await;
    assert_eq!(
        second["status"],
        "completed",
        "{second}\n{}",
        w.server.log()
    );
    assert!(w.model.requests().len() > requests);

    // Its own budget under its spend: skipped, and the reason names the repository's budget.
    let (status, _) = w
        .server
        .put_json(
            &repo_path,
            json!({ "enabled": 1, "monthly_budget": 0.0001 }),
        )
        .await;
    assert_eq!(status, 200);
    let requests = w.model.requests().len();
    let third = push_and_review(&w, 3).await;
    assert_eq!(third["status"], "skipped", "{third}");
    let error = third["error"].as_str().unwrap();
    assert!(
        error.contains("spent this month by acme/widgets (its own monthly_budget)"),
        "{error}"
    );
    assert_eq!(w.model.requests().len(), requests);
    let comments = budget_comments(&w);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(
        comments[0].contains("monthly budget of this repository is reached"),
        "{}",
        comments[0]
    );

    // Refused: a budget that is not a positive number.
    let (status, body) = w
        .server
        .put_json(&repo_path, json!({ "monthly_budget": -1 }))
        .await;
    assert_eq!(status, 422, "{body}");
    let report = w.server.get_json("/api/budget").await;
    assert_eq!(report["budget"], json!(0.000001), "{report}");
    assert_eq!(report["repos"][0]["budget"], json!(0.0001), "{report}");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_over_budget_post_one_comment_between_them() {
    let Some(url) = postgres_database_url().await else {
        return;
    };
    let w = World::start_with(
        Upstream::new(),
        Behavior::Reviewer,
        "anthropic/claude-sonnet-4-5",
        false,
        &[("DATABASE_URL", url)],
    )
    .await;
    w.review_once().await;
    let b = w.replica("replica-b").await;
    let (status, _) = w
        .server
        .put_json("/api/settings", json!({ "monthly_budget": "0.000001" }))
        .await;
    assert_eq!(status, 200);
    let requests = w.model.requests().len();

    // PRs 2 to 9 opened at once, half on each replica: every review races for the notice.
    w.publish_pulls(9);
    let sends: Vec<_> = (2..=9)
        .map(|n| {
            let server = if n % 2 == 0 { &w.server } else { &b };
            (server, w.pull_payload(n, "opened"))
        })
        .collect();
    let statuses = futures::future::join_all(
        sends
            .iter()
            .map(|(server, body)| server.deliver("pull_request", body, Some(SECRET))),
    )
    .await;
    assert!(statuses.iter().all(|r| r.status() == 200));
    for n in 2..=9 {
        let rows = w.server.wait_reviews(&w.full_name(), n, 1).await;
        assert_eq!(rows[0]["status"], "skipped", "PR {n}: {}", rows[0]);
    }
    assert_eq!(w.model.requests().len(), requests);
    let notices: Vec<String> = w
        .forge
        .posted("POST", "/comments")
        .into_iter()
        .map(|r| r.body["body"].as_str().unwrap_or_default().to_owned())
        .filter(|b| b.contains("monthly budget"))
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
}
