//! The pull request a review is about, as one plain type from the webhook to the agent
//! (docs/architecture.md, Layout): the forge turns its payloads into it, the review pipeline
//! queues it, and the agent puts it in the first user message. Every field is untrusted input
//! written by the PR's author or the forge (docs/security.md).

/// A pull request at the moment its review was asked for; serialised into the work queue's jobs.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PullRequest {
    /// PR number (positive on the forge; 0 for a local `review-server review`).
    pub number: i64,
    /// Title.
    pub title: String,
    /// Description, when the PR has one.
    pub body: Option<String>,
    /// Author login, when the forge names one.
    pub author: Option<String>,
    /// Base branch name.
    pub base_ref: String,
    /// Base commit SHA (40 hex digits on the forge; any revision the local CLI resolved).
    pub base_sha: String,
    /// Head branch name.
    pub head_ref: String,
    /// Head commit SHA.
    pub head_sha: String,
}
