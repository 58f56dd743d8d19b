//! The rows of docs/review-service.md §2 and what the agent's tools submit. Field names are the
//! spec's, and so are the column names of the store (docs/architecture.md, Store); the values
//! the spec enumerates are the closed types of `enums.rs`.

use crate::enums::{
    FailureClass, FindingKind, FindingOutcome, ReviewEvent, ReviewStatus, Severity, Side, Trigger,
};
use serde::{Deserialize, Serialize};

/// A registered repository (docs/review-service.md §2, RepoRow).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RepoRow {
    /// `owner/repo`, the primary key.
    pub full_name: String,
    /// Forge app installation id.
    pub installation_id: i64,
    /// Per-repo review prompt (the replaceable focus).
    pub prompt: Option<String>,
    /// Per-repo model override, `<provider>/<model>`.
    pub model: Option<String>,
    /// 0 (disabled) or 1 (active); an integer on the wire, never a JSON boolean.
    pub enabled: i64,
    /// Epoch seconds.
    pub created_at: i64,
    /// **Added.** This repository's least severity posted inline (`nit`, `question` or
    /// `blocking`); null: the `review_min_severity` setting applies (docs/review-service.md,
    /// "Minimum severity and quiet reviews").
    #[schema(schema_with = field_schemas::min_severity)]
    pub min_severity: Option<Severity>,
    /// **Added.** This repository's own monthly budget, in the units of ReviewRow.cost (USD);
    /// null: the repository falls under the global `monthly_budget` setting, which caps the
    /// whole service (docs/review-service.md, "Monthly budget").
    pub monthly_budget: Option<f64>,
}

/// One review run (docs/review-service.md §2, ReviewRow).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReviewRow {
    pub id: i64,
    pub repo_full_name: String,
    /// 0 for improver runs.
    pub pr_number: i64,
    pub title: Option<String>,
    pub session_id: Option<String>,
    /// pending, running, completed, failed or skipped (docs/review-service.md §3).
    #[schema(schema_with = field_schemas::status)]
    pub status: ReviewStatus,
    pub error: Option<String>,
    /// What started the run; null for improver runs.
    #[schema(schema_with = field_schemas::trigger)]
    pub trigger: Option<Trigger>,
    /// 0 for a first run, 1 for the single automatic retry.
    pub attempt: i64,
    /// USD, from the model catalog's prices.
    pub cost: Option<f64>,
    pub tokens: Option<i64>,
    pub model: Option<String>,
    pub check_run_id: Option<i64>,
    pub patch_id: Option<String>,
    pub created_at: i64,
    pub completed_at: Option<i64>,
    /// **Added.** Failed rows: why, read from `error` by [`FailureClass::of`]
    /// (docs/review-service.md, "Failure classes"); null for other statuses. Not stored.
    #[serde(default)]
    #[schema(schema_with = field_schemas::failure_class)]
    pub failure_class: Option<FailureClass>,
}

impl ReviewRow {
    /// Sets [`ReviewRow::failure_class`] from the status and the error, as read rows carry it.
    pub fn with_failure_class(mut self) -> Self {
        self.failure_class = (self.status == ReviewStatus::Failed)
            .then(|| FailureClass::of(self.error.as_deref().unwrap_or_default()));
        self
    }
}

/// A recorded finding (docs/review-service.md §2, FindingRow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FindingRow {
    pub id: i64,
    pub review_id: i64,
    pub repo_full_name: String,
    pub pr_number: i64,
    /// inline, summary or comment.
    #[schema(schema_with = field_schemas::kind)]
    pub kind: FindingKind,
    /// blocking, nit or question; inline rows only.
    #[schema(schema_with = field_schemas::severity)]
    pub severity: Option<Severity>,
    /// COMMENT, APPROVE or REQUEST_CHANGES; summary rows only.
    #[schema(schema_with = field_schemas::event)]
    pub event: Option<ReviewEvent>,
    pub path: Option<String>,
    pub line: Option<i64>,
    pub body: String,
    pub github_review_id: Option<i64>,
    pub github_comment_id: Option<i64>,
    pub created_at: i64,
    /// **Added.** Inline rows: a hash of the file and the code the finding anchors to, the
    /// same when the lines move (docs/review-service.md, "Repeated findings"); null for other
    /// rows and rows recorded before it existed.
    pub fingerprint: Option<String>,
    /// **Added.** Inline rows: open, resolved or dismissed (docs/review-service.md, "Finding
    /// outcomes"); null for summary and comment rows.
    #[schema(schema_with = field_schemas::outcome)]
    pub outcome: Option<FindingOutcome>,
    /// **Added.** When the finding was resolved or dismissed, epoch seconds; null while open.
    pub outcome_at: Option<i64>,
    /// **Added.** The head SHA whose review found the problem gone (resolved rows); null
    /// otherwise.
    pub outcome_sha: Option<String>,
    /// **Added.** Why, in words: the recheck's reason, or who answered or thumbed it down;
    /// null while open.
    pub outcome_reason: Option<String>,
}

/// A candidate inline finding that verification dropped: never posted, kept with the
/// verifier's reason (docs/review-service.md §2, DroppedFindingRow; the rule is in
/// docs/review-service.md, "Verification before posting").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DroppedFindingRow {
    pub id: i64,
    pub review_id: i64,
    pub repo_full_name: String,
    pub pr_number: i64,
    pub path: String,
    /// The new-file line (or the old-file one for a LEFT comment) it was written on.
    pub line: i64,
    #[schema(schema_with = field_schemas::dropped_severity)]
    pub severity: Severity,
    /// The candidate's text, as the reviewer wrote it.
    pub body: String,
    /// Why it was dropped: the verifier's reason, or a budget stop.
    pub reason: String,
    /// Epoch seconds.
    pub created_at: i64,
}

/// An installed reviewer skill (docs/review-service.md §2, SkillMetaRow). The stored blob is never
/// part of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SkillMetaRow {
    pub name: String,
    pub source_url: String,
    pub owner: String,
    pub repo: String,
    pub path: String,
    /// Pinned commit SHA.
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub description: Option<String>,
    pub enabled: i64,
    pub created_at: i64,
}

/// A finding to record, as the agent tools and POST /internal/reviews/:id/findings submit it
/// (docs/architecture.md, Findings). Validated by [`NewFinding::validate`]. A missing optional
/// field reads as None.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewFinding {
    pub kind: FindingKind,
    pub body: String,
    pub event: Option<ReviewEvent>,
    pub path: Option<String>,
    pub line: Option<i64>,
    pub severity: Option<Severity>,
    pub github_review_id: Option<i64>,
    pub github_comment_id: Option<i64>,
    /// Inline rows: the code fingerprint (docs/review-service.md, "Repeated findings"); absent
    /// otherwise.
    #[serde(default)]
    pub fingerprint: Option<String>,
}

impl NewFinding {
    /// The field rules of docs/review-service.md §2: severity, path and line belong to inline rows,
    /// event to summary rows. Returns the first broken rule as a message naming the field.
    pub fn validate(&self) -> Result<(), String> {
        match self.kind {
            FindingKind::Inline => {
                if self.path.as_deref().is_none_or(str::is_empty) {
                    return Err("findings[].path is required for inline findings".into());
                }
                if self.severity.is_none() {
                    return Err("findings[].severity is required for inline findings".into());
                }
                if self.event.is_some() {
                    return Err("findings[].event is only allowed on summary findings".into());
                }
            }
            FindingKind::Summary | FindingKind::Comment => {
                if self.severity.is_some() {
                    return Err("findings[].severity is only allowed on inline findings".into());
                }
                if self.kind == FindingKind::Comment && self.event.is_some() {
                    return Err("findings[].event is only allowed on summary findings".into());
                }
            }
        }
        if let Some(line) = self.line
            && line < 1
        {
            return Err("findings[].line must be 1 or more".into());
        }
        Ok(())
    }
}

/// One inline comment of a formal review, as the agent's post_review tool submits it
/// (docs/architecture.md, Findings). `line` (and `start_line` for a range) are file line numbers on
/// `side`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct InlineComment {
    pub path: String,
    pub line: i64,
    #[serde(default)]
    pub start_line: Option<i64>,
    #[serde(default = "default_side")]
    pub side: Side,
    pub severity: Severity,
    pub body: String,
}

fn default_side() -> Side {
    Side::Right
}

/// A formal review to post: summary body, event and inline comments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReviewSubmission {
    pub summary: String,
    pub event: ReviewEvent,
    #[serde(default)]
    pub comments: Vec<InlineComment>,
    /// The code fingerprint of each inline comment, in order, as the run computed it (docs/review-service.md,
    /// "Repeated findings"); in process only, never on the wire.
    #[serde(skip)]
    pub fingerprints: Vec<Option<String>>,
}

/// What the forge returned for a posted review: its id and the ids of the inline comments in
/// the order they were submitted (None where the forge did not say).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PostedReview {
    pub review_id: Option<i64>,
    pub comment_ids: Vec<Option<i64>>,
}

/// The OpenAPI schemas of the enum fields of the rows: `schema_with` drops the doc comment, so
/// each repeats its field's description.
mod field_schemas {
    use super::*;
    use utoipa::openapi::schema::Object;

    pub(super) fn status() -> Object {
        ReviewStatus::field_schema(
            false,
            "pending, running, completed, failed or skipped (docs/review-service.md §3).",
        )
    }

    pub(super) fn failure_class() -> Object {
        FailureClass::field_schema(
            true,
            "Failed rows: overloaded, timeout, configuration, budget, cancelled, interrupted, \
             limit, forge or other; null otherwise.",
        )
    }

    pub(super) fn trigger() -> Object {
        Trigger::field_schema(true, "What started the run; null for improver runs.")
    }

    pub(super) fn outcome() -> Object {
        FindingOutcome::field_schema(
            true,
            "open, resolved or dismissed; null for summary and comment rows.",
        )
    }

    pub(super) fn kind() -> Object {
        FindingKind::field_schema(false, "inline, summary or comment.")
    }

    pub(super) fn dropped_severity() -> Object {
        Severity::field_schema(false, "blocking, nit or question.")
    }

    pub(super) fn min_severity() -> Object {
        Severity::field_schema(
            true,
            "nit, question or blocking; null: the review_min_severity setting applies.",
        )
    }

    pub(super) fn severity() -> Object {
        Severity::field_schema(true, "blocking, nit or question; inline rows only.")
    }

    pub(super) fn event() -> Object {
        ReviewEvent::field_schema(
            true,
            "COMMENT, APPROVE or REQUEST_CHANGES; summary rows only.",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::enums::{FindingKind, ReviewEvent, Severity, Side};

    #[test]
    fn inline_finding_needs_path_and_severity() {
        let mut f = NewFinding {
            kind: FindingKind::Inline,
            body: "x".into(),
            event: None,
            path: None,
            line: Some(3),
            severity: Some(Severity::Nit),
            github_review_id: None,
            github_comment_id: None,
            fingerprint: None,
        };
        assert!(f.validate().unwrap_err().contains("path"));
        f.path = Some("src/lib.rs".into());
        assert_eq!(f.validate(), Ok(()));
        f.line = Some(0);
        assert!(f.validate().unwrap_err().contains("line"));
        f.line = Some(1);
        assert_eq!(f.validate(), Ok(()));
    }

    #[test]
    fn only_summary_findings_carry_an_event() {
        let summary = NewFinding {
            kind: FindingKind::Summary,
            body: "x".into(),
            event: Some(ReviewEvent::Approve),
            path: None,
            line: None,
            severity: None,
            github_review_id: None,
            github_comment_id: None,
            fingerprint: None,
        };
        assert_eq!(summary.validate(), Ok(()));
        let comment = NewFinding {
            kind: FindingKind::Comment,
            ..summary.clone()
        };
        assert_eq!(
            comment.validate(),
            Err("findings[].event is only allowed on summary findings".into())
        );
        let plain = NewFinding {
            event: None,
            ..comment
        };
        assert_eq!(plain.validate(), Ok(()));
    }

    #[test]
    fn row_schemas_list_the_enum_texts() {
        let schema = |s: utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>| {
            serde_json::to_value(s).unwrap()["properties"].clone()
        };
        let review = schema(<ReviewRow as utoipa::PartialSchema>::schema());
        assert_eq!(
            review["status"]["enum"],
            serde_json::json!(["pending", "running", "completed", "failed", "skipped"])
        );
        assert_eq!(review["trigger"]["enum"][9], serde_json::Value::Null);
        assert_eq!(review["trigger"]["enum"][8], "ask");
        assert_eq!(review["trigger"]["enum"][0], "opened");
        let finding = schema(<FindingRow as utoipa::PartialSchema>::schema());
        assert_eq!(
            finding["kind"]["enum"],
            serde_json::json!(["inline", "summary", "comment"])
        );
        assert_eq!(
            finding["severity"]["enum"],
            serde_json::json!(["blocking", "nit", "question", null])
        );
        assert_eq!(
            finding["event"]["enum"],
            serde_json::json!(["COMMENT", "APPROVE", "REQUEST_CHANGES", null])
        );
        assert_eq!(
            finding["event"]["description"],
            "COMMENT, APPROVE or REQUEST_CHANGES; summary rows only."
        );
    }

    #[test]
    fn inline_comment_side_defaults_to_right() {
        let c: InlineComment =
            serde_json::from_str(r#"{"path":"a","line":1,"severity":"nit","body":"b"}"#).unwrap();
        assert_eq!(c.side, Side::Right);
    }
}
