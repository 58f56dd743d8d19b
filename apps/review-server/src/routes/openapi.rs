//! GET /api/openapi.json: the OpenAPI 3.1 document, generated from the handlers' annotations
//! (utoipa), so it cannot drift from the code.

use crate::state::AppState;
use axum::routing::get;
use axum::{Json, Router};
use utoipa::OpenApi;

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "review-server",
        description = "Pull request review service (docs/review-service.md)"
    ),
    paths(
        super::health::health,
        super::auth::auth_status,
        super::webhook::receive,
        super::repos::list,
        super::repos::one,
        super::repos::upsert,
        super::repos::update,
        super::repos::remove,
        super::repos::improve,
        super::repos::repo_reviews,
        super::repos::pr_reviews,
        super::reviews::one,
        super::reviews::findings,
        super::reviews::session,
        super::reviews::retry,
        super::reviews::stop,
        super::events::stream,
        super::stats::stats,
        super::stats::charts,
        super::stats::list_reviews,
        super::settings::get_settings,
        super::settings::put_settings,
        super::settings::test_settings,
        super::models::list_models,
        super::skills::list_skills,
        super::skills::install_skill,
        super::skills::set_skill_enabled,
        super::skills::delete_skill,
        super::chat::chat,
    )
)]
pub struct ApiDoc;

pub fn router() -> Router<AppState> {
    Router::new().route(
        "/api/openapi.json",
        get(|| async { Json(ApiDoc::openapi()) }),
    )
}
