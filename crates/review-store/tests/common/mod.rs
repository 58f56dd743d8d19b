//! Stores of both backends for the integration tests (docs/operations.md, "Tests on
//! PostgreSQL"): SQLite in a temporary folder, and PostgreSQL in a fresh database created on
//! the server of `REVIEW_TEST_DATABASE_URL` (scripts/test.sh starts a throwaway cluster and
//! sets it). Without that variable a PostgreSQL variant is skipped with a notice on a
//! developer's machine and fails under CI (`CI` set), where a skip would pass silently.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use review_store::Store;
use std::ops::Deref;

mod postgres;
#[allow(unused_imports)] // not every test binary uses them
pub(crate) use postgres::{DATABASE_URL_VAR, fresh_database_url, under_ci};

/// A store on a fresh database, with what keeps it alive.
pub(crate) struct TestStore {
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
pub(crate) async fn sqlite() -> TestStore {
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
pub(crate) async fn postgres() -> Option<TestStore> {
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
