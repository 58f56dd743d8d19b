//! Column-by-column mapping of rows into the domain types. The columns that hold one of the
//! spec's closed sets (review status and trigger, finding kind, severity and event) are parsed
//! into the domain's enums; text outside the set is a [`StoreError::UnknownValue`], never a
//! silent default.

use crate::{Result, StoreError};
use review_domain::{FindingRow, RepoRow, ReviewRow};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;
use std::str::FromStr;

/// The text of `table.column` parsed into `T`.
fn enum_column<T: FromStr<Err = String>>(
    r: &SqliteRow,
    table: &'static str,
    column: &'static str,
) -> Result<T> {
    let text: String = r.try_get(column)?;
    parse_enum(table, column, &text)
}

/// The nullable text of `table.column` parsed into `T`; null stays None.
fn optional_enum_column<T: FromStr<Err = String>>(
    r: &SqliteRow,
    table: &'static str,
    column: &'static str,
) -> Result<Option<T>> {
    let text: Option<String> = r.try_get(column)?;
    text.map(|t| parse_enum(table, column, &t)).transpose()
}

fn parse_enum<T: FromStr<Err = String>>(
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

pub(crate) fn repo_from_row(r: &SqliteRow) -> Result<RepoRow> {
    Ok(RepoRow {
        full_name: r.try_get("full_name")?,
        installation_id: r.try_get("installation_id")?,
        prompt: r.try_get("prompt")?,
        model: r.try_get("model")?,
        enabled: r.try_get("enabled")?,
        created_at: r.try_get("created_at")?,
    })
}

pub(crate) fn review_from_row(r: &SqliteRow) -> Result<ReviewRow> {
    Ok(ReviewRow {
        id: r.try_get("id")?,
        repo_full_name: r.try_get("repo_full_name")?,
        pr_number: r.try_get("pr_number")?,
        title: r.try_get("title")?,
        session_id: r.try_get("session_id")?,
        status: enum_column(r, "reviews", "status")?,
        error: r.try_get("error")?,
        trigger: optional_enum_column(r, "reviews", "trigger")?,
        attempt: r.try_get("attempt")?,
        cost: r.try_get("cost")?,
        tokens: r.try_get("tokens")?,
        model: r.try_get("model")?,
        check_run_id: r.try_get("check_run_id")?,
        patch_id: r.try_get("patch_id")?,
        created_at: r.try_get("created_at")?,
        completed_at: r.try_get("completed_at")?,
    })
}

pub(crate) fn finding_from_row(r: &SqliteRow) -> Result<FindingRow> {
    Ok(FindingRow {
        id: r.try_get("id")?,
        review_id: r.try_get("review_id")?,
        repo_full_name: r.try_get("repo_full_name")?,
        pr_number: r.try_get("pr_number")?,
        kind: enum_column(r, "findings", "kind")?,
        severity: optional_enum_column(r, "findings", "severity")?,
        event: optional_enum_column(r, "findings", "event")?,
        path: r.try_get("path")?,
        line: r.try_get("line")?,
        body: r.try_get("body")?,
        github_review_id: r.try_get("github_review_id")?,
        github_comment_id: r.try_get("github_comment_id")?,
        created_at: r.try_get("created_at")?,
    })
}
