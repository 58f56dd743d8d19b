//! The subcommands besides `serve`: `session export` prints a transcript, and `review` runs the
//! same agent, tools and checks on a local repository with no forge, printing the result as
//! markdown (how a newcomer with only an API key tries the product in one command).

use crate::config::{Config, ReviewArgs};
use crate::review::prepare::{check_out, read_diff};
use crate::run_settings::{provider_settings, review_budget, review_verifier};
use agent::{CancellationToken, Catalog, ReviewJob, ReviewPoster, TranscriptStore};
use anyhow::Context;
use async_trait::async_trait;
use git_cache::Repo;
use review_domain::{ModelSpec, PostedReview, PullRequest, ReviewSubmission, model_cascade};
use std::collections::BTreeMap;
use std::fmt::Write as _;
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
}

/// `review-server review --repo PATH --base REV --head REV [--model SPEC]`.
///
/// The head is checked out into the system temp dir (TMPDIR) for the agent's file tools, held
/// to REVIEW_MAX_TREE_ENTRIES and REVIEW_MAX_TREE_BYTES. SIGINT or SIGTERM at any point stops
/// the git work or the agent, removes the checkout and ends with an error (issue 16 item 6).
pub async fn review_local(config: &Config, args: &ReviewArgs) -> anyhow::Result<()> {
    let interrupted = interrupt_signal()?;
    tokio::pin!(interrupted);
    let path = args.repo.clone();
    let (base, head) = (args.base.clone(), args.head.clone());
    let range = format!("{}...{}", args.base, args.head);
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
            anyhow::bail!("{range} has no changes to review");
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
        model_cascade(args.model.as_deref(), None, None, &config.agent_model).parse()?;
    let pr = PullRequest {
        number: 0,
        title: commits
            .last()
            .cloned()
            .unwrap_or_else(|| format!("{}...{}", args.base, args.head)),
        body: None,
        author: None,
        base_ref: args.base.clone(),
        head_ref: args.head.clone(),
        base_sha,
        head_sha,
    };
    let session_id = format!("local-{}", uuid::Uuid::new_v4().simple());
    let mut job = ReviewJob::new(&session_id, worktree.path(), diff.clone(), model, pr);
    job.commits = commits;
    job.instructions = instructions;
    job.focus = args.prompt.clone().unwrap_or_default();
    // No database here: the environment alone, as the server does with no stored settings.
    let no_settings = BTreeMap::new();
    job.budget = review_budget(config, &no_settings);
    job.verify = review_verifier(&no_settings, &job.model);
    let providers = provider_settings(config, &no_settings);
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
    print!("{}", render_markdown(&poster, &outcome, &diff, &session_id));
    Ok(())
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed before this returns, so a signal
/// arriving at any later point is seen (and no longer kills the process outright).
fn interrupt_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
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
