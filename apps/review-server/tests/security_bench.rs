#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The review server's security findings 9, 10, 13, 14 and 15 (bench/security/README.md), measured: the scenarios of
//! hostile_review.rs, e2e_lifecycle.rs and the store's read_query_postgres_session.rs run
//! against whichever binary `REVIEW_SERVER_BIN` names (a release build from before the fixes,
//! or the current one), with the fake forge and the scripted model. Nothing here asserts the
//! fixed behaviour: each test prints one markdown row per attack, the outcome it saw and what
//! the server process used,
//!
//! `| finding | attack | outcome | wall s | server CPU s | server peak RSS |`
//!
//! Ignored, so `cargo test` skips them; bench/security/review-{9,10,13,14,15}-*.sh run them
//! (`-- --ignored --nocapture --test-threads=1`). The PostgreSQL cases (9, and the two-replica
//! case of 13) need REVIEW_TEST_DATABASE_URL and print a row saying so without it.

mod common;

use common::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use test_doubles::scripted_model::{Behavior, ChatScript};

const MODEL: &str = "anthropic/claude-sonnet-4-5";

/// Prints one table row; `usage` has one entry per server process (CPU seconds added up, peak
/// RSS of each).
fn row(finding: &str, attack: &str, outcome: &str, wall: Duration, usage: &[Option<Usage>]) {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let cpu = if usage.iter().all(Option::is_some) && !usage.is_empty() {
        format!(
            "{:.2}",
            usage.iter().flatten().map(|u| u.cpu_secs).sum::<f64>()
        )
    } else {
        "-".to_owned()
    };
    let rss = usage
        .iter()
        .map(|u| u.map_or_else(|| "-".to_owned(), |u| format!("{:.0} MB", u.peak_rss_mb)))
        .collect::<Vec<_>>()
        .join(" + ");
    println!(
        "| {finding} | {} | {} | {:.1} s | {cpu} | {rss} |",
        cell(attack),
        cell(outcome),
        wall.as_secs_f64()
    );
}

/// At most `n` characters of `s`, with `...` when cut.
fn cut(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_owned(),
    }
}

/// "#1 completed, #2 failed": the rows' statuses.
fn statuses(rows: &[(i64, String, Option<String>)]) -> String {
    rows.iter()
        .map(|(id, status, _)| format!("#{id} {status}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "#1 completed, #2 skipped (error)": the rows as read.
fn describe(rows: &[(i64, String, Option<String>)]) -> String {
    if rows.is_empty() {
        return "no review row".to_owned();
    }
    rows.iter()
        .map(|(id, status, error)| match error {
            Some(e) => format!("#{id} {status} ({})", cut(e, 140)),
            None => format!("#{id} {status}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "skipped")
}

/// PR `pr`'s rows once there are `count` and all have ended, or as they are after `limit`.
async fn wait_ended(
    server: &Server,
    pr: i64,
    count: usize,
    limit: Duration,
) -> Vec<(i64, String, Option<String>)> {
    let deadline = Instant::now() + limit;
    loop {
        let rows = server.pr_rows("acme/widgets", pr).await;
        let ended = rows.len() >= count && rows.iter().all(|(_, s, _)| terminal(s));
        if ended || Instant::now() >= deadline {
            return rows;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The PostgreSQL database for a case, or None after printing the row that says it was
/// skipped.
async fn postgres_or_skip(finding: &str, attack: &str) -> Option<String> {
    let url = postgres_database_url().await;
    if url.is_none() {
        row(
            finding,
            attack,
            &format!("not run: {DATABASE_URL_VAR} unset (PostgreSQL only)"),
            Duration::ZERO,
            &[],
        );
    }
    url
}

// ---- 9: the chat's reader on PostgreSQL ---------------------------------------------------

/// The chat's answer to `SQL: <sql>` (ChatScript::QuestionAsSql runs it as its query): the HTTP
/// status, then the tool's output or the stream's error.
async fn ask_sql(server: &Server, sql: &str) -> String {
    let body = json!({"messages": [{"id": "m1", "role": "user",
        "parts": [{"type": "text", "text": format!("SQL: {sql}")}]}]});
    let send = server
        .http
        .post(format!("{}/api/chat", server.url))
        .json(&body)
        .send();
    let resp = match tokio::time::timeout(Duration::from_secs(120), send).await {
        Err(_) => return "no answer in 120 s".to_owned(),
        Ok(Err(e)) => return format!("request failed: {e}"),
        Ok(Ok(r)) => r,
    };
    let status = resp.status().as_u16();
    let text = match tokio::time::timeout(Duration::from_secs(120), resp.text()).await {
        Err(_) => return format!("{status}, the stream did not end in 120 s"),
        Ok(t) => t.unwrap_or_default(),
    };
    let mut said = Vec::new();
    for frame in text.split("\n\n") {
        let Some(part) = frame
            .strip_prefix("data: ")
            .and_then(|d| serde_json::from_str::<Value>(d).ok())
        else {
            continue;
        };
        match part["type"].as_str() {
            Some("tool-output-available") => said.push(format!("tool output {}", part["output"])),
            Some("error") => said.push(format!("error {}", part["errorText"])),
            _ => {}
        }
    }
    if said.is_empty() {
        said.push(cut(&text, 160));
    }
    format!("{status}, {}", cut(&said.join("; "), 220))
}

/// The scripted chat (it runs the SQL after `SQL: ` in the question) and the server on a fresh
/// PostgreSQL database, or None after the row saying the case did not run.
async fn chat_on_postgres(attack: &str) -> Option<World> {
    let url = postgres_or_skip("9", attack).await?;
    let behavior = Behavior::Chat(ChatScript::QuestionAsSql);
    let extra = [("DATABASE_URL", url)];
    Some(World::start_with(Upstream::new(), behavior, MODEL, true, &extra).await)
}

/// Advisory locks held in the server's database.
async fn advisory_locks(server: &Server) -> i64 {
    server
        .db_count(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' \
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        )
        .await
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement: bench/security/review-9-chat-reader.sh"]
async fn finding_9_chat_query_takes_the_promoter_lock() {
    let attack = format!(
        "chat query `SELECT pg_try_advisory_lock({})` (the promoter's key), then a delivery",
        review_store::PROMOTE_LOCK
    );
    let Some(w) = chat_on_postgres(&attack).await else {
        return;
    };
    w.server.enable(&w.full_name(), None).await;
    let t0 = Instant::now();
    let answer = ask_sql(
        &w.server,
        &format!(
            "SELECT pg_try_advisory_lock({})",
            review_store::PROMOTE_LOCK
        ),
    )
    .await;
    let locks = advisory_locks(&w.server).await;
    let delivered = Instant::now();
    let delivery =
        match tokio::time::timeout(Duration::from_secs(15), w.deliver_pull_request("opened")).await
        {
            Ok(()) => "delivery 200".to_owned(),
            Err(_) => "delivery: no answer in 15 s".to_owned(),
        };
    let deadline = Instant::now() + Duration::from_secs(10);
    let review = loop {
        let rows = w.server.pr_rows("acme/widgets", 1).await;
        if let Some((id, status, _)) = rows.first() {
            break format!(
                "review #{id} ({status}) {:.1} s after the delivery",
                delivered.elapsed().as_secs_f64()
            );
        }
        if Instant::now() >= deadline {
            let inbox = w.server.db_count("SELECT count(*) FROM review_inbox").await;
            break format!("no review 10 s after the delivery ({inbox} row(s) in the inbox)");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // The fixed promoter warns when the lock is held elsewhere; the old one waited silently.
    let warned = w
        .server
        .log()
        .lines()
        .filter(|l| l.contains("promoter lock"))
        .count();
    row(
        "9",
        &attack,
        &format!(
            "chat {answer}; advisory locks left: {locks}; {delivery}; {review}; log lines about the promoter lock: {warned}"
        ),
        t0.elapsed(),
        &[w.server.usage()],
    );
}

/// Peak RSS (VmHWM) of the chat reader's PostgreSQL backends on the database `admin_url`
/// names (another case's may still run on the cluster), sampled every 50 ms while `running` is
/// set and once after: (KiB, backends seen).
async fn sample_reader_backends(admin_url: String, running: Arc<AtomicBool>) -> (u64, usize) {
    use sqlx::Connection;
    let mut db = sqlx::postgres::PgConnection::connect(&admin_url)
        .await
        .unwrap();
    let mut peak = std::collections::BTreeMap::<i32, u64>::new();
    loop {
        let last = !running.load(Ordering::SeqCst);
        let pids: Vec<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity \
             WHERE usename LIKE 'review_chat_%' AND datname = current_database()",
        )
        .fetch_all(&mut db)
        .await
        .unwrap_or_default();
        for pid in pids {
            if let Some(kib) = peak_rss_kib(pid as u32) {
                let e = peak.entry(pid).or_default();
                *e = (*e).max(kib);
            }
        }
        if last {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (peak.values().copied().max().unwrap_or(0), peak.len())
}

/// Runs `sql` as a chat query on a fresh server and prints its row: the answer, the peak RSS
/// of the reader's PostgreSQL backend, and the server's own CPU and peak RSS.
async fn chat_query_memory(sql: &str, what: &str) {
    let attack = format!("chat query `{sql}` ({what})");
    let Some(w) = chat_on_postgres(&attack).await else {
        return;
    };
    // A first query opens the reader's connection, so its backend is sampled from the start.
    ask_sql(&w.server, "SELECT 1").await;
    let running = Arc::new(AtomicBool::new(true));
    let sampler = tokio::spawn(sample_reader_backends(
        w.server.database_url.clone(),
        running.clone(),
    ));
    let t0 = Instant::now();
    let answer = ask_sql(&w.server, sql).await;
    let wall = t0.elapsed();
    running.store(false, Ordering::SeqCst);
    let (backend_kib, backends) = sampler.await.unwrap();
    row(
        "9",
        &attack,
        &format!(
            "chat {answer}; reader backend peak RSS {:.0} MB (max of {backends} review_chat backend(s))",
            backend_kib as f64 / 1024.0
        ),
        wall,
        &[w.server.usage()],
    );
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement: bench/security/review-9-chat-reader.sh"]
async fn finding_9_chat_query_builds_a_gigabyte_value() {
    chat_query_memory(
        "SELECT length(repeat('x', 1000000000))",
        "a 1 GB value in the reader's backend",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement: bench/security/review-9-chat-reader.sh"]
async fn finding_9_chat_query_returns_a_large_value() {
    chat_query_memory(
        "SELECT repeat('x', 200000000)",
        "a 200 MB value sent to the server",
    )
    .await;
}

// ---- 10: what a pull request may change about its own review ------------------------------

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement: bench/security/review-10-instructions.sh"]
async fn finding_10_pull_request_rewrites_its_instructions() {
    let up = Upstream::rewriting_its_instructions();
    let w = World::start_with(up, Behavior::Reviewer, MODEL, false, &[]).await;
    w.server.enable(&w.full_name(), None).await;
    let t0 = Instant::now();
    w.deliver_pull_request("opened").await;
    let rows = wait_ended(&w.server, 1, 1, Duration::from_secs(60)).await;
    let wall = t0.elapsed();
    let requests = w.model.requests();
    let system = requests
        .first()
        .map(|r| r["system"].to_string())
        .unwrap_or_default();
    let transcript = Value::Array(requests.clone()).to_string();
    let head = w.upstream.sha("feature");
    let flaggable = w.upstream.flagged_lines("main", &head).len();
    let (event, comments, says) = match w.forge.reviews().first() {
        Some(r) => (
            r["event"].as_str().unwrap_or("?").to_owned(),
            r["comments"].as_array().map_or(0, Vec::len),
            r["body"]
                .as_str()
                .is_some_and(|b| b.contains("changes the review instructions")),
        ),
        None => ("none posted".to_owned(), 0, false),
    };
    row(
        "10",
        "a PR that rewrites REVIEW.md and adds `* -diff` to .gitattributes",
        &format!(
            "{}; PR's REVIEW.md in the system prompt: {}, base's: {}; \"Binary files ... differ\" shown to the model: {}; {comments} of {flaggable} added unwrap()/TODO lines commented; event {event}; summary says the PR changes the instructions: {}",
            describe(&rows),
            yes(system.contains("INJECTED-RULE-9")),
            yes(system.contains("BASE-RULE-7")),
            yes(transcript.contains("Binary files")),
            yes(says)
        ),
        wall,
        &[w.server.usage()],
    );
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement: bench/security/review-10-instructions.sh"]
async fn finding_10_model_approves_without_earlier_request_for_changes() {
    let up = Upstream::new();
    up.publish_clean_pull(2);
    let w = World::start_with(up, Behavior::Reviewer, MODEL, false, &[]).await;
    w.server.enable(&w.full_name(), None).await;
    let t0 = Instant::now();
    let r = w.deliver_clean_pull(2).await;
    let rows = wait_ended(&w.server, 2, 1, Duration::from_secs(60)).await;
    let wall = t0.elapsed();
    let events: Vec<String> = w
        .forge
        .posted("POST", "/reviews")
        .into_iter()
        .map(|p| p.body["event"].as_str().unwrap_or_default().to_owned())
        .collect();
    row(
        "10",
        "the model sends APPROVE on a clean PR this App never asked to change",
        &format!(
            "delivery {}; {}; posted event(s): {}",
            r.status().as_u16(),
            describe(&rows),
            if events.is_empty() {
                "none".to_owned()
            } else {
                events.join(", ")
            }
        ),
        wall,
        &[w.server.usage()],
    );
}

// ---- 13: one review per head ---------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement: bench/security/review-13-one-review-per-head.sh"]
async fn finding_13_opened_and_reopened_for_one_head() {
    let w = World::start(Behavior::Reviewer, MODEL, false).await;
    w.server.enable(&w.full_name(), None).await;
    let t0 = Instant::now();
    w.deliver_pull_request("opened").await;
    w.deliver_pull_request("reopened").await;
    let rows = wait_ended(&w.server, 1, 2, Duration::from_secs(60)).await;
    let wall = t0.elapsed();
    row(
        "13",
        "opened + reopened (two delivery ids) for one head, one server",
        &format!(
            "{} review(s) posted, {} check run(s) completed; rows: {}",
            w.forge.reviews().len(),
            w.forge.completed_check_runs().len(),
            describe(&rows)
        ),
        wall,
        &[w.server.usage()],
    );
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement: bench/security/review-13-one-review-per-head.sh"]
async fn finding_13_two_replicas_on_postgres() {
    const PRS: i64 = 10;
    let attack = format!(
        "{PRS} PRs, each opened on one replica and reopened on the other (PostgreSQL, two replicas)"
    );
    let Some(url) = postgres_or_skip("13", &attack).await else {
        return;
    };
    let w = World::start_with(
        Upstream::new(),
        Behavior::Reviewer,
        MODEL,
        false,
        &[("DATABASE_URL", url)],
    )
    .await;
    let b = w.replica("replica-b").await;
    w.server.enable(&w.full_name(), None).await;
    w.publish_pulls(PRS);
    let t0 = Instant::now();
    let accepted = w
        .deliver_opened_and_reopened(&b, PRS)
        .await
        .iter()
        .filter(|&&status| status == 200)
        .count();
    let count = |status: &'static str| {
        let server = &w.server;
        async move {
            server
                .db_count(&format!(
                    "SELECT count(*) FROM reviews WHERE status = '{status}'"
                ))
                .await
        }
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let ended = count("completed").await + count("skipped").await + count("failed").await;
        if ended >= 2 * PRS || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let wall = t0.elapsed();
    let mut posted = std::collections::BTreeMap::<i64, usize>::new();
    for r in w.forge.posted("POST", "/reviews") {
        if let Some(n) = r.path.rsplit('/').nth(1).and_then(|n| n.parse().ok()) {
            *posted.entry(n).or_default() += 1;
        }
    }
    let twice = posted.values().filter(|&&c| c > 1).count();
    row(
        "13",
        &attack,
        &format!(
            "{accepted} of {} deliveries accepted; {} reviews posted, {twice} of {PRS} PRs reviewed more than once; rows: {} completed, {} skipped, {} failed",
            2 * PRS,
            posted.values().sum::<usize>(),
            count("completed").await,
            count("skipped").await,
            count("failed").await
        ),
        wall,
        &[w.server.usage(), b.usage()],
    );
}

// ---- 14: a killed server's running review ---------------------------------------------------

/// Review `id` as the API shows it: (status, error).
async fn review_state(server: &Server, id: i64) -> (String, Option<String>) {
    let r = server.get_json(&format!("/api/reviews/{id}")).await;
    (
        r["status"].as_str().unwrap_or("?").to_owned(),
        r["error"].as_str().map(str::to_owned),
    )
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement: bench/security/review-14-restart.sh"]
async fn finding_14_kill_during_a_review_and_restart() {
    const CAP: Duration = Duration::from_secs(45);
    let settings = [
        ("RETRY_DELAY_SECS", "1".to_owned()),
        ("QUEUE_POLL_MS", "100".to_owned()),
    ];
    let mut w = World::start_with(
        Upstream::new(),
        Behavior::Slow(Duration::from_secs(30)),
        MODEL,
        true,
        &settings,
    )
    .await;
    w.server.enable(&w.full_name(), None).await;
    w.publish_pulls(1);
    w.deliver_pull_request("opened").await;
    let id = w.server.wait_reviews_any(&w.full_name(), 1).await["id"]
        .as_i64()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while review_state(&w.server, id).await.0 != "running" && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    w.server.insert_rows_without_queue_rows().await;
    let killed = Instant::now();
    w.kill_and_restart().await; // SIGKILL mid-review, then the same DATA_DIR
    let listening = killed.elapsed();
    let (state, left) = loop {
        let state = review_state(&w.server, id).await;
        if state.0 != "running" {
            break (state, Some(killed.elapsed()));
        }
        if killed.elapsed() >= CAP {
            break (state, None);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let outcome = match left {
        Some(t) => format!(
            "review #{id} left `running` {:.2} s after the kill: {} ({})",
            t.as_secs_f64(),
            state.0,
            state.1.as_deref().unwrap_or("no error")
        ),
        None => format!("review #{id} still running after {} s", CAP.as_secs()),
    };
    let wall = killed.elapsed();
    let usage = w.server.usage();
    let orphans = describe(
        &[
            w.server.pr_rows("acme/widgets", 2).await,
            w.server.pr_rows("acme/widgets", 3).await,
        ]
        .concat(),
    );
    let retries = w.server.pr_rows("acme/widgets", 1).await.len() - 1;
    row(
        "14",
        "kill -9 during a running review, restart on the same DATA_DIR",
        &format!(
            "restarted server healthy {:.2} s after the kill; {outcome}; {retries} more row(s) for the PR",
            listening.as_secs_f64()
        ),
        wall,
        &[usage],
    );
    row(
        "14",
        "rows with no queue row: `running` from an older version, `pending` written just before the kill",
        &format!(
            "{:.2} s after the kill: {orphans}",
            killed.elapsed().as_secs_f64()
        ),
        wall,
        &[usage],
    );
}

// ---- 15: a failure no retry can fix --------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement: bench/security/review-15-no-retry.sh"]
async fn finding_15_no_api_key_for_the_models_provider() {
    const AFTER: Duration = Duration::from_secs(6);
    // SECOND_API_KEY (zai-coding-plan's) is unset; RETRY_DELAY_SECS=1 brings a retry, if any,
    // well inside the wait below.
    let w = World::without_the_models_key().await;
    w.server.enable(&w.full_name(), None).await;
    w.publish_pulls(1); // the forge knows PR 1, so a retry can fetch it
    let t0 = Instant::now();
    w.deliver_pull_request("opened").await;
    let first = wait_ended(&w.server, 1, 1, Duration::from_secs(30)).await;
    let failed_after = t0.elapsed();
    tokio::time::sleep(AFTER).await;
    let rows = w.server.pr_rows("acme/widgets", 1).await;
    let comments = w.forge.posted("POST", "/comments");
    let said = comments
        .iter()
        .map(|c| {
            format!(
                "\"{}\"",
                cut(c.body["body"].as_str().unwrap_or_default(), 120)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    row(
        "15",
        "no API key for the model's provider (RETRY_DELAY_SECS=1)",
        &format!(
            "first row after {:.1} s: {}; {} s later: {} row(s) ({}); comments posted: {}",
            failed_after.as_secs_f64(),
            first.first().map_or_else(
                || "none".to_owned(),
                |(_, status, error)| format!(
                    "{status}, \"{}\"",
                    error.as_deref().unwrap_or_default()
                )
            ),
            AFTER.as_secs(),
            rows.len(),
            statuses(&rows),
            if comments.is_empty() {
                "none".to_owned()
            } else {
                format!("{} ({said})", comments.len())
            }
        ),
        t0.elapsed(),
        &[w.server.usage()],
    );
}
