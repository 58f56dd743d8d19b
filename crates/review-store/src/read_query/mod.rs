//! The chat tool's window on the database (docs/review-service.md §4, Chat rule 2;
//! docs/security.md, "The chat tool's SQL"): one read-only statement, on its own read-only
//! connection, with a row cap, a time cap and a size cap, answered as column names plus rows
//! of JSON values. Each backend guards it with its own machinery: SQLite's authorizer and
//! limits (`sqlite`), PostgreSQL's privileges through a reader role (`postgres`).

mod postgres;
mod sqlite;

use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use sqlx::postgres::PgConnectOptions;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AnyPool, ConnectOptions};

use crate::{Result, Store};

pub use sqlite::REFUSED_FUNCTIONS;

/// Rows returned at most; a result with more says `truncated: true` (docs/review-service.md §8
/// names no number; 200 rows is plenty for a model to read and small enough for its context).
pub const READ_QUERY_MAX_ROWS: usize = 200;

/// Longest run of one query before SQLite interrupts it or PostgreSQL cancels it.
pub const READ_QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// Characters kept of one text cell (finding bodies can be long); longer cells end in `…`.
pub const READ_QUERY_CELL_CHARS: usize = 2000;

/// Largest string or blob a query may build, in bytes (`SQLITE_LIMIT_LENGTH`): 1 MiB. Larger
/// values fail with SQLite's "string or blob too big" instead of allocating; on PostgreSQL a
/// row whose JSON is larger is refused instead of sent.
pub const READ_QUERY_MAX_VALUE_BYTES: i32 = 1 << 20;

/// Longest SQL text accepted, in bytes (`SQLITE_LIMIT_SQL_LENGTH`).
pub const READ_QUERY_MAX_SQL_BYTES: i32 = 100_000;

/// Tables a read-only query may not read: `settings` holds the API keys (docs/review-service.md
/// §2).
pub const HIDDEN_TABLES: &[&str] = &["settings"];

/// The tables the chat's reader role is granted on PostgreSQL, and nothing else (an
/// allow-list, so a table added later is unreadable until it is named here): the four the
/// chat's system prompt describes, plus the stats rollups (`stats_*`), which hold only sums.
/// The queue, the inbox, retries, deliveries and transcripts are not the chat's business.
pub const READABLE_TABLES: &[&str] =
    &["repos", "reviews", "findings", "dropped_findings", "skills"];

/// The name prefix of the rollup tables the reader role may read besides [`READABLE_TABLES`].
pub const READABLE_TABLE_PREFIX: &str = "stats_";

/// The answer of [`Store::read_query`], serialized as the chat tool's output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReadQueryResult {
    /// Column names, in select-list order.
    pub columns: Vec<String>,
    /// Rows, each one JSON value per column: integers and reals as numbers, text as strings
    /// (cut at [`READ_QUERY_CELL_CHARS`]), NULL as null, blobs as `"<blob of N bytes>"`.
    pub rows: Vec<Vec<Value>>,
    /// True when the statement had more than [`READ_QUERY_MAX_ROWS`] rows and only the first
    /// ones are here.
    pub truncated: bool,
    /// Present only when truncated: what happened and what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Where the chat connections of a store go.
#[derive(Debug, Clone)]
pub(crate) enum ChatDatabase {
    Sqlite(sqlite::SqliteFile),
    Postgres(postgres::Reader),
}

impl ChatDatabase {
    /// The `Any` URL the writer pool opens a SQLite store with (creating the file if
    /// missing), and where its chat connections go. `sqlite::memory:` becomes the named
    /// shared-cache database `file:review-memory-<pid>-<n>` (`next_memory` gives n), so that
    /// every connection of the pool and the chat connection see the same one; SQLite shares
    /// the cache of an in-memory database only when it is named by a `file:` URI.
    pub(crate) fn sqlite(
        given: SqliteConnectOptions,
        next_memory: impl FnOnce() -> u64,
    ) -> Result<(String, Self)> {
        let in_memory = given
            .get_filename()
            .to_string_lossy()
            .starts_with("file:sqlx-in-memory-");
        let (url, options) = if in_memory {
            // `%3A` is the `:` of `file:`: unencoded, a URL parser reads `file` as a host.
            let url = format!(
                "sqlite://file%3Areview-memory-{}-{}?mode=memory",
                std::process::id(),
                next_memory()
            );
            let options = SqliteConnectOptions::from_str(&url)?;
            (url, options)
        } else {
            let options = given.create_if_missing(true);
            (options.to_url_lossy().to_string(), options)
        };
        let chat = ChatDatabase::Sqlite(sqlite::SqliteFile::new(&options, in_memory));
        Ok((url, chat))
    }

    /// The reader role and pool of a PostgreSQL store (the `postgres` module docs).
    pub(crate) async fn postgres(writer: &AnyPool, options: PgConnectOptions) -> Result<Self> {
        Ok(ChatDatabase::Postgres(
            postgres::Reader::set_up(writer, options).await?,
        ))
    }
}

impl Store {
    /// Runs one read-only statement (docs/review-service.md §4, Chat rule 2) on a read-only
    /// connection of its own: at most [`READ_QUERY_MAX_ROWS`] rows, at most
    /// [`READ_QUERY_TIMEOUT`], no value over [`READ_QUERY_MAX_VALUE_BYTES`].
    ///
    /// Errors: [`crate::StoreError::QueryRefused`] for an empty text, more than one statement,
    /// bind parameters, a statement that is not read-only, or one that touches anything but
    /// the readable tables (on SQLite before anything runs; on PostgreSQL when its privileges
    /// or parser refuse it); [`crate::StoreError::QueryTimeout`] when stopped by the time cap;
    /// [`crate::StoreError::Query`] with the database's message for a statement it rejects
    /// (syntax, unknown column, a value too big). Dropping the future interrupts the statement
    /// on SQLite; on PostgreSQL the server's time cap ends it.
    pub async fn read_query(&self, sql: &str) -> Result<ReadQueryResult> {
        match &self.chat {
            ChatDatabase::Sqlite(file) => sqlite::read_query(file, sql).await,
            ChatDatabase::Postgres(reader) => reader.read_query(sql).await,
        }
    }
}

/// The note of a truncated result.
fn truncated_note() -> String {
    format!(
        "only the first {READ_QUERY_MAX_ROWS} rows are shown; aggregate, filter or add a LIMIT for the rest"
    )
}

/// `text` cut at [`READ_QUERY_CELL_CHARS`] characters, ending in `…` when cut.
fn cut(text: &str) -> String {
    match text.char_indices().nth(READ_QUERY_CELL_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn long_cells_are_cut() {
        let long = "é".repeat(READ_QUERY_CELL_CHARS + 5);
        let c = cut(&long);
        assert_eq!(c.chars().count(), READ_QUERY_CELL_CHARS + 1);
        assert!(c.ends_with('…'));
        assert_eq!(cut("short"), "short");
    }
}
