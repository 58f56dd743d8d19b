//! The git stage of a review: sync the repository into the bare-clone cache, read the diff and
//! the commit subjects, apply the skip rules, and check the head out for the agent's file
//! tools. The work runs on blocking threads, held to the tree limits (REVIEW_MAX_TREE_ENTRIES,
//! REVIEW_MAX_TREE_BYTES) and to the review's deadline, and stops when the review's future is
//! dropped (stop, supersede, shutdown). The local `review` command reuses [`read_diff`] and
//! [`check_out`].

use super::{REVIEW_TIMEOUT, RunError};
use crate::job::PrJob;
use crate::review::FailureKind;
use crate::state::AppState;
use anyhow::{Context, anyhow};
use git_cache::{GitError, Limits, Repo, Worktree};
use review_domain::Trigger;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::time::Instant;

/// Commit subjects shown to the agent at most.
const COMMITS_SHOWN: usize = 50;

/// The check run's summary of a review skipped for an empty diff.
const EMPTY_DIFF: &str = "The pull request's diff against its base is empty; nothing to review.";
/// The check run's summary of a review skipped by the patch-id rule.
const SAME_PATCH: &str = "The patch id equals the last reviewed one; nothing new to review.";

/// A prepared review: what the agent reads.
pub(crate) struct Checkout {
    /// `git diff base...head` as text.
    pub diff: String,
    /// Its patch id (empty when git cannot compute one).
    pub patch_id: String,
    /// Commit subjects, oldest first, at most 50.
    pub commits: Vec<String>,
    /// The review instructions at the merge base ([`DiffRead::instructions`]).
    pub instructions: Option<(String, String)>,
    /// The head's checkout; removed when dropped.
    pub worktree: Worktree,
    /// What part of the pull request the agent reviews.
    pub range: Range,
    /// The open findings of the pull request whose code changed since they were posted
    /// (docs/review-service.md, "Finding outcomes"): each one's id and the lines around it as
    /// they read then.
    pub changed_findings: Vec<(i64, String)>,
    /// The dismissed findings of the pull request: path, the anchored line as posted
    /// (whitespace collapsed) and body ([`agent::ReviewJob::dismissed`]).
    pub dismissed: Vec<(String, String, String)>,
}

/// Where an open finding sits: its id, file, line and the head SHA it was posted for.
type FindingSpot = (i64, String, i64, Option<String>);

/// Lines read around a finding's line on each side to tell whether its code changed (as the
/// fingerprint does: docs/review-service.md, "Repeated findings").
const AROUND: usize = 2;

/// Files larger than this are not compared: their findings stay open untouched.
const MAX_COMPARED_BYTES: u64 = 1 << 20;

/// The anchored line of each dismissed finding as it read at the head it was posted for,
/// whitespace collapsed, with its path and body; findings whose file cannot be read there are
/// left out.
fn dismissed_lines(repo: &Repo, spots: &[(FindingSpot, String)]) -> Vec<(String, String, String)> {
    spots
        .iter()
        .filter_map(|((_, path, line, head), body)| {
            let bytes = repo
                .file_at(head.as_deref()?, path, MAX_COMPARED_BYTES)
                .ok()??;
            let text = String::from_utf8_lossy(&bytes);
            let line = agent::fingerprint::normalized_line(&text, *line)?;
            Some((path.clone(), line, body.clone()))
        })
        .collect()
}

/// The open findings among `spots` whose code changed between the head they were posted for
/// and `head`: the lines around the finding (two each side, whitespace collapsed) no longer
/// appear together anywhere in the file at `head`, or the file is gone. A finding whose posting
/// head is unknown or unreadable, or whose file is over [`MAX_COMPARED_BYTES`], is left out.
/// Returns each changed one's id with the lines as they read when it was posted.
fn changed_findings(repo: &Repo, spots: &[FindingSpot], head: &str) -> Vec<(i64, String)> {
    let norm = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = |commit: &str, path: &str| {
        repo.file_at(commit, path, MAX_COMPARED_BYTES)
            .map(|b| b.map(|b| String::from_utf8_lossy(&b).into_owned()))
    };
    let mut out = Vec::new();
    for (id, path, line, posted_head) in spots {
        let Some(posted_head) = posted_head.as_deref().filter(|h| *h != head) else {
            continue;
        };
        let Ok(Some(old)) = text(posted_head, path) else {
            continue;
        };
        let old: Vec<&str> = old.lines().collect();
        let Some(at) = usize::try_from(*line)
            .ok()
            .filter(|l| (1..=old.len()).contains(l))
        else {
            continue;
        };
        let window = &old[(at - 1).saturating_sub(AROUND)..(at + AROUND).min(old.len())];
        let posted_code = window.join("\n");
        let still_there = match text(head, path) {
            Ok(Some(new)) => {
                let want: Vec<String> = window.iter().map(|l| norm(l)).collect();
                let new: Vec<String> = new.lines().map(norm).collect();
                new.windows(want.len()).any(|w| w == want.as_slice())
            }
            Ok(None) => false, // the file is gone at this head
            Err(_) => true,    // unreadable: leave it open
        };
        if !still_there {
            out.push((*id, posted_code));
        }
    }
    out
}

/// What part of a pull request a review covers (docs/review-service.md, "Incremental review").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Range {
    /// The whole diff: the first review, `/review full`, or a head that did not move.
    Whole,
    /// The change since the last reviewed head, an ancestor of this head.
    Since {
        /// The last reviewed head.
        last_head: String,
        /// `git diff <last_head>...<head>`, as text.
        diff: String,
    },
    /// The last reviewed head is not an ancestor of this head (a force-push or a rebase): the
    /// whole diff, said so in the summary.
    Rewritten {
        /// The last reviewed head.
        last_head: String,
    },
}

/// A review with nothing to review (docs/architecture.md, Lifecycle extras).
pub(crate) struct Skip {
    /// The diff's patch id; None for an empty diff.
    pub patch_id: Option<String>,
    /// Why, for the check run.
    pub summary: &'static str,
}

/// What the git phase reads for a review before the checkout.
pub(crate) struct DiffRead {
    /// `git diff base...head`, bytes.
    pub diff: Vec<u8>,
    /// Commit subjects the agent is shown, oldest first.
    pub commits: Vec<String>,
    /// The repository's review instructions at the merge base (REVIEW.md, else AGENTS.md),
    /// never the head's: the PR's own changes to them are code under review.
    pub instructions: Option<(String, String)>,
}

/// The diff of `base...head`, the commit subjects the agent is shown and the review
/// instructions at the merge base, held to `limits`; a tree over them fails with the settings
/// that raise them named.
pub(crate) fn read_diff(
    repo: &Repo,
    base: &str,
    head: &str,
    limits: Limits,
    stop: &AtomicBool,
) -> Result<DiffRead, GitWorkError> {
    let diff = repo.diff_bytes(base, head, limits, stop).map_err(refusal)?;
    let commits = repo.log(base, head, COMMITS_SHOWN).unwrap_or_default();
    let merge_base = repo.merge_base(base, head)?;
    // An instructions file over 1 MiB is not read at all; the agent keeps its first 64 KiB.
    let instructions =
        agent::repo_instructions(|name| repo.file_at(&merge_base, name, 1 << 20).ok().flatten());
    Ok(DiffRead {
        diff,
        commits,
        instructions,
    })
}

/// Checks `head` out in a new folder under `parent` for the agent's file tools, held to
/// `limits`. The folder is removed when the returned worktree drops.
pub(crate) fn check_out(
    repo: &Repo,
    head: &str,
    parent: &Path,
    limits: Limits,
    stop: &AtomicBool,
) -> Result<Worktree, GitWorkError> {
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    repo.checkout(head, Some(parent), limits, stop)
        .map_err(refusal)
}

/// Sync, diff, skip rules, checkout. An empty diff or an unchanged patch id is skipped before
/// any checkout.
pub(crate) async fn prepare(
    app: &AppState,
    review_id: i64,
    job: &PrJob,
    deadline: Instant,
) -> Result<Result<Checkout, Skip>, RunError> {
    let target =
        crate::forges::clone_target(&app.config, &job.repo, job.pr.number, &job.pr.base_ref)
            .map_err(RunError::from)?;
    let token = match app.forge.clone_token(&job.repo).await {
        Ok(t) => Some(t),
        Err(e) if target.url.starts_with("file://") => {
            tracing::debug!(error = %e, "no clone token; cloning from a local URL without one");
            None
        }
        Err(e) => return Err(RunError::from(e).context("clone token")),
    };
    // Fetch the PR head and the base branch into the cache (clone on first use).
    let crate::forges::CloneTarget { key, url, refspecs } = target;
    // Raised when this future is dropped or the deadline passes: the blocking git work polls it.
    let stop = StopOnDrop(Arc::new(AtomicBool::new(false)));
    let limits = app.config.tree_limits();
    let git = app.git.clone();
    let (base_sha, head_sha) = (job.pr.base_sha.clone(), job.pr.head_sha.clone());
    // A GitLab merge request hook names no base commit: the base branch as just fetched.
    let base_branch = format!("refs/heads/{}", job.pr.base_ref);
    let last_head = if job.full_diff {
        None
    } else {
        app.records
            .store
            .last_reviewed_head(&job.repo.full_name(), job.pr.number)
            .await?
            .filter(|last| *last != job.pr.head_sha)
    };
    // docs/review-service.md, "Finding outcomes": replies and reactions first, so a finding
    // dismissed now is neither rechecked nor raised again. An answer (docs/review-service.md,
    // "Answers in review threads") leaves the dismissal to its own verdict.
    if !matches!(job.trigger, Trigger::Reply | Trigger::Ask) {
        super::outcomes::read_dismissals(app, job).await;
    }
    let spot = |(f, posted_head): (review_domain::FindingRow, Option<String>)| {
        Some((f.id, f.path?, f.line?, posted_head))
    };
    let full_name = job.repo.full_name();
    let spots: Vec<FindingSpot> = (app.records.store)
        .open_findings(&full_name, job.pr.number)
        .await?
        .into_iter()
        .filter_map(spot)
        .collect();
    let dismissed_rows = (app.records.store)
        .dismissed_findings(&full_name, job.pr.number)
        .await?;
    let dismissed_spots: Vec<(FindingSpot, String)> = dismissed_rows
        .into_iter()
        .filter_map(|(f, head)| {
            let body = f.body.clone();
            Some((spot((f, head))?, body))
        })
        .collect();
    let (cloned, repo, read, range, (changed, dismissed)) =
        git_phase(deadline, &stop.0, move |stop| {
            let synced = git
                .sync(&key, &url, &refspecs, token.as_ref(), stop)
                .with_context(|| format!("fetching {url}"))?;
            let repo = Repo::open(&synced.path)?;
            let base_sha = if base_sha.is_empty() {
                repo.resolve(&base_branch)?
            } else {
                base_sha
            };
            let read = read_diff(&repo, &base_sha, &head_sha, limits, stop)?;
            let range = match last_head {
                None => Range::Whole,
                Some(last) => range_since(&repo, last, &head_sha, limits, stop)?,
            };
            let changed = changed_findings(&repo, &spots, &head_sha);
            let dismissed = dismissed_lines(&repo, &dismissed_spots);
            Ok((synced.cloned, repo, read, range, (changed, dismissed)))
        })
        .await?;
    let DiffRead {
        diff,
        commits,
        instructions,
    } = read;
    tracing::info!(review_id, cloned, diff_bytes = diff.len(), "diff ready");
    if diff.is_empty() {
        return Ok(Err(Skip {
            patch_id: None,
            summary: EMPTY_DIFF,
        }));
    }
    let patch_id = git_cache::patch_id_bytes(&diff).unwrap_or_default();
    if unchanged_since_last_review(app, job, &patch_id).await? {
        return Ok(Err(Skip {
            patch_id: Some(patch_id),
            summary: SAME_PATCH,
        }));
    }
    let worktrees = app.worktrees_dir();
    let head_sha = job.pr.head_sha.clone();
    let worktree = git_phase(deadline, &stop.0, move |stop| {
        check_out(&repo, &head_sha, &worktrees, limits, stop)
    })
    .await?;
    Ok(Ok(Checkout {
        diff: git_cache::diff_text(&diff),
        patch_id,
        commits,
        instructions,
        worktree,
        range,
        changed_findings: changed,
        dismissed,
    }))
}

/// The range of a re-review whose last reviewed head is `last`: the change since it when it is
/// an ancestor of `head`, else (a force-push or rebase, or a head the cache no longer has)
/// [`Range::Rewritten`].
fn range_since(
    repo: &Repo,
    last: String,
    head: &str,
    limits: Limits,
    stop: &AtomicBool,
) -> Result<Range, GitWorkError> {
    let ancestor = repo
        .resolve(&last)
        .and_then(|l| repo.merge_base(&l, head))
        .is_ok_and(|base| base == last);
    if !ancestor {
        return Ok(Range::Rewritten { last_head: last });
    }
    let diff = repo
        .diff_bytes(&last, head, limits, stop)
        .map_err(refusal)?;
    Ok(Range::Since {
        last_head: last,
        diff: git_cache::diff_text(&diff),
    })
}

/// The patch-id skip (docs/architecture.md, Lifecycle extras): a push (trigger synchronize)
/// whose diff has the same patch id as the PR's last completed review brings nothing new to
/// review (a rebase, or a merge of the base that changes no line of the PR). Every other
/// trigger is an explicit request and reviews again; an empty patch id never matches.
async fn unchanged_since_last_review(
    app: &AppState,
    job: &PrJob,
    patch_id: &str,
) -> anyhow::Result<bool> {
    if job.trigger != Trigger::Synchronize || patch_id.is_empty() {
        return Ok(false);
    }
    let last = app
        .records
        .store
        .last_completed_patch_id(&job.repo.full_name(), job.pr.number)
        .await?;
    Ok(last.as_deref() == Some(patch_id))
}

/// Raises its flag when dropped, so blocking git work stops when the review's future is dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs blocking git work with the review's stop flag; past `deadline` the flag is raised and
/// the review fails with the timeout error while the work winds down on its own.
async fn git_phase<T: Send + 'static>(
    deadline: Instant,
    stop: &Arc<AtomicBool>,
    work: impl FnOnce(&AtomicBool) -> Result<T, GitWorkError> + Send + 'static,
) -> Result<T, RunError> {
    let flag = stop.clone();
    let task = tokio::task::spawn_blocking(move || {
        let result = work(&flag);
        if let Err(e) = &result
            && flag.load(Ordering::Relaxed)
        {
            // The review has already ended (stop, supersede, shutdown, timeout).
            tracing::info!(error = %format!("{e:#}"), "git work stopped");
        }
        result
    });
    match tokio::time::timeout_at(deadline, task).await {
        Ok(Ok(done)) => Ok(done?),
        Ok(Err(e)) => Err(anyhow!("git task failed: {e}").into()),
        Err(_) => {
            stop.store(true, Ordering::Relaxed);
            Err(anyhow!(
                "the review ran longer than its total limit of {} s (in the git phase)",
                REVIEW_TIMEOUT.as_secs()
            )
            .into())
        }
    }
}

/// A tree over the limits, with the settings that raise them named.
fn refusal(e: GitError) -> GitWorkError {
    match e {
        GitError::TooLarge { .. } => GitWorkError::Refused(TreeRefused(e)),
        other => GitWorkError::Other(other.into()),
    }
}

/// Why the git work of a review failed: a tree over the limits (the limit working, never
/// retried) or anything else (a genuine failure).
#[derive(Debug, thiserror::Error)]
pub(crate) enum GitWorkError {
    /// A tree over REVIEW_MAX_TREE_ENTRIES or REVIEW_MAX_TREE_BYTES.
    #[error(transparent)]
    Refused(TreeRefused),
    /// Sync, open, diff or checkout failed.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl From<GitError> for GitWorkError {
    fn from(e: GitError) -> Self {
        refusal(e)
    }
}

impl From<GitWorkError> for RunError {
    fn from(e: GitWorkError) -> Self {
        match e {
            GitWorkError::Refused(refused) => RunError::new(refused.into(), FailureKind::Limit),
            GitWorkError::Other(other) => RunError::new(other, FailureKind::Genuine),
        }
    }
}

/// A review refused because a tree is over REVIEW_MAX_TREE_ENTRIES or REVIEW_MAX_TREE_BYTES:
/// the limit working, so never retried automatically.
#[derive(Debug, thiserror::Error)]
#[error("{0} (limits: REVIEW_MAX_TREE_ENTRIES, REVIEW_MAX_TREE_BYTES)")]
pub(crate) struct TreeRefused(GitError);
