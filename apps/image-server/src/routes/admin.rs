//! `GET /admin/health` (open, for load balancers; also at `/images/health`, the original
//! service's path, which its own tests and probes use) and `POST /admin/cache/storage/clear`
//! (needs the key), docs/image-service.md §4.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::{AppState, VERSION, auth};

pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/health", get(health))
        .route("/images/health", get(health))
        .route("/admin/cache/storage/clear", post(clear))
}

/// 200 `{"status": "ok", "version": "2.0.0", "storage": {...}, "cache": {...}}`, or 503 with
/// `"status": "degraded"` when the store does not answer.
async fn health(State(app): State<AppState>) -> (StatusCode, Json<Value>) {
    // A HEAD of an object that does not exist: NotFound proves the store answers.
    let probe = object_store::path::Path::from("cache/.health-probe");
    let reachable = match app.store.head(&probe).await {
        Ok(_) | Err(object_store::Error::NotFound { .. }) => true,
        Err(e) => {
            tracing::warn!(error = %e, "health: storage unreachable");
            false
        }
    };
    let (entries, bytes) = app.cache.stats().await;
    let backend = app
        .config
        .storage_url
        .split("://")
        .next()
        .unwrap_or("unknown");
    let status = if reachable {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(json!({
            "status": if reachable { "ok" } else { "degraded" },
            "version": VERSION,
            "storage": { "reachable": reachable, "backend": backend },
            "cache": {
                "entries": entries,
                "bytes": bytes,
                "maxBytes": app.config.cache_max_bytes,
                "storageTier": app.config.storage_cache,
            },
        })),
    )
}

#[derive(Debug, Default, Deserialize)]
struct ClearParams {
    /// Source paths to clear, `*` as wildcard; all when absent.
    pattern: Option<String>,
}

/// The largest JSON body of a clear (`{"pattern": "..."}`): larger is 413.
const CLEAR_BODY_LIMIT: usize = 64 * 1024;

/// Deletes persisted results (optionally only for sources matching `pattern`, from the query
/// or a JSON body) and empties the memory tier: `{"success": true, "count": N}`.
///
/// The key is checked before a byte of the body is read, so a client without it cannot make
/// the server buffer a body (docs/image-service.md §5): a wrong key is answered 401 at once and
/// the connection closed; with the key, at most [`CLEAR_BODY_LIMIT`] bytes are read.
async fn clear(
    state: State<crate::AppState>,
    headers: HeaderMap,
    query: Result<Query<ClearParams>, QueryRejection>,
    request: Request,
) -> Response {
    if let Err(e) = auth::require_key(&headers, &state.api_key) {
        let mut response = e.into_response();
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    match clear_with_key(state, query, request).await {
        Ok(reply) => reply.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn clear_with_key(
    State(app): State<crate::AppState>,
    query: Result<Query<ClearParams>, QueryRejection>,
    request: Request,
) -> Result<Json<Value>, ApiError> {
    let body =
        super::images::read_body(request.into_body(), CLEAR_BODY_LIMIT, CLEAR_BODY_LIMIT).await?;
    let Query(query) = query.map_err(|e| ApiError::BadRequest(format!("invalid query: {e}")))?;
    let from_body = if body.is_empty() {
        ClearParams::default()
    } else {
        serde_json::from_slice::<ClearParams>(&body)
            .map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))?
    };
    let pattern = query
        .pattern
        .or(from_body.pattern)
        .filter(|p| !p.is_empty());
    let count = app.cache.clear(pattern.as_deref()).await?;
    tracing::info!(
        count,
        pattern = pattern.as_deref().unwrap_or("*"),
        "storage cache cleared"
    );
    Ok(Json(json!({ "success": true, "count": count })))
}
