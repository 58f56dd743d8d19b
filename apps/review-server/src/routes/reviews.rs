//! Reviews under /api (spec/review-service.md section 4, Reviews): one review, its findings and
//! its session transcript.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use review_domain::{FindingRow, ReviewRow};
use serde_json::{Value, json};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/reviews/{id}", get(one))
        .route("/api/reviews/{id}/findings", get(findings))
        .route("/api/reviews/{id}/session", get(session))
}

async fn one(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<ReviewRow>, ApiError> {
    let id: i64 = id.parse().map_err(|_| ApiError::NotFound)?;
    app.records
        .store
        .review(id)
        .await?
        .map(Json)
        .ok_or(ApiError::NotFound)
}

/// Findings ordered by id; an unknown review gives 200 [] (spec section 4).
async fn findings(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<FindingRow>>, ApiError> {
    let Ok(id) = id.parse::<i64>() else {
        return Ok(Json(Vec::new()));
    };
    Ok(Json(app.records.store.findings_for_review(id).await?))
}

/// The transcript: 404 without a review or session id; the two failure shapes of spec
/// section 4 are 200 bodies with an `error` key.
async fn session(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id: i64 = id.parse().map_err(|_| ApiError::NotFound)?;
    let review = app
        .records
        .store
        .review(id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let session_id = review.session_id.ok_or(ApiError::NotFound)?;
    Ok(Json(match app.transcripts.load(&session_id) {
        Ok(v) => v,
        Err(e) => json!({ "error": "session-unavailable", "detail": e.to_string() }),
    }))
}
