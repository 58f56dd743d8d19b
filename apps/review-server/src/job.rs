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
    /// Set for an answer instead of a review (triggers `reply` and `ask`), per
    /// docs/review-service.md, "Answers in review threads". Absent in review jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<AnswerRequest>,
}

/// What an answer job answers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum AnswerRequest {
    /// A reply in the review thread opened by the App's inline comment `thread`.
    Thread {
        /// The REST id of the App's comment that opens the thread (a finding's
        /// github_comment_id).
        thread: i64,
        /// The REST id of the reply that asked.
        reply: i64,
        /// Who replied.
        login: String,
        /// The reply's text, as delivered.
        body: String,
    },
    /// `/ask <question>` in a comment on the pull request.
    Ask {
        /// The question.
        question: String,
        /// Who asked.
        login: String,
    },
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
            answer: None,
        }
    }
}
