//! The `reviews` table (docs/review-service.md §2, ReviewRow; §3, states): inserting a run,
//! its conditional status transitions, and the lookups the pipeline, the retry and the
//! improver make before they act, and the filtered review list of GET /api/reviews.

use crate::rows::review_from_row;
use crate::sql::{Sql, bound, push_full_filter};
use crate::{Result, Store};
use review_domain::EpochSeconds;
use review_domain::{ReviewRow, StatsFilter, Trigger};
use sqlx::any::AnyRow;
use sqlx::{Any, Row};

/// The columns of a ReviewRow, in the order of the spec.
pub(crate) const REVIEW_COLUMNS: &str = "id, repo_full_name, pr_number, title, session_id, status, error, \"trigger\", attempt, cost, tokens, model, check_run_id, patch_id, created_at, completed_at";

/// A review to insert (docs/review-service.md §3: it starts pending).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewReview {
    pub repo_full_name: String,
    pub pr_number: i64,
    pub title: Option<String>,
    /// What started it; None for improver runs (pr_number 0), whose trigger column is null.
    pub trigger: Option<Trigger>,
    /// 0 for a first run, 1 for the automatic retry.
    pub attempt: i64,
    /// The PR head (40 hex digits) the review is for; None for improver runs. Kept on the row
    /// (not in [`ReviewRow`]) for the one-review-per-head rule ([`Store::accept_delivery`]).
    pub head_sha: Option<String>,
}

/// What a completed review records (docs/review-service.md §3: cost, tokens, model, completed_at,
/// and the patch id on the success path).
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub cost: f64,
    pub tokens: i64,
    pub model: String,
    pub patch_id: Option<String>,
}

impl Store {
    /// Insert a pending review and return the re-read row.
    pub async fn insert_review(&self, new: &NewReview, now: EpochSeconds) -> Result<ReviewRow> {
        let mut tx = self.begin_write().await?;
        let row = crate::reviews::insert_review_in(&mut tx, new, now).await?;
        tx.commit().await?;
        Ok(row)
    }

    /// One review, or None.
    pub async fn review(&self, id: i64) -> Result<Option<ReviewRow>> {
        let sql = format!("SELECT {REVIEW_COLUMNS} FROM reviews WHERE id = $1");
        self.optional(sqlx::query(&sql).bind(id), review_from_row)
            .await
    }

    /// pending -> running with the agent session id (docs/review-service.md §3). None when the
    /// review was not pending (stopped or failed meanwhile).
    pub async fn start_review(&self, id: i64, session_id: &str) -> Result<Option<ReviewRow>> {
        let sql = format!(
            "UPDATE reviews SET status = 'running', session_id = $1 WHERE id = $2 AND status = 'pending'
             RETURNING {REVIEW_COLUMNS}"
        );
        let query = sqlx::query(&sql).bind(session_id).bind(id);
        self.optional(query, review_from_row).await
    }

    /// Record the check run of a review.
    pub async fn set_check_run_id(&self, id: i64, check_run_id: i64) -> Result<()> {
        let query = sqlx::query("UPDATE reviews SET check_run_id = $1 WHERE id = $2");
        self.changed(query.bind(check_run_id).bind(id)).await?;
        Ok(())
    }

    /// running -> completed with cost, tokens, model, patch id and completed_at
    /// (docs/review-service.md §3). None when the review was no longer running.
    pub async fn complete_review(
        &self,
        id: i64,
        done: &Completion,
        now: EpochSeconds,
    ) -> Result<Option<ReviewRow>> {
        let sql = format!(
            "UPDATE reviews SET status = 'completed', cost = $1, tokens = $2, model = $3, patch_id = $4,
             completed_at = $5, error = NULL WHERE id = $6 AND status = 'running' RETURNING {REVIEW_COLUMNS}"
        );
        let query = sqlx::query(&sql)
            .bind(done.cost)
            .bind(done.tokens)
            .bind(&done.model)
            .bind(&done.patch_id)
            .bind(now.0)
            .bind(id);
        self.optional(query, review_from_row).await
    }

    /// pending or running -> failed with `error` (docs/review-service.md §3). Tokens, cost and
    /// model are recorded when known (a failed run still spent them). None when already terminal.
    pub async fn fail_review(
        &self,
        id: i64,
        error: &str,
        spent: Option<&Completion>,
        now: EpochSeconds,
    ) -> Result<Option<ReviewRow>> {
        let sql = format!(
            "UPDATE reviews SET status = 'failed', error = $1, completed_at = $2,
             cost = COALESCE($3, cost), tokens = COALESCE($4, tokens), model = COALESCE($5, model)
             WHERE id = $6 AND status IN ('pending', 'running') RETURNING {REVIEW_COLUMNS}"
        );
        let query = sqlx::query(&sql)
            .bind(error)
            .bind(now.0)
            .bind(spent.map(|s| s.cost))
            .bind(spent.map(|s| s.tokens))
            .bind(spent.map(|s| s.model.as_str()))
            .bind(id);
        self.optional(query, review_from_row).await
    }

    /// pending or running -> skipped: the PR's patch id is unchanged since its last completed
    /// review (docs/architecture.md, Lifecycle extras). None when already terminal.
    pub async fn skip_review(
        &self,
        id: i64,
        patch_id: Option<&str>,
        now: EpochSeconds,
    ) -> Result<Option<ReviewRow>> {
        self.skip_review_with(id, patch_id, None, now).await
    }

    /// pending or running -> skipped with why in `error` and no patch id: a review that did
    /// not run for a reason the PR's author should read, such as a reached monthly budget
    /// (docs/review-service.md, "Monthly budget") or an answer over its limits
    /// (docs/review-service.md, "Answers in review threads"). None when already terminal.
    pub async fn skip_review_because(
        &self,
        id: i64,
        error: &str,
        now: EpochSeconds,
    ) -> Result<Option<ReviewRow>> {
        self.skip_review_with(id, None, Some(error), now).await
    }

    async fn skip_review_with(
        &self,
        id: i64,
        patch_id: Option<&str>,
        error: Option<&str>,
        now: EpochSeconds,
    ) -> Result<Option<ReviewRow>> {
        let sql = format!(
            "UPDATE reviews SET status = 'skipped', patch_id = $1, error = COALESCE($2, error), completed_at = $3
             WHERE id = $4 AND status IN ('pending', 'running') RETURNING {REVIEW_COLUMNS}"
        );
        let query = sqlx::query(&sql)
            .bind(patch_id)
            .bind(error)
            .bind(now.0)
            .bind(id);
        self.optional(query, review_from_row).await
    }

    /// Whether an improver run (pr_number 0) of `repo` is pending or running.
    pub async fn improver_active(&self, repo: &str) -> Result<bool> {
        let query = sqlx::query(
            "SELECT count(*) FROM reviews WHERE repo_full_name = $1 AND pr_number = 0
             AND status IN ('pending', 'running')",
        );
        self.any(query.bind(repo)).await
    }

    /// The newest improver run of `repo` that finished without failing (completed: a PR was
    /// opened; skipped: nothing to learn), if any.
    pub async fn last_finished_improver_run(&self, repo: &str) -> Result<Option<ReviewRow>> {
        let sql = format!(
            "SELECT {REVIEW_COLUMNS} FROM reviews WHERE repo_full_name = $1 AND pr_number = 0
             AND status IN ('completed', 'skipped') ORDER BY id DESC LIMIT 1"
        );
        self.optional(sqlx::query(&sql).bind(repo), review_from_row)
            .await
    }

    /// Completed PR reviews of `repo` (pr_number > 0) that completed after `since` (epoch
    /// seconds), oldest first, at most `limit`.
    pub async fn completed_reviews_since(
        &self,
        repo: &str,
        since: i64,
        limit: i64,
    ) -> Result<Vec<ReviewRow>> {
        let sql = format!(
            "SELECT {REVIEW_COLUMNS} FROM reviews WHERE repo_full_name = $1 AND pr_number > 0
             AND status = 'completed' AND completed_at > $2 ORDER BY id LIMIT $3"
        );
        let query = sqlx::query(&sql).bind(repo).bind(since).bind(limit);
        self.all(query, review_from_row).await
    }

    /// At boot: every review left pending or running becomes failed with `error`
    /// (docs/architecture.md, Lifecycle extras). Returns the rows changed.
    pub async fn fail_unfinished(&self, error: &str, now: EpochSeconds) -> Result<Vec<ReviewRow>> {
        let sql = format!(
            "UPDATE reviews SET status = 'failed', error = $1, completed_at = $2
             WHERE status IN ('pending', 'running') RETURNING {REVIEW_COLUMNS}"
        );
        let query = sqlx::query(&sql).bind(error).bind(now.0);
        self.all(query, review_from_row).await
    }

    /// The patch id of the PR's newest completed review, if any.
    pub async fn last_completed_patch_id(&self, repo: &str, pr: i64) -> Result<Option<String>> {
        self.of_last_completed(repo, pr, "patch_id").await
    }

    /// The head SHA of the PR's last completed review: where an incremental review starts
    /// (docs/review-service.md, "Incremental review").
    pub async fn last_reviewed_head(&self, repo: &str, pr: i64) -> Result<Option<String>> {
        self.of_last_completed(repo, pr, "head_sha").await
    }

    /// `column` (a text column of reviews, named by the caller) of the PR's last completed
    /// review that has one.
    async fn of_last_completed(
        &self,
        repo: &str,
        pr: i64,
        column: &'static str,
    ) -> Result<Option<String>> {
        let sql = format!(
            "SELECT {column} FROM reviews WHERE repo_full_name = $1 AND pr_number = $2
             AND status = 'completed' AND {column} IS NOT NULL ORDER BY id DESC LIMIT 1"
        );
        let value = |r: &AnyRow| Ok(r.try_get::<String, _>(0)?);
        self.optional(sqlx::query(&sql).bind(repo).bind(pr), value)
            .await
    }

    /// Reviews of a repo (and PR when given), newest id first, at most `limit`
    /// (docs/review-service.md §4: last 200).
    pub async fn reviews_for(
        &self,
        repo: &str,
        pr_number: Option<i64>,
        limit: i64,
    ) -> Result<Vec<ReviewRow>> {
        let sql = format!(
            "SELECT {REVIEW_COLUMNS} FROM reviews WHERE repo_full_name = $1
             AND ($2 IS NULL OR pr_number = $3) ORDER BY id DESC LIMIT $4"
        );
        let query = sqlx::query(&sql)
            .bind(repo)
            .bind(pr_number)
            .bind(pr_number)
            .bind(limit);
        self.all(query, review_from_row).await
    }

    /// GET /api/reviews (docs/review-service.md §4, Reviews): reviews matching the filter and the
    /// exact status (skipped included), newest id first, at most `limit` rows; with `before`,
    /// only ids under it (the next page, docs/review-service.md, "Review list paging").
    pub async fn list_reviews(
        &self,
        f: &StatsFilter,
        status: Option<&str>,
        before: Option<i64>,
        limit: i64,
    ) -> Result<Vec<ReviewRow>> {
        let mut q = Sql::new(format!("SELECT {REVIEW_COLUMNS} FROM reviews r WHERE true"));
        push_full_filter(&mut q, f);
        if let Some(s) = status {
            q.push(" AND r.status = ").push_bind(s.to_owned());
        }
        if let Some(id) = before {
            q.push(" AND r.id < ").push_bind(id);
        }
        q.push(" ORDER BY r.id DESC LIMIT ").push_bind(limit);
        let rows = bound!(sqlx::query::<Any>(&q.text), q)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(review_from_row).collect()
    }

    /// How many reviews [`Store::list_reviews`] pages through: those matching the filter and
    /// the exact status, whatever `before` and `limit`.
    pub async fn count_reviews(&self, f: &StatsFilter, status: Option<&str>) -> Result<i64> {
        let mut q = Sql::new("SELECT count(*) FROM reviews r WHERE true".to_owned());
        push_full_filter(&mut q, f);
        if let Some(s) = status {
            q.push(" AND r.status = ").push_bind(s.to_owned());
        }
        let row = bound!(sqlx::query::<Any>(&q.text), q)
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get::<i64, _>(0)?)
    }

    /// True when a review of the PR other than `except` is pending or running (the automatic
    /// retry stands down then, docs/review-service.md §3); answers (triggers `reply` and `ask`)
    /// do not count.
    pub async fn pr_has_active_review(&self, repo: &str, pr: i64, except: i64) -> Result<bool> {
        let query = sqlx::query(
            "SELECT count(*) FROM reviews WHERE repo_full_name = $1 AND pr_number = $2 AND id != $3
             AND status IN ('pending', 'running') AND coalesce(\"trigger\", '') NOT IN ('reply', 'ask')",
        );
        self.any(query.bind(repo).bind(pr).bind(except)).await
    }
}

/// Inserts a pending review inside `tx` and returns the re-read row.
pub(crate) async fn insert_review_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    new: &NewReview,
    now: EpochSeconds,
) -> Result<ReviewRow> {
    let sql = format!(
        "INSERT INTO reviews (repo_full_name, pr_number, title, status, \"trigger\", attempt, created_at, head_sha)
         VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7) RETURNING {REVIEW_COLUMNS}"
    );
    let row = sqlx::query(&sql)
        .bind(&new.repo_full_name)
        .bind(new.pr_number)
        .bind(&new.title)
        .bind(new.trigger.map(Trigger::as_str))
        .bind(new.attempt)
        .bind(now.0)
        .bind(&new.head_sha)
        .fetch_one(&mut **tx)
        .await?;
    review_from_row(&row)
}

/// The triggers the one-review-per-head rule applies to: the pull_request events. A `/review`
/// command, a retry (automatic or by hand) and an improver run are asked for on purpose and
/// always run.
fn is_pull_request_event(trigger: Option<Trigger>) -> bool {
    matches!(
        trigger,
        Some(Trigger::Opened | Trigger::Synchronize | Trigger::Reopened | Trigger::ReadyForReview)
    )
}

/// The one-review-per-head rule (docs/architecture.md, "One review per head"),
/// inside `tx`: when `new` comes from a pull_request event and the PR already has a pending,
/// running or completed review of the same head, `new` is inserted as `skipped` (completed at
/// `now`, epoch seconds) with the reason in `error` ("already reviewed at <sha>" or "coalesced
/// into the waiting review #N") and returned; None otherwise, writing nothing. Callers are
/// serialised (SQLite's write lock taken by the transaction's first write, PostgreSQL's
/// promoter lock), so two deliveries of one head never both become pending.
pub(crate) async fn skip_if_head_reviewed_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    new: &NewReview,
    now: EpochSeconds,
) -> Result<Option<ReviewRow>> {
    let Some(head) = new
        .head_sha
        .as_deref()
        .filter(|_| is_pull_request_event(new.trigger))
    else {
        return Ok(None);
    };
    let earlier = sqlx::query(
        "SELECT id, status FROM reviews WHERE repo_full_name = $1 AND pr_number = $2
         AND head_sha = $3 AND status IN ('pending', 'running', 'completed')
         ORDER BY id DESC LIMIT 1",
    )
    .bind(&new.repo_full_name)
    .bind(new.pr_number)
    .bind(head)
    .fetch_optional(&mut **tx)
    .await?;
    let Some(earlier) = earlier else {
        return Ok(None);
    };
    let (id, status): (i64, String) = (earlier.try_get(0)?, earlier.try_get(1)?);
    let short = head.get(..12).unwrap_or(head);
    let reason = if status == "completed" {
        format!("already reviewed at {short} (review #{id})")
    } else {
        format!("coalesced into the {status} review #{id} of {short}")
    };
    let sql = format!(
        "INSERT INTO reviews (repo_full_name, pr_number, title, status, error, \"trigger\", attempt,
                              created_at, completed_at, head_sha)
         VALUES ($1, $2, $3, 'skipped', $4, $5, $6, $7, $8, $9) RETURNING {REVIEW_COLUMNS}"
    );
    let row = sqlx::query(&sql)
        .bind(&new.repo_full_name)
        .bind(new.pr_number)
        .bind(&new.title)
        .bind(reason)
        .bind(new.trigger.map(Trigger::as_str))
        .bind(new.attempt)
        .bind(now.0)
        .bind(now.0)
        .bind(head)
        .fetch_one(&mut **tx)
        .await?;
    Ok(Some(review_from_row(&row)?))
}
