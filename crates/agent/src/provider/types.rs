//! The provider-neutral conversation: what the loop sends (a [`ModelRequest`]) and what it gets
//! back (a closed stream of [`ResponseEvent`]s folded into a [`ModelResponse`]). Each wire
//! format maps to and from these types in its own module.

use serde::{Deserialize, Serialize};

/// A tool the model may call: name, description and a JSON schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool name, `[a-z_]+`.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON schema (an object schema) of the arguments.
    pub parameters: serde_json::Value,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id (Anthropic `toolu_…`, OpenAI `call_…`).
    pub id: String,
    /// The tool's name as the model wrote it (may be unknown to us).
    pub name: String,
    /// The arguments as JSON text, exactly as received (may be invalid JSON).
    pub arguments: String,
}

/// The outcome of one tool call, sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// Text the model reads.
    pub content: String,
    /// True when the tool failed (unknown tool, bad arguments, refused path, poster error).
    pub is_error: bool,
}

/// One message of the conversation (the system prompt travels separately).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Text from us (the PR context, or a nudge).
    User {
        /// The text.
        text: String,
    },
    /// What the model said: text and tool calls.
    Assistant {
        /// Text output ("" when none).
        text: String,
        /// Tool calls, in order.
        tool_calls: Vec<ToolCall>,
    },
    /// Results of the previous assistant message's tool calls, in the same order.
    Tool {
        /// One result per call.
        results: Vec<ToolResult>,
    },
}

/// One model call.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// Model id within the provider (no provider prefix).
    pub model: String,
    /// System instructions.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools offered; empty for plain completions.
    pub tools: Vec<ToolSpec>,
    /// Output token cap (sent as Anthropic `max_tokens`; OpenAI-format requests leave it to the
    /// provider because OpenAI and its compatibles disagree on the field's name).
    pub max_tokens: u32,
}

/// Token counts of one or more calls. `input` excludes cached tokens on both wire formats (the
/// OpenAI client subtracts `cached_tokens` from `prompt_tokens`), so the four add up to what was
/// billed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Uncached input tokens.
    pub input_tokens: i64,
    /// Output tokens (including reasoning).
    pub output_tokens: i64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read_tokens: i64,
    /// Input tokens written to the provider's prompt cache (Anthropic only).
    pub cache_write_tokens: i64,
}

impl Usage {
    /// Sum of the four counts.
    pub fn total(&self) -> i64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    /// Adds another call's counts.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// Why the model stopped. Open: providers and gateways add reasons (and some send `""`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum StopReason {
    /// The model finished its turn (Anthropic `end_turn`, OpenAI `stop`).
    EndTurn,
    /// The model wants tool results (Anthropic `tool_use`, OpenAI `tool_calls`).
    ToolUse,
    /// The output token cap was hit (Anthropic `max_tokens`, OpenAI `length`).
    MaxTokens,
    /// Anything else, verbatim.
    Other(String),
}

impl StopReason {
    /// Maps either vendor's text to a reason.
    pub fn from_wire(s: &str) -> StopReason {
        match s {
            "end_turn" | "stop" | "stop_sequence" => StopReason::EndTurn,
            "tool_use" | "tool_calls" | "function_call" => StopReason::ToolUse,
            "max_tokens" | "length" => StopReason::MaxTokens,
            other => StopReason::Other(other.to_owned()),
        }
    }
}

/// What a provider client emits while a response arrives (streamed or not): a closed set, so
/// the loop handles every case. Every event counts as model progress for the idle timeout.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseEvent {
    /// The response started (Anthropic `message_start`, OpenAI's first chunk).
    Created,
    /// A piece of output text.
    TextDelta(String),
    /// A piece of a tool call's arguments arrived (progress only; the call comes whole later).
    ToolCallDelta,
    /// A complete tool call.
    ToolCall(ToolCall),
    /// Token counts so far for this response (cumulative: the latest one wins).
    Usage(Usage),
    /// The response is complete.
    Completed {
        /// Why the model stopped (None when the provider did not say).
        stop: Option<StopReason>,
    },
    /// Server keep-alive (Anthropic `ping`); progress, nothing else.
    KeepAlive,
}

/// A whole model response, folded from its events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelResponse {
    /// All output text, concatenated.
    pub text: String,
    /// Tool calls in the order the model made them.
    pub tool_calls: Vec<ToolCall>,
    /// Token counts of this call.
    pub usage: Usage,
    /// Why the model stopped.
    pub stop: Option<StopReason>,
    /// Whether a `Completed` event arrived.
    pub completed: bool,
}

impl ModelResponse {
    /// Folds one event in.
    pub fn apply(&mut self, event: ResponseEvent) {
        match event {
            ResponseEvent::Created | ResponseEvent::ToolCallDelta | ResponseEvent::KeepAlive => {}
            ResponseEvent::TextDelta(t) => self.text.push_str(&t),
            ResponseEvent::ToolCall(c) => self.tool_calls.push(c),
            ResponseEvent::Usage(u) => self.usage = u,
            ResponseEvent::Completed { stop } => {
                self.stop = stop;
                self.completed = true;
            }
        }
    }
}
