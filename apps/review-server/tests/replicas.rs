#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Two review-server processes on one PostgreSQL database, with the fake forge and the
//! scripted model (docs/architecture.md, "Many replicas"): every review runs exactly once, a
//! killed replica's review is failed as interrupted by the other once its lease lapses, stops,
//! events and repository edits cross replicas, and an automatic retry outlives a restart of
//! every replica.

mod common;

use common::*;
use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use test_doubles::scripted_model::Behavior;

const MODEL: &str = "anthropic/claude-sonnet-4-5";
/// Pull requests of the first phase, each delivered twice (once to each replica).
const PRS: i64 = 100;

/// POST a signed pull_request delivery with the given delivery id.
async fn deliver(server: &Server, body: &[u8], delivery: &str) -> u16 {
    server
        .http
        .post(format!("{}/webhook/github", server.url))
        .header("X-GitHub-Event", "pull_request")
        .header("X-GitHub-Delivery", delivery)
        .header("content-type", "application/json")
        .header("X-Hub-Signature-256", forge::sign(SECRET.as_bytes(), body))
        .body(body.to_vec())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// (status, error) of every review of PR `n`, oldest first.
async fn rows_of(db: &sqlx::PgPool, n: i64) -> Vec<(String, Option<String>, String)> {
    sqlx::query_as(
        "SELECT status, error, coalesce(\"trigger\", '') FROM reviews WHERE pr_number = $1 ORDER BY id",
    )
    .bind(n)
    .fetch_all(db)
    .await
    .unwrap()
}

/// Waits (up to `secs`) until `check` holds for PR `n`'s rows; returns them.
async fn wait_rows(
    db: &sqlx::PgPool,
    n: i64,
    secs: u64,
    check: impl Fn(&[(String, Option<String>, String)]) -> bool,
    logs: &[&Server],
) -> Vec<(String, Option<String>, String)> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let rows = rows_of(db, n).await;
        if check(&rows) {
            return rows;
        }
        assert!(
            Instant::now() < deadline,
            "PR {n}: {rows:?}\n{}",
            logs.iter()
                .map(|s| s.log())
                .collect::<Vec<_>>()
                .join("\n----\n")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The id of PR `n`'s newest review.
async fn review_id(db: &sqlx::PgPool, n: i64) -> i64 {
    sqlx::query_scalar("SELECT max(id) FROM reviews WHERE pr_number = $1")
        .bind(n)
        .fetch_one(db)
        .await
        .unwrap()
}

/// Waits (20 s at most) until the scripted model has had more than `before` requests: the
/// agent of a review is running, its transcript begun.
async fn wait_model_call(w: &World, before: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while w.model.requests().len() == before {
        assert!(
            Instant::now() < deadline,
            "the agent never called the model"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How many reviews `server` claimed from the queue, by its log.
fn claims(server: &Server) -> usize {
    server
        .log()
        .lines()
        .filter(|l| l.contains("claimed review_id="))
        .count()
}

fn claimed(server: &Server, id: i64) -> bool {
    server
        .log()
        .lines()
        .any(|l| l.ends_with(&format!("claimed review_id={id}")))
}

/// Reviews posted on the fake forge, by PR number.
fn posted_reviews(w: &World) -> BTreeMap<i64, usize> {
    let mut by_pr = BTreeMap::new();
    for r in w.forge.posted("POST", "/reviews") {
        let n: i64 = r.path.rsplit('/').nth(1).unwrap().parse().unwrap();
        *by_pr.entry(n).or_default() += 1;
    }
    by_pr
}

/// Reads frames of `client` until one is a `kind` event whose data satisfies `check`
/// (20 s at most); asserts the ids it saw increase.
async fn wait_event(client: &mut EventClient, kind: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last_id = 0;
    loop {
        assert!(Instant::now() < deadline, "no {kind} event");
        let (id, data) = client.next_data().await;
        assert!(
            id > last_id,
            "event ids go up on one connection: {id} after {last_id}"
        );
        last_id = id;
        if data["type"] == kind && check(&data) {
            return data;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_on_postgres_review_once_recover_a_dead_one_and_share_control() {
    let Some(url) = postgres_database_url().await else {
        return;
    };
    let settings = [
        ("DATABASE_URL", url.clone()),
        // Short enough for the kill test, long enough that a replica busy with 200 deliveries
        // on 2 cores does not miss three renewals in a row.
        ("LEASE_SECS", "5".to_owned()),
        ("QUEUE_POLL_MS", "200".to_owned()),
        ("RETRY_DELAY_SECS", "3".to_owned()),
        ("MAX_CONCURRENT_REVIEWS", "4".to_owned()),
    ];
    let mut w =
        World::start_with(Upstream::new(), Behavior::Reviewer, MODEL, true, &settings).await;
    let mut b = w.replica("replica-b").await;
    let b_dir = b.data_dir.clone();
    let db = sqlx::PgPool::connect(&url).await.unwrap();
    w.server.enable(&w.full_name(), None).await;
    w.publish_pulls(PRS + 10);

    // 1. 200 deliveries for 100 PRs: each delivery id goes to both replicas at once.
    let sends = (1..=PRS).flat_map(|n| {
        let body = w.pull_payload(n, "opened");
        let id = format!("delivery-{n:04}");
        [(0, body.clone(), id.clone()), (1, body, id)]
    });
    let a = &w.server;
    let statuses: Vec<u16> = futures::stream::iter(sends)
        .map(|(to, body, id)| {
            let server = if to == 0 { a } else { &b };
            async move { deliver(server, &body, &id).await }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let done: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM reviews WHERE status IN ('completed', 'failed', 'skipped')",
        )
        .fetch_one(&db)
        .await
        .unwrap();
        let all: i64 = sqlx::query_scalar("SELECT count(*) FROM reviews")
            .fetch_one(&db)
            .await
            .unwrap();
        if done == all && all >= PRS {
            break;
        }
        assert!(Instant::now() < deadline, "{done}/{all} done\n{}", b.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let per_status: Vec<(String, i64)> =
        sqlx::query_as("SELECT status, count(*) FROM reviews GROUP BY status")
            .fetch_all(&db)
            .await
            .unwrap();
    let errors: Vec<(i64, Option<String>)> =
        sqlx::query_as("SELECT pr_number, error FROM reviews WHERE status != 'completed'")
            .fetch_all(&db)
            .await
            .unwrap();
    assert_eq!(
        per_status,
        vec![("completed".to_owned(), PRS)],
        "one completed review per PR; not completed: {errors:?}\nA:\n{}\nB:\n{}",
        w.server.log(),
        b.log()
    );
    let posted = posted_reviews(&w);
    assert_eq!(posted.len() as i64, PRS);
    assert!(
        posted.values().all(|n| *n == 1),
        "one posted review per PR: {posted:?}"
    );
    assert_eq!(
        w.forge.completed_check_runs().len() as i64,
        PRS,
        "one completed check run per PR head"
    );
    let (on_a, on_b) = (claims(&w.server), claims(&b));
    assert_eq!((on_a + on_b) as i64, PRS);
    assert!(
        on_a > 0 && on_b > 0,
        "both replicas reviewed: {on_a} and {on_b}"
    );

    // 2. kill -9 of the replica running a review: the other fails it as interrupted once the
    // lease lapses (5 s), retries nothing, and goes on reviewing.
    w.model
        .set_behavior(Behavior::Slow(Duration::from_secs(120)));
    assert_eq!(
        deliver(&w.server, &w.pull_payload(101, "opened"), "delivery-0101").await,
        200
    );
    wait_rows(
        &db,
        101,
        30,
        |r| r.first().is_some_and(|r| r.0 == "running"),
        &[&w.server, &b],
    )
    .await;
    let id = review_id(&db, 101).await;
    let a_runs = claimed(&w.server, id);
    assert!(a_runs || claimed(&b, id));
    if a_runs {
        let _ = w.server.child.kill();
        let _ = w.server.child.wait();
    } else {
        let _ = b.child.kill();
        let _ = b.child.wait();
    }
    w.model.set_behavior(Behavior::Reviewer);
    let survivor = if a_runs { &b } else { &w.server };
    let rows = wait_rows(
        &db,
        101,
        20,
        |r| r.first().is_some_and(|r| r.0 == "failed"),
        &[survivor],
    )
    .await;
    assert_eq!(
        rows,
        vec![(
            "failed".to_owned(),
            Some("interrupted: its replica stopped renewing its lease".to_owned()),
            "opened".to_owned()
        )]
    );
    survivor
        .wait_log_line(&[
            &format!("review_id={id}"),
            "lease lapsed; no automatic retry",
        ])
        .await;
    assert_eq!(
        deliver(survivor, &w.pull_payload(102, "opened"), "delivery-0102").await,
        200
    );
    wait_rows(
        &db,
        102,
        30,
        |r| r.first().is_some_and(|r| r.0 == "completed"),
        &[survivor],
    )
    .await;
    tokio::time::sleep(Duration::from_secs(4)).await; // past RETRY_DELAY_SECS
    assert_eq!(
        rows_of(&db, 101).await.len(),
        1,
        "no automatic retry of an interrupted review"
    );
    // The killed replica comes back on its folder and leaves no worktree behind.
    if a_runs {
        w.server = Server::start(&w.server.data_dir.clone(), &w.env).await;
    } else {
        b = Server::start(&b_dir, &w.env).await;
    }
    for server in [&w.server, &b] {
        let left = std::fs::read_dir(server.data_dir.join("worktrees"))
            .map(|d| d.count())
            .unwrap_or(0);
        assert_eq!(
            left,
            0,
            "worktrees left under {}",
            server.data_dir.display()
        );
    }

    // 3. A stop sent to one replica ends the run on the other; each replica's event stream
    // carries the other's events.
    let mut events_a = EventClient::connect(&w.server.url, "/api/events").await;
    let mut events_b = EventClient::connect(&b.url, "/api/events").await;
    let model_calls = w.model.requests().len();
    w.model
        .set_behavior(Behavior::Slow(Duration::from_secs(120)));
    assert_eq!(
        deliver(&w.server, &w.pull_payload(103, "opened"), "delivery-0103").await,
        200
    );
    wait_rows(
        &db,
        103,
        30,
        |r| r.first().is_some_and(|r| r.0 == "running"),
        &[&w.server, &b],
    )
    .await;
    let id = review_id(&db, 103).await;
    let (runner, other, other_events) = if claimed(&w.server, id) {
        (&w.server, &b, &mut events_b)
    } else {
        (&b, &w.server, &mut events_a)
    };
    let seen = wait_event(other_events, "review:updated", |d| {
        d["review"]["id"] == id && d["review"]["status"] == "running"
    })
    .await;
    assert_eq!(seen["repo"], w.full_name());
    // The agent is waiting for the model (its transcript begun) when the stop comes.
    wait_model_call(&w, model_calls).await;
    let stop: Value = other
        .http
        .post(format!("{}/api/reviews/{id}/stop", other.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stop, json!({ "ok": true, "live": true }));
    let rows = wait_rows(
        &db,
        103,
        20,
        |r| r.first().is_some_and(|r| r.0 == "failed"),
        &[runner],
    )
    .await;
    assert_eq!(rows[0].1.as_deref(), Some("Stopped by user"));
    runner
        .wait_log_line(&[
            &format!("review_id={id}"),
            "run cancelled at another replica's request",
        ])
        .await;
    wait_event(other_events, "review:updated", |d| {
        d["review"]["id"] == id && d["review"]["status"] == "failed"
    })
    .await;
    w.model.set_behavior(Behavior::Reviewer);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        posted_reviews(&w).get(&103),
        None,
        "nothing posted for the stopped review"
    );
    let conclusions: Vec<Value> = w
        .forge
        .completed_check_runs()
        .into_iter()
        .map(|c| c["conclusion"].clone())
        .collect();
    assert!(conclusions.contains(&json!("cancelled")), "{conclusions:?}");
    // The transcript of a run is served by either replica.
    let session = other.get_json(&format!("/api/reviews/{id}/session")).await;
    assert!(session["session_id"].is_string(), "{session}");

    // A newer push delivered to one replica supersedes the run on the other.
    let model_calls = w.model.requests().len();
    w.model
        .set_behavior(Behavior::Slow(Duration::from_secs(120)));
    assert_eq!(
        deliver(&w.server, &w.pull_payload(106, "opened"), "delivery-0106").await,
        200
    );
    wait_rows(
        &db,
        106,
        30,
        |r| r.first().is_some_and(|r| r.0 == "running"),
        &[&w.server, &b],
    )
    .await;
    wait_model_call(&w, model_calls).await;
    let old = review_id(&db, 106).await;
    let other = if claimed(&w.server, old) {
        &b
    } else {
        &w.server
    };
    w.model.set_behavior(Behavior::Reviewer);
    // The newer push: one more commit, on a branch of its own, as PR 106's new head.
    let work = &w.upstream.work;
    git(work, &["checkout", "-q", "-b", "feature-106", "feature"]);
    std::fs::write(
        work.join("src/extra.rs"),
        "pub fn one() -> i32 {\n    1\n}\n",
    )
    .unwrap();
    git(work, &["add", "-A"]);
    git(work, &["commit", "-qm", "one"]);
    git(work, &["checkout", "-q", "main"]);
    w.upstream.publish_pull(106, "feature-106");
    let newer = w.upstream.sha("feature-106");
    let diff = git(work, &["diff", &format!("main...{newer}")]);
    w.forge.set_diff(&w.full_name(), &newer, &diff);
    let mut push: Value = serde_json::from_slice(&w.pull_payload(106, "synchronize")).unwrap();
    push["pull_request"]["head"]["sha"] = json!(newer);
    assert_eq!(
        deliver(
            other,
            &serde_json::to_vec(&push).unwrap(),
            "delivery-0106-sync"
        )
        .await,
        200
    );
    let rows = wait_rows(
        &db,
        106,
        30,
        |r| r.len() == 2 && r[0].0 == "failed" && r[1].0 == "completed",
        &[&w.server, &b],
    )
    .await;
    assert_eq!(rows[0].1.as_deref(), Some("superseded by a newer push"));
    assert_eq!(
        posted_reviews(&w).get(&106),
        Some(&1),
        "only the newer push's review posted"
    );

    // 4. A repository disabled through A: B skips its next delivery.
    let r = w
        .server
        .http
        .put(format!("{}/api/repos/{}", w.server.url, w.full_name()))
        .json(&json!({ "enabled": 0 }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    wait_event(&mut events_b, "repo:updated", |d| d["row"]["enabled"] == 0).await;
    assert_eq!(
        deliver(&b, &w.pull_payload(104, "opened"), "delivery-0104").await,
        200
    );
    b.wait_log_line(&["repo disabled; delivery skipped"]).await;
    assert!(rows_of(&db, 104).await.is_empty());
    let r = b
        .http
        .put(format!("{}/api/repos/{}", b.url, w.full_name()))
        .json(&json!({ "enabled": 1 }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    wait_event(&mut events_a, "repo:updated", |d| d["row"]["enabled"] == 1).await;

    // 5. An automatic retry scheduled before every replica restarts runs once after it.
    w.model.set_behavior(Behavior::Fail500);
    assert_eq!(
        deliver(&w.server, &w.pull_payload(105, "opened"), "delivery-0105").await,
        200
    );
    wait_rows(
        &db,
        105,
        30,
        |r| r.first().is_some_and(|r| r.0 == "failed"),
        &[&w.server, &b],
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(w.server.log().contains("automatic retry scheduled")
        || b.log().contains("automatic retry scheduled"))
    {
        assert!(Instant::now() < deadline, "no retry scheduled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for server in [&mut w.server, &mut b] {
        let _ = server.child.kill();
        let _ = server.child.wait();
    }
    w.model.set_behavior(Behavior::Reviewer);
    w.server = Server::start(&w.server.data_dir.clone(), &w.env).await;
    b = Server::start(&b_dir, &w.env).await;
    let rows = wait_rows(
        &db,
        105,
        60,
        |r| r.len() == 2 && r[1].0 == "completed",
        &[&w.server, &b],
    )
    .await;
    assert_eq!(rows[1].2, "retry");
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(rows_of(&db, 105).await.len(), 2, "the retry ran once");
    assert_eq!(posted_reviews(&w).get(&105), Some(&1));
}
