//! Copying a whole store into an empty one (`review-server db copy`; README, "SQLite or
//! PostgreSQL"): how an install moves from its SQLite file to PostgreSQL with its history.
//!
//! Every table the dashboard and the reviews read is copied as it is, ids included, in batches
//! inside one transaction on the target, so a failure leaves the target as empty as it was. The
//! target's rollups are kept by its own triggers as the rows arrive, and its id sequences are
//! moved past the copied ids. The work queue is not copied: a review that was pending or
//! running in the source has no replica to run it and is failed as interrupted by the first
//! replica that starts on the target.

use crate::{Backend, Result, Store, StoreError};
use sqlx::any::AnyRow;
use sqlx::{Any, Row};

/// How a column is read and bound.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Int,
    Real,
    Text,
    Blob,
}

use Kind::{Blob, Int, Real, Text};

/// The tables copied, parents first, with their columns.
const TABLES: &[(&str, &[(&str, Kind)])] = &[
    (
        "repos",
        &[
            ("full_name", Text),
            ("installation_id", Int),
            ("prompt", Text),
            ("model", Text),
            ("enabled", Int),
            ("created_at", Int),
            ("min_severity", Text),
            ("monthly_budget", Real),
        ],
    ),
    (
        "reviews",
        &[
            ("id", Int),
            ("repo_full_name", Text),
            ("pr_number", Int),
            ("title", Text),
            ("session_id", Text),
            ("status", Text),
            ("error", Text),
            ("\"trigger\"", Text),
            ("attempt", Int),
            ("cost", Real),
            ("tokens", Int),
            ("model", Text),
            ("check_run_id", Int),
            ("patch_id", Text),
            ("created_at", Int),
            ("completed_at", Int),
            ("head_sha", Text),
        ],
    ),
    (
        "findings",
        &[
            ("id", Int),
            ("review_id", Int),
            ("repo_full_name", Text),
            ("pr_number", Int),
            ("kind", Text),
            ("severity", Text),
            ("event", Text),
            ("path", Text),
            ("line", Int),
            ("body", Text),
            ("github_review_id", Int),
            ("github_comment_id", Int),
            ("created_at", Int),
            ("fingerprint", Text),
            ("outcome", Text),
            ("outcome_at", Int),
            ("outcome_sha", Text),
            ("outcome_reason", Text),
        ],
    ),
    (
        "dropped_findings",
        &[
            ("id", Int),
            ("review_id", Int),
            ("repo_full_name", Text),
            ("pr_number", Int),
            ("path", Text),
            ("line", Int),
            ("severity", Text),
            ("body", Text),
            ("reason", Text),
            ("created_at", Int),
        ],
    ),
    (
        "skills",
        &[
            ("name", Text),
            ("source_url", Text),
            ("owner", Text),
            ("repo", Text),
            ("path", Text),
            ("\"ref\"", Text),
            ("description", Text),
            ("enabled", Int),
            ("blob", Blob),
            ("created_at", Int),
        ],
    ),
    ("settings", &[("key", Text), ("value", Text)]),
    (
        "budget_notices",
        &[
            ("repo_full_name", Text),
            ("month", Text),
            ("pr_number", Int),
            ("posted_at", Int),
        ],
    ),
    ("deliveries", &[("id", Text), ("received_at", Int)]),
    (
        "transcripts",
        &[("session_id", Text), ("doc", Text), ("updated_at", Int)],
    ),
    (
        "review_inbox",
        &[
            ("id", Int),
            ("repo_full_name", Text),
            ("pr_number", Int),
            ("title", Text),
            ("\"trigger\"", Text),
            ("attempt", Int),
            ("job", Text),
            ("received_at", Int),
            ("head_sha", Text),
        ],
    ),
];

/// Rows per INSERT statement.
const BATCH: usize = 200;

/// One value read from the source.
enum Value {
    Int(Option<i64>),
    Real(Option<f64>),
    Text(Option<String>),
    Blob(Option<Vec<u8>>),
}

fn read(row: &AnyRow, i: usize, kind: Kind) -> Result<Value> {
    Ok(match kind {
        Int => Value::Int(row.try_get(i)?),
        Real => Value::Real(row.try_get(i)?),
        Text => Value::Text(row.try_get(i)?),
        Blob => Value::Blob(row.try_get(i)?),
    })
}

impl Store {
    /// Copies every row of this store into `target`, which must be empty (no repo, review or
    /// setting; a fresh database opened with [`Store::open`]). Returns `(table, rows)` in copy
    /// order. Errors: [`StoreError::Query`] when the target is not empty; the database's
    /// errors otherwise, with nothing written to the target.
    pub async fn copy_into(&self, target: &Store) -> Result<Vec<(&'static str, u64)>> {
        let occupied: i64 = sqlx::query_scalar(
            "SELECT (SELECT count(*) FROM repos) + (SELECT count(*) FROM reviews)
                  + (SELECT count(*) FROM settings)",
        )
        .fetch_one(&target.pool)
        .await?;
        if occupied > 0 {
            return Err(StoreError::query(
                "the target database already holds repos, reviews or settings: copy into an empty one",
            ));
        }
        let mut tx = target.begin_write().await?;
        let mut report = Vec::new();
        for (table, columns) in TABLES {
            let names: Vec<&str> = columns.iter().map(|(n, _)| *n).collect();
            let list = names.join(", ");
            let rows = sqlx::query(&format!("SELECT {list} FROM {table} ORDER BY 1"))
                .fetch_all(&self.pool)
                .await?;
            for chunk in rows.chunks(BATCH) {
                let mut sql = format!("INSERT INTO {table} ({list}) VALUES ");
                let mut n = 0;
                for (r, _) in chunk.iter().enumerate() {
                    if r > 0 {
                        sql.push_str(", ");
                    }
                    sql.push('(');
                    for c in 0..columns.len() {
                        if c > 0 {
                            sql.push_str(", ");
                        }
                        n += 1;
                        sql.push_str(&format!("${n}"));
                    }
                    sql.push(')');
                }
                let mut query = sqlx::query::<Any>(&sql);
                for row in chunk {
                    for (i, (_, kind)) in columns.iter().enumerate() {
                        query = match read(row, i, *kind)? {
                            Value::Int(v) => query.bind(v),
                            Value::Real(v) => query.bind(v),
                            Value::Text(v) => query.bind(v),
                            Value::Blob(v) => query.bind(v),
                        };
                    }
                }
                query.execute(&mut *tx).await?;
            }
            report.push((*table, rows.len() as u64));
        }
        // The next review, finding and inbox row get ids after the copied ones.
        match target.backend {
            Backend::Postgres => {
                for table in ["reviews", "findings", "dropped_findings", "review_inbox"] {
                    sqlx::query(&format!(
                        "SELECT setval(pg_get_serial_sequence('{table}', 'id'),
                                       coalesce((SELECT max(id) FROM {table}), 0) + 1, false)"
                    ))
                    .execute(&mut *tx)
                    .await?;
                }
            }
            Backend::Sqlite => {} // AUTOINCREMENT follows the largest id inserted
        }
        tx.commit().await?;
        Ok(report)
    }
}
