//! The forges, as the review service needs them. GitLab lives in [`gitlab`] and is reached
//! through the same [`Forge`] trait ([`Forges`] picks the forge a repository lives on). GitHub
//! (docs/review-service.md §1 and §4;
//! docs/background.md, "Wire formats"): webhook signatures and payload types, GitHub App authentication with cached
//! installation tokens, and the REST and GraphQL calls a review makes (review threads:
//! docs/architecture.md, Findings). The [`Forge`] trait is what the server holds, so tests can
//! point [`GitHubForge`] at a fake forge on loopback.

mod client;
pub mod gitlab;
pub mod oauth;
mod router;
mod signature;
pub mod webhook;

pub use client::{
    AppCredentials, GitHubForge, REACTION_PAGES_CAP, THREAD_COMMENTS_CAP, THREAD_PAGES_CAP,
};
pub use gitlab::GitLabForge;
pub use router::Forges;
pub use signature::{sign, verify_signature};
pub use webhook::PullRequest;

use async_trait::async_trait;
use review_domain::{PostedReview, ReviewSubmission};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

/// Errors of forge calls. Messages name the forge ([`ForgeKind`]'s Display: `GitHub` or
/// `GitLab`) and carry its own `message` (GitHub's first validation error, GitLab's `message`
/// flattened to text) so a failed review row says what the forge said.
#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    /// The App credentials are missing or unusable (FORGE_APP_ID, FORGE_APP_PRIVATE_KEY).
    #[error("GitHub App credentials: {0}")]
    Credentials(String),
    /// The forge could not be reached (connection, TLS, timeout, or a body cut short).
    #[error("{forge} unreachable: {message}")]
    Transport { forge: ForgeKind, message: String },
    /// The forge answered with an error status.
    #[error("{forge} {method} {path} failed with {status}: {message}")]
    Api {
        forge: ForgeKind,
        method: &'static str,
        path: String,
        status: u16,
        message: String,
    },
    /// The forge answered 2xx with a body we could not read.
    #[error("{forge} {path}: unexpected response: {message}")]
    Decode {
        forge: ForgeKind,
        path: String,
        message: String,
    },
    /// The GraphQL API answered (HTTP 200) with an `errors` array: `kind` is the first error's
    /// `type` when GitHub gives one (`NOT_FOUND`, `FORBIDDEN`, ...), `message` its `message`
    /// (with how many more errors followed). See
    /// <https://docs.github.com/en/graphql/guides/forming-calls-with-graphql>.
    #[error("GitHub GraphQL {operation} failed: {message}")]
    GraphQl {
        operation: &'static str,
        kind: Option<String>,
        message: String,
    },
}

impl ForgeError {
    /// [`ForgeError::Transport`] of GitHub.
    pub(crate) fn github_transport(message: impl Into<String>) -> Self {
        ForgeError::Transport {
            forge: ForgeKind::GitHub,
            message: message.into(),
        }
    }

    /// The HTTP status of an [`ForgeError::Api`] error, None for the others.
    pub fn status(&self) -> Option<u16> {
        match self {
            ForgeError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// Names a repository on the forge, with the installation that grants access to it. Serialised
/// into the work queue's jobs (docs/architecture.md, "Many replicas").
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RepoRef {
    pub installation_id: i64,
    pub owner: String,
    pub name: String,
}

impl RepoRef {
    /// `owner/name`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    /// The forge the repository lives on, read from its owner ([`ForgeKind::of_owner`]).
    pub fn forge(&self) -> ForgeKind {
        ForgeKind::of_owner(&self.owner)
    }

    /// A GitLab project's path on its instance (`group/sub/project`, the owner without its
    /// host); None for a GitHub repository.
    pub fn gitlab_path(&self) -> Option<String> {
        gitlab_path(&self.owner, &self.name)
    }
}

/// The forges a repository can live on (docs/review-service.md, "GitLab").
///
/// Names tell them apart, so no column or job field has to: a GitHub owner is one account
/// name (letters, digits and hyphens, never a `/`), while a GitLab project's owner is the
/// instance's host followed by its namespace, `gitlab.com/group/sub`, and its full name
/// `gitlab.com/group/sub/project`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForgeKind {
    GitHub,
    GitLab,
}

impl ForgeKind {
    /// GitLab when `owner` holds a `/` (host and namespace), else GitHub.
    pub fn of_owner(owner: &str) -> ForgeKind {
        if owner.contains('/') {
            ForgeKind::GitLab
        } else {
            ForgeKind::GitHub
        }
    }

    /// The forge of a repository's full name: GitLab when it has more than one `/`.
    pub fn of_full_name(full_name: &str) -> ForgeKind {
        match full_name.rsplit_once('/') {
            Some((owner, _)) => ForgeKind::of_owner(owner),
            None => ForgeKind::GitHub,
        }
    }

    /// `github` or `gitlab`.
    pub fn as_str(self) -> &'static str {
        match self {
            ForgeKind::GitHub => "github",
            ForgeKind::GitLab => "gitlab",
        }
    }

    /// The forge's own spelling, as error messages name it: `GitHub` or `GitLab`.
    pub fn display_name(self) -> &'static str {
        match self {
            ForgeKind::GitHub => "GitHub",
            ForgeKind::GitLab => "GitLab",
        }
    }
}

impl std::fmt::Display for ForgeKind {
    /// [`ForgeKind::display_name`]: `GitHub` or `GitLab`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.display_name())
    }
}

/// `group/sub/project` from owner `host/group/sub` and name `project`; None when the owner
/// has no host part (a GitHub owner).
pub fn gitlab_path(owner: &str, name: &str) -> Option<String> {
    let (_host, namespace) = owner.split_once('/')?;
    Some(format!("{namespace}/{name}"))
}

/// A repository read through the contents API (docs/review-service.md §4, Skills): with the token of its
/// installation when the App is installed on it, anonymously (public repositories) otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoRead {
    pub owner: String,
    pub name: String,
    pub installation_id: Option<i64>,
}

/// One entry of a folder listing of the contents API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentEntry {
    /// `file`, `dir`, `symlink` or `submodule`.
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    /// Path from the repository root.
    pub path: String,
    /// Bytes (0 for folders).
    #[serde(default)]
    pub size: u64,
}

/// What GET /repos/{o}/{r}/contents/{path}?ref={sha} returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Contents {
    /// A folder: its entries.
    Dir(Vec<ContentEntry>),
    /// A file with its bytes (decoded from the API's base64).
    File { path: String, content: Vec<u8> },
    /// A symlink or submodule (its `type`): no content.
    Other(String),
}

/// One inline review comment of a pull request (GET /repos/{o}/{r}/pulls/{n}/comments, and
/// the `comment` of a `pull_request_review_comment` delivery), a reply when `in_reply_to_id`
/// is set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewComment {
    pub id: i64,
    #[serde(default)]
    pub in_reply_to_id: Option<i64>,
    #[serde(default)]
    pub user: Option<CommentUser>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub body: String,
    /// The author's relation to the repository, as GitHub reports it: `OWNER`, `MEMBER`,
    /// `COLLABORATOR`, `CONTRIBUTOR`, `FIRST_TIME_CONTRIBUTOR`, `FIRST_TIMER`, `NONE`, ...
    #[serde(default)]
    pub author_association: Option<String>,
}

/// The author of a comment: `type` is `User` for people and `Bot` for Apps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommentUser {
    pub login: String,
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
}

impl ReviewComment {
    /// True when a person with write access wrote it (author_association OWNER, MEMBER or
    /// COLLABORATOR): the replies the REVIEW.md improver may learn from. A PR's
    /// author from outside the project cannot teach the reviewer what to overlook.
    pub fn by_maintainer(&self) -> bool {
        self.by_human()
            && matches!(
                self.author_association.as_deref(),
                Some("OWNER" | "MEMBER" | "COLLABORATOR")
            )
    }

    /// Whether a person (not an App or bot account) wrote it.
    pub fn by_human(&self) -> bool {
        self.user
            .as_ref()
            .is_some_and(|u| u.kind.as_deref() != Some("Bot") && !u.login.ends_with("[bot]"))
    }
}

/// A reaction on a review comment (GET /repos/{o}/{r}/pulls/comments/{id}/reactions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaction {
    /// GitHub's content name: `+1`, `-1`, `laugh`, `confused`, `heart`, `hooray`, `rocket` or
    /// `eyes`.
    pub content: String,
    /// Who reacted; `ghost` (GitHub's stand-in account) when the account was deleted.
    pub user_login: String,
    /// `User` for people, `Bot` for Apps and bot accounts.
    pub user_type: String,
}

impl Reaction {
    /// Whether a person (not an App or bot account) reacted.
    pub fn by_human(&self) -> bool {
        self.user_type != "Bot" && !self.user_login.ends_with("[bot]")
    }
}

/// A review thread of a pull request, as GitHub's GraphQL API shows it
/// (`PullRequest.reviewThreads`): a thread starts with an inline review comment and holds its
/// replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewThread {
    /// The thread's GraphQL node id (`PRRT_...`), for [`Forge::resolve_review_thread`].
    pub id: String,
    /// Whether someone (or the App) resolved the thread.
    pub is_resolved: bool,
    /// Its comments, oldest first: the first is the one that opened the thread. At most
    /// [`THREAD_COMMENTS_CAP`] are read per thread.
    pub comments: Vec<ThreadComment>,
}

impl ReviewThread {
    /// The REST id of the comment that opened the thread: how a thread is found from the id
    /// of an inline comment the App posted.
    pub fn first_comment_id(&self) -> Option<i64> {
        self.comments.first().and_then(|c| c.database_id)
    }
}

/// One comment of a [`ReviewThread`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadComment {
    /// The comment's REST id (GraphQL `databaseId`), the id of [`ReviewComment::id`].
    pub database_id: Option<i64>,
    /// Markdown, as written.
    pub body: String,
    /// The author's login; `None` for a deleted account. GraphQL names an App by its slug,
    /// without the `[bot]` suffix the REST API adds (`review-bot`, not `review-bot[bot]`).
    pub author_login: Option<String>,
    /// `OWNER`, `MEMBER`, `COLLABORATOR`, `CONTRIBUTOR`, `FIRST_TIME_CONTRIBUTOR`,
    /// `FIRST_TIMER`, `MANNEQUIN` or `NONE`.
    pub author_association: String,
    /// When it was written (GraphQL `createdAt`, UTC).
    pub created_at: time::OffsetDateTime,
}

/// A one-file change proposed as a pull request: `path` gets `content` on a new branch
/// `branch` made at `base_sha`, and a PR is opened against `base` (the branch `base_sha` was
/// read from, so the change applies to what the caller saw).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChangePull {
    pub base: String,
    pub base_sha: String,
    pub branch: String,
    pub path: String,
    pub content: Vec<u8>,
    pub commit_message: String,
    pub title: String,
    pub body: String,
}

/// An opened pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenedPull {
    pub number: i64,
    #[serde(default)]
    pub html_url: String,
}

/// A check run made by [`Forge::create_check_run`]: its id, with the commit and name it was
/// made on (a forge whose commit statuses are keyed by commit and name, as GitLab's are,
/// finishes it by those).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRun {
    pub id: i64,
    pub head_sha: String,
    pub name: String,
}

/// Conclusion of a completed check run (GitHub's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckConclusion {
    Success,
    Failure,
    Neutral,
    Cancelled,
    Skipped,
}

impl CheckConclusion {
    /// GitHub's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Failure => "failure",
            Self::Neutral => "neutral",
            Self::Cancelled => "cancelled",
            Self::Skipped => "skipped",
        }
    }
}

/// The forge operations of a review. Implemented by [`GitHubForge`] and [`GitLabForge`]
/// (each method's GitLab mapping is documented on its impl there); tests use the same
/// implementations against the fake forge and the fake GitLab in `tests/`.
#[async_trait]
pub trait Forge: Send + Sync {
    /// A token for git transport and REST calls of this installation (cached until shortly
    /// before it expires).
    async fn installation_token(&self, installation_id: i64) -> Result<SecretString, ForgeError>;
    /// The token git fetches `repo` with (sent as HTTP basic auth, user `x-access-token`,
    /// which GitLab accepts for access tokens too): the installation's token by default.
    async fn clone_token(&self, repo: &RepoRef) -> Result<SecretString, ForgeError> {
        self.installation_token(repo.installation_id).await
    }
    /// GET a pull request.
    async fn pull_request(&self, repo: &RepoRef, number: i64) -> Result<PullRequest, ForgeError>;
    /// POST an issue comment on the PR; returns the comment id.
    async fn post_comment(
        &self,
        repo: &RepoRef,
        number: i64,
        body: &str,
    ) -> Result<i64, ForgeError>;
    /// POST a formal review with inline comments at `commit_id`.
    async fn create_review(
        &self,
        repo: &RepoRef,
        number: i64,
        commit_id: &str,
        review: &ReviewSubmission,
    ) -> Result<PostedReview, ForgeError>;
    /// Mark `head_sha` as waiting for a review named `name`, when the review is queued. GitHub
    /// has nothing to do here (its check run is created when the run starts); GitLab sets a
    /// `pending` commit status.
    async fn mark_queued(
        &self,
        _repo: &RepoRef,
        _head_sha: &str,
        _name: &str,
    ) -> Result<(), ForgeError> {
        Ok(())
    }
    /// POST a check run, in progress, on `head_sha`; returns its id.
    async fn create_check_run(
        &self,
        repo: &RepoRef,
        head_sha: &str,
        name: &str,
    ) -> Result<i64, ForgeError>;
    /// PATCH a check run to completed with a conclusion and an output title and summary.
    async fn complete_check_run(
        &self,
        repo: &RepoRef,
        check_run: &CheckRun,
        conclusion: CheckConclusion,
        title: &str,
        summary: &str,
    ) -> Result<(), ForgeError>;
    /// The commit SHA a branch, tag or SHA names (GET /repos/{o}/{r}/commits/{ref}).
    async fn resolve_commit(&self, repo: &RepoRead, git_ref: &str) -> Result<String, ForgeError>;
    /// The inline review comments of a PR with their replies, oldest first (GET
    /// /repos/{o}/{r}/pulls/{n}/comments, first 100).
    async fn pull_review_comments(
        &self,
        repo: &RepoRef,
        number: i64,
    ) -> Result<Vec<ReviewComment>, ForgeError>;
    /// The repository's default branch (GET /repos/{o}/{r}).
    async fn default_branch(&self, repo: &RepoRef) -> Result<String, ForgeError>;
    /// Open a PR changing one file: create `refs/heads/{branch}` at `base_sha` (POST git/refs),
    /// write the file there (PUT contents, with the existing blob's sha when the file exists)
    /// and open the PR against `base` (POST pulls).
    async fn open_file_pull(
        &self,
        repo: &RepoRef,
        change: &FileChangePull,
    ) -> Result<OpenedPull, ForgeError>;
    /// A file or folder at commit `sha` (GET /repos/{o}/{r}/contents/{path}?ref={sha}).
    /// Files over the API's 1 MB inline limit are a [`ForgeError::Decode`].
    async fn contents(
        &self,
        repo: &RepoRead,
        path: &str,
        sha: &str,
    ) -> Result<Contents, ForgeError>;
    /// Reply in the thread of inline comment `comment_id` of PR `number` (POST
    /// /repos/{o}/{r}/pulls/{n}/comments/{comment_id}/replies `{body}`); returns the reply's
    /// id. `comment_id` must open its thread: GitHub does not support replies to replies.
    /// Errors: [`ForgeError::Api`] 404 for a comment that is not on the PR, 422 for an empty
    /// body (<https://docs.github.com/en/rest/pulls/comments#create-a-reply-for-a-review-comment>).
    async fn reply_to_review_comment(
        &self,
        repo: &RepoRef,
        number: i64,
        comment_id: i64,
        body: &str,
    ) -> Result<i64, ForgeError>;
    /// The reactions on inline comment `comment_id`, oldest first (GET
    /// /repos/{o}/{r}/pulls/comments/{comment_id}/reactions, 100 a page, at most
    /// [`REACTION_PAGES_CAP`] pages: later ones are not read). Errors:
    /// [`ForgeError::Api`] 404 for an unknown comment
    /// (<https://docs.github.com/en/rest/reactions/reactions#list-reactions-for-a-pull-request-review-comment>).
    async fn review_comment_reactions(
        &self,
        repo: &RepoRef,
        number: i64,
        comment_id: i64,
    ) -> Result<Vec<Reaction>, ForgeError>;
    /// The review threads of PR `number`, oldest first, through GraphQL (POST /graphql,
    /// `repository.pullRequest.reviewThreads`, 100 a page, at most
    /// [`THREAD_PAGES_CAP`] pages; later threads are not read and a warning is
    /// logged). Errors: [`ForgeError::GraphQl`] with kind `NOT_FOUND` for an unknown
    /// repository or PR (<https://docs.github.com/en/graphql/reference/objects#pullrequestreviewthread>).
    async fn review_threads(
        &self,
        repo: &RepoRef,
        number: i64,
    ) -> Result<Vec<ReviewThread>, ForgeError>;
    /// Resolve review thread `thread_id` (a [`ReviewThread::id`]) through the GraphQL mutation
    /// `resolveReviewThread`; Ok once GitHub reports the thread resolved (resolving a resolved
    /// thread is Ok too). Errors: [`ForgeError::GraphQl`] with kind `NOT_FOUND` for an unknown
    /// id, [`ForgeError::Decode`] when the answer does not say the thread is resolved
    /// (<https://docs.github.com/en/graphql/reference/mutations#resolvereviewthread>).
    async fn resolve_review_thread(
        &self,
        repo: &RepoRef,
        number: i64,
        thread_id: &str,
    ) -> Result<(), ForgeError>;
}
