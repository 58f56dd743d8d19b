//! Persistence of the review service on SQLite or PostgreSQL (docs/review-service.md §2;
//! docs/architecture.md, Store and "Two database backends"). All SQL of the service lives here.
//! Column names are the spec's field names, timestamps are integer epoch seconds, `enabled` is
//! 0/1. Multi-row writes run in explicit
//! transactions so a failure never leaves a half-written record.
//!
//! This file holds the [`Store`] handle, its connection setup and migrations, and the errors;
//! each table has its own module with one `impl Store` block: `repos`, `reviews`, `findings`,
//! `settings`, `skills`, `deliveries`, `transcripts`, the work queue in `queue` and the webhook
//! inbox in `inbox`, the dashboard aggregates in `stats` (their SQL assembled with the builder
//! of `sql`) and the chat tool's read-only window in `read_query`.

mod budget;
mod copy;
mod deliveries;
mod findings;
mod inbox;
mod queue;
mod read_query;
mod repos;
mod reviews;
mod rows;
mod settings;
mod skills;
mod sql;
mod stats;
mod transcripts;

pub use deliveries::DELIVERY_WINDOW_SECS;
pub use inbox::{PROMOTE_LOCK, PROMOTE_LOCK_TIMEOUT_MS, PromotedReview};
pub use queue::{ClaimedRetry, ClaimedReview, HeldLease};
pub use reviews::{Completion, NewReview};
/// The LISTEN connection of [`Store::listener`].
pub use sqlx::postgres::PgListener;
pub use stats::*;

pub use read_query::{
    HIDDEN_TABLES, READ_QUERY_CELL_CHARS, READ_QUERY_MAX_ROWS, READ_QUERY_MAX_SQL_BYTES,
    READ_QUERY_MAX_VALUE_BYTES, READ_QUERY_TIMEOUT, READABLE_TABLE_PREFIX, READABLE_TABLES,
    REFUSED_FUNCTIONS, ReadQueryResult,
};
pub use skills::NewSkill;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::postgres::PgConnectOptions;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AnyPool, Executor, Row};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
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
    /// The database rejected a read-only query ([`Store::read_query`]): syntax, unknown column,
    /// a value over [`READ_QUERY_MAX_VALUE_BYTES`]; the message is SQLite's or PostgreSQL's.
    /// Also a [`Store::copy_into`] whose target is not empty.
    #[error("query failed: {message}")]
    Query {
        /// What failed, in words for the model and the operator (the whole Display text after
        /// `query failed: `).
        message: String,
        /// The error it came from: a `rusqlite::Error` or an [`sqlx::Error`] of the database,
        /// or the failure to run or decode the query; None when the store itself refused.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
    /// PostgreSQL: the chat tool's reader role could not be created or granted at start
    /// (docs/operations.md, PostgreSQL); the message names the cause, the database's error.
    #[error(
        "the chat tool's reader role could not be set up: {0}; the database user needs CREATEROLE at the first start (docs/operations.md, PostgreSQL)"
    )]
    ReaderRole(#[source] sqlx::Error),
    /// A read-only query ran longer than [`READ_QUERY_TIMEOUT`] and was interrupted.
    #[error("query interrupted after {} s: make it cheaper (filter, aggregate or add a LIMIT)", .0.as_secs())]
    QueryTimeout(Duration),
}

impl StoreError {
    /// [`StoreError::Query`] that the store raised itself, with no underlying error.
    pub(crate) fn query(message: impl Into<String>) -> Self {
        StoreError::Query {
            message: message.into(),
            source: None,
        }
    }

    /// [`StoreError::Query`] caused by `source`; `message` is what the Display text shows.
    pub(crate) fn query_from(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        StoreError::Query {
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }
}

/// Result of the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The SQL dialect of a store's database (docs/architecture.md, "Two database backends").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// One SQLite file (or in-memory database), the default.
    Sqlite,
    /// A PostgreSQL database, shared by every replica.
    Postgres,
}

/// The review store: one sqlx `Any` pool over SQLite or PostgreSQL, chosen by the URL scheme
/// (docs/architecture.md, "Two database backends"). Queries are written once, with `$N`
/// placeholders that both accept; the few dialect differences live in [`Backend`] branches.
/// Cheap to clone.
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    /// Where the guarded read-only connections of [`Store::read_query`] go.
    chat: read_query::ChatDatabase,
    /// PostgreSQL: the URL, for the LISTEN connection of [`Store::listener`].
    listen_url: Option<String>,
}

/// Connections of the writer pool.
const MAX_CONNECTIONS: u32 = 8;

/// Names of the in-memory SQLite databases of this process (each `sqlite::memory:` store
/// gets its own).
static IN_MEMORY_SEQ: AtomicU64 = AtomicU64::new(0);

/// What every SQLite connection runs first: WAL (kept by the file), a busy timeout instead of
/// immediate `SQLITE_BUSY`, normal sync (safe in WAL mode), and enforced foreign keys.
/// `wal_autocheckpoint = 0`: no commit runs a checkpoint (with its fsyncs) any more, which put
/// 10 to 16 ms on one webhook acknowledgement in a hundred (bench/review/REPLICAS.md); the
/// server checkpoints from its keeper instead ([`Store::checkpoint`]).
const SQLITE_PRAGMAS: &str = "PRAGMA busy_timeout = 10000; PRAGMA journal_mode = WAL; \
     PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA wal_autocheckpoint = 0;";

impl Store {
    /// A write transaction. On SQLite it is `BEGIN IMMEDIATE`: the write lock is taken (or
    /// waited for, within the busy timeout) before the first statement, so a transaction that
    /// reads before it writes never fails with `SQLITE_BUSY_SNAPSHOT` (517) when another
    /// connection committed in between, which no busy timeout retries
    /// (<https://www.sqlite.org/lang_transaction.html>). On PostgreSQL a plain `BEGIN`.
    pub(crate) async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>> {
        Ok(match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            Backend::Postgres => self.pool.begin().await?,
        })
    }

    /// Open the database at `url` and bring its schema up to date:
    /// - `sqlite://path` (created if missing) or `sqlite::memory:`: WAL mode with a busy
    ///   timeout, the migrations of `migrations/`;
    /// - `postgres://` or `postgresql://`: the migrations of `migrations/postgres/`, then the
    ///   chat tool's reader role is set up (docs/security.md, "The chat tool's SQL"), which needs
    ///   a database user allowed to create roles (`CREATEROLE`) on the first start.
    ///
    /// Errors: [`StoreError::Url`] for another scheme or a URL the driver cannot parse;
    /// [`StoreError::Database`] when the database cannot be reached;
    /// [`StoreError::ReaderRole`] when the chat tool's role cannot be created or granted;
    /// [`StoreError::Migrate`] when a migration fails.
    pub async fn open(url: &str) -> Result<Self> {
        sqlx::any::install_default_drivers();
        let bad_url = |message: String| StoreError::Url {
            url: redacted(url),
            message,
        };
        let scheme = url.split(':').next().unwrap_or_default();
        match scheme {
            "sqlite" => {
                let given =
                    SqliteConnectOptions::from_str(url).map_err(|e| bad_url(e.to_string()))?;
                let (any_url, chat) = read_query::ChatDatabase::sqlite(given, || {
                    IN_MEMORY_SEQ.fetch_add(1, Ordering::Relaxed)
                })?;
                let any =
                    AnyConnectOptions::from_str(&any_url).map_err(|e| bad_url(e.to_string()))?;
                let pool = AnyPoolOptions::new()
                    .max_connections(MAX_CONNECTIONS)
                    .min_connections(1)
                    .test_before_acquire(false)
                    .after_connect(|conn, _| {
                        Box::pin(async move { conn.execute(SQLITE_PRAGMAS).await.map(drop) })
                    })
                    .connect_with(any)
                    .await?;
                sqlx::migrate!("../../migrations").run(&pool).await?;
                Ok(Self {
                    pool,
                    backend: Backend::Sqlite,
                    chat,
                    listen_url: None,
                })
            }
            "postgres" | "postgresql" => {
                let pg = PgConnectOptions::from_str(url).map_err(|e| bad_url(e.to_string()))?;
                let any = AnyConnectOptions::from_str(url).map_err(|e| bad_url(e.to_string()))?;
                // No ping before each query: it would double the round trips of the webhook's
                // acknowledgement (docs/architecture.md, "The webhook inbox"); a connection
                // that broke fails its query and is dropped from the pool.
                let pool = AnyPoolOptions::new()
                    .max_connections(MAX_CONNECTIONS)
                    .min_connections(1)
                    .test_before_acquire(false)
                    .connect_with(any)
                    .await?;
                sqlx::migrate!("../../migrations/postgres")
                    .run(&pool)
                    .await?;
                let chat = read_query::ChatDatabase::postgres(&pool, pg).await?;
                Ok(Self {
                    pool,
                    backend: Backend::Postgres,
                    chat,
                    listen_url: Some(url.to_owned()),
                })
            }
            _ => Err(bad_url(
                "the scheme must be sqlite:, postgres: or postgresql:".to_owned(),
            )),
        }
    }

    /// The pool, for read-only queries of this crate's users (tests). Its SQL goes to SQLite or
    /// PostgreSQL as written: use `$N` placeholders, which both accept.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// The SQL dialect of the database.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// SQLite: copies the write-ahead log's committed pages into the database file without
    /// waiting for readers or blocking writers (`PRAGMA wal_checkpoint(PASSIVE)`), off the
    /// request path: commits no longer checkpoint by themselves (`SQLITE_PRAGMAS`). Returns the
    /// frames in the log and how many of them are now checkpointed; once all are, the next
    /// writer starts the log over, so it stays small. PostgreSQL: `(0, 0)`, nothing to do.
    /// Called every QUEUE_POLL_MS by the server's keeper (docs/operations.md, "SQLite and
    /// backups").
    pub async fn checkpoint(&self) -> Result<(i64, i64)> {
        if self.backend != Backend::Sqlite {
            return Ok((0, 0));
        }
        let row = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .fetch_one(&self.pool)
            .await?;
        Ok((row.try_get(1)?, row.try_get(2)?))
    }

    /// At shutdown, SQLite: checkpoints the whole write-ahead log into the database file and
    /// empties it (`PRAGMA wal_checkpoint(TRUNCATE)`), so a stopped server leaves everything
    /// in `review.db` (docs/operations.md, "SQLite and backups"). Returns false when a reader
    /// kept part of the log (it is then replayed at the next open, nothing is lost).
    /// PostgreSQL: true, nothing to do.
    pub async fn checkpoint_at_shutdown(&self) -> Result<bool> {
        if self.backend != Backend::Sqlite {
            return Ok(true);
        }
        let row = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get::<i64, _>(0)? == 0)
    }

    /// PostgreSQL: sends `payload` (at most 8000 bytes) on `channel` to every listener of
    /// the database, replicas included (`pg_notify`). SQLite: nothing, one process is alone.
    pub async fn notify(&self, channel: &str, payload: &str) -> Result<()> {
        if self.backend == Backend::Postgres {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(channel)
                .bind(payload)
                .execute(&self.pool)
                .await?;
        }
        Ok(())
    }

    /// PostgreSQL: sends every payload of `payloads` (each at most 8000 bytes) on `channel`,
    /// in order, in one statement (one round trip for the batch). SQLite: nothing.
    pub async fn notify_many(&self, channel: &str, payloads: &[String]) -> Result<()> {
        if self.backend != Backend::Postgres || payloads.is_empty() {
            return Ok(());
        }
        let calls: Vec<String> = (0..payloads.len())
            .map(|i| format!("pg_notify($1, ${})", i + 2))
            .collect();
        let sql = format!("SELECT {}", calls.join(", "));
        let mut query = sqlx::query(&sql).bind(channel);
        for p in payloads {
            query = query.bind(p.as_str());
        }
        query.execute(&self.pool).await?;
        Ok(())
    }

    /// PostgreSQL: a connection listening on `channels` (it reconnects by itself when the
    /// connection drops; what was sent meanwhile is lost, docs/architecture.md, "Many
    /// replicas"). SQLite: None.
    pub async fn listener(&self, channels: &[&str]) -> Result<Option<PgListener>> {
        let Some(url) = &self.listen_url else {
            return Ok(None);
        };
        let mut listener = PgListener::connect(url).await?;
        listener.listen_all(channels.iter().copied()).await?;
        Ok(Some(listener))
    }
}

/// `url` without its password, for error messages and logs; a URL that does not parse loses
/// everything between the scheme and the last `@` instead.
fn redacted(url: &str) -> String {
    if let Ok(mut u) = url::Url::parse(url) {
        if u.password().is_some() {
            let _ = u.set_password(Some("***"));
        }
        return u.to_string();
    }
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// A store on a fresh database file in a temporary folder (deleted when the folder is dropped).
#[cfg(test)]
pub(crate) async fn test_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/review.db", dir.path().display());
    let store = Store::open(&url).await.unwrap();
    (dir, store)
}
