//! The webhook inbox of docs/architecture.md, "The webhook inbox": the `review_inbox` table of
//! migration 0014 (PostgreSQL: 0005).
//!
//! A `pull_request` delivery that should start a review is accepted with
//! [`Store::accept_delivery`]: its delivery id is claimed and its inbox row written in one
//! round trip (one statement on PostgreSQL, one transaction on SQLite), and the webhook
//! acknowledges. The review row is written afterwards by [`Store::promote_inbox`], off the
//! acknowledgement's path: inserting a review runs the stats rollup triggers, which cost a few
//! milliseconds on PostgreSQL (bench/review/REPLICAS.md).
//!
//! Promotion takes the oldest rows first and, on PostgreSQL, holds a transaction-scoped
//! advisory lock, so two replicas never promote at once and a synchronize cannot become a
//! review before the opened delivered ahead of it. Each promoted row becomes a pending review
//! with its `review_queue` row, and the inbox row is deleted, in the same transaction: a row
//! is promoted exactly once (tests/inbox.rs, on both backends).

use crate::{Backend, NewReview, Result, Store};
use review_domain::{EpochMillis, EpochSeconds};
use review_domain::{ReviewRow, Trigger};
use sqlx::Row;

/// The advisory lock key promoters hold on PostgreSQL (any constant unique to this use: the
/// bytes of "rvinbox1").
pub const PROMOTE_LOCK: i64 = 0x7276_696e_626f_7831;

/// How long a promoter waits for [`PROMOTE_LOCK`] before it gives up this attempt
/// (`lock_timeout`). Another promoter holds it for milliseconds; a longer wait means a session
/// kept it (a chat query's `pg_try_advisory_lock` could, which would stop intake).
pub const PROMOTE_LOCK_TIMEOUT_MS: u64 = 2_000;

/// Attempts of one promotion to take [`PROMOTE_LOCK`], each waiting [`PROMOTE_LOCK_TIMEOUT_MS`],
/// with a warning after each that failed; the poll then tries again.
const PROMOTE_LOCK_ATTEMPTS: u32 = 3;

/// The columns an accepted delivery writes, in the order [`bind_inbox_row`] binds them.
const INBOX_COLUMNS: &str =
    "repo_full_name, pr_number, title, \"trigger\", attempt, job, received_at, head_sha";
/// The placeholders of [`INBOX_COLUMNS`] in a statement that binds nothing before them.
const INBOX_VALUES: &str = "($1, $2, $3, $4, $5, $6, $7, $8)";

/// Binds the values of [`INBOX_COLUMNS`] after the ones `query` already has.
fn bind_inbox_row<'q>(
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    new: &NewReview,
    job: &str,
    now_ms: EpochMillis,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    query
        .bind(new.repo_full_name.clone())
        .bind(new.pr_number)
        .bind(new.title.clone())
        .bind(new.trigger.map(Trigger::as_str))
        .bind(new.attempt)
        .bind(job.to_owned())
        .bind(now_ms.0)
        .bind(new.head_sha.clone())
}

/// A review created from an inbox row, with the job it was queued with.
#[derive(Debug, Clone, PartialEq)]
pub struct PromotedReview {
    /// The pending review row as inserted.
    pub row: ReviewRow,
    /// The job text of the delivery (JSON, owned by review-server).
    pub job: String,
}

impl Store {
    /// Accepts a delivery that starts a review: claims delivery id `delivery` (as
    /// [`Store::claim_delivery`]; None or empty: no id to claim) and writes the review it asks
    /// for (`new`, queued with `job`) to the inbox, at `now_ms` (epoch milliseconds). Returns
    /// false, writing nothing, for a redelivery inside the window. One round trip: on
    /// PostgreSQL a single statement, on SQLite one transaction.
    ///
    /// The pool does not ping a connection before lending it (lib.rs), so a connection that
    /// broke while idle (a database restart) fails here with an I/O error and is dropped; the
    /// write is then tried again on another connection, at most once per pooled connection.
    /// That is safe: if an attempt committed before its connection broke, the next one finds
    /// the delivery id claimed and returns false.
    pub async fn accept_delivery(
        &self,
        delivery: Option<&str>,
        new: &NewReview,
        job: &str,
        now_ms: EpochMillis,
    ) -> Result<bool> {
        let mut attempts: u32 = 1;
        loop {
            let attempt = match delivery.filter(|d| !d.is_empty()) {
                None => self.write_inbox_row(new, job, now_ms).await.map(|()| true),
                Some(id) => self.claim_into_inbox(id, new, job, now_ms).await,
            };
            match attempt {
                Err(crate::StoreError::Database(e))
                    if connection_lost(&e) && attempts <= crate::MAX_CONNECTIONS =>
                {
                    tracing::warn!(error = %e, "a pooled connection broke; accepting the delivery again");
                    attempts += 1;
                }
                other => return other,
            }
        }
    }

    /// The inbox row of a delivery without an id.
    async fn write_inbox_row(&self, new: &NewReview, job: &str, now_ms: EpochMillis) -> Result<()> {
        let sql = format!("INSERT INTO review_inbox ({INBOX_COLUMNS}) VALUES {INBOX_VALUES}");
        bind_inbox_row(sqlx::query(&sql), new, job, now_ms)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Claims delivery `id` and writes its inbox row, both or neither; false for a redelivery.
    async fn claim_into_inbox(
        &self,
        id: &str,
        new: &NewReview,
        job: &str,
        now_ms: EpochMillis,
    ) -> Result<bool> {
        let now = now_ms.seconds();
        let window_start = now.0 - crate::DELIVERY_WINDOW_SECS;
        let claim = crate::deliveries::CLAIM_SQL;
        match self.backend {
            Backend::Postgres => {
                // The inbox row is selected from the claim's RETURNING: no claim, no row.
                let sql = format!(
                    "WITH claim AS ({claim} RETURNING id)
                     INSERT INTO review_inbox ({INBOX_COLUMNS})
                     SELECT $4, $5, $6, $7, $8, $9, $10, $11 FROM claim"
                );
                let query = sqlx::query(&sql).bind(id).bind(now.0).bind(window_start);
                let accepted = bind_inbox_row(query, new, job, now_ms)
                    .execute(&self.pool)
                    .await?
                    .rows_affected()
                    == 1;
                Ok(accepted)
            }
            Backend::Sqlite => {
                // SQLite has no INSERT inside WITH; the claim and the row share a transaction.
                let mut tx = self.begin_write().await?;
                if !crate::deliveries::claim_in(&mut tx, id, now).await? {
                    return Ok(false);
                }
                let sql =
                    format!("INSERT INTO review_inbox ({INBOX_COLUMNS}) VALUES {INBOX_VALUES}");
                bind_inbox_row(sqlx::query(&sql), new, job, now_ms)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(true)
            }
        }
    }

    /// Claims delivery `delivery` (None or empty: no id to claim) and inserts its pending
    /// review with the waiting queue row, all in one transaction, at `now` (epoch seconds):
    /// the direct path of reviews that skip the inbox (`/review` commands, retries asked for
    /// by hand, every webhook on SQLite, where a second write transaction would wait on the
    /// single write lock; docs/architecture.md, "The webhook inbox"). None, writing nothing,
    /// for a redelivery inside the window. A pull_request delivery for a head the PR already
    /// has a review of is recorded skipped instead, with no queue row
    /// ([`crate::reviews::skip_if_head_reviewed_in`]; check the returned row's status).
    pub async fn insert_delivered_review(
        &self,
        delivery: Option<&str>,
        new: &NewReview,
        job: &str,
        now: EpochSeconds,
    ) -> Result<Option<ReviewRow>> {
        let mut tx = self.begin_write().await?;
        if let Some(id) = delivery.filter(|d| !d.is_empty())
            && !crate::deliveries::claim_in(&mut tx, id, now).await?
        {
            return Ok(None);
        }
        if let Some(skipped) = crate::reviews::skip_if_head_reviewed_in(&mut tx, new, now).await? {
            tx.commit().await?;
            return Ok(Some(skipped));
        }
        let row = crate::reviews::insert_review_in(&mut tx, new, now).await?;
        crate::queue::insert_queue_row(&mut tx, row.id, job, None, None).await?;
        tx.commit().await?;
        Ok(Some(row))
    }

    /// Moves up to `limit` of the oldest inbox rows into pending reviews, each with its waiting
    /// `review_queue` row, in one transaction, at `now` (epoch seconds, the reviews'
    /// `created_at`). Returns them oldest first; empty when the inbox is empty. Promoters are
    /// serialised (PostgreSQL: an advisory lock; SQLite: the write lock taken by the first
    /// statement), so each row is promoted once and in order. A row for a head the PR already
    /// has a review of becomes a `skipped` review without a queue row
    /// ([`crate::reviews::skip_if_head_reviewed_in`]).
    pub async fn promote_inbox(
        &self,
        limit: i64,
        now: EpochSeconds,
    ) -> Result<Vec<PromotedReview>> {
        // Replicas poll: an empty inbox costs one read, no transaction and no lock.
        let waiting: Option<i64> = sqlx::query_scalar("SELECT id FROM review_inbox LIMIT 1")
            .fetch_optional(&self.pool)
            .await?;
        if waiting.is_none() {
            return Ok(Vec::new());
        }
        let mut tx = self.begin_promotion().await?;
        // The DELETE comes first: on SQLite it takes the write lock at once, so a concurrent
        // promoter waits instead of failing to upgrade a read.
        let taken = sqlx::query(
            "DELETE FROM review_inbox WHERE id IN (
                 SELECT id FROM review_inbox ORDER BY id LIMIT $1)
             RETURNING id, repo_full_name, pr_number, title, \"trigger\", attempt, job, head_sha",
        )
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        let mut rows = Vec::with_capacity(taken.len());
        for r in &taken {
            let trigger: Option<String> = r.try_get(4)?;
            let new = NewReview {
                repo_full_name: r.try_get(1)?,
                pr_number: r.try_get(2)?,
                title: r.try_get(3)?,
                trigger: trigger.as_deref().and_then(|t| t.parse().ok()),
                attempt: r.try_get(5)?,
                head_sha: r.try_get(7)?,
            };
            rows.push((r.try_get::<i64, _>(0)?, new, r.try_get::<String, _>(6)?));
        }
        rows.sort_by_key(|(id, _, _)| *id);
        let mut promoted = Vec::with_capacity(rows.len());
        for (_, new, job) in rows {
            // A second delivery of a head already reviewed or queued becomes a skipped row
            // (the promoter lock makes this check and the insert one step across replicas).
            if let Some(row) = crate::reviews::skip_if_head_reviewed_in(&mut tx, &new, now).await? {
                promoted.push(PromotedReview { row, job });
                continue;
            }
            let row = crate::reviews::insert_review_in(&mut tx, &new, now).await?;
            crate::queue::insert_queue_row(&mut tx, row.id, &job, None, None).await?;
            promoted.push(PromotedReview { row, job });
        }
        tx.commit().await?;
        Ok(promoted)
    }

    /// The promotion's transaction; on PostgreSQL holding [`PROMOTE_LOCK`], waited for at most
    /// [`PROMOTE_LOCK_TIMEOUT_MS`] per attempt, [`PROMOTE_LOCK_ATTEMPTS`] attempts, each failed
    /// one logged as a warning.
    ///
    /// Errors: the last attempt's lock timeout (55P03), or any other database error.
    async fn begin_promotion(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>> {
        let mut attempt = 1;
        loop {
            let mut tx = self.begin_write().await?;
            if self.backend == Backend::Sqlite {
                return Ok(tx);
            }
            let timeout = format!("SET LOCAL lock_timeout = {PROMOTE_LOCK_TIMEOUT_MS}");
            sqlx::query(&timeout).execute(&mut *tx).await?;
            let locked = sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(PROMOTE_LOCK)
                .execute(&mut *tx)
                .await;
            match locked {
                Ok(_) => return Ok(tx),
                Err(e)
                    if e.as_database_error()
                        .and_then(|d| d.code())
                        .is_some_and(|c| c == "55P03") =>
                {
                    tracing::warn!(
                        attempt,
                        waited_ms = PROMOTE_LOCK_TIMEOUT_MS,
                        "the webhook inbox's promoter lock is held by another session; accepted deliveries wait until it is free"
                    );
                    if attempt >= PROMOTE_LOCK_ATTEMPTS {
                        return Err(e.into());
                    }
                    attempt += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// How many accepted deliveries wait in the inbox (for tests and the operations docs).
    pub async fn inbox_len(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT count(*) FROM review_inbox")
            .fetch_one(&self.pool)
            .await?)
    }
}

/// Whether `e` says the connection itself is gone (not the statement): an I/O error, or
/// PostgreSQL's class 57P, the server shutting down or the backend being terminated.
fn connection_lost(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) => true,
        sqlx::Error::Database(d) => d.code().is_some_and(|c| c.starts_with("57P")),
        _ => false,
    }
}
