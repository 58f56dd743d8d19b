//! The agent stage of a review: gather what the run is told (model, focus, earlier findings,
//! skills, budget, provider keys) and run the agent on the prepared checkout with the two
//! posting tools. Which model and which focus follow the cascades of
//! [`review_domain::model_cascade`] and [`review_domain::review_focus`].

use super::RunError;
use super::poster::ForgePoster;
use super::prepare::{Checkout, Range};
use crate::job::PrJob;
use crate::run_settings::{
    provider_settings, review_budget, review_noise, review_passes, review_verifier,
};
use crate::state::AppState;
use agent::{CancellationToken, ReviewJob, ReviewOutcome};
use review_domain::{ModelSpec, ReviewRow, model_cascade, review_focus};
use tokio::time::Instant;

/// Runs the agent on `checkout` until it ends, is cancelled, or `deadline` passes. The
/// checkout is removed when this returns, on every path.
pub(super) async fn run_agent(
    app: &AppState,
    review: &ReviewRow,
    job: &PrJob,
    session_id: &str,
    checkout: Checkout,
    cancel: CancellationToken,
    deadline: Instant,
) -> Result<ReviewOutcome, RunError> {
    let Checkout {
        diff,
        commits,
        instructions,
        worktree,
        range,
        changed_findings,
        dismissed,
        ..
    } = checkout;
    let full_name = job.repo.full_name();
    let repo_row = app.records.repo(&full_name).await?;
    let settings = app.records.store.settings().await?;
    let model: ModelSpec = model_cascade(
        repo_row.as_ref().and_then(|r| r.model.as_deref()),
        None,
        settings.get("agent_model").map(String::as_str),
        &app.config.agent_model,
    )
    .parse()?;
    let focus = review_focus(
        repo_row.as_ref().and_then(|r| r.prompt.as_deref()),
        settings.get("default_prompt").map(String::as_str),
    );
    let open: Vec<_> = app
        .records
        .store
        .open_findings(&full_name, job.pr.number)
        .await?
        .into_iter()
        .map(|(f, _)| f)
        .collect();
    // Re-review: the agent is told what earlier reviews of this PR already posted.
    let earlier_findings = app
        .records
        .store
        .findings_for_pr(&full_name, job.pr.number)
        .await?;

    let mut agent_job = ReviewJob::new(session_id, worktree.path(), diff, model, job.pr.clone());
    agent_job.commits = commits;
    agent_job.total_timeout = deadline.saturating_duration_since(Instant::now());
    agent_job.focus = focus;
    agent_job.approve_allowed = last_event_requested_changes(&earlier_findings);
    agent_job.earlier_findings = earlier_findings;
    agent_job.posted_fingerprints = app
        .records
        .store
        .posted_fingerprints(&full_name, job.pr.number)
        .await?;
    agent_job.recheck = super::outcomes::rechecks(&open, &changed_findings);
    agent_job.dismissed = dismissed;
    agent_job.instructions = instructions;
    agent_job.skills =
        crate::skills::enabled_skills(&app.records.store, &app.config.data_dir).await;
    agent_job.budget = review_budget(&app.config, &settings);
    (agent_job.min_severity, agent_job.quiet) = review_noise(&settings);
    agent_job.verify = review_verifier(&settings, &agent_job.model);
    agent_job.passes = review_passes(&settings);
    (agent_job.since, agent_job.range_note) = match range {
        Range::Whole => (None, None),
        Range::Since { last_head, diff } => {
            let note = format!(
                "Reviewed the changes since `{}`, the head of the last review; the whole diff was in view.",
                short(&last_head)
            );
            let since = agent::Since {
                head_sha: last_head,
                diff,
            };
            (Some(since), Some(note))
        }
        Range::Rewritten { last_head } => (
            None,
            Some(format!(
                "The last reviewed head `{}` is not an ancestor of this head (a force-push or a rebase): reviewed the whole diff.",
                short(&last_head)
            )),
        ),
    };
    if let Some(own) = repo_row.as_ref().and_then(|r| r.min_severity) {
        agent_job.min_severity = own; // the repository's own wins over the global setting
    }

    let providers = provider_settings(&app.config, &settings);
    let poster = ForgePoster {
        app: app.clone(),
        review_id: review.id,
        repo: job.repo.clone(),
        number: job.pr.number,
        head_sha: job.pr.head_sha.clone(),
    };
    let outcome = agent::run_review(
        agent_job,
        &providers,
        &app.catalog,
        &poster,
        &app.transcripts,
        cancel,
    )
    .await?;
    drop(worktree);
    super::outcomes::resolve(app, job, &outcome.rechecked).await;
    Ok(outcome)
}

/// Whether the last review this App posted on the PR requested changes: only then may the
/// model APPROVE, to clear it. Findings come from the database, so a review
/// another deployment or a person posted never counts.
fn last_event_requested_changes(earlier: &[review_domain::FindingRow]) -> bool {
    earlier
        .iter()
        .filter(|f| f.kind == review_domain::FindingKind::Summary)
        .max_by_key(|f| f.id)
        .and_then(|f| f.event)
        == Some(review_domain::ReviewEvent::RequestChanges)
}

/// The first 7 characters of a SHA, as git shows it.
fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}
