//! What became of the findings posted earlier on a pull request, decided at each re-review
//! (docs/review-service.md, "Finding outcomes"):
//!
//! - **dismissed**: a reply in the finding's thread by the PR author or a member (OWNER,
//!   MEMBER, COLLABORATOR) that answers it as intended, or a thumbs-down reaction on it by the
//!   PR author, the repository's owner or a member seen in the PR's threads. GitHub sends no
//!   webhook for reactions, so both are read here, before the review.
//! - **resolved**: the code around the finding changed since it was posted
//!   ([`super::prepare`] finds which) and the recheck ([`agent::recheck`]) found the problem
//!   gone; its GitHub thread is then resolved (GraphQL `resolveReviewThread`).
//!
//! Forge failures here are logged and the review goes on: the outcomes are read again at the
//! next review.

use crate::job::PrJob;
use crate::state::AppState;
use forge::ReviewThread;
use review_domain::{FindingOutcome, FindingRow};
use std::collections::HashSet;

/// Open findings whose reactions are read per review at most: one API call each.
const MAX_REACTION_READS: usize = 50;

/// Words of a reply that answer a finding as intended (lower case).
const INTENDED: &[&str] = &[
    "intended",
    "intentional",
    "by design",
    "on purpose",
    "deliberate",
    "as designed",
    "expected behavio",
    "won't fix",
    "wontfix",
    "not a bug",
    "false positive",
    "not an issue",
];

/// Words that turn an [`INTENDED`] reply around ("not intended", "unintended").
const NEGATED: &[&str] = &[
    "not intended",
    "unintended",
    "isn't intended",
    "not intentional",
    "unintentional",
    "not deliberate",
    "not by design",
];

/// Whether a reply answers its finding as intended: it names one of [`INTENDED`] and none of
/// [`NEGATED`], case aside.
pub(crate) fn says_intended(body: &str) -> bool {
    let body = body.to_lowercase();
    INTENDED.iter().any(|w| body.contains(w)) && !NEGATED.iter().any(|w| body.contains(w))
}

/// The association of a member: a person with write access to the repository.
fn is_member(association: &str) -> bool {
    matches!(association, "OWNER" | "MEMBER" | "COLLABORATOR")
}

/// The first `n` characters of `text` on one line.
fn excerpt(text: &str, n: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

/// The review threads of the pull request, or none when the forge fails (logged).
async fn threads(app: &AppState, job: &PrJob) -> Vec<ReviewThread> {
    match app.forge.review_threads(&job.repo, job.pr.number).await {
        Ok(threads) => threads,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the review threads; finding outcomes wait for the next review");
            Vec::new()
        }
    }
}

/// Reads the replies and reactions on the open findings of the pull request and dismisses the
/// ones answered as intended or thumbed down. Returns the ids dismissed.
pub(super) async fn read_dismissals(app: &AppState, job: &PrJob) -> Vec<i64> {
    let repo = job.repo.full_name();
    let open: Vec<FindingRow> = match app.records.store.open_findings(&repo, job.pr.number).await {
        Ok(rows) => rows
            .into_iter()
            .map(|(f, _)| f)
            .filter(|f| f.github_comment_id.is_some())
            .collect(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the open findings");
            return Vec::new();
        }
    };
    if open.is_empty() {
        return Vec::new();
    }
    let threads = threads(app, job).await;
    let author = job.pr.author.as_deref();
    let members: HashSet<&str> = threads
        .iter()
        .flat_map(|t| &t.comments)
        .filter(|c| is_member(&c.author_association))
        .filter_map(|c| c.author_login.as_deref())
        .collect();
    let mut dismissed = Vec::new();
    for (i, f) in open.iter().enumerate() {
        let Some(comment_id) = f.github_comment_id else {
            continue;
        };
        let thread = threads
            .iter()
            .find(|t| t.first_comment_id() == Some(comment_id));
        let reply = thread.and_then(|t| {
            t.comments.iter().skip(1).find(|c| {
                let by_author = author.is_some() && c.author_login.as_deref() == author;
                (by_author || is_member(&c.author_association)) && says_intended(&c.body)
            })
        });
        let mut reason = reply.map(|c| {
            format!(
                "@{} replied: \"{}\"",
                c.author_login.as_deref().unwrap_or("ghost"),
                excerpt(&c.body, 200)
            )
        });
        if reason.is_none() && i < MAX_REACTION_READS {
            match app
                .forge
                .review_comment_reactions(&job.repo, job.pr.number, comment_id)
                .await
            {
                Ok(reactions) => {
                    reason = reactions
                        .iter()
                        .find(|r| {
                            let login = r.user_login.as_str();
                            r.content == "-1"
                                && r.by_human()
                                && (Some(login) == author
                                    || login == job.repo.owner
                                    || members.contains(login))
                        })
                        .map(|r| format!("thumbs-down by @{}", r.user_login));
                }
                Err(e) => {
                    tracing::warn!(finding = f.id, error = %e, "cannot read the reactions on a finding");
                }
            }
        }
        let Some(reason) = reason else { continue };
        match app
            .records
            .record_outcome(f.id, FindingOutcome::Dismissed, None, &reason)
            .await
        {
            Ok(Some(_)) => {
                tracing::info!(finding = f.id, reason = %reason, "finding dismissed");
                dismissed.push(f.id);
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(finding = f.id, error = %e, "cannot dismiss the finding"),
        }
    }
    dismissed
}

/// The recheck list of the agent: the open findings (`open`, read after the dismissals) whose
/// code changed (`changed`: id and the code as posted).
pub(super) fn rechecks(open: &[FindingRow], changed: &[(i64, String)]) -> Vec<agent::Recheck> {
    changed
        .iter()
        .filter_map(|(id, code)| {
            let f = open.iter().find(|f| f.id == *id)?;
            Some(agent::Recheck {
                finding_id: f.id,
                path: f.path.clone()?,
                line: f.line?,
                severity: f.severity?,
                body: f.body.clone(),
                posted_code: code.clone(),
            })
        })
        .collect()
}

/// Resolves the findings the recheck found gone at this head: the row (when, at which head,
/// why) and its GitHub thread.
pub(super) async fn resolve(app: &AppState, job: &PrJob, rechecked: &[agent::Rechecked]) {
    let gone: Vec<(i64, &str)> = rechecked
        .iter()
        .filter_map(|r| match &r.verdict {
            agent::RecheckVerdict::Gone { reason } => Some((r.finding_id, reason.as_str())),
            _ => None,
        })
        .collect();
    if gone.is_empty() {
        return;
    }
    let threads = threads(app, job).await;
    for (id, reason) in gone {
        let reason = format!(
            "fixed at {}: {}",
            short(&job.pr.head_sha),
            excerpt(reason, 300)
        );
        let row = match app
            .records
            .record_outcome(
                id,
                FindingOutcome::Resolved,
                Some(&job.pr.head_sha),
                &reason,
            )
            .await
        {
            Ok(Some(row)) => row,
            Ok(None) => continue, // moved meanwhile (dismissed, or another replica)
            Err(e) => {
                tracing::warn!(finding = id, error = %e, "cannot resolve the finding");
                continue;
            }
        };
        tracing::info!(finding = id, "finding resolved");
        let thread = threads.iter().find(|t| {
            row.github_comment_id.is_some() && t.first_comment_id() == row.github_comment_id
        });
        if let Some(thread) = thread.filter(|t| !t.is_resolved)
            && let Err(e) = app
                .forge
                .resolve_review_thread(&job.repo, job.pr.number, &thread.id)
                .await
        {
            tracing::warn!(finding = id, error = %e, "cannot resolve the finding's thread on the forge");
        }
    }
}

/// The first 7 characters of a SHA, as git shows it.
fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intended_replies_are_told_from_their_negations() {
        assert!(says_intended(
            "This is intended: the lock is held by the caller."
        ));
        assert!(says_intended("Won't fix, it's by design"));
        assert!(says_intended("False positive."));
        assert!(!says_intended("Good catch, this was not intended. Fixing."));
        assert!(!says_intended("Unintended, thanks"));
        assert!(!says_intended("Fixed in the next commit"));
    }

    #[test]
    fn excerpts_are_one_line_and_cut_on_characters() {
        assert_eq!(excerpt("a\n b   c", 10), "a b c");
        assert_eq!(excerpt("ééééé", 3), "ééé…");
    }
}
