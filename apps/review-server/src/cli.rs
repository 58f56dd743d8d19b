//! The subcommands besides `serve`: `session export` prints a transcript, and `review` runs the
//! same agent, tools and checks on a local repository with no forge, printing the result as
//! markdown (how a newcomer with only an API key tries the product in one command).

use crate::config::{Config, ReviewArgs, ReviewChoices};
use crate::review::prepare::{check_out, read_diff};
use crate::run_settings::{
    provider_settings, review_budget, review_noise, review_passes, review_verifier,
};
use agent::{CancellationToken, Catalog, ReviewJob, ReviewPoster, TranscriptStore};
use anyhow::Context;
use async_trait::async_trait;
use git_cache::Repo;
use review_domain::{
    InlineComment, ModelSpec, PostedReview, PullRequest, ReviewSubmission, model_cascade,
};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// `review-server session export <id>`: the transcript JSON on stdout, from DATA_DIR/sessions,
/// else from the database (a session another replica ran; docs/architecture.md, "Many
/// replicas").
pub async fn session_export(config: &Config, session_id: &str) -> anyhow::Result<()> {
    let transcript = match TranscriptStore::new(config.data_dir.join("sessions")).load(session_id) {
        Ok(t) => t,
        Err(agent::AgentError::SessionNotFound(id)) => {
            let store = review_store::Store::open(&config.database_url()).await?;
            match store.transcript(&id).await? {
                Some(doc) => serde_json::from_str(&doc)?,
                None => return Err(agent::AgentError::SessionNotFound(id).into()),
            }
        }
        Err(e) => return Err(e.into()),
    };
    println!("{}", serde_json::to_string_pretty(&transcript)?);
    Ok(())
}

/// `review-server db copy --to URL`: copies the database of DATABASE_URL into the empty
/// database at `to` (schema created by its migrations) and prints the rows per table.
pub async fn db_copy(config: &Config, to: &str) -> anyhow::Result<()> {
    let source = review_store::Store::open(&config.database_url()).await?;
    let target = review_store::Store::open(to).await?;
    let report = source.copy_into(&target).await?;
    for (table, rows) in report {
        println!("{table}: {rows} rows");
    }
    Ok(())
}

/// Collects what the agent posts instead of sending it to a forge.
#[derive(Default)]
pub struct CollectingPoster {
    pub comments: Mutex<Vec<String>>,
    pub reviews: Mutex<Vec<ReviewSubmission>>,
    /// Candidates verification dropped, each with the verifier's reason.
    pub dropped: Mutex<Vec<(InlineComment, String)>>,
}

#[async_trait]
impl ReviewPoster for CollectingPoster {
    async fn post_comment(&self, body: &str) -> Result<Option<i64>, String> {
        if let Ok(mut c) = self.comments.lock() {
            c.push(body.to_owned());
        }
        Ok(None)
    }

    async fn post_review(&self, review: &ReviewSubmission) -> Result<PostedReview, String> {
        if let Ok(mut r) = self.reviews.lock() {
            r.push(review.clone());
        }
        Ok(PostedReview {
            review_id: None,
            comment_ids: vec![None; review.comments.len()],
        })
    }

    async fn record_dropped(&self, dropped: &[(InlineComment, String)]) -> Result<(), String> {
        if let Ok(mut d) = self.dropped.lock() {
            d.extend(dropped.iter().cloned());
        }
        Ok(())
    }
}

impl CollectingPoster {
    /// The inline comments of every posted review, in order.
    pub fn inline_comments(&self) -> Vec<InlineComment> {
        self.reviews
            .lock()
            .map(|r| r.iter().flat_map(|r| r.comments.clone()).collect())
            .unwrap_or_default()
    }
}

/// The settings a local run uses, as the server's settings table would hold them: the
/// choices given as flags, nothing else (no database; the environment fills the rest as it
/// does for the server).
pub fn chosen_settings(choices: &ReviewChoices) -> BTreeMap<String, String> {
    let mut stored = BTreeMap::new();
    let mut set = |key: &str, value: Option<String>| {
        if let Some(v) = value {
            stored.insert(key.to_owned(), v);
        }
    };
    set("review_passes", choices.passes.map(|n| n.to_string()));
    set("review_verify", choices.verify.map(|v| v.to_string()));
    set("verify_model", choices.verify_model.clone());
    set("review_min_severity", choices.min_severity.clone());
    stored
}

/// A range of a local repository to review.
#[derive(Debug, Clone)]
pub struct LocalRange {
    /// A git repository, working copy or bare.
    pub repo: PathBuf,
    /// Base revision; the diff is `git diff base...head`.
    pub base: String,
    /// Head revision.
    pub head: String,
    /// The pull request's title; default: the last commit's subject.
    pub title: Option<String>,
}

/// What one local review posted and spent.
pub struct LocalReview {
    /// What would have reached the forge, and what verification dropped.
    pub poster: CollectingPoster,
    /// Tokens, cost and counts of the run.
    pub outcome: agent::ReviewOutcome,
    /// The diff reviewed (`git diff base...head`).
    pub diff: String,
    /// The transcript's session id (under DATA_DIR/sessions).
    pub session_id: String,
}

/// Reviews `range` with the same agent, tools, checks, verification and budget as the server,
/// nothing posted: the head is checked out into the system temp dir (TMPDIR) for the agent's
/// file tools, held to REVIEW_MAX_TREE_ENTRIES and REVIEW_MAX_TREE_BYTES. When `interrupted`
/// resolves, the git work or the agent stops, the checkout is removed and this ends with an
/// error. Errors: not a repository, an unknown revision, an empty diff, the tree limits, the
/// model's errors.
pub async fn review_range(
    config: &Config,
    range: &LocalRange,
    choices: &ReviewChoices,
    mut interrupted: std::pin::Pin<&mut (impl std::future::Future<Output = ()> + ?Sized)>,
) -> anyhow::Result<LocalReview> {
    let path = range.repo.clone();
    let (base, head) = (range.base.clone(), range.head.clone());
    let shown = format!("{}...{}", range.base, range.head);
    let worktrees = std::env::temp_dir();
    let limits = config.tree_limits();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let mut prepare = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let repo = Repo::open(&path)
            .with_context(|| format!("{} is not a git repository", path.display()))?;
        let base_sha = repo.resolve(&base)?;
        let head_sha = repo.resolve(&head)?;
        let crate::review::prepare::DiffRead {
            diff,
            commits,
            instructions,
        } = read_diff(&repo, &base_sha, &head_sha, limits, &flag)?;
        if diff.is_empty() {
            anyhow::bail!("{shown} has no changes to review");
        }
        let worktree = check_out(&repo, &head_sha, &worktrees, limits, &flag)?;
        Ok((
            base_sha,
            head_sha,
            git_cache::diff_text(&diff),
            commits,
            instructions,
            worktree,
        ))
    });
    let (base_sha, head_sha, diff, commits, instructions, worktree) = tokio::select! {
        prepared = &mut prepare => prepared??,
        _ = &mut interrupted => {
            stop.store(true, Ordering::Relaxed);
            // The git work stops at its next check and removes any partial checkout.
            let _ = prepare.await;
            anyhow::bail!("interrupted by a signal; nothing is left behind");
        }
    };
    // `--model` stands where a repo's override would; without it, AGENT_MODEL.
    let model: ModelSpec =
        model_cascade(choices.model.as_deref(), None, None, &config.agent_model).parse()?;
    let title = range.title.clone().unwrap_or_else(|| {
        commits
            .last()
            .cloned()
            .unwrap_or_else(|| format!("{}...{}", range.base, range.head))
    });
    let pr = PullRequest {
        number: 0,
        title,
        body: None,
        author: None,
        base_ref: range.base.clone(),
        head_ref: range.head.clone(),
        base_sha,
        head_sha,
    };
    let session_id = format!("local-{}", uuid::Uuid::new_v4().simple());
    let mut job = ReviewJob::new(&session_id, worktree.path(), diff.clone(), model, pr);
    job.commits = commits;
    job.instructions = instructions;
    job.focus = choices.prompt.clone().unwrap_or_default();
    // No database here: the flags stand for the settings table, the environment for the rest.
    let settings = chosen_settings(choices);
    job.budget = review_budget(config, &settings);
    job.verify = review_verifier(&settings, &job.model);
    job.passes = review_passes(&settings);
    (job.min_severity, job.quiet) = review_noise(&settings);
    let providers = provider_settings(config, &settings);
    let poster = CollectingPoster::default();
    let transcripts = TranscriptStore::new(config.data_dir.join("sessions"));
    let catalog = Catalog::bundled();
    let review = agent::run_review(
        job,
        &providers,
        &catalog,
        &poster,
        &transcripts,
        CancellationToken::new(),
    );
    let outcome = tokio::select! {
        outcome = review => outcome?,
        _ = &mut interrupted => {
            drop(worktree);
            anyhow::bail!("interrupted by a signal; the checkout was removed");
        }
    };
    drop(worktree);
    Ok(LocalReview {
        poster,
        outcome,
        diff,
        session_id,
    })
}

/// `review-server review --repo PATH --base REV --head REV [choices]`: [`review_range`], then
/// the result as markdown on stdout. SIGINT or SIGTERM at any point stops the git work or the
/// agent, removes the checkout and ends with an error.
pub async fn review_local(config: &Config, args: &ReviewArgs) -> anyhow::Result<()> {
    let interrupted = interrupt_signal()?;
    tokio::pin!(interrupted);
    let range = LocalRange {
        repo: args.repo.clone(),
        base: args.base.clone(),
        head: args.head.clone(),
        title: None,
    };
    let done = review_range(config, &range, &args.choices, interrupted.as_mut()).await?;
    print!(
        "{}",
        render_markdown(&done.poster, &done.outcome, &done.diff, &done.session_id)
    );
    Ok(())
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed before this returns, so a signal
/// arriving at any later point is seen (and no longer kills the process outright).
pub fn interrupt_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
        Ok(async move {
            tokio::select! {
                _ = term.recv() => {},
                _ = int.recv() => {},
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}

/// The local review as markdown: summary, inline comments (file:line, severity, body),
/// comments, then tokens and cost.
pub fn render_markdown(
    poster: &CollectingPoster,
    outcome: &agent::ReviewOutcome,
    diff: &str,
    session_id: &str,
) -> String {
    let mut out = String::new();
    let reviews = poster.reviews.lock().map(|r| r.clone()).unwrap_or_default();
    let comments = poster
        .comments
        .lock()
        .map(|c| c.clone())
        .unwrap_or_default();
    for review in &reviews {
        let _ = writeln!(
            out,
            "# Review ({})\n\n{}\n",
            review.event,
            review.summary.trim()
        );
        if !review.comments.is_empty() {
            let _ = writeln!(out, "## Inline comments\n");
            for c in &review.comments {
                let _ = writeln!(
                    out,
                    "- **{}:{}** ({}) {}",
                    c.path,
                    c.line,
                    c.severity,
                    c.body.trim().replace('\n', "\n  ")
                );
            }
            out.push('\n');
        }
    }
    for c in &comments {
        let _ = writeln!(out, "# Comment\n\n{}\n", c.trim());
    }
    let files = diff
        .lines()
        .filter(|l| l.starts_with("diff --git "))
        .count();
    let _ = writeln!(
        out,
        "---\nModel {} · {} files in the diff · {} tokens ({} in, {} out, {} cache read, {} cache write) · ${:.4} · session {}",
        outcome.model,
        files,
        outcome.tokens,
        outcome.input_tokens,
        outcome.output_tokens,
        outcome.cache_read_tokens,
        outcome.cache_write_tokens,
        outcome.cost,
        session_id
    );
    out
}
