//! The automatic retry of docs/review-service.md §3: a genuine failure of a first run is
//! retried once after RETRY_DELAY_SECS (new row, trigger retry, attempt 1), unless another
//! review of the PR is pending or running by then; a retry is never retried, and when the
//! automatic retry fails too, a comment on the PR says so. Stops, supersedes, restarts and
//! operator limits never get here. The retry waits as a row with a not-before time
//! (docs/architecture.md, "Many replicas"), so a restart of every replica loses none, and
//! the one replica that claims it when due runs it (`queue.rs`).

use crate::job::PrJob;
use crate::records::now_ms;
use crate::state::AppState;
use review_domain::{ReviewRow, Trigger};
use review_store::ClaimedRetry;

/// What follows a genuine failure of `review` (error text `error`): the retry is queued for a
/// first run; after a failed automatic retry the PR gets a comment saying so.
pub(super) async fn after_genuine_failure(
    app: &AppState,
    review: &ReviewRow,
    job: &PrJob,
    error: &str,
) {
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
    let job_text = match serde_json::to_string(job) {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(review_id = review.id, error = %e, "cannot write the retry's job; no automatic retry");
            return;
        }
    };
    let delay_ms =
        i64::try_from(app.config.retry_delay_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
    let not_before = now_ms().plus_millis(delay_ms);
    match app
        .records
        .store
        .schedule_retry(review.id, &job_text, not_before)
        .await
    {
        Ok(()) => tracing::info!(
            review_id = review.id,
            not_before = not_before.0,
            "automatic retry scheduled"
        ),
        Err(e) => {
            tracing::error!(review_id = review.id, error = %e, "cannot schedule the automatic retry")
        }
    }
}

/// Runs the automatic retry `claimed` (due, and held by this replica): it stands down if
/// another review of the PR is pending or running, else the PR is re-fetched and its review
/// replaces the retry row in one transaction (trigger retry, attempt 1).
pub(super) async fn run_due_retry(app: &AppState, claimed: ClaimedRetry) {
    let failed_id = claimed.review_id;
    let job: PrJob = match serde_json::from_str(&claimed.job) {
        Ok(job) => job,
        Err(e) => {
            tracing::error!(review_id = failed_id, error = %e, "automatic retry: its job cannot be read; dropped");
            let _ = app.records.store.drop_retry(claimed.id, &app.replica).await;
            return;
        }
    };
    let repo = job.repo.full_name();
    match app
        .records
        .store
        .pr_has_active_review(&repo, job.pr.number, failed_id)
        .await
    {
        Ok(false) => {}
        Ok(true) => {
            tracing::info!(
                review_id = failed_id,
                "automatic retry stands down: another review of the PR is active"
            );
            if let Err(e) = app.records.store.drop_retry(claimed.id, &app.replica).await {
                tracing::error!(review_id = failed_id, error = %e, "automatic retry: cannot drop it");
            }
            return;
        }
        Err(e) => {
            // The retry stays; its lease lapses and a replica tries again.
            tracing::error!(review_id = failed_id, error = %e, "automatic retry: cannot check the PR's reviews");
            return;
        }
    }
    let next = match app.forge.pull_request(&job.repo, job.pr.number).await {
        Ok(pr) => PrJob {
            full_diff: job.full_diff,
            ..PrJob::from_pull(job.repo.clone(), &pr, Trigger::Retry, 1)
        },
        Err(e) => {
            tracing::warn!(review_id = failed_id, error = %e, "automatic retry: cannot re-fetch the PR; retrying its last known head");
            PrJob {
                trigger: Trigger::Retry,
                attempt: 1,
                ..job
            }
        }
    };
    let text = match serde_json::to_string(&next) {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(review_id = failed_id, error = %e, "automatic retry: cannot write its job");
            return;
        }
    };
    match app
        .records
        .create_retry_review(claimed.id, &app.replica, &super::new_review(&next), &text)
        .await
    {
        Ok(Some(row)) => {
            app.queue_wake.notify_one();
            tracing::info!(
                review_id = failed_id,
                retry_id = row.id,
                "automatic retry started"
            );
        }
        Ok(None) => tracing::info!(
            review_id = failed_id,
            "automatic retry: another replica took it over"
        ),
        Err(e) => {
            tracing::error!(review_id = failed_id, error = %e, "cannot start the automatic retry")
        }
    }
}
