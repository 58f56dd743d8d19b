//! The chat tool's window on a PostgreSQL database (the module docs of `read_query`).
//!
//! The guard is PostgreSQL's own privilege system, not a scanner of ours:
//! 1. the query runs on its own pool, logged in as the reader role of this database
//!    (`review_chat_<database>`), created at the first start with a random password kept in the
//!    `chat_reader` table, which the role cannot read. At every start the role's grants are
//!    revoked and given again from an allow-list: `SELECT` on [`READABLE_TABLES`] and the
//!    `stats_*` rollups only ([`HIDDEN_TABLES`] and `chat_reader` are never among them), with
//!    `work_mem` and `temp_file_limit` bounded ([`READER_WORK_MEM`], [`READER_TEMP_FILE_LIMIT`]),
//!    and nothing else: it owns nothing and is a member of no role, so `SET ROLE`, `RESET ROLE`
//!    or `set_config('role', ...)` inside a query can only make it itself again (a `SET ROLE`
//!    on the writer's connection would not hold: `set_config('role', 'none', ...)` returns to
//!    the session user). `pg_read_file` and the other server-file functions need superuser or
//!    `pg_read_server_files`, which it does not have;
//! 2. the text is sent as one prepared statement (extended protocol, which holds exactly one
//!    statement) wrapped as `SELECT ... FROM (<text>) AS q`, so only a query expression
//!    compiles: no second statement, no `SET`, no utility command, no data-modifying `WITH`
//!    (PostgreSQL allows those only at the top level), no bind parameter;
//! 3. it runs in a `READ ONLY` transaction that is rolled back, with `statement_timeout` at
//!    [`READ_QUERY_TIMEOUT`] (armed when the statement starts, so a `set_config` inside the
//!    statement cannot lift it), and the client gives up a little later as a second line;
//! 4. a query cannot leave anything behind on its pooled connection: session-level advisory
//!    locks (`pg_try_advisory_lock` in a SELECT survives the rollback; one on the inbox
//!    promoter's key would stop review intake) are released by
//!    `pg_advisory_unlock_all()` every time a connection goes back to the pool, and a
//!    connection that cannot be reset is closed instead (which ends its session). GUCs set by
//!    `set_config` inside the transaction are undone by the rollback;
//! 5. at most [`READ_QUERY_MAX_ROWS`] + 1 rows leave the server, each turned into JSON by
//!    PostgreSQL (`row_to_json`, so every column type reads), and a row whose JSON is over
//!    [`READ_QUERY_MAX_VALUE_BYTES`] is not sent but refused. Unlike SQLite's length limit this
//!    does not stop the server from building the value: the time cap bounds that.

use std::time::Duration;

use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{AnyPool, Column, Executor, Row, Statement};

use super::{
    HIDDEN_TABLES, READ_QUERY_MAX_ROWS, READ_QUERY_MAX_SQL_BYTES, READ_QUERY_MAX_VALUE_BYTES,
    READ_QUERY_TIMEOUT, READABLE_TABLE_PREFIX, READABLE_TABLES, ReadQueryResult, cut,
};
use crate::{Result, StoreError};

/// The table that holds the reader role's name and password; never granted to it.
const READER_TABLE: &str = "chat_reader";

/// Prefix of the reader role's name; the database name follows (63 bytes at most in all).
const ROLE_PREFIX: &str = "review_chat_";

/// Connections of the reader pool: chat requests run one query at a time each.
const READER_CONNECTIONS: u32 = 4;

/// How much longer than [`READ_QUERY_TIMEOUT`] the client waits for the server's own cancel.
const CLIENT_GRACE: Duration = Duration::from_secs(2);

/// Key of the advisory lock under which replicas create the reader role one at a time.
const SETUP_LOCK: i64 = 0x7265_7669_6577_6368;

/// `work_mem` of the reader role: memory one sort or hash of a chat query may use before it
/// spills to a temporary file (PostgreSQL's default is 4MB; stated so it cannot grow with the
/// server's).
pub(crate) const READER_WORK_MEM: &str = "4MB";

/// `temp_file_limit` of the reader role: temporary-file space one chat query may use. Setting
/// it needs a superuser (or `GRANT SET ON PARAMETER temp_file_limit`); without that right the
/// start logs a warning and the time cap alone bounds the spill.
pub(crate) const READER_TEMP_FILE_LIMIT: &str = "64MB";

/// The reader pool of a PostgreSQL store (module docs, layer 1).
#[derive(Debug, Clone)]
pub(crate) struct Reader {
    pool: PgPool,
}

impl Reader {
    /// Creates the reader role on the first start (the writer's user needs `CREATEROLE`), grants
    /// it `SELECT` on the readable tables of this version, and opens its pool lazily. A
    /// login that fails later (a `pg_hba.conf` that refuses password logins) is logged here
    /// and reported by [`crate::Store::read_query`].
    ///
    /// Errors: [`StoreError::ReaderRole`] when the role cannot be created or granted.
    pub(crate) async fn set_up(writer: &AnyPool, options: PgConnectOptions) -> Result<Self> {
        let (role, password) = Self::role(writer).await.map_err(StoreError::ReaderRole)?;
        let pool = PgPoolOptions::new()
            .max_connections(READER_CONNECTIONS)
            .min_connections(0)
            // Module docs, layer 4: every return to the pool drops the session's advisory
            // locks; a connection that cannot be reset is closed, ending its session.
            .after_release(|conn, _meta| {
                Box::pin(async move {
                    match conn.execute("SELECT pg_advisory_unlock_all()").await {
                        Ok(_) => Ok(true),
                        Err(e) => {
                            tracing::warn!(error = %e, "a chat reader connection could not be reset; closing it");
                            Ok(false)
                        }
                    }
                })
            })
            .connect_lazy_with(options.username(&role).password(&password));
        if let Err(e) = pool.acquire().await {
            tracing::warn!(role, error = %e, "the chat tool's reader role cannot log in; its SQL tool will fail until it can (docs/operations.md, PostgreSQL)");
        }
        Ok(Reader { pool })
    }

    /// The reader role's name and password, created on the first start, with its grants
    /// renewed (module docs, layer 1).
    async fn role(writer: &AnyPool) -> sqlx::Result<(String, String)> {
        let mut tx = writer.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(SETUP_LOCK)
            .execute(&mut *tx)
            .await?;
        let known = sqlx::query(&format!("SELECT role, password FROM {READER_TABLE}"))
            .fetch_optional(&mut *tx)
            .await?;
        let (role, password): (String, String) = match known {
            Some(row) => (row.try_get(0)?, row.try_get(1)?),
            None => {
                // A role left by a dropped database of the same name gets a new password.
                let row = sqlx::query(
                    "SELECT left($1 || current_database(), 63),
                         replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''),
                         EXISTS (SELECT 1 FROM pg_roles WHERE rolname = left($1 || current_database(), 63))",
                )
                .bind(ROLE_PREFIX)
                .fetch_one(&mut *tx)
                .await?;
                let (role, password): (String, String) = (row.try_get(0)?, row.try_get(1)?);
                let verb = if row.try_get::<bool, _>(2)? {
                    "ALTER"
                } else {
                    "CREATE"
                };
                let create: String = sqlx::query_scalar(&format!(
                    "SELECT format('{verb} ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD %L', $1::text, $2::text)"
                ))
                .bind(&role)
                .bind(&password)
                .fetch_one(&mut *tx)
                .await?;
                (&mut *tx).execute(create.as_str()).await?;
                sqlx::query(&format!(
                    "INSERT INTO {READER_TABLE} (role, password) VALUES ($1, $2)"
                ))
                .bind(&role)
                .bind(&password)
                .execute(&mut *tx)
                .await?;
                (role, password)
            }
        };
        let grants: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT format('REVOKE ALL ON ALL TABLES IN SCHEMA public FROM %I', $1::text)
             UNION ALL SELECT format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM %I', $1::text)
             UNION ALL SELECT format('GRANT USAGE ON SCHEMA public TO %I', $1::text)
             UNION ALL SELECT format('ALTER ROLE %I SET default_transaction_read_only = on', $1::text)
             UNION ALL SELECT format('ALTER ROLE %I SET work_mem = %L', $1::text, $2::text)
             UNION ALL SELECT format('GRANT SELECT ON %I TO %I', tablename, $1::text)
                 FROM pg_tables WHERE schemaname = 'public'
                 AND (tablename IN ({}) OR starts_with(tablename, $3::text))
                 AND tablename NOT IN ({})",
            quoted(READABLE_TABLES),
            unreadable_tables()
        ))
        .bind(&role)
        .bind(READER_WORK_MEM)
        .bind(READABLE_TABLE_PREFIX)
        .fetch_all(&mut *tx)
        .await?;
        for grant in &grants {
            (&mut *tx).execute(grant.as_str()).await?;
        }
        // temp_file_limit is a superuser setting: try it in a savepoint, so that a writer
        // without that right still starts (with a warning).
        let temp_limit: String = sqlx::query_scalar(
            "SELECT format('ALTER ROLE %I SET temp_file_limit = %L', $1::text, $2::text)",
        )
        .bind(&role)
        .bind(READER_TEMP_FILE_LIMIT)
        .fetch_one(&mut *tx)
        .await?;
        (&mut *tx).execute("SAVEPOINT temp_file_limit").await?;
        if let Err(e) = (&mut *tx).execute(temp_limit.as_str()).await {
            (&mut *tx)
                .execute("ROLLBACK TO SAVEPOINT temp_file_limit")
                .await?;
            tracing::warn!(role, error = %e, "cannot set temp_file_limit on the chat reader role (needs a superuser or GRANT SET ON PARAMETER temp_file_limit); its queries' temporary files are bounded by the time cap only");
        }
        tx.commit().await?;
        Ok((role, password))
    }

    /// [`crate::Store::read_query`] on PostgreSQL (module docs).
    pub(super) async fn read_query(&self, sql: &str) -> Result<ReadQueryResult> {
        if sql.len() > READ_QUERY_MAX_SQL_BYTES as usize {
            return Err(StoreError::QueryRefused(format!(
                "the query is longer than {READ_QUERY_MAX_SQL_BYTES} bytes: shorten it"
            )));
        }
        let text = sql
            .trim()
            .trim_end_matches(|c: char| c == ';' || c.is_whitespace());
        if text.is_empty() {
            return Err(StoreError::QueryRefused(
                "the query is empty: send one SELECT statement".into(),
            ));
        }
        let (columns, rows) =
            match tokio::time::timeout(READ_QUERY_TIMEOUT + CLIENT_GRACE, self.fetch(text)).await {
                Ok(fetched) => fetched?,
                Err(_) => return Err(StoreError::QueryTimeout(READ_QUERY_TIMEOUT)),
            };
        let truncated = rows.len() > READ_QUERY_MAX_ROWS;
        let rows = rows
            .into_iter()
            .take(READ_QUERY_MAX_ROWS)
            .map(|row| json_row(row, columns.len()))
            .collect::<Result<Vec<_>>>()?;
        Ok(ReadQueryResult {
            columns,
            rows,
            truncated,
            note: truncated.then(super::truncated_note),
        })
    }

    /// The column names and at most [`READ_QUERY_MAX_ROWS`] + 1 rows of `text`, each a JSON
    /// array of its cells (None when over the size cap), read in a rolled-back read-only
    /// transaction. `text` is compiled first as it is, then wrapped (module docs, layer 2):
    /// a text that compiles alone but not as a subquery is a statement other than a query.
    async fn fetch(&self, text: &str) -> Result<(Vec<String>, Vec<Option<String>>)> {
        let mut conn = self.pool.acquire().await?;
        let mut tx = sqlx::Connection::begin(&mut *conn).await?;
        (&mut *tx)
            .execute("SET TRANSACTION READ ONLY")
            .await
            .map_err(database_error)?;
        let timeout = format!(
            "SET LOCAL statement_timeout = {}",
            READ_QUERY_TIMEOUT.as_millis()
        );
        (&mut *tx)
            .execute(timeout.as_str())
            .await
            .map_err(database_error)?;
        let alone = (&mut *tx).prepare(text).await.map_err(database_error)?;
        if alone.parameters().is_some_and(|p| match p {
            sqlx::Either::Left(types) => !types.is_empty(),
            sqlx::Either::Right(n) => n > 0,
        }) {
            return Err(bind_parameters());
        }
        // The newline ends a trailing `--` comment of the text before the wrapper goes on.
        let inner = format!("SELECT * FROM (\n{text}\n) AS q");
        let columns: Vec<String> = match (&mut *tx).prepare(inner.as_str()).await {
            Ok(statement) => statement
                .columns()
                .iter()
                .map(|c| c.name().to_owned())
                .collect(),
            Err(e) if sql_state(&e).as_deref() == Some("42601") => {
                return Err(StoreError::QueryRefused(
                    "only reads are allowed: send one SELECT statement".into(),
                ));
            }
            Err(e) => return Err(database_error(e)),
        };
        let limit = READ_QUERY_MAX_ROWS + 1;
        let cap = READ_QUERY_MAX_VALUE_BYTES;
        let rows: Vec<Option<String>> = sqlx::query_scalar(&format!(
            "SELECT CASE WHEN octet_length(j) <= {cap} THEN j END FROM (
                 SELECT (SELECT json_agg(e.value ORDER BY e.n)
                         FROM json_each(row_to_json(q)) WITH ORDINALITY AS e(key, value, n))::text AS j
                 FROM (\n{text}\n) AS q LIMIT {limit}) AS w"
        ))
        .fetch_all(&mut *tx)
        .await
        .map_err(database_error)?;
        tx.rollback().await?;
        // Layer 4 on the answering path; the pool's after_release covers every other one.
        (&mut *conn)
            .execute("SELECT pg_advisory_unlock_all()")
            .await?;
        Ok((columns, rows))
    }
}

/// Tables the reader role never gets a grant on, as an SQL list of string literals:
/// [`HIDDEN_TABLES`] and its own password table.
fn unreadable_tables() -> String {
    let mut names = HIDDEN_TABLES.to_vec();
    names.push(READER_TABLE);
    quoted(&names)
}

/// `names` as an SQL list of string literals (plain lower-case names, no quotes inside).
fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|t| format!("'{t}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One row's JSON array of cells (null when over the size cap) as JSON values, text cut at
/// [`super::READ_QUERY_CELL_CHARS`].
fn json_row(row: Option<String>, width: usize) -> Result<Vec<Value>> {
    let Some(text) = row else {
        return Err(StoreError::query(format!(
            "a row is larger than {READ_QUERY_MAX_VALUE_BYTES} bytes: select fewer or shorter values"
        )));
    };
    let cells: Option<Vec<Value>> = serde_json::from_str(&text)
        .map_err(|e| StoreError::query_from(format!("a row did not read as JSON: {e}"), e))?;
    let mut cells = cells.unwrap_or_default();
    cells.resize(width, Value::Null);
    Ok(cells
        .into_iter()
        .map(|cell| match cell {
            Value::String(s) => Value::String(cut(&s)),
            other => other,
        })
        .collect())
}

fn bind_parameters() -> StoreError {
    StoreError::QueryRefused(
        "bind parameters ($1, ?, :name, @name) are not allowed: write the values into the SELECT"
            .into(),
    )
}

fn sql_state(e: &sqlx::Error) -> Option<String> {
    e.as_database_error()
        .and_then(|db| db.code().map(|c| c.into_owned()))
}

/// PostgreSQL's error for a chat query, in words for the model: refusals for what the guard
/// stopped, [`StoreError::QueryTimeout`] for the time cap, PostgreSQL's message otherwise.
fn database_error(e: sqlx::Error) -> StoreError {
    let Some(db) = e.as_database_error() else {
        return StoreError::query_from(e.to_string(), e);
    };
    let message = db.message().to_owned();
    match sql_state(&e).as_deref() {
        // query_canceled: the statement_timeout.
        Some("57014") => StoreError::QueryTimeout(READ_QUERY_TIMEOUT),
        // insufficient_privilege: a table or function the reader role may not use.
        Some("42501") => match HIDDEN_TABLES.iter().find(|t| message.contains(*t)) {
            Some(t) => StoreError::QueryRefused(format!(
                "the {t} table is not readable here (it holds secrets)"
            )),
            None => StoreError::QueryRefused(format!(
                "{message}: query the tables described in the instructions"
            )),
        },
        // configuration_limit_exceeded: the role's temp_file_limit (READER_TEMP_FILE_LIMIT).
        Some("53400") => StoreError::query_from(
            format!(
                "{message}: a chat query may spill at most {READER_TEMP_FILE_LIMIT} to temporary files; aggregate more narrowly"
            ),
            e,
        ),
        // read_only_sql_transaction.
        Some("25006") => {
            StoreError::QueryRefused("only reads are allowed: send one SELECT statement".into())
        }
        // undefined_parameter, indeterminate_datatype (of a `$1`).
        Some("42P02" | "42P18") => bind_parameters(),
        // syntax_error: "cannot insert multiple commands into a prepared statement".
        Some("42601") if message.contains("multiple commands") => StoreError::QueryRefused(
            "only one statement is allowed: send a single SELECT without a second statement after `;`"
                .into(),
        ),
        _ => StoreError::query_from(message, e),
    }
}
