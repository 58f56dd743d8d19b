//! POST /webhook/github (docs/review-service.md §1, §4 and §6; docs/architecture.md,
//! Lifecycle extras).
//!
//! The raw body is HMAC-verified with FORGE_WEBHOOK_SECRET before anything else (401
//! `{"error":"invalid signature"}`, also when no secret is configured). Event names come from
//! `X-GitHub-Event` or `X-Forge-Event`, delivery ids from `X-GitHub-Delivery` or
//! `X-Forge-Delivery`. A verified delivery publishes webhook:received, then:
//! - `pull_request` opened, synchronize, reopened, ready_for_review: the repo is registered
//!   through the one registration path; a disabled repo is skipped with a debug log; a draft
//!   waits for ready_for_review; otherwise the delivery is accepted into the webhook inbox
//!   (its id claimed in the same round trip) and a pending review is created from it right
//!   after the reply, then run in the background (docs/architecture.md, "The webhook inbox").
//! - `issue_comment` whose first word is `/review` on a PR, by OWNER, MEMBER or COLLABORATOR:
//!   the PR is fetched from the forge and reviewed with trigger `command`. `/ask <question>`
//!   by the PR's author or such a user queues an answer with trigger `ask`.
//! - `pull_request_review_comment` created: a reply in the thread of an inline finding this
//!   App posted, by the PR's author or an OWNER, MEMBER or COLLABORATOR (never a bot), queues
//!   an answer with trigger `reply`; every other review comment is ignored. Both answers are
//!   described in docs/review-service.md, "Answers in review threads".
//! - `installation` and `installation_repositories`: the listed repos are registered.
//! - anything else (including `ping`) is acknowledged and ignored.
//!
//! A delivery whose id was seen in the last 24 hours (GitHub redelivers) is answered 200
//! `{"ok":true}` and not dispatched again; the ids are kept in the database across restarts.
//!
//! The reply is 200 `{"ok":true}` and never waits for a review. A verified body that is not
//! JSON, or a known event whose payload lacks a field we need, is 400 with the parse error.

use crate::error::{ApiError, ErrorCode};
use crate::job::{AnswerRequest, PrJob};
use crate::records::now;
use crate::review;
use crate::state::AppState;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use bytes::Bytes;
use forge::RepoRef;
use forge::webhook::{
    InstallationEvent, InstallationRepositoriesEvent, IssueCommentEvent, PullRequestEvent,
    PullRequestReviewCommentEvent,
};
use review_domain::{FindingKind, RepoRow, Trigger};
use secrecy::ExposeSecret;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::borrow::Cow;

pub(crate) fn router() -> Router<AppState> {
    Router::new().route("/webhook/github", post(receive))
}

/// The first of `names` present with a non-empty value: an empty `X-GitHub-Event:` names no
/// event, so it is as missing as an absent one.
pub(super) fn header<'a>(headers: &'a HeaderMap, names: &[&str]) -> Option<&'a str> {
    names
        .iter()
        .filter_map(|n| headers.get(*n))
        .filter_map(|v| v.to_str().ok())
        .find(|v| !v.trim().is_empty())
}

/// Parse the delivery straight from the bytes into the event's type (no JSON tree in between:
/// serde skips the fields we do not read).
fn payload<T: DeserializeOwned>(event: &str, body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::refused(ErrorCode::InvalidPayload, format!("{event} payload: {e}")))
}

/// The one field every delivery is looked at for: `repository.full_name`, borrowed.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    repository: Option<EnvelopeRepository<'a>>,
    #[serde(default)]
    installation: Option<forge::webhook::Installation>,
}

#[derive(Deserialize)]
struct EnvelopeRepository<'a> {
    #[serde(borrow, default)]
    full_name: Option<Cow<'a, str>>,
}

/// POST /webhook/github (see the module docs).
#[utoipa::path(post, path = "/webhook/github", request_body(content = Object, description = "the forge's payload, signed"),
    params(("X-Hub-Signature-256" = String, Header), ("X-GitHub-Event" = Option<String>, Header), ("X-Forge-Event" = Option<String>, Header)),
    responses((status = 200, body = super::bodies::Ack), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 503, description = "WEBHOOK_MAX_CONCURRENT_BODIES bodies are being read (`webhook_busy`, Retry-After)", body = crate::error::ErrorBody)))]
pub(crate) async fn receive(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let secret = app
        .config
        .webhook_secret
        .as_ref()
        .map(|s| s.expose_secret().as_bytes())
        .unwrap_or_default();
    let signature = header(&headers, &["x-hub-signature-256"]).unwrap_or_default();
    if !forge::verify_signature(secret, &body, signature) {
        return Err(ApiError::InvalidSignature);
    }
    let event = header(&headers, &["x-github-event", "x-forge-event"])
        .ok_or_else(|| ApiError::refused(ErrorCode::MissingEvent, "missing X-GitHub-Event header"))?
        .to_owned();
    let delivery = header(&headers, &["x-github-delivery", "x-forge-delivery"]).map(str::to_owned);
    dispatch(&app, &event, delivery.as_deref(), &body).await
}

/// Whether this delivery should start a review: true without an id or when its id is claimed
/// now; false for a redelivery (the same id within 24 hours), which is acknowledged and not
/// reviewed again (docs/security.md). Only deliveries that would start a review claim their
/// id: registrations are idempotent, and the deliveries most installs receive (a repo nobody
/// enabled) are answered without a database write.
async fn first_delivery(app: &AppState, delivery: Option<&str>) -> Result<bool, ApiError> {
    let Some(id) = delivery.filter(|d| !d.is_empty()) else {
        return Ok(true);
    };
    let first = app.records.store.claim_delivery(id, now()).await?;
    if !first {
        tracing::debug!(delivery = id, "redelivery acknowledged, not reviewed again");
    }
    Ok(first)
}

/// Gives up the claim of a delivery whose review could not be started, so the forge's own
/// redelivery can still go through.
async fn release_delivery(app: &AppState, delivery: Option<&str>) {
    if let Some(id) = delivery.filter(|d| !d.is_empty())
        && let Err(e) = app.records.store.release_delivery(id).await
    {
        tracing::warn!(delivery = id, error = %e, "cannot release a failed delivery's claim");
    }
}

/// Everything after the signature check: publish webhook:received and act on the event (see
/// the module docs).
async fn dispatch(
    app: &AppState,
    event: &str,
    delivery: Option<&str>,
    body: &[u8],
) -> Result<Json<Value>, ApiError> {
    let (repo_name, installation_id) = match serde_json::from_slice::<Envelope>(body) {
        Ok(envelope) => (
            envelope
                .repository
                .and_then(|r| r.full_name)
                .map(Cow::into_owned),
            envelope.installation.map_or(0, |i| i.id),
        ),
        Err(e) if e.is_data() => (None, 0),
        Err(e) => {
            return Err(ApiError::refused(
                ErrorCode::InvalidPayload,
                format!("body is not JSON: {e}"),
            ));
        }
    };
    app.records
        .webhook_received(repo_name.as_deref(), event, delivery);
    tracing::debug!(event, ?delivery, repo = ?repo_name, "webhook verified");

    match event {
        "pull_request" => {
            // Most deliveries of an org-wide install are for repos nobody enabled: register
            // and skip those from the envelope, without reading the rest of the payload.
            if let Some(name) = &repo_name
                && enabled_repo(app, name, installation_id).await?.is_none()
            {
                return Ok(Json(json!({ "ok": true })));
            }
            pull_request(app, delivery, payload(event, body)?).await?
        }
        "issue_comment" => issue_comment(app, delivery, payload(event, body)?).await?,
        "pull_request_review_comment" => {
            review_comment(app, delivery, payload(event, body)?).await?
        }
        "installation" => {
            let e: InstallationEvent = payload(event, body)?;
            if matches!(
                e.action.as_str(),
                "created" | "new_permissions_accepted" | "unsuspend"
            ) {
                for r in &e.repositories {
                    app.records
                        .register(&r.full_name, e.installation.id)
                        .await?;
                }
            }
        }
        "installation_repositories" => {
            let e: InstallationRepositoriesEvent = payload(event, body)?;
            for r in &e.repositories_added {
                app.records
                    .register(&r.full_name, e.installation.id)
                    .await?;
            }
        }
        _ => tracing::debug!(event, "event ignored"),
    }
    Ok(Json(json!({ "ok": true })))
}

/// Register the repo and return it when enabled; a disabled repo is skipped (debug log only,
/// docs/review-service.md §1 step 3).
async fn enabled_repo(
    app: &AppState,
    full_name: &str,
    installation_id: i64,
) -> Result<Option<RepoRow>, ApiError> {
    let row = app.records.register(full_name, installation_id).await?;
    if row.enabled == 1 {
        Ok(Some(row))
    } else {
        tracing::debug!(repo = full_name, "repo disabled; delivery skipped");
        Ok(None)
    }
}

/// The delivery's repository, registered ([`enabled_repo`]), as the forge reaches it through
/// the delivery's installation; None when the repo is disabled.
async fn enabled_target(
    app: &AppState,
    repo: &forge::webhook::Repository,
    installation: Option<forge::webhook::Installation>,
) -> Result<Option<RepoRef>, ApiError> {
    let installation_id = installation.map_or(0, |i| i.id);
    if enabled_repo(app, &repo.full_name, installation_id)
        .await?
        .is_none()
    {
        return Ok(None);
    }
    Ok(Some(RepoRef {
        installation_id,
        owner: repo.owner.login.clone(),
        name: repo.name.clone(),
    }))
}

async fn pull_request(
    app: &AppState,
    delivery: Option<&str>,
    e: PullRequestEvent,
) -> Result<(), ApiError> {
    let trigger = match e.action.as_str() {
        "opened" => Trigger::Opened,
        "synchronize" => Trigger::Synchronize,
        "reopened" => Trigger::Reopened,
        "ready_for_review" => Trigger::ReadyForReview,
        other => {
            tracing::debug!(action = other, "pull_request action ignored");
            return Ok(());
        }
    };
    let Some(repo) = enabled_target(app, &e.repository, e.installation).await? else {
        return Ok(());
    };
    if e.pull_request.draft && trigger != Trigger::ReadyForReview {
        tracing::debug!(
            pr = e.number,
            "draft pull request waits for ready_for_review"
        );
        return Ok(());
    }
    let mut job = PrJob::from_pull(repo, &e.pull_request, trigger, 0);
    // The delivery's own number names the PR (it equals pull_request.number on GitHub).
    job.pr.number = e.number;
    // The delivery id's claim and the review's inbox row in one round trip; the review row
    // itself is written after the reply (docs/architecture.md, "The webhook inbox").
    if !review::accept(app, delivery, &job).await? {
        tracing::debug!(?delivery, "redelivery acknowledged, not reviewed again");
    }
    Ok(())
}

async fn issue_comment(
    app: &AppState,
    delivery: Option<&str>,
    e: IssueCommentEvent,
) -> Result<(), ApiError> {
    if let Some(question) = e.ask_question() {
        let question = question.to_owned();
        return ask(app, delivery, e, question).await;
    }
    if !e.is_review_command() {
        return Ok(());
    }
    let Some(repo) = enabled_target(app, &e.repository, e.installation).await? else {
        return Ok(());
    };
    let number = e.issue.number;
    let full = e.comment.body.split_whitespace().nth(1) == Some("full");
    if !first_delivery(app, delivery).await? {
        return Ok(());
    }
    let app = app.clone();
    let delivery = delivery.map(str::to_owned);
    // The PR's head and base come from the forge; fetch them after replying. A command that
    // cannot start gives its delivery id back, so the forge's redelivery can still start it.
    app.tasks.clone().spawn(async move {
        match app.forge.pull_request(&repo, number).await {
            Ok(pr) => {
                let mut job = PrJob::from_pull(repo, &pr, Trigger::Command, 0);
                // `/review full`: the whole diff, not the change since the last review.
                job.full_diff = full;
                if let Err(e) = review::enqueue(&app, job).await {
                    tracing::error!(error = %e, "cannot start the /review command");
                    release_delivery(&app, delivery.as_deref()).await;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, pr = number, "/review: cannot fetch the pull request");
                release_delivery(&app, delivery.as_deref()).await;
            }
        }
    });
    Ok(())
}

/// `/ask <question>`: fetch the PR after replying and queue its answer (trigger `ask`; see
/// docs/review-service.md, "Answers in review threads"). A command that cannot start gives its
/// delivery id back.
async fn ask(
    app: &AppState,
    delivery: Option<&str>,
    e: IssueCommentEvent,
    question: String,
) -> Result<(), ApiError> {
    let Some(repo) = enabled_target(app, &e.repository, e.installation).await? else {
        return Ok(());
    };
    if !first_delivery(app, delivery).await? {
        return Ok(());
    }
    let number = e.issue.number;
    let login = e.comment.user.map(|u| u.login).unwrap_or_default();
    let app = app.clone();
    let delivery = delivery.map(str::to_owned);
    app.tasks.clone().spawn(async move {
        match app.forge.pull_request(&repo, number).await {
            Ok(pr) => {
                let mut job = PrJob::from_pull(repo, &pr, Trigger::Ask, 0);
                job.full_diff = true;
                job.answer = Some(AnswerRequest::Ask { question, login });
                if let Err(e) = review::enqueue(&app, job).await {
                    tracing::error!(error = %e, "cannot queue the /ask answer");
                    release_delivery(&app, delivery.as_deref()).await;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, pr = number, "/ask: cannot fetch the pull request");
                release_delivery(&app, delivery.as_deref()).await;
            }
        }
    });
    Ok(())
}

/// A review comment: a reply in the thread of one of this App's inline findings, by the PR's
/// author or a member, is answered (trigger `reply`); the answer is queued like a review (see
/// docs/review-service.md, "Answers in review threads"). Everything else is ignored.
async fn review_comment(
    app: &AppState,
    delivery: Option<&str>,
    e: PullRequestReviewCommentEvent,
) -> Result<(), ApiError> {
    let comment = e.comment.id;
    let Some(thread) = e
        .comment
        .in_reply_to_id
        .filter(|_| e.is_reply_by_author_or_maintainer())
    else {
        tracing::debug!(
            comment,
            action = %e.action,
            "review comment ignored: not a new reply by the pull request's author or a member"
        );
        return Ok(());
    };
    let Some(repo) = enabled_target(app, &e.repository, e.installation).await? else {
        return Ok(());
    };
    let number = e.pull_request.number;
    let ours = app
        .records
        .store
        .findings_for_pr(&e.repository.full_name, number)
        .await?
        .iter()
        .any(|f| f.kind == FindingKind::Inline && f.github_comment_id == Some(thread));
    if !ours {
        tracing::debug!(
            comment,
            thread,
            "review comment ignored: not in the thread of a finding this App posted"
        );
        return Ok(());
    }
    let login = e
        .comment
        .user
        .as_ref()
        .map(|u| u.login.clone())
        .unwrap_or_default();
    let mut job = PrJob::from_pull(repo, &e.pull_request, Trigger::Reply, 0);
    job.pr.number = number;
    job.full_diff = true;
    job.answer = Some(AnswerRequest::Thread {
        thread,
        reply: comment,
        login,
        body: e.comment.body,
    });
    if !review::accept(app, delivery, &job).await? {
        tracing::debug!(?delivery, "redelivery acknowledged, not answered again");
    }
    Ok(())
}
