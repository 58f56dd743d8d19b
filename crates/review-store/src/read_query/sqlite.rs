//! The chat tool's window on a SQLite database (the module docs of `read_query`).
//!
//! The guard is SQLite's own machinery, not a scanner of ours (a scanner missed statements
//! hidden inside bind-parameter tokens such as `$1(...)`):
//! 1. exactly one statement is compiled ([`rusqlite::Batch`]); a second one after it, bind
//!    parameters, or a statement SQLite does not call read-only is refused before anything
//!    runs. Compiling executes nothing;
//! 2. an authorizer callback allows only `SELECT`, recursive CTEs, function calls other than
//!    [`REFUSED_FUNCTIONS`], and column reads of anything but [`HIDDEN_TABLES`], SQLite's own
//!    tables and the virtual-table modules. Everything else is refused while compiling:
//!    `ATTACH`, `PRAGMA` and the pragma functions, `sqlite_schema`, `dbstat`, the settings
//!    table (it holds the API keys, which must never reach a model provider) whether named
//!    directly or through a view, a CTE, a subquery or `count(*)`;
//! 3. the connection is opened read-only with `PRAGMA query_only = ON`, so SQLite itself
//!    refuses any write that got past the first two;
//! 4. `SQLITE_LIMIT_LENGTH` caps every string or blob a query builds at
//!    [`READ_QUERY_MAX_VALUE_BYTES`] (one `printf('%.*c', N, 'x')` once took the server to
//!    600 MB), and a progress handler plus an interrupt at [`READ_QUERY_TIMEOUT`] (or when
//!    the caller goes away) stop long statements.
//!
//! The connection is rusqlite's (the same SQLite library sqlx links): sqlx offers no
//! authorizer, statement tail or limit API.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::ValueRef;
use rusqlite::{Batch, Connection, InterruptHandle, OpenFlags};
use serde_json::Value;

use super::{
    HIDDEN_TABLES, READ_QUERY_MAX_ROWS, READ_QUERY_MAX_SQL_BYTES, READ_QUERY_MAX_VALUE_BYTES,
    READ_QUERY_TIMEOUT, ReadQueryResult, cut,
};
use crate::{Result, StoreError};

/// Functions refused at compile time: extension loading, and functions that reach outside
/// the database where SQLite was built with them.
pub const REFUSED_FUNCTIONS: &[&str] = &[
    "load_extension",
    "fts3_tokenizer",
    "readfile",
    "writefile",
    "edit",
];

/// Table-valued functions over a value (not a table) that queries may use, though they are
/// virtual-table modules.
const VALUE_TABLES: &[&str] = &["json_each", "json_tree"];

/// SQLite virtual-machine instructions between two checks of the deadline.
const PROGRESS_STEPS: i32 = 1000;

/// Page cache of the chat connection, in KiB (negative `cache_size`): sorts larger than this
/// spill to temporary files instead of memory.
const CACHE_KIB: i64 = 8 * 1024;

/// Where the chat connection opens a SQLite database: the store's file, or the shared-cache
/// name of an in-memory store (so both see the same data).
#[derive(Debug, Clone)]
pub(crate) struct SqliteFile {
    filename: PathBuf,
    in_memory: bool,
}

impl SqliteFile {
    /// The database the writer pool opens with `options`.
    pub(crate) fn new(options: &sqlx::sqlite::SqliteConnectOptions, in_memory: bool) -> Self {
        SqliteFile {
            filename: options.get_filename().to_path_buf(),
            in_memory,
        }
    }

    fn open(&self) -> rusqlite::Result<Connection> {
        let mut flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if self.in_memory {
            flags |= OpenFlags::SQLITE_OPEN_MEMORY | OpenFlags::SQLITE_OPEN_SHARED_CACHE;
        }
        Connection::open_with_flags(&self.filename, flags)
    }
}

/// [`crate::Store::read_query`] on SQLite: the guard of the module docs, on a blocking thread;
/// dropping the future interrupts the statement.
pub(super) async fn read_query(database: &SqliteFile, sql: &str) -> Result<ReadQueryResult> {
    let sql = sql.to_owned();
    let database = database.clone();
    let deadline = Instant::now() + READ_QUERY_TIMEOUT;
    let stop = Arc::new(AtomicBool::new(false));
    let interrupt: Arc<Mutex<Option<InterruptHandle>>> = Arc::new(Mutex::new(None));
    let guard = InterruptOnDrop {
        stop: stop.clone(),
        handle: interrupt.clone(),
    };
    let task = tokio::task::spawn_blocking(move || {
        let (conn, refused) = open_guarded(&database, stop, deadline)?;
        if let Ok(mut slot) = interrupt.lock() {
            *slot = Some(conn.get_interrupt_handle());
        }
        run(&conn, &refused, &sql, deadline)
    });
    tokio::pin!(task);
    let joined = tokio::select! {
        r = &mut task => r,
        _ = tokio::time::sleep_until(deadline.into()) => {
            guard.fire();
            task.await
        }
    };
    drop(guard);
    joined.map_err(|e| StoreError::query_from(format!("the query task failed: {e}"), e))?
}

/// Stops the statement when dropped (the caller went away) or fired (the deadline passed):
/// sets the progress handler's flag and calls `sqlite3_interrupt`.
struct InterruptOnDrop {
    stop: Arc<AtomicBool>,
    handle: Arc<Mutex<Option<InterruptHandle>>>,
}

impl InterruptOnDrop {
    fn fire(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Ok(slot) = self.handle.lock()
            && let Some(h) = slot.as_ref()
        {
            h.interrupt();
        }
    }
}

impl Drop for InterruptOnDrop {
    fn drop(&mut self) {
        self.fire();
    }
}

/// A read-only connection with the limits, the authorizer and the progress handler set.
/// The second value holds the first refusal of the authorizer, in words for the model.
fn open_guarded(
    database: &SqliteFile,
    stop: Arc<AtomicBool>,
    deadline: Instant,
) -> Result<(Connection, Refusal)> {
    let conn = database.open().map_err(sqlite_error)?;
    conn.busy_timeout(READ_QUERY_TIMEOUT)
        .map_err(sqlite_error)?;
    conn.execute_batch(&format!(
        "PRAGMA query_only = ON; PRAGMA cache_size = -{CACHE_KIB}; PRAGMA temp_store = FILE;"
    ))
    .map_err(sqlite_error)?;
    conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, READ_QUERY_MAX_VALUE_BYTES);
    conn.set_limit(Limit::SQLITE_LIMIT_SQL_LENGTH, READ_QUERY_MAX_SQL_BYTES);
    conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0);
    conn.set_limit(Limit::SQLITE_LIMIT_COLUMN, 200);
    conn.set_limit(Limit::SQLITE_LIMIT_EXPR_DEPTH, 200);
    conn.set_limit(Limit::SQLITE_LIMIT_COMPOUND_SELECT, 50);
    let denied = unreadable_names(&conn)?;
    let refused = Refusal::default();
    let first = refused.clone();
    conn.authorizer(Some(move |ctx: AuthContext<'_>| {
        let verdict = authorize(&denied, &ctx);
        if verdict == Authorization::Deny {
            first.record(|| refusal(&ctx.action));
        }
        verdict
    }));
    conn.progress_handler(
        PROGRESS_STEPS,
        Some(move || stop.load(Ordering::Relaxed) || Instant::now() >= deadline),
    );
    Ok((conn, refused))
}

/// The first action the authorizer refused, described for the model.
#[derive(Debug, Clone, Default)]
struct Refusal(Arc<Mutex<Option<String>>>);

impl Refusal {
    fn record(&self, describe: impl FnOnce() -> String) {
        if let Ok(mut slot) = self.0.lock()
            && slot.is_none()
        {
            *slot = Some(describe());
        }
    }

    fn take(&self) -> Option<String> {
        self.0.lock().ok().and_then(|mut s| s.take())
    }
}

/// The names a query may not read (module docs, layer 2): [`HIDDEN_TABLES`], SQLite's own
/// `sqlite_*` tables, the pragma functions (`pragma_*`), and every virtual-table module of
/// this SQLite build (`dbstat`, `sqlite_dbpage`, ...; `PRAGMA module_list`) except
/// [`VALUE_TABLES`]. A deny list, not an allow list, because SQLite also reports reads of a
/// query's own CTE names, which only the query knows.
fn unreadable_names(conn: &Connection) -> Result<HashSet<String>> {
    let mut denied: HashSet<String> = HIDDEN_TABLES.iter().map(|t| (*t).to_owned()).collect();
    denied.extend(KNOWN_MODULES.iter().map(|m| (*m).to_owned()));
    let modules = conn
        .prepare("SELECT name FROM pragma_module_list")
        .and_then(|mut stmt| {
            stmt.query_map([], |row| row.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()
        });
    match modules {
        Ok(names) => denied.extend(names.into_iter().map(|n| n.to_ascii_lowercase())),
        Err(e) => tracing::debug!(error = %e, "no module list; using the built-in one"),
    }
    for value_table in VALUE_TABLES {
        denied.remove(*value_table);
    }
    Ok(denied)
}

/// Virtual-table modules SQLite builds may carry, denied even when `PRAGMA module_list` is
/// not compiled in.
const KNOWN_MODULES: &[&str] = &[
    "dbstat",
    "sqlite_dbpage",
    "sqlite_stmt",
    "fts3",
    "fts4",
    "fts5",
    "fts3tokenize",
    "fts5vocab",
    "rtree",
    "rtree_i32",
    "geopoly",
    "completion",
    "carray",
    "generate_series",
    "zipfile",
    "csv",
    "fsdir",
];

fn is_denied(denied: &HashSet<String>, table: &str) -> bool {
    let table = table.to_ascii_lowercase();
    denied.contains(&table) || table.starts_with("sqlite_") || table.starts_with("pragma_")
}

/// The authorizer of the chat connection (module docs, layer 2): called by SQLite for each
/// action while a statement compiles.
fn authorize(denied: &HashSet<String>, ctx: &AuthContext<'_>) -> Authorization {
    let allowed = match ctx.action {
        AuthAction::Select | AuthAction::Recursive => true,
        AuthAction::Function { function_name } => {
            !REFUSED_FUNCTIONS.contains(&function_name.to_ascii_lowercase().as_str())
        }
        AuthAction::Read { table_name, .. } => {
            !is_denied(denied, table_name) && !matches!(ctx.database_name, Some("temp"))
        }
        _ => false,
    };
    if allowed {
        Authorization::Allow
    } else {
        Authorization::Deny
    }
}

/// What a refused action was, in words for the model.
fn refusal(action: &AuthAction<'_>) -> String {
    match action {
        AuthAction::Read { table_name, .. } if HIDDEN_TABLES.contains(table_name) => {
            format!("the {table_name} table is not readable here (it holds secrets)")
        }
        AuthAction::Read { table_name, .. } => format!(
            "{table_name} is not readable here: query the tables described in the instructions"
        ),
        AuthAction::Function { function_name } => {
            format!("the function {function_name} is not allowed here")
        }
        AuthAction::Pragma { pragma_name, .. } => {
            format!("PRAGMA {pragma_name} is not allowed: send one SELECT statement")
        }
        AuthAction::Attach { .. } | AuthAction::Detach { .. } => {
            "ATTACH and DETACH are not allowed: send one SELECT statement".to_owned()
        }
        other => format!(
            "only reads are allowed: this statement would {}; send one SELECT statement",
            action_name(other)
        ),
    }
}

fn action_name(action: &AuthAction<'_>) -> String {
    let debug = format!("{action:?}");
    let name = debug.split([' ', '{', '(']).next().unwrap_or("write");
    name.to_ascii_uppercase()
}

/// Compiles `sql` (one statement, module docs layer 1) and reads at most
/// [`READ_QUERY_MAX_ROWS`] rows of it.
fn run(
    conn: &Connection,
    refused: &Refusal,
    sql: &str,
    deadline: Instant,
) -> Result<ReadQueryResult> {
    let mut batch = Batch::new(conn, sql);
    let mut statement = match batch.next() {
        Ok(Some(s)) => s,
        Ok(None) => {
            return Err(StoreError::QueryRefused(
                "the query is empty: send one SELECT statement".into(),
            ));
        }
        Err(e) => {
            return Err(refused
                .take()
                .map(StoreError::QueryRefused)
                .unwrap_or_else(|| sqlite_error(e)));
        }
    };
    if !matches!(batch.next(), Ok(None)) {
        return Err(StoreError::QueryRefused(
            "only one statement is allowed: send a single SELECT without a second statement after `;`"
                .into(),
        ));
    }
    if statement.parameter_count() > 0 {
        return Err(StoreError::QueryRefused(
            "bind parameters ($1, ?, :name, @name) are not allowed: write the values into the SELECT"
                .into(),
        ));
    }
    if !statement.readonly() {
        return Err(StoreError::QueryRefused(
            "only reads are allowed: send one SELECT statement".into(),
        ));
    }
    let columns: Vec<String> = statement
        .column_names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let width = columns.len();
    let mut rows = Vec::new();
    let mut truncated = false;
    let mut cursor = statement.raw_query();
    loop {
        let row = match cursor.next() {
            Ok(Some(row)) => row,
            Ok(None) => break,
            Err(e) if Instant::now() >= deadline || is_interrupt(&e) => {
                tracing::debug!(error = %e, "read-only query interrupted by the time cap");
                return Err(StoreError::QueryTimeout(READ_QUERY_TIMEOUT));
            }
            Err(e) => return Err(sqlite_error(e)),
        };
        if rows.len() == READ_QUERY_MAX_ROWS {
            truncated = true;
            break;
        }
        rows.push(
            (0..width)
                .map(|i| row.get_ref(i).map(cell).unwrap_or(Value::Null))
                .collect(),
        );
    }
    Ok(ReadQueryResult {
        columns,
        rows,
        truncated,
        note: truncated.then(super::truncated_note),
    })
}

fn is_interrupt(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted)
}

fn sqlite_error(e: rusqlite::Error) -> StoreError {
    StoreError::query_from(e.to_string(), e)
}

fn cell(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        ValueRef::Text(t) => Value::String(cut(&String::from_utf8_lossy(t))),
        ValueRef::Blob(b) => Value::String(format!("<blob of {} bytes>", b.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn refusals_name_what_was_refused() {
        assert_eq!(
            refusal(&AuthAction::Read {
                table_name: "settings",
                column_name: "value"
            }),
            "the settings table is not readable here (it holds secrets)"
        );
        assert!(
            refusal(&AuthAction::Delete {
                table_name: "reviews"
            })
            .contains("DELETE")
        );
    }
}
