#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The lifecycle rules of docs/review-service.md §3 and the event stream of §6,
//! against the real binary.

mod common;

use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use test_doubles::scripted_model::Behavior;

const MODEL: &str = "anthropic/claude-sonnet-4-5";

async fn world(behavior: Behavior, extra: &[(&'static str, String)]) -> World {
    let w = World::start_with(Upstream::new(), behavior, MODEL, true, extra).await;
    w.server.enable(&w.full_name(), None).await;
    // The forge knows the PR, for retries.
    let pull: Value =
        serde_json::from_slice(&w.pull_request_payload("opened", &w.upstream.sha("feature")))
            .unwrap();
    w.forge
        .set_pull(&w.full_name(), 1, pull["pull_request"].clone());
    w
}

/// A world whose model answers each request after `delay`, with PR 1 opened and its review
/// running: the world and the review's id.
async fn running_review(delay: Duration, extra: &[(&'static str, String)]) -> (World, i64) {
    let w = world(Behavior::Slow(delay), extra).await;
    w.open_pr().await;
    let first = w.server.wait_reviews_any(&w.full_name(), 1).await;
    let id = first["id"].as_i64().unwrap();
    wait_status(&w, id, "running").await;
    (w, id)
}

/// Waits until the server has decided that review `id`, cancelled, gets no automatic retry;
/// then asserts that PR 1 has `count` rows.
async fn assert_cancelled_run_not_retried(w: &World, id: i64, count: usize, what: &str) {
    w.server
        .wait_log_line(&[
            "no automatic retry: the run was cancelled",
            &format!("review_id={id}"),
        ])
        .await;
    assert_eq!(rows(w).await.len(), count, "{what}");
}

async fn rows(w: &World) -> Vec<Value> {
    w.server
        .get_json(&format!("/api/repos/{}/pr/1", w.full_name()))
        .await
        .as_array()
        .unwrap()
        .clone()
}

async fn wait_status(w: &World, id: i64, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let row = w.server.get_json(&format!("/api/reviews/{id}")).await;
        if row["status"] == status {
            return row;
        }
        assert!(
            Instant::now() < deadline,
            "review {id} never became {status}: {row}\n{}",
            w.server.log()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// DELETE /api/repos/acme/widgets, asserting 204.
async fn remove_repo(w: &World) {
    let (status, body) = w
        .server
        .call(reqwest::Method::DELETE, "/api/repos/acme/widgets", None)
        .await;
    assert_eq!(status, 204, "{body}");
}

async fn post(w: &World, path: &str) -> (u16, String) {
    let r = w
        .server
        .http
        .post(format!("{}{path}", w.server.url))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_aborts_a_live_run_which_fails_stopped_by_user_and_is_not_retried() {
    let (w, id) = running_review(Duration::from_secs(3), &[("RETRY_DELAY_SECS", "1".into())]).await;
    let (status, body) = post(&w, &format!("/api/reviews/{id}/stop")).await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&body).unwrap()),
        (200, json!({ "ok": true, "live": true }))
    );
    let row = wait_status(&w, id, "failed").await;
    assert_eq!(row["error"], "Stopped by user");
    // Stopping again: already terminal.
    let (status, body) = post(&w, &format!("/api/reviews/{id}/stop")).await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&body).unwrap()),
        (200, json!({ "ok": false, "reason": "already completed" }))
    );
    assert_cancelled_run_not_retried(&w, id, 1, "a stopped review is never retried").await;
    assert_eq!(w.leftover_worktrees(), Vec::<std::path::PathBuf>::new());
    assert_eq!(
        post(&w, "/api/reviews/9999/stop").await,
        (404, "Not found".into())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn genuine_failure_is_retried_once_and_a_failed_retry_comments_on_the_pr() {
    let w = world(Behavior::Fail500, &[("RETRY_DELAY_SECS", "1".into())]).await;
    w.open_pr().await;
    let all = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    let (retry, first) = (&all[0], &all[1]);
    assert_eq!(
        (
            first["status"].as_str(),
            first["attempt"].as_i64(),
            first["trigger"].as_str()
        ),
        (Some("failed"), Some(0), Some("opened"))
    );
    assert_eq!(
        (
            retry["status"].as_str(),
            retry["attempt"].as_i64(),
            retry["trigger"].as_str()
        ),
        (Some("failed"), Some(1), Some("retry"))
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while w.forge.posted("POST", "/issues/1/comments").is_empty() {
        assert!(
            Instant::now() < deadline,
            "no comment about the failed retry"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let comment = &w.forge.posted("POST", "/issues/1/comments")[0].body;
    assert!(
        comment["body"].as_str().unwrap().contains("failed twice"),
        "{comment}"
    );
    w.server
        .wait_log_line(&["no automatic retry: the review was itself a retry"])
        .await;
    assert_eq!(rows(&w).await.len(), 2, "a retry is never retried");
}

#[tokio::test(flavor = "multi_thread")]
async fn automatic_retry_stands_down_when_another_review_of_the_pr_is_active() {
    let w = world(Behavior::Fail500, &[("RETRY_DELAY_SECS", "2".into())]).await;
    w.open_pr().await;
    let first = w.server.wait_reviews(&w.full_name(), 1, 1).await[0].clone();
    assert_eq!(first["status"], "failed");
    // Another review of the PR is running on another replica, under a live lease, when the
    // delay ends.
    w.server.db_exec("INSERT INTO reviews (id, repo_full_name, pr_number, status, \"trigger\", attempt, created_at) VALUES (100, 'acme/widgets', 1, 'running', 'opened', 0, 1)").await;
    w.server.db_exec("INSERT INTO review_queue (review_id, job, owner, lease_until) VALUES (100, '{}', 'another-replica', 9999999999999)").await;
    w.server
        .wait_log_line(&["automatic retry stands down"])
        .await;
    assert_eq!(
        rows(&w).await.len(),
        2,
        "the retry stood down: {:?}",
        rows(&w).await
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn newer_push_supersedes_the_running_review_without_retry() {
    let (w, first_id) = running_review(
        Duration::from_millis(700),
        &[("RETRY_DELAY_SECS", "1".into())],
    )
    .await;
    let head2 = w.upstream.push_feature_commit();
    w.deliver_pull_at("synchronize", &head2).await;
    let all = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    let old = all.iter().find(|r| r["id"] == first_id).unwrap();
    assert_eq!(
        (old["status"].as_str(), old["error"].as_str()),
        (Some("failed"), Some("superseded by a newer push"))
    );
    assert_eq!(all[0]["status"], "completed");
    assert_cancelled_run_not_retried(&w, first_id, 2, "a superseded review is never retried").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn at_most_max_concurrent_reviews_run_and_the_rest_wait_pending() {
    let w = world(
        Behavior::Slow(Duration::from_millis(400)),
        &[("MAX_CONCURRENT_REVIEWS", "1".into())],
    )
    .await;
    w.upstream.publish_pull(2, "feature");
    w.open_pr().await;
    let mut v: Value =
        serde_json::from_slice(&w.pull_request_payload("opened", &w.upstream.sha("feature")))
            .unwrap();
    v["number"] = json!(2);
    v["pull_request"]["number"] = json!(2);
    w.deliver_payload(&serde_json::to_vec(&v).unwrap()).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut saw_pending_while_running = false;
    loop {
        let all = w.server.get_json("/api/repos/acme/widgets/reviews").await;
        let all = all.as_array().unwrap();
        let running = all.iter().filter(|r| r["status"] == "running").count();
        assert!(running <= 1, "{all:?}");
        if running == 1 && all.iter().any(|r| r["status"] == "pending") {
            saw_pending_while_running = true;
        }
        if all.len() == 2 && all.iter().all(|r| r["status"] == "completed") {
            break;
        }
        assert!(Instant::now() < deadline, "{all:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(saw_pending_while_running);
}

#[tokio::test(flavor = "multi_thread")]
async fn manual_retry_creates_a_new_row_and_leaves_the_original_untouched() {
    let w = world(Behavior::Reviewer, &[]).await;
    w.open_pr().await;
    let first = w.server.wait_reviews(&w.full_name(), 1, 1).await[0].clone();
    let id = first["id"].as_i64().unwrap();
    assert_eq!(
        post(&w, &format!("/api/reviews/{id}/retry")).await,
        (202, "{\"ok\":true}".into())
    );
    let all = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    assert_eq!(
        (
            all[0]["trigger"].as_str(),
            all[0]["attempt"].as_i64(),
            all[0]["status"].as_str()
        ),
        (Some("retry"), Some(0), Some("completed"))
    );
    assert_eq!(all[1], first, "the original row is untouched");
    assert_eq!(
        post(&w, "/api/reviews/9999/retry").await,
        (404, "Not found".into())
    );
    // The forge cannot give the PR: 502 with the forge's error.
    w.forge
        .fail("/repos/acme/widgets/pulls/1", 500, "Server Error");
    let (status, body) = post(&w, &format!("/api/reviews/{id}/retry")).await;
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (status, body["ok"].clone(), body["code"].clone()),
        (502, json!(false), json!("forge_unavailable"))
    );
    assert!(
        body["error"].as_str().unwrap().contains("Server Error"),
        "{body}"
    );
    // The repo is gone: plain text `repo not found`.
    remove_repo(&w).await;
    assert_eq!(
        post(&w, &format!("/api/reviews/{id}/retry")).await,
        (404, "repo not found".into())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_and_restarted_server_fails_its_interrupted_run_at_boot() {
    // The default 30 s lease must not keep the killed run `running` after the
    // restart; the process knows its own runs by the replica id kept in DATA_DIR.
    let settings = [
        ("RETRY_DELAY_SECS", "1".to_owned()),
        ("QUEUE_POLL_MS", "100".to_owned()),
    ];
    let (mut w, id) = running_review(Duration::from_secs(30), &settings).await;
    let replica_id = std::fs::read_to_string(w.server.data_dir.join("replica-id")).unwrap();
    // A row a version without the work queue left running, and one written a moment before
    // the kill: neither has a queue row, so nobody would ever end them.
    w.server.insert_rows_without_queue_rows().await;
    let killed_at = std::time::Instant::now();
    w.kill_and_restart().await; // kill -9 in the middle of the review
    let server = &w.server;
    assert_eq!(
        std::fs::read_to_string(server.data_dir.join("replica-id")).unwrap(),
        replica_id,
        "the restarted process keeps its replica id"
    );
    assert!(
        std::fs::read_dir(server.data_dir.join("worktrees"))
            .map(|d| d.count() == 0)
            .unwrap_or(true),
        "the restarted process left the killed review's worktree behind"
    );
    // Failed before the server listened: the first read already shows it.
    let row = server.get_json(&format!("/api/reviews/{id}")).await;
    assert_eq!(
        (row["status"].as_str(), row["error"].as_str()),
        (Some("failed"), Some("interrupted by restart"))
    );
    assert!(
        killed_at.elapsed() < Duration::from_secs(15),
        "failed at boot, not when a lease lapsed"
    );
    server
        .wait_log_line(&["interrupted by a restart marked failed; no automatic retry"])
        .await;
    for pr in [2, 3] {
        let legacy = server
            .get_json(&format!("/api/repos/acme/widgets/pr/{pr}"))
            .await;
        assert_eq!(
            (legacy[0]["status"].as_str(), legacy[0]["error"].as_str()),
            (Some("failed"), Some("interrupted by restart")),
            "PR {pr}"
        );
    }
    // Past the retry delay: none got an automatic retry.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        server
            .get_json("/api/repos/acme/widgets/pr/1")
            .await
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

/// The webhook inbox row a replica writes when it accepts PR `n`'s `opened` delivery
/// (docs/architecture.md, "The webhook inbox"), as SQL both backends accept.
fn inbox_row(w: &World, n: i64) -> String {
    let job = json!({
        "repo": {"installation_id": INSTALLATION, "owner": OWNER, "name": REPO},
        "pr": {
            "number": n, "title": format!("Change {n}"), "body": null, "author": "octocat",
            "base_ref": "main", "base_sha": w.upstream.sha("main"),
            "head_ref": "feature", "head_sha": w.upstream.sha("feature"),
        },
        "trigger": "opened",
        "attempt": 0,
    });
    format!(
        "INSERT INTO review_inbox (repo_full_name, pr_number, title, \"trigger\", attempt, job, received_at) \
         VALUES ('{}', {n}, 'Change {n}', 'opened', 0, '{job}', 1)",
        w.full_name()
    )
}

/// Waits for PR `pr`'s review and asserts that it is the only one, completed, with `field`
/// equal to `value`.
async fn assert_one_completed_review(w: &World, pr: i64, field: &str, value: &str) {
    let rows = w.server.wait_reviews(&w.full_name(), pr, 1).await;
    assert_eq!(
        (
            rows.len(),
            rows[0]["status"].as_str(),
            rows[0][field].as_str()
        ),
        (1, Some("completed"), Some(value)),
        "{}",
        w.server.log()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_delivery_accepted_but_not_yet_a_review_is_reviewed_by_whichever_process_runs_next() {
    let mut w = world(Behavior::Reviewer, &[("QUEUE_POLL_MS", "100".to_owned())]).await;
    w.publish_pulls(2);
    // Another replica accepted PR 1's delivery and died before its review row was written:
    // this process's promoter finds it at its next poll and reviews it.
    w.server.db_exec(&inbox_row(&w, 1)).await;
    assert_one_completed_review(&w, 1, "trigger", "opened").await;
    // This process dies right after accepting PR 2's delivery: the next start reviews it.
    let _ = w.server.child.kill();
    let _ = w.server.child.wait();
    w.server.db_exec(&inbox_row(&w, 2)).await;
    w.kill_and_restart().await;
    assert_one_completed_review(&w, 2, "title", "Change 2").await;
    assert_eq!(
        w.server.db_count("SELECT count(*) FROM review_inbox").await,
        0
    );
    // One posted review per PR on the fake forge.
    assert_eq!(w.forge.reviews().len(), 2, "{:?}", w.forge.reviews());
}

/// SQLite commits leave the write-ahead log to the keeper (docs/operations.md, "SQLite and
/// backups"); a graceful stop folds it into `review.db`, so the file alone holds every row.
#[tokio::test(flavor = "multi_thread")]
async fn a_graceful_stop_leaves_every_row_in_the_sqlite_file() {
    use sqlx::Connection;
    let mut w = world(Behavior::Reviewer, &[]).await;
    if !w.server.database_url.starts_with("sqlite") {
        return; // PostgreSQL has no file to fold a log into
    }
    w.review_once().await;
    let pid = w.server.child.id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = w.server.child.wait().unwrap();
    assert!(exit.success(), "{exit:?}\n{}", w.server.log());
    let dir = w.server.data_dir.clone();
    let wal = dir.join("review.db-wal");
    assert_eq!(
        std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0),
        0,
        "the log was not folded in at shutdown"
    );
    // The database file alone, without its log, holds the review.
    let _ = std::fs::remove_file(&wal);
    let _ = std::fs::remove_file(dir.join("review.db-shm"));
    sqlx::any::install_default_drivers();
    let url = format!("sqlite://{}?mode=ro", dir.join("review.db").display());
    let mut db = sqlx::AnyConnection::connect(&url).await.unwrap();
    let (reviews, completed): (i64, i64) = sqlx::query_as(
        "SELECT count(*), sum(CASE WHEN status = 'completed' THEN 1 ELSE 0 END) FROM reviews",
    )
    .fetch_one(&mut db)
    .await
    .unwrap();
    assert_eq!((reviews, completed), (1, 1));
}

#[tokio::test(flavor = "multi_thread")]
async fn event_stream_opens_with_a_heartbeat_and_filters_by_repo() {
    let w = World::start_with(
        Upstream::new(),
        Behavior::Reviewer,
        MODEL,
        true,
        &[("HEARTBEAT_SECS", "1".into())],
    )
    .await;
    let mut all = EventClient::connect(&w.server.url, "/api/events").await;
    let mut mine = EventClient::connect(&w.server.url, "/api/events?repo=acme/widgets").await;
    assert_eq!(all.next_frame().await, "event: heartbeat\ndata: {}");
    assert_eq!(mine.next_frame().await, "event: heartbeat\ndata: {}");
    let register = |name: &str, installation: i64| {
        w.server
            .http
            .post(format!("{}/api/repos", w.server.url))
            .json(&json!({ "full_name": name, "installation_id": installation }))
            .send()
    };
    register("other/repo", 1).await.unwrap();
    register("acme/widgets", 1).await.unwrap();
    register("acme/widgets", 1).await.unwrap(); // unchanged: no event
    register("acme/widgets", 2).await.unwrap(); // installation changed: an event
    remove_repo(&w).await;
    let frames = [
        all.next_data().await,
        all.next_data().await,
        all.next_data().await,
        all.next_data().await,
    ];
    let kinds: Vec<(&str, &str)> = frames
        .iter()
        .map(|(_, d)| (d["type"].as_str().unwrap(), d["repo"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("repo:updated", "other/repo"),
            ("repo:updated", "acme/widgets"),
            ("repo:updated", "acme/widgets"),
            ("repo:removed", "acme/widgets")
        ]
    );
    assert!(
        frames.windows(2).all(|p| p[0].0 < p[1].0),
        "ids are monotonic"
    );
    assert_eq!(frames[2].1["row"]["installation_id"], 2);
    let mine_frames = [
        mine.next_data().await,
        mine.next_data().await,
        mine.next_data().await,
    ];
    assert!(mine_frames.iter().all(|(_, d)| d["repo"] == "acme/widgets"));
    // Silence: a heartbeat again after HEARTBEAT_SECS.
    assert_eq!(mine.next_frame().await, "event: heartbeat\ndata: {}");
}
