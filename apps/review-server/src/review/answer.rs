//! The run of an answer (triggers `reply` and `ask`), per
//! docs/review-service.md, "Answers in review threads": a queued job like a review's, claimed
//! and leased the same way, that checks its limits (answers per thread and per pull request;
//! over one: skipped with the reason, no model call), checks the pull request's current head
//! out, runs the answerer ([`agent::answer::run_answer`]) with the thread or the question,
//! posts the answer in the thread (or as a PR comment for `/ask`), records it as a `comment`
//! finding and, when the answer agrees the code is intended, dismisses the finding. No check
//! run, and no automatic retry: a failed answer is recorded failed and stays so.

use super::{RunError, log_store_error, prepare};
use crate::job::{AnswerRequest, PrJob};
use crate::run_settings::{answer_limits, provider_settings, review_budget};
use crate::state::{AppState, CancelReason};
use agent::CancellationToken;
use agent::answer::{AnswerJob, AnswerVerdict, Question, ThreadReply};
use anyhow::anyhow;
use review_domain::{
    FindingKind, FindingRow, ModelSpec, NewFinding, ReviewRow, ReviewStatus, Trigger, model_cascade,
};
use review_store::Completion;
use std::collections::HashSet;
use std::sync::Mutex;
use tokio::time::Instant;

/// Characters of the reply kept in a dismissed finding's reason.
const REASON_QUOTE_CHARS: usize = 200;

/// How an answer ended without an error.
enum Ended {
    /// Posted; what it spent.
    Answered(Completion),
    /// Not answered (a limit, or nothing to answer): why.
    Skipped(String),
}

/// Runs answer `review` (already marked running) to its end state. Never panics; every end
/// lands in the row.
pub(super) async fn run(
    app: &AppState,
    review: &ReviewRow,
    job: PrJob,
    request: AnswerRequest,
    session_id: &str,
    cancel: CancellationToken,
    reason: &Mutex<Option<CancelReason>>,
) {
    let id = review.id;
    let result = tokio::select! {
        r = answer(app, id, &job, &request, session_id, cancel.clone()) => r,
        _ = cancel.cancelled() => Err(anyhow!("cancelled").into()),
    };
    match result {
        Ok(Ended::Answered(done)) => {
            tracing::info!(
                review_id = id,
                tokens = done.tokens,
                cost = done.cost,
                "answer posted"
            );
            log_store_error(id, &app.records.complete(id, &done).await);
        }
        Ok(Ended::Skipped(why)) => {
            tracing::info!(review_id = id, reason = %why, "answer skipped");
            log_store_error(id, &app.records.skip_because(id, &why).await);
        }
        Err(RunError { error, spent, .. }) => {
            let message = if cancel.is_cancelled() {
                super::cancel_reason(reason).message().to_owned()
            } else {
                format!("{error:#}")
            };
            tracing::warn!(review_id = id, error = %message, "answer failed; no automatic retry for answers");
            log_store_error(id, &app.records.fail(id, &message, spent.as_ref()).await);
        }
    }
}

/// The limits, the context, the checkout, the model and the post.
async fn answer(
    app: &AppState,
    id: i64,
    job: &PrJob,
    request: &AnswerRequest,
    session_id: &str,
    cancel: CancellationToken,
) -> Result<Ended, RunError> {
    let full_name = job.repo.full_name();
    let settings = app.records.store.settings().await?;
    let (thread_cap, pr_cap) = answer_limits(&app.config, &settings);
    let answered = app
        .records
        .store
        .reviews_for(&full_name, Some(job.pr.number), 10_000)
        .await?
        .iter()
        .filter(|r| r.id != id && r.status == ReviewStatus::Completed)
        .filter(|r| matches!(r.trigger, Some(Trigger::Reply | Trigger::Ask)))
        .count();
    if answered >= pr_cap as usize {
        return Ok(Ended::Skipped(format!(
            "this pull request has had {answered} answer(s), its limit is {pr_cap} (pr_max_answers)"
        )));
    }
    let findings = app
        .records
        .store
        .findings_for_pr(&full_name, job.pr.number)
        .await?;
    let (question, finding) = match request {
        AnswerRequest::Thread {
            thread,
            reply,
            login,
            body,
        } => {
            let Some(finding) = findings
                .iter()
                .find(|f| f.kind == FindingKind::Inline && f.github_comment_id == Some(*thread))
            else {
                return Ok(Ended::Skipped(format!(
                    "comment {thread} opens no thread of a finding this App posted"
                )));
            };
            let ours: HashSet<i64> = findings
                .iter()
                .filter(|f| f.kind == FindingKind::Comment)
                .filter_map(|f| f.github_comment_id)
                .collect();
            let comments = app
                .forge
                .pull_review_comments(&job.repo, job.pr.number)
                .await
                .map_err(|e| RunError::from(e).context("reading the review thread"))?;
            let in_thread: Vec<_> = comments
                .iter()
                .filter(|c| c.in_reply_to_id == Some(*thread))
                .collect();
            let given = in_thread.iter().filter(|c| ours.contains(&c.id)).count();
            if given >= thread_cap as usize {
                return Ok(Ended::Skipped(format!(
                    "this thread has had {given} answer(s), its limit is {thread_cap} (thread_max_answers)"
                )));
            }
            let mut replies: Vec<ThreadReply> = in_thread
                .iter()
                .filter(|c| c.id < *reply)
                .map(|c| ThreadReply {
                    author: c
                        .user
                        .as_ref()
                        .map_or_else(|| "ghost".to_owned(), |u| u.login.clone()),
                    association: c.author_association.clone().unwrap_or_default(),
                    body: c.body.clone(),
                    by_reviewer: ours.contains(&c.id),
                })
                .collect();
            let association = in_thread
                .iter()
                .find(|c| c.id == *reply)
                .and_then(|c| c.author_association.clone())
                .unwrap_or_default();
            replies.push(ThreadReply {
                author: login.clone(),
                association,
                body: body.clone(),
                by_reviewer: false,
            });
            let question = Question::Thread {
                path: finding.path.clone(),
                line: finding.line,
                finding: finding.body.clone(),
                replies,
            };
            (question, Some(finding.clone()))
        }
        AnswerRequest::Ask { question, login } => (
            Question::Ask {
                asker: login.clone(),
                question: question.clone(),
            },
            None,
        ),
    };

    let deadline = Instant::now() + agent::REVIEW_TIMEOUT;
    let checkout = match prepare::prepare(app, id, job, deadline).await? {
        Ok(c) => c,
        Err(skip) => return Ok(Ended::Skipped(skip.summary.to_owned())),
    };
    let repo_row = app.records.repo(&full_name).await?;
    let model: ModelSpec = model_cascade(
        repo_row.as_ref().and_then(|r| r.model.as_deref()),
        None,
        settings.get("agent_model").map(String::as_str),
        &app.config.agent_model,
    )
    .parse()?;
    let mut agent_job = AnswerJob::new(
        session_id,
        checkout.worktree.path(),
        checkout.diff.clone(),
        model,
        job.pr.clone(),
        question,
    );
    agent_job.budget = review_budget(&app.config, &settings);
    let providers = provider_settings(&app.config, &settings);
    let outcome = agent::answer::run_answer(
        agent_job,
        &providers,
        &app.catalog,
        &app.transcripts,
        cancel,
    )
    .await?;
    drop(checkout);
    let spent = Completion {
        cost: outcome.cost,
        tokens: outcome.tokens,
        model: outcome.model.clone(),
        patch_id: None,
    };
    let with_spent = |e: RunError| RunError {
        spent: Some(spent.clone()),
        ..e
    };
    let answer = outcome.answer.map_err(|e| with_spent(e.into()))?;
    let posted = match request {
        AnswerRequest::Thread { thread, .. } => {
            app.forge
                .reply_to_review_comment(&job.repo, job.pr.number, *thread, &answer.body)
                .await
        }
        AnswerRequest::Ask { .. } => {
            app.forge
                .post_comment(&job.repo, job.pr.number, &answer.body)
                .await
        }
    };
    let posted = posted.map_err(|e| with_spent(RunError::from(e).context("posting the answer")))?;
    record_answer(app, id, &answer.body, posted).await;
    if let (
        AnswerVerdict::AgreeIntended,
        Some(finding),
        AnswerRequest::Thread { login, body, .. },
    ) = (answer.verdict, &finding, request)
    {
        dismiss(app, id, finding, login, body).await;
    }
    Ok(Ended::Answered(spent))
}

/// Records the posted answer as a `comment` finding of the answer's row (logged when it cannot
/// be: the answer is public already).
async fn record_answer(app: &AppState, id: i64, body: &str, comment_id: i64) {
    let finding = NewFinding {
        kind: FindingKind::Comment,
        body: body.to_owned(),
        event: None,
        path: None,
        line: None,
        severity: None,
        github_review_id: None,
        github_comment_id: Some(comment_id),
        fingerprint: None,
    };
    if let Err(e) = app.records.record_findings(id, &[finding]).await {
        tracing::error!(review_id = id, error = %e, "answer posted but not recorded");
    }
}

/// Dismisses `finding`: the answer agreed with `login` that the code is intended.
async fn dismiss(app: &AppState, id: i64, finding: &FindingRow, login: &str, reply: &str) {
    let quote: String = reply.trim().chars().take(REASON_QUOTE_CHARS).collect();
    let why = format!("{login} explained it is intended: {quote}");
    match app.records.dismiss_finding(finding.id, &why).await {
        Ok(Some(_)) => tracing::info!(
            review_id = id,
            finding_id = finding.id,
            "finding dismissed: answered as intended"
        ),
        Ok(None) => tracing::debug!(
            review_id = id,
            finding_id = finding.id,
            "finding was no longer open"
        ),
        Err(e) => {
            tracing::error!(review_id = id, finding_id = finding.id, error = %e, "cannot dismiss the finding")
        }
    }
}
