//! Stores of both backends for the integration tests (docs/operations.md, "Tests on
//! PostgreSQL"): SQLite in a temporary folder, and PostgreSQL in a fresh database created on
//! the server of `REVIEW_TEST_DATABASE_URL` (scripts/test.sh starts a throwaway cluster and
//! sets it). Without that variable a PostgreSQL variant is skipped with a notice on a
//! developer's machine and fails under CI (`CI` set), where a skip would pass silently.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use review_store::Store;
use sqlx::Connection;
use sqlx::postgres::PgConnection;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};

/// The variable naming the PostgreSQL server the tests may create databases on.
pub const DATABASE_URL_VAR: &str = "REVIEW_TEST_DATABASE_URL";

/// True under CI (`CI` set, not `0` or `false`), where a test that cannot run must fail.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The URL of a new, empty database `t_<pid>_<time>_<n>` on the test server, or None after a
/// notice on stderr when `REVIEW_TEST_DATABASE_URL` is unset. Panics under CI when it is
/// unset, and when the server refuses.
pub async fn fresh_database_url() -> Option<String> {
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
    let mut admin = PgConnection::connect(&base)
        .await
        .unwrap_or_else(|e| panic!("{DATABASE_URL_VAR}: {e}"));
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .unwrap();
    admin.close().await.unwrap();
    let mut url = url::Url::parse(&base).unwrap();
    url.set_path(&name);
    Some(url.to_string())
}

/// A store on a fresh database, with what keeps it alive.
pub struct TestStore {
    pub store: Store,
    /// The SQLite folder (deleted on drop); None on PostgreSQL.
    pub dir: Option<tempfile::TempDir>,
    /// The URL the store was opened with.
    pub url: String,
}

impl Deref for TestStore {
    type Target = Store;
    fn deref(&self) -> &Store {
        &self.store
    }
}

/// A store on a new SQLite file in a temporary folder.
pub async fn sqlite() -> TestStore {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/review.db", dir.path().display());
    let store = Store::open(&url).await.unwrap();
    TestStore {
        store,
        dir: Some(dir),
        url,
    }
}

/// A store on a new PostgreSQL database, or None when no server is configured
/// ([`fresh_database_url`]).
pub async fn postgres() -> Option<TestStore> {
    let url = fresh_database_url().await?;
    let store = Store::open(&url).await.unwrap();
    Some(TestStore {
        store,
        dir: None,
        url,
    })
}

/// Tests that run once per backend: each `async fn name(store: TestStore) { ... }` becomes a
/// module `name` with the tests `sqlite` and `postgres`.
#[macro_export]
macro_rules! on_both_backends {
    ($($(#[$meta:meta])* async fn $name:ident($store:ident: TestStore) $body:block)*) => {
        $(
            $(#[$meta])*
            mod $name {
                #[allow(unused_imports)]
                use super::*;
                #[allow(unused_imports)]
                use pretty_assertions::assert_eq;

                async fn run($store: common::TestStore) $body

                #[tokio::test]
                async fn sqlite() {
                    run(common::sqlite().await).await;
                }

                #[tokio::test]
                async fn postgres() {
                    if let Some(store) = common::postgres().await {
                        run(store).await;
                    }
                }
            }
        )*
    };
}
