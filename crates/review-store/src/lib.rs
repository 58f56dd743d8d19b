//! SQLite persistence of the review service (spec/review-service.md section 2; DESIGN.md,
//! Store). All SQL of the service lives here. Column names are the spec's field names,
//! timestamps are integer epoch seconds, `enabled` is 0/1. Multi-row writes run in explicit
//! transactions so a failure never leaves a half-written record.

mod deliveries;
mod read_query;
mod rows;
mod skills;
mod stats;

pub use deliveries::DELIVERY_WINDOW_SECS;
pub use stats::*;

pub use read_query::{
    HIDDEN_TABLES, READ_QUERY_CELL_CHARS, READ_QUERY_MAX_ROWS, READ_QUERY_MAX_SQL_BYTES,
    READ_QUERY_MAX_VALUE_BYTES, READ_QUERY_TIMEOUT, REFUSED_FUNCTIONS, ReadQueryResult,
};
pub use skills::NewSkill;

use review_domain::{FindingRow, NewFinding, RepoRow, ReviewRow, ReviewStatus, Trigger};
use rows::{finding_from_row, repo_from_row, review_from_row};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row, SqlitePool};
use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

/// Errors of the store: the database failed, or the schema could not be brought up to date.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("invalid database URL {url:?}: {message}")]
    Url { url: String, message: String },
    /// A read-only query that is not one SELECT statement, or that reads a hidden table
    /// ([`Store::read_query`]); the message says what to change.
    #[error("query refused: {0}")]
    QueryRefused(String),
    /// SQLite rejected a read-only query ([`Store::read_query`]): syntax, unknown column, a
    /// value over [`READ_QUERY_MAX_VALUE_BYTES`]; the message is SQLite's.
    #[error("query failed: {0}")]
    Query(String),
    /// A read-only query ran longer than [`READ_QUERY_TIMEOUT`] and was interrupted.
    #[error("query interrupted after {} s: make it cheaper (filter, aggregate or add a LIMIT)", .0.as_secs())]
    QueryTimeout(Duration),
}

/// Result of the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A review to insert (spec section 3: it starts pending).
#[derive(Debug, Clone, PartialEq)]
pub struct NewReview {
    pub repo_full_name: String,
    pub pr_number: i64,
    pub title: Option<String>,
    /// What started it; None for improver runs (pr_number 0), whose trigger column is null.
    pub trigger: Option<Trigger>,
    /// 0 for a first run, 1 for the automatic retry.
    pub attempt: i64,
}

/// What a completed review records (spec section 3: cost, tokens, model, completed_at, and the
/// patch id on the success path).
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub cost: f64,
    pub tokens: i64,
    pub model: String,
    pub patch_id: Option<String>,
}

/// The review store over a SQLite pool. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
    /// Where the guarded read-only connections of [`Store::read_query`] open the database.
    chat_db: read_query::ChatDatabase,
}

const REVIEW_COLUMNS: &str = "id, repo_full_name, pr_number, title, session_id, status, error, \"trigger\", attempt, cost, tokens, model, check_run_id, patch_id, created_at, completed_at";
const FINDING_COLUMNS: &str = "id, review_id, repo_full_name, pr_number, kind, severity, event, path, line, body, github_review_id, github_comment_id, created_at";

impl Store {
    /// Open (creating if missing) the database at `url` (`sqlite://path` or `sqlite::memory:`),
    /// in WAL mode with a busy timeout, and run the migrations of `migrations/`.
    pub async fn open(url: &str) -> Result<Self> {
        let base = SqliteConnectOptions::from_str(url).map_err(|e| StoreError::Url {
            url: url.to_owned(),
            message: e.to_string(),
        })?;
        // An in-memory database is a shared-cache name: the chat connection opens the same one.
        let chat_db = read_query::ChatDatabase::from_options(&base);
        let opts = base
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .min_connections(1)
            .connect_with(opts)
            .await?;
        sqlx::migrate!("../../migrations").run(&pool).await?;
        Ok(Self { pool, chat_db })
    }

    /// The pool, for read-only queries of other modules of this crate's users (tests).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    // ---- repos ----------------------------------------------------------------------------

    /// The one registration path (spec section 6 rule 2): insert `full_name` with enabled 0, or
    /// update only installation_id of an existing row. Returns the re-read row and whether
    /// anything changed (callers publish repo:updated only then).
    pub async fn register_repo(
        &self,
        full_name: &str,
        installation_id: i64,
        now: i64,
    ) -> Result<(RepoRow, bool)> {
        let mut tx = self.pool.begin().await?;
        let inserted = sqlx::query(
            "INSERT INTO repos (full_name, installation_id, enabled, created_at) VALUES (?, ?, 0, ?)
             ON CONFLICT (full_name) DO NOTHING",
        )
        .bind(full_name)
        .bind(installation_id)
        .bind(now)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let updated = if inserted == 0 {
            sqlx::query(
                "UPDATE repos SET installation_id = ? WHERE full_name = ? AND installation_id != ?",
            )
            .bind(installation_id)
            .bind(full_name)
            .bind(installation_id)
            .execute(&mut *tx)
            .await?
            .rows_affected()
        } else {
            0
        };
        let row = sqlx::query("SELECT * FROM repos WHERE full_name = ?")
            .bind(full_name)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok((repo_from_row(&row)?, inserted + updated > 0))
    }

    /// One repo, or None when not registered.
    pub async fn repo(&self, full_name: &str) -> Result<Option<RepoRow>> {
        let row = sqlx::query("SELECT * FROM repos WHERE full_name = ?")
            .bind(full_name)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref()
            .map(repo_from_row)
            .transpose()
            .map_err(Into::into)
    }

    /// Every repo, newest created_at first (spec section 4, GET /api/repos).
    pub async fn repos(&self) -> Result<Vec<RepoRow>> {
        let rows = sqlx::query("SELECT * FROM repos ORDER BY created_at DESC, full_name")
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| repo_from_row(r).map_err(Into::into))
            .collect()
    }

    /// PUT repo (spec section 4): prompt and model are written as given (None clears them);
    /// enabled only when Some. Returns the re-read row, or None when not registered.
    pub async fn update_repo(
        &self,
        full_name: &str,
        prompt: Option<&str>,
        model: Option<&str>,
        enabled: Option<i64>,
    ) -> Result<Option<RepoRow>> {
        sqlx::query(
            "UPDATE repos SET prompt = ?, model = ?, enabled = COALESCE(?, enabled) WHERE full_name = ?",
        )
        .bind(prompt)
        .bind(model)
        .bind(enabled)
        .bind(full_name)
        .execute(&self.pool)
        .await?;
        self.repo(full_name).await
    }

    /// Set only `enabled` (0 or 1). Returns the re-read row, or None when not registered.
    pub async fn set_repo_enabled(
        &self,
        full_name: &str,
        enabled: bool,
    ) -> Result<Option<RepoRow>> {
        sqlx::query("UPDATE repos SET enabled = ? WHERE full_name = ?")
            .bind(i64::from(enabled))
            .bind(full_name)
            .execute(&self.pool)
            .await?;
        self.repo(full_name).await
    }

    /// Delete a repo; true when a row was removed.
    pub async fn delete_repo(&self, full_name: &str) -> Result<bool> {
        let n = sqlx::query("DELETE FROM repos WHERE full_name = ?")
            .bind(full_name)
            .execute(&self.pool)
            .await?
            .rows_affected();
        Ok(n > 0)
    }

    // ---- reviews --------------------------------------------------------------------------

    /// Insert a pending review and return the re-read row.
    pub async fn insert_review(&self, new: &NewReview, now: i64) -> Result<ReviewRow> {
        let row = sqlx::query(&format!(
            "INSERT INTO reviews (repo_full_name, pr_number, title, status, \"trigger\", attempt, created_at)
             VALUES (?, ?, ?, 'pending', ?, ?, ?) RETURNING {REVIEW_COLUMNS}"
        ))
        .bind(&new.repo_full_name)
        .bind(new.pr_number)
        .bind(&new.title)
        .bind(new.trigger.map(Trigger::as_str))
        .bind(new.attempt)
        .bind(now)
        .fetch_one(&self.pool)
        .await?;
        Ok(review_from_row(&row)?)
    }

    /// One review, or None.
    pub async fn review(&self, id: i64) -> Result<Option<ReviewRow>> {
        let row = sqlx::query(&format!(
            "SELECT {REVIEW_COLUMNS} FROM reviews WHERE id = ?"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        optional_review(row)
    }

    /// pending -> running with the agent session id (spec section 3). None when the review
    /// was not pending (stopped or failed meanwhile).
    pub async fn start_review(&self, id: i64, session_id: &str) -> Result<Option<ReviewRow>> {
        self.transition(
            id,
            "status = 'running', session_id = ?1",
            "status = 'pending'",
            Some(session_id),
        )
        .await
    }

    /// Record the check run of a review.
    pub async fn set_check_run_id(&self, id: i64, check_run_id: i64) -> Result<()> {
        sqlx::query("UPDATE reviews SET check_run_id = ? WHERE id = ?")
            .bind(check_run_id)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// running -> completed with cost, tokens, model, patch id and completed_at (spec section 3).
    /// None when the review was no longer running.
    pub async fn complete_review(
        &self,
        id: i64,
        done: &Completion,
        now: i64,
    ) -> Result<Option<ReviewRow>> {
        let row = sqlx::query(&format!(
            "UPDATE reviews SET status = 'completed', cost = ?, tokens = ?, model = ?, patch_id = ?,
             completed_at = ?, error = NULL WHERE id = ? AND status = 'running' RETURNING {REVIEW_COLUMNS}"
        ))
        .bind(done.cost)
        .bind(done.tokens)
        .bind(&done.model)
        .bind(&done.patch_id)
        .bind(now)
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        optional_review(row)
    }

    /// pending or running -> failed with `error` (spec section 3). Tokens, cost and model are
    /// recorded when known (a failed run still spent them). None when already terminal.
    pub async fn fail_review(
        &self,
        id: i64,
        error: &str,
        spent: Option<&Completion>,
        now: i64,
    ) -> Result<Option<ReviewRow>> {
        let row = sqlx::query(&format!(
            "UPDATE reviews SET status = 'failed', error = ?, completed_at = ?,
             cost = COALESCE(?, cost), tokens = COALESCE(?, tokens), model = COALESCE(?, model)
             WHERE id = ? AND status IN ('pending', 'running') RETURNING {REVIEW_COLUMNS}"
        ))
        .bind(error)
        .bind(now)
        .bind(spent.map(|s| s.cost))
        .bind(spent.map(|s| s.tokens))
        .bind(spent.map(|s| s.model.as_str()))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        optional_review(row)
    }

    /// pending or running -> skipped: the PR's patch id is unchanged since its last completed
    /// review (DESIGN.md, Lifecycle extras). None when already terminal.
    pub async fn skip_review(
        &self,
        id: i64,
        patch_id: Option<&str>,
        now: i64,
    ) -> Result<Option<ReviewRow>> {
        let row = sqlx::query(&format!(
            "UPDATE reviews SET status = 'skipped', patch_id = ?, completed_at = ?
             WHERE id = ? AND status IN ('pending', 'running') RETURNING {REVIEW_COLUMNS}"
        ))
        .bind(patch_id)
        .bind(now)
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        optional_review(row)
    }

    async fn transition(
        &self,
        id: i64,
        set: &str,
        when: &str,
        arg: Option<&str>,
    ) -> Result<Option<ReviewRow>> {
        let row = sqlx::query(&format!(
            "UPDATE reviews SET {set} WHERE id = ?2 AND {when} RETURNING {REVIEW_COLUMNS}"
        ))
        .bind(arg)
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        optional_review(row)
    }

    /// Whether an improver run (pr_number 0) of `repo` is pending or running.
    pub async fn improver_active(&self, repo: &str) -> Result<bool> {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM reviews WHERE repo_full_name = ? AND pr_number = 0
             AND status IN ('pending', 'running')",
        )
        .bind(repo)
        .fetch_one(&self.pool)
        .await?;
        Ok(n > 0)
    }

    /// The newest improver run of `repo` that finished without failing (completed: a PR was
    /// opened; skipped: nothing to learn), if any.
    pub async fn last_finished_improver_run(&self, repo: &str) -> Result<Option<ReviewRow>> {
        let row = sqlx::query(&format!(
            "SELECT {REVIEW_COLUMNS} FROM reviews WHERE repo_full_name = ? AND pr_number = 0
             AND status IN ('completed', 'skipped') ORDER BY id DESC LIMIT 1"
        ))
        .bind(repo)
        .fetch_optional(&self.pool)
        .await?;
        optional_review(row)
    }

    /// Completed PR reviews of `repo` (pr_number > 0) that completed after `since` (epoch
    /// seconds), oldest first, at most `limit`.
    pub async fn completed_reviews_since(
        &self,
        repo: &str,
        since: i64,
        limit: i64,
    ) -> Result<Vec<ReviewRow>> {
        let rows = sqlx::query(&format!(
            "SELECT {REVIEW_COLUMNS} FROM reviews WHERE repo_full_name = ? AND pr_number > 0
             AND status = 'completed' AND completed_at > ? ORDER BY id LIMIT ?"
        ))
        .bind(repo)
        .bind(since)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|r| Ok(review_from_row(r)?)).collect()
    }

    /// At boot: every review left pending or running becomes failed with `error` (DESIGN.md,
    /// Lifecycle extras). Returns the rows changed.
    pub async fn fail_unfinished(&self, error: &str, now: i64) -> Result<Vec<ReviewRow>> {
        let rows = sqlx::query(&format!(
            "UPDATE reviews SET status = 'failed', error = ?, completed_at = ?
             WHERE status IN ('pending', 'running') RETURNING {REVIEW_COLUMNS}"
        ))
        .bind(error)
        .bind(now)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| review_from_row(r).map_err(Into::into))
            .collect()
    }

    /// The patch id of the PR's newest completed review, if any.
    pub async fn last_completed_patch_id(
        &self,
        repo: &str,
        pr_number: i64,
    ) -> Result<Option<String>> {
        let row = sqlx::query(
            "SELECT patch_id FROM reviews WHERE repo_full_name = ? AND pr_number = ?
             AND status = 'completed' AND patch_id IS NOT NULL ORDER BY id DESC LIMIT 1",
        )
        .bind(repo)
        .bind(pr_number)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| r.get::<String, _>(0)))
    }

    /// Reviews of a repo (and PR when given), newest id first, at most `limit`
    /// (spec section 4: last 200).
    pub async fn reviews_for(
        &self,
        repo: &str,
        pr_number: Option<i64>,
        limit: i64,
    ) -> Result<Vec<ReviewRow>> {
        let rows = sqlx::query(&format!(
            "SELECT {REVIEW_COLUMNS} FROM reviews WHERE repo_full_name = ?
             AND (? IS NULL OR pr_number = ?) ORDER BY id DESC LIMIT ?"
        ))
        .bind(repo)
        .bind(pr_number)
        .bind(pr_number)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| review_from_row(r).map_err(Into::into))
            .collect()
    }

    /// True when a review of the PR other than `except` is pending or running (the automatic
    /// retry stands down then, spec section 3).
    pub async fn pr_has_active_review(
        &self,
        repo: &str,
        pr_number: i64,
        except: i64,
    ) -> Result<bool> {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM reviews WHERE repo_full_name = ? AND pr_number = ? AND id != ?
             AND status IN ('pending', 'running')",
        )
        .bind(repo)
        .bind(pr_number)
        .bind(except)
        .fetch_one(&self.pool)
        .await?;
        Ok(n > 0)
    }

    // ---- findings -------------------------------------------------------------------------

    /// Insert findings of `review` in one transaction (all or none), returning the rows.
    pub async fn insert_findings(
        &self,
        review: &ReviewRow,
        findings: &[NewFinding],
        now: i64,
    ) -> Result<Vec<FindingRow>> {
        let mut tx = self.pool.begin().await?;
        let mut out = Vec::with_capacity(findings.len());
        for f in findings {
            let row = sqlx::query(&format!(
                "INSERT INTO findings (review_id, repo_full_name, pr_number, kind, severity, event, path,
                 line, body, github_review_id, github_comment_id, created_at)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING {FINDING_COLUMNS}"
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
            .bind(now)
            .fetch_one(&mut *tx)
            .await?;
            out.push(finding_from_row(&row)?);
        }
        tx.commit().await?;
        Ok(out)
    }

    /// Findings of one review, ordered by id (an unknown review has none).
    pub async fn findings_for_review(&self, review_id: i64) -> Result<Vec<FindingRow>> {
        let rows = sqlx::query(&format!(
            "SELECT {FINDING_COLUMNS} FROM findings WHERE review_id = ? ORDER BY id"
        ))
        .bind(review_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| finding_from_row(r).map_err(Into::into))
            .collect()
    }

    /// Every finding recorded on a PR, oldest first: what a re-review must not post again.
    pub async fn findings_for_pr(&self, repo: &str, pr_number: i64) -> Result<Vec<FindingRow>> {
        let rows = sqlx::query(&format!(
            "SELECT {FINDING_COLUMNS} FROM findings WHERE repo_full_name = ? AND pr_number = ? ORDER BY id"
        ))
        .bind(repo)
        .bind(pr_number)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| finding_from_row(r).map_err(Into::into))
            .collect()
    }

    // ---- settings -------------------------------------------------------------------------

    /// Every stored setting.
    pub async fn settings(&self) -> Result<BTreeMap<String, String>> {
        let rows = sqlx::query("SELECT key, value FROM settings ORDER BY key")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<String, _>(0), r.get::<String, _>(1)))
            .collect())
    }

    /// One stored setting.
    pub async fn setting(&self, key: &str) -> Result<Option<String>> {
        let row = sqlx::query("SELECT value FROM settings WHERE key = ?")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.get::<String, _>(0)))
    }

    /// Store (Some) or delete (None) a setting.
    pub async fn put_setting(&self, key: &str, value: Option<&str>) -> Result<()> {
        match value {
            Some(v) => {
                sqlx::query(
                    "INSERT INTO settings (key, value) VALUES (?, ?)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                )
                .bind(key)
                .bind(v)
                .execute(&self.pool)
                .await?
            }
            None => {
                sqlx::query("DELETE FROM settings WHERE key = ?")
                    .bind(key)
                    .execute(&self.pool)
                    .await?
            }
        };
        Ok(())
    }
}

/// Map an optional review row (the RETURNING of a conditional update, or a lookup).
fn optional_review(row: Option<sqlx::sqlite::SqliteRow>) -> Result<Option<ReviewRow>> {
    Ok(row.as_ref().map(review_from_row).transpose()?)
}

/// Parse a status column; unknown text (never written by us) reads as failed.
pub fn status_of(row: &ReviewRow) -> ReviewStatus {
    row.status.parse().unwrap_or(ReviewStatus::Failed)
}
