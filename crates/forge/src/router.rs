//! [`Forges`]: the one [`Forge`] the server holds, sending each call to the forge the
//! repository lives on ([`crate::ForgeKind`], docs/review-service.md, "GitLab").

use crate::{
    CheckConclusion, CheckRun, Contents, FileChangePull, Forge, ForgeError, ForgeKind, OpenedPull,
    PullRequest, Reaction, RepoRead, RepoRef, ReviewComment, ReviewThread,
};
use async_trait::async_trait;
use review_domain::{PostedReview, ReviewSubmission};
use secrecy::SecretString;
use std::sync::Arc;

/// GitHub, and GitLab when it is configured. A call about a GitLab project while GitLab is
/// not configured fails with [`ForgeError::Credentials`].
#[derive(Clone)]
pub struct Forges {
    github: Arc<dyn Forge>,
    gitlab: Option<Arc<dyn Forge>>,
}

impl Forges {
    /// Both forges; `gitlab` None when GITLAB_URL and GITLAB_TOKEN are not set.
    pub fn new(github: Arc<dyn Forge>, gitlab: Option<Arc<dyn Forge>>) -> Self {
        Self { github, gitlab }
    }

    fn of(&self, kind: ForgeKind) -> Result<&dyn Forge, ForgeError> {
        match kind {
            ForgeKind::GitHub => Ok(self.github.as_ref()),
            ForgeKind::GitLab => self.gitlab.as_deref().ok_or_else(|| {
                ForgeError::Credentials(
                    "GitLab is not configured: set GITLAB_URL and GITLAB_TOKEN".into(),
                )
            }),
        }
    }

    fn repo(&self, repo: &RepoRef) -> Result<&dyn Forge, ForgeError> {
        self.of(repo.forge())
    }

    fn read(&self, repo: &RepoRead) -> Result<&dyn Forge, ForgeError> {
        self.of(ForgeKind::of_owner(&repo.owner))
    }
}

#[async_trait]
impl Forge for Forges {
    async fn installation_token(&self, installation_id: i64) -> Result<SecretString, ForgeError> {
        self.github.installation_token(installation_id).await
    }

    async fn clone_token(&self, repo: &RepoRef) -> Result<SecretString, ForgeError> {
        self.repo(repo)?.clone_token(repo).await
    }

    async fn pull_request(&self, repo: &RepoRef, number: i64) -> Result<PullRequest, ForgeError> {
        self.repo(repo)?.pull_request(repo, number).await
    }

    async fn post_comment(
        &self,
        repo: &RepoRef,
        number: i64,
        body: &str,
    ) -> Result<i64, ForgeError> {
        self.repo(repo)?.post_comment(repo, number, body).await
    }

    async fn create_review(
        &self,
        repo: &RepoRef,
        number: i64,
        commit_id: &str,
        review: &ReviewSubmission,
    ) -> Result<PostedReview, ForgeError> {
        (self.repo(repo)?)
            .create_review(repo, number, commit_id, review)
            .await
    }

    async fn mark_queued(
        &self,
        repo: &RepoRef,
        head_sha: &str,
        name: &str,
    ) -> Result<(), ForgeError> {
        self.repo(repo)?.mark_queued(repo, head_sha, name).await
    }

    async fn create_check_run(
        &self,
        repo: &RepoRef,
        head_sha: &str,
        name: &str,
    ) -> Result<i64, ForgeError> {
        self.repo(repo)?
            .create_check_run(repo, head_sha, name)
            .await
    }

    async fn complete_check_run(
        &self,
        repo: &RepoRef,
        check_run: &CheckRun,
        conclusion: CheckConclusion,
        title: &str,
        summary: &str,
    ) -> Result<(), ForgeError> {
        (self.repo(repo)?)
            .complete_check_run(repo, check_run, conclusion, title, summary)
            .await
    }

    async fn resolve_commit(&self, repo: &RepoRead, git_ref: &str) -> Result<String, ForgeError> {
        self.read(repo)?.resolve_commit(repo, git_ref).await
    }

    async fn pull_review_comments(
        &self,
        repo: &RepoRef,
        number: i64,
    ) -> Result<Vec<ReviewComment>, ForgeError> {
        self.repo(repo)?.pull_review_comments(repo, number).await
    }

    async fn default_branch(&self, repo: &RepoRef) -> Result<String, ForgeError> {
        self.repo(repo)?.default_branch(repo).await
    }

    async fn open_file_pull(
        &self,
        repo: &RepoRef,
        change: &FileChangePull,
    ) -> Result<OpenedPull, ForgeError> {
        self.repo(repo)?.open_file_pull(repo, change).await
    }

    async fn contents(
        &self,
        repo: &RepoRead,
        path: &str,
        sha: &str,
    ) -> Result<Contents, ForgeError> {
        self.read(repo)?.contents(repo, path, sha).await
    }

    async fn reply_to_review_comment(
        &self,
        repo: &RepoRef,
        number: i64,
        comment_id: i64,
        body: &str,
    ) -> Result<i64, ForgeError> {
        (self.repo(repo)?)
            .reply_to_review_comment(repo, number, comment_id, body)
            .await
    }

    async fn review_comment_reactions(
        &self,
        repo: &RepoRef,
        number: i64,
        comment_id: i64,
    ) -> Result<Vec<Reaction>, ForgeError> {
        (self.repo(repo)?)
            .review_comment_reactions(repo, number, comment_id)
            .await
    }

    async fn review_threads(
        &self,
        repo: &RepoRef,
        number: i64,
    ) -> Result<Vec<ReviewThread>, ForgeError> {
        self.repo(repo)?.review_threads(repo, number).await
    }

    async fn resolve_review_thread(
        &self,
        repo: &RepoRef,
        number: i64,
        thread_id: &str,
    ) -> Result<(), ForgeError> {
        (self.repo(repo)?)
            .resolve_review_thread(repo, number, thread_id)
            .await
    }
}
