//! SQLite persistence of the review service (docs/review-service.md §2; docs/architecture.md,
//! Store). All SQL of the service lives here. Column names are the spec's field names,
//! timestamps are integer epoch seconds, `enabled` is 0/1. Multi-row writes run in explicit
//! transactions so a failure never leaves a half-written record.
//!
//! This file holds the [`Store`] handle, its connection setup and migrations, and the errors;
//! each table has its own module with one `impl Store` block: `repos`, `reviews`, `findings`,
//! `settings`, `skills`, `deliveries`, the dashboard aggregates in `stats` and the chat tool's
//! read-only window in `read_query`.

mod deliveries;
mod findings;
mod read_query;
mod repos;
mod reviews;
mod rows;
mod settings;
mod skills;
mod stats;

pub use deliveries::DELIVERY_WINDOW_SECS;
pub use reviews::{Completion, NewReview};
pub use stats::*;

pub use read_query::{
    HIDDEN_TABLES, READ_QUERY_CELL_CHARS, READ_QUERY_MAX_ROWS, READ_QUERY_MAX_SQL_BYTES,
    READ_QUERY_MAX_VALUE_BYTES, READ_QUERY_TIMEOUT, REFUSED_FUNCTIONS, ReadQueryResult,
};
pub use skills::NewSkill;

use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use std::str::FromStr;
use std::time::Duration;

/// Errors of the store: the database failed, or the schema could not be brought up to date.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("invalid database URL {url:?}: {message}")]
    Url { url: String, message: String },
    /// A column of a closed set (review status, finding kind, ...) holds text this version does
    /// not know, written by hand or by another program; the message names the text and the
    /// values allowed (docs/review-service.md §2).
    #[error("unknown value in {table}.{column}: {message}")]
    UnknownValue {
        table: &'static str,
        column: &'static str,
        message: String,
    },
    /// A read-only query that is not one SELECT statement, or that reads a hidden table
    /// ([`Store::read_query`]); the message says what to change.
    #[error("query refused: {0}")]
    QueryRefused(String),
    /// SQLite rejected a read-only query ([`Store::read_query`]): syntax, unknown column, a
    /// value over [`READ_QUERY_MAX_VALUE_BYTES`]; the message is SQLite's.
    #[error("query failed: {0}")]
    Query(String),
    /// A read-only query ran longer than [`READ_QUERY_TIMEOUT`] and was interrupted.
    #[error("query interrupted after {} s: make it cheaper (filter, aggregate or add a LIMIT)", .0.as_secs())]
    QueryTimeout(Duration),
}

/// Result of the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The review store over a SQLite pool. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
    /// Where the guarded read-only connections of [`Store::read_query`] open the database.
    chat_db: read_query::ChatDatabase,
}

impl Store {
    /// Open (creating if missing) the database at `url` (`sqlite://path` or `sqlite::memory:`),
    /// in WAL mode with a busy timeout, and run the migrations of `migrations/`.
    pub async fn open(url: &str) -> Result<Self> {
        let base = SqliteConnectOptions::from_str(url).map_err(|e| StoreError::Url {
            url: url.to_owned(),
            message: e.to_string(),
        })?;
        // An in-memory database is a shared-cache name: the chat connection opens the same one.
        let chat_db = read_query::ChatDatabase::from_options(&base);
        let opts = base
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .min_connections(1)
            .connect_with(opts)
            .await?;
        sqlx::migrate!("../../migrations").run(&pool).await?;
        Ok(Self { pool, chat_db })
    }

    /// The pool, for read-only queries of other modules of this crate's users (tests).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

/// A store on a fresh database file in a temporary folder (deleted when the folder is dropped).
#[cfg(test)]
pub(crate) async fn test_store() -> (tempfile::TempDir, Store) {
    #![allow(clippy::unwrap_used)]
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/review.db", dir.path().display());
    let store = Store::open(&url).await.unwrap();
    (dir, store)
}
