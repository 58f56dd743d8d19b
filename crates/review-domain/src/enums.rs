//! The closed sets of values of the review service (docs/review-service.md §2 and §3): review
//! status, trigger, finding kind, severity, review event and diff side. Each maps to exactly
//! the text the spec fixes, the same in SQL columns and in JSON; parsing any other text is an
//! error naming the allowed values, never a silent default.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use utoipa::openapi::schema::{Object, ObjectBuilder, SchemaType, Type};

/// The OpenAPI schema of a field holding one of `values`: `{"type": "string", "enum": [...]}`,
/// or when `nullable` `{"type": ["string", "null"], "enum": [..., null]}`, with the field's
/// `description`. The derive of `utoipa` reads no `serde(rename)` given through a macro, so the
/// enums and the row fields build their schema here, from the texts [`FromStr`] accepts.
pub fn text_enum_schema(values: &[&'static str], nullable: bool, description: &str) -> Object {
    let (schema_type, null) = if nullable {
        (
            SchemaType::from_iter([Type::String, Type::Null]),
            Some(serde_json::Value::Null),
        )
    } else {
        (SchemaType::Type(Type::String), None)
    };
    let texts = values.iter().map(|v| serde_json::Value::from(*v));
    ObjectBuilder::new()
        .schema_type(schema_type)
        .enum_values(Some(texts.chain(null)))
        .description(Some(description).filter(|d| !d.is_empty()))
        .build()
}

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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

            /// The OpenAPI schema of a field of this type ([`text_enum_schema`]).
            pub fn field_schema(nullable: bool, description: &str) -> Object {
                text_enum_schema(&[$($text),+], nullable, description)
            }
        }

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                Self::field_schema(false, "").into()
            }
        }

        impl utoipa::ToSchema for $name {}

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
    /// Review status (docs/review-service.md §3).
    ReviewStatus {
        Pending = "pending",
        Running = "running",
        Completed = "completed",
        Failed = "failed",
        Skipped = "skipped",
    }
);

impl ReviewStatus {
    /// Completed, failed and skipped reviews never change status again (docs/review-service.md §3,
    /// stop).
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Skipped)
    }
}

string_enum!(
    /// What created a review (docs/review-service.md §2, ReviewRow.trigger). `ready_for_review` (a
    /// draft made ready, docs/architecture.md, Lifecycle extras), `improve`, `reply` (an answer
    /// in a review thread) and `ask` (an answer to `/ask`) extend the spec's list; the last two
    /// are described in docs/review-service.md, "Answers in review threads".
    Trigger {
        Opened = "opened",
        Synchronize = "synchronize",
        Reopened = "reopened",
        Command = "command",
        Retry = "retry",
        Improve = "improve",
        ReadyForReview = "ready_for_review",
        Reply = "reply",
        Ask = "ask",
    }
);

string_enum!(
    /// Finding kind (docs/review-service.md §2, FindingRow.kind).
    FindingKind {
        Inline = "inline",
        Summary = "summary",
        Comment = "comment",
    }
);

string_enum!(
    /// What became of a posted inline finding (docs/review-service.md, "Finding outcomes"):
    /// open until a later head fixes it (resolved) or a person answers it as intended or
    /// thumbs it down (dismissed).
    FindingOutcome {
        Open = "open",
        Resolved = "resolved",
        Dismissed = "dismissed",
    }
);

string_enum!(
    /// Severity of an inline finding (docs/review-service.md §2, FindingRow.severity).
    Severity {
        Blocking = "blocking",
        Nit = "nit",
        Question = "question",
    }
);

impl Severity {
    /// The order `review_min_severity` compares by: nit (0) < question (1) < blocking (2)
    /// (docs/review-service.md, "Minimum severity and quiet reviews").
    pub fn rank(self) -> u8 {
        match self {
            Severity::Nit => 0,
            Severity::Question => 1,
            Severity::Blocking => 2,
        }
    }
}

string_enum!(
    /// The event of a formal review, as the forge names it (docs/review-service.md §2,
    /// FindingRow.event).
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

string_enum!(
    /// Why a failed review failed, read from its `error`, per
    /// docs/review-service.md, "Failure classes": the provider was overloaded or rate-limited, a
    /// timeout, the configuration or credentials, the review budget, a cancellation (stop, a newer push, shutdown), an
    /// interruption (restart, a lapsed lease), an operator limit (steps, tree caps), the forge,
    /// or anything else.
    FailureClass {
        Overloaded = "overloaded",
        Timeout = "timeout",
        Configuration = "configuration",
        Budget = "budget",
        Cancelled = "cancelled",
        Interrupted = "interrupted",
        Limit = "limit",
        Forge = "forge",
        Other = "other",
    }
);

impl FailureClass {
    /// The class of a failed review's `error` text. The texts are the server's own messages
    /// (the agent's and the forge's error types, the cancel reasons, the keeper's), so old rows
    /// are classed the same as new ones; the first matching rule wins, in the order of the table
    /// in docs/review-service.md, "Failure classes".
    pub fn of(error: &str) -> Self {
        let e = error.to_ascii_lowercase();
        let has = |needles: &[&str]| needles.iter().any(|n| e.contains(n));
        if has(&[
            "stopped by user",
            "superseded by a newer push",
            "interrupted by shutdown",
            "the review run was cancelled",
        ]) {
            Self::Cancelled
        } else if has(&["interrupted"]) {
            Self::Interrupted
        } else if has(&[
            "no automatic retry: a configuration",
            "no api key for provider",
            "unknown model provider",
            "app credentials",
            "model catalog:",
            "model spec",
        ]) {
            Self::Configuration
        } else if has(&["budget exceeded"]) {
            Self::Budget
        } else if has(&["step limit", "review_max_tree_entries"]) {
            Self::Limit
        } else if has(&["timeout", "timed out"]) {
            Self::Timeout
        } else if has(&[
            "answered 429",
            "answered 503",
            "answered 529",
            "overloaded",
            "rate limit",
            "rate_limit",
        ]) {
            Self::Overloaded
        } else if has(&["github ", "gitlab "]) {
            Self::Forge
        } else {
            Self::Other
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_servers_own_failure_messages_fall_in_their_class() {
        use FailureClass as C;
        let table = [
            ("Stopped by user", C::Cancelled),
            ("superseded by a newer push", C::Cancelled),
            ("interrupted by shutdown", C::Cancelled),
            ("interrupted by restart", C::Interrupted),
            (
                "interrupted: its replica stopped renewing its lease",
                C::Interrupted,
            ),
            (
                "running the agent: model provider answered 401: invalid x-api-key (no automatic \
                 retry: a configuration or credentials error, which a retry cannot fix; fix it \
                 and retry by hand)",
                C::Configuration,
            ),
            (
                "no API key for provider openai: set the `third_api_key` setting or the \
                 THIRD_API_KEY environment variable",
                C::Configuration,
            ),
            (
                "budget exceeded: 120000 tokens over REVIEW_MAX_TOKENS 100000",
                C::Budget,
            ),
            (
                "the agent used its step limit of 40 model calls without finishing",
                C::Limit,
            ),
            (
                "the tree has 300000 entries (limits: REVIEW_MAX_TREE_ENTRIES, REVIEW_MAX_TREE_BYTES)",
                C::Limit,
            ),
            ("timeout: no model progress for 120 s", C::Timeout),
            ("model provider answered 529: Overloaded", C::Overloaded),
            (
                "model provider answered 429: rate limit reached",
                C::Overloaded,
            ),
            ("GitHub unreachable: connection refused", C::Forge),
            (
                "the agent finished without posting a review or comment",
                C::Other,
            ),
        ];
        for (error, class) in table {
            assert_eq!(FailureClass::of(error), class, "{error}");
        }
    }

    /// Every value's JSON is its `as_str` text in quotes, that text parses back to it, and the
    /// OpenAPI schema lists exactly those texts.
    fn round_trips<T>(all: &[T])
    where
        T: Copy
            + fmt::Debug
            + fmt::Display
            + PartialEq
            + Serialize
            + FromStr<Err = String>
            + for<'a> Deserialize<'a>
            + utoipa::PartialSchema,
    {
        let mut json = Vec::new();
        for v in all {
            let text = v.to_string();
            assert_eq!(serde_json::to_string(v).unwrap(), format!("\"{text}\""));
            assert_eq!(text.parse::<T>().unwrap(), *v);
            assert_eq!(
                serde_json::from_str::<T>(&format!("\"{text}\"")).unwrap(),
                *v
            );
            json.push(serde_json::Value::from(text));
        }
        let schema = serde_json::to_value(T::schema()).unwrap();
        assert_eq!(schema, serde_json::json!({"type": "string", "enum": json}));
    }

    #[test]
    fn every_enum_maps_to_the_spec_text_in_json_sql_and_openapi() {
        round_trips(ReviewStatus::ALL);
        round_trips(Trigger::ALL);
        round_trips(FindingKind::ALL);
        round_trips(FindingOutcome::ALL);
        round_trips(Severity::ALL);
        round_trips(ReviewEvent::ALL);
        round_trips(Side::ALL);
        round_trips(FailureClass::ALL);
        let texts = |all: &[ReviewStatus]| all.iter().map(|s| s.as_str()).collect::<Vec<_>>();
        assert_eq!(
            texts(ReviewStatus::ALL),
            ["pending", "running", "completed", "failed", "skipped"]
        );
        assert_eq!(
            Trigger::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
            [
                "opened",
                "synchronize",
                "reopened",
                "command",
                "retry",
                "improve",
                "ready_for_review",
                "reply",
                "ask"
            ]
        );
        assert_eq!(
            serde_json::to_string(&ReviewEvent::RequestChanges).unwrap(),
            "\"REQUEST_CHANGES\""
        );
    }

    #[test]
    fn a_nullable_field_schema_admits_null() {
        let nullable = serde_json::to_value(Severity::field_schema(true, "d")).unwrap();
        assert_eq!(
            nullable,
            serde_json::json!({
                "type": ["string", "null"],
                "enum": ["blocking", "nit", "question", null],
                "description": "d",
            })
        );
    }

    #[test]
    fn unknown_text_is_an_error_naming_the_allowed_values() {
        assert_eq!(
            "bogus".parse::<Severity>().unwrap_err(),
            "unknown Severity \"bogus\"; expected one of: blocking, nit, question"
        );
        // Case matters: the column text is exact.
        assert!("Completed".parse::<ReviewStatus>().is_err());
        assert!("comment".parse::<ReviewEvent>().is_err());
        assert!(serde_json::from_str::<FindingKind>("\"note\"").is_err());
    }

    #[test]
    fn only_completed_failed_and_skipped_are_terminal() {
        let terminal: Vec<_> = ReviewStatus::ALL
            .iter()
            .filter(|s| s.is_terminal())
            .map(|s| s.as_str())
            .collect();
        assert_eq!(terminal, ["completed", "failed", "skipped"]);
    }
}
