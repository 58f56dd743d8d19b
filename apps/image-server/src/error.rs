//! The one place where failures become HTTP responses (docs/image-service.md §7).
//!
//! Every error a client can cause maps to the status of docs/image-service.md §7 with a JSON
//! body `{"error": "...", "code": "..."}`: `error` says what to fix, for people; `code` is a
//! stable [`ApiError::code`] for programs, one per distinct failure. Server-side failures
//! (storage down, encoder failure) are logged with their cause and answered 500/503 with a
//! short message: internal details (paths on disk, credentials in URLs) never reach the body.

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use image_pipeline::PipelineError;

/// An error answered to the client.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400 `invalid_request`: the path, the query string or the body cannot be used; the
    /// message names what.
    #[error("{0}")]
    BadRequest(String),
    /// 400 `invalid_parameter`: a resize parameter is malformed or out of range (the unsigned
    /// caps included); the message names it.
    #[error("{0}")]
    InvalidParameter(String),
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
    /// 415 `unsupported_image`: an image in a format we read, coded or laid out in a way our
    /// decoders do not support (a HEIF coded as H.264, a compact HEIF); the message names it.
    #[error("{0}")]
    UnsupportedImage(String),
    /// 422 `undecodable_image`: an image we cannot decode.
    #[error("{0}")]
    Unprocessable(String),
    /// 422 `too_many_pixels`: the source is over MAX_SOURCE_PIXELS, known from its header.
    #[error("{0}")]
    TooManyPixels(String),
    /// 422 `too_many_frames`: an animation over MAX_ANIMATION_FRAMES, or whose frames hold
    /// more than MAX_SOURCE_PIXELS together, known before decoding.
    #[error("{0}")]
    TooManyFrames(String),
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
            Self::BadRequest(_) | Self::InvalidParameter(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMedia(_) | Self::UnsupportedImage(_) => {
                StatusCode::UNSUPPORTED_MEDIA_TYPE
            }
            Self::Unprocessable(_) | Self::TooManyPixels(_) | Self::TooManyFrames(_) => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Busy => StatusCode::TOO_MANY_REQUESTS,
            Self::Storage(_) | Self::Timeout(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable machine-readable `code` of the body, snake_case, one per distinct failure;
    /// never renamed or reused (docs/image-service.md §7 lists them, §9 their stability).
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadRequest(_) => "invalid_request",
            Self::InvalidParameter(_) => "invalid_parameter",
            Self::Unauthorized => "invalid_api_key",
            Self::Forbidden => "invalid_url_signature",
            Self::NotFound(_) => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::TooLarge(_) => "payload_too_large",
            Self::UnsupportedMedia(_) => "not_an_image",
            Self::UnsupportedImage(_) => "unsupported_image",
            Self::Unprocessable(_) => "undecodable_image",
            Self::TooManyPixels(_) => "too_many_pixels",
            Self::TooManyFrames(_) => "too_many_frames",
            Self::Busy => "queue_full",
            Self::Storage(_) => "storage_unavailable",
            Self::Timeout(_) => "request_timeout",
            Self::Internal(_) => "internal_error",
        }
    }
}

impl From<PipelineError> for ApiError {
    fn from(e: PipelineError) -> Self {
        match e {
            PipelineError::BadParam { .. } => Self::InvalidParameter(e.to_string()),
            PipelineError::NotAnImage => Self::UnsupportedMedia(e.to_string()),
            PipelineError::Unsupported(_) => Self::UnsupportedImage(e.to_string()),
            PipelineError::TooManyPixels { .. } => Self::TooManyPixels(e.to_string()),
            PipelineError::TooManyFrames { .. } => Self::TooManyFrames(e.to_string()),
            PipelineError::Undecodable(_) => Self::Unprocessable(e.to_string()),
            PipelineError::Encode(m) => Self::Internal(m),
            // Only a job under the transform service is cancelled, and it answers
            // `Failure::Timeout` with its request's deadline; anything else is a bug.
            PipelineError::Cancelled => Self::Internal("cancelled outside a request".into()),
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
        let body = Json(serde_json::json!({ "error": self.to_string(), "code": self.code() }));
        if matches!(self, Self::Busy) {
            // 429 rather than 503: CDNs cache a 503 (CloudFront for 10 s), not a 429.
            return (status, [(header::RETRY_AFTER, "1")], body).into_response();
        }
        (status, body).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One error of each variant.
    fn one_of_each() -> Vec<ApiError> {
        vec![
            ApiError::BadRequest("invalid image path: ..".into()),
            ApiError::InvalidParameter("invalid parameter width: not a number".into()),
            ApiError::Unauthorized,
            ApiError::Forbidden,
            ApiError::NotFound("image not found: a.jpg".into()),
            ApiError::MethodNotAllowed,
            ApiError::TooLarge(10),
            ApiError::UnsupportedMedia("not a supported image".into()),
            ApiError::UnsupportedImage("a HEIF image coded as H.264/AVC".into()),
            ApiError::Unprocessable("source image cannot be decoded".into()),
            ApiError::TooManyPixels("source is 9x9 pixels".into()),
            ApiError::Busy,
            ApiError::Storage(object_store::Error::NotImplemented),
            ApiError::Timeout(120),
            ApiError::Internal("encoder".into()),
        ]
    }

    #[test]
    fn every_failure_has_its_own_code_and_the_docs_table_lists_it_with_its_status() {
        let docs = include_str!("../../../docs/image-service.md");
        let mut seen = std::collections::BTreeSet::new();
        for e in one_of_each() {
            let code = e.code();
            assert!(seen.insert(code), "{code} used twice");
            assert!(
                code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{code} is not snake_case"
            );
            let row = format!("| `{code}` | {} |", e.status().as_u16());
            assert!(docs.contains(&row), "docs/image-service.md §7 lacks {row}");
        }
    }

    #[test]
    fn pipeline_errors_keep_their_status_and_get_distinct_codes() {
        let cases = [
            (
                PipelineError::BadParam {
                    name: "width".into(),
                    reason: "not a number".into(),
                },
                400,
                "invalid_parameter",
            ),
            (PipelineError::NotAnImage, 415, "not_an_image"),
            (
                PipelineError::Unsupported("a compact HEIF/AVIF file".into()),
                415,
                "unsupported_image",
            ),
            (
                PipelineError::TooManyPixels {
                    width: 10,
                    height: 10,
                    limit: 50,
                },
                422,
                "too_many_pixels",
            ),
            (
                PipelineError::Undecodable("truncated".into()),
                422,
                "undecodable_image",
            ),
            (PipelineError::Encode("x".into()), 500, "internal_error"),
        ];
        for (e, status, code) in cases {
            let e = ApiError::from(e);
            assert_eq!((e.status().as_u16(), e.code()), (status, code), "{e}");
        }
    }
}
