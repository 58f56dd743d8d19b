//! The durable work queue of docs/architecture.md, "Many replicas": the `review_queue` and
//! `review_retries` tables of migration 0012 (PostgreSQL: 0003).
//!
//! - A review to run is inserted with its queue row in one transaction
//!   ([`Store::insert_queued_review`]); a replica claims the oldest waiting one
//!   ([`Store::claim_review`]: PostgreSQL `FOR UPDATE SKIP LOCKED`; SQLite serialises writers),
//!   holds a lease on it and renews it while the run lives ([`Store::renew_leases`]).
//! - A lease that lapsed means its replica died: [`Store::reap_lapsed`] fails the review as
//!   interrupted and deletes the queue row in one transaction, so two reapers cannot both act.
//! - A stop or a supersede of a review leased by another replica is written to its queue row
//!   ([`Store::request_cancel`]); the owner reads it at its next renewal at the latest.
//! - An automatic retry is a `review_retries` row with a not-before time; the replica that
//!   claims it when due replaces it with the retry's review in one transaction
//!   ([`Store::insert_retry_review`]), so a restart loses no retry and none runs twice.
//!
//! Lease and not-before times are epoch milliseconds; review timestamps stay epoch seconds.

use crate::reviews::REVIEW_COLUMNS;
use crate::rows::review_from_row;
use crate::{Backend, NewReview, Result, Store};
use review_domain::ReviewRow;
use review_domain::{EpochMillis, EpochSeconds};
use sqlx::Row;
use sqlx::any::AnyRow;

/// A review claimed from the queue: its id and the job text it was queued with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedReview {
    pub review_id: i64,
    /// The job as the enqueuer serialised it (JSON, owned by review-server).
    pub job: String,
}

/// An automatic retry claimed when due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedRetry {
    /// The retry's own id (`review_retries.id`).
    pub id: i64,
    /// The failed review it retries.
    pub review_id: i64,
    /// The failed review's job (JSON).
    pub job: String,
}

/// A lease this replica still holds after a renewal, with the cancel asked of it, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldLease {
    pub review_id: i64,
    /// `stopped` or `superseded` when another replica asked for the run to end.
    pub cancel: Option<String>,
}

impl Store {
    /// Inserts a pending review with its queue row in one transaction and returns the re-read
    /// row. `owner`/`lease_until` None: the review waits to be claimed (PostgreSQL notifies
    /// channel `review_queue`); Some: the caller runs it itself (improver runs) under that lease.
    pub async fn insert_queued_review(
        &self,
        new: &NewReview,
        job: &str,
        owner: Option<&str>,
        lease_until: Option<EpochMillis>,
        now: EpochSeconds,
    ) -> Result<ReviewRow> {
        let mut tx = self.begin_write().await?;
        let row = crate::reviews::insert_review_in(&mut tx, new, now).await?;
        insert_queue_row(&mut tx, row.id, job, owner, lease_until).await?;
        tx.commit().await?;
        Ok(row)
    }

    /// Claims the oldest waiting review for `owner` with a lease until `lease_until` (epoch
    /// ms); None when nothing waits. Exactly one concurrent claimer gets a given review.
    pub async fn claim_review(
        &self,
        owner: &str,
        lease_until: EpochMillis,
    ) -> Result<Option<ClaimedReview>> {
        let lock = match self.backend {
            Backend::Postgres => "FOR UPDATE OF q SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let sql = format!(
            "UPDATE review_queue SET owner = $1, lease_until = $2
             WHERE owner IS NULL AND review_id = (
                 SELECT q.review_id FROM review_queue q JOIN reviews r ON r.id = q.review_id
                 WHERE q.owner IS NULL AND r.status = 'pending'
                 ORDER BY q.review_id LIMIT 1 {lock})
             RETURNING review_id, job"
        );
        let query = sqlx::query(&sql).bind(owner).bind(lease_until.0);
        self.optional(query, |r: &AnyRow| {
            Ok(ClaimedReview {
                review_id: r.try_get(0)?,
                job: r.try_get(1)?,
            })
        })
        .await
    }

    /// Extends every lease `owner` holds to `lease_until` (epoch ms) and returns them with the
    /// cancels asked of them. A run missing from the answer has lost its lease (reaped).
    pub async fn renew_leases(
        &self,
        owner: &str,
        lease_until: EpochMillis,
    ) -> Result<Vec<HeldLease>> {
        let query = sqlx::query(
            "UPDATE review_queue SET lease_until = $1 WHERE owner = $2 RETURNING review_id, cancel",
        )
        .bind(lease_until.0)
        .bind(owner);
        self.all(query, |r: &AnyRow| {
            Ok(HeldLease {
                review_id: r.try_get(0)?,
                cancel: r.try_get(1)?,
            })
        })
        .await
    }

    /// Asks the replica running `review_id` to end it for `reason`. Returns that replica's
    /// owner id when one holds a lease that has not lapsed at `now_ms`, else None (nothing
    /// written: no live run anywhere).
    pub async fn request_cancel(
        &self,
        review_id: i64,
        reason: &str,
        now_ms: EpochMillis,
    ) -> Result<Option<String>> {
        let query = sqlx::query(
            "UPDATE review_queue SET cancel = coalesce(cancel, $1)
             WHERE review_id = $2 AND owner IS NOT NULL AND lease_until >= $3 RETURNING owner",
        )
        .bind(reason)
        .bind(review_id)
        .bind(now_ms.0);
        self.optional(query, |r: &AnyRow| Ok(r.try_get::<String, _>(0)?))
            .await
    }

    /// Removes the queue row of a run that ended (or never started).
    pub async fn release_review(&self, review_id: i64) -> Result<()> {
        let query = sqlx::query("DELETE FROM review_queue WHERE review_id = $1").bind(review_id);
        self.changed(query).await?;
        Ok(())
    }

    /// Fails, with `error`, every review whose lease lapsed before `now_ms` and deletes its
    /// queue row, each in one transaction; returns the reviews failed. Also removes the queue
    /// rows of reviews that ended while they waited (stopped or superseded before a claim).
    pub async fn reap_lapsed(&self, error: &str, now_ms: EpochMillis) -> Result<Vec<ReviewRow>> {
        sqlx::query(
            "DELETE FROM review_queue WHERE owner IS NULL AND review_id IN (
                 SELECT q.review_id FROM review_queue q JOIN reviews r ON r.id = q.review_id
                 WHERE q.owner IS NULL AND r.status NOT IN ('pending', 'running'))",
        )
        .execute(&self.pool)
        .await?;
        let lapsed: Vec<i64> = sqlx::query_scalar(
            "SELECT review_id FROM review_queue WHERE owner IS NOT NULL AND lease_until < $1
             ORDER BY review_id",
        )
        .bind(now_ms.0)
        .fetch_all(&self.pool)
        .await?;
        let mut failed = Vec::new();
        for id in lapsed {
            let mut tx = self.begin_write().await?;
            let won = sqlx::query(
                "DELETE FROM review_queue WHERE review_id = $1 AND owner IS NOT NULL
                 AND lease_until < $2",
            )
            .bind(id)
            .bind(now_ms.0)
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            if !won {
                continue;
            }
            let sql = format!(
                "UPDATE reviews SET status = 'failed', error = $1, completed_at = $2
                 WHERE id = $3 AND status IN ('pending', 'running') RETURNING {REVIEW_COLUMNS}"
            );
            let row = sqlx::query(&sql)
                .bind(error)
                .bind(now_ms.seconds().0)
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
            tx.commit().await?;
            if let Some(row) = row {
                failed.push(review_from_row(&row)?);
            }
        }
        Ok(failed)
    }

    /// Fails, with `error`, every review left pending or running without a queue row: rows of
    /// a version without the queue, or written by hand. Every review and improver row is
    /// written with its queue row in one transaction, so at boot such a row has nobody to end
    /// it, whatever its age (none may stay pending or running for ever). Returns the
    /// rows changed.
    pub async fn fail_orphaned(&self, error: &str, now: EpochSeconds) -> Result<Vec<ReviewRow>> {
        let sql = format!(
            "UPDATE reviews SET status = 'failed', error = $1, completed_at = $2
             WHERE status IN ('pending', 'running')
             AND NOT EXISTS (SELECT 1 FROM review_queue q WHERE q.review_id = reviews.id)
             RETURNING {REVIEW_COLUMNS}"
        );
        let query = sqlx::query(&sql).bind(error).bind(now.0);
        self.all(query, review_from_row).await
    }

    /// At boot, before this replica claims anything: fails, with `error`, the reviews it had
    /// claimed before a kill or crash and deletes their queue rows, and gives back the
    /// automatic retries it held. `owner` is the replica's stable id (DATA_DIR/replica-id);
    /// None claims every lease, for SQLite, where one process owns the database. Returns the
    /// reviews failed (a review whose run had ended keeps its state; only its queue row goes).
    pub async fn fail_claimed_at_boot(
        &self,
        owner: Option<&str>,
        error: &str,
        now: EpochSeconds,
    ) -> Result<Vec<ReviewRow>> {
        let mut tx = self.begin_write().await?;
        let mine = "owner IS NOT NULL AND (CAST($1 AS TEXT) IS NULL OR owner = $2)";
        let ids: Vec<i64> = sqlx::query_scalar(&format!(
            "DELETE FROM review_queue WHERE {mine} RETURNING review_id"
        ))
        .bind(owner)
        .bind(owner)
        .fetch_all(&mut *tx)
        .await?;
        let mut failed = Vec::new();
        for id in ids {
            let sql = format!(
                "UPDATE reviews SET status = 'failed', error = $1, completed_at = $2
                 WHERE id = $3 AND status IN ('pending', 'running') RETURNING {REVIEW_COLUMNS}"
            );
            let row = sqlx::query(&sql)
                .bind(error)
                .bind(now.0)
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some(row) = row {
                failed.push(review_from_row(&row)?);
            }
        }
        sqlx::query(&format!(
            "UPDATE review_retries SET owner = NULL, lease_until = NULL WHERE {mine}"
        ))
        .bind(owner)
        .bind(owner)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(failed)
    }

    /// pending -> failed with `error`, only while nobody has claimed the review; None when it
    /// was claimed or ended meanwhile (the caller then treats it as running).
    pub async fn fail_waiting_review(
        &self,
        review_id: i64,
        error: &str,
        now: EpochSeconds,
    ) -> Result<Option<ReviewRow>> {
        let sql = format!(
            "UPDATE reviews SET status = 'failed', error = $1, completed_at = $2
             WHERE id = $3 AND status = 'pending'
             AND NOT EXISTS (SELECT 1 FROM review_queue q WHERE q.review_id = reviews.id
                             AND q.owner IS NOT NULL)
             RETURNING {REVIEW_COLUMNS}"
        );
        let query = sqlx::query(&sql).bind(error).bind(now.0).bind(review_id);
        self.optional(query, review_from_row).await
    }

    /// The PR's reviews other than `except` that are pending or running, by id: what a push
    /// supersedes. Answers (triggers `reply` and `ask`) are not among them: a push does not
    /// make a question go away (docs/review-service.md, "Answers in review threads").
    pub async fn active_reviews_of_pr(&self, repo: &str, pr: i64, except: i64) -> Result<Vec<i64>> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM reviews WHERE repo_full_name = $1 AND pr_number = $2 AND id != $3
             AND status IN ('pending', 'running') AND coalesce(\"trigger\", '') NOT IN ('reply', 'ask')
             ORDER BY id",
        )
        .bind(repo)
        .bind(pr)
        .bind(except)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Schedules the automatic retry of `review_id` (its `job`) for `not_before`.
    pub async fn schedule_retry(
        &self,
        review_id: i64,
        job: &str,
        not_before: EpochMillis,
    ) -> Result<()> {
        let query = sqlx::query(
            "INSERT INTO review_retries (review_id, job, not_before) VALUES ($1, $2, $3)",
        )
        .bind(review_id)
        .bind(job)
        .bind(not_before.0);
        self.changed(query).await?;
        Ok(())
    }

    /// Claims the oldest retry due at `now_ms` that no live lease holds, for `owner` until
    /// `lease_until`; None when none is due.
    pub async fn claim_due_retry(
        &self,
        owner: &str,
        lease_until: EpochMillis,
        now_ms: EpochMillis,
    ) -> Result<Option<ClaimedRetry>> {
        let lock = match self.backend {
            Backend::Postgres => "FOR UPDATE SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let sql = format!(
            "UPDATE review_retries SET owner = $1, lease_until = $2
             WHERE id = (
                 SELECT id FROM review_retries
                 WHERE not_before <= $3 AND (owner IS NULL OR lease_until < $4)
                 ORDER BY not_before, id LIMIT 1 {lock})
             AND (owner IS NULL OR lease_until < $5)
             RETURNING id, review_id, job"
        );
        let query = sqlx::query(&sql)
            .bind(owner)
            .bind(lease_until.0)
            .bind(now_ms.0)
            .bind(now_ms.0)
            .bind(now_ms.0);
        self.optional(query, |r: &AnyRow| {
            Ok(ClaimedRetry {
                id: r.try_get(0)?,
                review_id: r.try_get(1)?,
                job: r.try_get(2)?,
            })
        })
        .await
    }

    /// Drops retry `id` held by `owner` (it stood down). False when `owner` no longer held it.
    pub async fn drop_retry(&self, id: i64, owner: &str) -> Result<bool> {
        let query = sqlx::query("DELETE FROM review_retries WHERE id = $1 AND owner = $2")
            .bind(id)
            .bind(owner);
        Ok(self.changed(query).await? == 1)
    }

    /// Replaces retry `retry_id`, held by `owner`, with its review (pending, queued with `job`)
    /// in one transaction. None when `owner` no longer holds the retry (its lease lapsed and
    /// another replica took it): nothing is written then.
    pub async fn insert_retry_review(
        &self,
        retry_id: i64,
        owner: &str,
        new: &NewReview,
        job: &str,
        now: EpochSeconds,
    ) -> Result<Option<ReviewRow>> {
        let mut tx = self.begin_write().await?;
        let held = sqlx::query("DELETE FROM review_retries WHERE id = $1 AND owner = $2")
            .bind(retry_id)
            .bind(owner)
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 1;
        if !held {
            return Ok(None);
        }
        let row = crate::reviews::insert_review_in(&mut tx, new, now).await?;
        insert_queue_row(&mut tx, row.id, job, None, None).await?;
        tx.commit().await?;
        Ok(Some(row))
    }

    /// How many automatic retries wait (for tests and the operations docs).
    pub async fn waiting_retries(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT count(*) FROM review_retries")
            .fetch_one(&self.pool)
            .await?)
    }
}

pub(crate) async fn insert_queue_row(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    review_id: i64,
    job: &str,
    owner: Option<&str>,
    lease_until: Option<EpochMillis>,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO review_queue (review_id, job, owner, lease_until) VALUES ($1, $2, $3, $4)",
    )
    .bind(review_id)
    .bind(job)
    .bind(owner)
    .bind(lease_until.map(|l| l.0))
    .execute(&mut **tx)
    .await?;
    Ok(())
}
