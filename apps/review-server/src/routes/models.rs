//! GET /api/models (docs/review-service.md §4, Models; §8, model search results
//! and catalog cache). The search itself lives in [`crate::models`].

use crate::error::ApiError;
use crate::models::{ModelList, ModelQuery, configured_providers, search};
use crate::run_settings::provider_settings;
use crate::state::AppState;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};

/// Routes of this module.
pub(crate) fn router() -> Router<AppState> {
    Router::new().route("/api/models", get(list_models))
}

fn is_one(v: Option<&str>) -> bool {
    v.map(str::trim) == Some("1")
}

/// GET /api/models: `{total, providers, models[]}`; without `all=1` only configured providers'
/// models; `q` filters `<provider>/<model>` case-insensitively; `refresh=1` rebuilds the cached
/// catalog; at most 100 models (docs/review-service.md §4, Models). 400 `invalid_query` when
/// the query string cannot be read (a repeated key).
#[utoipa::path(get, path = "/api/models",
    params(
        ("q" = Option<String>, Query, description = "Case-insensitive substring of `<provider>/<model>`."),
        ("all" = Option<String>, Query, description = "`1`: search the whole catalog, not only configured providers."),
        ("refresh" = Option<String>, Query, description = "`1`: rebuild the cached catalog first.")),
    responses((status = 200, body = ModelList),
        (status = 400, description = "the query string cannot be read", body = crate::error::ErrorBody)))]
pub(crate) async fn list_models(
    State(app): State<AppState>,
    query: Result<Query<ModelQuery>, QueryRejection>,
) -> Result<Json<ModelList>, ApiError> {
    let Query(query) = query?;
    let all = is_one(query.all.as_deref());
    let (catalog, _) = app.models.get(is_one(query.refresh.as_deref())).await;
    let settings = app.records.store.settings().await?;
    let repos = app.records.store.repos().await?;
    let configured = configured_providers(
        &provider_settings(&app.config, &settings),
        &settings,
        &repos,
        &app.config.agent_model,
    );
    Ok(Json(search(
        &catalog,
        app.models.bundled(),
        &configured,
        query.q.as_deref(),
        all,
    )))
}
