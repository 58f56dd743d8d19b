//! GET /api/stats, GET /api/stats/charts and GET /api/reviews (docs/review-service.md §4,
//! Stats and Reviews; §8, limits).
//!
//! Query strings are read leniently: every parameter is an optional string, the first of
//! repeated keys wins, and junk falls back as the filter rules say (the parser is
//! [`review_domain::StatsFilter`]), so these endpoints never answer 400. The aggregates
//! themselves are SQL in [`review_store`].

use crate::error::ApiError;
use crate::records::now;
use crate::state::AppState;
use axum::extract::{Query, State};
use axum::http::HeaderName;
use axum::routing::get;
use axum::{Json, Router};
use review_domain::{ReviewListQuery, ReviewRow, StatsFilter};
use review_store::{Charts, OutcomeStats, RepoScores, Stats};
use serde::Deserialize;

/// Routes of this module.
pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/stats", get(stats))
        .route("/api/stats/charts", get(charts))
        .route("/api/stats/outcomes", get(outcomes))
        .route("/api/stats/repos", get(repo_scores))
        .route("/api/reviews", get(list_reviews))
}

/// The query of the three endpoints (docs/review-service.md §4, Stats filter and the list
/// query table). Every field is a raw string; see [`StatsFilter::parse`] for the rules.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct StatsQuery {
    /// `24h`, `7d`, `30d`, `90d` or `all`; another value means 30d.
    pub range: Option<String>,
    /// `YYYY-MM-DD`, inclusive lower bound (UTC); wins over range.
    pub from: Option<String>,
    /// `YYYY-MM-DD`, inclusive upper bound (UTC); dropped when not after from.
    pub to: Option<String>,
    /// Exact `owner/name`.
    pub repo: Option<String>,
    /// Exact model spec.
    pub model: Option<String>,
    /// GET /api/reviews only: rows to return, default 100, clamped to 1..1000.
    pub limit: Option<String>,
    /// GET /api/reviews only: exact status (skipped included).
    pub status: Option<String>,
    /// GET /api/reviews only: only ids under this one, for the next page (docs/review-service.md,
    /// "Review list paging"); not a positive whole number: ignored.
    pub before: Option<String>,
}

impl StatsQuery {
    /// Pick the known keys from raw pairs; the first occurrence of a key wins.
    fn from_pairs(pairs: Vec<(String, String)>) -> Self {
        let mut q = Self::default();
        for (k, v) in pairs {
            let slot = match k.as_str() {
                "range" => &mut q.range,
                "from" => &mut q.from,
                "to" => &mut q.to,
                "repo" => &mut q.repo,
                "model" => &mut q.model,
                "limit" => &mut q.limit,
                "status" => &mut q.status,
                "before" => &mut q.before,
                _ => continue,
            };
            slot.get_or_insert(v);
        }
        q
    }

    fn filter(&self) -> StatsFilter {
        StatsFilter::parse(
            self.range.as_deref(),
            self.from.as_deref(),
            self.to.as_deref(),
            self.repo.as_deref(),
            self.model.as_deref(),
            now(),
        )
    }
}

/// GET /api/stats: projects, models, daily, triggers, latency, topCost (5), severity and
/// allModels; skipped reviews are excluded, latency is over completed reviews, allModels is
/// unfiltered (docs/review-service.md §4, Stats).
#[utoipa::path(get, path = "/api/stats", params(StatsQuery),
    responses((status = 200, body = Stats)))]
pub(crate) async fn stats(
    State(app): State<AppState>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Json<Stats>, ApiError> {
    let filter = StatsQuery::from_pairs(pairs).filter();
    Ok(Json(app.records.store.stats(&filter).await?))
}

/// GET /api/stats/charts: reliability, per-day latency percentiles over a 5000-row sample
/// (latencyTruncated when capped), findingsDaily and topFiles (10) (docs/review-service.md §4,
/// Stats).
#[utoipa::path(get, path = "/api/stats/charts", params(StatsQuery),
    responses((status = 200, body = Charts)))]
pub(crate) async fn charts(
    State(app): State<AppState>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Json<Charts>, ApiError> {
    let filter = StatsQuery::from_pairs(pairs).filter();
    Ok(Json(app.records.store.charts(&filter).await?))
}

/// GET /api/stats/outcomes: the posted inline findings of the filtered reviews and what became
/// of them (open, resolved, dismissed) per repo, model and severity, with acceptance and
/// dismissal rates and the cost per resolved finding (docs/review-service.md, "Finding outcomes").
#[utoipa::path(get, path = "/api/stats/outcomes", params(StatsQuery),
    responses((status = 200, body = OutcomeStats)))]
pub(crate) async fn outcomes(
    State(app): State<AppState>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Json<OutcomeStats>, ApiError> {
    let filter = StatsQuery::from_pairs(pairs).filter();
    Ok(Json(app.records.store.outcome_stats(&filter).await?))
}

/// GET /api/stats/repos: per repository the reviews, completed, failed and in-flight counts,
/// cost, mean duration, inline findings (blocking, nits), reviews with a blocking finding and
/// the last review; and the ten files with most findings with their repository
/// (docs/review-service.md, "Repository scores").
#[utoipa::path(get, path = "/api/stats/repos", params(StatsQuery),
    responses((status = 200, body = RepoScores)))]
pub(crate) async fn repo_scores(
    State(app): State<AppState>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Json<RepoScores>, ApiError> {
    let filter = StatsQuery::from_pairs(pairs).filter();
    Ok(Json(app.records.store.repo_scores(&filter).await?))
}

/// GET /api/reviews: ReviewRow[] newest id first, skipped included, filtered by status and
/// the stats filter, at most `limit`, under `before` when given; the `X-Total-Count` header
/// counts every row the filter matches (docs/review-service.md §4, Reviews; §8;
/// docs/review-service.md, "Review list paging").
#[utoipa::path(get, path = "/api/reviews", params(StatsQuery),
    responses((status = 200, body = Vec<ReviewRow>, headers(
        ("X-Total-Count" = i64, description = "Rows matching the filter and status, over all pages.")
    ))))]
pub(crate) async fn list_reviews(
    State(app): State<AppState>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<([(HeaderName, String); 1], Json<Vec<ReviewRow>>), ApiError> {
    let q = StatsQuery::from_pairs(pairs);
    let list = ReviewListQuery::parse(q.limit.as_deref(), q.status.as_deref(), q.filter())
        .before(q.before.as_deref());
    let store = &app.records.store;
    let status = list.status.as_deref();
    let (rows, total) = tokio::try_join!(
        store.list_reviews(&list.filter, status, list.before, list.limit),
        store.count_reviews(&list.filter, status),
    )?;
    Ok(([(TOTAL_COUNT, total.to_string())], Json(rows)))
}

/// The header of GET /api/reviews counting the rows over all pages.
const TOTAL_COUNT: HeaderName = HeaderName::from_static("x-total-count");

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn first_of_repeated_keys_wins_and_unknown_keys_are_ignored() {
        let pairs = [("repo", "a/b"), ("repo", "c/d"), ("x", "1"), ("limit", "5")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .to_vec();
        assert_eq!(
            StatsQuery::from_pairs(pairs),
            StatsQuery {
                repo: Some("a/b".into()),
                limit: Some("5".into()),
                ..StatsQuery::default()
            }
        );
    }
}
