//! The automatic retry of docs/review-service.md §3: a genuine failure of a first run is
//! retried once after RETRY_DELAY_SECS (new row, trigger retry, attempt 1), unless another
//! review of the PR is pending or running by then; a retry is never retried, and when the
//! automatic retry fails too, a comment on the PR says so. Stops, supersedes, restarts and
//! operator limits never get here. The worker runs beside the reviews, so a review's own future
//! never contains the next one.

use crate::job::{PrJob, RetryRequest};
use crate::state::AppState;
use review_domain::{ReviewRow, Trigger};

/// What follows a genuine failure of `review` (error text `error`): the retry is queued for a
/// first run; after a failed automatic retry the PR gets a comment saying so.
pub async fn after_genuine_failure(app: &AppState, review: &ReviewRow, job: &PrJob, error: &str) {
    if job.trigger == Trigger::Retry {
        tracing::info!(
            review_id = review.id,
            "no automatic retry: the review was itself a retry"
        );
        if job.attempt == 1 {
            let body = format!(
                "The automatic review of this pull request failed twice; the last error was:\n\n> {}\n\nA maintainer can retry it from the dashboard or with a `/review` comment.",
                error.replace('\n', "\n> ")
            );
            if let Err(e) = app
                .forge
                .post_comment(&job.repo, job.pr.number, &body)
                .await
            {
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

/// The retry worker: each request waits RETRY_DELAY_SECS (or until shutdown), then the retry
/// stands down if another review of the PR is pending or running, else the PR is re-fetched
/// and reviewed again with trigger retry, attempt 1.
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
    let next = match app.forge.pull_request(&job.repo, job.pr.number).await {
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
    match super::enqueue(&app, next).await {
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
