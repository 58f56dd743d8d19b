//! The one place where failures become HTTP responses (docs/image-service.md §7).
//!
//! Every error a client can cause maps to the status of docs/image-service.md §7 with a JSON
//! body `{"error": "...", "code": "..."}`: `error` says what to fix, for people; `code` is a
//! stable [`ErrorCode`] for programs, one per distinct failure, and the code fixes the status.
//! Server-side failures (storage down, encoder failure) are logged with their cause and
//! answered 500/503 with a short message: internal details (paths on disk, credentials in URLs)
//! never reach the body.

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use image_pipeline::PipelineError;

/// The stable, machine-readable `code` of a JSON error body: one per distinct failure,
/// snake_case on the wire. Never renamed or reused (docs/image-service.md §7 lists them with
/// their status and meaning, §9 their stability).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// 400: a resize parameter is malformed, out of range or over its budget; `error` names it.
    InvalidParameter,
    /// 400: the path, the query string or the body cannot be used; `error` names what.
    InvalidRequest,
    /// 401: upload, info or cache clear without the API key, or with a wrong one.
    InvalidApiKey,
    /// 403: URL_SIGNING_KEY is set and the resize URL's `signature` is missing or wrong.
    InvalidUrlSignature,
    /// 403: a remote source off ALLOWED_SOURCES, at a refused address, or redirected too often
    /// (docs/image-service.md, "Remote sources").
    SourceNotAllowed,
    /// 404: no image at that path, or no such endpoint.
    NotFound,
    /// 405: the endpoint exists, but not for this method.
    MethodNotAllowed,
    /// 413: the upload is larger than MAX_UPLOAD_BYTES.
    PayloadTooLarge,
    /// 415: the bytes are not an image format we read.
    NotAnImage,
    /// 415: an image in a format we read, coded or laid out in a way our decoders do not
    /// support.
    UnsupportedImage,
    /// 422: the image is truncated, corrupt, or beyond what the decoders accept.
    UndecodableImage,
    /// 422: the source is over MAX_SOURCE_PIXELS, known from its header.
    TooManyPixels,
    /// 422: an animation over MAX_ANIMATION_FRAMES, or whose frames hold more than
    /// MAX_SOURCE_PIXELS together.
    TooManyFrames,
    /// 422: a remote source larger than MAX_UPLOAD_BYTES.
    SourceTooLarge,
    /// 429: TRANSFORM_QUEUE_SIZE misses are already waiting; sent with `Retry-After: 1`.
    QueueFull,
    /// 500: an unexpected failure, logged.
    InternalError,
    /// 502: a remote source's origin could not be reached, answered an error, or was too slow.
    SourceUnavailable,
    /// 503: the object store failed or did not answer.
    StorageUnavailable,
    /// 503: the request took longer than its deadline, or its transformation was cancelled.
    RequestTimeout,
}

impl ErrorCode {
    /// Every code, in the order of the table in docs/image-service.md §7.
    pub const ALL: [ErrorCode; 19] = [
        Self::InvalidParameter,
        Self::InvalidRequest,
        Self::InvalidApiKey,
        Self::InvalidUrlSignature,
        Self::SourceNotAllowed,
        Self::NotFound,
        Self::MethodNotAllowed,
        Self::PayloadTooLarge,
        Self::NotAnImage,
        Self::UnsupportedImage,
        Self::UndecodableImage,
        Self::TooManyPixels,
        Self::TooManyFrames,
        Self::SourceTooLarge,
        Self::QueueFull,
        Self::InternalError,
        Self::SourceUnavailable,
        Self::StorageUnavailable,
        Self::RequestTimeout,
    ];

    /// The status every error of this code is answered with.
    pub fn status(self) -> StatusCode {
        match self {
            Self::InvalidParameter | Self::InvalidRequest => StatusCode::BAD_REQUEST,
            Self::InvalidApiKey => StatusCode::UNAUTHORIZED,
            Self::InvalidUrlSignature | Self::SourceNotAllowed => StatusCode::FORBIDDEN,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::NotAnImage | Self::UnsupportedImage => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::UndecodableImage
            | Self::TooManyPixels
            | Self::TooManyFrames
            | Self::SourceTooLarge => StatusCode::UNPROCESSABLE_ENTITY,
            Self::QueueFull => StatusCode::TOO_MANY_REQUESTS,
            Self::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
            Self::SourceUnavailable => StatusCode::BAD_GATEWAY,
            Self::StorageUnavailable | Self::RequestTimeout => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The wire text, e.g. `invalid_parameter` (what serde writes too).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidParameter => "invalid_parameter",
            Self::InvalidRequest => "invalid_request",
            Self::InvalidApiKey => "invalid_api_key",
            Self::InvalidUrlSignature => "invalid_url_signature",
            Self::SourceNotAllowed => "source_not_allowed",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::PayloadTooLarge => "payload_too_large",
            Self::NotAnImage => "not_an_image",
            Self::UnsupportedImage => "unsupported_image",
            Self::UndecodableImage => "undecodable_image",
            Self::TooManyPixels => "too_many_pixels",
            Self::TooManyFrames => "too_many_frames",
            Self::SourceTooLarge => "source_too_large",
            Self::QueueFull => "queue_full",
            Self::InternalError => "internal_error",
            Self::SourceUnavailable => "source_unavailable",
            Self::StorageUnavailable => "storage_unavailable",
            Self::RequestTimeout => "request_timeout",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The JSON error body of docs/image-service.md §7: `{"code": "...", "error": "..."}`, the
/// fields in the order the server has always written them.
#[derive(Debug, serde::Serialize)]
pub(crate) struct ErrorBody {
    /// What went wrong, for programs: stable, one per distinct failure.
    pub(crate) code: ErrorCode,
    /// What went wrong, for people; may be reworded.
    pub(crate) error: String,
}

/// `code`'s status with the body `{"error": message, "code": code}`; a `queue_full` answer also
/// carries `Retry-After: 1`.
pub(crate) fn error_response(code: ErrorCode, message: impl Into<String>) -> Response {
    let status = code.status();
    let body = Json(ErrorBody {
        code,
        error: message.into(),
    });
    if code == ErrorCode::QueueFull {
        // 429 rather than 503: CDNs cache a 503 (CloudFront for 10 s), not a 429.
        return (status, [(header::RETRY_AFTER, "1")], body).into_response();
    }
    (status, body).into_response()
}

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
    /// 403 `source_not_allowed`: a remote source the allow-list or the address rules refuse
    /// (docs/image-service.md, "Remote sources"); the message names why.
    #[error("{0}")]
    SourceNotAllowed(String),
    /// 422 `source_too_large`: a remote source over MAX_UPLOAD_BYTES.
    #[error("{0}")]
    SourceTooLarge(String),
    /// 502 `source_unavailable`: a remote source's origin failed, answered an error or was too
    /// slow; the message says which.
    #[error("{0}")]
    SourceUnavailable(String),
    /// 500: anything else; the cause is logged, not sent.
    #[error("internal error")]
    Internal(String),
}

impl ApiError {
    /// The status this error is answered with: its code's.
    pub fn status(&self) -> StatusCode {
        self.code().status()
    }

    /// The stable machine-readable `code` of the body (docs/image-service.md §7).
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::BadRequest(_) => ErrorCode::InvalidRequest,
            Self::InvalidParameter(_) => ErrorCode::InvalidParameter,
            Self::Unauthorized => ErrorCode::InvalidApiKey,
            Self::Forbidden => ErrorCode::InvalidUrlSignature,
            Self::NotFound(_) => ErrorCode::NotFound,
            Self::MethodNotAllowed => ErrorCode::MethodNotAllowed,
            Self::TooLarge(_) => ErrorCode::PayloadTooLarge,
            Self::UnsupportedMedia(_) => ErrorCode::NotAnImage,
            Self::UnsupportedImage(_) => ErrorCode::UnsupportedImage,
            Self::Unprocessable(_) => ErrorCode::UndecodableImage,
            Self::TooManyPixels(_) => ErrorCode::TooManyPixels,
            Self::TooManyFrames(_) => ErrorCode::TooManyFrames,
            Self::Busy => ErrorCode::QueueFull,
            Self::Storage(_) => ErrorCode::StorageUnavailable,
            Self::Timeout(_) => ErrorCode::RequestTimeout,
            Self::Internal(_) => ErrorCode::InternalError,
            Self::SourceNotAllowed(_) => ErrorCode::SourceNotAllowed,
            Self::SourceTooLarge(_) => ErrorCode::SourceTooLarge,
            Self::SourceUnavailable(_) => ErrorCode::SourceUnavailable,
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

impl From<crate::remote::RemoteError> for ApiError {
    fn from(e: crate::remote::RemoteError) -> Self {
        use crate::remote::RemoteError;
        match e {
            RemoteError::NotAllowed(m) => Self::SourceNotAllowed(m),
            RemoteError::NotFound(m) => Self::NotFound(m),
            RemoteError::TooLarge(m) => Self::SourceTooLarge(m),
            RemoteError::Unavailable(m) => Self::SourceUnavailable(m),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = self.code();
        match &self {
            Self::Storage(e) => tracing::error!(error = %e, "object store request failed"),
            Self::Internal(m) => tracing::error!(error = %m, "internal error"),
            _ => tracing::debug!(status = %code.status(), error = %self, "request refused"),
        }
        error_response(code, self.to_string())
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
            ApiError::TooManyFrames("source has 9 frames".into()),
            ApiError::Busy,
            ApiError::Storage(object_store::Error::NotImplemented),
            ApiError::Timeout(120),
            ApiError::Internal("encoder".into()),
            ApiError::SourceNotAllowed("off the list".into()),
            ApiError::SourceTooLarge("too large".into()),
            ApiError::SourceUnavailable("down".into()),
        ]
    }

    /// The codes of the table in `docs`' §7, in its order, each with its status; a code the
    /// table lists on several rows (several meanings) must give the same status on each.
    fn docs_table(docs: &str) -> Vec<(String, u16)> {
        let start = docs
            .find("## §7 Errors")
            .expect("docs/image-service.md has §7");
        let section = &docs[start..];
        let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
        let mut rows: Vec<(String, u16)> = Vec::new();
        for line in section[..end].lines() {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let [_, code, status, ..] = cells[..] else {
                continue;
            };
            let (Some(code), Ok(status)) = (
                code.strip_prefix('`').and_then(|c| c.strip_suffix('`')),
                status.parse::<u16>(),
            ) else {
                continue;
            };
            match rows.iter().find(|(c, _)| c == code) {
                Some(&(_, s)) => assert_eq!(s, status, "`{code}` has two statuses in §7"),
                None => rows.push((code.to_owned(), status)),
            }
        }
        rows
    }

    #[test]
    fn the_docs_table_lists_exactly_the_codes_with_their_statuses_in_order() {
        let table = docs_table(include_str!("../../../docs/image-service.md"));
        let ours: Vec<(String, u16)> = ErrorCode::ALL
            .iter()
            .map(|c| (c.as_str().to_owned(), c.status().as_u16()))
            .collect();
        pretty_assertions::assert_eq!(
            ours,
            table,
            "ErrorCode::ALL against docs/image-service.md §7"
        );
    }

    #[test]
    fn every_code_serialises_as_its_wire_text_and_is_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ErrorCode::ALL {
            assert_eq!(
                serde_json::to_value(code).ok(),
                Some(serde_json::json!(code.as_str())),
                "{code:?}"
            );
            assert!(seen.insert(code.as_str()), "{code:?} reused");
            assert!(
                code.as_str()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{code} is not snake_case"
            );
        }
    }

    #[test]
    fn every_code_is_answered_by_some_error_and_each_error_by_its_own_code() {
        let codes: Vec<ErrorCode> = one_of_each().iter().map(ApiError::code).collect();
        assert_eq!(codes.len(), ErrorCode::ALL.len(), "one error per code");
        for code in ErrorCode::ALL {
            assert_eq!(codes.iter().filter(|c| **c == code).count(), 1, "{code}");
        }
    }

    #[tokio::test]
    async fn the_body_is_the_code_and_the_message_and_a_full_queue_says_when_to_retry() {
        let r = ApiError::NotFound("image not found: a.jpg".into()).into_response();
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert!(!r.headers().contains_key(header::RETRY_AFTER));
        let body = axum::body::to_bytes(r.into_body(), usize::MAX).await.ok();
        assert_eq!(
            body.as_deref(),
            Some(&br#"{"code":"not_found","error":"image not found: a.jpg"}"#[..])
        );
        let busy = ApiError::Busy.into_response();
        assert_eq!(busy.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            busy.headers()
                .get(header::RETRY_AFTER)
                .map(|v| v.as_bytes()),
            Some(&b"1"[..])
        );
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
            assert_eq!(
                (e.status().as_u16(), e.code().as_str()),
                (status, code),
                "{e}"
            );
        }
    }
}
