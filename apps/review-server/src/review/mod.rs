//! The review of one pull request, from its pending row to its end state
//! (docs/review-service.md §1 and §3): [`enqueue`] creates the row with its queue row; a
//! replica with a free run slot claims it (`queue.rs`, docs/architecture.md, "Many
//! replicas"), marks the row running, opens the check run, then goes through its stages, each
//! in its own file:
//!
//! - `budget.rs`: the monthly budget, held before any work, per
//!   docs/review-service.md, "Monthly budget";
//! - [`prepare`]: sync, diff, the skip rules, the checkout;
//! - `run.rs`: the agent with its inputs;
//! - `poster.rs`: the agent's posting tools on the forge;
//! - `outcomes.rs`: what became of earlier findings (dismissed, resolved);
//! - `retry.rs`: the automatic retry after a genuine failure;
//! - `queue.rs`: claims, leases, cancels from other replicas and the due retries;
//! - `answer.rs`: the run of an answer (triggers `reply` and `ask`) instead of a review.
//!
//! Whatever the outcome, the row ends completed, skipped or failed (through
//! [`crate::records::Records`]), the worktree is removed and the check run completed.

mod answer;
pub(crate) mod budget;
mod outcomes;
mod poster;
pub(crate) mod prepare;
mod queue;
mod retry;
mod run;

use crate::job::PrJob;
use crate::state::{AppState, CancelReason, LiveRun};
use agent::{CancellationToken, ReviewOutcome};
use anyhow::anyhow;
use forge::CheckConclusion;
use review_domain::{ReviewRow, ReviewStatus, Trigger};
use review_store::{ClaimedReview, Completion, NewReview};
use std::sync::{Arc, Mutex};
use tokio::sync::OwnedSemaphorePermit;
use tracing::Instrument;

pub(crate) use queue::{spawn_replica_tasks, sweep_orphans};

/// The check run's name on the PR.
const CHECK_RUN_NAME: &str = "review-server";
// The longest a running review may take in all, git work included.
use agent::REVIEW_TIMEOUT;

/// How a run ended without an error.
enum Finished {
    /// The agent ran; the diff's patch id.
    Completed(ReviewOutcome, String),
    /// Nothing to review.
    Skipped(prepare::Skip),
    /// The monthly budget is reached: no model call.
    OverBudget(budget::Reached),
}

/// Which end a failed run gets (docs/review-service.md §3): decided where the failure is known,
/// from the failing part's own error type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailureKind {
    /// A genuine failure (git, network, the store, a model error worth another try): retried
    /// automatically once.
    Genuine,
    /// It stopped at a limit the operator set: its budget (REVIEW_MAX_TOKENS, REVIEW_MAX_COST),
    /// its step limit or the tree caps (REVIEW_MAX_TREE_ENTRIES, REVIEW_MAX_TREE_BYTES). That is
    /// the limit working: a retry would stop at the same place. The error names the limit.
    Limit,
    /// The configuration or the credentials are wrong: no API key, an unknown provider or
    /// model, a key the provider refuses, missing or refused GitHub App credentials. A retry
    /// minutes later meets the same configuration and would only post a "retry failed"
    /// comment.
    Configuration,
}

/// An error of a run: what went wrong (with its context), which end it gets, and what the run
/// had spent when it failed.
pub(crate) struct RunError {
    error: anyhow::Error,
    kind: FailureKind,
    spent: Option<Completion>,
}

impl RunError {
    fn new(error: anyhow::Error, kind: FailureKind) -> Self {
        RunError {
            error,
            kind,
            spent: None,
        }
    }

    /// The same failure, with `context` in front of its message.
    fn context(self, context: &'static str) -> Self {
        RunError {
            error: self.error.context(context),
            ..self
        }
    }
}

impl From<agent::AgentError> for RunError {
    fn from(e: agent::AgentError) -> Self {
        use agent::AgentError as A;
        let kind = match &e {
            A::BudgetExceeded(_) | A::StepLimit(_) => FailureKind::Limit,
            A::MissingKey { .. }
            | A::UnknownProvider(_)
            | A::Catalog(_)
            | A::Provider {
                status: 401 | 403 | 404,
                ..
            } => FailureKind::Configuration,
            _ => FailureKind::Genuine,
        };
        RunError::new(e.into(), kind)
    }
}

impl From<forge::ForgeError> for RunError {
    fn from(e: forge::ForgeError) -> Self {
        let kind = match &e {
            forge::ForgeError::Credentials(_)
            | forge::ForgeError::Api {
                status: 401 | 403, ..
            } => FailureKind::Configuration,
            _ => FailureKind::Genuine,
        };
        RunError::new(e.into(), kind)
    }
}

impl From<anyhow::Error> for RunError {
    fn from(e: anyhow::Error) -> Self {
        RunError::new(e, FailureKind::Genuine)
    }
}

impl From<review_store::StoreError> for RunError {
    fn from(e: review_store::StoreError) -> Self {
        RunError::new(e.into(), FailureKind::Genuine)
    }
}

impl From<review_domain::ModelSpecError> for RunError {
    fn from(e: review_domain::ModelSpecError) -> Self {
        RunError::new(e.into(), FailureKind::Genuine)
    }
}

/// How a run ended, for its check run.
struct RunEnd {
    conclusion: CheckConclusion,
    title: String,
    summary: String,
}

/// Create the pending row for `job` with its queue row (publishing review:created) and wake
/// a free run slot, here or on another replica; a synchronize supersedes the PR's older
/// reviews. Returns the row; the run continues after the caller replies.
pub(crate) async fn enqueue(app: &AppState, job: PrJob) -> anyhow::Result<ReviewRow> {
    queue_directly(app, None, &job)
        .await?
        .ok_or_else(|| anyhow!("a review without a delivery id cannot be a redelivery"))
}

/// [`enqueue`] with the claim of delivery id `delivery` in the same transaction; None, with
/// nothing written, for a redelivery.
async fn queue_directly(
    app: &AppState,
    delivery: Option<&str>,
    job: &PrJob,
) -> anyhow::Result<Option<ReviewRow>> {
    // A GitLab head is marked `pending` before its run can post `running`.
    let _marks = match job.repo.forge() {
        forge::ForgeKind::GitLab => Some(app.queue_marks.write().await),
        forge::ForgeKind::GitHub => None,
    };
    let Some(row) = app
        .records
        .create_delivered_review(delivery, &new_review(job), &serde_json::to_string(job)?)
        .await?
    else {
        return Ok(None);
    };
    if row.status == ReviewStatus::Skipped {
        log_head_skip(&row);
        return Ok(Some(row));
    }
    if job.trigger == Trigger::Synchronize {
        supersede(app, &row.repo_full_name, row.pr_number, row.id).await;
    }
    mark_queued(app, row.id, job).await;
    app.queue_wake.notify_one();
    Ok(Some(row))
}

/// How long marking a head as waiting may take before the review goes on without it.
const MARK_QUEUED_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Tells the forge the head waits for a review (a GitLab commit status `pending`; nothing on
/// GitHub) before the queue is woken, so the run's `running` comes after it. A failure or a
/// forge slower than [`MARK_QUEUED_TIMEOUT`] is logged and the review goes on. Answers set
/// no status (docs/review-service.md, "Answers in review threads").
async fn mark_queued(app: &AppState, review_id: i64, job: &PrJob) {
    if job.answer.is_some() || job.repo.forge() == forge::ForgeKind::GitHub {
        return;
    }
    let mark = app
        .forge
        .mark_queued(&job.repo, &job.pr.head_sha, CHECK_RUN_NAME);
    match tokio::time::timeout(MARK_QUEUED_TIMEOUT, mark).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::warn!(review_id, error = %e, "cannot mark the head as waiting for a review")
        }
        Err(_) => tracing::warn!(
            review_id,
            "marking the head as waiting for a review timed out"
        ),
    }
}

/// Accepts a pull_request delivery's review (docs/architecture.md, "The webhook inbox").
/// PostgreSQL: claims `delivery` and writes the job to the inbox in one round trip, then
/// wakes this replica's promoter, which creates the review after the webhook has replied.
/// SQLite (one process, one write lock): claims it and creates the review in one
/// transaction ([`queue_directly`]). Returns false for a redelivery (nothing written).
pub(crate) async fn accept(
    app: &AppState,
    delivery: Option<&str>,
    job: &PrJob,
) -> anyhow::Result<bool> {
    if app.records.store.backend() == review_store::Backend::Sqlite {
        return Ok(queue_directly(app, delivery, job).await?.is_some());
    }
    let accepted = app
        .records
        .store
        .accept_delivery(
            delivery,
            &new_review(job),
            &serde_json::to_string(job)?,
            crate::records::now_ms(),
        )
        .await?;
    if accepted {
        app.inbox_wake.notify_one();
    }
    Ok(accepted)
}

/// How many inbox rows one promotion moves at most.
const PROMOTE_BATCH: i64 = 64;

/// Moves every accepted delivery of the webhook inbox into a pending review (publishing
/// review:created), supersedes what a synchronize replaces, and wakes a free run slot. Rows
/// another replica accepted are promoted too: a replica that died after its reply loses none.
pub(crate) async fn drain_inbox(app: &AppState) {
    loop {
        // With GitLab on, a promoted GitLab head is marked `pending` before its run can post
        // `running` on this replica.
        let _marks = match app.gitlab {
            Some(_) => Some(app.queue_marks.write().await),
            None => None,
        };
        let promoted = match app.records.promote_accepted(PROMOTE_BATCH).await {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(error = %e, "cannot turn accepted deliveries into reviews");
                return;
            }
        };
        if promoted.is_empty() {
            return;
        }
        for p in &promoted {
            if p.row.status == ReviewStatus::Skipped {
                log_head_skip(&p.row);
                continue;
            }
            if p.row.trigger == Some(Trigger::Synchronize) {
                supersede(app, &p.row.repo_full_name, p.row.pr_number, p.row.id).await;
            }
            if let Ok(job) = serde_json::from_str::<PrJob>(&p.job) {
                mark_queued(app, p.row.id, &job).await;
            }
        }
        app.queue_wake.notify_one();
        if promoted.len() < PROMOTE_BATCH as usize {
            return;
        }
    }
}

/// A delivery recorded skipped by the one-review-per-head rule (docs/architecture.md, "One
/// review per head"): nothing runs, nothing is posted, and the head's review is not superseded.
fn log_head_skip(row: &ReviewRow) {
    tracing::info!(
        review_id = row.id,
        repo = %row.repo_full_name,
        pr_number = row.pr_number,
        reason = row.error.as_deref().unwrap_or_default(),
        "delivery skipped: this head already has a review"
    );
}

/// The row a job's review starts as. An answer's row has no head: it reviews nothing, so it
/// is never the last reviewed head of its pull request.
fn new_review(job: &PrJob) -> NewReview {
    NewReview {
        repo_full_name: job.repo.full_name(),
        pr_number: job.pr.number,
        title: Some(job.pr.title.clone()),
        trigger: Some(job.trigger),
        attempt: job.attempt,
        head_sha: job.answer.is_none().then(|| job.pr.head_sha.clone()),
    }
}

/// Ends every pending or running review of a PR except `keep` (a newer push supersedes them),
/// wherever it runs ([`cancel`]).
pub(crate) async fn supersede(app: &AppState, repo: &str, pr_number: i64, keep: i64) {
    let ids = match app
        .records
        .store
        .active_reviews_of_pr(repo, pr_number, keep)
        .await
    {
        Ok(ids) => ids,
        Err(e) => {
            tracing::error!(repo, pr_number, error = %e, "cannot find the reviews a push supersedes");
            return;
        }
    };
    for id in ids {
        tracing::info!(
            review_id = id,
            repo,
            pr_number,
            "superseded by a newer push"
        );
        if let Err(e) = cancel(app, id, CancelReason::Superseded).await {
            tracing::error!(review_id = id, error = %e, "cannot supersede the review");
        }
    }
}

/// Where a cancel reached the review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cancelled {
    /// A run in this process or on another replica was asked to end; it records the end.
    Live,
    /// Nobody ran it: the row was failed directly.
    Waiting,
    /// It had already ended.
    Ended,
}

/// Ends review `id` for `reason` wherever it is (docs/architecture.md, "Many replicas"): a
/// run in this process is cancelled; a review still waiting in the queue is failed; a review
/// another replica runs gets the cancel written to its queue row plus a NOTIFY, and that
/// replica ends it; a review whose lease lapsed (nobody runs it) is failed directly.
pub(crate) async fn cancel(
    app: &AppState,
    id: i64,
    reason: CancelReason,
) -> anyhow::Result<Cancelled> {
    if app.cancel_run(id, reason) {
        return Ok(Cancelled::Live);
    }
    if app
        .records
        .fail_waiting(id, reason.message())
        .await?
        .is_some()
    {
        return Ok(Cancelled::Waiting);
    }
    if let Some(owner) = app.records.request_cancel(id, reason.as_str()).await? {
        if owner == app.replica {
            // Claimed here a moment ago; the live run appears at once, or the renewal ends it.
            app.cancel_run(id, reason);
        }
        let message = serde_json::json!({ "cancel": id, "reason": reason.as_str() });
        app.records
            .store
            .notify(queue::CONTROL_CHANNEL, &message.to_string())
            .await?;
        return Ok(Cancelled::Live);
    }
    Ok(match app.records.fail(id, reason.message(), None).await? {
        Some(_) => Cancelled::Waiting,
        None => Cancelled::Ended,
    })
}

/// Run review `claimed` (already claimed by this replica, holding `permit`) to its end
/// state, then release its queue row. Never panics; every outcome lands in the row.
async fn run_claimed(app: AppState, claimed: ClaimedReview, permit: OwnedSemaphorePermit) {
    let id = claimed.review_id;
    let job: PrJob = match serde_json::from_str(&claimed.job) {
        Ok(job) => job,
        Err(e) => {
            let message = format!("the queued job cannot be read: {e}");
            tracing::error!(review_id = id, error = %message, "review failed");
            log_store_error(id, &app.records.fail(id, &message, None).await);
            log_store_error(id, &app.records.release(id).await);
            return;
        }
    };
    let cancel = CancellationToken::new();
    let reason = Arc::new(Mutex::new(None));
    if let Ok(mut live) = app.live.lock() {
        live.insert(
            id,
            LiveRun {
                repo: job.repo.full_name(),
                pr_number: job.pr.number,
                cancel: cancel.clone(),
                reason: reason.clone(),
            },
        );
    }
    let span = tracing::info_span!("review", review_id = id, repo = %job.repo.full_name(), pr = job.pr.number);
    lifecycle(&app, id, job, cancel, reason)
        .instrument(span)
        .await;
    if let Ok(mut live) = app.live.lock() {
        live.remove(&id);
    }
    log_store_error(id, &app.records.release(id).await);
    drop(permit);
}

/// Run one claimed review to its end state. Never panics; every outcome lands in the row.
async fn lifecycle(
    app: &AppState,
    id: i64,
    job: PrJob,
    cancel: CancellationToken,
    reason: Arc<Mutex<Option<CancelReason>>>,
) {
    let session_id = format!(
        "review-{id}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let review = match app.records.start(id, &session_id).await {
        Ok(Some(row)) => row,
        Ok(None) => return, // stopped or superseded between the claim and the start
        Err(e) => {
            tracing::error!(review_id = id, error = %e, "cannot mark review running");
            return;
        }
    };
    if cancel.is_cancelled() {
        let why = cancel_reason(&reason);
        log_store_error(id, &app.records.fail(id, why.message(), None).await);
        return;
    }
    if let Some(request) = job.answer.clone() {
        // docs/review-service.md, "Answers in review threads": no check run, no retry.
        answer::run(app, &review, job, request, &session_id, cancel, &reason).await;
        return;
    }
    if job.repo.forge() == forge::ForgeKind::GitLab {
        drop(app.queue_marks.read().await);
    }
    let check_run_id = match app
        .forge
        .create_check_run(&job.repo, &job.pr.head_sha, CHECK_RUN_NAME)
        .await
    {
        Ok(cid) => {
            if let Err(e) = app.records.attach_check_run(id, cid).await {
                tracing::warn!(review_id = id, error = %e, "cannot record check run id");
            }
            Some(cid)
        }
        Err(e) => {
            tracing::warn!(review_id = id, error = %e, "cannot create check run; reviewing without one");
            None
        }
    };

    let deadline = tokio::time::Instant::now() + REVIEW_TIMEOUT;
    let stages = async {
        let repo = job.repo.full_name();
        if let Some(reached) = budget::reached(app, &repo, crate::records::now()).await? {
            return Ok(Finished::OverBudget(reached));
        }
        match prepare::prepare(app, id, &job, deadline).await? {
            Ok(checkout) => {
                let patch_id = checkout.patch_id.clone();
                let outcome = run::run_agent(
                    app,
                    &review,
                    &job,
                    &session_id,
                    checkout,
                    cancel.clone(),
                    deadline,
                )
                .await?;
                Ok(Finished::Completed(outcome, patch_id))
            }
            Err(skip) => Ok(Finished::Skipped(skip)),
        }
    };
    let result = tokio::select! {
        r = stages => r,
        _ = cancel.cancelled() => Err(anyhow!("cancelled").into()),
    };
    record_end(app, &review, &job, result, check_run_id, &cancel, &reason).await;
}

/// Completes the run's check run with `end` (a failure to do so is logged: the review stands).
async fn complete_check(
    app: &AppState,
    job: &PrJob,
    review_id: i64,
    check_run_id: Option<i64>,
    end: &RunEnd,
) {
    if let Some(cid) = check_run_id
        && let Err(e) = app
            .forge
            .complete_check_run(
                &job.repo,
                &forge::CheckRun {
                    id: cid,
                    head_sha: job.pr.head_sha.clone(),
                    name: CHECK_RUN_NAME.to_owned(),
                },
                end.conclusion,
                &end.title,
                &end.summary,
            )
            .await
    {
        tracing::warn!(review_id, error = %e, "cannot complete check run");
    }
}

/// Completes the check run with how the run ended, then records the end on the row and starts
/// what follows a genuine failure. The check run goes first, so that a row in its end state
/// means the pull request shows the end too.
async fn record_end(
    app: &AppState,
    review: &ReviewRow,
    job: &PrJob,
    result: Result<Finished, RunError>,
    check_run_id: Option<i64>,
    cancel: &CancellationToken,
    reason: &Mutex<Option<CancelReason>>,
) {
    let id = review.id;
    match result {
        Ok(Finished::Completed(outcome, patch_id)) => {
            let done = Completion {
                cost: outcome.cost,
                tokens: outcome.tokens,
                model: outcome.model.clone(),
                patch_id: Some(patch_id),
            };
            let mut summary = format!(
                "Model {}: {} tokens, ${:.4}; {} inline comment(s) folded into the summary.",
                outcome.model, outcome.tokens, outcome.cost, outcome.folded_comments
            );
            if outcome.dropped_by_verification > 0 || outcome.unverified > 0 {
                summary.push_str(&format!(
                    " Verification dropped {} finding(s); {} posted unverified.",
                    outcome.dropped_by_verification, outcome.unverified
                ));
            }
            if outcome.below_min_severity > 0 {
                summary.push_str(&format!(
                    " {} finding(s) under the minimum severity were not posted.",
                    outcome.below_min_severity
                ));
            }
            if let Some(reason) = &outcome.cut_short {
                summary.push_str(&format!(" Cut short at its budget: {reason}."));
            }
            // docs/review-service.md, "Minimum severity and quiet reviews".
            let title = if outcome.quiet && !outcome.posted_review {
                summary.insert_str(0, "No findings: nothing was posted (review_quiet). ");
                "No findings"
            } else {
                "Review posted"
            };
            let end = RunEnd {
                conclusion: CheckConclusion::Success,
                title: title.to_owned(),
                summary,
            };
            complete_check(app, job, id, check_run_id, &end).await;
            log_store_error(id, &app.records.complete(id, &done).await);
        }
        Ok(Finished::Skipped(skip)) => {
            let end = RunEnd {
                conclusion: CheckConclusion::Skipped,
                title: "No new changes".to_owned(),
                summary: skip.summary.to_owned(),
            };
            complete_check(app, job, id, check_run_id, &end).await;
            log_store_error(id, &app.records.skip(id, skip.patch_id.as_deref()).await);
        }
        Ok(Finished::OverBudget(reached)) => {
            let reason = reached.reason(&review.repo_full_name);
            tracing::info!(review_id = id, reason = %reason, "review skipped: monthly budget reached");
            let end = RunEnd {
                conclusion: CheckConclusion::Skipped,
                title: "Monthly budget reached".to_owned(),
                summary: reason.clone(),
            };
            complete_check(app, job, id, check_run_id, &end).await;
            budget::notify_once(app, id, job, &reached).await;
            log_store_error(id, &app.records.skip_because(id, &reason).await);
        }
        Err(RunError { error, kind, spent }) => {
            let cancelled = cancel.is_cancelled();
            let message = if cancelled {
                cancel_reason(reason).message().to_owned()
            } else if kind == FailureKind::Configuration {
                format!("{error:#} (no automatic retry: {CONFIGURATION_ERROR})")
            } else {
                format!("{error:#}")
            };
            tracing::warn!(review_id = id, error = %message, "review failed");
            let end = RunEnd {
                conclusion: if cancelled {
                    CheckConclusion::Cancelled
                } else {
                    CheckConclusion::Failure
                },
                title: "Review failed".to_owned(),
                summary: message.clone(),
            };
            complete_check(app, job, id, check_run_id, &end).await;
            log_store_error(id, &app.records.fail(id, &message, spent.as_ref()).await);
            if cancelled {
                // Tests wait for these lines instead of sleeping past the retry delay.
                tracing::info!(review_id = id, reason = %message, "no automatic retry: the run was cancelled");
            } else if kind == FailureKind::Limit {
                tracing::info!(
                    review_id = id,
                    "no automatic retry: the run stopped at an operator limit"
                );
            } else if kind == FailureKind::Configuration {
                tracing::warn!(review_id = id, "no automatic retry: {CONFIGURATION_ERROR}");
            } else {
                retry::after_genuine_failure(app, review, job, &message).await;
            }
        }
    }
}

/// The reason appended to the error of a run that failed for [`FailureKind::Configuration`].
const CONFIGURATION_ERROR: &str =
    "a configuration or credentials error, which a retry cannot fix; fix it and retry by hand";

fn cancel_reason(reason: &Mutex<Option<CancelReason>>) -> CancelReason {
    reason
        .lock()
        .ok()
        .and_then(|r| *r)
        .unwrap_or(CancelReason::Stopped)
}

fn log_store_error<T>(id: i64, r: &Result<T, review_store::StoreError>) {
    if let Err(e) = r {
        tracing::error!(review_id = id, error = %e, "cannot record the review's end state");
    }
}
