//! The tool registry (after codex-rs `tools/registry.rs`): handlers keyed by name. An unknown
//! tool or arguments that do not parse go back to the model as a tool error instead of
//! aborting the turn; so do refused paths and poster failures.

mod fs;
pub mod path;
mod post;

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::diff::{CappedDiff, ParsedDiff};
use crate::provider::{ToolCall, ToolResult, ToolSpec};
pub use post::ReviewPoster;

/// What the posting tools did during a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PostState {
    /// A formal review was posted.
    pub review: bool,
    /// Markdown comments posted.
    pub comments: u32,
    /// Inline comments folded into the review body (outside the diff).
    pub folded: u32,
}

impl PostState {
    /// Whether anything reached the forge.
    pub fn posted_anything(&self) -> bool {
        self.review || self.comments > 0
    }
}

/// Everything a tool may touch during one run.
pub struct ToolContext<'a> {
    /// The worktree root.
    pub root: path::Root,
    /// The full diff, parsed (inline comments are checked against it).
    pub diff: ParsedDiff,
    /// The diff as the model sees it (capped at file boundaries).
    pub capped: CappedDiff,
    /// The cap in bytes (stated in the summary when it cut something).
    pub cap_bytes: usize,
    /// Where posts go.
    pub poster: &'a dyn ReviewPoster,
    /// What was posted so far.
    pub state: Mutex<PostState>,
}

impl ToolContext<'_> {
    /// A copy of the post state.
    pub fn state(&self) -> PostState {
        self.state.lock().map(|s| *s).unwrap_or_default()
    }

    fn update(&self, f: impl FnOnce(&mut PostState)) {
        if let Ok(mut s) = self.state.lock() {
            f(&mut s);
        }
    }
}

/// A tool: its schema for the model and its handler. `Err` is a message for the model.
#[async_trait::async_trait]
pub trait ToolHandler: Send + Sync {
    /// The name, description and argument schema.
    fn spec(&self) -> ToolSpec;
    /// Runs the tool on parsed JSON arguments.
    async fn handle(&self, ctx: &ToolContext<'_>, args: Value) -> Result<String, String>;
}

/// Deserializes a tool's arguments, with a message that names the tool and the problem.
pub(crate) fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, String> {
    serde_json::from_value(args).map_err(|e| {
        format!("invalid arguments for {tool}: {e}. Check the tool's schema and call it again.")
    })
}

/// Handlers by name.
pub struct ToolRegistry {
    tools: BTreeMap<String, Box<dyn ToolHandler>>,
}

impl ToolRegistry {
    /// The review tools: read_file, list_files, grep, git_diff, post_comment, post_review.
    pub fn review_tools() -> ToolRegistry {
        let handlers: Vec<Box<dyn ToolHandler>> = vec![
            Box::new(fs::ReadFile),
            Box::new(fs::ListFiles),
            Box::new(fs::Grep),
            Box::new(fs::GitDiff),
            Box::new(post::PostComment),
            Box::new(post::PostReview),
        ];
        ToolRegistry {
            tools: handlers.into_iter().map(|h| (h.spec().name, h)).collect(),
        }
    }

    /// The specs offered to the model, ordered by name.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|h| h.spec()).collect()
    }

    /// Runs one call; never fails: problems become an `is_error` result for the model.
    pub async fn dispatch(&self, ctx: &ToolContext<'_>, call: &ToolCall) -> ToolResult {
        let result = match self.tools.get(&call.name) {
            None => Err(format!(
                "unknown tool {:?}; the available tools are: {}",
                call.name,
                self.tools.keys().cloned().collect::<Vec<_>>().join(", ")
            )),
            Some(handler) => {
                let raw = call.arguments.trim();
                let parsed = if raw.is_empty() {
                    Ok(Value::Object(Default::default()))
                } else {
                    serde_json::from_str::<Value>(raw).map_err(|e| {
                        format!(
                            "arguments of {} are not valid JSON ({e}); send a JSON object",
                            call.name
                        )
                    })
                };
                match parsed {
                    Ok(args) if args.is_object() => handler.handle(ctx, args).await,
                    Ok(_) => Err(format!("arguments of {} must be a JSON object", call.name)),
                    Err(e) => Err(e),
                }
            }
        };
        match result {
            Ok(content) => ToolResult {
                call_id: call.id.clone(),
                content,
                is_error: false,
            },
            Err(message) => ToolResult {
                call_id: call.id.clone(),
                content: format!("error: {message}"),
                is_error: true,
            },
        }
    }
}
