//! The review orchestration of spec/review-service.md sections 1 and 3: a pending row is
//! created, then (after a run slot frees up) the repository is synced into the bare-clone
//! cache, the diff and patch id computed, a worktree of the head checked out, the agent run
//! with the two posting tools, and the row completed, skipped or failed. The worktree is
//! removed whatever the outcome; the check run is completed whatever the outcome.

use crate::records::now;
use crate::state::{AppState, CancelReason, LiveRun, model_cascade};
use agent::{CancellationToken, PrContext, ReviewJob, ReviewOutcome, ReviewPoster};
use anyhow::{Context, anyhow};
use async_trait::async_trait;
use forge::{CheckConclusion, RepoRef};
use git_cache::{GitError, Repo, RepoKey};
use review_domain::{
    FindingKind, ModelSpec, NewFinding, PostedReview, ReviewRow, ReviewSubmission, Trigger,
};
use review_store::{Completion, NewReview};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use tracing::Instrument;

/// The check run's name on the PR.
const CHECK_RUN_NAME: &str = "review-server";
/// The longest a running review may take in all, git work included: 45 minutes (README, "What
/// a review does"; docs/security.md, "The git phase").
const REVIEW_TIMEOUT: Duration = Duration::from_secs(45 * 60);

/// What a review is about: the PR at the moment the review was requested.
#[derive(Debug, Clone)]
pub struct PrJob {
    pub repo: RepoRef,
    pub number: i64,
    pub title: String,
    pub body: Option<String>,
    pub author: Option<String>,
    pub base_ref: String,
    pub base_sha: String,
    pub head_ref: String,
    pub head_sha: String,
    pub trigger: Trigger,
    pub attempt: i64,
}

impl PrJob {
    /// A job from a pull request (webhook payload or GET pulls/:n).
    pub fn from_pull(
        repo: RepoRef,
        pr: &forge::PullRequest,
        trigger: Trigger,
        attempt: i64,
    ) -> Self {
        Self {
            repo,
            number: pr.number,
            title: pr.title.clone(),
            body: pr.body.clone(),
            author: pr.user.as_ref().map(|u| u.login.clone()),
            base_ref: pr.base.git_ref.clone(),
            base_sha: pr.base.sha.clone(),
            head_ref: pr.head.git_ref.clone(),
            head_sha: pr.head.sha.clone(),
            trigger,
            attempt,
        }
    }
}

/// How a run ended without an error.
enum Finished {
    Completed(ReviewOutcome, String),
    /// Nothing to review: the patch id (None for an empty diff) and the check run's summary.
    Skipped(Option<String>, &'static str),
}

/// An error of a run, with what the run had spent when it failed.
struct RunError {
    error: anyhow::Error,
    spent: Option<Completion>,
}

impl<E: Into<anyhow::Error>> From<E> for RunError {
    fn from(e: E) -> Self {
        RunError {
            error: e.into(),
            spent: None,
        }
    }
}

/// Create the pending row for `job` (publishing review:created) and start its run in the
/// background. Returns the row; the run continues after the caller replies.
pub async fn enqueue(app: &AppState, job: PrJob) -> anyhow::Result<ReviewRow> {
    let row = app
        .records
        .create_review(&NewReview {
            repo_full_name: job.repo.full_name(),
            pr_number: job.number,
            title: Some(job.title.clone()),
            trigger: Some(job.trigger),
            attempt: job.attempt,
        })
        .await?;
    if job.trigger == Trigger::Synchronize {
        app.supersede(&row.repo_full_name, row.pr_number, row.id);
    }
    let cancel = CancellationToken::new();
    let reason = Arc::new(Mutex::new(None));
    if let Ok(mut live) = app.live.lock() {
        live.insert(
            row.id,
            LiveRun {
                repo: row.repo_full_name.clone(),
                pr_number: row.pr_number,
                cancel: cancel.clone(),
                reason: reason.clone(),
            },
        );
    }
    let app2 = app.clone();
    let review = row.clone();
    let span = tracing::info_span!("review", review_id = row.id, repo = %row.repo_full_name, pr = row.pr_number);
    app.tasks.spawn(
        async move {
            let id = review.id;
            run(&app2, review, job, cancel, reason).await;
            if let Ok(mut live) = app2.live.lock() {
                live.remove(&id);
            }
        }
        .instrument(span),
    );
    Ok(row)
}

/// Run one review to its end state. Never panics; every outcome lands in the row.
async fn run(
    app: &AppState,
    review: ReviewRow,
    job: PrJob,
    cancel: CancellationToken,
    reason: Arc<Mutex<Option<CancelReason>>>,
) {
    let id = review.id;
    // Wait for a run slot as pending; a stop or supersede while waiting ends the review here.
    let permit = tokio::select! {
        p = app.run_slots.clone().acquire_owned() => p.ok(),
        _ = cancel.cancelled() => None,
    };
    let Some(_permit) = permit else {
        let why = cancel_reason(&reason);
        let row = app
            .records
            .store
            .fail_review(id, why.message(), None, now())
            .await;
        app.records.review_updated(row.ok().flatten());
        return;
    };

    let session_id = format!(
        "review-{id}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    match app.records.store.start_review(id, &session_id).await {
        Ok(Some(row)) => {
            app.records.review_updated(Some(row));
        }
        Ok(None) => return, // stopped while pending
        Err(e) => {
            tracing::error!(review_id = id, error = %e, "cannot mark review running");
            return;
        }
    }
    let check_run_id = match app
        .forge
        .create_check_run(&job.repo, &job.head_sha, CHECK_RUN_NAME)
        .await
    {
        Ok(cid) => {
            if let Err(e) = app.records.store.set_check_run_id(id, cid).await {
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
    let result = tokio::select! {
        r = execute(app, &review, &job, &session_id, cancel.clone(), deadline) => r,
        _ = cancel.cancelled() => Err(RunError { error: anyhow!("cancelled"), spent: None }),
    };

    let (conclusion, title, summary) = match result {
        Ok(Finished::Completed(outcome, patch_id)) => {
            let done = Completion {
                cost: outcome.cost,
                tokens: outcome.tokens,
                model: outcome.model.clone(),
                patch_id: Some(patch_id),
            };
            let row = app.records.store.complete_review(id, &done, now()).await;
            log_store_error(id, &row);
            app.records.review_updated(row.ok().flatten());
            let mut summary = format!(
                "Model {}: {} tokens, ${:.4}; {} inline comment(s) folded into the summary.",
                outcome.model, outcome.tokens, outcome.cost, outcome.folded_comments
            );
            if let Some(reason) = &outcome.cut_short {
                summary.push_str(&format!(" Cut short at its budget: {reason}."));
            }
            (
                CheckConclusion::Success,
                "Review posted".to_owned(),
                summary,
            )
        }
        Ok(Finished::Skipped(patch_id, why)) => {
            let row = app
                .records
                .store
                .skip_review(id, patch_id.as_deref(), now())
                .await;
            log_store_error(id, &row);
            app.records.review_updated(row.ok().flatten());
            (
                CheckConclusion::Skipped,
                "No new changes".to_owned(),
                why.to_owned(),
            )
        }
        Err(RunError { error, spent }) => {
            let cancelled = cancel.is_cancelled();
            let message = if cancelled {
                cancel_reason(&reason).message().to_owned()
            } else {
                format!("{error:#}")
            };
            tracing::warn!(review_id = id, error = %message, "review failed");
            let row = app
                .records
                .store
                .fail_review(id, &message, spent.as_ref(), now())
                .await;
            log_store_error(id, &row);
            app.records.review_updated(row.ok().flatten());
            if !cancelled && !is_operator_limit(&error) {
                after_genuine_failure(app, &review, &job, &message).await;
            }
            let conclusion = if cancelled {
                CheckConclusion::Cancelled
            } else {
                CheckConclusion::Failure
            };
            (conclusion, "Review failed".to_owned(), message)
        }
    };
    if let Some(cid) = check_run_id
        && let Err(e) = app
            .forge
            .complete_check_run(&job.repo, cid, conclusion, &title, &summary)
            .await
    {
        tracing::warn!(review_id = id, error = %e, "cannot complete check run");
    }
}

/// Spec section 3, automatic retry rules: a genuine failure of a first run is retried once
/// after RETRY_DELAY_SECS (new row, trigger retry, attempt 1), unless another review of the PR
/// is pending or running by then; a retry is never retried, and when the automatic retry fails
/// too, a comment on the PR says so. Stops, supersedes and restarts never get here.
async fn after_genuine_failure(app: &AppState, review: &ReviewRow, job: &PrJob, error: &str) {
    if job.trigger == Trigger::Retry {
        if job.attempt == 1 {
            let body = format!(
                "The automatic review of this pull request failed twice; the last error was:\n\n> {}\n\nA maintainer can retry it from the dashboard or with a `/review` comment.",
                error.replace('\n', "\n> ")
            );
            if let Err(e) = app.forge.post_comment(&job.repo, job.number, &body).await {
                tracing::warn!(review_id = review.id, error = %e, "cannot post the retry-failed comment");
            }
        }
        return;
    }
    let request = RetryRequest {
        failed: review.clone(),
        job: job.clone(),
    };
    if app.retries.send(request).is_err() {
        tracing::warn!(
            review_id = review.id,
            "retry worker stopped; no automatic retry"
        );
    }
}

/// A genuine failure waiting for its automatic retry.
#[derive(Debug)]
pub struct RetryRequest {
    failed: ReviewRow,
    job: PrJob,
}

/// The retry worker: each request waits RETRY_DELAY_SECS (or until shutdown), then the retry
/// stands down if another review of the PR is pending or running, else the PR is re-fetched
/// and reviewed again with trigger retry, attempt 1. Runs beside the reviews, so a review's
/// own future never contains the next one.
pub fn spawn_retry_worker(
    app: AppState,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<RetryRequest>,
) {
    tokio::spawn(async move {
        loop {
            let request = tokio::select! {
                r = rx.recv() => match r { Some(r) => r, None => return },
                _ = app.shutdown.cancelled() => return,
            };
            let app = app.clone();
            app.tasks.clone().spawn(delayed_retry(app, request));
        }
    });
}

async fn delayed_retry(app: AppState, RetryRequest { failed, job }: RetryRequest) {
    let delay = std::time::Duration::from_secs(app.config.retry_delay_secs);
    tokio::select! {
        _ = tokio::time::sleep(delay) => {}
        _ = app.shutdown.cancelled() => return,
    }
    match app
        .records
        .store
        .pr_has_active_review(&failed.repo_full_name, failed.pr_number, failed.id)
        .await
    {
        Ok(false) => {}
        Ok(true) => {
            tracing::info!(
                review_id = failed.id,
                "automatic retry stands down: another review of the PR is active"
            );
            return;
        }
        Err(e) => {
            tracing::error!(review_id = failed.id, error = %e, "automatic retry: cannot check the PR's reviews");
            return;
        }
    }
    let next = match app.forge.pull_request(&job.repo, job.number).await {
        Ok(pr) => PrJob::from_pull(job.repo.clone(), &pr, Trigger::Retry, 1),
        Err(e) => {
            tracing::warn!(review_id = failed.id, error = %e, "automatic retry: cannot re-fetch the PR; retrying its last known head");
            PrJob {
                trigger: Trigger::Retry,
                attempt: 1,
                ..job
            }
        }
    };
    match enqueue(&app, next).await {
        Ok(row) => tracing::info!(
            review_id = failed.id,
            retry_id = row.id,
            "automatic retry started"
        ),
        Err(e) => {
            tracing::error!(review_id = failed.id, error = %e, "cannot start the automatic retry")
        }
    }
}

/// Whether a run failed at a limit the operator set: its budget (REVIEW_MAX_TOKENS,
/// REVIEW_MAX_COST) or the tree caps (REVIEW_MAX_TREE_ENTRIES, REVIEW_MAX_TREE_BYTES). That is
/// the limit working, not a genuine failure: a retry would stop at the same place.
fn is_operator_limit(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<agent::AgentError>()
            .is_some_and(agent::AgentError::is_budget)
            || cause.downcast_ref::<TreeRefused>().is_some()
    })
}

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

/// Sync, diff, skip check, checkout, agent. The git work is held to the tree limits
/// (REVIEW_MAX_TREE_ENTRIES, REVIEW_MAX_TREE_BYTES) and to `deadline`, and stops when this
/// future is dropped (stop, supersede, shutdown). An empty diff is skipped before any checkout.
/// The worktree guard drops at the end of this function on every path, removing the checkout.
async fn execute(
    app: &AppState,
    review: &ReviewRow,
    job: &PrJob,
    session_id: &str,
    cancel: CancellationToken,
    deadline: Instant,
) -> Result<Finished, RunError> {
    let full_name = job.repo.full_name();
    let token = match app.forge.installation_token(job.repo.installation_id).await {
        Ok(t) => Some(t),
        Err(e) if app.config.git_url().starts_with("file://") => {
            tracing::debug!(error = %e, "no installation token; cloning from a local URL without one");
            None
        }
        Err(e) => return Err(anyhow!(e).context("installation token").into()),
    };

    // Fetch the PR head and the base branch into the cache (clone on first use).
    let key = RepoKey {
        host: app.config.forge_host(),
        owner: job.repo.owner.clone(),
        name: job.repo.name.clone(),
    };
    let url = format!(
        "{}/{}/{}.git",
        app.config.git_url().trim_end_matches('/'),
        job.repo.owner,
        job.repo.name
    );
    let refspecs = vec![
        format!("+refs/pull/{0}/head:refs/pull/{0}/head", job.number),
        format!("+refs/heads/{0}:refs/heads/{0}", job.base_ref),
    ];
    // Raised when this future is dropped or the deadline passes: the blocking git work polls it.
    let stop = StopOnDrop(Arc::new(AtomicBool::new(false)));
    let limits = app.config.tree_limits();
    let git = app.git.clone();
    let (base_sha, head_sha) = (job.base_sha.clone(), job.head_sha.clone());
    let (cloned, repo, diff, commits) = git_phase(deadline, &stop.0, move |stop| {
        let synced = git
            .sync(&key, &url, &refspecs, token.as_ref(), stop)
            .with_context(|| format!("fetching {url}"))?;
        let repo = Repo::open(&synced.path)?;
        let diff = repo
            .diff_bytes(&base_sha, &head_sha, limits, stop)
            .map_err(refusal)?;
        let commits = repo.log(&base_sha, &head_sha, 50).unwrap_or_default();
        Ok((synced.cloned, repo, diff, commits))
    })
    .await?;
    tracing::info!(
        review_id = review.id,
        cloned,
        diff_bytes = diff.len(),
        "diff ready"
    );
    if diff.is_empty() {
        return Ok(Finished::Skipped(
            None,
            "The pull request's diff against its base is empty; nothing to review.",
        ));
    }
    let patch_id = git_cache::patch_id_bytes(&diff).unwrap_or_default();
    if job.trigger == Trigger::Synchronize
        && !patch_id.is_empty()
        && app
            .records
            .store
            .last_completed_patch_id(&full_name, job.number)
            .await?
            .as_deref()
            == Some(patch_id.as_str())
    {
        return Ok(Finished::Skipped(
            Some(patch_id),
            "The patch id equals the last reviewed one; nothing new to review.",
        ));
    }
    let worktrees = app.worktrees_dir();
    let head_sha = job.head_sha.clone();
    let worktree = git_phase(deadline, &stop.0, move |stop| {
        std::fs::create_dir_all(&worktrees)?;
        repo.checkout(&head_sha, Some(&worktrees), limits, stop)
            .map_err(refusal)
    })
    .await?;
    let diff = git_cache::diff_text(&diff);

    let repo_row = app.records.repo(&full_name).await?;
    let settings = app.records.store.settings().await?;
    let model_text = model_cascade(
        repo_row.as_ref().and_then(|r| r.model.as_deref()),
        None,
        settings.get("agent_model").map(String::as_str),
        &app.config.agent_model,
    );
    let model: ModelSpec = model_text.parse()?;
    let focus = repo_row
        .as_ref()
        .and_then(|r| r.prompt.clone())
        .filter(|p| !p.trim().is_empty())
        .or_else(|| settings.get("default_prompt").cloned())
        .unwrap_or_default();
    let earlier_findings = app
        .records
        .store
        .findings_for_pr(&full_name, job.number)
        .await?;

    let pr = PrContext {
        number: job.number,
        title: job.title.clone(),
        body: job.body.clone(),
        author: job.author.clone(),
        base_ref: job.base_ref.clone(),
        head_ref: job.head_ref.clone(),
        base_sha: job.base_sha.clone(),
        head_sha: job.head_sha.clone(),
        commits,
    };
    let mut agent_job = ReviewJob::new(session_id, worktree.path(), diff, model, pr);
    agent_job.total_timeout = deadline.saturating_duration_since(Instant::now());
    agent_job.focus = focus;
    agent_job.earlier_findings = earlier_findings;
    agent_job.skills =
        crate::skills::enabled_skills(&app.records.store, &app.config.data_dir).await;
    agent_job.budget = app.review_budget(&settings);

    let providers = app.provider_settings().await?;
    let poster = ForgePoster {
        app: app.clone(),
        review_id: review.id,
        repo: job.repo.clone(),
        number: job.number,
        head_sha: job.head_sha.clone(),
    };
    let outcome = agent::run_review(
        agent_job,
        &providers,
        &app.catalog,
        &poster,
        &app.transcripts,
        cancel,
    )
    .await
    .map_err(|e| RunError {
        error: anyhow!(e),
        spent: None,
    })?;
    drop(worktree);
    Ok(Finished::Completed(outcome, patch_id))
}

/// Raises its flag when dropped, so blocking git work stops when the review's future is dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs blocking git work with the review's stop flag; past `deadline` the flag is raised and
/// the review fails with the timeout error while the work winds down on its own.
async fn git_phase<T: Send + 'static>(
    deadline: Instant,
    stop: &Arc<AtomicBool>,
    work: impl FnOnce(&AtomicBool) -> anyhow::Result<T> + Send + 'static,
) -> Result<T, RunError> {
    let flag = stop.clone();
    let task = tokio::task::spawn_blocking(move || {
        let result = work(&flag);
        if let Err(e) = &result
            && flag.load(Ordering::Relaxed)
        {
            // The review has already ended (stop, supersede, shutdown, timeout).
            tracing::info!(error = %format!("{e:#}"), "git work stopped");
        }
        result
    });
    match tokio::time::timeout_at(deadline, task).await {
        Ok(joined) => Ok(joined.map_err(|e| anyhow!("git task failed: {e}"))??),
        Err(_) => {
            stop.store(true, Ordering::Relaxed);
            Err(anyhow!(
                "the review ran longer than its total limit of {} s (in the git phase)",
                REVIEW_TIMEOUT.as_secs()
            )
            .into())
        }
    }
}

/// A tree over the limits, with the settings that raise them named (issue 16 item 5).
fn refusal(e: GitError) -> anyhow::Error {
    match e {
        GitError::TooLarge { .. } => TreeRefused(e).into(),
        other => other.into(),
    }
}

/// A review refused because a tree is over REVIEW_MAX_TREE_ENTRIES or REVIEW_MAX_TREE_BYTES.
#[derive(Debug, thiserror::Error)]
#[error("{0} (limits: REVIEW_MAX_TREE_ENTRIES, REVIEW_MAX_TREE_BYTES)")]
struct TreeRefused(GitError);

/// The agent's two posting tools, backed by the forge and the findings write-back.
struct ForgePoster {
    app: AppState,
    review_id: i64,
    repo: RepoRef,
    number: i64,
    head_sha: String,
}

#[async_trait]
impl ReviewPoster for ForgePoster {
    async fn post_comment(&self, body: &str) -> Result<Option<i64>, String> {
        let id = self
            .app
            .forge
            .post_comment(&self.repo, self.number, body)
            .await
            .map_err(|e| e.to_string())?;
        let finding = NewFinding {
            kind: FindingKind::Comment,
            body: body.to_owned(),
            event: None,
            path: None,
            line: None,
            severity: None,
            github_review_id: None,
            github_comment_id: Some(id),
        };
        if let Err(e) = self
            .app
            .records
            .record_findings(self.review_id, &[finding])
            .await
        {
            tracing::error!(review_id = self.review_id, error = %e, "comment posted but not recorded");
        }
        Ok(Some(id))
    }

    async fn post_review(&self, review: &ReviewSubmission) -> Result<PostedReview, String> {
        let posted = self
            .app
            .forge
            .create_review(&self.repo, self.number, &self.head_sha, review)
            .await
            .map_err(|e| e.to_string())?;
        let mut findings = vec![NewFinding {
            kind: FindingKind::Summary,
            body: review.summary.clone(),
            event: Some(review.event),
            path: None,
            line: None,
            severity: None,
            github_review_id: posted.review_id,
            github_comment_id: None,
        }];
        for (i, c) in review.comments.iter().enumerate() {
            findings.push(NewFinding {
                kind: FindingKind::Inline,
                body: c.body.clone(),
                event: None,
                path: Some(c.path.clone()),
                line: Some(c.line),
                severity: Some(c.severity),
                github_review_id: posted.review_id,
                github_comment_id: posted.comment_ids.get(i).copied().flatten(),
            });
        }
        if let Err(e) = self
            .app
            .records
            .record_findings(self.review_id, &findings)
            .await
        {
            tracing::error!(review_id = self.review_id, error = %e, "review posted but findings not recorded");
        }
        Ok(posted)
    }
}
