//! The events replicas send each other on PostgreSQL (docs/architecture.md, "Many replicas"):
//! each event published here goes out on [`EVENTS_CHANNEL`] as a [`Notice`], and each notice
//! another replica sent is published on this replica's bus. A `repo:*` notice drops that repo
//! from the [`RepoCache`](super::repo_cache::RepoCache), so the next review here reads the
//! edited row.
//!
//! The notice's JSON is the wire format between versions: replicas of an older and a newer
//! version run side by side during a rolling upgrade, so its keys, and their order, stay as
//! they are (the tests hold payloads of earlier versions).

use super::Records;
use events::{Event, Payload};
use review_domain::{RepoRow, ReviewRow};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

/// The PostgreSQL channel that carries every replica's events to the others
/// (docs/architecture.md, "Many replicas").
pub(crate) const EVENTS_CHANNEL: &str = "review_events";
/// Largest NOTIFY payload PostgreSQL takes is 8000 bytes; an event over this many is sent as
/// a reference to its review row instead.
const MAX_NOTIFY_BYTES: usize = 7900;
/// The most events [`Records::fan_out`] sends in one statement (one NOTIFY each, so at most
/// 64 × 7,900 bytes, well inside PostgreSQL's 8 GB notification queue).
const FANOUT_BATCH: usize = 64;

/// One event as a replica sends it to the others: the event itself, or, when that is over
/// [`MAX_NOTIFY_BYTES`] (a review with a long error, a repo with a long prompt), a reference
/// to its row for the receiver to re-read. Keys are one letter to save payload bytes; fields
/// are written in the keys' alphabetical order, as the `json!` maps of earlier versions were.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum Notice {
    /// `{"d", "i", "o", "r"}`: the event's data, whole.
    Event {
        /// The event's data, `type` inside, as published on the sender's bus.
        #[serde(rename = "d")]
        data: Value,
        /// The event's id on the sender's bus: it keeps two equal events of one batch apart,
        /// since PostgreSQL delivers identical payloads sent in one transaction once. Absent
        /// from versions that sent one event per statement; the receiver ignores it.
        #[serde(rename = "i", default)]
        id: Option<u64>,
        /// The sending replica's name.
        #[serde(rename = "o")]
        origin: String,
        /// The event's repo, `owner/name`.
        #[serde(rename = "r", default)]
        repo: Option<String>,
    },
    /// `{"i", "k", "o", "r", "review_id"}`: the event's kind and the row to re-read (the
    /// review by `review_id`, or for `repo:updated` the repo `r`).
    Reference {
        /// As in [`Notice::Event`].
        #[serde(rename = "i", default)]
        id: Option<u64>,
        /// The event's `type`.
        #[serde(rename = "k", default)]
        kind: Option<String>,
        /// The sending replica's name.
        #[serde(rename = "o")]
        origin: String,
        /// The event's repo, `owner/name`.
        #[serde(rename = "r", default)]
        repo: Option<String>,
        /// The review of a `review:*` event; null for other events.
        #[serde(default)]
        review_id: Option<i64>,
    },
}

impl Notice {
    /// The notice of `event` from replica `origin`: the event itself when its JSON fits in
    /// [`MAX_NOTIFY_BYTES`], else a reference to its row.
    fn of(origin: &str, event: &Event) -> String {
        let whole = Notice::Event {
            data: event.data.clone(),
            id: Some(event.id),
            origin: origin.to_owned(),
            repo: event.repo.clone(),
        };
        let text = serde_json::to_string(&whole).unwrap_or_default();
        if text.len() <= MAX_NOTIFY_BYTES {
            return text;
        }
        let reference = Notice::Reference {
            id: Some(event.id),
            kind: Some(event.kind().to_owned()),
            origin: origin.to_owned(),
            repo: event.repo.clone(),
            review_id: event.data["review"]["id"].as_i64(),
        };
        serde_json::to_string(&reference).unwrap_or_default()
    }

    fn origin(&self) -> &str {
        match self {
            Notice::Event { origin, .. } | Notice::Reference { origin, .. } => origin,
        }
    }

    fn repo(&self) -> Option<&str> {
        match self {
            Notice::Event { repo, .. } | Notice::Reference { repo, .. } => repo.as_deref(),
        }
    }
}

impl Records {
    /// PostgreSQL: from now on every event published here is also sent, tagged with `origin`
    /// (this replica), on [`EVENTS_CHANNEL`] by a task of its own, in publishing order. Must
    /// be called inside the runtime; a second call changes nothing.
    pub fn fan_out(&self, origin: String) {
        if self.db.backend() != review_store::Backend::Postgres {
            return;
        }
        let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
        if self.fanout.set(tx).is_err() {
            return;
        }
        let db = self.db.clone();
        tokio::spawn(async move {
            // Everything published since the last send goes out in one statement: a busy
            // replica (thousands of webhook:received a second) pays one round trip per batch,
            // so the backlog cannot grow without bound.
            let mut batch = Vec::with_capacity(FANOUT_BATCH);
            while rx.recv_many(&mut batch, FANOUT_BATCH).await > 0 {
                let payloads: Vec<String> = batch.iter().map(|e| Notice::of(&origin, e)).collect();
                if let Err(e) = db.notify_many(EVENTS_CHANNEL, &payloads).await {
                    tracing::warn!(error = %e, events = batch.len(), "cannot send events to the other replicas");
                }
                batch.clear();
            }
        });
    }

    /// An event another replica sent on [`EVENTS_CHANNEL`] (`payload` as [`Records::fan_out`]
    /// wrote it): published on this replica's bus with an id of this bus, unless `origin` is
    /// this replica. A `repo:*` event drops the cached row of that repo, so the next review
    /// here reads it fresh.
    pub async fn receive_remote(&self, origin: &str, payload: &str) {
        let Ok(notice) = serde_json::from_str::<Notice>(payload) else {
            tracing::warn!("an unreadable event from another replica was dropped");
            return;
        };
        if notice.origin() == origin {
            return;
        }
        let repo = notice.repo();
        if let Some(repo) = repo {
            self.repo_cache.forget(repo);
        }
        match &notice {
            Notice::Event { data, .. } => {
                // Read as the one payload type, as every local write site builds it; an event
                // type this version does not know (a newer replica's, during a rolling
                // upgrade) is relayed as it came rather than dropped.
                match Payload::<Value, Value>::deserialize(data) {
                    Ok(payload) => {
                        self.events.publish_payload(&payload);
                    }
                    Err(_) => {
                        self.events.publish_value(repo, data.clone());
                    }
                }
            }
            Notice::Reference {
                kind, review_id, ..
            } => match (kind.as_deref(), repo) {
                // A repo row too large to send (a long prompt): read it here.
                (Some("repo:updated"), Some(repo)) => self.republish_repo(repo).await,
                (Some(kind), _) => {
                    if let Some(id) = review_id {
                        self.republish_review(kind, *id).await;
                    }
                }
                (None, _) => {}
            },
        }
    }

    /// Publishes `repo:updated` with the row of `repo` as read now, or `repo:removed` when it
    /// is gone.
    async fn republish_repo(&self, repo: &str) {
        match self.db.repo(repo).await {
            Ok(Some(row)) => {
                self.events
                    .publish_payload::<ReviewRow, _>(&Payload::RepoUpdated {
                        repo: row.full_name.clone(),
                        row: &row,
                    });
            }
            Ok(None) => {
                self.events
                    .publish_payload::<ReviewRow, RepoRow>(&Payload::RepoRemoved {
                        repo: repo.to_owned(),
                    });
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the repo of a remote event"),
        }
    }

    /// Publishes `kind` (review:created, else review:updated) with review `id` as read now;
    /// nothing when it is gone.
    async fn republish_review(&self, kind: &str, id: i64) {
        match self.db.review(id).await {
            Ok(Some(row)) => {
                let repo = row.repo_full_name.clone();
                let payload = if kind == "review:created" {
                    Payload::ReviewCreated { repo, review: &row }
                } else {
                    Payload::ReviewUpdated { repo, review: &row }
                };
                self.events.publish_payload::<_, RepoRow>(&payload);
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "cannot read the review of a remote event"),
        }
    }

    /// Forgets every cached repo row: after the event connection to the other replicas was
    /// lost, their edits of that time were not heard.
    pub fn forget_cached_repos(&self) {
        self.repo_cache.clear();
    }

    /// Hands `event`, just published on this replica's bus, to the fan-out task, if one runs.
    pub(super) fn send_to_replicas(&self, event: Event) {
        if let Some(tx) = self.fanout.get() {
            let _ = tx.send(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use events::EventBus;
    use serde_json::json;

    #[tokio::test]
    async fn a_relayed_event_is_republished_as_its_payload_and_an_unknown_one_as_it_came() {
        let store = review_store::Store::open("sqlite::memory:").await.unwrap();
        let bus = EventBus::new();
        let records = Records::new(store, bus.clone());
        let mut rx = bus.subscribe();
        let known = json!({"type": "review:findings", "repo": "o/r", "reviewId": 7});
        let newer = json!({"type": "review:transcript", "repo": "o/r", "reviewId": 7, "items": 3});
        for data in [&known, &newer] {
            let notice = json!({"d": data, "i": 1, "o": "other", "r": "o/r"}).to_string();
            records.receive_remote("here", &notice).await;
            let event = rx.recv().await.unwrap();
            assert_eq!(&event.data, data);
            assert_eq!(event.repo.as_deref(), Some("o/r"));
        }
        // A notice this replica sent itself is not published again.
        let own = json!({"d": known, "i": 2, "o": "here", "r": "o/r"}).to_string();
        records.receive_remote("here", &own).await;
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn an_event_over_the_notify_limit_is_sent_as_a_reference_to_its_row() {
        let bus = EventBus::new();
        let small = bus.publish(
            "review:updated",
            Some("o/r"),
            json!({ "repo": "o/r", "review": { "id": 7, "error": "short" } }),
        );
        let v: Value = serde_json::from_str(&Notice::of("a", &small)).unwrap();
        assert_eq!(
            (
                v["o"].as_str(),
                v["i"].as_u64(),
                v["d"]["review"]["id"].as_i64()
            ),
            (Some("a"), Some(1), Some(7))
        );
        let big = bus.publish(
            "review:updated",
            Some("o/r"),
            json!({ "repo": "o/r", "review": { "id": 7, "error": "x".repeat(20_000) } }),
        );
        let text = Notice::of("a", &big);
        assert!(text.len() <= MAX_NOTIFY_BYTES, "{}", text.len());
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v,
            json!({ "o": "a", "i": 2, "r": "o/r", "k": "review:updated", "review_id": 7 })
        );
    }

    #[test]
    fn notices_are_written_byte_for_byte_as_earlier_versions_wrote_them() {
        let bus = EventBus::new();
        let event = bus.publish(
            "review:updated",
            Some("o/r"),
            json!({ "repo": "o/r", "review": { "id": 7, "error": "short" } }),
        );
        assert_eq!(
            Notice::of("host-1", &event),
            r#"{"d":{"repo":"o/r","review":{"error":"short","id":7},"type":"review:updated"},"i":1,"o":"host-1","r":"o/r"}"#
        );
        let event = bus.publish("webhook:received", None, json!({ "name": "ping" }));
        assert_eq!(
            Notice::of("host-1", &event),
            r#"{"d":{"name":"ping","type":"webhook:received"},"i":2,"o":"host-1","r":null}"#
        );
        let prompt = "p".repeat(10_000);
        let event = bus.publish(
            "repo:updated",
            Some("o/r"),
            json!({ "repo": "o/r", "row": { "full_name": "o/r", "prompt": prompt } }),
        );
        assert_eq!(
            Notice::of("host-1", &event),
            r#"{"i":3,"k":"repo:updated","o":"host-1","r":"o/r","review_id":null}"#
        );
    }

    #[test]
    fn payloads_of_earlier_versions_still_parse() {
        let cases = [
            // With the bus id (since events are sent in batches).
            (
                r#"{"d":{"repo":"o/r","type":"repo:removed"},"i":4,"o":"old","r":"o/r"}"#,
                Notice::Event {
                    data: json!({ "repo": "o/r", "type": "repo:removed" }),
                    id: Some(4),
                    origin: "old".into(),
                    repo: Some("o/r".into()),
                },
            ),
            (
                r#"{"i":5,"k":"review:updated","o":"old","r":"o/r","review_id":9}"#,
                Notice::Reference {
                    id: Some(5),
                    kind: Some("review:updated".into()),
                    origin: "old".into(),
                    repo: Some("o/r".into()),
                    review_id: Some(9),
                },
            ),
            // Without it (one event per statement), keys in any order.
            (
                r#"{"o":"older","r":null,"d":{"type":"webhook:received","name":"ping"}}"#,
                Notice::Event {
                    data: json!({ "type": "webhook:received", "name": "ping" }),
                    id: None,
                    origin: "older".into(),
                    repo: None,
                },
            ),
            (
                r#"{"o":"older","r":"o/r","k":"repo:updated","review_id":null}"#,
                Notice::Reference {
                    id: None,
                    kind: Some("repo:updated".into()),
                    origin: "older".into(),
                    repo: Some("o/r".into()),
                    review_id: None,
                },
            ),
        ];
        for (payload, want) in cases {
            assert_eq!(
                serde_json::from_str::<Notice>(payload).unwrap(),
                want,
                "{payload}"
            );
        }
        assert!(serde_json::from_str::<Notice>("not json").is_err());
    }
}
