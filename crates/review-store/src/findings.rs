//! The `findings` table (docs/review-service.md §2, FindingRow): what a review posted, written
//! all or none per review, and read back so a re-review does not post it again.

use crate::rows::{dropped_from_row, finding_from_row};
use crate::{Backend, Result, Store};
use review_domain::EpochSeconds;
use review_domain::{
    DroppedFindingRow, FindingKind, FindingOutcome, FindingRow, InlineComment, NewFinding,
    ReviewRow,
};

/// Key of the PostgreSQL advisory lock that orders finding writes: each finding adds to the
/// per-day severity and path rollups (migrations/postgres/0002_stats_rollups.sql), and two
/// reviews of one day writing `nit` then `blocking` and `blocking` then `nit` would deadlock
/// on those rows. The trigger that moves a review's findings when its status, day, repo or
/// model changes takes it too (migrations/postgres/0004_stats_filter_rollups.sql). SQLite has
/// one writer at a time already.
const FINDINGS_LOCK: i64 = 0x7265_7669_6577_6631;

/// The columns of a FindingRow, in the order of the spec.
const FINDING_COLUMNS: &str = "id, review_id, repo_full_name, pr_number, kind, severity, event, path, line, body, github_review_id, github_comment_id, created_at, fingerprint, outcome, outcome_at, outcome_sha, outcome_reason";

impl Store {
    /// The fingerprints and bodies of the inline findings posted on a pull request that have
    /// one (docs/review-service.md, "Repeated findings").
    pub async fn posted_fingerprints(&self, repo: &str, pr: i64) -> Result<Vec<(String, String)>> {
        let query = sqlx::query(
            "SELECT fingerprint, body FROM findings WHERE repo_full_name = $1 AND pr_number = $2
             AND kind = 'inline' AND fingerprint IS NOT NULL ORDER BY id",
        )
        .bind(repo)
        .bind(pr);
        let pair = |r: &sqlx::any::AnyRow| {
            use sqlx::Row;
            Ok((r.try_get::<String, _>(0)?, r.try_get::<String, _>(1)?))
        };
        self.all(query, pair).await
    }

    /// The dismissed inline findings of a pull request with the head SHA of the review that
    /// posted each, oldest first (docs/review-service.md, "Finding outcomes").
    pub async fn dismissed_findings(
        &self,
        repo: &str,
        pr: i64,
    ) -> Result<Vec<(FindingRow, Option<String>)>> {
        self.findings_with_outcome(repo, pr, FindingOutcome::Dismissed)
            .await
    }

    /// The open inline findings of a pull request with the head SHA of the review that posted
    /// each (None when that review recorded none), oldest first (docs/review-service.md,
    /// "Finding outcomes").
    pub async fn open_findings(
        &self,
        repo: &str,
        pr: i64,
    ) -> Result<Vec<(FindingRow, Option<String>)>> {
        self.findings_with_outcome(repo, pr, FindingOutcome::Open)
            .await
    }

    /// The inline findings of a pull request with `outcome`, each with its review's head SHA.
    async fn findings_with_outcome(
        &self,
        repo: &str,
        pr: i64,
        outcome: FindingOutcome,
    ) -> Result<Vec<(FindingRow, Option<String>)>> {
        let columns = FINDING_COLUMNS
            .split(", ")
            .map(|c| format!("f.{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT {columns}, r.head_sha AS review_head_sha FROM findings f
             JOIN reviews r ON r.id = f.review_id
             WHERE f.repo_full_name = $1 AND f.pr_number = $2 AND f.outcome = $3
             ORDER BY f.id"
        );
        let read = |r: &sqlx::any::AnyRow| {
            use sqlx::Row;
            Ok((finding_from_row(r)?, r.try_get("review_head_sha")?))
        };
        let query = sqlx::query(&sql).bind(repo).bind(pr).bind(outcome.as_str());
        self.all(query, read).await
    }

    /// Moves an open finding to `outcome` (resolved or dismissed) at `now`, with the head SHA
    /// of a resolution and the reason in words. Returns the row when this call moved it; None
    /// when it was not open (already moved, by another replica too) or does not exist.
    pub async fn set_finding_outcome(
        &self,
        id: i64,
        outcome: FindingOutcome,
        sha: Option<&str>,
        reason: &str,
        now: EpochSeconds,
    ) -> Result<Option<FindingRow>> {
        let sql = format!(
            "UPDATE findings SET outcome = $2, outcome_at = $3, outcome_sha = $4, outcome_reason = $5
             WHERE id = $1 AND outcome = 'open' RETURNING {FINDING_COLUMNS}"
        );
        let query = sqlx::query(&sql)
            .bind(id)
            .bind(outcome.as_str())
            .bind(now.0)
            .bind(sha)
            .bind(reason);
        self.optional(query, finding_from_row).await
    }

    /// Insert findings of `review` in one transaction (all or none), returning the rows.
    pub async fn insert_findings(
        &self,
        review: &ReviewRow,
        findings: &[NewFinding],
        now: EpochSeconds,
    ) -> Result<Vec<FindingRow>> {
        let mut tx = self.begin_write().await?;
        if self.backend == Backend::Postgres {
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(FINDINGS_LOCK)
                .execute(&mut *tx)
                .await?;
        }
        let mut out = Vec::with_capacity(findings.len());
        for f in findings {
            let row = sqlx::query(&format!(
                "INSERT INTO findings (review_id, repo_full_name, pr_number, kind, severity, event, path,
                 line, body, github_review_id, github_comment_id, created_at, fingerprint, outcome)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                 RETURNING {FINDING_COLUMNS}"
            ))
            .bind(review.id)
            .bind(&review.repo_full_name)
            .bind(review.pr_number)
            .bind(f.kind.as_str())
            .bind(f.severity.map(|s| s.as_str()))
            .bind(f.event.map(|e| e.as_str()))
            .bind(&f.path)
            .bind(f.line)
            .bind(&f.body)
            .bind(f.github_review_id)
            .bind(f.github_comment_id)
            .bind(now.0)
            .bind(&f.fingerprint)
            .bind((f.kind == FindingKind::Inline).then_some(FindingOutcome::Open.as_str()))
            .fetch_one(&mut *tx)
            .await?;
            out.push(finding_from_row(&row)?);
        }
        tx.commit().await?;
        Ok(out)
    }

    /// Findings of one review, ordered by id (an unknown review has none).
    pub async fn findings_for_review(&self, review_id: i64) -> Result<Vec<FindingRow>> {
        let sql =
            format!("SELECT {FINDING_COLUMNS} FROM findings WHERE review_id = $1 ORDER BY id");
        self.all(sqlx::query(&sql).bind(review_id), finding_from_row)
            .await
    }

    /// Every finding recorded on a PR, oldest first: what a re-review must not post again.
    pub async fn findings_for_pr(&self, repo: &str, pr_number: i64) -> Result<Vec<FindingRow>> {
        let sql = format!(
            "SELECT {FINDING_COLUMNS} FROM findings WHERE repo_full_name = $1 AND pr_number = $2 ORDER BY id"
        );
        let query = sqlx::query(&sql).bind(repo).bind(pr_number);
        self.all(query, finding_from_row).await
    }
}

/// The columns of a DroppedFindingRow.
const DROPPED_COLUMNS: &str =
    "id, review_id, repo_full_name, pr_number, path, line, severity, body, reason, created_at";

impl Store {
    /// Record the candidates verification dropped from `review`, each with the verifier's
    /// reason, in one transaction (docs/review-service.md, "Verification before posting").
    pub async fn insert_dropped_findings(
        &self,
        review: &ReviewRow,
        dropped: &[(InlineComment, String)],
        now: EpochSeconds,
    ) -> Result<()> {
        let mut tx = self.begin_write().await?;
        for (c, reason) in dropped {
            sqlx::query(
                "INSERT INTO dropped_findings (review_id, repo_full_name, pr_number, path, line,
                 severity, body, reason, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(review.id)
            .bind(&review.repo_full_name)
            .bind(review.pr_number)
            .bind(&c.path)
            .bind(c.line)
            .bind(c.severity.as_str())
            .bind(&c.body)
            .bind(reason)
            .bind(now.0)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The candidates verification dropped from one review, ordered by id (an unknown review
    /// has none).
    pub async fn dropped_findings(&self, review_id: i64) -> Result<Vec<DroppedFindingRow>> {
        let sql = format!(
            "SELECT {DROPPED_COLUMNS} FROM dropped_findings WHERE review_id = $1 ORDER BY id"
        );
        self.all(sqlx::query(&sql).bind(review_id), dropped_from_row)
            .await
    }
}

#[cfg(test)]
mod tests {
    /// The PostgreSQL trigger that moves a review's findings between rollup rows orders itself
    /// with the finding writers: it takes the same advisory lock.
    #[test]
    fn moving_findings_takes_the_findings_lock() {
        let sql = include_str!("../../../migrations/postgres/0004_stats_filter_rollups.sql");
        let lock = format!("pg_advisory_xact_lock({})", super::FINDINGS_LOCK);
        assert!(sql.contains(&lock), "{lock} missing");
    }
}
