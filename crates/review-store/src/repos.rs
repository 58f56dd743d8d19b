//! The `repos` table (docs/review-service.md §2, RepoRow): registration from the forge, the
//! dashboard's edits, enabling and deletion of a repository.

use crate::rows::repo_from_row;
use crate::{Result, Store};
use review_domain::EpochSeconds;
use review_domain::RepoRow;

impl Store {
    /// The one registration path (docs/review-service.md §6 rule 2): insert `full_name` with
    /// enabled 0, or update only installation_id of an existing row. Returns the re-read row and
    /// whether anything changed (callers publish repo:updated only then).
    pub async fn register_repo(
        &self,
        full_name: &str,
        installation_id: i64,
        now: EpochSeconds,
    ) -> Result<(RepoRow, bool)> {
        let mut tx = self.begin_write().await?;
        let inserted = sqlx::query(
            "INSERT INTO repos (full_name, installation_id, enabled, created_at) VALUES ($1, $2, 0, $3)
             ON CONFLICT (full_name) DO NOTHING",
        )
        .bind(full_name)
        .bind(installation_id)
        .bind(now.0)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let updated = if inserted == 0 {
            sqlx::query(
                "UPDATE repos SET installation_id = $1 WHERE full_name = $2 AND installation_id != $3",
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
        let row = sqlx::query("SELECT * FROM repos WHERE full_name = $1")
            .bind(full_name)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok((repo_from_row(&row)?, inserted + updated > 0))
    }

    /// One repo, or None when not registered.
    pub async fn repo(&self, full_name: &str) -> Result<Option<RepoRow>> {
        let query = sqlx::query("SELECT * FROM repos WHERE full_name = $1").bind(full_name);
        self.optional(query, repo_from_row).await
    }

    /// Every repo, newest created_at first (docs/review-service.md §4, GET /api/repos).
    pub async fn repos(&self) -> Result<Vec<RepoRow>> {
        let query = sqlx::query("SELECT * FROM repos ORDER BY created_at DESC, full_name");
        self.all(query, repo_from_row).await
    }

    /// PUT repo (docs/review-service.md §4): prompt and model are written as given (None clears
    /// them); enabled only when Some; min_severity and monthly_budget only when Some
    /// (`Some(None)` clears them; the caller checks min_severity is a severity and
    /// monthly_budget a positive number of USD). Returns the re-read row, or None when not
    /// registered.
    pub async fn update_repo(
        &self,
        full_name: &str,
        prompt: Option<&str>,
        model: Option<&str>,
        enabled: Option<i64>,
        min_severity: Option<Option<&str>>,
        monthly_budget: Option<Option<f64>>,
    ) -> Result<Option<RepoRow>> {
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "UPDATE repos SET prompt = $1, model = $2, enabled = COALESCE($3, enabled) WHERE full_name = $4",
        )
        .bind(prompt)
        .bind(model)
        .bind(enabled)
        .bind(full_name)
        .execute(&mut *tx)
        .await?;
        if let Some(min_severity) = min_severity {
            sqlx::query("UPDATE repos SET min_severity = $1 WHERE full_name = $2")
                .bind(min_severity)
                .bind(full_name)
                .execute(&mut *tx)
                .await?;
        }
        if let Some(monthly_budget) = monthly_budget {
            sqlx::query("UPDATE repos SET monthly_budget = $1 WHERE full_name = $2")
                .bind(monthly_budget)
                .bind(full_name)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        self.repo(full_name).await
    }

    /// Set only `enabled` (0 or 1) of `repo`. Returns the re-read row, or None when not
    /// registered.
    pub async fn set_repo_enabled(&self, repo: &str, on: bool) -> Result<Option<RepoRow>> {
        let query = sqlx::query("UPDATE repos SET enabled = $1 WHERE full_name = $2");
        self.changed(query.bind(i64::from(on)).bind(repo)).await?;
        self.repo(repo).await
    }

    /// Delete a repo; true when a row was removed.
    pub async fn delete_repo(&self, full_name: &str) -> Result<bool> {
        let query = sqlx::query("DELETE FROM repos WHERE full_name = $1").bind(full_name);
        Ok(self.changed(query).await? > 0)
    }
}
