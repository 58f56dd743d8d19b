#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Moving an install from SQLite to PostgreSQL (README, "SQLite or PostgreSQL"): after a real
//! review on the SQLite default, `review-server db copy --to postgres://...` copies the history,
//! and a server started on PostgreSQL serves the same review, findings, transcript and stats.

mod common;

use common::*;
use pretty_assertions::assert_eq;
use test_doubles::scripted_model::Behavior;

#[tokio::test(flavor = "multi_thread")]
async fn db_copy_moves_a_sqlite_install_to_postgres() {
    let Some(url) = postgres_database_url().await else {
        return;
    };
    if std::env::var(E2E_DATABASE_VAR).as_deref() == Ok("postgres") {
        return; // the source must be the SQLite default; the first pass runs this test
    }
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", true).await;
    w.review_once().await;
    let paths = [
        "/api/reviews/1",
        "/api/reviews/1/findings",
        "/api/reviews/1/session",
        "/api/repos",
        "/api/stats?range=all",
    ];
    let mut before = Vec::new();
    for p in paths {
        before.push(w.server.get_json(p).await);
    }
    let mut server = w.server;
    let _ = server.child.kill();
    let _ = server.child.wait();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_review-server"))
        .args(["db", "copy", "--to", &url])
        .env("DATA_DIR", &server.data_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("reviews: 1 rows"), "{report}");
    // A second copy into the same database is refused.
    let again = std::process::Command::new(env!("CARGO_BIN_EXE_review-server"))
        .args(["db", "copy", "--to", &url])
        .env("DATA_DIR", &server.data_dir)
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("empty"));
    // A fresh folder on PostgreSQL: no local transcript, so the session comes from the table.
    let (_dir, pg) = start_temp(&[("DATABASE_URL", url.clone())]).await;
    for (p, want) in paths.iter().zip(&before) {
        assert_eq!(&pg.get_json(p).await, want, "{p}");
    }
    drop(server);
}
