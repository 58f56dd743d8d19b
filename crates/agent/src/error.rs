//! The one error enum of the agent crate. Every message names what went wrong in words an
//! operator understands, because the app stores it as the review's `error` (docs/review-service.md §2).

/// Why an agent call failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The provider's API key is not configured: neither the stored setting nor its environment
    /// fallback is set (docs/configuration.md: providers and key slots).
    #[error(
        "no API key for provider {provider}: set the `{setting}` setting or the {env} environment variable"
    )]
    MissingKey {
        /// Provider id, e.g. `anthropic`.
        provider: String,
        /// Settings key, e.g. `agent_api_key`.
        setting: &'static str,
        /// Environment fallback, e.g. `AGENT_API_KEY`.
        env: &'static str,
    },
    /// The model spec names a provider the registry does not know.
    #[error("unknown model provider {0:?}: expected one of anthropic, zai-coding-plan, openai")]
    UnknownProvider(String),
    /// The provider answered with an error status; `message` is the provider's own
    /// `error.message` when it sent one, else the start of the body.
    #[error("model provider answered {status}: {message}")]
    Provider {
        /// HTTP status (0 when the error arrived inside a stream).
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The provider could not be reached or sent something we could not read: what was being
    /// done, and the underlying error when there is one.
    #[error("model provider request failed: {}", joined(.context, .source))]
    Transport {
        /// What failed, e.g. the URL or "reading the stream".
        context: String,
        /// The HTTP client's or parser's error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// No model progress for the idle timeout, or the run exceeded its total timeout.
    #[error("timeout: {0}")]
    Timeout(String),
    /// The run was cancelled (stopped by a user or superseded by a newer push).
    #[error("the review run was cancelled")]
    Cancelled,
    /// The model finished twice (once after a nudge) without calling post_review or post_comment.
    #[error("the agent finished without posting a review or comment")]
    NothingPosted,
    /// The run used all its model steps.
    #[error("the agent used its step limit of {0} model calls without finishing")]
    StepLimit(u32),
    /// The run reached its budget (REVIEW_MAX_TOKENS / REVIEW_MAX_COST or their settings)
    /// before anything was posted; the message names the limit. Not a genuine failure: no
    /// automatic retry (docs/security.md, "Review budget").
    #[error("budget exceeded: {0}")]
    BudgetExceeded(String),
    /// The transcript could not be written or read.
    #[error("transcript: {}", joined(.context, .source))]
    Transcript {
        /// The file or directory, and what was wrong with it.
        context: String,
        /// The I/O or JSON error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// No transcript exists for this session id.
    #[error("no transcript for session {0:?}")]
    SessionNotFound(String),
    /// A session id with characters other than `[A-Za-z0-9_-]`.
    #[error("invalid session id {0:?}: only letters, digits, '_' and '-' are allowed")]
    InvalidSessionId(String),
    /// The worktree directory is missing or unreadable.
    #[error("worktree {}", joined(.path, .source))]
    Worktree {
        /// The worktree's path.
        path: String,
        /// The I/O error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The forge refused a review the run posted itself after verification (no model was
    /// left to tell); the message is the forge's.
    #[error("posting the review failed: {0}")]
    Post(String),
    /// The model catalog could not be parsed.
    #[error("model catalog: {0}")]
    Catalog(#[source] serde_json::Error),
}

/// The underlying error of a failure, kept as its `source()` (reqwest, serde_json, I/O, ...).
pub type ErrorSource = Box<dyn std::error::Error + Send + Sync + 'static>;

/// `context: source`, leaving out an empty part, so the message reads as it did when the
/// source was formatted into it.
fn joined(context: &str, source: &Option<ErrorSource>) -> String {
    match source {
        Some(s) if context.is_empty() => s.to_string(),
        Some(s) => format!("{context}: {s}"),
        None => context.to_owned(),
    }
}

impl AgentError {
    /// [`AgentError::Transport`] with its underlying error.
    pub fn transport(context: impl Into<String>, source: impl Into<ErrorSource>) -> AgentError {
        AgentError::Transport {
            context: context.into(),
            source: Some(source.into()),
        }
    }

    /// [`AgentError::Transcript`] with its underlying error.
    pub fn transcript(context: impl Into<String>, source: impl Into<ErrorSource>) -> AgentError {
        AgentError::Transcript {
            context: context.into(),
            source: Some(source.into()),
        }
    }

    /// True when the run was cancelled on purpose (stop or supersede), which the caller must not
    /// treat as a genuine failure (no automatic retry, docs/review-service.md §3).
    pub fn is_cancelled(&self) -> bool {
        matches!(self, AgentError::Cancelled)
    }

    /// True when the run stopped at its budget: not a genuine failure, never retried.
    pub fn is_budget(&self) -> bool {
        matches!(self, AgentError::BudgetExceeded(_))
    }

    /// True for timeouts (a genuine failure, docs/architecture.md, Lifecycle extras).
    pub fn is_timeout(&self) -> bool {
        matches!(self, AgentError::Timeout(_))
    }
}
