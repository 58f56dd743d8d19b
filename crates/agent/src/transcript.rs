//! Session transcripts (docs/architecture.md, Agent): every message, tool call, tool result and usage of a
//! run, as one JSON document at `<sessions_dir>/<session_id>.json`. One writer task owns the
//! document and rewrites the file (write to a temporary file, then rename) after every item, so
//! a run that fails or is aborted still leaves its transcript up to that point. Items are
//! recorded before a tool runs (after codex-rs `rollout/recorder.rs`).
//!
//! Document shape: `{session_id, model, started_at, updated_at, status: running|completed|
//! failed|cancelled, error?, outcome?, items: [{type, at, ...}]}`; timestamps are epoch seconds.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::error::AgentError;

/// Called with `(session_id, document as JSON text)` after every write of a transcript file,
/// to keep a copy elsewhere (review-server: the database, so every replica serves it). Awaited
/// by the writer task before its next write; failures are the callee's to log.
pub type TranscriptMirror =
    Arc<dyn Fn(String, String) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Where transcripts live: one JSON file per session id, and optionally a mirror.
#[derive(Clone)]
pub struct TranscriptStore {
    dir: PathBuf,
    mirror: Option<TranscriptMirror>,
}

impl std::fmt::Debug for TranscriptStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TranscriptStore")
            .field("dir", &self.dir)
            .field("mirror", &self.mirror.is_some())
            .finish()
    }
}

/// Session ids become file names: only `[A-Za-z0-9_-]`, 1 to 128 characters.
pub fn validate_session_id(id: &str) -> Result<(), AgentError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(AgentError::InvalidSessionId(id.to_owned()))
    }
}

pub(crate) fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

impl TranscriptStore {
    /// A store over `dir` (created on first write), e.g. `$DATA_DIR/sessions`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        TranscriptStore {
            dir: dir.into(),
            mirror: None,
        }
    }

    /// The same store, copying every write to `mirror` as well.
    pub fn with_mirror(mut self, mirror: TranscriptMirror) -> Self {
        self.mirror = Some(mirror);
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of a session. Errors: [`AgentError::InvalidSessionId`].
    pub fn path(&self, session_id: &str) -> Result<PathBuf, AgentError> {
        validate_session_id(session_id)?;
        Ok(self.dir.join(format!("{session_id}.json")))
    }

    /// Reads a transcript (for `review-server session export` and GET /api/reviews/:id/session).
    /// Errors: [`AgentError::InvalidSessionId`], [`AgentError::SessionNotFound`], or
    /// [`AgentError::Transcript`] when the file cannot be read or is not JSON.
    pub fn load(&self, session_id: &str) -> Result<Value, AgentError> {
        let path = self.path(session_id)?;
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(AgentError::SessionNotFound(session_id.to_owned()));
            }
            Err(e) => return Err(AgentError::transcript(path.display().to_string(), e)),
        };
        serde_json::from_str(&text)
            .map_err(|e| AgentError::transcript(format!("{}: not JSON", path.display()), e))
    }

    /// Starts the writer of a session; writes the initial document before returning.
    pub(crate) async fn start(
        &self,
        session_id: &str,
        model: &str,
    ) -> Result<TranscriptWriter, AgentError> {
        let path = self.path(session_id)?;
        tokio::fs::create_dir_all(&self.dir)
            .await
            .map_err(|e| AgentError::transcript(self.dir.display().to_string(), e))?;
        let doc = json!({
            "session_id": session_id,
            "model": model,
            "started_at": now(),
            "updated_at": now(),
            "status": "running",
            "items": [],
        });
        let text = write_atomic(&path, &doc).await?;
        if let Some(mirror) = &self.mirror {
            mirror(session_id.to_owned(), text).await;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(writer_task(
            path,
            session_id.to_owned(),
            self.mirror.clone(),
            doc,
            rx,
        ));
        Ok(TranscriptWriter { tx, task })
    }
}

/// Writes `doc` to `path` (temporary file, then rename); returns the text written.
async fn write_atomic(path: &Path, doc: &Value) -> Result<String, AgentError> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(doc).map_err(|e| AgentError::transcript("", e))?;
    tokio::fs::write(&tmp, &text)
        .await
        .map_err(|e| AgentError::transcript(tmp.display().to_string(), e))?;
    tokio::fs::rename(&tmp, path)
        .await
        .map_err(|e| AgentError::transcript(path.display().to_string(), e))?;
    Ok(text)
}

enum Command {
    Item(Value),
    Finish {
        status: &'static str,
        error: Option<String>,
        outcome: Option<Value>,
    },
}

fn apply(doc: &mut Value, cmd: Command) {
    match cmd {
        Command::Item(item) => {
            if let Some(items) = doc["items"].as_array_mut() {
                items.push(item);
            }
        }
        Command::Finish {
            status,
            error,
            outcome,
        } => {
            doc["status"] = json!(status);
            if let Some(e) = error {
                doc["error"] = json!(e);
            }
            if let Some(o) = outcome {
                doc["outcome"] = o;
            }
            doc["finished_at"] = json!(now());
        }
    }
}

async fn writer_task(
    path: PathBuf,
    session_id: String,
    mirror: Option<TranscriptMirror>,
    mut doc: Value,
    mut rx: mpsc::UnboundedReceiver<Command>,
) {
    while let Some(cmd) = rx.recv().await {
        apply(&mut doc, cmd);
        // Coalesce a burst of commands into one write.
        while let Ok(more) = rx.try_recv() {
            apply(&mut doc, more);
        }
        doc["updated_at"] = json!(now());
        match write_atomic(&path, &doc).await {
            Ok(text) => {
                if let Some(mirror) = &mirror {
                    mirror(session_id.clone(), text).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "writing the transcript failed"),
        }
    }
}

/// The one writer of a session's transcript.
pub(crate) struct TranscriptWriter {
    tx: mpsc::UnboundedSender<Command>,
    task: tokio::task::JoinHandle<()>,
}

impl TranscriptWriter {
    /// Appends an item; `at` (epoch seconds) is added.
    pub(crate) fn record(&self, mut item: Value) {
        if let Some(obj) = item.as_object_mut() {
            obj.insert("at".into(), json!(now()));
        }
        let _ = self.tx.send(Command::Item(item));
    }

    /// Sets the final status and waits until everything is on disk.
    pub(crate) async fn finish(
        self,
        status: &'static str,
        error: Option<String>,
        outcome: Option<Value>,
    ) {
        let _ = self.tx.send(Command::Finish {
            status,
            error,
            outcome,
        });
        drop(self.tx);
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_must_be_file_name_safe() {
        for ok in ["abc", "A-1_b", "0"] {
            assert!(validate_session_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", "../x", "a/b", "a.json", "a b", "é"] {
            assert!(validate_session_id(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn writer_persists_items_and_final_status() {
        let dir = tempfile::tempdir().unwrap();
        let store = TranscriptStore::new(dir.path().join("sessions"));
        let w = store.start("s1", "anthropic/x").await.unwrap();
        assert_eq!(store.load("s1").unwrap()["status"], "running");
        w.record(json!({"type": "message", "text": "hi"}));
        w.finish("completed", None, Some(json!({"steps": 1}))).await;
        let doc = store.load("s1").unwrap();
        assert_eq!(doc["status"], "completed");
        assert_eq!(doc["items"][0]["text"], "hi");
        assert_eq!(doc["outcome"]["steps"], 1);
        assert!(matches!(
            store.load("nope"),
            Err(AgentError::SessionNotFound(_))
        ));
        assert!(matches!(
            store.load("../etc"),
            Err(AgentError::InvalidSessionId(_))
        ));
    }
}
