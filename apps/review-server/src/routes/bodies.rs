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
    /// Every message, tool call, tool result and usage, in order.
    pub items: Vec<TranscriptItem>,
}

/// What a transcript item records (its `type`): the prompts (`system`, `message`, `user`),
/// each model answer (`assistant`, with its usage and cost), each tool call and its result,
/// the verifier's conversation (`verify`), and the review's milestones (`budget`, `error`,
/// `pass`, `passes`, `verification`, `recheck`, `answer`). crates/agent writes them.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[expect(
    dead_code,
    reason = "an OpenAPI schema: the agent writes the items as JSON, this documents them"
)]
pub(crate) enum TranscriptItemType {
    System,
    Message,
    User,
    Assistant,
    ToolCall,
    ToolResult,
    Verify,
    Verification,
    Budget,
    Error,
    Pass,
    Passes,
    Recheck,
    Answer,
}

/// One item of a transcript (crates/agent/src/transcript.rs). Every item has `type` and
/// `at`; the other fields are present only on the types named in their description. Holds
/// every field the agent writes (an end-to-end test checks real transcripts against this
/// schema), so clients need no casts.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TranscriptItem {
    #[serde(rename = "type")]
    pub kind: TranscriptItemType,
    /// When it was recorded, epoch seconds.
    pub at: i64,
    /// `message`, `verify`: `user`, `assistant` or `tool`.
    #[schema(nullable = false)]
    pub role: Option<String>,
    /// Prompts and model answers: the text (empty for an answer of tool calls only).
    #[schema(nullable = false)]
    pub text: Option<String>,
    /// `assistant`, `tool_call`, `tool_result`, `budget`: the model call it belongs to, from 1.
    #[schema(nullable = false)]
    pub step: Option<i64>,
    /// `tool_call`: the provider's call id.
    #[schema(nullable = false)]
    pub id: Option<String>,
    /// `tool_result`: the id of the call it answers.
    #[schema(nullable = false)]
    pub call_id: Option<String>,
    /// `tool_call`, `tool_result`, `verify` results: the tool's name.
    #[schema(nullable = false)]
    pub name: Option<String>,
    /// `tool_call`: the arguments as JSON text, exactly as the model wrote them.
    #[schema(nullable = false)]
    pub arguments: Option<String>,
    /// `tool_result`: what the model was sent back.
    #[schema(nullable = false)]
    pub content: Option<String>,
    /// `tool_result`: the tool failed (its content says why).
    #[schema(nullable = false)]
    pub is_error: Option<bool>,
    /// `error`, `verify`: what failed.
    #[schema(nullable = false)]
    pub message: Option<String>,
    /// `error`: the review was already on the forge when it failed.
    #[schema(nullable = false)]
    pub after_post: Option<bool>,
    /// `message`: the reminder sent when the model answered without posting.
    #[schema(nullable = false)]
    pub nudge: Option<bool>,
    /// `assistant`, `verify`: the tool calls of that answer.
    #[schema(nullable = false)]
    pub tool_calls: Option<Vec<TranscriptToolCall>>,
    /// `assistant`: why the model stopped (`EndTurn`, `ToolUse`, `MaxTokens`, ...).
    pub stop_reason: Option<String>,
    /// `assistant`, `verify`: the tokens of that model call.
    #[schema(nullable = false)]
    pub usage: Option<TranscriptUsage>,
    /// `assistant`, `verify`: that model call's cost in USD at the catalog's prices (0 when
    /// the catalog has no price), the units of ReviewRow.cost; their sum is the cost so far.
    #[schema(nullable = false)]
    pub cost: Option<f64>,
    /// `verification`: what posting the verified review answered.
    #[schema(nullable = false)]
    pub result: Option<String>,
    /// `budget`: the limit that was reached.
    #[schema(nullable = false)]
    pub reason: Option<String>,
    /// `pass`: this pass's number, from 1 (of `of`); `passes`: how many passes ran.
    #[schema(nullable = false)]
    pub pass: Option<i64>,
    /// `pass`: how many passes the review makes.
    #[schema(nullable = false)]
    pub of: Option<i64>,
    /// `pass`: why the pass failed.
    #[schema(nullable = false)]
    pub error: Option<String>,
    /// `passes`: how many passes made candidates.
    #[schema(nullable = false)]
    pub passes: Option<i64>,
    /// `passes`: each merged candidate's place and how many passes found it:
    /// `{path, line, found_by}`.
    #[schema(nullable = false)]
    pub candidates: Option<Vec<serde_json::Value>>,
    /// `recheck`: each earlier finding rechecked, `{finding_id, verdict, ...}`.
    #[schema(nullable = false)]
    pub rechecked: Option<Vec<serde_json::Value>>,
    /// `answer`: `explain`, `agree_intended` or `suggest`.
    #[schema(nullable = false)]
    pub verdict: Option<String>,
    /// `answer`: the text posted in the thread.
    #[schema(nullable = false)]
    pub body: Option<String>,
}

/// One tool call of a model answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TranscriptToolCall {
    /// The provider's call id.
    pub id: String,
    /// The tool's name as the model wrote it.
    pub name: String,
    /// The arguments as JSON text, exactly as received (may be invalid JSON).
    pub arguments: String,
}

/// The tokens of one model call.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TranscriptUsage {
    /// Uncached input tokens.
    pub input_tokens: i64,
    /// Output tokens (including reasoning).
    pub output_tokens: i64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read_tokens: i64,
    /// Input tokens written to the provider's prompt cache (Anthropic only).
    pub cache_write_tokens: i64,
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
