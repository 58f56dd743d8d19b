//! The dashboard aggregates (docs/review-service.md §2, Aggregate rows; §4, Stats; §8,
//! limits), all computed in SQL: the queries here, their rows and bodies in `rows.rs`, how a
//! window is split between rollups and raw rows in `plan.rs`. (The GET /api/reviews list
//! shares the filter and lives with the reviews.)
//!
//! A window is split into whole UTC days, read from the per-day rollups that the triggers of
//! `migrations/0007_stats_rollups.sql` (PostgreSQL: `migrations/postgres/0002_stats_rollups.sql`)
//! keep exact, and the partial days at its edges, read from
//! the raw rows; both halves are summed in one `GROUP BY`. A filter on one repo or one model
//! reads the rollups split by repo and by model (`migrations/0013_stats_filter_rollups.sql`;
//! PostgreSQL: `migrations/postgres/0004_stats_filter_rollups.sql`) the same way; a filter on
//! both reads the raw rows only, through the indexes of `migrations/0009_stats_filter_indexes.sql`.
//! An all-time window reads per-repo and per-file totals
//! (`migrations/0008_stats_totals.sql`) instead of summing days. Percentiles walk an index and
//! stop at the rank. The SQL is assembled with the `$N` builder of `crate::sql`.

mod outcomes;
mod plan;
mod rows;
mod scores;

pub use rows::*;
pub use scores::{RepoFileRow, RepoScoreRow, RepoScores};

use crate::sql::{Sql, all, one, push_full_filter, scalar};
use crate::{Result, Store};
use plan::{Key, Plan, Rollups, filter_index, union_query};
use review_domain::StatsFilter;

/// Rows of topCost (docs/review-service.md §8).
pub const TOP_COST_ROWS: i64 = 5;
/// Rows of topFiles (docs/review-service.md §8).
pub const TOP_FILES_ROWS: i64 = 10;
/// The chart latency sample cap (docs/review-service.md §8).
pub const LATENCY_SAMPLE_CAP: i64 = 5000;

/// Severity and path of findings of the raw part of a plan: `SELECT <cols> FROM findings f JOIN
/// reviews r ... WHERE r.status != 'skipped' <raw conditions>`.
const FINDINGS_RAW: &str =
    "FROM reviews r JOIN findings f ON f.review_id = r.id WHERE r.status != 'skipped'";

/// `dur_sum` and `dur_n` of one raw review: its duration and 1 when it completed, else 0 and 0
/// (docs/review-service.md §2, ProjectStatsRow: averages are over completed reviews).
const RAW_DURATION: &str = "CASE WHEN r.status = 'completed' THEN coalesce(r.completed_at - r.created_at, 0) ELSE 0 END AS dur_sum,
     CASE WHEN r.status = 'completed' AND r.completed_at IS NOT NULL THEN 1 ELSE 0 END AS dur_n";

/// projects for one repo from `stats_day_facet`: non-skipped reviews, durations of the
/// completed ones (docs/review-service.md §2, ProjectStatsRow).
const FACET_PROJECTS: &str = "SELECT value AS repo_full_name, reviews, cost, tokens,
     CASE WHEN status = 'completed' THEN dur_sum ELSE 0 END AS dur_sum,
     CASE WHEN status = 'completed' THEN dur_n ELSE 0 END AS dur_n
     FROM stats_day_facet WHERE status != 'skipped'";

/// The mean duration of summed `dur_sum` and `dur_n`, null when nothing completed.
const MEAN_DURATION: &str =
    "CASE WHEN sum(dur_n) > 0 THEN CAST(sum(dur_sum) AS DOUBLE PRECISION) / sum(dur_n) END";

impl Store {
    /// GET /api/stats (docs/review-service.md §4, Stats): every aggregate excludes skipped reviews;
    /// latency and the projects' avg_duration are over completed reviews; allModels ignores the
    /// filter.
    pub async fn stats(&self, f: &StatsFilter) -> Result<Stats> {
        let plan = Plan::new(f);
        let pool = &self.pool;
        let db = self.backend;

        let projects = union_query(
            &plan,
            &format!(
                "repo_full_name, CAST(sum(reviews) AS BIGINT) AS reviews, {} AS cost,
                 CAST(sum(tokens) AS BIGINT) AS tokens, {MEAN_DURATION} AS avg_duration",
                db.total("cost")
            ),
            Rollups {
                all: if plan.all_time() {
                    "SELECT repo AS repo_full_name, reviews, cost, tokens, dur_sum, dur_n FROM stats_total_repo WHERE true"
                } else {
                    "SELECT repo AS repo_full_name, reviews, cost, tokens, dur_sum, dur_n FROM stats_day_repo WHERE true"
                },
                repo: Some((FACET_PROJECTS, Key::Facet)),
                model: Some((
                    if plan.all_time() {
                        "SELECT repo AS repo_full_name, reviews, cost, tokens, dur_sum, dur_n FROM stats_total_repo_model WHERE true"
                    } else {
                        "SELECT repo AS repo_full_name, reviews, cost, tokens, dur_sum, dur_n FROM stats_day_repo_model WHERE true"
                    },
                    Key::Column("model"),
                )),
            },
            &format!(
                "SELECT r.repo_full_name AS repo_full_name, 1 AS reviews, coalesce(r.cost, 0.0) AS cost,
                 coalesce(r.tokens, 0) AS tokens, {RAW_DURATION} FROM reviews r WHERE r.status != 'skipped'"
            ),
            "GROUP BY repo_full_name HAVING sum(reviews) > 0 ORDER BY reviews DESC, repo_full_name",
        );
        let models = union_query(
            &plan,
            &format!(
                "model, CAST(sum(reviews) AS BIGINT) AS reviews, {} AS cost,
                 CAST(sum(tokens) AS BIGINT) AS tokens",
                db.total("cost")
            ),
            Rollups {
                all: "SELECT model, reviews, cost, tokens FROM stats_day_model WHERE true",
                repo: Some((
                    if plan.all_time() {
                        "SELECT model, reviews, cost, tokens FROM stats_total_repo_model WHERE true"
                    } else {
                        "SELECT model, reviews, cost, tokens FROM stats_day_repo_model WHERE true"
                    },
                    Key::Column("repo"),
                )),
                model: Some((
                    "SELECT value AS model, reviews, cost, tokens FROM stats_day_facet WHERE status != 'skipped'",
                    Key::Facet,
                )),
            },
            "SELECT r.model AS model, 1 AS reviews, coalesce(r.cost, 0.0) AS cost,
             coalesce(r.tokens, 0) AS tokens
             FROM reviews r WHERE r.status != 'skipped' AND r.model IS NOT NULL",
            "GROUP BY model HAVING sum(reviews) > 0 ORDER BY reviews DESC, model",
        );
        let daily = union_query(
            &plan,
            &format!(
                "{} AS day, CAST(sum(reviews) AS BIGINT) AS reviews, {} AS cost,
                 CAST(sum(tokens) AS BIGINT) AS tokens",
                db.day_text("day"),
                db.total("cost")
            ),
            Rollups::faceted(
                "SELECT day, reviews, cost, tokens FROM stats_day_status WHERE status != 'skipped'",
                "SELECT day, reviews, cost, tokens FROM stats_day_facet WHERE status != 'skipped'",
            ),
            "SELECT r.created_at / 86400 AS day, 1 AS reviews, coalesce(r.cost, 0.0) AS cost,
             coalesce(r.tokens, 0) AS tokens FROM reviews r WHERE r.status != 'skipped'",
            "GROUP BY 1 HAVING sum(reviews) > 0 ORDER BY 1",
        );
        let triggers = union_query(
            &plan,
            "trig AS \"trigger\", CAST(sum(n) AS BIGINT) AS count",
            Rollups::faceted(
                "SELECT trig, n FROM stats_day_trigger WHERE true",
                "SELECT trig, n FROM stats_day_facet_trigger WHERE true",
            ),
            "SELECT coalesce(r.\"trigger\", 'unknown') AS trig, 1 AS n FROM reviews r
             WHERE r.status != 'skipped'",
            "GROUP BY trig HAVING sum(n) > 0 ORDER BY count DESC, trig",
        );
        let latency = union_query(
            &plan,
            &format!("CAST(coalesce(sum(dur_n), 0) AS BIGINT), {MEAN_DURATION}"),
            Rollups::faceted(
                "SELECT dur_sum, dur_n FROM stats_day_status WHERE status = 'completed'",
                "SELECT dur_sum, dur_n FROM stats_day_facet WHERE status = 'completed'",
            ),
            &format!("SELECT {RAW_DURATION} FROM reviews r WHERE r.status = 'completed'"),
            "",
        );
        let severity = union_query(
            &plan,
            "severity, CAST(sum(n) AS BIGINT) AS count",
            Rollups::faceted(
                "SELECT severity, n FROM stats_day_severity WHERE true",
                "SELECT severity, n FROM stats_day_facet_severity WHERE true",
            ),
            &format!(
                "SELECT f.severity AS severity, 1 AS n {FINDINGS_RAW} AND f.severity IS NOT NULL"
            ),
            "GROUP BY severity HAVING sum(n) > 0 ORDER BY count DESC, severity",
        );
        // The ids first, then their rows: SQLite ranks a repo's or model's reviews from its
        // covering index instead of reading 20,000 rows for pr_number (70 ms at 1M reviews).
        let mut top_cost = Sql::new(
            "SELECT r.id, r.repo_full_name, r.pr_number, r.cost, r.tokens, r.model FROM reviews r
             WHERE r.id IN (SELECT r.id FROM reviews r WHERE r.status != 'skipped' AND r.cost IS NOT NULL",
        );
        push_full_filter(&mut top_cost, f);
        top_cost
            .push(" ORDER BY r.cost DESC, r.id DESC LIMIT ")
            .push_bind(TOP_COST_ROWS)
            .push(") ORDER BY r.cost DESC, r.id DESC");

        let (projects, models, daily, triggers, (count, avg), severity, top_cost, all_models) = futures::try_join!(
            all(pool, &projects),
            all(pool, &models),
            all(pool, &daily),
            all(pool, &triggers),
            one(pool, &latency),
            all(pool, &severity),
            all(pool, &top_cost),
            self.all_models(),
        )?;
        let p95 = self.completed_duration_rank(f, count, 95).await?;
        Ok(Stats {
            projects,
            models,
            daily,
            triggers,
            latency: LatencyStats { avg, count, p95 },
            top_cost,
            severity,
            all_models,
        })
    }

    /// Every distinct non-null model of every review, sorted: a loose index scan over
    /// `reviews_model_cover` (migration 0009), one seek per model.
    pub async fn all_models(&self) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "WITH RECURSIVE m(model) AS (
                 SELECT (SELECT min(model) FROM reviews WHERE model IS NOT NULL)
                 UNION ALL
                 SELECT (SELECT min(model) FROM reviews WHERE model > m.model) FROM m
                 WHERE m.model IS NOT NULL)
             SELECT model FROM m WHERE model IS NOT NULL",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// The nearest-rank `pct` percentile of `completed_at - created_at` over the `count`
    /// completed reviews of the filter: the value at rank ceil(pct/100 * count), found by
    /// walking `reviews_duration` (or the repo's or model's `reviews_repo_duration`, `reviews_model_duration`) from the top.
    async fn completed_duration_rank(
        &self,
        f: &StatsFilter,
        count: i64,
        pct: i64,
    ) -> Result<Option<i64>> {
        if count <= 0 {
            return Ok(None);
        }
        let rank = (count * pct + 99) / 100;
        let index = filter_index(
            f,
            "reviews_duration",
            "reviews_repo_duration",
            "reviews_model_duration",
        );
        let mut q = Sql::new(format!(
            "SELECT r.completed_at - r.created_at FROM reviews r{}
             WHERE r.status = 'completed' AND r.completed_at IS NOT NULL",
            self.backend.indexed_by(index)
        ));
        push_full_filter(&mut q, f);
        q.push(" ORDER BY r.completed_at - r.created_at DESC LIMIT 1 OFFSET ")
            .push_bind(count - rank);
        scalar(&self.pool, &q).await
    }

    /// GET /api/stats/charts (docs/review-service.md §4, Stats): reliability per day, per-day
    /// latency percentiles over the newest 5000 completed reviews, findings per day and severity,
    /// and the 10 files with the most inline findings. Skipped reviews are left out throughout.
    pub async fn charts(&self, f: &StatsFilter) -> Result<Charts> {
        let plan = Plan::new(f);
        let pool = &self.pool;
        let db = self.backend;
        let reliability = union_query(
            &plan,
            &format!(
                "{} AS day,
                 CAST(sum(CASE WHEN status = 'completed' THEN reviews ELSE 0 END) AS BIGINT) AS completed,
                 CAST(sum(CASE WHEN status = 'failed' THEN reviews ELSE 0 END) AS BIGINT) AS failed,
                 CAST(sum(CASE WHEN status IN ('pending', 'running') THEN reviews ELSE 0 END) AS BIGINT) AS in_flight",
                db.day_text("day")
            ),
            Rollups::faceted(
                "SELECT day, status, reviews FROM stats_day_status WHERE status != 'skipped'",
                "SELECT day, status, reviews FROM stats_day_facet WHERE status != 'skipped'",
            ),
            "SELECT r.created_at / 86400 AS day, r.status AS status, 1 AS reviews FROM reviews r
             WHERE r.status != 'skipped'",
            "GROUP BY 1 HAVING sum(reviews) > 0 ORDER BY 1",
        );

        // The newest completed reviews of the filter, walked backwards by created_at.
        let newest_completed = filter_index(
            f,
            "reviews_status_created",
            "reviews_repo_cover",
            "reviews_model_cover",
        );
        let mut sample = Sql::new(format!(
            "WITH s AS (SELECT r.created_at / 86400 AS day, r.completed_at - r.created_at AS d
                 FROM reviews r{}
                 WHERE r.status = 'completed' AND r.completed_at IS NOT NULL",
            db.indexed_by(newest_completed)
        ));
        push_full_filter(&mut sample, f);
        sample
            .push(" ORDER BY r.created_at DESC LIMIT ")
            .push_bind(LATENCY_SAMPLE_CAP)
            .push(&format!(
                // Nearest rank: the day's durations as one sorted list, read at
                // ceil(n * p / 100). Four times faster on SQLite than row_number() windows.
                "), g AS (SELECT day, count(*) AS n, {} AS a FROM s GROUP BY day)
                 SELECT {} AS day, n AS count, {} AS p50, {} AS p95
                 FROM g ORDER BY day",
                db.sorted_list("d"),
                db.day_text("day"),
                db.nth("a", "(n * 50 + 99) / 100"),
                db.nth("a", "(n * 95 + 99) / 100"),
            ));
        let mut matched = Sql::new(format!(
            "SELECT count(*) FROM (SELECT 1 FROM reviews r{}
             WHERE r.status = 'completed' AND r.completed_at IS NOT NULL",
            db.indexed_by(newest_completed)
        ));
        push_full_filter(&mut matched, f);
        matched
            .push(" LIMIT ")
            .push_bind(LATENCY_SAMPLE_CAP + 1)
            .push(") AS m");

        let findings_daily = union_query(
            &plan,
            &format!(
                "{} AS day, severity, CAST(sum(n) AS BIGINT) AS count",
                db.day_text("day")
            ),
            Rollups::faceted(
                "SELECT day, severity, n FROM stats_day_severity WHERE true",
                "SELECT day, severity, n FROM stats_day_facet_severity WHERE true",
            ),
            &format!(
                "SELECT r.created_at / 86400 AS day, f.severity AS severity, 1 AS n {FINDINGS_RAW}
                 AND f.severity IS NOT NULL"
            ),
            "GROUP BY 1, 2 HAVING sum(n) > 0 ORDER BY 1, 2",
        );
        let top_files = union_query(
            &plan,
            "path, CAST(sum(n) AS BIGINT) AS count",
            // Paths per day and repo or model would be nearly a row per finding: a window
            // filtered on a repo or a model reads its findings (all time: the totals).
            if plan.all_time() {
                Rollups::faceted(
                    "SELECT path, n FROM stats_total_path WHERE true",
                    "SELECT path, n FROM stats_total_facet_path WHERE true",
                )
            } else {
                Rollups {
                    all: "SELECT path, n FROM stats_day_path WHERE true",
                    repo: None,
                    model: None,
                }
            },
            &format!(
                "SELECT f.path AS path, 1 AS n {FINDINGS_RAW} AND f.kind = 'inline' AND f.path IS NOT NULL"
            ),
            "GROUP BY path HAVING sum(n) > 0 ORDER BY count DESC, path LIMIT 10",
        );

        let (reliability, latency, matched, findings_daily, top_files) = futures::try_join!(
            all(pool, &reliability),
            all(pool, &sample),
            scalar(pool, &matched),
            all(pool, &findings_daily),
            all(pool, &top_files),
        )?;
        Ok(Charts {
            reliability,
            latency,
            latency_truncated: matched.unwrap_or(0) > LATENCY_SAMPLE_CAP,
            findings_daily,
            top_files,
        })
    }
}
