#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark or tool run by hand: a failure ends it with its message"
)]
//! Benchmark of GET /api/stats and GET /api/stats/charts (bench/review-stats/run.sh runs it).
//!
//! For each backend and scale it seeds N reviews and 3N findings (bench/review-stats/seed_*.sql:
//! 50 repos, 8 models, two years, mostly completed), lets the real migrator apply the stats
//! migrations exactly as an existing install upgrades, starts the release binary on it and
//! prints the p50 (and max) of 20 sequential requests per endpoint after 3 warm-up requests,
//! unfiltered, for one repo and for one model, over all time and the last 30 days. Prints a
//! markdown table.
//!
//! - SQLite: a database migrated up to 0005, seeded, then migrated (0006 onwards: indexes,
//!   rollup backfills).
//! - PostgreSQL, when BENCH_POSTGRES_URL names a server (a superuser's URL; run.sh starts a
//!   throwaway cluster): a new database `bench_stats_<n>` migrated up to 0002, seeded with the
//!   triggers off (`session_replication_role = replica`), `SELECT stats_rebuild()`, then
//!   migrated (0003 onwards), then `VACUUM ANALYZE`, as docs/operations.md advises after a bulk
//!   load. The database is dropped afterwards.
//!
//! Usage: bench_stats <review-server binary> [scale ...] (default: 100000 1000000)

use sqlx::migrate::Migrator;
use sqlx::postgres::PgConnection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

static MIGRATOR: Migrator = sqlx::migrate!("../../migrations");
static PG_MIGRATOR: Migrator = sqlx::migrate!("../../migrations/postgres");
const SEED_REVIEWS: &str = include_str!("../../../bench/review-stats/seed_reviews.sql");
const SEED_FINDINGS: &str = include_str!("../../../bench/review-stats/seed_findings.sql");
const PG_SEED_REVIEWS: &str = include_str!("../../../bench/review-stats/seed_reviews_postgres.sql");
const PG_SEED_FINDINGS: &str =
    include_str!("../../../bench/review-stats/seed_findings_postgres.sql");
const REQUESTS: usize = 20;
const ENDPOINTS: [&str; 2] = ["/api/stats", "/api/stats/charts"];
const RANGES: [&str; 2] = ["all", "30d"];
/// No filter, one repo of the 50 (2% of the reviews), one model of the 8 (11%).
const FILTERS: [&str; 3] = ["", "&repo=org7/service-7", "&model=openai/gpt-5"];

/// The migrations up to `last` of `all`.
fn up_to(all: &Migrator, last: i64) -> Migrator {
    Migrator {
        migrations: all
            .migrations
            .iter()
            .filter(|m| m.version <= last)
            .cloned()
            .collect::<Vec<_>>()
            .into(),
        ..Migrator::DEFAULT
    }
}

/// Seed `n` reviews and `3n` findings into a new SQLite file at `db`; returns what was timed.
async fn seed_sqlite(db: &Path, n: i64, now: i64) -> String {
    let mut conn = SqliteConnectOptions::new()
        .filename(db)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Off)
        .pragma("cache_size", "-1000000")
        .connect()
        .await
        .unwrap();
    up_to(&MIGRATOR, 5).run(&mut conn).await.unwrap();
    let t = Instant::now();
    let mut tx = conn.begin().await.unwrap();
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
    format!(
        "seeded in {:.1} s, migrations 0006 onwards (indexes, rollup and totals backfills) in {:.1} s",
        seeded.as_secs_f64(),
        t.elapsed().as_secs_f64()
    )
}

/// `admin` (`postgres://user:password@host:port/database[?options]`) with its database
/// replaced by `name`.
fn database_url(admin: &str, name: &str) -> String {
    let (head, query) = admin
        .split_once('?')
        .map_or((admin, None), |(h, q)| (h, Some(q)));
    let server = head.rsplit_once('/').map_or(head, |(s, _)| s);
    match query {
        Some(q) => format!("{server}/{name}?{q}"),
        None => format!("{server}/{name}"),
    }
}

/// Seed `n` reviews and `3n` findings into a new PostgreSQL database `name` on the server of
/// `admin`; returns its URL and what was timed.
async fn seed_postgres(admin: &str, name: &str, n: i64, now: i64) -> (String, String) {
    let mut server = PgConnection::connect(admin).await.unwrap();
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name}"))
        .execute(&mut server)
        .await
        .unwrap();
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut server)
        .await
        .unwrap();
    server.close().await.unwrap();
    let url = database_url(admin, name);
    let mut conn = PgConnection::connect(&url).await.unwrap();
    up_to(&PG_MIGRATOR, 2).run(&mut conn).await.unwrap();
    let t = Instant::now();
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("SET LOCAL session_replication_role = replica")
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query(PG_SEED_REVIEWS)
        .bind(n)
        .bind(now)
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query(PG_SEED_FINDINGS)
        .bind(3 * n)
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query("SET LOCAL session_replication_role = origin")
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query("SELECT stats_rebuild()")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let seeded = t.elapsed();
    let t = Instant::now();
    PG_MIGRATOR.run(&mut conn).await.unwrap();
    let migrated = t.elapsed();
    let t = Instant::now();
    sqlx::query("VACUUM ANALYZE")
        .execute(&mut conn)
        .await
        .unwrap();
    let analyzed = t.elapsed();
    conn.close().await.unwrap();
    (
        url,
        format!(
            "seeded with the triggers off and stats_rebuild() in {:.1} s, migrations 0003 onwards (repo and model rollup backfill) in {:.1} s, VACUUM ANALYZE in {:.1} s",
            seeded.as_secs_f64(),
            migrated.as_secs_f64(),
            analyzed.as_secs_f64()
        ),
    )
}

async fn drop_postgres(admin: &str, name: &str) {
    let mut server = PgConnection::connect(admin).await.unwrap();
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut server)
        .await
        .unwrap();
    server.close().await.unwrap();
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spawn(bin: &str, data: &Path, database_url: Option<&str>, port: u16) -> Child {
    let mut cmd = Command::new(bin);
    cmd.env("LISTEN", format!("127.0.0.1:{port}"))
        .env("DATA_DIR", data)
        .env("RUST_LOG", "warn")
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(url) = database_url {
        cmd.env("DATABASE_URL", url);
    }
    cmd.spawn().unwrap()
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

/// Print one row per endpoint, range and filter for the server on `port`.
async fn measure(backend: &str, n: i64, port: u16, http: &reqwest::Client) {
    for endpoint in ENDPOINTS {
        for filter in FILTERS {
            for range in RANGES {
                let path = format!("{endpoint}?range={range}{filter}");
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
                    "| {backend} | {n} | {} | `{path}` | {} | {} | {size} |",
                    3 * n,
                    ms(lat[REQUESTS / 2 - 1]),
                    ms(lat[REQUESTS - 1])
                );
            }
        }
    }
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
    let postgres = std::env::var("BENCH_POSTGRES_URL").ok();
    let now = time_now();
    let http = reqwest::Client::new();
    println!("| backend | reviews | findings | endpoint | p50 ms | max ms | body bytes |");
    println!("|---|---:|---:|---|---:|---:|---:|");
    let mut notes = Vec::new();
    for n in scales {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let seeded = seed_sqlite(&data.join("review.db"), n, now).await;
        notes.push(format!("- SQLite, {n} reviews: {seeded}"));
        let port = free_port();
        let mut child = spawn(bin, &data, None, port);
        wait_healthy(&mut child, port, &http).await;
        measure("SQLite", n, port, &http).await;
        child.kill().unwrap();
        child.wait().unwrap();
        drop(dir);

        let Some(admin) = &postgres else { continue };
        let name = format!("bench_stats_{n}");
        let (url, seeded) = seed_postgres(admin, &name, n, now).await;
        notes.push(format!("- PostgreSQL, {n} reviews: {seeded}"));
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut child = spawn(bin, dir.path(), Some(&url), port);
        wait_healthy(&mut child, port, &http).await;
        measure("PostgreSQL", n, port, &http).await;
        child.kill().unwrap();
        child.wait().unwrap();
        drop_postgres(admin, &name).await;
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
