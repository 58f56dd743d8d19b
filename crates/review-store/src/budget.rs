//! Monthly budgets (docs/review-service.md, "Monthly budget"): the month-to-date spend of the
//! whole service and of each repository (sums of ReviewRow.cost, USD), and the record of the
//! one PR comment a repository gets in a month when its budget is reached.

use crate::{Result, Store};
use review_domain::EpochSeconds;
use sqlx::Row;

impl Store {
    /// The sum of ReviewRow.cost (USD) of the reviews created at or after `since`, of `repo`
    /// or, with None, of every repository; 0 when there is none. Reviews that spent nothing
    /// (cost null) count 0.
    pub async fn spend_since(&self, repo: Option<&str>, since: EpochSeconds) -> Result<f64> {
        let row =
            match repo {
                Some(repo) => sqlx::query(
                    "SELECT SUM(cost) FROM reviews WHERE created_at >= $1 AND repo_full_name = $2",
                )
                .bind(since.0)
                .bind(repo)
                .fetch_one(&self.pool)
                .await?,
                None => {
                    sqlx::query("SELECT SUM(cost) FROM reviews WHERE created_at >= $1")
                        .bind(since.0)
                        .fetch_one(&self.pool)
                        .await?
                }
            };
        Ok(row.try_get::<Option<f64>, _>(0)?.unwrap_or(0.0))
    }

    /// [`Store::spend_since`] per repository: `(repo_full_name, spent)` of every repository
    /// with a review created at or after `since` that spent something, by name.
    pub async fn spend_by_repo_since(&self, since: EpochSeconds) -> Result<Vec<(String, f64)>> {
        let rows = sqlx::query(
            "SELECT repo_full_name, SUM(cost) FROM reviews
             WHERE created_at >= $1 AND cost IS NOT NULL
             GROUP BY repo_full_name ORDER BY repo_full_name",
        )
        .bind(since.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let spent: Option<f64> = r.try_get(1)?;
                Ok((r.try_get(0)?, spent.unwrap_or(0.0)))
            })
            .collect()
    }

    /// Records that the budget notice of `repo` for `month` (`YYYY-MM`, UTC) is posted on PR
    /// `pr_number`: true when this call wrote the row, so the caller posts the comment; false
    /// when a row was already there (this or another replica posted it). One
    /// `INSERT ... ON CONFLICT DO NOTHING`, so replicas racing on PostgreSQL agree.
    pub async fn insert_budget_notice(
        &self,
        repo: &str,
        month: &str,
        pr_number: i64,
        now: EpochSeconds,
    ) -> Result<bool> {
        let query = sqlx::query(
            "INSERT INTO budget_notices (repo_full_name, month, pr_number, posted_at)
             VALUES ($1, $2, $3, $4) ON CONFLICT (repo_full_name, month) DO NOTHING",
        )
        .bind(repo)
        .bind(month)
        .bind(pr_number)
        .bind(now.0);
        Ok(self.changed(query).await? == 1)
    }
}
