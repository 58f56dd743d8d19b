//! GET /api/models (spec/review-service.md section 4, Models; section 8, model search results
//! and catalog cache). The search itself lives in [`crate::models`].

use crate::error::ApiError;
use crate::models::{ModelList, ModelQuery, configured_providers, search};
use crate::state::AppState;
use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};

/// Routes of this module.
pub fn router() -> Router<AppState> {
    Router::new().route("/api/models", get(list_models))
}

fn is_one(v: Option<&str>) -> bool {
    v.map(str::trim) == Some("1")
}

/// GET /api/models: `{total, providers, models[]}`; without `all=1` only configured providers'
/// models; `q` filters `<provider>/<model>` case-insensitively; `refresh=1` rebuilds the cached
/// catalog; at most 100 models (spec section 4, Models).
#[utoipa::path(get, path = "/api/models", params(ModelQuery),
    responses((status = 200, body = ModelList)))]
pub async fn list_models(
    State(app): State<AppState>,
    Query(query): Query<ModelQuery>,
) -> Result<Json<ModelList>, ApiError> {
    let all = is_one(query.all.as_deref());
    let (catalog, _) = app.models.get(is_one(query.refresh.as_deref())).await;
    let configured = configured_providers(&app).await?;
    Ok(Json(search(
        &catalog,
        app.models.bundled(),
        &configured,
        query.q.as_deref(),
        all,
    )))
}
