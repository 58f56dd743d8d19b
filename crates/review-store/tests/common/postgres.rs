//! A fresh PostgreSQL database per test (docs/operations.md, "Tests on PostgreSQL"), on the
//! server `REVIEW_TEST_DATABASE_URL` names (scripts/test.sh starts a throwaway cluster and sets
//! it). One file for the store's tests and review-server's, included by path in both.

use sqlx::Connection;
use std::sync::atomic::{AtomicU64, Ordering};

/// The variable naming the PostgreSQL server the tests may create databases on.
pub(crate) const DATABASE_URL_VAR: &str = "REVIEW_TEST_DATABASE_URL";

/// True under CI (`CI` set, not `0` or `false`), where a test that cannot run must fail.
pub(crate) fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The URL of a new, empty database `t_<pid>_<time>_<n>` on the test server, or None after a
/// notice on stderr when `REVIEW_TEST_DATABASE_URL` is unset. Panics under CI when it is
/// unset, and when the server refuses.
pub(crate) async fn fresh_database_url() -> Option<String> {
    let Ok(base) = std::env::var(DATABASE_URL_VAR) else {
        assert!(
            !under_ci(),
            "{DATABASE_URL_VAR} is unset under CI: the PostgreSQL tests cannot run (scripts/test.sh starts a server)"
        );
        eprintln!("{DATABASE_URL_VAR} unset: PostgreSQL variant skipped (scripts/test.sh sets it)");
        return None;
    };
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let name = format!(
        "t_{}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000_000,
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let mut admin = sqlx::postgres::PgConnection::connect(&base)
        .await
        .unwrap_or_else(|e| panic!("{DATABASE_URL_VAR}: {e}"));
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .unwrap();
    admin.close().await.unwrap();
    // The database name replaces the path of the URL (`.../postgres` or `.../postgres?...`).
    let (head, query) = base
        .split_once('?')
        .map_or((base.as_str(), None), |(h, q)| (h, Some(q)));
    let server = head.rsplit_once('/').map_or(head, |(s, _)| s);
    Some(match query {
        Some(q) => format!("{server}/{name}?{q}"),
        None => format!("{server}/{name}"),
    })
}
