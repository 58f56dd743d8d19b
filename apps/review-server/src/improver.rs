//! The improver run behind `POST /api/repos/:owner/:name/improve` (docs/review-service.md §4, Improve):
//! queued after the 202, it may decline (logged only), else it records a review row with
//! pr_number 0, reads the people's replies to the reviewer's inline comments of the reviews
//! completed since its last run, asks the model for a new REVIEW.md
//! ([`agent::improve::run_improver`]) and opens a pull request with it.
//!
//! Decisions where the spec is open (README, API):
//! - declines when a run of the repo is pending or running, when the last finished run is less
//!   than a day old (docs/background.md, "The original services": at most once a day per repo; failed runs do not count), or when
//!   no PR review completed since the last finished run;
//! - the row's trigger is null (the spec's trigger words name PR events) and it is never retried
//!   automatically;
//! - no human reply at all: the row is `skipped` without a model call; the model answering
//!   NO_CHANGES: `completed` with its cost and no PR; a PR: `completed`, and a `comment`
//!   finding on the row links it.

use crate::records::{now, now_ms};
use crate::run_settings::provider_settings;
use crate::state::AppState;
use agent::improve::{ImproveJob, Proposal, Reply, Thread, run_improver};
use anyhow::Context;
use forge::{Contents, FileChangePull, ForgeError, RepoRead, RepoRef};
use review_domain::{FindingKind, ModelSpec, NewFinding, RepoRow, ReviewRow, model_cascade};
use review_store::{Completion, NewReview};
use std::collections::BTreeMap;

/// Shortest time between two finished runs of one repo: a day, in seconds.
pub(crate) const MIN_INTERVAL_SECS: i64 = 24 * 3600;
/// Most reviews one run reads.
const MAX_REVIEWS: i64 = 200;
/// The file the improver maintains.
pub(crate) const REVIEW_MD: &str = "REVIEW.md";

/// Serialises the decide-then-insert step so two requests cannot both start a run.
static DECIDING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Queue an improver run of `repo`; returns at once.
pub(crate) fn spawn(app: &AppState, repo: RepoRow) {
    let task_app = app.clone();
    app.tasks.spawn(async move {
        if let Err(e) = run(&task_app, &repo).await {
            tracing::error!(repo = %repo.full_name, error = format!("{e:#}"), "improver run failed to record");
        }
    });
}

/// Why a run does not happen.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decline {
    Active,
    TooSoon {
        last_run_at: i64,
    },
    NoNewReviews,
    /// The repository's monthly budget is reached (docs/review-service.md, "Monthly budget").
    OverBudget(String),
}

impl std::fmt::Display for Decline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Decline::Active => write!(f, "an improver run of this repo is already in progress"),
            Decline::TooSoon { last_run_at } => write!(
                f,
                "too soon: the last run was at {last_run_at}; runs are at most daily"
            ),
            Decline::NoNewReviews => write!(f, "no new completed reviews since the last run"),
            Decline::OverBudget(reason) => write!(f, "{reason}"),
        }
    }
}

/// The run's decision: the reviews to learn from, or why not.
async fn decide(app: &AppState, repo: &str) -> anyhow::Result<Result<Vec<ReviewRow>, Decline>> {
    let store = &app.records.store;
    if store.improver_active(repo).await? {
        return Ok(Err(Decline::Active));
    }
    let last = store.last_finished_improver_run(repo).await?;
    if let Some(last) = &last
        && now().0 - last.created_at < MIN_INTERVAL_SECS
    {
        return Ok(Err(Decline::TooSoon {
            last_run_at: last.created_at,
        }));
    }
    let since = last.map_or(0, |l| l.created_at);
    let reviews = store
        .completed_reviews_since(repo, since, MAX_REVIEWS)
        .await?;
    if reviews.is_empty() {
        return Ok(Err(Decline::NoNewReviews));
    }
    if let Some(reached) = crate::review::budget::reached(app, repo, now()).await? {
        return Ok(Err(Decline::OverBudget(reached.reason(repo))));
    }
    Ok(Ok(reviews))
}

async fn run(app: &AppState, repo: &RepoRow) -> anyhow::Result<()> {
    let guard = DECIDING.lock().await;
    let reviews = match decide(app, &repo.full_name).await? {
        Ok(reviews) => reviews,
        Err(reason) => {
            tracing::info!(repo = %repo.full_name, %reason, "improver declined");
            return Ok(());
        }
    };
    // The run holds a lease like a queued review, so a replica that dies mid-run has it
    // failed as interrupted (docs/architecture.md, "Many replicas").
    let lease_ms =
        i64::try_from(app.config.lease_secs.saturating_mul(1000)).unwrap_or(i64::MAX / 2);
    let new = NewReview {
        repo_full_name: repo.full_name.clone(),
        pr_number: 0,
        title: Some(format!("Improve {REVIEW_MD}")),
        trigger: None,
        attempt: 0,
        head_sha: None,
    };
    let row = app
        .records
        .create_leased_review(&new, &app.replica, now_ms().plus_millis(lease_ms))
        .await?;
    drop(guard);
    let result = run_leased(app, repo, &row, &reviews).await;
    app.records.release(row.id).await?;
    result
}

async fn run_leased(
    app: &AppState,
    repo: &RepoRow,
    row: &ReviewRow,
    reviews: &[ReviewRow],
) -> anyhow::Result<()> {
    let session_id = format!("improve-{}", row.id);
    if app.records.start(row.id, &session_id).await?.is_none() {
        return Ok(()); // stopped before it started
    }
    let records = &app.records;
    match improve(app, repo, row, &session_id, reviews).await {
        Ok(Outcome::NothingToLearn) => {
            tracing::info!(repo = %repo.full_name, "improver: no human replies to learn from");
            records.skip(row.id, None).await?;
        }
        Ok(Outcome::Done { completion, pull }) => {
            if let Some((number, url)) = &pull {
                tracing::info!(repo = %repo.full_name, pr = number, %url, "improver opened a pull request");
                let finding = NewFinding {
                    kind: FindingKind::Comment,
                    body: format!("Opened pull request #{number} updating {REVIEW_MD}: {url}"),
                    event: None,
                    path: Some(REVIEW_MD.to_owned()),
                    line: None,
                    severity: None,
                    github_review_id: None,
                    github_comment_id: None,
                    fingerprint: None,
                };
                if let Err(e) = app.records.record_findings(row.id, &[finding]).await {
                    tracing::warn!(error = %e, "recording the improver's pull request failed");
                }
            } else {
                tracing::info!(repo = %repo.full_name, "improver: nothing durable to learn");
            }
            records.complete(row.id, &completion).await?;
        }
        Err(e) => {
            let message = format!("{e:#}");
            tracing::warn!(repo = %repo.full_name, error = %message, "improver run failed");
            records.fail(row.id, &message, None).await?;
        }
    }
    Ok(())
}

enum Outcome {
    /// Nobody replied: no model call.
    NothingToLearn,
    /// The model ran; `pull` is the opened PR (number, URL), None for NO_CHANGES.
    Done {
        completion: Completion,
        pull: Option<(i64, String)>,
    },
}

async fn improve(
    app: &AppState,
    repo: &RepoRow,
    row: &ReviewRow,
    session_id: &str,
    reviews: &[ReviewRow],
) -> anyhow::Result<Outcome> {
    let (owner, name) = repo
        .full_name
        .rsplit_once('/')
        .context("repo name without a slash")?;
    let repo_ref = RepoRef {
        installation_id: repo.installation_id,
        owner: owner.to_owned(),
        name: name.to_owned(),
    };
    let threads = threads(app, &repo_ref, reviews).await?;
    if threads.is_empty() {
        return Ok(Outcome::NothingToLearn);
    }
    let base = default_branch_head(app, &repo_ref).await?;
    let current = current_review_md(app, &base).await?;
    let settings = app.records.store.settings().await?;
    let model: ModelSpec = model_cascade(
        repo.model.as_deref(),
        settings.get("improver_model").map(String::as_str),
        settings.get("agent_model").map(String::as_str),
        &app.config.agent_model,
    )
    .parse()?;
    let providers = provider_settings(&app.config, &settings);
    let job = ImproveJob {
        session_id: session_id.to_owned(),
        model,
        current,
        threads,
    };
    let outcome = run_improver(
        &providers,
        &app.catalog,
        &app.transcripts,
        &job,
        &app.shutdown,
    )
    .await?;
    let completion = Completion {
        cost: outcome.cost,
        tokens: outcome.usage.total(),
        model: outcome.model.clone(),
        patch_id: None,
    };
    let Proposal::Rewrite(text) = outcome.proposal else {
        return Ok(Outcome::Done {
            completion,
            pull: None,
        });
    };
    let threads = &job.threads;
    let prs: Vec<String> = threads
        .iter()
        .map(|t| format!("#{}", t.pr))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let change = FileChangePull {
        base: base.branch,
        base_sha: base.sha,
        branch: format!("review-server/improve-review-md-{}", row.id),
        path: REVIEW_MD.to_owned(),
        content: text.into_bytes(),
        commit_message: format!("Update {REVIEW_MD} from review discussions"),
        title: format!("Update {REVIEW_MD} from recent review discussions"),
        body: format!(
            "The reviewer's improver read {} discussion thread(s) on {} and rewrote {REVIEW_MD} \
             with what the replies teach. Edit or close this pull request as you see fit.",
            threads.len(),
            prs.join(", ")
        ),
    };
    let pull = app.forge.open_file_pull(&repo_ref, &change).await?;
    Ok(Outcome::Done {
        completion,
        pull: Some((pull.number, pull.html_url)),
    })
}

/// The reviewer's inline comments (findings with a forge comment id) of `reviews` that people
/// with write access replied to, with those replies; bots' replies and replies by anyone
/// without write access (author_association other than OWNER, MEMBER or COLLABORATOR) are
/// left out, so a PR's author cannot teach the reviewer what to overlook.
async fn threads(
    app: &AppState,
    repo: &RepoRef,
    reviews: &[ReviewRow],
) -> anyhow::Result<Vec<Thread>> {
    let mut by_pr: BTreeMap<i64, Vec<review_domain::FindingRow>> = BTreeMap::new();
    for review in reviews {
        let findings = app.records.store.findings_for_review(review.id).await?;
        by_pr.entry(review.pr_number).or_default().extend(
            findings
                .into_iter()
                .filter(|f| f.kind == FindingKind::Inline && f.github_comment_id.is_some()),
        );
    }
    let mut threads = Vec::new();
    for (pr, findings) in by_pr {
        if findings.is_empty() {
            continue;
        }
        let comments = app.forge.pull_review_comments(repo, pr).await?;
        for finding in findings {
            let replies: Vec<Reply> = comments
                .iter()
                .filter(|c| c.in_reply_to_id == finding.github_comment_id && c.by_maintainer())
                .map(|c| Reply {
                    author: c.user.as_ref().map(|u| u.login.clone()).unwrap_or_default(),
                    body: c.body.clone(),
                })
                .collect();
            if !replies.is_empty() {
                threads.push(Thread {
                    pr,
                    path: finding.path.clone(),
                    comment: finding.body.clone(),
                    replies,
                });
            }
        }
    }
    Ok(threads)
}

/// The default branch and the commit it points at: REVIEW.md is read there and the PR's branch
/// starts there.
struct BaseHead {
    read: RepoRead,
    branch: String,
    sha: String,
}

async fn default_branch_head(app: &AppState, repo: &RepoRef) -> anyhow::Result<BaseHead> {
    let branch = app.forge.default_branch(repo).await?;
    let read = RepoRead {
        owner: repo.owner.clone(),
        name: repo.name.clone(),
        installation_id: Some(repo.installation_id),
    };
    let sha = app.forge.resolve_commit(&read, &branch).await?;
    Ok(BaseHead { read, branch, sha })
}

/// REVIEW.md at `base`, None when it does not exist.
async fn current_review_md(app: &AppState, base: &BaseHead) -> anyhow::Result<Option<String>> {
    match app.forge.contents(&base.read, REVIEW_MD, &base.sha).await {
        Ok(Contents::File { content, .. }) => {
            Ok(Some(String::from_utf8_lossy(&content).into_owned()))
        }
        Ok(_) | Err(ForgeError::Api { status: 404, .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
