//! Reading rows into the domain types, and running the queries that return them.
//!
//! Each field of a row type is read from the column of its name through [`Column`]: plain
//! values as sqlx decodes them, and the columns that hold one of the spec's closed sets (review
//! status and trigger, finding kind, severity and event) parsed into the domain's enums. Text
//! outside the set is a [`StoreError::UnknownValue`], never a silent default.

use crate::{Result, Store, StoreError};
use review_domain::{
    DroppedFindingRow, FindingKind, FindingOutcome, FindingRow, RepoRow, ReviewEvent, ReviewRow,
    ReviewStatus, Severity, SkillMetaRow, Trigger,
};
use sqlx::any::{AnyArguments, AnyRow};
use sqlx::{Any, Row};

/// A statement of this crate with its `$N` parameters bound (both backends read `$N`).
pub(crate) type Query<'q> = sqlx::query::Query<'q, Any, AnyArguments<'q>>;

/// Reads one row into a value: the `*_from_row` functions below, or a closure.
pub(crate) type ReadRow<T> = fn(&AnyRow) -> Result<T>;

/// A value read from the column `column` of a row of `table` (the table names the column in
/// errors).
pub(crate) trait Column: Sized {
    fn read(row: &AnyRow, table: &'static str, column: &'static str) -> Result<Self>;
}

/// Plain values: what sqlx decodes.
macro_rules! plain_columns {
    ($($ty:ty),+) => {$(
        impl Column for $ty {
            fn read(row: &AnyRow, _table: &'static str, column: &'static str) -> Result<Self> {
                Ok(row.try_get(column)?)
            }
        }
    )+};
}

plain_columns!(i64, Option<i64>, Option<f64>, String, Option<String>);

/// Enums of the domain: the column's text parsed, null only where the field is an `Option`.
macro_rules! enum_columns {
    ($($ty:ty),+) => {$(
        impl Column for $ty {
            fn read(row: &AnyRow, table: &'static str, column: &'static str) -> Result<Self> {
                let text: String = row.try_get(column)?;
                parse(table, column, &text)
            }
        }

        impl Column for Option<$ty> {
            fn read(row: &AnyRow, table: &'static str, column: &'static str) -> Result<Self> {
                let text: Option<String> = row.try_get(column)?;
                text.map(|t| parse(table, column, &t)).transpose()
            }
        }
    )+};
}

enum_columns!(
    ReviewStatus,
    Trigger,
    FindingKind,
    Severity,
    ReviewEvent,
    FindingOutcome
);

fn parse<T: std::str::FromStr<Err = String>>(
    table: &'static str,
    column: &'static str,
    text: &str,
) -> Result<T> {
    text.parse().map_err(|message| StoreError::UnknownValue {
        table,
        column,
        message,
    })
}

/// `Type [field, ...]` read from `row` of `table`, each field from the column of its name
/// (`field = "column"` where they differ); the fields after `derived` start at their default
/// and are set by the caller from the others.
macro_rules! from_row {
    ($row:expr, $table:literal, $ty:ident [$($field:ident $(= $column:literal)?),+ $(,)?]
        $(derived [$($derived:ident),+])?) => {
        Ok($ty {
            $($field: Column::read($row, $table, from_row!(@column $field $($column)?))?,)+
            $($($derived: Default::default(),)+)?
        })
    };
    (@column $field:ident) => { stringify!($field) };
    (@column $field:ident $column:literal) => { $column };
}

pub(crate) fn repo_from_row(r: &AnyRow) -> Result<RepoRow> {
    from_row!(r, "repos", RepoRow [full_name, installation_id, prompt, model, enabled, created_at, min_severity, monthly_budget])
}

pub(crate) fn review_from_row(r: &AnyRow) -> Result<ReviewRow> {
    let row: Result<ReviewRow> = from_row!(r, "reviews", ReviewRow [
        id, repo_full_name, pr_number, title, session_id, status, error, trigger, attempt, cost,
        tokens, model, check_run_id, patch_id, created_at, completed_at,
    ] derived [failure_class]);
    row.map(ReviewRow::with_failure_class)
}

pub(crate) fn dropped_from_row(r: &AnyRow) -> Result<DroppedFindingRow> {
    from_row!(r, "dropped_findings", DroppedFindingRow [
        id, review_id, repo_full_name, pr_number, path, line, severity, body, reason, created_at,
    ])
}

pub(crate) fn finding_from_row(r: &AnyRow) -> Result<FindingRow> {
    from_row!(r, "findings", FindingRow [
        id, review_id, repo_full_name, pr_number, kind, severity, event, path, line, body,
        github_review_id, github_comment_id, created_at, fingerprint, outcome, outcome_at,
        outcome_sha, outcome_reason,
    ])
}

pub(crate) fn skill_from_row(r: &AnyRow) -> Result<SkillMetaRow> {
    from_row!(r, "skills", SkillMetaRow [
        name, source_url, owner, repo, path, git_ref = "ref", description, enabled, created_at,
    ])
}

impl Store {
    /// Every row of `q`, read by `read`.
    pub(crate) async fn all<T>(&self, q: Query<'_>, read: ReadRow<T>) -> Result<Vec<T>> {
        let rows = q.fetch_all(&self.pool).await?;
        rows.iter().map(read).collect()
    }

    /// The row of `q` if there is one, read by `read`.
    pub(crate) async fn optional<T>(&self, q: Query<'_>, read: ReadRow<T>) -> Result<Option<T>> {
        let row = q.fetch_optional(&self.pool).await?;
        row.as_ref().map(read).transpose()
    }

    /// Whether `query` (a `SELECT count(*) ...`) counts one row or more.
    pub(crate) async fn any(&self, query: Query<'_>) -> Result<bool> {
        let n: i64 = query.fetch_one(&self.pool).await?.try_get(0)?;
        Ok(n > 0)
    }

    /// How many rows `query` (an INSERT, UPDATE or DELETE) changed.
    pub(crate) async fn changed(&self, query: Query<'_>) -> Result<u64> {
        Ok(query.execute(&self.pool).await?.rows_affected())
    }
}
