//! The tool registry (after codex-rs `tools/registry.rs`): handlers keyed by name. An unknown
//! tool or arguments that do not parse go back to the model as a tool error instead of
//! aborting the turn; so do refused paths and poster failures.

mod fs;
pub mod path;
pub(crate) mod post;

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::diff::{CappedDiff, ParsedDiff};
use crate::error::AgentError;
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
    /// The review's summary says the run was cut short at its budget.
    pub budget_noted: bool,
    /// Inline comments left out for being under the minimum severity.
    pub below_min_severity: u32,
    /// post_review decided to post nothing: `review_quiet` and no findings.
    pub quiet: bool,
    /// post_review accepted a review that waits for verification ([`ToolContext::verify`]).
    pub pending: bool,
}

impl PostState {
    /// Whether anything reached the forge.
    pub fn posted_anything(&self) -> bool {
        self.review || self.comments > 0
    }

    /// Whether the run's posting is done: something reached the forge, or post_review chose
    /// to post nothing ([`PostState::quiet`]).
    pub fn settled(&self) -> bool {
        self.posted_anything() || self.quiet || self.pending
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
    /// Set when the run reached its budget: why, in words. post_review then says in the
    /// summary that the review was cut short (docs/security.md, "Review budget").
    pub budget_note: Mutex<Option<String>>,
    /// Whether post_review may keep an APPROVE ([`crate::ReviewJob::approve_allowed`]).
    pub approve_allowed: bool,
    /// Files of the diff that change the review's instructions or attributes
    /// ([`crate::prompt::instruction_changes`]); post_review says so in the summary.
    pub instruction_changes: Vec<String>,
    /// [`crate::ReviewJob::min_severity`].
    pub min_severity: review_domain::Severity,
    /// [`crate::ReviewJob::quiet`].
    pub quiet: bool,
    /// post_review keeps its review for verification instead of posting it
    /// ([`crate::ReviewJob::verify`] is set).
    pub verify: bool,
    /// post_review keeps every review for the run to merge with its other passes
    /// ([`crate::ReviewJob::passes`] over 1).
    pub defer_all: bool,
    /// The review post_review accepted while [`ToolContext::verify`] is on, until the run
    /// verifies and posts it.
    pub(crate) pending: Mutex<Option<post::Draft>>,
    /// A re-review's change since the last reviewed head ([`crate::ReviewJob::since`]): what
    /// git_diff shows by default.
    pub since: Option<SinceDiff>,
    /// [`crate::ReviewJob::range_note`]: post_review adds it to the summary.
    pub range_note: Option<String>,
    /// [`crate::ReviewJob::posted_fingerprints`].
    pub posted_fingerprints: Vec<(String, String)>,
    /// [`crate::ReviewJob::dismissed`].
    pub dismissed: Vec<(String, String, String)>,
}

/// The change since the last reviewed head, parsed and capped as the model sees it.
#[derive(Debug, Clone)]
pub struct SinceDiff {
    /// The last reviewed head's SHA.
    pub head_sha: String,
    /// The change, parsed.
    pub parsed: ParsedDiff,
    /// The change as git_diff shows it.
    pub capped: CappedDiff,
}

impl ToolContext<'_> {
    /// A copy of the post state.
    pub fn state(&self) -> PostState {
        self.state.lock().map(|s| *s).unwrap_or_default()
    }

    /// The budget note, if the run reached its budget.
    pub fn budget_note(&self) -> Option<String> {
        self.budget_note.lock().ok().and_then(|n| n.clone())
    }

    /// Takes the review waiting for verification, if any.
    pub(crate) fn take_pending(&self) -> Option<post::Draft> {
        self.pending.lock().ok().and_then(|mut p| p.take())
    }

    fn update(&self, f: impl FnOnce(&mut PostState)) {
        if let Ok(mut s) = self.state.lock() {
            f(&mut s);
        }
    }
}

/// Why a tool call has no result (after codex-rs's `FunctionCallError`): most failures are the
/// model's to handle, a few end the run.
#[derive(Debug)]
pub enum ToolError {
    /// Told to the model as the call's error result (`is_error`); the turn goes on. Bad
    /// arguments, a refused path, a missing file, a refused post.
    RespondToModel(String),
    /// The run cannot go on, whatever the model does next (its worktree is gone); the run
    /// ends with this error.
    Fatal(AgentError),
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::RespondToModel(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError::RespondToModel(message.to_owned())
    }
}

/// A tool: its schema for the model and its handler.
#[async_trait::async_trait]
pub trait ToolHandler: Send + Sync {
    /// The name, description and argument schema.
    fn spec(&self) -> ToolSpec;
    /// Runs the tool on parsed JSON arguments. Errors: [`ToolError`], which says whether the
    /// model is told or the run stops.
    async fn handle(&self, ctx: &ToolContext<'_>, args: Value) -> Result<String, ToolError>;
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
        let mut handlers = Self::read_handlers();
        handlers.push(Box::new(post::PostComment));
        handlers.push(Box::new(post::PostReview));
        Self::of(handlers)
    }

    /// The read-only tools, for the verifier: read_file, list_files, grep, git_diff.
    pub fn read_tools() -> ToolRegistry {
        Self::of(Self::read_handlers())
    }

    fn read_handlers() -> Vec<Box<dyn ToolHandler>> {
        vec![
            Box::new(fs::ReadFile),
            Box::new(fs::ListFiles),
            Box::new(fs::Grep),
            Box::new(fs::GitDiff),
        ]
    }

    fn of(handlers: Vec<Box<dyn ToolHandler>>) -> ToolRegistry {
        ToolRegistry {
            tools: handlers.into_iter().map(|h| (h.spec().name, h)).collect(),
        }
    }

    /// The specs offered to the model, ordered by name.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|h| h.spec()).collect()
    }

    /// Runs one call. Problems the model can act on (an unknown tool, arguments that are not a
    /// JSON object, [`ToolError::RespondToModel`]) become an `is_error` result for it. Errors:
    /// the [`ToolError::Fatal`] error of a handler, which ends the run.
    pub async fn dispatch(
        &self,
        ctx: &ToolContext<'_>,
        call: &ToolCall,
    ) -> Result<ToolResult, AgentError> {
        let result = match self.tools.get(&call.name) {
            None => Err(ToolError::RespondToModel(format!(
                "unknown tool {:?}; the available tools are: {}",
                call.name,
                self.tools.keys().cloned().collect::<Vec<_>>().join(", ")
            ))),
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
                    Ok(_) => Err(ToolError::RespondToModel(format!(
                        "arguments of {} must be a JSON object",
                        call.name
                    ))),
                    Err(e) => Err(ToolError::RespondToModel(e)),
                }
            }
        };
        match result {
            Ok(content) => Ok(ToolResult {
                call_id: call.id.clone(),
                content,
                is_error: false,
            }),
            Err(ToolError::RespondToModel(message)) => Ok(ToolResult {
                call_id: call.id.clone(),
                content: format!("error: {message}"),
                is_error: true,
            }),
            Err(ToolError::Fatal(e)) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use review_domain::{PostedReview, ReviewSubmission};

    struct NoPoster;

    #[async_trait::async_trait]
    impl ReviewPoster for NoPoster {
        async fn post_comment(&self, _: &str) -> Result<Option<i64>, String> {
            Err("forge down".into())
        }
        async fn post_review(&self, _: &ReviewSubmission) -> Result<PostedReview, String> {
            Err("forge down".into())
        }
    }

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    /// The context of a review of `repo` with an empty diff and a poster that always fails.
    fn context(repo: &std::path::Path) -> ToolContext<'static> {
        let parsed = crate::diff::parse("");
        ToolContext {
            root: path::Root::new(repo).unwrap(),
            capped: crate::diff::cap(&parsed, 1000),
            diff: parsed,
            cap_bytes: 1000,
            poster: &NoPoster,
            state: Mutex::new(PostState::default()),
            budget_note: Default::default(),
            approve_allowed: false,
            instruction_changes: Vec::new(),
            min_severity: review_domain::Severity::Nit,
            quiet: false,
            verify: false,
            defer_all: false,
            pending: Mutex::new(None),
            since: None,
            range_note: None,
            posted_fingerprints: Vec::new(),
            dismissed: Vec::new(),
        }
    }

    #[tokio::test]
    async fn a_worktree_removed_under_the_run_stops_it_and_a_missing_file_does_not() {
        let outer = tempfile::tempdir().unwrap();
        let repo = outer.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let ctx = context(&repo);
        let reg = ToolRegistry::review_tools();
        let read = call("read_file", r#"{"path":"src/a.rs"}"#);
        let r = reg.dispatch(&ctx, &read).await.unwrap();
        assert!(
            r.is_error && r.content.contains("does not exist"),
            "{}",
            r.content
        );
        std::fs::remove_dir_all(&repo).unwrap();
        for c in [
            read,
            call("list_files", "{}"),
            call("grep", r#"{"pattern":"x"}"#),
        ] {
            match reg.dispatch(&ctx, &c).await {
                Err(e @ AgentError::Worktree { .. }) => {
                    assert!(e.to_string().starts_with("worktree "), "{e}");
                }
                other => panic!("{} -> {other:?}", c.name),
            }
        }
        // git_diff reads no file: the model still gets it, the change since the last review by
        // default and the whole pull request's diff on request.
        let pr_diff =
            "diff --git a/a.rs b/a.rs\n--- a/a.rs\n+++ b/a.rs\n@@ -1 +1,2 @@\n x\n+old_change()\n";
        let new_diff =
            "diff --git a/b.rs b/b.rs\n--- a/b.rs\n+++ b/b.rs\n@@ -1 +1,2 @@\n y\n+new_change()\n";
        let mut ctx = ctx;
        ctx.diff = crate::diff::parse(pr_diff);
        ctx.capped = crate::diff::cap(&ctx.diff, 1000);
        let since = crate::diff::parse(new_diff);
        ctx.since = Some(SinceDiff {
            head_sha: "abc".into(),
            capped: crate::diff::cap(&since, 1000),
            parsed: since,
        });
        let shown = |args: &str| {
            let reg = &reg;
            let ctx = &ctx;
            let c = call("git_diff", args);
            async move { reg.dispatch(ctx, &c).await.unwrap().content }
        };
        let default = shown("{}").await;
        assert!(
            default.contains("new_change") && !default.contains("old_change"),
            "{default}"
        );
        let whole = shown(r#"{"scope":"pull_request"}"#).await;
        assert!(
            whole.contains("old_change") && !whole.contains("new_change"),
            "{whole}"
        );
        let missing = shown(r#"{"path":"a.rs"}"#).await;
        assert!(
            missing.contains("not changed by the change since the last review"),
            "{missing}"
        );
        assert!(
            !reg.dispatch(&ctx, &call("git_diff", "{}"))
                .await
                .unwrap()
                .is_error
        );
    }

    #[tokio::test]
    async fn path_escapes_unknown_tools_and_bad_arguments_are_tool_errors() {
        let outer = tempfile::tempdir().unwrap();
        let repo = outer.path().join("repo");
        std::fs::create_dir_all(repo.join("src")).unwrap();
        std::fs::write(repo.join("src/a.rs"), "fn a() {}\nlet x = 1;\n").unwrap();
        std::fs::write(outer.path().join("secret.txt"), "TOP-SECRET").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(outer.path().join("secret.txt"), repo.join("leak")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(outer.path(), repo.join("outdir")).unwrap();
        let ctx = context(&repo);
        let reg = ToolRegistry::review_tools();
        let abs = outer.path().join("secret.txt");
        let refused = [
            call("read_file", r#"{"path":"../secret.txt"}"#),
            call("read_file", &serde_json::json!({"path": abs}).to_string()),
            call("read_file", r#"{"path":"leak"}"#),
            call("read_file", r#"{"path":"outdir/secret.txt"}"#),
            call("list_files", r#"{"path":"../"}"#),
            call("list_files", r#"{"path":"outdir"}"#),
            call("grep", r#"{"pattern":"SECRET","path":"../"}"#),
            call("nope", "{}"),
            call("read_file", r#"{"paht":1}"#),
            call("read_file", "not json"),
            call("read_file", "[1]"),
            call("grep", r#"{"pattern":"("}"#),
            call("post_comment", r#"{"body":"x"}"#),
        ];
        for c in &refused {
            let r = reg.dispatch(&ctx, c).await.unwrap();
            assert!(r.is_error, "{c:?} -> {}", r.content);
            assert!(!r.content.contains("TOP-SECRET"), "{c:?} leaked");
        }
        // grep walks the tree but never follows the symlinks out of it.
        let r = reg
            .dispatch(&ctx, &call("grep", r#"{"pattern":"SECRET"}"#))
            .await
            .unwrap();
        assert!(
            !r.is_error && r.content.starts_with("no matches"),
            "{}",
            r.content
        );
        let r = reg
            .dispatch(
                &ctx,
                &call("read_file", r#"{"path":"src/a.rs","start_line":2}"#),
            )
            .await
            .unwrap();
        assert_eq!(r.content, "src/a.rs (lines 2-2 of 2)\n     2\tlet x = 1;\n");
        let r = reg
            .dispatch(
                &ctx,
                &call("grep", r#"{"pattern":"fn \\w+","path":"src/*.rs"}"#),
            )
            .await
            .unwrap();
        assert_eq!(r.content, "src/a.rs:1: fn a() {}");
        let r = reg
            .dispatch(&ctx, &call("list_files", r#"{"recursive":true}"#))
            .await
            .unwrap();
        assert!(
            r.content.contains("src/a.rs")
                && r.content.contains("leak (symlink outside the repository)"),
            "{}",
            r.content
        );
        assert_eq!(
            ctx.state(),
            PostState::default(),
            "a failed post counts as nothing posted"
        );
    }
}
