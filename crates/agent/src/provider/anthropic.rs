//! Anthropic Messages API (`POST {base}/v1/messages`, headers `x-api-key` and
//! `anthropic-version: 2023-06-01`): request building, the non-streaming response, and the SSE
//! event sequence `message_start`, `content_block_start`, `content_block_delta` (`text_delta`,
//! `input_json_delta`), `content_block_stop`, `message_delta`, `message_stop` (plus `ping` and
//! `error`). Usage: `message_start` carries the input and cache counts, `message_delta` the
//! cumulative output count. Unknown fields and event types are ignored.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::types::*;
use crate::error::AgentError;

/// The JSON body of a Messages request. The system prompt and the last message block carry
/// `cache_control` breakpoints so that later turns read the shared prefix from the cache.
pub fn request_body(req: &ModelRequest, stream: bool) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    for m in &req.messages {
        match m {
            Message::User { text } => messages.push(json!({
                "role": "user",
                "content": [{"type": "text", "text": text}],
            })),
            Message::Assistant { text, tool_calls } => {
                let mut content = Vec::new();
                if !text.is_empty() {
                    content.push(json!({"type": "text", "text": text}));
                }
                for c in tool_calls {
                    // The API wants an object; arguments that were not one are sent as `{}`
                    // (the tool error we answered with tells the model what was wrong).
                    let input = serde_json::from_str::<Value>(&c.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    content.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    );
                }
                if content.is_empty() {
                    content.push(json!({"type": "text", "text": "(no output)"}));
                }
                messages.push(json!({"role": "assistant", "content": content}));
            }
            Message::Tool { results } => {
                let content: Vec<Value> = results
                    .iter()
                    .map(|r| {
                        json!({
                            "type": "tool_result",
                            "tool_use_id": r.call_id,
                            "content": r.content,
                            "is_error": r.is_error,
                        })
                    })
                    .collect();
                messages.push(json!({"role": "user", "content": content}));
            }
        }
    }
    if let Some(last) = messages
        .last_mut()
        .and_then(|m| m.get_mut("content"))
        .and_then(Value::as_array_mut)
        .and_then(|c| c.last_mut())
        .and_then(Value::as_object_mut)
    {
        last.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
    let mut body = json!({
        "model": req.model,
        "max_tokens": req.max_tokens,
        "messages": messages,
        "stream": stream,
    });
    if !req.system.is_empty() {
        body["system"] = json!([{
            "type": "text",
            "text": req.system,
            "cache_control": {"type": "ephemeral"},
        }]);
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    body
}

/// `usage` of a message (every count optional; `message_delta` may repeat some).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireUsage {
    input_tokens: Option<i64>,
    output_tokens: Option<i64>,
    cache_creation_input_tokens: Option<i64>,
    cache_read_input_tokens: Option<i64>,
}

impl WireUsage {
    fn merge_into(&self, u: &mut Usage) {
        if let Some(v) = self.input_tokens {
            u.input_tokens = v;
        }
        if let Some(v) = self.output_tokens {
            u.output_tokens = v;
        }
        if let Some(v) = self.cache_creation_input_tokens {
            u.cache_write_tokens = v;
        }
        if let Some(v) = self.cache_read_input_tokens {
            u.cache_read_tokens = v;
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Vec<ContentBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: WireUsage,
}

/// Parses a non-streaming response body into events.
pub fn parse_response(body: &[u8]) -> Result<Vec<ResponseEvent>, AgentError> {
    let msg: WireMessage = serde_json::from_slice(body)
        .map_err(|e| AgentError::transport("unreadable Anthropic response", e))?;
    let mut events = vec![ResponseEvent::Created];
    for block in msg.content {
        match block {
            ContentBlock::Text { text } => events.push(ResponseEvent::TextDelta(text)),
            ContentBlock::ToolUse { id, name, input } => {
                events.push(ResponseEvent::ToolCall(ToolCall {
                    id,
                    name,
                    arguments: input_text(&input),
                }))
            }
            ContentBlock::Other => {}
        }
    }
    let mut usage = Usage::default();
    msg.usage.merge_into(&mut usage);
    events.push(ResponseEvent::Usage(usage));
    events.push(ResponseEvent::Completed {
        stop: msg.stop_reason.as_deref().map(StopReason::from_wire),
    });
    Ok(events)
}

fn input_text(input: &Value) -> String {
    if input.is_null() {
        "{}".to_owned()
    } else {
        input.to_string()
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: WireUsage,
    },
    MessageStop,
    Ping,
    Error {
        error: WireError,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct MessageDeltaBody {
    stop_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireError {
    #[serde(rename = "type")]
    kind: String,
    message: String,
}

enum Block {
    Text,
    Tool {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

/// Turns streamed events into [`ResponseEvent`]s, assembling tool calls per block index.
#[derive(Default)]
pub struct StreamParser {
    blocks: BTreeMap<usize, Block>,
    usage: Usage,
    stop: Option<StopReason>,
}

impl StreamParser {
    /// Handles one event's `data`; returns the events it yields and whether the message is done.
    pub fn on_data(&mut self, data: &str) -> Result<(Vec<ResponseEvent>, bool), AgentError> {
        let event: StreamEvent = serde_json::from_str(data)
            .map_err(|e| AgentError::transport("unreadable Anthropic stream event", e))?;
        let mut out = Vec::new();
        match event {
            StreamEvent::MessageStart { message } => {
                message.usage.merge_into(&mut self.usage);
                out.push(ResponseEvent::Created);
                out.push(ResponseEvent::Usage(self.usage));
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block {
                    ContentBlock::Text { text } => {
                        if !text.is_empty() {
                            out.push(ResponseEvent::TextDelta(text));
                        }
                        Block::Text
                    }
                    ContentBlock::ToolUse { id, name, input } => {
                        // Streaming sends `input: {}` here and the JSON in deltas.
                        let json = match &input {
                            Value::Object(m) if !m.is_empty() => input.to_string(),
                            _ => String::new(),
                        };
                        out.push(ResponseEvent::ToolCallDelta);
                        Block::Tool { id, name, json }
                    }
                    ContentBlock::Other => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                match (delta, self.blocks.get_mut(&index)) {
                    (BlockDelta::TextDelta { text }, _) => out.push(ResponseEvent::TextDelta(text)),
                    (
                        BlockDelta::InputJsonDelta { partial_json },
                        Some(Block::Tool { json, .. }),
                    ) => {
                        json.push_str(&partial_json);
                        out.push(ResponseEvent::ToolCallDelta);
                    }
                    _ => out.push(ResponseEvent::KeepAlive),
                }
            }
            StreamEvent::ContentBlockStop { index } => {
                if let Some(Block::Tool { id, name, json }) = self.blocks.remove(&index) {
                    let arguments = if json.trim().is_empty() {
                        "{}".to_owned()
                    } else {
                        json
                    };
                    out.push(ResponseEvent::ToolCall(ToolCall {
                        id,
                        name,
                        arguments,
                    }));
                } else {
                    out.push(ResponseEvent::KeepAlive);
                }
            }
            StreamEvent::MessageDelta { delta, usage } => {
                usage.merge_into(&mut self.usage);
                if let Some(s) = delta.stop_reason {
                    self.stop = Some(StopReason::from_wire(&s));
                }
                out.push(ResponseEvent::Usage(self.usage));
            }
            StreamEvent::MessageStop => {
                out.push(ResponseEvent::Completed {
                    stop: self.stop.clone(),
                });
                return Ok((out, true));
            }
            StreamEvent::Ping | StreamEvent::Other => out.push(ResponseEvent::KeepAlive),
            StreamEvent::Error { error } => {
                let status = match error.kind.as_str() {
                    "overloaded_error" => 529,
                    "rate_limit_error" => 429,
                    "api_error" => 500,
                    _ => 0,
                };
                return Err(AgentError::Provider {
                    status,
                    message: error.message,
                });
            }
        }
        Ok((out, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn streamed_tool_use_is_assembled_from_input_json_deltas() {
        let mut p = StreamParser::default();
        let events = [
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":7,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"git_diff","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"th\":\"a\"}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}"#,
            r#"{"type":"message_stop"}"#,
        ];
        let mut resp = ModelResponse::default();
        for e in events {
            for ev in p.on_data(e).unwrap().0 {
                resp.apply(ev);
            }
        }
        assert_eq!(resp.text, "Hi");
        assert_eq!(
            resp.tool_calls,
            vec![ToolCall {
                id: "toolu_1".into(),
                name: "git_diff".into(),
                arguments: r#"{"path":"a"}"#.into()
            }]
        );
        assert_eq!(
            resp.usage,
            Usage {
                input_tokens: 10,
                output_tokens: 42,
                cache_read_tokens: 7,
                cache_write_tokens: 5
            }
        );
        assert_eq!(resp.stop, Some(StopReason::ToolUse));
        assert!(resp.completed);
    }

    #[test]
    fn unknown_stop_reason_is_kept() {
        let body = br#"{"content":[{"type":"text","text":"x"}],"stop_reason":"pause_turn","usage":{"input_tokens":1,"output_tokens":2}}"#;
        let mut resp = ModelResponse::default();
        for ev in parse_response(body).unwrap() {
            resp.apply(ev);
        }
        assert_eq!(resp.stop, Some(StopReason::Other("pause_turn".into())));
        assert_eq!(resp.usage.output_tokens, 2);
    }

    #[test]
    fn stream_error_event_becomes_a_provider_error() {
        let mut p = StreamParser::default();
        let err = p
            .on_data(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            )
            .unwrap_err();
        assert!(
            matches!(err, AgentError::Provider { status: 529, ref message } if message == "Overloaded")
        );
    }

    #[test]
    fn request_has_cache_breakpoints_and_tool_results() {
        let req = ModelRequest {
            model: "claude".into(),
            system: "sys".into(),
            messages: vec![
                Message::User { text: "u".into() },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "t1".into(),
                        name: "x".into(),
                        arguments: "not json".into(),
                    }],
                },
                Message::Tool {
                    results: vec![ToolResult {
                        call_id: "t1".into(),
                        content: "bad".into(),
                        is_error: true,
                    }],
                },
            ],
            tools: vec![],
            max_tokens: 100,
        };
        let body = request_body(&req, true);
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(body["messages"][1]["content"][0]["input"], json!({}));
        let last = &body["messages"][2]["content"][0];
        assert_eq!(last["type"], "tool_result");
        assert_eq!(last["is_error"], true);
        assert_eq!(last["cache_control"]["type"], "ephemeral");
        assert_eq!(body["stream"], true);
    }
}
