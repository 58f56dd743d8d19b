//! GitLab webhook deliveries: the secret-token check and the fields of the merge request and
//! note events the review service reads (docs/review-service.md, "GitLab"; GitLab's
//! <https://docs.gitlab.com/user/project/integrations/webhook_events/>). Everything else in a
//! payload is ignored and optional fields are optional, so GitLab adding fields never breaks a
//! delivery.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// `X-Gitlab-Event` of a merge request event.
pub const MERGE_REQUEST_HOOK: &str = "Merge Request Hook";
/// `X-Gitlab-Event` of a comment event.
pub const NOTE_HOOK: &str = "Note Hook";

/// Whether `given` (the `X-Gitlab-Token` header) is the configured secret token. GitLab sends
/// the token itself, not a signature, so the check compares SHA-256 digests of both in
/// constant time: neither the content nor the length of the secret leaks through timing. An
/// empty secret matches nothing.
pub fn verify_token(secret: &[u8], given: &[u8]) -> bool {
    if secret.is_empty() {
        return false;
    }
    let a = Sha256::digest(secret);
    let b = Sha256::digest(given);
    a.ct_eq(&b).into()
}

/// The user who caused the event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookUser {
    pub id: i64,
    pub username: String,
}

/// The project a delivery is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookProject {
    /// The project id (the id of GitLab's API routes).
    pub id: i64,
    /// `group/sub/project`.
    pub path_with_namespace: String,
    #[serde(default)]
    pub default_branch: Option<String>,
}

/// A commit as hooks show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookCommit {
    /// The commit SHA.
    pub id: String,
}

/// A merge request as hooks show it (`object_attributes` of a merge request event,
/// `merge_request` of a comment event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookMergeRequest {
    /// The merge request's number within its project.
    pub iid: i64,
    pub title: String,
    #[serde(default)]
    pub description: Option<String>,
    /// `opened`, `closed`, `locked` or `merged`.
    #[serde(default)]
    pub state: Option<String>,
    pub source_branch: String,
    pub target_branch: String,
    /// The head commit; absent when GitLab has not computed it yet.
    #[serde(default)]
    pub last_commit: Option<HookCommit>,
    #[serde(default)]
    pub draft: bool,
    /// The name of `draft` before GitLab 15.
    #[serde(default)]
    pub work_in_progress: bool,
    pub author_id: i64,
    /// `open`, `close`, `reopen`, `update`, `approved`, `unapproved`, `approval`,
    /// `unapproval` or `merge` (merge request events only).
    #[serde(default)]
    pub action: Option<String>,
    /// The head before this update; present only when the update pushed commits.
    #[serde(default)]
    pub oldrev: Option<String>,
    /// The web page of the merge request.
    #[serde(default)]
    pub url: Option<String>,
}

impl HookMergeRequest {
    /// Whether the merge request is a draft.
    pub fn is_draft(&self) -> bool {
        self.draft || self.work_in_progress
    }

    /// The head commit SHA, when given.
    pub fn head_sha(&self) -> Option<&str> {
        self.last_commit.as_ref().map(|c| c.id.as_str())
    }
}

/// A change of one field in `changes`: its value before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change<T> {
    #[serde(default)]
    pub previous: Option<T>,
    #[serde(default)]
    pub current: Option<T>,
}

/// The fields of `changes` the service reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeRequestChanges {
    #[serde(default)]
    pub draft: Option<Change<bool>>,
}

/// `X-Gitlab-Event: Merge Request Hook`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeRequestEvent {
    pub user: HookUser,
    pub project: HookProject,
    pub object_attributes: HookMergeRequest,
    #[serde(default)]
    pub changes: MergeRequestChanges,
}

/// What a merge request event asks of the reviewer (docs/review-service.md, "GitLab").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeRequestAction {
    /// `open`: as GitHub's `opened`.
    Opened,
    /// `reopen`: as `reopened`.
    Reopened,
    /// `update` with `oldrev`: new commits, as `synchronize`.
    Pushed,
    /// `update` taking the merge request out of draft: as `ready_for_review`.
    ReadyForReview,
}

impl MergeRequestEvent {
    /// The action the reviewer acts on; None for every other event (a title edit, a label, an
    /// approval, a merge, a close).
    pub fn review_action(&self) -> Option<MergeRequestAction> {
        let mr = &self.object_attributes;
        match mr.action.as_deref()? {
            "open" => Some(MergeRequestAction::Opened),
            "reopen" => Some(MergeRequestAction::Reopened),
            "update" if self.leaves_draft() => Some(MergeRequestAction::ReadyForReview),
            "update" if mr.oldrev.as_deref().is_some_and(|r| !r.is_empty()) => {
                Some(MergeRequestAction::Pushed)
            }
            _ => None,
        }
    }

    fn leaves_draft(&self) -> bool {
        self.changes
            .draft
            .as_ref()
            .is_some_and(|c| c.previous == Some(true) && c.current == Some(false))
    }
}

/// The note of a comment event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookNote {
    pub id: i64,
    /// The comment's markdown.
    pub note: String,
    /// `MergeRequest`, `Issue`, `Commit` or `Snippet`.
    pub noteable_type: String,
    /// The discussion (thread) the note belongs to.
    #[serde(default)]
    pub discussion_id: Option<String>,
    /// `DiffNote` (on a line), `DiscussionNote` (a reply in a thread) or null (a plain note).
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// `create` or `update` (GitLab 16.0 and later; absent before).
    #[serde(default)]
    pub action: Option<String>,
}

/// `X-Gitlab-Event: Note Hook`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteEvent {
    pub user: HookUser,
    pub project: HookProject,
    pub object_attributes: HookNote,
    /// Present when the note is on a merge request.
    #[serde(default)]
    pub merge_request: Option<HookMergeRequest>,
}

impl NoteEvent {
    /// The merge request of a newly written note on one; None for notes elsewhere and edits.
    pub fn new_merge_request_note(&self) -> Option<&HookMergeRequest> {
        let note = &self.object_attributes;
        let created = note.action.as_deref().is_none_or(|a| a == "create");
        (created && note.noteable_type == "MergeRequest")
            .then_some(self.merge_request.as_ref())
            .flatten()
    }

    /// Whether the note was written by the merge request's author.
    pub fn by_merge_request_author(&self) -> bool {
        self.merge_request
            .as_ref()
            .is_some_and(|mr| mr.author_id == self.user.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_token_must_match_exactly_and_no_secret_matches_nothing() {
        assert!(verify_token(b"s3cret", b"s3cret"));
        assert!(!verify_token(b"s3cret", b"s3cre"));
        assert!(!verify_token(b"s3cret", b"s3cret "));
        assert!(!verify_token(b"", b""));
    }

    fn event(action: &str, oldrev: Option<&str>, changes: serde_json::Value) -> MergeRequestEvent {
        serde_json::from_value(json!({
            "object_kind": "merge_request",
            "user": {"id": 1, "username": "ada"},
            "project": {"id": 42, "path_with_namespace": "g/p"},
            "object_attributes": {
                "iid": 3, "title": "T", "source_branch": "f", "target_branch": "main",
                "author_id": 1, "action": action, "oldrev": oldrev,
                "last_commit": {"id": "abc"}
            },
            "changes": changes
        }))
        .unwrap()
    }

    #[test]
    fn only_new_commits_and_leaving_draft_make_an_update_a_review() {
        use MergeRequestAction as A;
        assert_eq!(
            event("open", None, json!({})).review_action(),
            Some(A::Opened)
        );
        assert_eq!(
            event("reopen", None, json!({})).review_action(),
            Some(A::Reopened)
        );
        assert_eq!(
            event("update", Some("def"), json!({})).review_action(),
            Some(A::Pushed)
        );
        assert_eq!(
            event("update", None, json!({"title": {}})).review_action(),
            None
        );
        let ready = json!({"draft": {"previous": true, "current": false}});
        assert_eq!(
            event("update", None, ready).review_action(),
            Some(A::ReadyForReview)
        );
        assert_eq!(event("merge", None, json!({})).review_action(), None);
        assert_eq!(event("approved", None, json!({})).review_action(), None);
    }
}
