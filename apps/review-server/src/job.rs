//! What a review is about: the job queued for one pull request. Plain data below every other
//! module of the crate.

use forge::RepoRef;
use review_domain::{PullRequest, Trigger};

/// One review to run: the PR at the moment its review was asked for, on which repository,
/// why (docs/review-service.md §2, ReviewRow.trigger) and which automatic attempt it is (0
/// for the first run, 1 for the automatic retry; docs/review-service.md §3).
/// Serialised as JSON into the work queue (docs/architecture.md, "Many replicas").
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct PrJob {
    /// The repository and the installation that grants access to it.
    pub repo: RepoRef,
    /// The pull request.
    pub pr: PullRequest,
    /// What started the review.
    pub trigger: Trigger,
    /// 0, or 1 for the automatic retry.
    pub attempt: i64,
    /// Review the whole diff even when an earlier review of the PR exists (`/review full`;
    /// docs/review-service.md, "Incremental review"). Absent in jobs queued before it existed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub full_diff: bool,
}

impl PrJob {
    /// A job from a pull request as the forge reports it (webhook payload or GET pulls/:n).
    pub(crate) fn from_pull(
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
            full_diff: false,
        }
    }
}
