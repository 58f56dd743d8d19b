//! POST /internal/reviews/:id/findings: the findings write-back (docs/architecture.md, Findings)
//! for agent tools running out of process. Loopback peers only (403 otherwise), and the header
//! `X-Internal-Secret` must hold the secret made at boot (401 otherwise). Shares
//! [`Records::record_findings`](crate::records::Records::record_findings) with the in-process
//! tools.

use crate::error::{ApiError, ErrorCode};
use crate::records::FindingsError;
use crate::state::AppState;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use bytes::Bytes;
use review_domain::NewFinding;
use serde::Deserialize;
use serde_json::{Value, json};
use std::net::SocketAddr;
use subtle::ConstantTimeEq;

/// The header carrying the per-boot secret.
pub(crate) const SECRET_HEADER: &str = "x-internal-secret";

pub(crate) fn router() -> Router<AppState> {
    Router::new().route("/internal/reviews/{id}/findings", post(write_back))
}

#[derive(Deserialize)]
struct Body {
    findings: Vec<NewFinding>,
}

async fn write_back(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    if !peer.ip().is_loopback() {
        return Err(ApiError::refused(ErrorCode::NotLoopback, "loopback only"));
    }
    let given = headers
        .get(SECRET_HEADER)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if !bool::from(given.ct_eq(app.internal_secret.as_bytes())) {
        return Err(ApiError::refused(
            ErrorCode::BadInternalSecret,
            "missing or wrong internal secret",
        ));
    }
    let id: i64 = id.parse().map_err(|_| ApiError::NotFound)?;
    let body: Body = serde_json::from_slice(&body)
        .map_err(|e| ApiError::Unprocessable(format!("invalid findings body: {e}")))?;
    match app.records.record_findings(id, &body.findings).await {
        Ok(rows) => Ok(Json(json!({ "ok": true, "count": rows.len() }))),
        Err(FindingsError::UnknownReview(_)) => Err(ApiError::NotFound),
        Err(FindingsError::Invalid(m)) => Err(ApiError::Unprocessable(m)),
        Err(FindingsError::Store(e)) => Err(e.into()),
    }
}
