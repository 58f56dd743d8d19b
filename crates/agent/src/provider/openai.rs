//! OpenAI chat completions (`POST {base}/chat/completions`, Bearer key), also spoken by the
//! Z.ai coding plan. Streamed chunks carry `choices[].delta` with text and tool-call pieces keyed
//! by `index` (the call `id` and name come only in the first piece); usage comes in a final
//! chunk because the request always sets `stream_options.include_usage`. `prompt_tokens`
//! includes cached tokens (`prompt_tokens_details.cached_tokens`), which we count separately.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::types::*;
use crate::error::AgentError;

/// The JSON body of a chat-completions request.
pub fn request_body(req: &ModelRequest, stream: bool) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for m in &req.messages {
        match m {
            Message::User { text } => messages.push(json!({"role": "user", "content": text})),
            Message::Assistant { text, tool_calls } => {
                let mut msg = json!({
                    "role": "assistant",
                    "content": if text.is_empty() { Value::Null } else { json!(text) },
                });
                if !tool_calls.is_empty() {
                    msg["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments},
                            })
                        })
                        .collect();
                }
                messages.push(msg);
            }
            Message::Tool { results } => {
                for r in results {
                    messages.push(json!({
                        "role": "tool",
                        "tool_call_id": r.call_id,
                        "content": r.content,
                    }));
                }
            }
        }
    }
    let mut body = json!({"model": req.model, "messages": messages, "stream": stream});
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                })
            })
            .collect();
    }
    body
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireUsage {
    prompt_tokens: i64,
    completion_tokens: i64,
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PromptDetails {
    cached_tokens: Option<i64>,
}

impl WireUsage {
    fn to_usage(&self) -> Usage {
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0);
        Usage {
            input_tokens: (self.prompt_tokens - cached).max(0),
            output_tokens: self.completion_tokens,
            cache_read_tokens: cached,
            cache_write_tokens: 0,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireFunction {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireToolCall {
    index: Option<usize>,
    id: Option<String>,
    function: WireFunction,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireMessage {
    content: Option<String>,
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireChoice {
    message: Option<WireMessage>,
    delta: Option<WireMessage>,
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireResponse {
    choices: Vec<WireChoice>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

fn stop_of(s: &str) -> Option<StopReason> {
    if s.is_empty() {
        None
    } else {
        Some(StopReason::from_wire(s))
    }
}

/// Parses a non-streaming response body into events.
pub fn parse_response(body: &[u8]) -> Result<Vec<ResponseEvent>, AgentError> {
    let resp: WireResponse = serde_json::from_slice(body)
        .map_err(|e| AgentError::transport("unreadable chat-completions response", e))?;
    if let Some(err) = resp.error {
        return Err(super::provider_error(0, &json!({"error": err}).to_string()));
    }
    let mut events = vec![ResponseEvent::Created];
    let mut stop = None;
    if let Some(choice) = resp.choices.into_iter().next() {
        let msg = choice.message.unwrap_or_default();
        if let Some(text) = msg.content.filter(|t| !t.is_empty()) {
            events.push(ResponseEvent::TextDelta(text));
        }
        for (i, c) in msg.tool_calls.unwrap_or_default().into_iter().enumerate() {
            events.push(ResponseEvent::ToolCall(ToolCall {
                id: c.id.unwrap_or_else(|| format!("call_{i}")),
                name: c.function.name.unwrap_or_default(),
                arguments: c.function.arguments.unwrap_or_default(),
            }));
        }
        stop = choice.finish_reason.as_deref().and_then(stop_of);
    }
    events.push(ResponseEvent::Usage(
        resp.usage.map(|u| u.to_usage()).unwrap_or_default(),
    ));
    events.push(ResponseEvent::Completed { stop });
    Ok(events)
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Turns streamed chunks into [`ResponseEvent`]s; tool calls are keyed by `index` and emitted
/// whole at the end (`[DONE]` or end of stream).
#[derive(Default)]
pub struct StreamParser {
    started: bool,
    calls: BTreeMap<usize, PartialCall>,
    stop: Option<StopReason>,
    finished: bool,
}

impl StreamParser {
    /// Handles one event's `data`; returns the events it yields and whether the stream is done.
    pub fn on_data(&mut self, data: &str) -> Result<(Vec<ResponseEvent>, bool), AgentError> {
        if data.trim() == "[DONE]" {
            return Ok((self.finish(), true));
        }
        let chunk: WireResponse = serde_json::from_str(data)
            .map_err(|e| AgentError::transport("unreadable chat-completions stream chunk", e))?;
        if let Some(err) = chunk.error {
            return Err(super::provider_error(0, &json!({"error": err}).to_string()));
        }
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.push(ResponseEvent::Created);
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    out.push(ResponseEvent::TextDelta(text));
                }
                for (pos, tc) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
                    let index = tc.index.unwrap_or(pos);
                    let call = self.calls.entry(index).or_default();
                    if let Some(id) = tc.id.filter(|s| !s.is_empty()) {
                        call.id = id;
                    }
                    if let Some(name) = tc.function.name.filter(|s| !s.is_empty()) {
                        call.name.push_str(&name);
                    }
                    if let Some(args) = tc.function.arguments {
                        call.arguments.push_str(&args);
                    }
                    out.push(ResponseEvent::ToolCallDelta);
                }
            }
            if let Some(stop) = choice.finish_reason.as_deref().and_then(stop_of) {
                self.stop = Some(stop);
            }
        }
        if let Some(u) = chunk.usage {
            out.push(ResponseEvent::Usage(u.to_usage()));
        }
        if out.is_empty() {
            out.push(ResponseEvent::KeepAlive);
        }
        Ok((out, false))
    }

    /// Emits the assembled tool calls and `Completed` once (at `[DONE]` or when the stream ends
    /// after a finish reason; a stream cut before either yields nothing, so the caller sees an
    /// incomplete response).
    pub fn finish(&mut self) -> Vec<ResponseEvent> {
        if self.finished || (!self.started && self.stop.is_none()) {
            return Vec::new();
        }
        self.finished = true;
        let mut out: Vec<ResponseEvent> = std::mem::take(&mut self.calls)
            .into_iter()
            .map(|(i, c)| {
                ResponseEvent::ToolCall(ToolCall {
                    id: if c.id.is_empty() {
                        format!("call_{i}")
                    } else {
                        c.id
                    },
                    name: c.name,
                    arguments: c.arguments,
                })
            })
            .collect();
        out.push(ResponseEvent::Completed {
            stop: self.stop.clone(),
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn tool_call_deltas_are_keyed_by_index() {
        let mut p = StreamParser::default();
        let chunks = [
            r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]},"finish_reason":null}],"usage":null}"#,
            r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"git_diff","arguments":"{}"}}]},"finish_reason":null}]}"#,
            r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]},"finish_reason":null}]}"#,
            r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.rs\"}"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,"prompt_tokens_details":{"cached_tokens":60}}}"#,
            "[DONE]",
        ];
        let mut resp = ModelResponse::default();
        for c in chunks {
            for ev in p.on_data(c).unwrap().0 {
                resp.apply(ev);
            }
        }
        assert_eq!(
            resp.tool_calls,
            vec![
                ToolCall {
                    id: "call_a".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a.rs"}"#.into()
                },
                ToolCall {
                    id: "call_b".into(),
                    name: "git_diff".into(),
                    arguments: "{}".into()
                },
            ]
        );
        assert_eq!(
            resp.usage,
            Usage {
                input_tokens: 40,
                output_tokens: 20,
                cache_read_tokens: 60,
                cache_write_tokens: 0
            }
        );
        assert_eq!(resp.stop, Some(StopReason::ToolUse));
        assert!(resp.completed);
    }

    #[test]
    fn empty_finish_reason_from_gateways_is_not_an_error() {
        let body = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":""}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;
        let mut resp = ModelResponse::default();
        for ev in parse_response(body).unwrap() {
            resp.apply(ev);
        }
        assert_eq!(resp.text, "ok");
        assert_eq!(resp.stop, None);
        assert_eq!(resp.usage.input_tokens, 3);
    }

    #[test]
    fn streaming_request_asks_for_usage() {
        let req = ModelRequest {
            model: "gpt".into(),
            system: "s".into(),
            messages: vec![Message::User { text: "u".into() }],
            tools: vec![],
            max_tokens: 10,
        };
        let body = request_body(&req, true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["messages"][0]["role"], "system");
    }
}
