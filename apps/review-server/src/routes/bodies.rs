//! The JSON bodies of the API that are no stored row: acknowledgements, the outcomes of retry
//! and stop and the session document (docs/review-service.md §4). They
//! exist for the OpenAPI document, so that every response has a precise schema that clients'
//! generated types and schemathesis' conformance checks hold the server to.

use serde::Serialize;
use utoipa::ToSchema;

/// `{"ok": true}`: the request was taken (GET /health, POST /webhook/github, POST
/// .../improve, POST .../retry).
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"ok": true}))]
pub(crate) struct Ack {
    /// Always `true`.
    pub ok: bool,
}

/// 502 of POST /api/reviews/:id/retry: the forge could not give the pull request.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RetryFailed {
    /// Always `false`.
    pub ok: bool,
    /// What the forge answered.
    pub error: String,
    /// `forge_unavailable`.
    pub code: crate::error::ErrorCode,
}

/// 200 of POST /api/reviews/:id/stop: `{ok:true, live}` when the review was stopped (`live`:
/// a run was aborted here), `{ok:false, reason:"already completed"}` when it had ended.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StopOutcome {
    pub ok: bool,
    /// Present when `ok`: whether a live run was aborted (else the row was failed directly).
    #[schema(nullable = false)]
    pub live: Option<bool>,
    /// Present when not `ok`: `already completed`.
    #[schema(nullable = false)]
    pub reason: Option<String>,
}

/// 200 of GET /api/reviews/:id/session: the transcript document, or an object whose `error`
/// says why it cannot be shown.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
#[expect(
    dead_code,
    reason = "an OpenAPI schema: it documents the answer, which the handler writes as JSON directly"
)]
pub(crate) enum SessionBody {
    Transcript(Transcript),
    Unavailable(SessionUnavailable),
    Unparseable(SessionUnparseable),
}

/// A session transcript as the agent writes it (crates/agent/src/transcript.rs); timestamps
/// are epoch seconds.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Transcript {
    pub session_id: String,
    /// `<provider>/<model>`.
    pub model: String,
    pub started_at: i64,
    pub updated_at: i64,
    /// `running`, `completed`, `failed` or `cancelled`.
    pub status: String,
    #[schema(nullable = false)]
    pub error: Option<String>,
    #[schema(nullable = false)]
    pub outcome: Option<serde_json::Value>,
    /// Every message, tool call, tool result and usage, in order: `{type, at, ...}`.
    pub items: Vec<serde_json::Value>,
}

/// The transcript cannot be read or is empty.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SessionUnavailable {
    /// `session-unavailable`.
    #[schema(pattern = "^session-unavailable$")]
    pub error: String,
    pub detail: String,
}

/// The transcript is not JSON: its first 1000 characters.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SessionUnparseable {
    /// `session-unparseable`.
    #[schema(pattern = "^session-unparseable$")]
    pub error: String,
    #[schema(max_length = 1000)]
    pub raw: String,
}
