//! GET /api/budget (docs/review-service.md, "Monthly budget"): the month-to-date spend of the
//! whole service and of each repository, the projection for the month, and the budgets, for
//! the dashboard's overview.

use crate::error::ApiError;
use crate::records::now;
use crate::review::budget::Month;
use crate::run_settings::monthly_budget;
use crate::state::AppState;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use std::collections::BTreeMap;

/// Routes of this module.
pub(crate) fn router() -> Router<AppState> {
    Router::new().route("/api/budget", get(budget))
}

/// The body of GET /api/budget. Amounts are USD, in the units of ReviewRow.cost, summed over
/// the reviews created since the first of the month (UTC); `projected` is that spend over the
/// elapsed fraction of the month.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct BudgetReport {
    /// The current month, `YYYY-MM` (UTC).
    #[schema(example = "2026-11")]
    pub month: String,
    /// When the budgets reset: the first of the next month, `YYYY-MM-DD` (UTC).
    #[schema(example = "2026-12-01")]
    pub resets: String,
    /// The whole service's spend this month.
    pub spent: f64,
    /// The whole service's spend at the end of the month if it goes on as it went.
    pub projected: f64,
    /// The global monthly budget (the `monthly_budget` setting, else MONTHLY_BUDGET); null:
    /// none.
    pub budget: Option<f64>,
    /// Each repository that spent something this month or has its own budget, by name.
    pub repos: Vec<RepoBudget>,
}

/// One repository's line of the BudgetReport.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct RepoBudget {
    /// `owner/name`.
    pub repo_full_name: String,
    /// Its spend this month.
    pub spent: f64,
    /// Its spend at the end of the month if it goes on as it went.
    pub projected: f64,
    /// Its own monthly budget (RepoRow.monthly_budget); null: it falls under the global one.
    pub budget: Option<f64>,
}

/// GET /api/budget: month-to-date spend, projection and budgets, per
/// docs/review-service.md, "Monthly budget".
#[utoipa::path(get, path = "/api/budget",
    responses((status = 200, description = "this month's spend and budgets", body = BudgetReport)))]
pub(crate) async fn budget(State(app): State<AppState>) -> Result<Json<BudgetReport>, ApiError> {
    let now = now();
    let month = Month::of(now);
    let store = &app.records.store;
    let spent = store.spend_since(None, month.start).await?;
    let mut repos: BTreeMap<String, RepoBudget> = BTreeMap::new();
    for (repo, spent) in store.spend_by_repo_since(month.start).await? {
        repos.insert(
            repo.clone(),
            RepoBudget {
                repo_full_name: repo,
                spent,
                projected: month.projected(spent, now),
                budget: None,
            },
        );
    }
    for row in store.repos().await? {
        if let Some(budget) = row.monthly_budget {
            repos
                .entry(row.full_name.clone())
                .or_insert_with(|| RepoBudget {
                    repo_full_name: row.full_name,
                    spent: 0.0,
                    projected: 0.0,
                    budget: None,
                })
                .budget = Some(budget);
        }
    }
    let stored = store.settings().await?;
    Ok(Json(BudgetReport {
        month: month.label.clone(),
        resets: month.resets.clone(),
        spent,
        projected: month.projected(spent, now),
        budget: monthly_budget(&app.config, &stored).map(|(b, _)| b),
        repos: repos.into_values().collect(),
    }))
}
