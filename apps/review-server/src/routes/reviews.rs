//! Reviews under /api (docs/review-service.md §4, Reviews; §3 for retry and
//! stop): one review, its findings, its session transcript, retry and stop.

use crate::error::ApiError;
use crate::job::PrJob;
use crate::review;
use crate::state::{AppState, CancelReason};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use forge::RepoRef;
use review_domain::{FindingRow, ReviewRow, Trigger};
use serde_json::{Value, json};

/// Characters of a transcript shown when it is not JSON (docs/review-service.md §8).
const RAW_SESSION_CHARS: usize = 1000;

pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/reviews/{id}", get(one))
        .route("/api/reviews/{id}/findings", get(findings))
        .route("/api/reviews/{id}/dropped", get(dropped))
        .route("/api/reviews/{id}/session", get(session))
        .route("/api/reviews/{id}/retry", post(retry))
        .route("/api/reviews/{id}/stop", post(stop))
}

async fn review_or_404(app: &AppState, id: &str) -> Result<ReviewRow, ApiError> {
    let id: i64 = id.parse().map_err(|_| ApiError::NotFound)?;
    app.records
        .store
        .review(id)
        .await?
        .ok_or(ApiError::NotFound)
}

/// GET /api/reviews/:id: the row, or 404 `Not found`.
#[utoipa::path(get, path = "/api/reviews/{id}", operation_id = "get_review", params(("id" = String, Path, description = "review id", example = "1")),
    responses((status = 200, body = ReviewRow), (status = 404, description = "Not found", content_type = "text/plain")))]
pub(crate) async fn one(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<ReviewRow>, ApiError> {
    Ok(Json(review_or_404(&app, &id).await?))
}

/// GET /api/reviews/:id/findings: ordered by id; an unknown review gives 200 [].
#[utoipa::path(get, path = "/api/reviews/{id}/findings", params(("id" = String, Path, description = "review id", example = "1")),
    responses((status = 200, body = Vec<FindingRow>)))]
pub(crate) async fn findings(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<FindingRow>>, ApiError> {
    let Ok(id) = id.parse::<i64>() else {
        return Ok(Json(Vec::new()));
    };
    Ok(Json(app.records.store.findings_for_review(id).await?))
}

/// GET /api/reviews/:id/dropped: the candidate inline findings verification dropped, each with
/// the verifier's reason, ordered by id; an unknown review gives 200 [] (docs/review-service.md,
/// "Verification before posting").
#[utoipa::path(get, path = "/api/reviews/{id}/dropped", params(("id" = String, Path, description = "review id", example = "1")),
    responses((status = 200, body = Vec<review_domain::DroppedFindingRow>)))]
pub(crate) async fn dropped(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<review_domain::DroppedFindingRow>>, ApiError> {
    let Ok(id) = id.parse::<i64>() else {
        return Ok(Json(Vec::new()));
    };
    Ok(Json(app.records.store.dropped_findings(id).await?))
}

/// GET /api/reviews/:id/session: the transcript; 404 without a review or session id; 200
/// `{error: "session-unavailable", detail}` when it cannot be read or is empty, 200
/// `{error: "session-unparseable", raw}` (first 1000 characters) when it is not JSON.
#[utoipa::path(get, path = "/api/reviews/{id}/session", params(("id" = String, Path, description = "review id", example = "1")),
    responses((status = 200, description = "the transcript, or an object with an error key", body = super::bodies::SessionBody),
        (status = 404, description = "Not found", content_type = "text/plain")))]
pub(crate) async fn session(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let review = review_or_404(&app, &id).await?;
    let session_id = review.session_id.ok_or(ApiError::NotFound)?;
    let path = match app.transcripts.path(&session_id) {
        Ok(p) => p,
        Err(e) => {
            return Ok(Json(
                json!({ "error": "session-unavailable", "detail": e.to_string() }),
            ));
        }
    };
    let text = match tokio::fs::read_to_string(&path).await {
        Ok(t) if !t.trim().is_empty() => t,
        // Run by another replica: its transcript is mirrored in the database.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match app.records.store.transcript(&session_id).await? {
                Some(t) if !t.trim().is_empty() => t,
                _ => {
                    return Ok(Json(json!({
                        "error": "session-unavailable",
                        "detail": format!("cannot read the transcript of session {session_id}: {e}"),
                    })));
                }
            }
        }
        Ok(_) => {
            return Ok(Json(
                json!({ "error": "session-unavailable", "detail": "the transcript is empty" }),
            ));
        }
        Err(e) => {
            return Ok(Json(json!({
                "error": "session-unavailable",
                "detail": format!("cannot read the transcript of session {session_id}: {e}"),
            })));
        }
    };
    Ok(Json(match serde_json::from_str::<Value>(&text) {
        Ok(v) => v,
        Err(_) => json!({
            "error": "session-unparseable",
            "raw": text.chars().take(RAW_SESSION_CHARS).collect::<String>(),
        }),
    }))
}

/// POST /api/reviews/:id/retry (docs/review-service.md §4): re-fetch the PR and start a fresh review
/// with trigger retry; the original row is untouched. 202 `{ok:true}`; 404 `Not found` or
/// `repo not found` (plain text); 502 `{ok:false, error}` when the forge cannot give the PR.
#[utoipa::path(post, path = "/api/reviews/{id}/retry", params(("id" = String, Path, description = "review id", example = "1")),
    responses((status = 202, body = super::bodies::Ack), (status = 404, content_type = "text/plain"), (status = 502, body = super::bodies::RetryFailed)))]
pub(crate) async fn retry(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let review = review_or_404(&app, &id).await?;
    let Some(repo) = app.records.repo(&review.repo_full_name).await? else {
        return Ok((StatusCode::NOT_FOUND, "repo not found").into_response());
    };
    if review.pr_number == 0 {
        // An improver row (pr_number 0) is retried by queueing the improver again.
        crate::improver::spawn(&app, repo);
        return Ok((StatusCode::ACCEPTED, Json(json!({ "ok": true }))).into_response());
    }
    let (owner, name) = repo
        .full_name
        .rsplit_once('/')
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("repo name without a slash")))?;
    let repo_ref = RepoRef {
        installation_id: repo.installation_id,
        owner: owner.to_owned(),
        name: name.to_owned(),
    };
    let pr = match app.forge.pull_request(&repo_ref, review.pr_number).await {
        Ok(pr) => pr,
        Err(e) => return Err(ApiError::ForgeUnavailable(e.to_string())),
    };
    review::enqueue(&app, PrJob::from_pull(repo_ref, &pr, Trigger::Retry, 0)).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "ok": true }))).into_response())
}

/// POST /api/reviews/:id/stop (docs/review-service.md §3): aborts a live run on whichever
/// replica runs it (`{ok:true, live:true}`; it ends failed with `Stopped by user`); a review
/// no replica runs (waiting in the queue, or its lease lapsed) is failed directly (`{ok:true,
/// live:false}`); a terminal one answers `{ok:false, reason: "already completed"}`. Stopped
/// reviews are never retried.
#[utoipa::path(post, path = "/api/reviews/{id}/stop", params(("id" = String, Path, description = "review id", example = "1")),
    responses((status = 200, body = super::bodies::StopOutcome), (status = 404, content_type = "text/plain")))]
pub(crate) async fn stop(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let review = review_or_404(&app, &id).await?;
    if review.status.is_terminal() {
        return Ok(Json(json!({ "ok": false, "reason": "already completed" })));
    }
    Ok(Json(
        match review::cancel(&app, review.id, CancelReason::Stopped).await? {
            review::Cancelled::Live => json!({ "ok": true, "live": true }),
            review::Cancelled::Waiting => json!({ "ok": true, "live": false }),
            review::Cancelled::Ended => json!({ "ok": false, "reason": "already completed" }),
        },
    ))
}
