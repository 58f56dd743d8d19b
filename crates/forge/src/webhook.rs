//! Webhook payload types: the fields of GitHub's deliveries that the review service reads
//! (docs/review-service.md §6, Inbound). Everything else in a payload is ignored, and
//! optional fields are optional, so GitHub adding fields never breaks a delivery.

use crate::ReviewComment;
use serde::{Deserialize, Serialize};

/// A user or organisation account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub login: String,
}

/// The repository a delivery is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repository {
    /// `owner/name`.
    pub full_name: String,
    pub name: String,
    pub owner: User,
    #[serde(default)]
    pub default_branch: Option<String>,
}

/// The installation a delivery came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installation {
    pub id: i64,
}

/// One end of a pull request: branch name and commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitRef {
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub sha: String,
}

/// A pull request as GitHub's JSON shows it, in a pull_request delivery and in the answer of
/// GET /repos/{o}/{r}/pulls/{n} alike (the same object). The review pipeline takes it as
/// [`review_domain::PullRequest`] through [`PullRequest::to_domain`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequest {
    pub number: i64,
    pub title: String,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub draft: bool,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub user: Option<User>,
    pub head: GitRef,
    pub base: GitRef,
}

impl PullRequest {
    /// The domain pull request: author login, branch names and commits, as given.
    pub fn to_domain(&self) -> review_domain::PullRequest {
        review_domain::PullRequest {
            number: self.number,
            title: self.title.clone(),
            body: self.body.clone(),
            author: self.user.as_ref().map(|u| u.login.clone()),
            base_ref: self.base.git_ref.clone(),
            base_sha: self.base.sha.clone(),
            head_ref: self.head.git_ref.clone(),
            head_sha: self.head.sha.clone(),
        }
    }
}

/// `X-GitHub-Event: pull_request`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequestEvent {
    pub action: String,
    pub number: i64,
    pub pull_request: PullRequest,
    pub repository: Repository,
    #[serde(default)]
    pub installation: Option<Installation>,
}

/// The `issue.pull_request` marker: present only when the issue is a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuePullRequestLink {
    #[serde(default)]
    pub url: Option<String>,
}

/// The issue (or pull request) an issue_comment is on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    pub number: i64,
    #[serde(default)]
    pub pull_request: Option<IssuePullRequestLink>,
    /// Who opened the issue (the pull request's author).
    #[serde(default)]
    pub user: Option<User>,
}

/// The comment of an issue_comment delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    pub body: String,
    /// OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, ...
    pub author_association: String,
    #[serde(default)]
    pub user: Option<User>,
}

/// `X-GitHub-Event: issue_comment`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueCommentEvent {
    pub action: String,
    pub issue: Issue,
    pub comment: Comment,
    pub repository: Repository,
    #[serde(default)]
    pub installation: Option<Installation>,
}

impl IssueCommentEvent {
    /// The trigger command of docs/architecture.md, Lifecycle extras: a new comment on a pull request
    /// whose first word is `/review`, by a user with write access (author_association OWNER,
    /// MEMBER or COLLABORATOR).
    pub fn is_review_command(&self) -> bool {
        self.action == "created"
            && self.issue.pull_request.is_some()
            && self.comment.body.split_whitespace().next() == Some("/review")
            && matches!(
                self.comment.author_association.as_str(),
                "OWNER" | "MEMBER" | "COLLABORATOR"
            )
    }
}

impl IssueCommentEvent {
    /// The question of `/ask <question>`, per
    /// docs/review-service.md, "Answers in review threads": a new comment on a pull request
    /// whose first word is `/ask`, with a question after it, by the pull request's author or a user with write access (author_association
    /// OWNER, MEMBER or COLLABORATOR), never by an App or bot. None for every other comment.
    pub fn ask_question(&self) -> Option<&str> {
        let body = self.comment.body.trim_start();
        let question = body.strip_prefix("/ask")?;
        if !question.is_empty() && !question.starts_with(char::is_whitespace) {
            return None; // `/asking`, not the command
        }
        let question = question.trim();
        let commenter = self.comment.user.as_ref().map(|u| u.login.as_str());
        let by_bot = commenter.is_some_and(|l| l.ends_with("[bot]"));
        let by_author =
            commenter.is_some() && commenter == self.issue.user.as_ref().map(|u| u.login.as_str());
        let by_maintainer = matches!(
            self.comment.author_association.as_str(),
            "OWNER" | "MEMBER" | "COLLABORATOR"
        );
        (self.action == "created"
            && self.issue.pull_request.is_some()
            && !question.is_empty()
            && !by_bot
            && (by_author || by_maintainer))
            .then_some(question)
    }
}

/// `X-GitHub-Event: pull_request_review_comment` (created, edited, deleted): an inline review
/// comment, or a reply in a review thread when `comment.in_reply_to_id` is set. The comment is
/// the same object as the REST API's review comment; `pull_request` is the PR at delivery time
/// (number, head and base)
/// (<https://docs.github.com/en/webhooks/webhook-events-and-payloads#pull_request_review_comment>).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequestReviewCommentEvent {
    pub action: String,
    pub comment: ReviewComment,
    pub pull_request: PullRequest,
    pub repository: Repository,
    #[serde(default)]
    pub installation: Option<Installation>,
}

impl PullRequestReviewCommentEvent {
    /// A new reply in a review thread written by a person who is the PR's author or has write
    /// access (author_association OWNER, MEMBER or COLLABORATOR): the replies the reviewer may
    /// answer. Replies by Apps and bots (the reviewer's own included) never are.
    pub fn is_reply_by_author_or_maintainer(&self) -> bool {
        let by_author = match (&self.comment.user, &self.pull_request.user) {
            (Some(commenter), Some(author)) => commenter.login == author.login,
            _ => false,
        };
        self.action == "created"
            && self.comment.in_reply_to_id.is_some()
            && self.comment.by_human()
            && (by_author || self.comment.by_maintainer())
    }
}

/// A repository as listed in installation deliveries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedRepository {
    pub full_name: String,
}

/// `X-GitHub-Event: installation` (created, deleted, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallationEvent {
    pub action: String,
    pub installation: Installation,
    #[serde(default)]
    pub repositories: Vec<ListedRepository>,
}

/// `X-GitHub-Event: installation_repositories` (added, removed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallationRepositoriesEvent {
    pub action: String,
    pub installation: Installation,
    #[serde(default)]
    pub repositories_added: Vec<ListedRepository>,
    #[serde(default)]
    pub repositories_removed: Vec<ListedRepository>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> String {
        let path = format!(
            "{}/../../tests/fixtures/webhooks/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn githubs_example_pull_request_opened_parses() {
        let e: PullRequestEvent =
            serde_json::from_str(&sample("pull_request.opened.json")).unwrap();
        assert_eq!(e.action, "opened");
        assert_eq!(e.number, 2);
        assert_eq!(e.repository.full_name, "Codertocat/Hello-World");
        assert_eq!(e.installation, Some(Installation { id: 1 }));
        assert_eq!(e.pull_request.head.sha.len(), 40);
    }

    #[test]
    fn the_domain_pull_request_carries_every_field_of_the_delivery() {
        let e: PullRequestEvent =
            serde_json::from_str(&sample("pull_request.opened.json")).unwrap();
        assert_eq!(
            e.pull_request.to_domain(),
            review_domain::PullRequest {
                number: 2,
                title: "Update the README with new information.".into(),
                body: Some(
                    "This is a pretty simple change that we need to pull into master.".into()
                ),
                author: Some("Codertocat".into()),
                base_ref: "master".into(),
                base_sha: "f95f852bd8fca8fcc58a9a2d6c842781e32a215e".into(),
                head_ref: "changes".into(),
                head_sha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821".into(),
            }
        );
    }

    #[test]
    fn githubs_example_pull_request_review_comment_parses() {
        let e: PullRequestReviewCommentEvent =
            serde_json::from_str(&sample("pull_request_review_comment.created.json")).unwrap();
        assert_eq!(e.action, "created");
        assert_eq!(
            e.comment,
            ReviewComment {
                id: 284312630,
                in_reply_to_id: None,
                user: Some(crate::CommentUser {
                    login: "Codertocat".into(),
                    kind: Some("User".into()),
                }),
                path: Some("README.md".into()),
                body: "Maybe you should use more emoji on this line.".into(),
                author_association: Some("OWNER".into()),
            }
        );
        assert_eq!(e.pull_request.number, 2);
        assert_eq!(
            e.pull_request.head.sha,
            "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
        );
        assert_eq!(e.pull_request.base.git_ref, "master");
        assert_eq!(e.repository.full_name, "Codertocat/Hello-World");
        assert_eq!(e.installation, Some(Installation { id: 1 }));
    }

    #[test]
    fn only_replies_by_the_author_or_a_maintainer_ask_for_an_answer() {
        let mut e: PullRequestReviewCommentEvent =
            serde_json::from_str(&sample("pull_request_review_comment.created.json")).unwrap();
        // GitHub's example opens a thread: nothing to answer.
        assert!(!e.is_reply_by_author_or_maintainer());
        e.comment.in_reply_to_id = Some(1);
        // (commenter, kind, association, action): the example's PR author is Codertocat.
        let cases = [
            ("Codertocat", "User", "OWNER", "created", true),
            ("Codertocat", "User", "CONTRIBUTOR", "created", true),
            ("someone", "User", "CONTRIBUTOR", "created", false),
            ("someone", "User", "MEMBER", "created", true),
            ("someone", "User", "COLLABORATOR", "created", true),
            ("review-bot[bot]", "Bot", "MEMBER", "created", false),
            ("someone", "User", "MEMBER", "edited", false),
        ];
        for (login, kind, association, action, answered) in cases {
            e.comment.user = Some(crate::CommentUser {
                login: login.into(),
                kind: Some(kind.into()),
            });
            e.comment.author_association = Some(association.into());
            e.action = action.into();
            assert_eq!(
                e.is_reply_by_author_or_maintainer(),
                answered,
                "{login} {kind} {association} {action}"
            );
        }
    }

    #[test]
    fn githubs_example_issue_comment_is_not_a_command_on_a_plain_issue() {
        let mut e: IssueCommentEvent =
            serde_json::from_str(&sample("issue_comment.created.json")).unwrap();
        assert!(!e.is_review_command());
        e.issue.pull_request = Some(IssuePullRequestLink { url: None });
        e.comment.body = "/review please".into();
        e.comment.author_association = "OWNER".into();
        assert!(e.is_review_command());
        e.comment.author_association = "CONTRIBUTOR".into();
        assert!(!e.is_review_command());
        e.comment.author_association = "MEMBER".into();
        e.comment.body = "please /review".into();
        assert!(!e.is_review_command());
    }

    #[test]
    fn ask_takes_the_question_of_the_author_or_a_member_and_nobody_else() {
        let mut e: IssueCommentEvent =
            serde_json::from_str(&sample("issue_comment.created.json")).unwrap();
        e.issue.pull_request = Some(IssuePullRequestLink { url: None });
        e.issue.user = Some(User {
            login: "author".into(),
        });
        e.comment.user = Some(User {
            login: "someone".into(),
        });
        e.comment.author_association = "MEMBER".into();
        e.comment.body = "/ask  what does this change do? ".into();
        assert_eq!(e.ask_question(), Some("what does this change do?"));
        for body in ["/ask", "/ask   ", "/asking why", "please /ask why", ""] {
            e.comment.body = body.into();
            assert_eq!(e.ask_question(), None, "{body:?}");
        }
        e.comment.body = "/ask why?".into();
        e.comment.author_association = "CONTRIBUTOR".into();
        assert_eq!(e.ask_question(), None, "neither the author nor a member");
        e.comment.user = Some(User {
            login: "author".into(),
        });
        assert_eq!(e.ask_question(), Some("why?"), "the PR's author");
        e.comment.author_association = "MEMBER".into();
        e.comment.user = Some(User {
            login: "review-bot[bot]".into(),
        });
        assert_eq!(e.ask_question(), None, "a bot");
        e.comment.user = Some(User {
            login: "author".into(),
        });
        e.action = "edited".into();
        assert_eq!(e.ask_question(), None);
        e.action = "created".into();
        e.issue.pull_request = None;
        assert_eq!(e.ask_question(), None, "a plain issue");
    }
}
