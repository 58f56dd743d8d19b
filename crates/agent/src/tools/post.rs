//! The two posting tools of docs/review-service.md §1 step 6: post_comment and post_review. They call a
//! [`ReviewPoster`] supplied by the caller (the app posts to the forge and records findings).
//! post_review first checks every inline comment against the diff's hunks and folds those
//! outside into the review body, because GitHub rejects a whole review (422) when one comment
//! is off the diff (docs/background.md, "What users of PR reviewers complain about").

use review_domain::{InlineComment, PostedReview, ReviewEvent, ReviewSubmission, Severity, Side};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ToolContext, ToolHandler, parse_args};
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

    async fn handle(&self, ctx: &ToolContext<'_>, args: Value) -> Result<String, String> {
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
            description: "Post the formal review: a summary, the event, and inline comments on lines of the diff. `line` (and `start_line` for a range in the same hunk) are file line numbers on `side`: RIGHT (default) = the new file, for added or context lines; LEFT = the old file, for removed lines. Comments outside the diff are moved into the summary. Call it once.".into(),
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
                                "body": {"type": "string"}
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

    async fn handle(&self, ctx: &ToolContext<'_>, args: Value) -> Result<String, String> {
        let args: ReviewArgs = parse_args("post_review", args)?;
        if ctx.state().review {
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
        for c in args.comments {
            let comment = InlineComment {
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
                Ok(()) => kept.push(comment),
                Err(why) => folded.push((comment, why)),
            }
        }
        let any_blocking = kept
            .iter()
            .chain(folded.iter().map(|(c, _)| c))
            .any(|c| c.severity == Severity::Blocking);
        let mut event = args.event;
        let mut notes = Vec::new();
        if any_blocking && event != ReviewEvent::RequestChanges {
            notes.push(format!("event changed from {event} to REQUEST_CHANGES because a comment is blocking (review protocol)"));
            event = ReviewEvent::RequestChanges;
        }
        if event == ReviewEvent::Approve && !ctx.approve_allowed {
            // Issue 26: an approval from a reviewer its PR's author can steer is posted only
            // to clear this App's own earlier CHANGES_REQUESTED.
            notes.push("event changed from APPROVE to COMMENT: APPROVE only clears a REQUEST_CHANGES this reviewer posted earlier on the pull request, and there is none".to_owned());
            event = ReviewEvent::Comment;
        }
        let mut extra = Vec::new();
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
        let summary = insert_before_verdict(&args.summary, &extra);
        let submission = ReviewSubmission {
            summary,
            event,
            comments: kept,
        };
        let posted = ctx
            .poster
            .post_review(&submission)
            .await
            .map_err(|e| format!("posting the review failed: {e}"))?;
        let n_folded = folded.len() as u32;
        ctx.update(|s| {
            s.review = true;
            s.folded += n_folded;
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
        for n in notes {
            out.push_str(&format!("\nnote: {n}"));
        }
        Ok(out)
    }
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
