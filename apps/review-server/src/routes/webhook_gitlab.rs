//! POST /webhook/gitlab (docs/review-service.md, "GitLab").
//!
//! The `X-Gitlab-Token` header is compared in constant time with GITLAB_WEBHOOK_SECRET before
//! anything else (401 `{"error":"invalid signature"}`, as on GitHub, also when no secret is
//! configured). The event is `X-Gitlab-Event`, the delivery id `X-Gitlab-Event-UUID` (kept as
//! `gitlab:<uuid>` beside GitHub's ids, for the same 24-hour deduplication). A verified delivery
//! publishes webhook:received, then:
//! - `Merge Request Hook` open, reopen, update with new commits (`oldrev`) and update out of
//!   draft start a review with the triggers opened, reopened, synchronize and
//!   ready_for_review; the project is registered (disabled) through the one registration path,
//!   a disabled project is skipped, a draft waits until it leaves draft. The delivery goes
//!   through the webhook inbox as GitHub's do.
//! - `Note Hook` on a merge request: `/review` (or `/review full`) by a member with at least
//!   Developer access reviews the merge request (trigger `command`); `/ask <question>` by the
//!   merge request's author or such a member queues an answer (trigger `ask`); a reply in the
//!   thread of an inline finding this service posted, by the author or such a member (never a
//!   bot), queues an answer (trigger `reply`).
//! - anything else is acknowledged and ignored.
//!
//! The reply is 200 `{"ok":true}` and never waits for a review.

use super::webhook::header;
use crate::error::{ApiError, ErrorCode};
use crate::job::{AnswerRequest, PrJob};
use crate::review;
use crate::state::AppState;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use bytes::Bytes;
use forge::RepoRef;
use forge::gitlab::webhook::{
    HookMergeRequest, MERGE_REQUEST_HOOK, MergeRequestAction, MergeRequestEvent, NOTE_HOOK,
    NoteEvent, verify_token,
};
use review_domain::{FindingKind, PullRequest, Trigger};
use secrecy::ExposeSecret;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::borrow::Cow;

/// GitLab's access level of the Developer role: members at or above it may run `/review`
/// (<https://docs.gitlab.com/api/members/#roles>).
pub(crate) const DEVELOPER_ACCESS: u32 = 30;

pub(crate) fn router() -> Router<AppState> {
    Router::new().route("/webhook/gitlab", post(receive))
}

fn payload<T: DeserializeOwned>(event: &str, body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::refused(ErrorCode::InvalidPayload, format!("{event} payload: {e}")))
}

/// POST /webhook/gitlab (see the module docs).
#[utoipa::path(post, path = "/webhook/gitlab", request_body(content = Object, description = "GitLab's payload"),
    params(("X-Gitlab-Token" = String, Header, min_length = 1), ("X-Gitlab-Event" = String, Header, min_length = 1), ("X-Gitlab-Event-UUID" = Option<String>, Header)),
    responses((status = 200, body = super::bodies::Ack), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 503, description = "WEBHOOK_MAX_CONCURRENT_BODIES bodies are being read (`webhook_busy`, Retry-After)", body = crate::error::ErrorBody)))]
pub(crate) async fn receive(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let secret = app
        .config
        .gitlab_webhook_secret
        .as_ref()
        .map(|s| s.expose_secret().as_bytes())
        .unwrap_or_default();
    let token = header(&headers, &["x-gitlab-token"]).unwrap_or_default();
    if !verify_token(secret, token.as_bytes()) {
        return Err(ApiError::InvalidSignature);
    }
    let event = header(&headers, &["x-gitlab-event"])
        .ok_or_else(|| ApiError::refused(ErrorCode::MissingEvent, "missing X-Gitlab-Event header"))?
        .to_owned();
    let delivery = header(&headers, &["x-gitlab-event-uuid"]).map(|uuid| format!("gitlab:{uuid}"));
    dispatch(&app, &event, delivery.as_deref(), &body).await
}

/// The fields every delivery is looked at for, borrowed: the project's id and path.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    project: Option<EnvelopeProject<'a>>,
}

#[derive(Deserialize)]
struct EnvelopeProject<'a> {
    #[serde(default)]
    id: Option<i64>,
    #[serde(borrow, default)]
    path_with_namespace: Option<Cow<'a, str>>,
}

async fn dispatch(
    app: &AppState,
    event: &str,
    delivery: Option<&str>,
    body: &[u8],
) -> Result<Json<Value>, ApiError> {
    let project = match serde_json::from_slice::<Envelope>(body) {
        Ok(envelope) => envelope.project,
        Err(e) if e.is_data() => None,
        Err(e) => {
            return Err(ApiError::refused(
                ErrorCode::InvalidPayload,
                format!("body is not JSON: {e}"),
            ));
        }
    };
    let full_name = project
        .as_ref()
        .and_then(|p| p.path_with_namespace.as_deref())
        .and_then(|p| crate::forges::gitlab_full_name(&app.config, p));
    app.records
        .webhook_received(full_name.as_deref(), event, delivery);
    tracing::debug!(event, ?delivery, repo = ?full_name, "gitlab webhook verified");
    if event == MERGE_REQUEST_HOOK || event == NOTE_HOOK {
        // Most deliveries of a group hook are for projects nobody enabled: register and skip
        // those from the envelope, without reading the rest of the payload.
        if let (Some(name), Some(id)) = (&full_name, project.as_ref().and_then(|p| p.id))
            && app.records.register(name, id).await?.enabled != 1
        {
            tracing::debug!(repo = name, "repo disabled; delivery skipped");
            return Ok(Json(json!({ "ok": true })));
        }
    }
    match event {
        MERGE_REQUEST_HOOK => merge_request(app, delivery, payload(event, body)?).await?,
        NOTE_HOOK => note(app, delivery, payload(event, body)?).await?,
        _ => tracing::debug!(event, "gitlab event ignored"),
    }
    Ok(Json(json!({ "ok": true })))
}

/// The project of a delivery, registered; Some when it is enabled (a disabled one is skipped
/// with a debug log, as on GitHub).
async fn enabled_project(
    app: &AppState,
    project: &forge::gitlab::webhook::HookProject,
) -> Result<Option<RepoRef>, ApiError> {
    let Some(full_name) =
        crate::forges::gitlab_full_name(&app.config, &project.path_with_namespace)
    else {
        tracing::warn!("a GitLab delivery, but GITLAB_URL is not set: ignored");
        return Ok(None);
    };
    let row = app.records.register(&full_name, project.id).await?;
    if row.enabled != 1 {
        tracing::debug!(repo = full_name, "repo disabled; delivery skipped");
        return Ok(None);
    }
    Ok(crate::forges::gitlab_repo(&full_name, project.id))
}

/// The domain pull request of a merge request as a hook shows it. The base commit is left
/// empty: hooks do not carry it, and the review takes the base branch as it fetches it.
fn pull_request(mr: &HookMergeRequest, author: Option<String>) -> Option<PullRequest> {
    Some(PullRequest {
        number: mr.iid,
        title: mr.title.clone(),
        body: mr.description.clone(),
        author,
        base_ref: mr.target_branch.clone(),
        base_sha: String::new(),
        head_ref: mr.source_branch.clone(),
        head_sha: mr.head_sha()?.to_owned(),
    })
}

fn job(repo: RepoRef, pr: PullRequest, trigger: Trigger) -> PrJob {
    PrJob {
        repo,
        pr,
        trigger,
        attempt: 0,
        full_diff: false,
        answer: None,
    }
}

async fn merge_request(
    app: &AppState,
    delivery: Option<&str>,
    e: MergeRequestEvent,
) -> Result<(), ApiError> {
    let Some(action) = e.review_action() else {
        tracing::debug!(action = ?e.object_attributes.action, "merge request event ignored");
        return Ok(());
    };
    let trigger = match action {
        MergeRequestAction::Opened => Trigger::Opened,
        MergeRequestAction::Reopened => Trigger::Reopened,
        MergeRequestAction::Pushed => Trigger::Synchronize,
        MergeRequestAction::ReadyForReview => Trigger::ReadyForReview,
    };
    let Some(repo) = enabled_project(app, &e.project).await? else {
        return Ok(());
    };
    let mr = &e.object_attributes;
    if mr.is_draft() && trigger != Trigger::ReadyForReview {
        tracing::debug!(mr = mr.iid, "draft merge request waits until it is ready");
        return Ok(());
    }
    // The user of an `open` is the author; other actions may be anyone's.
    let author = (action == MergeRequestAction::Opened).then(|| e.user.username.clone());
    let Some(pr) = pull_request(mr, author) else {
        return Err(ApiError::refused(
            ErrorCode::InvalidPayload,
            "Merge Request Hook payload: object_attributes.last_commit.id is missing",
        ));
    };
    if !review::accept(app, delivery, &job(repo, pr, trigger)).await? {
        tracing::debug!(?delivery, "redelivery acknowledged, not reviewed again");
    }
    Ok(())
}

/// Whether GitLab user `user_id` has at least Developer access to the project. A failed
/// lookup is a no (logged).
async fn is_developer(app: &AppState, repo: &RepoRef, user_id: i64) -> bool {
    let Some(gitlab) = &app.gitlab else {
        return false;
    };
    match gitlab.member_access_level(repo, user_id).await {
        Ok(level) => level.is_some_and(|l| l >= DEVELOPER_ACCESS),
        Err(e) => {
            tracing::warn!(error = %e, user_id, "cannot read a GitLab member's access level");
            false
        }
    }
}

async fn note(app: &AppState, delivery: Option<&str>, e: NoteEvent) -> Result<(), ApiError> {
    let Some(mr) = e.new_merge_request_note().cloned() else {
        tracing::debug!("note ignored: not a new note on a merge request");
        return Ok(());
    };
    // GitLab's service and bot users (project, group and service-account tokens) never
    // start work.
    if forge::gitlab::is_bot_username(&e.user.username) {
        tracing::debug!(user = %e.user.username, "note by a bot user ignored");
        return Ok(());
    }
    let text = e.object_attributes.note.trim_start();
    let first = text.split_whitespace().next().unwrap_or_default();
    let command = match first {
        "/review" => Some(Trigger::Command),
        "/ask" => Some(Trigger::Ask),
        _ => None,
    };
    let Some(repo) = enabled_project(app, &e.project).await? else {
        return Ok(());
    };
    let Some(pr) = pull_request(&mr, None) else {
        tracing::debug!(
            mr = mr.iid,
            "note ignored: the merge request has no head commit yet"
        );
        return Ok(());
    };
    match command {
        Some(Trigger::Command) => {
            if !is_developer(app, &repo, e.user.id).await {
                tracing::debug!(user = %e.user.username, "/review by a user below Developer ignored");
                return Ok(());
            }
            let mut job = job(repo, pr, Trigger::Command);
            job.full_diff = text.split_whitespace().nth(1) == Some("full");
            command_job(app, delivery, job).await
        }
        Some(_) => {
            let question = text
                .strip_prefix("/ask")
                .unwrap_or_default()
                .trim()
                .to_owned();
            let allowed = e.by_merge_request_author() || is_developer(app, &repo, e.user.id).await;
            if question.is_empty() || !allowed {
                tracing::debug!(user = %e.user.username, "/ask ignored: empty, or not by the author or a Developer");
                return Ok(());
            }
            let mut job = job(repo, pr, Trigger::Ask);
            job.full_diff = true;
            job.answer = Some(AnswerRequest::Ask {
                question,
                login: e.user.username.clone(),
            });
            command_job(app, delivery, job).await
        }
        None => thread_reply(app, delivery, &e, repo, pr).await,
    }
}

/// Queue a command's review or answer, claiming the delivery id in the same round trip.
async fn command_job(app: &AppState, delivery: Option<&str>, job: PrJob) -> Result<(), ApiError> {
    if !review::accept(app, delivery, &job).await? {
        tracing::debug!(?delivery, "redelivery acknowledged, not run again");
    }
    Ok(())
}

/// A reply in a discussion this service opened with an inline finding: answered (trigger
/// `reply`) when the merge request's author or a Developer wrote it.
async fn thread_reply(
    app: &AppState,
    delivery: Option<&str>,
    e: &NoteEvent,
    repo: RepoRef,
    pr: PullRequest,
) -> Result<(), ApiError> {
    let note = &e.object_attributes;
    let (Some(discussion_id), Some(gitlab)) = (note.discussion_id.as_deref(), &app.gitlab) else {
        return Ok(());
    };
    if note.kind.is_none() {
        return Ok(()); // a plain note starts a discussion of its own
    }
    let full_name = repo.full_name();
    let findings = app
        .records
        .store
        .findings_for_pr(&full_name, pr.number)
        .await?;
    if !findings
        .iter()
        .any(|f| f.kind == FindingKind::Inline && f.github_comment_id.is_some())
    {
        return Ok(());
    }
    let thread = match gitlab.discussion(&repo, pr.number, discussion_id).await {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the discussion of a reply");
            return Ok(());
        }
    };
    let Some(first) = thread.first_comment_id().filter(|id| *id != note.id) else {
        return Ok(());
    };
    let ours = findings
        .iter()
        .any(|f| f.kind == FindingKind::Inline && f.github_comment_id == Some(first));
    if !ours {
        tracing::debug!(
            note = note.id,
            "reply ignored: not in the thread of a finding this service posted"
        );
        return Ok(());
    }
    if !(e.by_merge_request_author() || is_developer(app, &repo, e.user.id).await) {
        tracing::debug!(user = %e.user.username, "reply ignored: not by the author or a Developer");
        return Ok(());
    }
    let mut job = job(repo, pr, Trigger::Reply);
    job.full_diff = true;
    job.answer = Some(AnswerRequest::Thread {
        thread: first,
        reply: note.id,
        login: e.user.username.clone(),
        body: note.note.clone(),
    });
    command_job(app, delivery, job).await
}
