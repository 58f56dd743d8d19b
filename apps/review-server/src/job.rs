//! What a review is about: the job queued for one pull request, and the request for its
//! automatic retry. Plain data below every other module of the crate, so the app state can
//! hold the retry queue without importing the pipeline that fills it.

use forge::RepoRef;
use review_domain::{PullRequest, ReviewRow, Trigger};

/// One review to run: the PR at the moment its review was asked for, on which repository,
/// why (docs/review-service.md §2, ReviewRow.trigger) and which automatic attempt it is (0
/// for the first run, 1 for the automatic retry; docs/review-service.md §3).
#[derive(Debug, Clone)]
pub struct PrJob {
    /// The repository and the installation that grants access to it.
    pub repo: RepoRef,
    /// The pull request.
    pub pr: PullRequest,
    /// What started the review.
    pub trigger: Trigger,
    /// 0, or 1 for the automatic retry.
    pub attempt: i64,
}

impl PrJob {
    /// A job from a pull request as the forge reports it (webhook payload or GET pulls/:n).
    pub fn from_pull(
        repo: RepoRef,
        pr: &forge::PullRequest,
        trigger: Trigger,
        attempt: i64,
    ) -> Self {
        Self {
            repo,
            pr: pr.to_domain(),
            trigger,
            attempt,
        }
    }
}

/// A genuine failure waiting for its automatic retry (docs/review-service.md §3, automatic
/// retry rules): the failed row and the job it ran.
#[derive(Debug)]
pub struct RetryRequest {
    /// The failed review.
    pub failed: ReviewRow,
    /// Its job; re-fetched from the forge before the retry runs.
    pub job: PrJob,
}
