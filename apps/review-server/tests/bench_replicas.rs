#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Benchmark, not a test (ignored; bench/review/replicas.sh runs it in release and commits the
//! table): reviews completed per second with an instant scripted model, for one replica on
//! SQLite, one on PostgreSQL and two on one PostgreSQL database, and the webhook
//! acknowledgement of deliveries that queue a review while the replicas work
//! (docs/architecture.md, "Many replicas"). Prints a markdown table; asserts only that every
//! review completed once.

mod common;

use common::*;
use std::time::{Duration, Instant};
use test_doubles::scripted_model::Behavior;

const MODEL: &str = "anthropic/claude-sonnet-4-5";

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One run: `replicas` processes on `database` (None: SQLite), `prs` pull requests delivered
/// one after another round robin; returns (seconds until every review completed, ack p50, ack
/// p99).
async fn run(database: Option<String>, replicas: usize, prs: i64) -> (f64, Duration, Duration) {
    let mut settings = vec![
        ("MAX_CONCURRENT_REVIEWS", "4".to_owned()),
        ("RUST_LOG", "warn".to_owned()),
    ];
    if let Some(url) = &database {
        settings.push(("DATABASE_URL", url.clone()));
    }
    let w = World::start_with(Upstream::new(), Behavior::Reviewer, MODEL, true, &settings).await;
    let mut others = Vec::new();
    for i in 1..replicas {
        others.push(w.replica(&format!("replica-{i}")).await);
    }
    w.server.enable(&w.full_name(), None).await;
    w.publish_pulls(prs);
    let servers: Vec<&Server> = std::iter::once(&w.server).chain(others.iter()).collect();
    let start = Instant::now();
    let mut acks = Vec::new();
    for n in 1..=prs {
        let server = servers[(n as usize) % servers.len()];
        let body = w.pull_payload(n, "opened");
        let t = Instant::now();
        let r = server
            .http
            .post(format!("{}/webhook/github", server.url))
            .header("X-GitHub-Event", "pull_request")
            .header("X-GitHub-Delivery", format!("bench-{n}"))
            .header("content-type", "application/json")
            .header("X-Hub-Signature-256", forge::sign(SECRET.as_bytes(), &body))
            .body(body)
            .send()
            .await
            .unwrap();
        acks.push(t.elapsed());
        assert_eq!(r.status(), 200);
    }
    loop {
        let done = w
            .server
            .db_count("SELECT count(*) FROM reviews WHERE status = 'completed'")
            .await;
        if done == prs {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(600), "{done}/{prs}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(
        w.forge.reviews().len() as i64,
        prs,
        "one posted review per PR"
    );
    acks.sort();
    (secs, percentile(&acks, 50.0), percentile(&acks, 99.0))
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "a benchmark: bench/review/replicas.sh runs it in release"]
async fn reviews_per_second_on_one_and_two_replicas() {
    let prs: i64 = std::env::var("BENCH_PRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1000.0);
    println!("| store | replicas | reviews | seconds | reviews/s | ack p50 ms | ack p99 ms |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut runs: Vec<(&str, Option<String>, usize)> = vec![("SQLite", None, 1)];
    for replicas in [1, 2] {
        let url = postgres_database_url()
            .await
            .expect("REVIEW_TEST_DATABASE_URL names a PostgreSQL server");
        runs.push(("PostgreSQL", Some(url), replicas));
    }
    for (name, url, replicas) in runs {
        let (secs, p50, p99) = run(url, replicas, prs).await;
        println!(
            "| {name} | {replicas} | {prs} | {secs:.2} | {:.1} | {} | {} |",
            prs as f64 / secs,
            ms(p50),
            ms(p99)
        );
    }
}
