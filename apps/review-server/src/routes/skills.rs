//! Skills under /api (docs/review-service.md §4, Skills): list, install from a forge
//! tree URL, enable/disable, delete. The work is in [`crate::skills`].

use crate::error::{ApiError, ErrorCode, not_found};
use crate::skills::{self, InstallError};
use crate::state::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use review_domain::SkillMetaRow;
use serde_json::Value;

/// Routes of this module.
pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/skills", get(list_skills).post(install_skill))
        .route(
            "/api/skills/{name}",
            put(set_skill_enabled).delete(delete_skill),
        )
}

/// Body of POST /api/skills (docs/review-service.md §4, Skills).
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[expect(
    dead_code,
    reason = "an OpenAPI schema: it documents the body, which the handler reads through its own checks"
)]
pub(crate) struct InstallSkill {
    /// `<FORGE_URL>/<owner>/<repo>/tree/<ref>/<path>`.
    pub url: String,
}

/// Body of PUT /api/skills/:name (docs/review-service.md §4, Skills): the one place a JSON boolean is
/// accepted (docs/review-service.md §2, conventions).
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[expect(
    dead_code,
    reason = "an OpenAPI schema: it documents the body, which the handler reads through its own checks"
)]
pub(crate) struct SetSkillEnabled {
    pub enabled: bool,
}

/// GET /api/skills: every skill, newest created_at first, never the stored files.
#[utoipa::path(get, path = "/api/skills", responses((status = 200, body = Vec<SkillMetaRow>)))]
pub(crate) async fn list_skills(
    State(app): State<AppState>,
) -> Result<Json<Vec<SkillMetaRow>>, ApiError> {
    Ok(Json(app.records.store.skills().await?))
}

/// POST /api/skills: install from a tree URL, pinned to the commit SHA it was fetched at,
/// enabled; a re-install by name updates in place and re-enables. 422 `{error}` when the URL
/// cannot be parsed or the fetch fails (docs/review-service.md §4, Skills; §7).
#[utoipa::path(post, path = "/api/skills", request_body = InstallSkill,
    responses((status = 200, body = SkillMetaRow),
        (status = 422, description = "URL unparseable or fetch failed: {error}", body = crate::error::ErrorBody)))]
pub(crate) async fn install_skill(
    State(app): State<AppState>,
    body: Result<Json<Value>, JsonRejection>,
) -> Result<Json<SkillMetaRow>, ApiError> {
    let Json(body) = body.map_err(|e| ApiError::Unprocessable(e.body_text()))?;
    let Some(url) = body.get("url").and_then(Value::as_str) else {
        return Err(ApiError::Unprocessable(
            "url: expected a string (a forge tree URL)".into(),
        ));
    };
    let gitlab_host = app.config.gitlab_host();
    let gitlab = (app.config.gitlab_url.as_deref()).zip(gitlab_host.as_deref());
    match skills::install(
        app.forge.as_ref(),
        &app.records.store,
        &app.config.forge_url,
        gitlab,
        &app.config.data_dir,
        url,
    )
    .await
    {
        Ok(row) => Ok(Json(row)),
        Err(InstallError::Store(e)) => Err(e.into()),
        Err(e) => Err(ApiError::refused(
            ErrorCode::SkillInstallFailed,
            e.to_string(),
        )),
    }
}

/// PUT /api/skills/:name `{enabled: true|false}`: 200 with the row; 404 `{"error":"not found"}`
/// for an unknown skill; 422 when enabled is missing or not a JSON boolean.
#[utoipa::path(put, path = "/api/skills/{name}", params(("name" = String, Path, description = "skill name", example = "lint-rules")),
    request_body = SetSkillEnabled,
    responses((status = 200, body = SkillMetaRow),
        (status = 404, description = "{\"error\":\"not found\"}", body = crate::error::ErrorBody),
        (status = 422, description = "enabled is not a JSON boolean", body = crate::error::ErrorBody)))]
pub(crate) async fn set_skill_enabled(
    State(app): State<AppState>,
    Path(name): Path<String>,
    body: Result<Json<Value>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(|e| ApiError::Unprocessable(e.body_text()))?;
    let Some(enabled) = body.get("enabled").and_then(Value::as_bool) else {
        return Err(ApiError::Unprocessable(
            "enabled: required, a JSON boolean".into(),
        ));
    };
    match skills::set_enabled(&app.records.store, &app.config.data_dir, &name, enabled).await? {
        Some(row) => Ok(Json(row).into_response()),
        None => Ok(not_found().await),
    }
}

/// DELETE /api/skills/:name: 204, also for an unknown skill.
#[utoipa::path(delete, path = "/api/skills/{name}", params(("name" = String, Path, description = "skill name", example = "lint-rules")),
    responses((status = 204, description = "deleted, or there was no such skill")))]
pub(crate) async fn delete_skill(
    State(app): State<AppState>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    skills::delete(&app.records.store, &app.config.data_dir, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}
