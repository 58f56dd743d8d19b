//! The two posting tools of docs/review-service.md §1 step 6: post_comment and post_review. They call a
//! [`ReviewPoster`] supplied by the caller (the app posts to the forge and records findings).
//! post_review first checks every inline comment against the diff's hunks and folds those
//! outside into the review body, because GitHub rejects a whole review (422) when one comment
//! is off the diff (docs/background.md, "What users of PR reviewers complain about").
//! An inline comment may carry a committable `suggestion` (docs/review-service.md,
//! "Suggestions"): checked against the head's lines and rendered as GitHub's suggestion block,
//! or left out with a note when it cannot apply, never a 422 for the whole review.

use review_domain::{InlineComment, PostedReview, ReviewEvent, ReviewSubmission, Severity, Side};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ToolContext, ToolError, ToolHandler, parse_args};
use crate::provider::ToolSpec;

/// Where the posting tools post. Implemented by the app (GitHub plus findings write-back) and
/// by test doubles.
#[async_trait::async_trait]
pub trait ReviewPoster: Send + Sync {
    /// Post a markdown comment on the PR; returns the forge comment id if known.
    async fn post_comment(&self, body: &str) -> Result<Option<i64>, String>;
    /// Post a formal review (already checked against the hunks). Err(message) goes back to the
    /// model as a tool error.
    async fn post_review(&self, review: &ReviewSubmission) -> Result<PostedReview, String>;
    /// Record the inline candidates verification dropped, each with the verifier's reason
    /// (docs/review-service.md, "Verification before posting"); they are never posted. The
    /// default records nothing.
    async fn record_dropped(&self, _dropped: &[(InlineComment, String)]) -> Result<(), String> {
        Ok(())
    }
}

pub(super) struct PostComment;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommentArgs {
    body: String,
}

#[async_trait::async_trait]
impl ToolHandler for PostComment {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "post_comment".into(),
            description: "Post a markdown comment on the pull request (not attached to lines)."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"body": {"type": "string", "description": "Markdown text"}},
                "required": ["body"],
                "additionalProperties": false
            }),
        }
    }

    async fn handle(&self, ctx: &ToolContext<'_>, args: Value) -> Result<String, ToolError> {
        let args: CommentArgs = parse_args("post_comment", args)?;
        if args.body.trim().is_empty() {
            return Err("body is empty".into());
        }
        let id = ctx
            .poster
            .post_comment(&args.body)
            .await
            .map_err(|e| format!("posting the comment failed: {e}"))?;
        ctx.update(|s| s.comments += 1);
        Ok(match id {
            Some(id) => format!("comment posted (id {id})"),
            None => "comment posted".into(),
        })
    }
}

pub(super) struct PostReview;

/// post_review's comment, accepting the original service's `startLine` as well.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommentIn {
    path: String,
    line: i64,
    #[serde(default, alias = "startLine")]
    start_line: Option<i64>,
    #[serde(default)]
    side: Option<Side>,
    severity: Severity,
    body: String,
    #[serde(default)]
    suggestion: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReviewArgs {
    summary: String,
    event: ReviewEvent,
    #[serde(default)]
    comments: Vec<CommentIn>,
}

#[async_trait::async_trait]
impl ToolHandler for PostReview {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "post_review".into(),
            description: "Post the formal review: a summary, the event, and inline comments on lines of the diff. `line` (and `start_line` for a range in the same hunk) are file line numbers on `side`: RIGHT (default) = the new file, for added or context lines; LEFT = the old file, for removed lines. Comments outside the diff are moved into the summary. `suggestion` (optional) is the exact replacement text for lines `start_line`..`line` (or `line` alone) of the new file: GitHub shows it as a one-click committable change; give one only for a small fix you are certain of, covering whole lines with their indentation. Call it once.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "summary": {"type": "string", "description": "Markdown summary ending with the verdict line `Blocking: N · Nits: M · Questions: K`"},
                    "event": {"type": "string", "enum": ["COMMENT", "APPROVE", "REQUEST_CHANGES"]},
                    "comments": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "path": {"type": "string"},
                                "line": {"type": "integer", "minimum": 1},
                                "start_line": {"type": "integer", "minimum": 1},
                                "side": {"type": "string", "enum": ["RIGHT", "LEFT"], "default": "RIGHT"},
                                "severity": {"type": "string", "enum": ["blocking", "nit", "question"]},
                                "body": {"type": "string"},
                                "suggestion": {"type": "string", "description": "replacement text for the commented lines on side RIGHT, without a code fence"}
                            },
                            "required": ["path", "line", "severity", "body"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["summary", "event"],
                "additionalProperties": false
            }),
        }
    }

    async fn handle(&self, ctx: &ToolContext<'_>, args: Value) -> Result<String, ToolError> {
        let args: ReviewArgs = parse_args("post_review", args)?;
        if ctx.state().review || ctx.state().pending {
            return Err(
                "a review was already posted in this run; use post_comment for anything else"
                    .into(),
            );
        }
        if args.summary.trim().is_empty() {
            return Err("summary is empty".into());
        }
        let mut kept = Vec::new();
        let mut folded = Vec::new();
        let mut notes = Vec::new();
        let mut below_min = 0u32;
        for c in args.comments {
            if c.severity.rank() < ctx.min_severity.rank() {
                below_min += 1;
                continue;
            }
            let mut comment = InlineComment {
                path: c.path.trim_start_matches("./").to_owned(),
                line: c.line,
                start_line: c.start_line.filter(|s| *s != c.line),
                side: c.side.unwrap_or(Side::Right),
                severity: c.severity,
                body: c.body,
            };
            match ctx.diff.check_comment(
                &comment.path,
                comment.line,
                comment.start_line,
                comment.side,
            ) {
                Ok(()) => {
                    if let Some(text) = &c.suggestion {
                        match suggestion_block(ctx, &comment, text).await {
                            Ok(block) => {
                                comment.body = format!("{}\n\n{block}", comment.body.trim_end());
                            }
                            Err(why) => notes.push(format!(
                                "the suggestion on {}:{} was left out (the comment is posted without it): {why}",
                                comment.path, comment.line
                            )),
                        }
                    }
                    kept.push(comment);
                }
                Err(why) => folded.push((comment, why)),
            }
        }
        let draft = Draft {
            summary: args.summary,
            event: args.event,
            kept,
            folded,
            below_min,
            notes,
            dropped: Vec::new(),
            verification_note: None,
            passes_note: None,
        };
        if ctx.defer_all || (ctx.verify && !draft.kept.is_empty()) {
            // docs/review-service.md, "Verification before posting": the inline findings are
            // checked by a fresh verifier after this pass; the run posts the review then.
            // A review without inline findings has nothing to verify and is posted now.
            let mut out = format!(
                "review received: its {} inline finding(s) go to an independent verifier, and the review is posted once they are checked. Do not call post_review again; end your turn.",
                draft.kept.len()
            );
            for n in &draft.notes {
                out.push_str(&format!("\nnote: {n}"));
            }
            if let Ok(mut pending) = ctx.pending.lock() {
                *pending = Some(draft);
            }
            ctx.update(|s| s.pending = true);
            return Ok(out);
        }
        Ok(publish(ctx, draft).await?)
    }
}

/// A review post_review accepted, not yet posted: the model's summary and event, the inline
/// comments on the diff (`kept`) and those folded into the summary, and what verification
/// dropped (docs/review-service.md, "Verification before posting").
#[derive(Debug, Clone)]
pub(crate) struct Draft {
    /// The model's summary, ending with its verdict line.
    pub summary: String,
    /// The model's event, before the protocol's corrections.
    pub event: ReviewEvent,
    /// Inline comments on lines of the diff, suggestion blocks included.
    pub kept: Vec<InlineComment>,
    /// Comments outside the diff, with why: posted in the summary.
    pub folded: Vec<(InlineComment, String)>,
    /// Comments under the minimum severity, not posted.
    pub below_min: u32,
    /// Notes for the model's tool result.
    pub notes: Vec<String>,
    /// Candidates the verifier rejected (or left undecided at a budget stop), with the reason.
    pub dropped: Vec<(InlineComment, String)>,
    /// A sentence for the summary about verification (how many were dropped, a budget stop).
    pub verification_note: Option<String>,
    /// A sentence for the summary about several passes (docs/review-service.md, "Several
    /// passes").
    pub passes_note: Option<String>,
}

/// Posts `draft` (docs/review-service.md §1 step 6, "Minimum severity and quiet reviews",
/// "Verification before posting"): corrects the event (REQUEST_CHANGES when a posted or
/// folded comment is blocking; an APPROVE only to clear this App's own request; a
/// REQUEST_CHANGES whose blocking findings were all dropped becomes COMMENT), adjusts the
/// verdict line for the dropped ones, adds the summary's notes, honours `review_quiet`, and
/// hands the review to the poster. Returns the tool result text.
///
/// Errors: the poster's message, for the model.
/// `kept` without the comments already posted on the pull request (docs/review-service.md,
/// "Repeated findings"): a RIGHT-side comment whose code fingerprint an earlier inline finding
/// has, with the same claim. Returns the rest, their fingerprints (None for LEFT-side comments
/// or a file that cannot be read) and the repeats.
fn without_repeats(
    ctx: &ToolContext<'_>,
    kept: Vec<InlineComment>,
) -> (Vec<InlineComment>, Vec<Option<String>>, Vec<InlineComment>) {
    let (mut rest, mut prints, mut repeated) = (Vec::new(), Vec::new(), Vec::new());
    for c in kept {
        let text = (c.side == Side::Right)
            .then(|| crate::fingerprint::read_text(&ctx.root.resolve(&c.path).ok()?))
            .flatten();
        let print = text.as_deref().and_then(|t| {
            let start = c.start_line.unwrap_or(c.line);
            crate::fingerprint::of_lines(&c.path, t, start, c.line)
        });
        let seen = print.as_ref().is_some_and(|p| {
            ctx.posted_fingerprints
                .iter()
                .any(|(q, body)| q == p && crate::fingerprint::same_claim(body, &c.body))
        });
        // docs/review-service.md, "Finding outcomes": a dismissed finding's line, changed
        // context or not.
        let line = text
            .as_deref()
            .and_then(|t| crate::fingerprint::normalized_line(t, c.line));
        let dismissed = line.as_ref().is_some_and(|line| {
            ctx.dismissed.iter().any(|(path, l, body)| {
                *path == c.path && l == line && crate::fingerprint::same_claim(body, &c.body)
            })
        });
        let seen = seen || dismissed;
        if seen {
            repeated.push(c);
        } else {
            rest.push(c);
            prints.push(print);
        }
    }
    (rest, prints, repeated)
}

pub(crate) async fn publish(ctx: &ToolContext<'_>, draft: Draft) -> Result<String, String> {
    let Draft {
        summary,
        event: model_event,
        kept,
        folded,
        below_min,
        mut notes,
        dropped,
        verification_note,
        passes_note,
    } = draft;
    let (kept, fingerprints, repeated) = without_repeats(ctx, kept);
    let (db, dn, dq) = by_severity(dropped.iter().map(|(c, _)| c).chain(repeated.iter()));
    let summary = with_verdict(&summary, |(b, n, q)| {
        (
            b.saturating_sub(db),
            n.saturating_sub(dn),
            q.saturating_sub(dq),
        )
    });
    let any_blocking = kept
        .iter()
        .chain(folded.iter().map(|(c, _)| c))
        .any(|c| c.severity == Severity::Blocking);
    let dropped_blocking = dropped
        .iter()
        .map(|(c, _)| c)
        .chain(repeated.iter())
        .any(|c| c.severity == Severity::Blocking);
    let mut event = model_event;
    if any_blocking && event != ReviewEvent::RequestChanges {
        notes.push(format!("event changed from {event} to REQUEST_CHANGES because a comment is blocking (review protocol)"));
        event = ReviewEvent::RequestChanges;
    }
    if !any_blocking
        && dropped_blocking
        && event == ReviewEvent::RequestChanges
        && verdict_counts(&summary).is_some_and(|(b, _, _)| b == 0)
    {
        notes.push("event changed from REQUEST_CHANGES to COMMENT: every blocking finding was dropped by verification or already posted".to_owned());
        event = ReviewEvent::Comment;
    }
    if event == ReviewEvent::Approve && !ctx.approve_allowed {
        // An approval from a reviewer its PR's author can steer is posted only
        // to clear this App's own earlier CHANGES_REQUESTED.
        notes.push("event changed from APPROVE to COMMENT: APPROVE only clears a REQUEST_CHANGES this reviewer posted earlier on the pull request, and there is none".to_owned());
        event = ReviewEvent::Comment;
    }
    if ctx.quiet && kept.is_empty() && folded.is_empty() && event == ReviewEvent::Comment {
        // docs/review-service.md, "Minimum severity and quiet reviews": nothing to say, so
        // nothing is posted; the check run says "No findings".
        ctx.update(|s| {
            s.quiet = true;
            s.below_min_severity += below_min;
        });
        record_dropped(ctx, &dropped).await;
        let mut out = String::from(
            "nothing posted: review_quiet is on and this review has no inline finding to post, so the check run reports no findings",
        );
        if below_min > 0 {
            out.push_str(&format!(
                " ({below_min} under the minimum severity {} were left out)",
                ctx.min_severity
            ));
        }
        return Ok(out);
    }
    let mut extra = Vec::new();
    if let Some(note) = &ctx.range_note {
        extra.push(format!("_{note}_"));
    }
    if !repeated.is_empty() {
        extra.push(format!(
            "_{} finding(s) already posted on this pull request at the same code were not posted again._",
            repeated.len()
        ));
    }
    if let Some(note) = &passes_note {
        extra.push(format!("_{note}_"));
    }
    if let Some(note) = &verification_note {
        extra.push(format!("_{note}_"));
    }
    if below_min > 0 {
        extra.push(format!(
            "_{below_min} finding(s) under the minimum severity `{}` were not posted inline (review_min_severity)._",
            ctx.min_severity
        ));
    }
    if !folded.is_empty() {
        let mut s = String::from(
            "**Comments outside the diff** (GitHub accepts inline comments only on lines of the diff):\n",
        );
        for (c, _) in &folded {
            s.push_str(&format!(
                "- `{}:{}` ({}): {}\n",
                c.path,
                c.line,
                c.severity,
                c.body.trim()
            ));
        }
        extra.push(s.trim_end().to_owned());
    }
    if ctx.capped.is_capped() {
        extra.push(format!(
            "_Note: this diff is {} bytes, over the {}-byte review cap; {} file(s) were left out of the diff the reviewer read: {}._",
            ctx.capped.total_bytes,
            ctx.cap_bytes,
            ctx.capped.omitted.len(),
            ctx.capped.omitted.join(", ")
        ));
    }
    if !ctx.instruction_changes.is_empty() {
        extra.push(format!(
            "_This pull request changes the review instructions ({}); this review followed the base branch's versions and reviewed the changes as code._",
            ctx.instruction_changes.join(", ")
        ));
    }
    let budget_note = ctx.budget_note();
    if let Some(note) = &budget_note {
        extra.push(format!(
            "_This review was cut short at its budget: {note}._"
        ));
    }
    let summary = insert_before_verdict(&summary, &extra);
    let submission = ReviewSubmission {
        summary,
        event,
        comments: kept,
        fingerprints,
    };
    let posted = ctx
        .poster
        .post_review(&submission)
        .await
        .map_err(|e| format!("posting the review failed: {e}"))?;
    record_dropped(ctx, &dropped).await;
    let n_folded = folded.len() as u32;
    ctx.update(|s| {
        s.review = true;
        s.folded += n_folded;
        s.below_min_severity += below_min;
        s.budget_noted = budget_note.is_some();
    });
    let mut out = format!(
        "review posted{} with event {}: {} inline comment(s)",
        posted
            .review_id
            .map(|id| format!(" (id {id})"))
            .unwrap_or_default(),
        submission.event,
        submission.comments.len()
    );
    if !folded.is_empty() {
        out.push_str(&format!(
            "; {} moved into the summary because they were outside the diff:",
            folded.len()
        ));
        for (c, why) in &folded {
            out.push_str(&format!("\n- {}:{}: {why}", c.path, c.line));
        }
    }
    if below_min > 0 {
        out.push_str(&format!(
            "; {below_min} under the minimum severity {} left out",
            ctx.min_severity
        ));
    }
    if !dropped.is_empty() {
        out.push_str(&format!("; {} dropped by verification", dropped.len()));
    }
    for n in notes {
        out.push_str(&format!("\nnote: {n}"));
    }
    Ok(out)
}

/// `draft` with every inline comment marked unverified for `why` (the run ended before its
/// verification could run).
pub(crate) fn all_unverified(mut draft: Draft, why: &str) -> Draft {
    for c in &mut draft.kept {
        c.body = mark_unverified(&c.body, why);
    }
    draft
}

/// A candidate's body with the unverified mark, before its suggestion block when it has one.
pub(crate) fn mark_unverified(body: &str, why: &str) -> String {
    let mark = format!("\n\n_Unverified: {why}._");
    match body.find("\n\n```suggestion\n") {
        Some(i) => format!("{}{mark}{}", &body[..i], &body[i..]),
        None => format!("{}{mark}", body.trim_end()),
    }
}

/// Hands the dropped candidates to the poster to record; a failure is logged, not fatal (the
/// review itself is on the forge).
async fn record_dropped(ctx: &ToolContext<'_>, dropped: &[(InlineComment, String)]) {
    if dropped.is_empty() {
        return;
    }
    if let Err(e) = ctx.poster.record_dropped(dropped).await {
        tracing::warn!(error = %e, "cannot record the findings dropped by verification");
    }
}

/// The three counts of a summary's verdict line (`Blocking: N · Nits: M · Questions: K`,
/// review protocol rule 4), when its last line is one.
pub(crate) fn verdict_counts(summary: &str) -> Option<(u64, u64, u64)> {
    let last = summary.trim_end().lines().last()?.trim();
    let mut parts = last.strip_prefix("Blocking:")?.split('·');
    let mut count = |label: &str| -> Option<u64> {
        parts
            .next()?
            .trim()
            .strip_prefix(label)?
            .trim()
            .parse()
            .ok()
    };
    Some((count("")?, count("Nits:")?, count("Questions:")?))
}

/// `summary` with its verdict line's counts replaced by `counts(blocking, nits, questions)`
/// of the line it has; a summary without a verdict line is returned as it is. Verification
/// lowers the counts by what it dropped, several passes raise them by what later passes found,
/// so the line counts what is posted.
pub(crate) fn with_verdict(
    summary: &str,
    counts: impl FnOnce((u64, u64, u64)) -> (u64, u64, u64),
) -> String {
    let Some(old) = verdict_counts(summary) else {
        return summary.to_owned();
    };
    let (b, n, q) = counts(old);
    let line = format!("Blocking: {b} · Nits: {n} · Questions: {q}");
    match summary.trim_end().rsplit_once('\n') {
        Some((head, _)) => format!("{head}\n{line}"),
        None => line,
    }
}

/// How many of `comments` have each severity, as (blocking, nits, questions).
pub(crate) fn by_severity<'a>(
    comments: impl Iterator<Item = &'a InlineComment>,
) -> (u64, u64, u64) {
    comments.fold((0, 0, 0), |(b, n, q), c| match c.severity {
        Severity::Blocking => (b + 1, n, q),
        Severity::Nit => (b, n + 1, q),
        Severity::Question => (b, n, q + 1),
    })
}

/// The most bytes of a file read to check a suggestion against the lines it replaces.
const SUGGESTION_READ_CAP_BYTES: u64 = 4 * 1024 * 1024;

/// The longest suggestion accepted, in bytes: a suggestion is a small fix.
const SUGGESTION_MAX_BYTES: usize = 16 * 1024;

/// GitHub's committable suggestion block for `comment`'s lines (`start_line..=line` on the
/// RIGHT side of the diff, already checked to lie in one hunk), holding `text`.
///
/// Errors, as a reason the model reads, when the block could not apply as meant: a LEFT side,
/// text over [`SUGGESTION_MAX_BYTES`], a line opening a code fence (it would end the block
/// early), text equal to the lines it replaces, or lines the head's file does not have
/// (docs/review-service.md, "Suggestions").
async fn suggestion_block(
    ctx: &ToolContext<'_>,
    comment: &InlineComment,
    text: &str,
) -> Result<String, String> {
    use tokio::io::AsyncReadExt;
    if comment.side != Side::Right {
        return Err("a suggestion replaces lines of the new file, so it needs side RIGHT".into());
    }
    if text.len() > SUGGESTION_MAX_BYTES {
        return Err(format!(
            "it is {} bytes, over the {SUGGESTION_MAX_BYTES}-byte limit for a suggestion",
            text.len()
        ));
    }
    let text = text.strip_suffix('\n').unwrap_or(text);
    if text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("```") || l.starts_with("~~~")
    }) {
        return Err("it holds a code fence, which would end GitHub's suggestion block".into());
    }
    let path = ctx.root.resolve(&comment.path)?;
    let mut head = Vec::new();
    tokio::fs::File::open(&path)
        .await
        .map_err(|e| format!("cannot read {}: {e}", comment.path))?
        .take(SUGGESTION_READ_CAP_BYTES)
        .read_to_end(&mut head)
        .await
        .map_err(|e| format!("cannot read {}: {e}", comment.path))?;
    let head = String::from_utf8_lossy(&head);
    let lines: Vec<&str> = head.lines().collect();
    let start = comment.start_line.unwrap_or(comment.line);
    let range = usize::try_from(start - 1)
        .ok()
        .zip(usize::try_from(comment.line).ok());
    let Some(replaced) = range.and_then(|(from, to)| lines.get(from..to)) else {
        return Err(format!(
            "{} has no lines {start}..{} in the head commit",
            comment.path, comment.line
        ));
    };
    if replaced.join("\n") == text {
        return Err("it is the same as the lines it would replace".into());
    }
    Ok(format!("```suggestion\n{text}\n```"))
}

/// Adds sections to a summary, keeping its verdict line (`Blocking: …`) last when it has one.
fn insert_before_verdict(summary: &str, sections: &[String]) -> String {
    if sections.is_empty() {
        return summary.to_owned();
    }
    let trimmed = summary.trim_end();
    let (head, verdict) = match trimmed.rsplit_once('\n') {
        Some((head, last)) if last.trim_start().starts_with("Blocking:") => {
            (head.trim_end(), Some(last.trim()))
        }
        None if trimmed.trim_start().starts_with("Blocking:") => ("", Some(trimmed.trim())),
        _ => (trimmed, None),
    };
    let mut parts: Vec<&str> = Vec::new();
    if !head.is_empty() {
        parts.push(head);
    }
    parts.extend(sections.iter().map(String::as_str));
    if let Some(v) = verdict {
        parts.push(v);
    }
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unverified_mark_goes_before_a_suggestion_block() {
        assert_eq!(
            mark_unverified("Fix it.\n\n```suggestion\nx\n```", "no verdict"),
            "Fix it.\n\n_Unverified: no verdict._\n\n```suggestion\nx\n```"
        );
        assert_eq!(
            mark_unverified("Fix it.\n", "no verdict"),
            "Fix it.\n\n_Unverified: no verdict._"
        );
    }

    #[test]
    fn the_verdict_line_counts_what_is_posted() {
        let nit = |body: &str| {
            (
                InlineComment {
                    path: "a.rs".into(),
                    line: 1,
                    start_line: None,
                    side: Side::Right,
                    severity: Severity::Nit,
                    body: body.into(),
                },
                "not real".to_owned(),
            )
        };
        let summary = "Two things.\n\nBlocking: 1 · Nits: 2 · Questions: 0";
        assert_eq!(verdict_counts(summary), Some((1, 2, 0)));
        let dropped = [nit("x")];
        let (_, dn, _) = by_severity(dropped.iter().map(|(c, _)| c));
        let lowered = |(b, n, q): (u64, u64, u64)| (b, n - dn, q);
        assert_eq!(
            with_verdict(summary, lowered),
            "Two things.\n\nBlocking: 1 · Nits: 1 · Questions: 0"
        );
        assert_eq!(with_verdict("No verdict.", lowered), "No verdict.");
        assert_eq!(verdict_counts("Blocking: x · Nits: 1 · Questions: 0"), None);
    }

    #[test]
    fn sections_go_before_the_verdict_line() {
        let s = insert_before_verdict(
            "Looks fine.\n\nBlocking: 0 · Nits: 1 · Questions: 0\n",
            &["X".into()],
        );
        assert_eq!(
            s,
            "Looks fine.\n\nX\n\nBlocking: 0 · Nits: 1 · Questions: 0"
        );
        assert_eq!(
            insert_before_verdict("No verdict", &["X".into()]),
            "No verdict\n\nX"
        );
        assert_eq!(insert_before_verdict("same", &[]), "same");
    }
}
