//! GET /health: 200 `{"ok":true}`, never behind the auth gate (docs/review-service.md §4).

use crate::state::AppState;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

pub(crate) fn router() -> Router<AppState> {
    Router::new().route("/health", get(health))
}

/// GET /health: 200 `{"ok":true}`.
#[utoipa::path(get, path = "/health", responses((status = 200, body = super::bodies::Ack)))]
pub(crate) async fn health() -> Json<Value> {
    Json(json!({ "ok": true }))
}
