//! A scripted model server (docs/architecture.md, Test doubles and real parts): an axum server on 127.0.0.1 speaking the
//! Anthropic Messages API (`POST /v1/messages`) and OpenAI chat completions
//! (`POST /v1/chat/completions`), streaming (the vendors' SSE event shapes) and not, with usage
//! that includes cache tokens.
//!
//! It reviews like a rule-based reviewer, deciding from the conversation it receives (stateless
//! per request): first it calls `git_diff`; with the diff it reads one touched file with
//! `read_file`; then it calls `post_review` with one inline comment on every added line that
//! contains `unwrap()` (blocking) or `TODO` (nit), on the real new-file line number, event
//! REQUEST_CHANGES when anything is blocking, else COMMENT, and a summary ending in the verdict
//! line; after the post's tool result it answers with final text. Every request body is recorded.
//! A request whose system prompt names the improver, the verifier's tool, the eval's judge
//! ([`JUDGE_ROLE`]) or the answerer of review threads ([`ANSWER_ROLE`]) gets that role's
//! scripted answer instead.
//!
//! With [`Behavior::Chat`] it plays the chat of POST /api/chat instead (see [`ChatScript`]);
//! while [`Behavior::Slow`] waits it records requests whose client went away
//! ([`ScriptedModel::abandoned_requests`]).
//!
//! Like the vendors, it answers 401 without a key, 400 for a missing `max_tokens` (Anthropic),
//! for `stream_options` without `stream` (OpenAI), and for tool calls that the next message
//! does not answer.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// How the scripted model behaves.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Behavior {
    /// The rule-based reviewer.
    #[default]
    Reviewer,
    /// Every request answers 500 with a provider-style error body.
    Fail500,
    /// Never calls the post tools; answers text only.
    Silent,
    /// First calls `read_file` with invalid arguments, then behaves like `Reviewer`.
    BadToolArgs,
    /// Waits this long before every answer, then behaves like `Reviewer`.
    Slow(Duration),
    /// Answers the first N requests as overloaded (Anthropic 529 `overloaded_error`, OpenAI
    /// 503), then behaves like `Reviewer`.
    OverloadedFirst(u32),
    /// The chat of POST /api/chat, scripted from the conversation (see [`ChatScript`]).
    Chat(ChatScript),
}

/// What the chat double does when it gets the `query_database` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatScript {
    /// Queries [`CHAT_COUNT_SQL`], then answers `There are N reviews in the database.` with
    /// the count the tool returned.
    CountReviews,
    /// Asks for [`CHAT_FORBIDDEN_SQL`] (a DELETE), then answers
    /// `The database refused my query: <tool result>`.
    ForbiddenSql,
    /// Queries on every step and never answers (to meet the step cap).
    KeepQuerying,
    /// A hostile model (or a prompt injection obeyed): runs the text after the last `SQL: ` in
    /// the user's messages as its query, then answers `Result: <tool result>`.
    QuestionAsSql,
}

/// The `anthropic-version` values the Messages API accepts.
pub const ANTHROPIC_VERSIONS: &[&str] = &["2023-06-01", "2023-01-01"];

/// The chat tool the double expects.
pub const CHAT_TOOL: &str = "query_database";

/// The statement of [`ChatScript::CountReviews`].
pub const CHAT_COUNT_SQL: &str = "SELECT count(*) AS reviews FROM reviews";

/// The statement of [`ChatScript::ForbiddenSql`].
pub const CHAT_FORBIDDEN_SQL: &str = "DELETE FROM reviews";

/// What the model answers to a request that offers no tools (a plain completion).
pub const REPLY_WITHOUT_TOOLS: &str = "pong: the scripted model is listening";

/// The message of the `Fail500` error body.
pub const FAIL_MESSAGE: &str = "scripted failure: the model server broke";

struct Shared {
    behavior: Mutex<Behavior>,
    requests: Mutex<Vec<Value>>,
    overloaded_left: Mutex<u32>,
    extra_comments: Mutex<Vec<Value>>,
    abandoned: Mutex<u32>,
}

/// A running scripted model server; shuts down on drop.
pub struct ScriptedModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl ScriptedModel {
    /// Binds 127.0.0.1:0 and serves. Must be called inside a tokio runtime.
    pub fn start(behavior: Behavior) -> ScriptedModel {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let addr = std_listener.local_addr().expect("local addr");
        let listener = tokio::net::TcpListener::from_std(std_listener).expect("tokio listener");
        let shared = Arc::new(Shared {
            behavior: Mutex::new(behavior.clone()),
            requests: Mutex::new(Vec::new()),
            overloaded_left: Mutex::new(match behavior {
                Behavior::OverloadedFirst(n) => n,
                _ => 0,
            }),
            extra_comments: Mutex::new(Vec::new()),
            abandoned: Mutex::new(0),
        });
        let app = Router::new()
            .route("/v1/messages", post(anthropic))
            .route("/v1/chat/completions", post(openai))
            .with_state(shared.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        ScriptedModel {
            addr,
            shared,
            shutdown: Some(tx),
            task,
        }
    }

    /// `http://127.0.0.1:PORT`: the Anthropic base URL (no `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`: the OpenAI base URL.
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// Every request body received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Requests whose client closed the connection while [`Behavior::Slow`] was waiting, before
    /// any answer was sent.
    pub fn abandoned_requests(&self) -> u32 {
        *self.shared.abandoned.lock().unwrap()
    }

    /// Changes the behavior for every request from now on (a request already waiting in
    /// [`Behavior::Slow`] keeps waiting).
    pub fn set_behavior(&self, behavior: Behavior) {
        *self.shared.behavior.lock().unwrap() = behavior;
    }

    /// Adds an inline comment (`{path, line, severity, body, ...}`) to every post_review the
    /// reviewer makes, e.g. one outside the diff to test folding.
    pub fn push_extra_comment(&self, comment: Value) {
        self.shared.extra_comments.lock().unwrap().push(comment);
    }
}

impl Shared {
    fn behavior(&self) -> Behavior {
        self.behavior.lock().unwrap().clone()
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.task.abort();
    }
}

/// One step of the conversation, normalized from either wire format.
#[derive(Debug, Clone)]
enum Item {
    /// A user message, with its text.
    User(String),
    Call {
        id: String,
        name: String,
        input: Value,
    },
    Result {
        id: String,
        content: String,
        is_error: bool,
    },
}

/// What the scripted model does next.
#[derive(Debug, Clone, PartialEq)]
enum Decision {
    Text(String),
    Call { name: String, input: Value },
}

fn call_name<'a>(items: &'a [Item], id: &str) -> Option<&'a str> {
    items.iter().find_map(|i| match i {
        Item::Call { id: cid, name, .. } if cid == id => Some(name.as_str()),
        _ => None,
    })
}

fn results_of<'a>(items: &'a [Item], tool: &str) -> Vec<(&'a str, bool)> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Result {
                id,
                content,
                is_error,
            } if call_name(items, id) == Some(tool) => Some((content.as_str(), *is_error)),
            _ => None,
        })
        .collect()
}

/// Added lines with `unwrap()` or `TODO`: (path, new line number, severity, whether the line
/// also holds [`FALSE_POSITIVE`]).
fn findings(diff: &str) -> Vec<(String, i64, String, bool)> {
    let mut out = Vec::new();
    let mut path = String::new();
    let mut line = 0i64;
    let mut in_hunk = false;
    for l in diff.lines() {
        if l.starts_with("diff --git ") {
            in_hunk = false;
            path.clear();
        } else if let Some(p) = l.strip_prefix("+++ ").filter(|_| !in_hunk) {
            path = p.strip_prefix("b/").unwrap_or(p).to_owned();
        } else if l.starts_with("@@") {
            let new = l.split_whitespace().nth(2).unwrap_or("+0");
            line = new[1..]
                .split(',')
                .next()
                .unwrap_or("0")
                .parse()
                .unwrap_or(0);
            in_hunk = true;
        } else if in_hunk {
            match l.as_bytes().first() {
                Some(b'+') => {
                    let flagged = l.contains(FALSE_POSITIVE);
                    if l.contains("unwrap()") {
                        out.push((path.clone(), line, "blocking".to_owned(), flagged));
                    } else if l.contains("TODO") {
                        out.push((path.clone(), line, "nit".to_owned(), flagged));
                    }
                    line += 1;
                }
                Some(b'-') | Some(b'\\') => {}
                Some(b' ') | None => line += 1,
                _ => in_hunk = false,
            }
        }
    }
    out
}

fn touched_files(diff: &str) -> Vec<String> {
    diff.lines()
        .filter_map(|l| l.strip_prefix("+++ b/"))
        .map(str::to_owned)
        .collect()
}

/// The REVIEW.md written by the scripted improver.
pub const IMPROVED_REVIEW_MD: &str =
    "# Review guide\n\n- Library code returns errors instead of calling unwrap().\n";

/// A thread reply containing this makes the scripted improver answer NO_CHANGES.
pub const NOTHING_TO_LEARN: &str = "nothing-to-learn-here";

/// The REVIEW.md improver (its system prompt names the role): [`IMPROVED_REVIEW_MD`], or
/// NO_CHANGES when a reply says [`NOTHING_TO_LEARN`]. None for every other request.
/// Only the system prompt decides, so a reviewed diff that quotes the improver's prompt (this
/// project's own history) still gets the reviewer.
fn improver_decision(body: &Value) -> Option<Decision> {
    if !system_text(body).contains("REVIEW.md improver") {
        return None;
    }
    let text = body.to_string();
    if text.contains(NOTHING_TO_LEARN) {
        return Some(Decision::Text("NO_CHANGES".into()));
    }
    Some(Decision::Text(IMPROVED_REVIEW_MD.into()))
}

/// The system prompt of a request, as JSON text. Anthropic: top-level `system` (text or
/// blocks); OpenAI: the first message, role system.
fn system_text(body: &Value) -> String {
    match (&body["system"], &body["messages"][0]) {
        (Value::Null, first) if first["role"] == "system" => first["content"].to_string(),
        (system, _) => system.to_string(),
    }
}

/// The role the eval's judge names in its system prompt.
pub const JUDGE_ROLE: &str = "code review evaluator";

/// The eval's judge (its system prompt names [`JUDGE_ROLE`]; one golden comment in
/// `<golden>` and one candidate in `<candidate>` per request): a match when a `backticked`
/// word of the candidate stands in the golden comment, answered as the JSON object the judge
/// asks for, confidence 1.0. None for other requests.
fn judge_decision(body: &Value, items: &[Item]) -> Option<Decision> {
    if !system_text(body).contains(JUDGE_ROLE) {
        return None;
    }
    let user = items.iter().find_map(|i| match i {
        Item::User(t) => Some(t.as_str()),
        _ => None,
    })?;
    let block = |tag: &str| {
        let open = format!("<{tag}>\n");
        let close = format!("\n</{tag}>");
        let start = user.find(&open)? + open.len();
        let end = start + user[start..].find(&close)?;
        Some(user[start..end].to_owned())
    };
    let (golden, candidate) = (block("golden")?, block("candidate")?);
    let quoted = candidate
        .split('`')
        .skip(1)
        .step_by(2)
        .find(|w| !w.is_empty() && golden.contains(*w));
    let answer = match quoted {
        Some(w) => {
            json!({"reasoning": format!("both name `{w}` (scripted judge)"), "match": true, "confidence": 1.0})
        }
        None => {
            json!({"reasoning": "no quoted word of the candidate is in the golden comment (scripted judge)", "match": false, "confidence": 1.0})
        }
    };
    Some(Decision::Text(answer.to_string()))
}

/// A candidate whose text holds this is rejected by the scripted verifier.
pub const FALSE_POSITIVE: &str = "[false positive]";

/// A candidate whose text holds this gets no verdict from the scripted verifier (it stays
/// unverified).
pub const UNDECIDABLE: &str = "[undecidable]";

/// The verifier (its request offers `report_verdicts`): reads the first candidate's file,
/// then reports every candidate confirmed with evidence, except those marked
/// [`FALSE_POSITIVE`] (rejected) or [`UNDECIDABLE`] (no verdict). None for other requests.
fn verifier_decision(body: &Value, items: &[Item]) -> Option<Decision> {
    if !body["tools"].to_string().contains("\"report_verdicts\"") {
        return None;
    }
    let user = items.iter().find_map(|i| match i {
        Item::User(t) => Some(t.as_str()),
        _ => None,
    })?;
    if system_text(body).contains("You recheck findings") {
        return Some(recheck_decision(user, items));
    }
    // Candidates: "[id] path:lines (severity, side S):" then the body up to the next one.
    let mut candidates: Vec<(u64, String, String)> = Vec::new();
    for line in user.lines() {
        let head = line
            .strip_prefix('[')
            .and_then(|r| r.split_once("] "))
            .and_then(|(id, rest)| Some((id.parse::<u64>().ok()?, rest)));
        match (head, candidates.last_mut()) {
            (Some((id, rest)), _) => {
                let place = rest.split(' ').next().unwrap_or_default().to_owned();
                candidates.push((id, place, String::new()));
            }
            (None, Some(last)) => {
                last.2.push_str(line);
                last.2.push('\n');
            }
            (None, None) => {}
        }
    }
    let read = items
        .iter()
        .any(|i| matches!(i, Item::Call { name, .. } if name == "read_file"));
    if !read && let Some((_, place, _)) = candidates.first() {
        let path = place.split(':').next().unwrap_or_default();
        return Some(Decision::Call {
            name: "read_file".into(),
            input: json!({"path": path}),
        });
    }
    let verdicts: Vec<Value> = candidates
        .iter()
        .filter(|(_, _, text)| !text.contains(UNDECIDABLE))
        .map(|(id, place, text)| {
            if text.contains(FALSE_POSITIVE) {
                json!({"id": id, "verdict": "rejected", "reason": format!("{place} handles this already (scripted verifier)")})
            } else {
                json!({"id": id, "verdict": "confirmed", "evidence": format!("{place} shows it (scripted verifier)")})
            }
        })
        .collect();
    Some(Decision::Call {
        name: "report_verdicts".into(),
        input: json!({ "verdicts": verdicts }),
    })
}

/// The role the answerer of review threads and `/ask` names in its system prompt.
pub const ANSWER_ROLE: &str = "review thread answerer";

/// The answerer (its system prompt names [`ANSWER_ROLE`]): for a thread (the user message
/// names the finding's `File: `), reads that file, then calls `answer_thread` with verdict
/// `agree_intended` when the thread's last reply says "intended", else `explain`; for `/ask`,
/// calls git_diff, then answers `explain` naming the files the diff touches. Each body says
/// how many lines it read. None for other requests.
fn answerer_decision(body: &Value, items: &[Item]) -> Option<Decision> {
    if !system_text(body).contains(ANSWER_ROLE) {
        return None;
    }
    let user = items.iter().find_map(|i| match i {
        Item::User(t) => Some(t.as_str()),
        _ => None,
    })?;
    let file = user.lines().find_map(|l| l.strip_prefix("File: "));
    let called = |tool: &str| {
        items
            .iter()
            .any(|i| matches!(i, Item::Call { name, .. } if name == tool))
    };
    match file {
        Some(path) if !called("read_file") => {
            return Some(Decision::Call {
                name: "read_file".into(),
                input: json!({ "path": path }),
            });
        }
        None if !called("git_diff") => {
            return Some(Decision::Call {
                name: "git_diff".into(),
                input: json!({}),
            });
        }
        _ => {}
    }
    let read = items
        .iter()
        .find_map(|i| match i {
            Item::Result { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .unwrap_or_default();
    let (answer, verdict) = match file {
        Some(path) => {
            let last = user
                .rsplit_once("[reply by ")
                .map(|(_, r)| r)
                .unwrap_or_default();
            let last = last.split("</untrusted_thread>").next().unwrap_or_default();
            if last.to_lowercase().contains("intended") {
                (
                    format!(
                        "Agreed: I read `{path}` ({} lines) and the behaviour is intended, so I withdraw this finding. (scripted answerer)",
                        read.lines().count()
                    ),
                    "agree_intended",
                )
            } else {
                (
                    format!(
                        "I read `{path}` ({} lines): the finding stands, `unwrap()` panics on bad input. (scripted answerer)",
                        read.lines().count()
                    ),
                    "explain",
                )
            }
        }
        None => (
            format!(
                "This change touches {}. (scripted answerer)",
                touched_files(read).join(", ")
            ),
            "explain",
        ),
    };
    Some(Decision::Call {
        name: "answer_thread".into(),
        input: json!({ "body": answer, "verdict": verdict }),
    })
}

/// The recheck of earlier findings (its system prompt says "You recheck findings"): reads
/// each finding's file, then reports a finding confirmed (still there) when its file still
/// holds the code its text quotes in backticks (or `TODO` for a TODO finding), rejected (gone)
/// when the file no longer does or is gone.
fn recheck_decision(user: &str, items: &[Item]) -> Decision {
    // Findings: "[id] path:line (severity, side S):" then the text; the first text line quotes.
    let mut found: Vec<(u64, String, String)> = Vec::new();
    for line in user.lines() {
        let head = line
            .strip_prefix('[')
            .and_then(|r| r.split_once("] "))
            .and_then(|(id, rest)| Some((id.parse::<u64>().ok()?, rest)));
        if let Some((id, rest)) = head {
            let path = rest.split(':').next().unwrap_or_default().to_owned();
            found.push((id, path, String::new()));
        } else if let Some(last) = found.last_mut()
            && last.2.is_empty()
        {
            last.2 = line.to_owned();
        }
    }
    let read = |path: &str| {
        items.iter().find_map(|i| match i {
            Item::Call { id, name, input } if name == "read_file" && input["path"] == path => {
                items.iter().find_map(|r| match r {
                    Item::Result {
                        id: rid,
                        content,
                        is_error,
                    } if rid == id => Some((content.as_str(), *is_error)),
                    _ => None,
                })
            }
            _ => None,
        })
    };
    if let Some((_, path, _)) = found.iter().find(|(_, path, _)| read(path).is_none()) {
        return Decision::Call {
            name: "read_file".into(),
            input: json!({"path": path}),
        };
    }
    let verdicts: Vec<Value> = found
        .iter()
        .map(|(id, path, text)| {
            let quoted = text.split('`').nth(1).filter(|w| !w.is_empty());
            let token = quoted.or(text.contains("TODO").then_some("TODO"));
            match (read(path), token) {
                (Some((content, false)), Some(token)) if content.contains(token) => {
                    json!({"id": id, "verdict": "confirmed", "evidence": format!("{path} still has `{token}` (scripted recheck)")})
                }
                (Some((_, true)), _) => {
                    json!({"id": id, "verdict": "rejected", "reason": format!("{path} is gone (scripted recheck)")})
                }
                _ => {
                    json!({"id": id, "verdict": "rejected", "reason": format!("{path} no longer has it (scripted recheck)")})
                }
            }
        })
        .collect();
    Decision::Call {
        name: "report_verdicts".into(),
        input: json!({ "verdicts": verdicts }),
    }
}

fn decide(behavior: &Behavior, items: &[Item], extra: &[Value], has_tools: bool) -> Decision {
    if !has_tools {
        return Decision::Text(REPLY_WITHOUT_TOOLS.into());
    }
    if let Behavior::Chat(script) = behavior {
        return decide_chat(*script, items);
    }
    if *behavior == Behavior::Silent {
        return Decision::Text("The change looks fine to me.".into());
    }
    let any_call = items.iter().any(|i| matches!(i, Item::Call { .. }));
    if *behavior == Behavior::BadToolArgs && !any_call {
        return Decision::Call {
            name: "read_file".into(),
            input: json!({"paht": 42}),
        };
    }
    let posted = ["post_review", "post_comment"]
        .iter()
        .any(|t| results_of(items, t).iter().any(|(_, err)| !err));
    if posted {
        return Decision::Text("I posted my review.".into());
    }
    let diffs = results_of(items, "git_diff");
    let Some((diff, _)) = diffs.iter().rev().find(|(_, err)| !err) else {
        return Decision::Call {
            name: "git_diff".into(),
            input: json!({}),
        };
    };
    let files = touched_files(diff);
    let read_before = items.iter().any(
        |i| matches!(i, Item::Call { name, input, .. } if name == "read_file" && input.get("path").is_some()),
    );
    if !read_before && let Some(first) = files.first() {
        return Decision::Call {
            name: "read_file".into(),
            input: json!({"path": first}),
        };
    }
    let found = findings(diff);
    let mut comments: Vec<Value> = found
        .iter()
        .map(|(path, line, sev, flagged)| {
            let mut body = if sev == "blocking" {
                "`unwrap()` panics on error; handle or propagate the error instead.".to_owned()
            } else {
                "A TODO in new code: open an issue or finish it before merging.".to_owned()
            };
            if *flagged {
                body = format!("{body} {FALSE_POSITIVE}");
            }
            json!({"path": path, "line": line, "side": "RIGHT", "severity": sev, "body": body})
        })
        .collect();
    comments.extend(extra.iter().cloned());
    let count = |s: &str| comments.iter().filter(|c| c["severity"] == s).count();
    let (b, n, q) = (count("blocking"), count("nit"), count("question"));
    // A clean diff is approved, as models do: the reviewer keeps the APPROVE only to clear
    // its own earlier REQUEST_CHANGES, else it posts COMMENT.
    let event = if b > 0 {
        "REQUEST_CHANGES"
    } else if comments.is_empty() {
        "APPROVE"
    } else {
        "COMMENT"
    };
    let summary = format!(
        "Scripted review of {} file(s): {} finding(s).\n\nBlocking: {b} · Nits: {n} · Questions: {q}",
        files.len(),
        comments.len()
    );
    Decision::Call {
        name: "post_review".into(),
        input: json!({"summary": summary, "event": event, "comments": comments}),
    }
}

/// The chat double: queries per its script, then answers from the tool's last result.
fn decide_chat(script: ChatScript, items: &[Item]) -> Decision {
    let results = results_of(items, CHAT_TOOL);
    let call = |sql: &str| Decision::Call {
        name: CHAT_TOOL.into(),
        input: json!({ "sql": sql }),
    };
    match (script, results.last()) {
        (ChatScript::KeepQuerying, _) => call(&format!("SELECT {} AS step", results.len() + 1)),
        (ChatScript::CountReviews, None) => call(CHAT_COUNT_SQL),
        (ChatScript::CountReviews, Some((content, _))) => {
            let count = serde_json::from_str::<Value>(content)
                .ok()
                .and_then(|v| v["rows"][0][0].as_i64())
                .map_or_else(|| content.to_string(), |n| n.to_string());
            Decision::Text(format!("There are {count} reviews in the database."))
        }
        (ChatScript::ForbiddenSql, None) => call(CHAT_FORBIDDEN_SQL),
        (ChatScript::ForbiddenSql, Some((content, _))) => {
            Decision::Text(format!("The database refused my query: {content}"))
        }
        (ChatScript::QuestionAsSql, None) => {
            let sql = items
                .iter()
                .filter_map(|i| match i {
                    Item::User(text) => text.rsplit_once("SQL: ").map(|(_, sql)| sql),
                    _ => None,
                })
                .next_back()
                .unwrap_or("SELECT 'no SQL: in the question'");
            call(sql)
        }
        (ChatScript::QuestionAsSql, Some((content, _))) => {
            Decision::Text(format!("Result: {content}"))
        }
    }
}

/// Token counts derived from the request: a first turn writes the cache, later turns read it.
fn usage_for(body: &Value, turns: usize) -> (i64, i64, i64, i64) {
    let size = body.to_string().len() as i64;
    let input = size / 4 + 1;
    let (read, write) = if turns <= 1 { (0, 200) } else { (300, 40) };
    (input, 25, read, write)
}

fn error_json(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

fn sse(body: String) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from(body))
        .unwrap()
}

fn split3(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len();
    let (a, b) = (n / 3, 2 * n / 3);
    [&chars[..a], &chars[a..b], &chars[b..]]
        .iter()
        .map(|c| c.iter().collect())
        .collect()
}

/// Counts a request as abandoned when dropped before [`AbandonWatch::defuse`]: the server drops
/// a handler's future when its client closes the connection.
struct AbandonWatch<'a>(Option<&'a Mutex<u32>>);

impl AbandonWatch<'_> {
    fn defuse(mut self) {
        self.0 = None;
    }
}

impl Drop for AbandonWatch<'_> {
    fn drop(&mut self) {
        if let Some(n) = self.0 {
            *n.lock().unwrap() += 1;
        }
    }
}

/// Records the request, applies `Slow`, and says whether to answer as overloaded.
async fn prelude(shared: &Shared, body: &Value) -> bool {
    shared.requests.lock().unwrap().push(body.clone());
    if let Behavior::Slow(d) = shared.behavior() {
        let watch = AbandonWatch(Some(&shared.abandoned));
        tokio::time::sleep(d).await;
        watch.defuse();
    }
    let mut left = shared.overloaded_left.lock().unwrap();
    if *left > 0 {
        *left -= 1;
        true
    } else {
        false
    }
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

async fn anthropic(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let err = |status: StatusCode, kind: &str, message: &str| {
        error_json(
            status,
            json!({"type": "error", "error": {"type": kind, "message": message}}),
        )
    };
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return err(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "body is not JSON",
        );
    };
    let overloaded = prelude(&shared, &body).await;
    if headers.get("x-api-key").is_none() {
        return err(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "x-api-key header is required",
        );
    }
    match headers
        .get("anthropic-version")
        .and_then(|v| v.to_str().ok())
    {
        None => {
            return err(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "anthropic-version header is required",
            );
        }
        Some(v) if !ANTHROPIC_VERSIONS.contains(&v) => {
            return err(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                &format!("anthropic-version: invalid version {v:?}"),
            );
        }
        Some(_) => {}
    }
    if body["model"].as_str().is_none_or(str::is_empty) {
        return err(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "model: Field required",
        );
    }
    if shared.behavior() == Behavior::Fail500 {
        return err(StatusCode::INTERNAL_SERVER_ERROR, "api_error", FAIL_MESSAGE);
    }
    if overloaded {
        return err(
            StatusCode::from_u16(529).unwrap(),
            "overloaded_error",
            "Overloaded",
        );
    }
    if body.get("max_tokens").and_then(Value::as_u64).is_none() {
        return err(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "max_tokens: Field required",
        );
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let mut items = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    for m in &messages {
        let blocks = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(b) => b.clone(),
            _ => Vec::new(),
        };
        let answered: Vec<String> = blocks
            .iter()
            .filter(|b| b["type"] == "tool_result")
            .filter_map(|b| b["tool_use_id"].as_str().map(str::to_owned))
            .collect();
        if let Some(unknown) = answered.iter().find(|id| !pending.contains(id)) {
            return err(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                &format!(
                    "messages: unexpected `tool_use_id` found in `tool_result` blocks: {unknown}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                ),
            );
        }
        if let Some(missing) = pending.iter().find(|id| !answered.contains(id)) {
            return err(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                &format!(
                    "messages: tool_use ids were found without tool_result blocks immediately after: {missing}"
                ),
            );
        }
        pending.clear();
        for b in blocks {
            match b["type"].as_str() {
                Some("text") if m["role"] == "user" => items.push(Item::User(
                    b["text"].as_str().unwrap_or_default().to_owned(),
                )),
                Some("tool_use") => {
                    let id = b["id"].as_str().unwrap_or_default().to_owned();
                    pending.push(id.clone());
                    items.push(Item::Call {
                        id,
                        name: b["name"].as_str().unwrap_or_default().into(),
                        input: b["input"].clone(),
                    });
                }
                Some("tool_result") => items.push(Item::Result {
                    id: b["tool_use_id"].as_str().unwrap_or_default().into(),
                    content: text_of(&b["content"]),
                    is_error: b["is_error"].as_bool().unwrap_or(false),
                }),
                _ => {}
            }
        }
    }
    let extra = shared.extra_comments.lock().unwrap().clone();
    let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let decision = improver_decision(&body)
        .or_else(|| judge_decision(&body, &items))
        .or_else(|| verifier_decision(&body, &items))
        .or_else(|| answerer_decision(&body, &items))
        .unwrap_or_else(|| decide(&shared.behavior(), &items, &extra, has_tools));
    let (input, output, read, write) = usage_for(&body, messages.len().div_ceil(2));
    let model = body["model"].as_str().unwrap_or("scripted").to_owned();
    let n = messages.len();
    let msg_id = format!("msg_scripted_{n}");
    let (text, tool, stop) = match &decision {
        Decision::Text(t) => (t.clone(), None, "end_turn"),
        Decision::Call { name, input } => (
            "Let me check.".to_owned(),
            Some((format!("toolu_scripted_{n}"), name.clone(), input.clone())),
            "tool_use",
        ),
    };
    let usage = json!({
        "input_tokens": input,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "output_tokens": output,
    });
    if body["stream"] != true {
        let mut content = vec![json!({"type": "text", "text": text})];
        if let Some((id, name, input)) = &tool {
            content.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
        }
        return axum::Json(json!({
            "id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": null, "usage": usage,
        }))
        .into_response();
    }
    let mut out = String::new();
    let mut ev = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    ev(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input, "cache_creation_input_tokens": write, "cache_read_input_tokens": read, "output_tokens": 1},
        }}),
    );
    ev(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    ev("ping", json!({"type": "ping"}));
    for piece in split3(&text) {
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
        );
    }
    ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    if let Some((id, name, input)) = &tool {
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        );
        for piece in split3(&input.to_string()) {
            ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": piece}}),
            );
        }
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        );
    }
    ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output}}),
    );
    ev("message_stop", json!({"type": "message_stop"}));
    sse(out)
}

async fn openai(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let err = |status: StatusCode, kind: &str, message: &str| {
        error_json(
            status,
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}}),
        )
    };
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return err(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "We could not parse the JSON body of your request.",
        );
    };
    let overloaded = prelude(&shared, &body).await;
    let authorized = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer ") && v.len() > 7);
    if !authorized {
        return err(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "You didn't provide an API key.",
        );
    }
    if shared.behavior() == Behavior::Fail500 {
        return err(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            FAIL_MESSAGE,
        );
    }
    if overloaded {
        return err(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "The engine is currently overloaded, please try again later",
        );
    }
    if body["model"].as_str().is_none_or(str::is_empty) {
        return err(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "you must provide a model parameter",
        );
    }
    let stream = body["stream"] == true;
    if !stream && body.get("stream_options").is_some_and(|v| !v.is_null()) {
        return err(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        );
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let mut items = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    for m in &messages {
        let role = m["role"].as_str().unwrap_or_default();
        if role != "tool" && !pending.is_empty() {
            return err(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                &format!(
                    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                    pending.join(", ")
                ),
            );
        }
        match role {
            "user" => items.push(Item::User(match &m["content"] {
                Value::String(t) => t.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            })),
            "assistant" => {
                for c in m["tool_calls"].as_array().cloned().unwrap_or_default() {
                    let id = c["id"].as_str().unwrap_or_default().to_owned();
                    let args = c["function"]["arguments"].as_str().unwrap_or("{}");
                    pending.push(id.clone());
                    items.push(Item::Call {
                        id,
                        name: c["function"]["name"].as_str().unwrap_or_default().into(),
                        input: serde_json::from_str(args).unwrap_or(Value::Null),
                    });
                }
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap_or_default().to_owned();
                if !pending.contains(&id) {
                    return err(
                        StatusCode::BAD_REQUEST,
                        "invalid_request_error",
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                    );
                }
                pending.retain(|p| *p != id);
                let content = text_of(&m["content"]);
                let is_error = content.starts_with("error:");
                items.push(Item::Result {
                    id,
                    content,
                    is_error,
                });
            }
            _ => {}
        }
    }
    let extra = shared.extra_comments.lock().unwrap().clone();
    let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let decision = improver_decision(&body)
        .or_else(|| judge_decision(&body, &items))
        .or_else(|| verifier_decision(&body, &items))
        .or_else(|| answerer_decision(&body, &items))
        .unwrap_or_else(|| decide(&shared.behavior(), &items, &extra, has_tools));
    let turns = messages.iter().filter(|m| m["role"] == "assistant").count() + 1;
    let (input, output, read, _write) = usage_for(&body, turns);
    let model = body["model"].as_str().unwrap_or("scripted").to_owned();
    let id = format!("chatcmpl-scripted-{}", messages.len());
    let usage = json!({
        "prompt_tokens": input + read,
        "completion_tokens": output,
        "total_tokens": input + read + output,
        "prompt_tokens_details": {"cached_tokens": read},
    });
    let (text, tool, finish) = match &decision {
        Decision::Text(t) => (Some(t.clone()), None, "stop"),
        Decision::Call { name, input } => (
            None,
            Some((
                format!("call_scripted_{}", messages.len()),
                name.clone(),
                input.to_string(),
            )),
            "tool_calls",
        ),
    };
    if !stream {
        let mut message = json!({"role": "assistant", "content": text});
        if let Some((cid, name, args)) = &tool {
            message["tool_calls"] = json!([{"id": cid, "type": "function", "function": {"name": name, "arguments": args}}]);
        }
        return axum::Json(json!({
            "id": id, "object": "chat.completion", "created": 1_700_000_000, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }))
        .into_response();
    }
    let include_usage = body["stream_options"]["include_usage"] == true;
    let mut out = String::new();
    let mut chunk = |choices: Value, usage: Option<Value>| {
        let mut c = json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model, "choices": choices});
        if include_usage {
            c["usage"] = usage.unwrap_or(Value::Null);
        }
        out.push_str(&format!("data: {c}\n\n"));
    };
    chunk(
        json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]),
        None,
    );
    if let Some(t) = &text {
        for piece in split3(t) {
            chunk(
                json!([{"index": 0, "delta": {"content": piece}, "finish_reason": null}]),
                None,
            );
        }
    }
    if let Some((cid, name, args)) = &tool {
        chunk(
            json!([{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": cid, "type": "function", "function": {"name": name, "arguments": ""}}]}, "finish_reason": null}]),
            None,
        );
        for piece in split3(args) {
            chunk(
                json!([{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}, "finish_reason": null}]),
                None,
            );
        }
    }
    chunk(
        json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
        None,
    );
    if include_usage {
        chunk(json!([]), Some(usage));
    }
    out.push_str("data: [DONE]\n\n");
    sse(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_sit_on_new_file_line_numbers() {
        let diff = "diff --git a/a.rs b/a.rs\n--- a/a.rs\n+++ b/a.rs\n@@ -1,3 +1,4 @@\n fn f() {\n-    old();\n+    x.unwrap();\n+    // TODO\n }\n";
        assert_eq!(
            findings(diff),
            vec![
                ("a.rs".into(), 2, "blocking".into(), false),
                ("a.rs".into(), 3, "nit".into(), false)
            ]
        );
    }

    /// POSTs `body` to the double's `path` with `headers`; returns status and body.
    async fn post(path: &str, headers: &[(&str, &str)], body: Value) -> (u16, Value) {
        let model = ScriptedModel::start(Behavior::Reviewer);
        let mut req = reqwest::Client::new()
            .post(format!("{}{path}", model.base_url()))
            .json(&body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.unwrap();
        (
            resp.status().as_u16(),
            resp.json().await.unwrap_or(Value::Null),
        )
    }

    const ANTHROPIC: &[(&str, &str)] = &[("x-api-key", "k"), ("anthropic-version", "2023-06-01")];
    const OPENAI: &[(&str, &str)] = &[("authorization", "Bearer k")];

    #[tokio::test]
    async fn anthropic_requests_are_checked_as_the_messages_api_checks_them() {
        let ok = json!({"model": "claude-test", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(post("/v1/messages", ANTHROPIC, ok.clone()).await.0, 200);
        let bad_version = &[("x-api-key", "k"), ("anthropic-version", "2024-99-99")];
        assert_eq!(post("/v1/messages", bad_version, ok.clone()).await.0, 400);
        let mut no_model = ok.clone();
        no_model.as_object_mut().unwrap().remove("model");
        let (status, body) = post("/v1/messages", ANTHROPIC, no_model).await;
        assert_eq!(
            (status, body["error"]["message"].as_str()),
            (400, Some("model: Field required"))
        );
        let unknown_result = json!({"model": "claude-test", "max_tokens": 10, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "git_diff", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"},
                {"type": "tool_result", "tool_use_id": "toolu_other", "content": "y"}
            ]}
        ]});
        let (status, body) = post("/v1/messages", ANTHROPIC, unknown_result).await;
        assert_eq!(status, 400);
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("toolu_other")
        );
    }

    #[tokio::test]
    async fn openai_requests_are_checked_as_chat_completions_checks_them() {
        let ok = json!({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(post("/v1/chat/completions", OPENAI, ok).await.0, 200);
        let no_model = json!({"messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(post("/v1/chat/completions", OPENAI, no_model).await.0, 400);
        let orphan_tool = json!({"model": "gpt-test", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "call_1", "content": "x"}
        ]});
        let (status, body) = post("/v1/chat/completions", OPENAI, orphan_tool).await;
        assert_eq!(status, 400);
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("role 'tool'")
        );
    }

    #[test]
    fn reviewer_calls_git_diff_first() {
        let d = decide(&Behavior::Reviewer, &[Item::User(String::new())], &[], true);
        assert_eq!(
            d,
            Decision::Call {
                name: "git_diff".into(),
                input: json!({})
            }
        );
    }
}
