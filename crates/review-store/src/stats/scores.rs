//! GET /api/stats/repos (docs/review-service.md, "Repository scores"): per repository, the
//! numbers the repositories table sorts by and the repository page's cards show, and the files
//! with most findings named with their repository. Raw rows of the filtered window: the
//! dashboard asks for 30 days, which the created_at index bounds.

use super::TOP_FILES_ROWS;
use crate::sql::{Sql, all, push_full_filter};
use crate::{Result, Store};
use review_domain::StatsFilter;
use serde::Serialize;

/// One repository's numbers over the filtered pull request reviews (skipped reviews and
/// improver runs aside).
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct RepoScoreRow {
    pub repo_full_name: String,
    /// Reviews that ran or are running (not skipped).
    pub reviews: i64,
    pub completed: i64,
    pub failed: i64,
    /// Pending plus running.
    pub in_flight: i64,
    /// Sum of cost, USD; 0, never null.
    pub cost: f64,
    /// Mean seconds from created_at to completed_at over the completed reviews; null when none
    /// completed.
    pub avg_duration: Option<f64>,
    /// Inline findings of those reviews.
    pub findings: i64,
    /// Inline findings of severity blocking.
    pub blocking: i64,
    /// Inline findings of severity nit.
    pub nits: i64,
    /// Completed reviews that posted at least one blocking finding.
    pub blocking_reviews: i64,
    /// The newest review's created_at, epoch seconds.
    pub last_review_at: i64,
}

/// A file with its repository and how many inline findings it got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct RepoFileRow {
    pub repo_full_name: String,
    pub path: String,
    pub count: i64,
}

/// The body of GET /api/stats/repos.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RepoScores {
    /// One row per repository with a review in the window, most reviews first.
    pub repos: Vec<RepoScoreRow>,
    /// The 10 files with most inline findings, each with its repository.
    pub top_files: Vec<RepoFileRow>,
}

impl Store {
    /// The repository scores of the reviews `f` selects: see the module's documentation.
    pub async fn repo_scores(&self, f: &StatsFilter) -> Result<RepoScores> {
        let db = self.backend;
        let window = |q: &mut Sql| {
            q.push(
                "WITH w AS (SELECT r.id, r.repo_full_name, r.status, r.cost, r.created_at,
                 r.completed_at FROM reviews r WHERE r.status != 'skipped' AND r.pr_number != 0",
            );
            push_full_filter(q, f);
            q.push(")");
        };
        let mut repos = Sql::new(String::new());
        window(&mut repos);
        repos.push(&format!(
            ", fc AS (SELECT f.review_id, count(*) AS n,
                 sum(CASE WHEN f.severity = 'blocking' THEN 1 ELSE 0 END) AS b,
                 sum(CASE WHEN f.severity = 'nit' THEN 1 ELSE 0 END) AS t
                 FROM findings f JOIN w ON f.review_id = w.id WHERE f.kind = 'inline'
                 GROUP BY f.review_id)
             SELECT w.repo_full_name AS repo_full_name,
                 CAST(count(*) AS BIGINT) AS reviews,
                 CAST(sum(CASE WHEN w.status = 'completed' THEN 1 ELSE 0 END) AS BIGINT) AS completed,
                 CAST(sum(CASE WHEN w.status = 'failed' THEN 1 ELSE 0 END) AS BIGINT) AS failed,
                 CAST(sum(CASE WHEN w.status IN ('pending', 'running') THEN 1 ELSE 0 END) AS BIGINT) AS in_flight,
                 {} AS cost,
                 CASE WHEN sum(CASE WHEN w.status = 'completed' AND w.completed_at IS NOT NULL THEN 1 ELSE 0 END) > 0
                     THEN CAST(sum(CASE WHEN w.status = 'completed' THEN coalesce(w.completed_at - w.created_at, 0) ELSE 0 END) AS DOUBLE PRECISION)
                         / sum(CASE WHEN w.status = 'completed' AND w.completed_at IS NOT NULL THEN 1 ELSE 0 END)
                 END AS avg_duration,
                 CAST(coalesce(sum(fc.n), 0) AS BIGINT) AS findings,
                 CAST(coalesce(sum(fc.b), 0) AS BIGINT) AS blocking,
                 CAST(coalesce(sum(fc.t), 0) AS BIGINT) AS nits,
                 CAST(sum(CASE WHEN w.status = 'completed' AND fc.b > 0 THEN 1 ELSE 0 END) AS BIGINT) AS blocking_reviews,
                 CAST(max(w.created_at) AS BIGINT) AS last_review_at
             FROM w LEFT JOIN fc ON fc.review_id = w.id
             GROUP BY w.repo_full_name ORDER BY reviews DESC, repo_full_name",
            db.total("w.cost")
        ));
        let mut files = Sql::new(String::new());
        window(&mut files);
        files
            .push(
                " SELECT w.repo_full_name AS repo_full_name, f.path AS path,
                 CAST(count(*) AS BIGINT) AS count
                 FROM findings f JOIN w ON f.review_id = w.id
                 WHERE f.kind = 'inline' AND f.path IS NOT NULL
                 GROUP BY w.repo_full_name, f.path ORDER BY count DESC, repo_full_name, path LIMIT ",
            )
            .push_bind(TOP_FILES_ROWS);
        let (repos, top_files) =
            futures::try_join!(all(&self.pool, &repos), all(&self.pool, &files))?;
        Ok(RepoScores { repos, top_files })
    }
}
