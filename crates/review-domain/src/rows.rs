//! Rows and enums of spec/review-service.md sections 2 and 3. Field names are the spec's, and
//! so are the column names of the store (DESIGN.md, Store).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A registered repository (spec section 2, RepoRow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
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
}

/// One review run (spec section 2, ReviewRow).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReviewRow {
    pub id: i64,
    pub repo_full_name: String,
    /// 0 for improver runs.
    pub pr_number: i64,
    pub title: Option<String>,
    pub session_id: Option<String>,
    /// One of [`ReviewStatus`], as its lowercase name.
    pub status: String,
    pub error: Option<String>,
    /// One of [`Trigger`], as its lowercase name.
    pub trigger: Option<String>,
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
}

/// A recorded finding (spec section 2, FindingRow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FindingRow {
    pub id: i64,
    pub review_id: i64,
    pub repo_full_name: String,
    pub pr_number: i64,
    /// inline, summary or comment.
    pub kind: String,
    /// blocking, nit or question; inline rows only.
    pub severity: Option<String>,
    /// COMMENT, APPROVE or REQUEST_CHANGES; summary rows only.
    pub event: Option<String>,
    pub path: Option<String>,
    pub line: Option<i64>,
    pub body: String,
    pub github_review_id: Option<i64>,
    pub github_comment_id: Option<i64>,
    pub created_at: i64,
}

/// An installed reviewer skill (spec section 2, SkillMetaRow). The stored blob is never part of it.
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
/// (DESIGN.md, Findings). Validated by [`NewFinding::validate`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewFinding {
    pub kind: FindingKind,
    pub body: String,
    #[serde(default)]
    pub event: Option<ReviewEvent>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub line: Option<i64>,
    #[serde(default)]
    pub severity: Option<Severity>,
    #[serde(default)]
    pub github_review_id: Option<i64>,
    #[serde(default)]
    pub github_comment_id: Option<i64>,
}

impl NewFinding {
    /// The field rules of spec section 2: severity, path and line belong to inline rows, event to
    /// summary rows. Returns the first broken rule as a message naming the field.
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

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire and column text of this value.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok($name::$variant),)+
                    other => Err(format!(
                        concat!("unknown ", stringify!($name), " {:?}; expected one of: {}"),
                        other,
                        [$($text),+].join(", ")
                    )),
                }
            }
        }
    };
}

string_enum!(
    /// Review status (spec section 3).
    ReviewStatus {
        Pending = "pending",
        Running = "running",
        Completed = "completed",
        Failed = "failed",
        Skipped = "skipped",
    }
);

impl ReviewStatus {
    /// Completed, failed and skipped reviews never change status again (spec section 3, stop).
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Skipped)
    }
}

string_enum!(
    /// What created a review (spec section 2, ReviewRow.trigger).
    Trigger {
        Opened = "opened",
        Synchronize = "synchronize",
        Reopened = "reopened",
        Command = "command",
        Retry = "retry",
        Improve = "improve",
        ReadyForReview = "ready_for_review",
    }
);

string_enum!(
    /// Finding kind (spec section 2, FindingRow.kind).
    FindingKind {
        Inline = "inline",
        Summary = "summary",
        Comment = "comment",
    }
);

string_enum!(
    /// Severity of an inline finding (FACTS.md, the review protocol).
    Severity {
        Blocking = "blocking",
        Nit = "nit",
        Question = "question",
    }
);

string_enum!(
    /// The event of a formal review, as the forge names it.
    ReviewEvent {
        Comment = "COMMENT",
        Approve = "APPROVE",
        RequestChanges = "REQUEST_CHANGES",
    }
);

string_enum!(
    /// Which side of the diff an inline comment sits on (GitHub's names).
    Side {
        Left = "LEFT",
        Right = "RIGHT",
    }
);

/// One inline comment of a formal review, as the agent's post_review tool submits it
/// (DESIGN.md, Findings). `line` (and `start_line` for a range) are file line numbers on `side`.
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
}

/// What the forge returned for a posted review: its id and the ids of the inline comments in
/// the order they were submitted (None where the forge did not say).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PostedReview {
    pub review_id: Option<i64>,
    pub comment_ids: Vec<Option<i64>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_round_trip_their_wire_text() {
        for s in ReviewStatus::ALL {
            assert_eq!(s.as_str().parse::<ReviewStatus>().unwrap(), *s);
        }
        assert_eq!(
            serde_json::to_string(&ReviewEvent::RequestChanges).unwrap(),
            "\"REQUEST_CHANGES\""
        );
        assert!(
            "bogus"
                .parse::<Severity>()
                .unwrap_err()
                .contains("blocking, nit, question")
        );
    }

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
        };
        assert!(f.validate().unwrap_err().contains("path"));
        f.path = Some("src/lib.rs".into());
        assert_eq!(f.validate(), Ok(()));
        f.line = Some(0);
        assert!(f.validate().unwrap_err().contains("line"));
    }

    #[test]
    fn inline_comment_side_defaults_to_right() {
        let c: InlineComment =
            serde_json::from_str(r#"{"path":"a","line":1,"severity":"nit","body":"b"}"#).unwrap();
        assert_eq!(c.side, Side::Right);
    }
}
