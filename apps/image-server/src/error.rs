//! The one place where failures become HTTP responses.
//!
//! Every error a client can cause maps to the status docs/image-service.md §7 names, with a
//! JSON body `{"error": "..."}` that says what to fix. Server-side failures
//! (storage down, encoder failure) are logged with their cause and answered 500/503 with a
//! short message: internal details (paths on disk, credentials in URLs) never reach the body.

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use image_pipeline::PipelineError;

/// An error answered to the client.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: a parameter or path is invalid; the message names it.
    #[error("{0}")]
    BadRequest(String),
    /// 401: the API key is missing or wrong.
    #[error("missing or invalid API key (send it in X-API-Key or Authorization: Bearer)")]
    Unauthorized,
    /// 403: URL_SIGNING_KEY is set and the resize URL's `signature` is missing or wrong.
    #[error("missing or invalid URL signature (this server only serves signed resize URLs)")]
    Forbidden,
    /// 404: no object at this path; the message says which (`image not found: a/b.jpg`).
    #[error("{0}")]
    NotFound(String),
    /// 405: the endpoint exists, but not for this method.
    #[error("method not allowed on this endpoint")]
    MethodNotAllowed,
    /// 413: the upload is larger than MAX_UPLOAD_BYTES.
    #[error("upload is larger than the limit of {0} bytes")]
    TooLarge(usize),
    /// 415: the bytes are not an image we read.
    #[error("{0}")]
    UnsupportedMedia(String),
    /// 422: an image we cannot decode, or too many pixels.
    #[error("{0}")]
    Unprocessable(String),
    /// 429: TRANSFORM_QUEUE_SIZE misses are already waiting; sent with `Retry-After: 1`.
    #[error("too many transformations waiting; retry in a moment")]
    Busy,
    /// 503: the object store failed.
    #[error("storage unavailable")]
    Storage(#[source] object_store::Error),
    /// 503: the request took longer than the server's deadline (in seconds).
    #[error("the request took longer than {0} s")]
    Timeout(u64),
    /// 500: anything else; the cause is logged, not sent.
    #[error("internal error")]
    Internal(String),
}

impl ApiError {
    /// The status this error is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMedia(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Busy => StatusCode::TOO_MANY_REQUESTS,
            Self::Storage(_) | Self::Timeout(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<PipelineError> for ApiError {
    fn from(e: PipelineError) -> Self {
        match e {
            PipelineError::BadParam { .. } => Self::BadRequest(e.to_string()),
            PipelineError::NotAnImage => Self::UnsupportedMedia(e.to_string()),
            PipelineError::TooManyPixels { .. } | PipelineError::Undecodable(_) => {
                Self::Unprocessable(e.to_string())
            }
            PipelineError::Encode(m) => Self::Internal(m),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        match &self {
            Self::Storage(e) => tracing::error!(error = %e, "object store request failed"),
            Self::Internal(m) => tracing::error!(error = %m, "internal error"),
            _ => tracing::debug!(%status, error = %self, "request refused"),
        }
        let body = Json(serde_json::json!({ "error": self.to_string() }));
        if matches!(self, Self::Busy) {
            // 429 rather than 503: CDNs cache a 503 (CloudFront for 10 s), not a 429.
            return (status, [(header::RETRY_AFTER, "1")], body).into_response();
        }
        (status, body).into_response()
    }
}
