//! Column-by-column mapping of rows into the domain types.

use review_domain::{FindingRow, RepoRow, ReviewRow};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

pub(crate) fn repo_from_row(r: &SqliteRow) -> Result<RepoRow, sqlx::Error> {
    Ok(RepoRow {
        full_name: r.try_get("full_name")?,
        installation_id: r.try_get("installation_id")?,
        prompt: r.try_get("prompt")?,
        model: r.try_get("model")?,
        enabled: r.try_get("enabled")?,
        created_at: r.try_get("created_at")?,
    })
}

pub(crate) fn review_from_row(r: &SqliteRow) -> Result<ReviewRow, sqlx::Error> {
    Ok(ReviewRow {
        id: r.try_get("id")?,
        repo_full_name: r.try_get("repo_full_name")?,
        pr_number: r.try_get("pr_number")?,
        title: r.try_get("title")?,
        session_id: r.try_get("session_id")?,
        status: r.try_get("status")?,
        error: r.try_get("error")?,
        trigger: r.try_get("trigger")?,
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

pub(crate) fn finding_from_row(r: &SqliteRow) -> Result<FindingRow, sqlx::Error> {
    Ok(FindingRow {
        id: r.try_get("id")?,
        review_id: r.try_get("review_id")?,
        repo_full_name: r.try_get("repo_full_name")?,
        pr_number: r.try_get("pr_number")?,
        kind: r.try_get("kind")?,
        severity: r.try_get("severity")?,
        event: r.try_get("event")?,
        path: r.try_get("path")?,
        line: r.try_get("line")?,
        body: r.try_get("body")?,
        github_review_id: r.try_get("github_review_id")?,
        github_comment_id: r.try_get("github_comment_id")?,
        created_at: r.try_get("created_at")?,
    })
}
