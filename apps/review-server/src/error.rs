//! One place where errors become HTTP responses (spec/review-service.md section 7).
//!
//! Handlers return `Result<_, ApiError>`. Variants that the spec gives a plain-text body
//! (`Not found`, `repo not found`) answer text; everything else answers JSON `{"error": ...}`.
//! Unexpected failures are logged with their cause and answered `{"error":"internal error"}`
//! so no internal detail leaks.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error a handler can return.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 401 `{"error":"invalid signature"}` (webhook).
    #[error("invalid signature")]
    InvalidSignature,
    /// 401 `{"error": msg}` (internal route without the right secret).
    #[error("{0}")]
    Unauthorized(&'static str),
    /// 403 `{"error": msg}` (internal route from a non-loopback peer).
    #[error("{0}")]
    Forbidden(&'static str),
    /// 400 `{"error": msg}`.
    #[error("{0}")]
    BadRequest(String),
    /// 404 plain text `Not found`.
    #[error("Not found")]
    NotFound,
    /// 422 `{"error": msg}` naming the field.
    #[error("{0}")]
    Unprocessable(String),
    /// 429 `{"error": msg}`: a concurrency cap is reached (chat turns).
    #[error("{0}")]
    TooManyRequests(String),
    /// 500 `{"error":"internal error"}`; the cause is logged.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<review_store::StoreError> for ApiError {
    fn from(e: review_store::StoreError) -> Self {
        ApiError::Internal(e.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, message) = match &self {
            ApiError::InvalidSignature => (StatusCode::UNAUTHORIZED, self.to_string()),
            ApiError::Unauthorized(m) => (StatusCode::UNAUTHORIZED, (*m).to_owned()),
            ApiError::Forbidden(m) => (StatusCode::FORBIDDEN, (*m).to_owned()),
            ApiError::BadRequest(m) => (StatusCode::BAD_REQUEST, m.clone()),
            ApiError::NotFound => return (StatusCode::NOT_FOUND, "Not found").into_response(),
            ApiError::Unprocessable(m) => (StatusCode::UNPROCESSABLE_ENTITY, m.clone()),
            ApiError::TooManyRequests(m) => (StatusCode::TOO_MANY_REQUESTS, m.clone()),
            ApiError::Internal(e) => {
                tracing::error!(error = format!("{e:#}"), "request failed");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal error".to_owned(),
                )
            }
        };
        (status, Json(json!({ "error": message }))).into_response()
    }
}

/// The JSON error body of spec section 7: `{"error": "..."}`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub error: String,
}

/// The global fallback: 404 `{"error":"not found"}` (spec section 7).
pub async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, Json(json!({ "error": "not found" }))).into_response()
}

/// The catch-panic body: 500 `{"error":"internal error"}` (spec section 7).
pub fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a handler panicked");
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        Json(json!({ "error": "internal error" })),
    )
        .into_response()
}
