//! The live event bus of docs/review-service.md §6: every write site publishes one
//! [`Event`] with a per-boot monotonic id; the SSE route subscribes and frames them. There is no
//! replay buffer (rule 3): a subscriber sees what is published after it subscribed.

use serde::Serialize;
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
    fn publishing_without_subscribers_is_fine() {
        let bus = EventBus::new();
        assert_eq!(bus.publish("x", None, json!({})).id, 1);
        assert_eq!(bus.subscribers(), 0);
    }
}
