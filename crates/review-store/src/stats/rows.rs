//! The rows and bodies of GET /api/stats and GET /api/stats/charts (docs/review-service.md §2,
//! Aggregate rows), as the queries of `stats` read them.

use serde::Serialize;

/// Per-repo totals (docs/review-service.md §2, ProjectStatsRow). `avg_duration` is the mean of
/// `completed_at - created_at` in seconds over the completed reviews, or null when none
/// completed (failed rows have a completed_at too, but a row failed at boot after a long wait
/// is no review duration).
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct ProjectStatsRow {
    pub repo_full_name: String,
    pub reviews: i64,
    /// Sum of cost; 0, never null.
    pub cost: f64,
    /// Sum of tokens; 0 when none are recorded.
    pub tokens: i64,
    pub avg_duration: Option<f64>,
}

/// Per-model totals over reviews with a model (docs/review-service.md §2, ModelStatsRow).
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct ModelStatsRow {
    pub model: String,
    pub reviews: i64,
    pub cost: f64,
    pub tokens: i64,
}

/// Per-UTC-day totals (docs/review-service.md §2, DailyStatsRow); `day` is `YYYY-MM-DD`.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct DailyStatsRow {
    pub day: String,
    pub reviews: i64,
    pub cost: f64,
    pub tokens: i64,
}

/// Reviews per trigger, `unknown` for null (docs/review-service.md §2, TriggerStatsRow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct TriggerStatsRow {
    pub trigger: String,
    pub count: i64,
}

/// Findings per severity (docs/review-service.md §2, SeverityStatsRow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct SeverityStatsRow {
    pub severity: String,
    pub count: i64,
}

/// One of the most expensive reviews (docs/review-service.md §2, TopCostRow).
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct TopCostRow {
    /// The review's id.
    pub id: i64,
    pub repo_full_name: String,
    pub pr_number: i64,
    /// USD, from the model catalog's prices.
    pub cost: f64,
    pub tokens: Option<i64>,
    pub model: Option<String>,
}

/// Latency of completed reviews in seconds (docs/review-service.md §4, GET /api/stats): mean, count
/// and nearest-rank 95th percentile; avg and p95 are null when count is 0.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct LatencyStats {
    pub avg: Option<f64>,
    pub count: i64,
    pub p95: Option<i64>,
}

/// The body of GET /api/stats (docs/review-service.md §4, Stats).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub projects: Vec<ProjectStatsRow>,
    pub models: Vec<ModelStatsRow>,
    pub daily: Vec<DailyStatsRow>,
    pub triggers: Vec<TriggerStatsRow>,
    pub latency: LatencyStats,
    pub top_cost: Vec<TopCostRow>,
    pub severity: Vec<SeverityStatsRow>,
    /// Every model ever recorded, whatever the filter, sorted.
    pub all_models: Vec<String>,
}

/// Outcomes per UTC day (docs/review-service.md §2, ReliabilityRow); in_flight is pending plus
/// running.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct ReliabilityRow {
    /// The UTC day, `YYYY-MM-DD`.
    pub day: String,
    pub completed: i64,
    pub failed: i64,
    /// Pending plus running.
    pub in_flight: i64,
}

/// Latency of one UTC day of the sample, nearest-rank percentiles in seconds
/// (docs/review-service.md §4, GET /api/stats/charts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct LatencyDayRow {
    /// The UTC day, `YYYY-MM-DD`.
    pub day: String,
    /// Completed reviews of that day in the sample.
    pub count: i64,
    /// Seconds from created_at to completed_at.
    pub p50: Option<i64>,
    pub p95: Option<i64>,
}

/// Findings per UTC day and severity (docs/review-service.md §2, FindingsDailyRow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct FindingsDailyRow {
    /// The UTC day, `YYYY-MM-DD`.
    pub day: String,
    pub severity: String,
    pub count: i64,
}

/// Inline findings per file (docs/review-service.md §2, TopFileRow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct TopFileRow {
    pub path: String,
    pub count: i64,
}

/// The body of GET /api/stats/charts (docs/review-service.md §4, Stats).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Charts {
    pub reliability: Vec<ReliabilityRow>,
    pub latency: Vec<LatencyDayRow>,
    /// True when more completed reviews matched than the 5000-row sample holds.
    pub latency_truncated: bool,
    pub findings_daily: Vec<FindingsDailyRow>,
    pub top_files: Vec<TopFileRow>,
}

/// Posted inline findings of one repository, model or severity and what became of them
/// (docs/review-service.md, "Finding outcomes").
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct OutcomeStatsRow {
    /// The repository's `owner/name`, the model spec or the severity, after the list it is in.
    pub key: String,
    /// Inline findings posted (every outcome).
    pub posted: i64,
    pub open: i64,
    /// Fixed in a later commit, as the recheck found.
    pub resolved: i64,
    /// Answered as intended or thumbed down.
    pub dismissed: i64,
    /// resolved / posted, 0..1; null when nothing was posted.
    pub acceptance_rate: Option<f64>,
    /// dismissed / posted, 0..1; null when nothing was posted.
    pub dismissal_rate: Option<f64>,
    /// USD: what the group's reviews cost, all of them; null in bySeverity (a review's cost is
    /// not split among severities).
    pub cost: Option<f64>,
    /// cost / resolved, USD; null when nothing was resolved, and in bySeverity.
    pub cost_per_resolved: Option<f64>,
}

/// The body of GET /api/stats/outcomes (docs/review-service.md, "Finding outcomes"): each list
/// most posted first.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeStats {
    pub by_repo: Vec<OutcomeStatsRow>,
    pub by_model: Vec<OutcomeStatsRow>,
    pub by_severity: Vec<OutcomeStatsRow>,
}
