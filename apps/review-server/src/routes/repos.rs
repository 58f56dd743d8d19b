//! Repos under /api (docs/review-service.md §4, Repos): list, get, upsert, PUT, DELETE,
//! improve, and the review lists of a repo and of a PR.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use review_domain::{RepoRow, ReviewRow};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::{Number, Value, json};

/// Reviews per repo or PR list (docs/review-service.md §8).
const REVIEWS_PER_LIST: i64 = 200;

pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/repos", get(list).post(upsert))
        .route(
            "/api/repos/{owner}/{name}",
            get(one).put(update).delete(remove),
        )
        .route("/api/repos/{owner}/{name}/improve", post(improve))
        .route("/api/repos/{owner}/{name}/reviews", get(repo_reviews))
        .route("/api/repos/{owner}/{name}/pr/{number}", get(pr_reviews))
}

#[utoipa::path(get, path = "/api/repos", responses((status = 200, body = Vec<RepoRow>)))]
pub(crate) async fn list(State(app): State<AppState>) -> Result<Json<Vec<RepoRow>>, ApiError> {
    Ok(Json(app.records.store.repos().await?))
}

#[utoipa::path(get, path = "/api/repos/{owner}/{name}", operation_id = "get_repo", params(("owner" = String, Path, example = "acme"), ("name" = String, Path, example = "widgets")),
    responses((status = 200, body = RepoRow), (status = 404, description = "Not found", content_type = "text/plain")))]
pub(crate) async fn one(
    State(app): State<AppState>,
    Path((owner, name)): Path<(String, String)>,
) -> Result<Json<RepoRow>, ApiError> {
    let row = app.records.store.repo(&format!("{owner}/{name}")).await?;
    row.map(Json).ok_or(ApiError::NotFound)
}

/// POST improve (docs/review-service.md §4, Repos rule 3): 202 `{ok: true}` and the improver run is
/// queued; it may decline (too soon, no new completed reviews), which is logged only. 404 `Not
/// found` when the repo is not registered.
#[utoipa::path(post, path = "/api/repos/{owner}/{name}/improve", params(("owner" = String, Path, example = "acme"), ("name" = String, Path, example = "widgets")),
    responses((status = 202, body = super::bodies::Ack), (status = 404, description = "Not found", content_type = "text/plain")))]
pub(crate) async fn improve(
    State(app): State<AppState>,
    Path((owner, name)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let repo = app
        .records
        .store
        .repo(&format!("{owner}/{name}"))
        .await?
        .ok_or(ApiError::NotFound)?;
    crate::improver::spawn(&app, repo);
    Ok((StatusCode::ACCEPTED, Json(json!({ "ok": true }))).into_response())
}

/// Body of POST /api/repos.
#[derive(Deserialize, utoipa::ToSchema)]
pub(crate) struct Upsert {
    /// `owner/repo` on GitHub; `<gitlab host>/<namespace>/<project>` on GitLab, the
    /// namespace one or more groups (docs/review-service.md, "GitLab").
    #[schema(pattern = "^[^/]+(/[^/]+)+$")]
    pub full_name: String,
    /// Forge app installation id (a whole number; `7.0` is read as 7); on GitLab the
    /// project id.
    #[serde(deserialize_with = "whole_number")]
    pub installation_id: i64,
}

/// POST /api/repos: the one registration path (a new repo starts disabled; a re-post changes
/// installation_id only).
#[utoipa::path(post, path = "/api/repos", request_body = Upsert,
    responses((status = 200, body = RepoRow), (status = 422, body = crate::error::ErrorBody)))]
pub(crate) async fn upsert(
    State(app): State<AppState>,
    body: Result<Json<Value>, JsonRejection>,
) -> Result<Json<RepoRow>, ApiError> {
    let body: Upsert = object_body(body)?;
    let parts: Vec<&str> = body.full_name.split('/').collect();
    if parts.len() < 2 || parts.iter().any(|p| p.is_empty()) {
        return Err(ApiError::Unprocessable(
            "full_name: expected owner/repo, or <gitlab host>/<namespace>/<project>".into(),
        ));
    }
    Ok(Json(
        app.records
            .register(&body.full_name, body.installation_id)
            .await?,
    ))
}

/// Body of PUT /api/repos/:owner/:name.
#[derive(Deserialize, utoipa::ToSchema)]
pub(crate) struct Update {
    /// Written as given: omitted clears it.
    #[serde(default)]
    pub prompt: Option<String>,
    /// Written as given: omitted clears it.
    #[serde(default)]
    pub model: Option<String>,
    /// 0 or 1; omitted keeps it.
    #[serde(default, deserialize_with = "whole_number_or_null")]
    #[schema(minimum = 0, maximum = 1)]
    pub enabled: Option<i64>,
    /// **Added.** `nit`, `question` or `blocking`: the least severity posted inline for this
    /// repository; null or "" clears it (the review_min_severity setting applies); omitted
    /// keeps it (docs/review-service.md, "Minimum severity and quiet reviews").
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, nullable, pattern = "^$|^(nit|question|blocking)$")]
    pub min_severity: Option<Option<String>>,
    /// **Added.** This repository's own monthly budget in USD (as ReviewRow.cost), a positive
    /// number: it replaces the global monthly_budget for this repository; null clears it
    /// (the global budget applies); omitted keeps it, per
    /// docs/review-service.md, "Monthly budget".
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<f64>, nullable, exclusive_minimum = 0)]
    pub monthly_budget: Option<Option<f64>>,
}

/// A field that is present, even as null: `Some(None)` for null, so that omitted (`None`, by
/// `serde(default)`) and null differ.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// PUT: prompt and model are written as given, so omitting one clears it; omitting enabled
/// keeps it (docs/review-service.md §4, Repos rule 2), as does omitting min_severity or
/// monthly_budget.
#[utoipa::path(put, path = "/api/repos/{owner}/{name}", params(("owner" = String, Path, example = "acme"), ("name" = String, Path, example = "widgets")), request_body = Update,
    responses((status = 200, body = RepoRow), (status = 404, description = "Not found", content_type = "text/plain"), (status = 422, body = crate::error::ErrorBody)))]
pub(crate) async fn update(
    State(app): State<AppState>,
    Path((owner, name)): Path<(String, String)>,
    body: Result<Json<Value>, JsonRejection>,
) -> Result<Json<RepoRow>, ApiError> {
    let body: Update = object_body(body)?;
    if let Some(e) = body.enabled
        && !(0..=1).contains(&e)
    {
        return Err(ApiError::Unprocessable("enabled: expected 0 or 1".into()));
    }
    let min_severity = body
        .min_severity
        .map(|v| v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()));
    if let Some(Some(text)) = &min_severity
        && text.parse::<review_domain::Severity>().is_err()
    {
        return Err(ApiError::Unprocessable(format!(
            "min_severity: expected nit, question or blocking, got {text:?}"
        )));
    }
    if let Some(Some(budget)) = body.monthly_budget
        && !(budget.is_finite() && budget > 0.0)
    {
        return Err(ApiError::Unprocessable(format!(
            "monthly_budget: expected a positive cost in USD or null, got {budget}"
        )));
    }
    let row = app
        .records
        .edit_repo(
            &format!("{owner}/{name}"),
            body.prompt.as_deref(),
            body.model.as_deref(),
            body.enabled,
            min_severity.as_ref().map(Option::as_deref),
            body.monthly_budget,
        )
        .await?;
    row.map(Json).ok_or(ApiError::NotFound)
}

#[utoipa::path(delete, path = "/api/repos/{owner}/{name}", params(("owner" = String, Path, example = "acme"), ("name" = String, Path, example = "widgets")),
    responses((status = 204, description = "deleted, or was not registered")))]
pub(crate) async fn remove(
    State(app): State<AppState>,
    Path((owner, name)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    app.records.remove_repo(&format!("{owner}/{name}")).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/repos/{owner}/{name}/reviews", params(("owner" = String, Path, example = "acme"), ("name" = String, Path, example = "widgets")),
    responses((status = 200, body = Vec<ReviewRow>)))]
pub(crate) async fn repo_reviews(
    State(app): State<AppState>,
    Path((owner, name)): Path<(String, String)>,
) -> Result<Json<Vec<ReviewRow>>, ApiError> {
    let rows = app
        .records
        .store
        .reviews_for(&format!("{owner}/{name}"), None, REVIEWS_PER_LIST)
        .await?;
    Ok(Json(rows))
}

#[utoipa::path(get, path = "/api/repos/{owner}/{name}/pr/{number}", params(("owner" = String, Path, example = "acme"), ("name" = String, Path, example = "widgets"), ("number" = String, Path, example = "2")),
    responses((status = 200, body = Vec<ReviewRow>), (status = 404, description = "Not found", content_type = "text/plain")))]
pub(crate) async fn pr_reviews(
    State(app): State<AppState>,
    Path((owner, name, number)): Path<(String, String, String)>,
) -> Result<Json<Vec<ReviewRow>>, ApiError> {
    let number: i64 = number.parse().map_err(|_| ApiError::NotFound)?;
    let rows = app
        .records
        .store
        .reviews_for(&format!("{owner}/{name}"), Some(number), REVIEWS_PER_LIST)
        .await?;
    Ok(Json(rows))
}

/// A request body that must be a JSON object of `T`'s fields. serde alone would also read a
/// struct from an array (`[null, null]`), which the OpenAPI document does not allow; that and
/// malformed JSON are 422 `{error}` (docs/review-service.md §7).
fn object_body<T: DeserializeOwned>(
    body: Result<Json<Value>, JsonRejection>,
) -> Result<T, ApiError> {
    let Json(value) = body.map_err(|e| ApiError::Unprocessable(e.body_text()))?;
    if !value.is_object() {
        return Err(ApiError::Unprocessable("expected a JSON object".into()));
    }
    serde_json::from_value(value).map_err(|e| ApiError::Unprocessable(e.to_string()))
}

/// A JSON number with no fractional part as i64: JSON Schema's `integer` counts `7.0` as 7.
fn whole_number<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let n = Number::deserialize(d)?;
    n.as_i64()
        .or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0)
                // Exact: a whole number of at most 2^53 in magnitude.
                .map(|f| f as i64)
        })
        .ok_or_else(|| D::Error::custom(format!("invalid value {n}, expected a whole number")))
}

/// [`whole_number`] for an optional field, where `null` counts as absent.
fn whole_number_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    match Option::<Number>::deserialize(d)? {
        None => Ok(None),
        Some(n) => whole_number(n).map(Some).map_err(D::Error::custom),
    }
}
