//! The agent's two posting tools on the forge (docs/review-service.md §1 step 6): each post
//! goes to the PR first, then its findings are written back through the one findings path
//! ([`crate::records::Records::record_findings`]; docs/architecture.md, Findings) with the
//! forge's ids. A post that the forge refuses is the model's to read; a write-back that fails
//! after a successful post is logged, since the comment is already public.

use crate::state::AppState;
use agent::ReviewPoster;
use async_trait::async_trait;
use forge::RepoRef;
use review_domain::{FindingKind, NewFinding, PostedReview, ReviewSubmission};

/// The agent's two posting tools, backed by the forge and the findings write-back.
pub(super) struct ForgePoster {
    /// The app: its forge and its records.
    pub app: AppState,
    /// The review the findings belong to.
    pub review_id: i64,
    /// The PR's repository.
    pub repo: RepoRef,
    /// The PR number.
    pub number: i64,
    /// The reviewed head commit: the forge review is pinned to it.
    pub head_sha: String,
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
            fingerprint: None,
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
            fingerprint: None,
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
                fingerprint: review.fingerprints.get(i).cloned().flatten(),
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

    async fn record_dropped(
        &self,
        dropped: &[(review_domain::InlineComment, String)],
    ) -> Result<(), String> {
        self.app
            .records
            .record_dropped(self.review_id, dropped)
            .await
            .map_err(|e| e.to_string())
    }
}
