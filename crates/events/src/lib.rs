//! The live event bus of docs/review-service.md §6: every write site publishes one
//! [`Event`] with a per-boot monotonic id; the SSE route subscribes and frames them. There is no
//! replay buffer (rule 3): a subscriber sees what is published after it subscribed.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// How many events a slow subscriber may lag before it misses some (it then refetches, rule 4).
const CHANNEL_CAPACITY: usize = 4096;

/// One published event: its sequence id, the repo it concerns (for the `repo` filter) and
/// the JSON payload, whose `type` field names the event (`review:created`, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Monotonic per server boot, starting at 1.
    pub id: u64,
    /// `owner/name`, or None for events without a repository.
    pub repo: Option<String>,
    /// The payload, with `type` inside (docs/review-service.md §6).
    pub data: Value,
}

impl Event {
    /// The `type` field of the payload.
    pub fn kind(&self) -> &str {
        self.data["type"].as_str().unwrap_or("")
    }

    /// The SSE frame: `id: <id>\ndata: <json>\n\n`.
    pub fn to_sse(&self) -> String {
        format!("id: {}\ndata: {}\n\n", self.id, self.data)
    }
}

/// The SSE frame of a named heartbeat event (docs/review-service.md §6: sent on connect and after
/// HEARTBEAT_SECS of silence; named, so browsers' default handler never sees it).
pub fn heartbeat_frame() -> &'static str {
    "event: heartbeat\ndata: {}\n\n"
}

/// The payload of every live event (docs/review-service.md §6): one variant per `type`, the
/// `type` tag inside the JSON object beside the fields. `R` is the review row and `P` the repo
/// row as the server serializes them; [`Value`] by default, for code that only relays them.
/// The wire format is pinned by the `payload_json_is_the_spec_wire_format` test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type")]
pub enum Payload<R = Value, P = Value> {
    /// A review row was inserted (webhook, review command, retry, improver).
    #[serde(rename = "review:created")]
    ReviewCreated {
        /// `owner/name`.
        repo: String,
        /// The row as re-read at publish time.
        review: R,
    },
    /// Status, session, cost or tokens changed on a review row.
    #[serde(rename = "review:updated")]
    ReviewUpdated {
        /// `owner/name`.
        repo: String,
        /// The row as re-read at publish time.
        review: R,
    },
    /// The agent tools wrote findings back, or a finding's outcome changed.
    #[serde(rename = "review:findings")]
    ReviewFindings {
        /// `owner/name`.
        repo: String,
        /// The review whose findings changed.
        #[serde(rename = "reviewId")]
        review_id: i64,
    },
    /// A repo was added, edited or auto-registered, and its row actually changed.
    #[serde(rename = "repo:updated")]
    RepoUpdated {
        /// `owner/name`.
        repo: String,
        /// The row as re-read at publish time.
        row: P,
    },
    /// A repo was deleted via the dashboard.
    #[serde(rename = "repo:removed")]
    RepoRemoved {
        /// `owner/name`.
        repo: String,
    },
    /// A verified webhook arrived.
    #[serde(rename = "webhook:received")]
    WebhookReceived {
        /// `owner/name`, or None (JSON null) when the payload has no repository.
        repo: Option<String>,
        /// The forge's event name (`pull_request`, `ping`, ...).
        name: String,
        /// The delivery id header, or None (JSON null) when absent.
        delivery: Option<String>,
    },
}

impl<R, P> Payload<R, P> {
    /// The `type` tag of the variant, as on the wire.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::ReviewCreated { .. } => "review:created",
            Self::ReviewUpdated { .. } => "review:updated",
            Self::ReviewFindings { .. } => "review:findings",
            Self::RepoUpdated { .. } => "repo:updated",
            Self::RepoRemoved { .. } => "repo:removed",
            Self::WebhookReceived { .. } => "webhook:received",
        }
    }

    /// The repo the event concerns, for the `repo` filter of the stream; None for a webhook
    /// without a repository.
    pub fn repo(&self) -> Option<&str> {
        match self {
            Self::ReviewCreated { repo, .. }
            | Self::ReviewUpdated { repo, .. }
            | Self::ReviewFindings { repo, .. }
            | Self::RepoUpdated { repo, .. }
            | Self::RepoRemoved { repo } => Some(repo),
            Self::WebhookReceived { repo, .. } => repo.as_deref(),
        }
    }
}

/// The bus. Cheap to clone; all clones publish to the same subscribers.
#[derive(Clone)]
pub struct EventBus {
    inner: Arc<Inner>,
}

struct Inner {
    next_id: Mutex<u64>,
    tx: broadcast::Sender<Event>,
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBus {
    /// A bus with no subscribers; ids start at 1.
    pub fn new() -> Self {
        let (tx, _) = broadcast::channel(CHANNEL_CAPACITY);
        Self {
            inner: Arc::new(Inner {
                next_id: Mutex::new(1),
                tx,
            }),
        }
    }

    /// Publish `type` with `fields` (an object whose keys are merged beside `type`) for `repo`.
    /// Returns the published event. Never blocks; with no subscribers the event is dropped.
    pub fn publish(&self, kind: &str, repo: Option<&str>, fields: impl Serialize) -> Event {
        let mut data = json!({ "type": kind });
        if let Ok(Value::Object(map)) = serde_json::to_value(fields)
            && let Value::Object(d) = &mut data
        {
            d.extend(map);
        }
        self.publish_value(repo, data)
    }

    /// Publish a typed [`Payload`]: its `type` and repo come from the variant. Returns the
    /// published event; a payload that does not serialize to an object is published as
    /// `{"type": ...}` alone (serde_json only fails on non-string map keys).
    pub fn publish_payload<R: Serialize, P: Serialize>(&self, payload: &Payload<R, P>) -> Event {
        let data =
            serde_json::to_value(payload).unwrap_or_else(|_| json!({ "type": payload.kind() }));
        self.publish_value(payload.repo(), data)
    }

    /// Publish an event whose payload `data` (with `type` inside) was built elsewhere: another
    /// replica's event, heard through the database (docs/architecture.md, "Many replicas"). It
    /// gets the next id of this bus, so ids stay monotonic for every subscriber here.
    pub fn publish_value(&self, repo: Option<&str>, data: Value) -> Event {
        // The id is taken and the event sent under one lock, so every subscriber receives ids
        // in increasing order even when several tasks publish at once.
        let mut next_id = match self.inner.next_id.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let event = Event {
            id: *next_id,
            repo: repo.map(str::to_owned),
            data,
        };
        *next_id += 1;
        let _ = self.inner.tx.send(event.clone());
        event
    }

    /// A new subscription receiving every event published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.tx.subscribe()
    }

    /// Number of live subscribers.
    pub fn subscribers(&self) -> usize {
        self.inner.tx.receiver_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ids_are_monotonic_and_the_type_is_inside_data() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        bus.publish("repo:removed", Some("o/r"), json!({ "repo": "o/r" }));
        bus.publish(
            "webhook:received",
            None,
            json!({ "repo": null, "name": "ping" }),
        );
        let a = rx.recv().await.unwrap();
        let b = rx.recv().await.unwrap();
        assert_eq!((a.id, b.id), (1, 2));
        assert_eq!(a.kind(), "repo:removed");
        assert_eq!(
            a.to_sse(),
            "id: 1\ndata: {\"repo\":\"o/r\",\"type\":\"repo:removed\"}\n\n"
        );
        assert_eq!(b.repo, None);
    }

    #[test]
    fn payload_json_is_the_spec_wire_format() {
        let cases: Vec<(Payload, Value)> = vec![
            (
                Payload::ReviewCreated {
                    repo: "o/r".into(),
                    review: json!({ "id": 7 }),
                },
                json!({ "type": "review:created", "repo": "o/r", "review": { "id": 7 } }),
            ),
            (
                Payload::ReviewUpdated {
                    repo: "o/r".into(),
                    review: json!({ "id": 7 }),
                },
                json!({ "type": "review:updated", "repo": "o/r", "review": { "id": 7 } }),
            ),
            (
                Payload::ReviewFindings {
                    repo: "o/r".into(),
                    review_id: 7,
                },
                json!({ "type": "review:findings", "repo": "o/r", "reviewId": 7 }),
            ),
            (
                Payload::RepoUpdated {
                    repo: "o/r".into(),
                    row: json!({ "full_name": "o/r" }),
                },
                json!({ "type": "repo:updated", "repo": "o/r", "row": { "full_name": "o/r" } }),
            ),
            (
                Payload::RepoRemoved { repo: "o/r".into() },
                json!({ "type": "repo:removed", "repo": "o/r" }),
            ),
            (
                Payload::WebhookReceived {
                    repo: None,
                    name: "ping".into(),
                    delivery: None,
                },
                json!({ "type": "webhook:received", "repo": null, "name": "ping", "delivery": null }),
            ),
        ];
        for (payload, wire) in cases {
            assert_eq!(
                serde_json::to_value(&payload).unwrap(),
                wire,
                "{}",
                payload.kind()
            );
            assert_eq!(wire["type"], payload.kind());
            let back: Payload = serde_json::from_value(wire).unwrap();
            assert_eq!(back, payload);
        }
    }

    #[tokio::test]
    async fn a_typed_payload_publishes_the_same_frame_as_the_untyped_call() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        bus.publish_payload::<Value, Value>(&Payload::RepoRemoved { repo: "o/r".into() });
        let e = rx.recv().await.unwrap();
        assert_eq!(e.repo.as_deref(), Some("o/r"));
        assert_eq!(
            e.to_sse(),
            "id: 1\ndata: {\"repo\":\"o/r\",\"type\":\"repo:removed\"}\n\n"
        );
    }

    #[test]
    fn publishing_without_subscribers_is_fine() {
        let bus = EventBus::new();
        assert_eq!(bus.publish("x", None, json!({})).id, 1);
        assert_eq!(bus.subscribers(), 0);
    }
}
