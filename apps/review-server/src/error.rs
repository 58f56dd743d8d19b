//! One place where errors become HTTP responses (docs/review-service.md §7).
//!
//! Handlers return `Result<_, ApiError>`. Variants that the spec gives a plain-text body
//! (`Not found`, `repo not found`) answer text; everything else answers JSON
//! `{"error": "...", "code": "..."}`, where `error` is the text the spec fixes (or a sentence
//! saying what to fix) and `code` is a stable [`ErrorCode`] clients can branch on. Unexpected
//! failures are logged with their cause and answered `{"error":"internal error"}` so no
//! internal detail leaks. The request guard, the fallback and the panic handler build their
//! bodies through [`error_response`] too, so every JSON error has the same shape.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The stable, machine-readable `code` of a JSON error body: one per distinct failure,
/// snake_case on the wire. Never renamed or reused (docs/review-service.md §7 lists them with
/// their status and meaning, §9 their stability).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ErrorCode {
    /// 400: webhook body that is not JSON, or a known event missing a field we need.
    InvalidPayload,
    /// 400: webhook without `X-GitHub-Event` or `X-Forge-Event`.
    MissingEvent,
    /// 400: the request body could not be read.
    UnreadableBody,
    /// 400: the query string cannot be read (a repeated key where one is expected).
    InvalidQuery,
    /// 400: chat without a user message that has text.
    NoQuestion,
    /// 400: chat question over 4000 characters.
    QuestionTooLong,
    /// 400: chat model setting unusable (not `<provider>/<model>`, unknown provider, no key).
    ModelNotConfigured,
    /// 401: webhook signature missing or wrong.
    InvalidSignature,
    /// 401: internal route without the per-boot secret.
    BadInternalSecret,
    /// 403: the Host header names a host that is not allowed.
    ForbiddenHost,
    /// 403: a write under `/api` from another origin.
    CrossSite,
    /// 403: internal route called from a peer that is not loopback.
    NotLoopback,
    /// 403: `/api` while the OAuth gate is off on a non-loopback LISTEN (no ALLOW_OPEN_API).
    OpenApiRefused,
    /// 404: no such route, or no such skill.
    NotFound,
    /// 405: the route exists, but not for this method.
    MethodNotAllowed,
    /// 408: the body did not arrive within BODY_TIMEOUT_SECS.
    BodyTimeout,
    /// 413: the body is over its limit.
    PayloadTooLarge,
    /// 422: the body is not JSON or breaks the route's rules (the message names the field).
    InvalidBody,
    /// 422: a skill cannot be installed (URL unparseable or fetch failed).
    SkillInstallFailed,
    /// 429: CHAT_MAX_CONCURRENT chat turns are already running.
    RateLimited,
    /// 500: an unexpected failure, logged.
    InternalError,
    /// 502: the forge cannot be reached or cannot give the PR (retry).
    ForgeUnavailable,
    /// 503: WEBHOOK_MAX_CONCURRENT_BODIES webhook bodies over 1 MiB are already being read
    /// (retry).
    WebhookBusy,
}

impl ErrorCode {
    /// Every code, in the order of the table in docs/review-service.md §7.
    #[cfg(test)]
    pub(crate) const ALL: [ErrorCode; 23] = [
        Self::InvalidPayload,
        Self::MissingEvent,
        Self::UnreadableBody,
        Self::InvalidQuery,
        Self::NoQuestion,
        Self::QuestionTooLong,
        Self::ModelNotConfigured,
        Self::InvalidSignature,
        Self::BadInternalSecret,
        Self::ForbiddenHost,
        Self::CrossSite,
        Self::NotLoopback,
        Self::OpenApiRefused,
        Self::NotFound,
        Self::MethodNotAllowed,
        Self::BodyTimeout,
        Self::PayloadTooLarge,
        Self::InvalidBody,
        Self::SkillInstallFailed,
        Self::RateLimited,
        Self::InternalError,
        Self::ForgeUnavailable,
        Self::WebhookBusy,
    ];

    /// The status every error of this code is answered with.
    pub(crate) fn status(self) -> StatusCode {
        match self {
            Self::InvalidPayload
            | Self::MissingEvent
            | Self::UnreadableBody
            | Self::InvalidQuery
            | Self::NoQuestion
            | Self::QuestionTooLong
            | Self::ModelNotConfigured => StatusCode::BAD_REQUEST,
            Self::InvalidSignature | Self::BadInternalSecret => StatusCode::UNAUTHORIZED,
            Self::ForbiddenHost | Self::CrossSite | Self::NotLoopback | Self::OpenApiRefused => {
                StatusCode::FORBIDDEN
            }
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::InvalidBody | Self::SkillInstallFailed => StatusCode::UNPROCESSABLE_ENTITY,
            Self::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Self::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
            Self::ForgeUnavailable => StatusCode::BAD_GATEWAY,
            Self::WebhookBusy => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The wire text, e.g. `invalid_body`.
    #[cfg(test)]
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::InvalidPayload => "invalid_payload",
            Self::MissingEvent => "missing_event",
            Self::UnreadableBody => "unreadable_body",
            Self::InvalidQuery => "invalid_query",
            Self::NoQuestion => "no_question",
            Self::QuestionTooLong => "question_too_long",
            Self::ModelNotConfigured => "model_not_configured",
            Self::InvalidSignature => "invalid_signature",
            Self::BadInternalSecret => "bad_internal_secret",
            Self::ForbiddenHost => "forbidden_host",
            Self::CrossSite => "cross_site",
            Self::NotLoopback => "not_loopback",
            Self::OpenApiRefused => "open_api_refused",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::BodyTimeout => "body_timeout",
            Self::PayloadTooLarge => "payload_too_large",
            Self::InvalidBody => "invalid_body",
            Self::SkillInstallFailed => "skill_install_failed",
            Self::RateLimited => "rate_limited",
            Self::InternalError => "internal_error",
            Self::ForgeUnavailable => "forge_unavailable",
            Self::WebhookBusy => "webhook_busy",
        }
    }
}

/// An error a handler can return.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    /// 401 `{"error":"invalid signature","code":"invalid_signature"}` (webhook).
    #[error("invalid signature")]
    InvalidSignature,
    /// 404 plain text `Not found`.
    #[error("Not found")]
    NotFound,
    /// 422 `{"error": msg, "code": "invalid_body"}`: the body is not JSON or breaks the route's
    /// rules; the message names the field.
    #[error("{0}")]
    Unprocessable(String),
    /// `{"error": msg, "code": ...}` with the code's status: every other refusal.
    #[error("{1}")]
    Refused(ErrorCode, String),
    /// 502 `{"ok": false, "error": msg, "code": "forge_unavailable"}`: the body the spec gives
    /// the retry route when the forge cannot give the PR.
    #[error("{0}")]
    ForgeUnavailable(String),
    /// 500 `{"error":"internal error","code":"internal_error"}`; the cause is logged.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    /// A refusal with `code` (its status comes from the code) and a message saying what to fix.
    pub(crate) fn refused(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Refused(code, message.into())
    }
}

impl From<review_store::StoreError> for ApiError {
    fn from(e: review_store::StoreError) -> Self {
        ApiError::Internal(e.into())
    }
}

impl From<axum::extract::rejection::QueryRejection> for ApiError {
    /// A query string axum cannot read into the route's parameters: 400 `invalid_query`.
    fn from(e: axum::extract::rejection::QueryRejection) -> Self {
        ApiError::refused(ErrorCode::InvalidQuery, e.body_text())
    }
}

impl From<axum::extract::rejection::JsonRejection> for ApiError {
    /// A body axum cannot read as JSON (wrong content type, syntax, shape): 422 `invalid_body`.
    fn from(e: axum::extract::rejection::JsonRejection) -> Self {
        ApiError::Unprocessable(e.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::InvalidSignature => {
                error_response(ErrorCode::InvalidSignature, "invalid signature")
            }
            ApiError::NotFound => (StatusCode::NOT_FOUND, "Not found").into_response(),
            ApiError::Unprocessable(m) => error_response(ErrorCode::InvalidBody, m),
            ApiError::Refused(code, m) => error_response(code, m),
            ApiError::ForgeUnavailable(m) => {
                let code = ErrorCode::ForgeUnavailable;
                let body = json!({ "ok": false, "error": m, "code": code });
                (code.status(), Json(body)).into_response()
            }
            ApiError::Internal(e) => {
                tracing::error!(error = format!("{e:#}"), "request failed");
                error_response(ErrorCode::InternalError, "internal error")
            }
        }
    }
}

/// The JSON error body of docs/review-service.md §7: `{"error": "...", "code": "..."}`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub(crate) struct ErrorBody {
    /// What went wrong, for people; the spec fixes some of these texts.
    pub error: String,
    /// What went wrong, for programs: stable, one per distinct failure.
    pub code: ErrorCode,
}

/// `code`'s status with the body `{"error": message, "code": code}`.
pub(crate) fn error_response(code: ErrorCode, message: impl Into<String>) -> Response {
    let body = ErrorBody {
        error: message.into(),
        code,
    };
    (code.status(), Json(body)).into_response()
}

/// The global fallback: 404 `{"error":"not found","code":"not_found"}` (docs/review-service.md
/// §7).
pub(crate) async fn not_found() -> Response {
    error_response(ErrorCode::NotFound, "not found")
}

/// A known route asked with another method: 405
/// `{"error":"method not allowed on this route","code":"method_not_allowed"}`, with the `Allow`
/// header axum sets (docs/review-service.md §7).
pub(crate) async fn method_not_allowed() -> Response {
    error_response(
        ErrorCode::MethodNotAllowed,
        "method not allowed on this route",
    )
}

/// The catch-panic body: 500 `{"error":"internal error","code":"internal_error"}`
/// (docs/review-service.md §7).
pub(crate) fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a handler panicked");
    error_response(ErrorCode::InternalError, "internal error")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_code_serialises_as_its_wire_text_and_is_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ErrorCode::ALL {
            assert_eq!(
                serde_json::to_value(code).ok(),
                Some(json!(code.as_str())),
                "{code:?}"
            );
            assert!(seen.insert(code.as_str()), "{code:?} reused");
            assert!(
                code.status().is_client_error() || code.status().is_server_error(),
                "{code:?}"
            );
        }
    }

    #[test]
    fn the_docs_table_lists_every_code_with_its_status() {
        let docs = include_str!("../../../docs/review-service.md");
        for code in ErrorCode::ALL {
            let row = format!("| `{}` | {} |", code.as_str(), code.status().as_u16());
            assert!(docs.contains(&row), "docs/review-service.md §7 lacks {row}");
        }
    }
}
