//! The recheck of earlier findings (docs/review-service.md, "Finding outcomes"): at a re-review,
//! the open findings of the pull request whose code changed since they were posted go to the
//! verifier's conversation with [`crate::verify::RECHECK_PROTOCOL`], on the new head's
//! worktree. A finding the verifier rejects (the problem is gone) is resolved by the caller;
//! a confirmed or undecided one stays open.

use review_domain::{InlineComment, Severity, Side};
use serde::Serialize;

use crate::provider::Usage;
use crate::tools::ToolContext;
use crate::verify::{Verdict, Verifier};

/// An open finding whose code changed since it was posted, to recheck.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recheck {
    /// The finding's row id (FindingRow.id).
    pub finding_id: i64,
    /// Its file.
    pub path: String,
    /// The new-file line it was posted on, at the head it was posted for.
    pub line: i64,
    pub severity: Severity,
    /// Its text as posted (untrusted: the model wrote it from the PR's content).
    pub body: String,
    /// The lines around it as they read when it was posted; empty when unknown.
    pub posted_code: String,
}

/// What the recheck decided for one finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum RecheckVerdict {
    /// The problem is still in the code: the finding stays open.
    StillThere {
        /// The evidence the verifier gave.
        evidence: String,
    },
    /// The problem is gone: the finding is resolved.
    Gone {
        /// What changed, in the verifier's words.
        reason: String,
    },
    /// Not decided (no verdict, a failure, the budget): the finding stays open.
    Undecided {
        /// Why.
        reason: String,
    },
}

/// The verdict on one rechecked finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rechecked {
    /// FindingRow.id.
    pub finding_id: i64,
    #[serde(flatten)]
    pub verdict: RecheckVerdict,
}

/// Rechecks `items` with `verifier` (built with [`crate::verify::RECHECK_PROTOCOL`] and
/// [`crate::verify::RECHECK_INTRO`]) on `ctx`'s worktree; `over_budget` names the review
/// budget's limit once the recheck's usage reaches it. Returns the verdicts in order; `usage`
/// and `steps` accumulate the recheck's own calls.
pub(crate) async fn recheck(
    items: &[Recheck],
    verifier: Result<&Verifier<'_>, String>,
    ctx: &ToolContext<'_>,
    over_budget: &(dyn Fn(&Usage) -> Option<String> + Sync),
    usage: &mut Usage,
    steps: &mut u32,
) -> Vec<Rechecked> {
    let candidates: Vec<InlineComment> = items.iter().map(candidate).collect();
    let verdicts = match verifier {
        Err(e) => candidates
            .iter()
            .map(|_| Verdict::Unverified(format!("the recheck cannot run: {e}")))
            .collect(),
        Ok(verifier) => {
            verifier
                .verify(ctx, &candidates, over_budget, usage, steps)
                .await
        }
    };
    items
        .iter()
        .zip(verdicts)
        .map(|(r, v)| Rechecked {
            finding_id: r.finding_id,
            verdict: match v {
                Verdict::Confirmed(evidence) => RecheckVerdict::StillThere { evidence },
                Verdict::Rejected(reason) => RecheckVerdict::Gone { reason },
                Verdict::Unverified(reason) | Verdict::Stopped(reason) => {
                    RecheckVerdict::Undecided { reason }
                }
            },
        })
        .collect()
}

/// A finding as the verifier's batch message shows it: its text, then the code it was posted
/// on.
fn candidate(r: &Recheck) -> InlineComment {
    let mut body = r.body.trim().to_owned();
    if !r.posted_code.is_empty() {
        body.push_str(&format!(
            "\nWhen it was posted, the code there read:\n```\n{}\n```",
            r.posted_code.trim_end()
        ));
    }
    InlineComment {
        path: r.path.clone(),
        line: r.line,
        start_line: None,
        side: Side::Right,
        severity: r.severity,
        body,
    }
}

/// The line the posted summary gets about the recheck: how many earlier findings were
/// resolved and how many stay open; None when nothing was rechecked.
pub(crate) fn summary_note(done: &[Rechecked]) -> Option<String> {
    if done.is_empty() {
        return None;
    }
    let gone = done
        .iter()
        .filter(|r| matches!(r.verdict, RecheckVerdict::Gone { .. }))
        .count();
    Some(format!(
        "Earlier findings whose code changed: {} rechecked, {gone} resolved (the problem is gone at this head), {} still open.",
        done.len(),
        done.len() - gone
    ))
}
