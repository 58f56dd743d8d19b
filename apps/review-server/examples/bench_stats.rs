#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Benchmark of GET /api/stats and GET /api/stats/charts (bench/review-stats/run.sh runs it).
//!
//! For each scale it seeds N reviews and 3N findings (bench/review-stats/seed_*.sql: 50 repos,
//! 8 models, two years, mostly completed) into a database migrated up to 0005, then lets the
//! real migrator apply the rest, exactly as an existing install upgrades, starts the release
//! binary on it and prints the p50 (and max) of 20 sequential requests per endpoint after 3
//! warm-up requests. Prints a markdown table.
//!
//! Usage: bench_stats <review-server binary> [scale ...] (default: 100000 1000000)

use sqlx::ConnectOptions;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

static MIGRATOR: Migrator = sqlx::migrate!("../../migrations");
const SEED_REVIEWS: &str = include_str!("../../../bench/review-stats/seed_reviews.sql");
const SEED_FINDINGS: &str = include_str!("../../../bench/review-stats/seed_findings.sql");
const REQUESTS: usize = 20;
const PATHS: [&str; 6] = [
    "/api/stats?range=all",
    "/api/stats?range=30d",
    "/api/stats/charts?range=all",
    "/api/stats/charts?range=30d",
    // A model filter cannot use the per-day rollups (they are kept per repo and status): the
    // worst case, read from raw rows through the indexes.
    "/api/stats?range=all&model=openai/gpt-5",
    "/api/stats/charts?range=all&model=openai/gpt-5",
];

/// Seed `n` reviews and `3n` findings at `db`; returns (seed time, migrate time).
async fn seed(db: &Path, n: i64, now: i64) -> (Duration, Duration) {
    let mut conn = SqliteConnectOptions::new()
        .filename(db)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Off)
        .pragma("cache_size", "-1000000")
        .connect()
        .await
        .unwrap();
    let base = Migrator {
        migrations: MIGRATOR
            .migrations
            .iter()
            .filter(|m| m.version <= 5)
            .cloned()
            .collect::<Vec<_>>()
            .into(),
        ..Migrator::DEFAULT
    };
    base.run(&mut conn).await.unwrap();
    let t = Instant::now();
    let mut tx = sqlx::Connection::begin(&mut conn).await.unwrap();
    sqlx::query(SEED_REVIEWS)
        .bind(n)
        .bind(now)
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query(SEED_FINDINGS)
        .bind(3 * n)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let seeded = t.elapsed();
    let t = Instant::now();
    MIGRATOR.run(&mut conn).await.unwrap();
    (seeded, t.elapsed())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spawn(bin: &str, data: &Path, port: u16) -> Child {
    Command::new(bin)
        .env("LISTEN", format!("127.0.0.1:{port}"))
        .env("DATA_DIR", data)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Wait for /health; kills the child and panics after 60 s.
async fn wait_healthy(child: &mut Child, port: u16, http: &reqwest::Client) {
    let t0 = Instant::now();
    loop {
        if let Ok(r) = http
            .get(format!("http://127.0.0.1:{port}/health"))
            .send()
            .await
            && r.status() == 200
        {
            return;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("server did not start");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bin = args
        .get(1)
        .expect("usage: bench_stats <binary> [scale ...]");
    let scales: Vec<i64> = if args.len() > 2 {
        args[2..].iter().map(|s| s.parse().unwrap()).collect()
    } else {
        vec![100_000, 1_000_000]
    };
    let now = time_now();
    let http = reqwest::Client::new();
    println!("| reviews | findings | endpoint | p50 ms | max ms | body bytes |");
    println!("|---:|---:|---|---:|---:|---:|");
    let mut notes = Vec::new();
    for n in scales {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let (seeded, migrated) = seed(&data.join("review.db"), n, now).await;
        let port = free_port();
        let mut child = spawn(bin, &data, port);
        wait_healthy(&mut child, port, &http).await;
        for path in PATHS {
            let url = format!("http://127.0.0.1:{port}{path}");
            let mut size = 0;
            for _ in 0..3 {
                let r = http.get(&url).send().await.unwrap();
                assert_eq!(r.status(), 200, "{path}");
                size = r.bytes().await.unwrap().len();
            }
            let mut lat = Vec::with_capacity(REQUESTS);
            for _ in 0..REQUESTS {
                let t = Instant::now();
                let body = http.get(&url).send().await.unwrap().bytes().await.unwrap();
                lat.push(t.elapsed());
                assert!(!body.is_empty());
            }
            lat.sort();
            println!(
                "| {n} | {} | `{path}` | {} | {} | {size} |",
                3 * n,
                ms(lat[REQUESTS / 2 - 1]),
                ms(lat[REQUESTS - 1])
            );
        }
        child.kill().unwrap();
        child.wait().unwrap();
        notes.push(format!(
            "- {n} reviews: seeded in {:.1} s, migrations 0006-0009 (indexes, rollup and totals backfill) in {:.1} s",
            seeded.as_secs_f64(),
            migrated.as_secs_f64()
        ));
    }
    println!();
    for n in notes {
        println!("{n}");
    }
}

fn time_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}
