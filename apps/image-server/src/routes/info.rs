//! `GET /images/info/{path}`: what a stored image is, without decoding it (docs/image-service.md
//! §4, Info). Needs the API key: EXIF can hold where and by whom a photo was taken, which the
//! resized outputs never carry.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::storage::object_path;
use crate::{AppState, auth};

pub(crate) fn router() -> Router<AppState> {
    Router::new().route("/images/info/{*path}", get(info))
}

/// 200 `{"path", "format", "contentType", "width", "height", "orientation", "frames", "alpha",
/// "iccProfile", "size", "exif": {...}}`. Errors: 401 without the key, 400 a bad path, 404 no
/// such image, 415 not an image, 422 a broken header, 503 the store failed.
async fn info(
    State(app): State<AppState>,
    headers: HeaderMap,
    raw_path: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    auth::require_key(&headers, &app.api_key)?;
    let Path(raw_path) =
        raw_path.map_err(|e| ApiError::BadRequest(format!("invalid path: {e}")))?;
    let path = object_path(&raw_path)?;
    let bytes = super::images::fetch(&app, &path, "image not found:").await?;
    // Header parsing only, but libheif's box parse and lcms can take a few milliseconds on a
    // large file: off the async workers.
    let described = tokio::task::spawn_blocking(move || image_pipeline::info(&bytes))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))??;
    let mut answer =
        serde_json::to_value(&described).map_err(|e| ApiError::Internal(e.to_string()))?;
    answer["path"] = json!(path.as_ref());
    Ok(Json(answer))
}
