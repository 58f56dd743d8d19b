//! The chat tool's window on the database (spec/review-service.md section 4, Chat rule 2;
//! DESIGN.md, Chat): one SELECT statement, run on its own read-only connection, with a row cap
//! and a time cap, answered as column names plus rows of JSON values.
//!
//! Three layers keep it read-only, each enough on its own for writes:
//! 1. [`check_select`] accepts one `SELECT`, `WITH ... SELECT` or `VALUES` statement and
//!    refuses anything else (writes, PRAGMA, ATTACH, several statements) with a message that
//!    says what to send instead;
//! 2. the connection is opened `mode=ro` with `PRAGMA query_only = ON`, so SQLite itself
//!    refuses any write that got past the first layer;
//! 3. the compiled program (`EXPLAIN`) must not open a table of [`HIDDEN_TABLES`]: the
//!    settings table holds the API keys, which must never reach a model provider.
//!
//! The time cap is a SQLite progress handler that interrupts the statement; the same handler
//! stops it when the caller goes away (the chat request was aborted).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use serde::Serialize;
use serde_json::Value;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteRow};
use sqlx::{Column, Connection, Executor, Row, Statement, TypeInfo, ValueRef};

use crate::{Result, Store, StoreError};

/// Rows returned at most; a result with more says `truncated: true` (spec section 8 names no
/// number; 200 rows is plenty for a model to read and small enough for its context).
pub const READ_QUERY_MAX_ROWS: usize = 200;

/// Longest run of one query before SQLite interrupts it.
pub const READ_QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// Characters kept of one text cell (finding bodies can be long); longer cells end in `…`.
pub const READ_QUERY_CELL_CHARS: usize = 2000;

/// Tables a read-only query may not read: `settings` holds the API keys (spec section 2).
pub const HIDDEN_TABLES: &[&str] = &["settings"];

/// SQLite virtual-machine instructions between two checks of the deadline.
const PROGRESS_STEPS: i32 = 1000;

/// Functions refused because one call can allocate up to a gigabyte.
const REFUSED_FUNCTIONS: &[&str] = &["RANDOMBLOB", "ZEROBLOB", "LOAD_EXTENSION"];

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

/// Options of the read-only connections, from the writer's base options.
pub(crate) fn read_only_options(base: SqliteConnectOptions) -> SqliteConnectOptions {
    base.read_only(true)
        .pragma("query_only", "ON")
        .busy_timeout(READ_QUERY_TIMEOUT)
}

impl Store {
    /// Runs one read-only statement (spec section 4, Chat rule 2) on a fresh read-only
    /// connection: at most [`READ_QUERY_MAX_ROWS`] rows, at most [`READ_QUERY_TIMEOUT`].
    ///
    /// Errors: [`StoreError::QueryRefused`] for anything but one SELECT (or `WITH ... SELECT`,
    /// or `VALUES`) statement, or one that reads a table of [`HIDDEN_TABLES`];
    /// [`StoreError::QueryTimeout`] when interrupted by the time cap;
    /// [`StoreError::Database`] with SQLite's message for a statement SQLite rejects (syntax,
    /// unknown column, attempt to write). Dropping the future interrupts the statement.
    pub async fn read_query(&self, sql: &str) -> Result<ReadQueryResult> {
        let statement = check_select(sql).map_err(StoreError::QueryRefused)?;
        let stop = Arc::new(AtomicBool::new(false));
        let _interrupt_on_drop = SetOnDrop(stop.clone());
        let mut conn = SqliteConnection::connect_with(&self.read_only).await?;
        let deadline = Instant::now() + READ_QUERY_TIMEOUT;
        {
            let flag = stop.clone();
            conn.lock_handle()
                .await?
                .set_progress_handler(PROGRESS_STEPS, move || {
                    !flag.load(Ordering::Relaxed) && Instant::now() < deadline
                });
        }
        let result = run(&mut conn, statement).await;
        let result = match result {
            Err(StoreError::Database(e)) if Instant::now() >= deadline => {
                tracing::debug!(error = %e, "read-only query interrupted by the time cap");
                Err(StoreError::QueryTimeout(READ_QUERY_TIMEOUT))
            }
            other => other,
        };
        let _ = conn.close().await;
        result
    }
}

/// Sets its flag when dropped: the progress handler then interrupts the statement.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

async fn run(conn: &mut SqliteConnection, statement: &str) -> Result<ReadQueryResult> {
    refuse_hidden_tables(conn, statement).await?;
    let prepared = conn.prepare(statement).await?;
    let columns: Vec<String> = prepared
        .columns()
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    let mut rows = Vec::new();
    let mut truncated = false;
    {
        let mut stream = prepared.query().fetch(&mut *conn);
        while let Some(row) = stream.try_next().await? {
            if rows.len() == READ_QUERY_MAX_ROWS {
                truncated = true;
                break;
            }
            rows.push(row_values(&row));
        }
    }
    Ok(ReadQueryResult {
        columns,
        rows,
        truncated,
        note: truncated.then(|| {
            format!(
                "only the first {READ_QUERY_MAX_ROWS} rows are shown; aggregate, filter or add a LIMIT for the rest"
            )
        }),
    })
}

/// Refuses a statement whose compiled program opens a table (or one of its indexes) of
/// [`HIDDEN_TABLES`]. Views and subqueries cannot hide a read: the program names root pages.
async fn refuse_hidden_tables(conn: &mut SqliteConnection, statement: &str) -> Result<()> {
    let mut hidden_pages = Vec::new();
    for table in HIDDEN_TABLES {
        let pages: Vec<i64> = sqlx::query_scalar(
            "SELECT rootpage FROM sqlite_schema WHERE tbl_name = ? AND rootpage > 0",
        )
        .bind(table)
        .fetch_all(&mut *conn)
        .await?;
        hidden_pages.extend(pages.into_iter().map(|p| (p, *table)));
    }
    if hidden_pages.is_empty() {
        return Ok(());
    }
    let program = sqlx::query(&format!("EXPLAIN {statement}"))
        .fetch_all(&mut *conn)
        .await?;
    for op in &program {
        let opcode: String = op.try_get("opcode").unwrap_or_default();
        if !matches!(opcode.as_str(), "OpenRead" | "OpenWrite" | "ReopenIdx") {
            continue;
        }
        let page: i64 = op.try_get("p2").unwrap_or_default();
        let database: i64 = op.try_get("p3").unwrap_or_default();
        if database != 0 {
            continue;
        }
        if let Some((_, table)) = hidden_pages.iter().find(|(p, _)| *p == page) {
            return Err(StoreError::QueryRefused(format!(
                "the {table} table is not readable here (it holds secrets)"
            )));
        }
    }
    Ok(())
}

fn row_values(row: &SqliteRow) -> Vec<Value> {
    (0..row.len()).map(|i| cell(row, i)).collect()
}

fn cell(row: &SqliteRow, i: usize) -> Value {
    let Ok(raw) = row.try_get_raw(i) else {
        return Value::Null;
    };
    if raw.is_null() {
        return Value::Null;
    }
    let kind = raw.type_info().name().to_owned();
    match kind.as_str() {
        "INTEGER" | "BOOLEAN" => row
            .try_get_unchecked::<i64, _>(i)
            .map(Value::from)
            .unwrap_or(Value::Null),
        "REAL" | "NUMERIC" => row
            .try_get_unchecked::<f64, _>(i)
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        "BLOB" => {
            let len = row
                .try_get_unchecked::<Vec<u8>, _>(i)
                .map(|b| b.len())
                .unwrap_or(0);
            Value::String(format!("<blob of {len} bytes>"))
        }
        _ => row
            .try_get_unchecked::<String, _>(i)
            .map(|t| Value::String(cut(t)))
            .unwrap_or(Value::Null),
    }
}

fn cut(text: String) -> String {
    match text.char_indices().nth(READ_QUERY_CELL_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

/// One token of the statement scanner: what [`check_select`] needs to see.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// A bare word (keyword, identifier, number), upper-cased.
    Word(String),
    /// `(`.
    Open,
    /// `)`.
    Close,
    /// `;`, with its byte offset in the SQL text.
    Semicolon(usize),
    /// Any other punctuation or a quoted literal or identifier.
    Other,
}

/// Splits SQL into tokens, skipping whitespace, `--` and `/* */` comments, and treating
/// string literals and quoted identifiers (`'..'`, `".."`, `` `..` ``, `[..]`) as one token,
/// so keywords inside them are never seen.
fn tokens(sql: &str) -> Vec<Token> {
    let indexed: Vec<(usize, char)> = sql.char_indices().collect();
    let chars: Vec<char> = indexed.iter().map(|(_, c)| *c).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '-' && next == Some('-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
        } else if matches!(c, '\'' | '"' | '`' | '[') {
            let close = if c == '[' { ']' } else { c };
            i += 1;
            loop {
                match chars.get(i) {
                    None => break,
                    // A doubled quote is an escaped quote inside the literal.
                    Some(&ch)
                        if ch == close && close != ']' && chars.get(i + 1) == Some(&close) =>
                    {
                        i += 2
                    }
                    Some(&ch) if ch == close => {
                        i += 1;
                        break;
                    }
                    Some(_) => i += 1,
                }
            }
            out.push(Token::Other);
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push(Token::Word(word.to_uppercase()));
        } else {
            out.push(match c {
                '(' => Token::Open,
                ')' => Token::Close,
                ';' => Token::Semicolon(indexed[i].0),
                _ => Token::Other,
            });
            i += 1;
        }
    }
    out
}

/// Accepts exactly one read statement and returns it without trailing semicolons.
///
/// Accepted: a statement starting with `SELECT`, `WITH` or `VALUES`. Refused, with a message
/// for the model: an empty text; any other first keyword (INSERT, UPDATE, DELETE, REPLACE,
/// CREATE, DROP, ALTER, PRAGMA, ATTACH, DETACH, VACUUM, BEGIN, ...); a `WITH` that leads to a
/// write; anything after the first `;`; the functions randomblob, zeroblob and
/// load_extension.
pub(crate) fn check_select(sql: &str) -> std::result::Result<&str, String> {
    let toks = tokens(sql);
    let Some(first) = toks.first() else {
        return Err("the query is empty: send one SELECT statement".into());
    };
    let first_word = match first {
        Token::Word(w) => w.as_str(),
        _ => "",
    };
    if !matches!(first_word, "SELECT" | "WITH" | "VALUES") {
        let got = if first_word.is_empty() {
            "something else".to_owned()
        } else {
            format!("a {first_word} statement")
        };
        return Err(format!(
            "only one read-only SELECT (or WITH ... SELECT) statement is allowed, got {got}"
        ));
    }
    let first_semicolon = toks.iter().position(|t| matches!(t, Token::Semicolon(_)));
    if let Some(end) = first_semicolon
        && toks[end..]
            .iter()
            .any(|t| !matches!(t, Token::Semicolon(_)))
    {
        return Err(
            "only one statement is allowed: send a single SELECT without a second statement after `;`"
                .into(),
        );
    }
    let mut depth = 0i32;
    for (n, t) in toks.iter().enumerate() {
        match t {
            Token::Open => depth += 1,
            Token::Close => depth -= 1,
            Token::Word(w) => {
                let called = toks.get(n + 1) == Some(&Token::Open);
                let into = toks.get(n + 1) == Some(&Token::Word("INTO".into()));
                let write = matches!(w.as_str(), "INSERT" | "UPDATE" | "DELETE")
                    || (w == "REPLACE" && into);
                if depth == 0 && write {
                    return Err(format!(
                        "only reads are allowed: this statement would {w}; send a SELECT"
                    ));
                }
                if called && REFUSED_FUNCTIONS.contains(&w.as_str()) {
                    return Err(format!(
                        "the function {} is not allowed here",
                        w.to_lowercase()
                    ));
                }
            }
            _ => {}
        }
    }
    // Only semicolons (and comments) follow the statement: cut them off.
    let statement = match first_semicolon.map(|n| &toks[n]) {
        Some(Token::Semicolon(at)) => sql[..*at].trim_end(),
        _ => sql,
    };
    Ok(statement)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn one_select_or_with_select_is_accepted() {
        for sql in [
            "SELECT count(*) FROM reviews",
            "  select 1;  ",
            "SELECT 1;;",
            "WITH r AS (SELECT * FROM reviews) SELECT count(*) FROM r",
            "VALUES (1), (2)",
            "SELECT replace(body, 'a', 'b') FROM findings",
            "SELECT 'DELETE FROM reviews; DROP TABLE x' AS s",
            "SELECT \"trigger\" FROM reviews -- delete; later",
            "/* insert */ SELECT 1",
        ] {
            assert!(check_select(sql).is_ok(), "{sql}: {:?}", check_select(sql));
        }
        assert_eq!(check_select("SELECT 1 ;  ; "), Ok("SELECT 1"));
    }

    #[test]
    fn writes_pragmas_attach_and_several_statements_are_refused() {
        for (sql, says) in [
            ("", "empty"),
            ("  -- nothing\n", "empty"),
            ("DELETE FROM reviews", "DELETE statement"),
            ("delete from reviews", "DELETE statement"),
            (
                "INSERT INTO repos VALUES ('a', 1, null, null, 0, 0)",
                "INSERT",
            ),
            ("UPDATE reviews SET status = 'failed'", "UPDATE"),
            ("REPLACE INTO settings VALUES ('a', 'b')", "REPLACE"),
            ("DROP TABLE reviews", "DROP"),
            ("PRAGMA query_only = OFF", "PRAGMA"),
            ("ATTACH DATABASE '/tmp/x.db' AS x", "ATTACH"),
            ("VACUUM", "VACUUM"),
            ("SELECT 1; DELETE FROM reviews", "only one statement"),
            ("SELECT 1; SELECT 2", "only one statement"),
            (
                "WITH r AS (SELECT id FROM reviews) DELETE FROM reviews WHERE id IN r",
                "DELETE",
            ),
            ("SELECT randomblob(1000000000)", "randomblob"),
            ("SELECT load_extension('x')", "load_extension"),
            ("(SELECT 1)", "something else"),
        ] {
            match check_select(sql) {
                Err(m) => assert!(m.contains(says), "{sql}: {m}"),
                Ok(s) => panic!("{sql} accepted as {s}"),
            }
        }
    }

    #[test]
    fn quotes_and_comments_hide_their_keywords() {
        assert_eq!(
            tokens("SELECT 'it''s; DELETE' , [a;b] -- x;\n/* y; */ FROM t"),
            vec![
                Token::Word("SELECT".into()),
                Token::Other,
                Token::Other,
                Token::Other,
                Token::Word("FROM".into()),
                Token::Word("T".into()),
            ]
        );
    }

    #[tokio::test]
    async fn the_read_only_connection_refuses_writes_that_pass_the_scanner() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/review.db", dir.path().display());
        let store = Store::open(&url).await.unwrap();
        let mut conn = SqliteConnection::connect_with(&store.read_only)
            .await
            .unwrap();
        let err = run(&mut conn, "DELETE FROM reviews").await.unwrap_err();
        assert!(err.to_string().contains("readonly"), "{err}");
    }

    #[tokio::test]
    async fn an_in_memory_store_is_queried_in_memory() {
        let store = Store::open("sqlite::memory:").await.unwrap();
        let r = store
            .read_query("SELECT count(*) FROM reviews")
            .await
            .unwrap();
        assert_eq!(r.rows, vec![vec![Value::from(0)]]);
    }

    #[test]
    fn long_cells_are_cut() {
        let long = "é".repeat(READ_QUERY_CELL_CHARS + 5);
        let c = cut(long);
        assert_eq!(c.chars().count(), READ_QUERY_CELL_CHARS + 1);
        assert!(c.ends_with('…'));
        assert_eq!(cut("short".into()), "short");
    }
}
