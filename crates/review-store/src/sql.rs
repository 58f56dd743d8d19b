//! The statement builder of the queries whose SQL is assembled at run time (the stats and the
//! review list), and the few spellings that differ between SQLite and PostgreSQL
//! (docs/architecture.md, "Two database backends").
//!
//! sqlx's `QueryBuilder` writes `?` placeholders for the `Any` driver, which PostgreSQL refuses,
//! so [`Sql`] writes `$N`, which both backends read, and keeps the values to bind beside the
//! text; [`bound!`] binds them, [`all`], [`one`] and [`scalar`] run the result.

use crate::{Backend, Result};
use review_domain::StatsFilter;
use sqlx::any::AnyRow;
use sqlx::{Any, AnyPool, FromRow};

/// A value bound to a [`Sql`] statement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Bind {
    /// An integer.
    Int(i64),
    /// A text.
    Text(String),
}

/// A statement being built: SQL with `$N` placeholders (both backends read them; sqlx's
/// `QueryBuilder` writes `?` for the `Any` driver, which PostgreSQL refuses) and its values.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sql {
    /// The SQL so far.
    pub(crate) text: String,
    /// The values of `$1`, `$2`, ... in order.
    pub(crate) binds: Vec<Bind>,
}

impl Sql {
    /// A statement starting with `text`.
    pub(crate) fn new(text: impl Into<String>) -> Self {
        Sql {
            text: text.into(),
            binds: Vec::new(),
        }
    }

    /// Appends `text` as it is.
    pub(crate) fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    /// Appends the placeholder of `value`, bound when the statement runs.
    pub(crate) fn push_bind(&mut self, value: impl Into<Bind>) -> &mut Self {
        self.binds.push(value.into());
        self.text.push_str(&format!("${}", self.binds.len()));
        self
    }
}

impl From<i64> for Bind {
    fn from(v: i64) -> Self {
        Bind::Int(v)
    }
}

impl From<String> for Bind {
    fn from(v: String) -> Self {
        Bind::Text(v)
    }
}

/// Binds the values of `$sql` to `$query` (a `query`, `query_as` or `query_scalar`).
macro_rules! bound {
    ($query:expr, $sql:expr) => {{
        let mut q = $query;
        for b in &$sql.binds {
            q = match b {
                $crate::sql::Bind::Int(v) => q.bind(*v),
                $crate::sql::Bind::Text(v) => q.bind(v.as_str()),
            };
        }
        q
    }};
}
pub(crate) use bound;

/// Every row of a built query, as `T`.
pub(crate) async fn all<T>(pool: &AnyPool, q: &Sql) -> Result<Vec<T>>
where
    T: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
{
    Ok(bound!(sqlx::query_as::<Any, T>(&q.text), q)
        .fetch_all(pool)
        .await?)
}

/// The one row of a built query (an aggregate), as `T`.
pub(crate) async fn one<T>(pool: &AnyPool, q: &Sql) -> Result<T>
where
    T: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
{
    Ok(bound!(sqlx::query_as::<Any, T>(&q.text), q)
        .fetch_one(pool)
        .await?)
}

/// The one value of a built query (an aggregate), if there is a row.
pub(crate) async fn scalar(pool: &AnyPool, q: &Sql) -> Result<Option<i64>> {
    Ok(bound!(sqlx::query_scalar::<Any, i64>(&q.text), q)
        .fetch_optional(pool)
        .await?)
}

/// The few SQL spellings that differ between SQLite and PostgreSQL in the stats queries
/// (docs/architecture.md, "Two database backends"). Everything else is written once.
impl Backend {
    /// `YYYY-MM-DD` of the UTC day number `day` (days since the epoch).
    pub(crate) fn day_text(self, day: &str) -> String {
        match self {
            Backend::Sqlite => format!("date({day} * 86400, 'unixepoch')"),
            Backend::Postgres => {
                format!("to_char(DATE '1970-01-01' + CAST({day} AS INTEGER), 'YYYY-MM-DD')")
            }
        }
    }

    /// The sum of a REAL column, 0.0 over no rows or only nulls.
    pub(crate) fn total(self, column: &str) -> String {
        match self {
            Backend::Sqlite => format!("total({column})"),
            Backend::Postgres => format!("coalesce(sum({column}), 0)"),
        }
    }

    /// SQLite's hint to read `reviews` through `index` (its planner picks a worse one at 1M
    /// rows, bench/review-stats); PostgreSQL's planner needs none.
    pub(crate) fn indexed_by(self, index: &str) -> String {
        match self {
            Backend::Sqlite => format!(" INDEXED BY {index}"),
            Backend::Postgres => String::new(),
        }
    }

    /// An aggregate of `value` over a group into one list sorted ascending.
    pub(crate) fn sorted_list(self, value: &str) -> String {
        match self {
            Backend::Sqlite => format!("json_group_array({value} ORDER BY {value})"),
            Backend::Postgres => format!("array_agg({value} ORDER BY {value})"),
        }
    }

    /// Element `rank` (1-based) of a [`Backend::sorted_list`].
    pub(crate) fn nth(self, list: &str, rank: &str) -> String {
        match self {
            Backend::Sqlite => format!("{list} ->> ({rank} - 1)"),
            Backend::Postgres => format!("{list}[CAST({rank} AS INTEGER)]"),
        }
    }
}

/// ` AND <repo> AND <model>` of `f` on alias `r`.
pub(crate) fn push_repo_model(q: &mut Sql, f: &StatsFilter) {
    if let Some(repo) = &f.repo {
        q.push(" AND r.repo_full_name = ").push_bind(repo.clone());
    }
    if let Some(model) = &f.model {
        q.push(" AND r.model = ").push_bind(model.clone());
    }
}

/// ` AND <whole filter>` on alias `r`, for queries that never use the rollups.
pub(crate) fn push_full_filter(q: &mut Sql, f: &StatsFilter) {
    if let Some(s) = f.since {
        q.push(" AND r.created_at >= ").push_bind(s);
    }
    if let Some(u) = f.until {
        q.push(" AND r.created_at < ").push_bind(u);
    }
    push_repo_model(q, f);
}
