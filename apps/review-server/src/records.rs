//! The one writer of review, repo and finding rows. Each change the dashboard must hear about
//! is a method here that writes and then publishes its event with the re-read row
//! (docs/review-service.md §6 rules 1 and 2), so no caller can write without publishing. There
//! is one repo-registration path and one findings write-back path (docs/architecture.md,
//! Findings), shared by the webhook, the API, the agent tools and the loopback route.
//!
//! The store handle is private. Everything else reaches the database through [`StoreView`]:
//! every read, plus the writes to tables the dashboard does not follow as rows (settings,
//! webhook deliveries, skills), which stay with their callers. `tests/architecture.rs` fails
//! when a file other than this one calls a store method that writes reviews, repos or findings.

use events::{Event, EventBus};
use review_domain::{FindingRow, NewFinding, RepoRow, ReviewRow, StatsFilter};
use review_store::{
    Charts, ClaimedReview, Completion, HeldLease, NewReview, NewSkill, PromotedReview,
    ReadQueryResult, Stats, Store, StoreError,
};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::{OnceLock, RwLock};
use tokio::sync::{broadcast, mpsc};

/// The PostgreSQL channel that carries every replica's events to the others
/// (docs/architecture.md, "Many replicas").
pub const EVENTS_CHANNEL: &str = "review_events";
/// Largest NOTIFY payload PostgreSQL takes is 8000 bytes; an event over this many is sent as
/// a reference to its review row instead.
const MAX_NOTIFY_BYTES: usize = 7900;
/// The most events [`Records::fan_out`] sends in one statement (one NOTIFY each, so at most
/// 64 × 7,900 bytes, well inside PostgreSQL's 8 GB notification queue).
const FANOUT_BATCH: usize = 64;

/// Current epoch milliseconds (leases and retry times).
pub fn now_ms() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// Current epoch seconds.
pub fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Why findings could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum FindingsError {
    #[error("review {0} not found")]
    UnknownReview(i64),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The outcome of a review's status change: the re-read row, or None when the review was not
/// in a state the change applies to (nothing written, nothing published).
pub type Transition = Result<Option<ReviewRow>, StoreError>;

/// Store writes of reviews, repos and findings plus their events.
pub struct Records {
    /// Reads, and writes of the tables outside reviews, repos and findings.
    pub store: StoreView,
    db: Store,
    events: EventBus,
    /// Registered repos by full name, so an unchanged registration (most deliveries) costs no
    /// database round trip. Every write to `repos` goes through this type and refreshes it;
    /// another replica's writes arrive as its `repo:*` events ([`Records::receive_remote`]).
    repo_cache: RwLock<HashMap<String, RepoRow>>,
    /// PostgreSQL: where published events go to be sent to the other replicas.
    fanout: OnceLock<mpsc::UnboundedSender<Event>>,
}

impl Records {
    /// Records over a store and a bus.
    pub fn new(store: Store, events: EventBus) -> Self {
        Self {
            store: StoreView(store.clone()),
            db: store,
            events,
            repo_cache: RwLock::new(HashMap::new()),
            fanout: OnceLock::new(),
        }
    }

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
                let payloads: Vec<String> =
                    batch.iter().map(|e| notify_payload(&origin, e)).collect();
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
        let Ok(v) = serde_json::from_str::<Value>(payload) else {
            tracing::warn!("an unreadable event from another replica was dropped");
            return;
        };
        if v["o"].as_str() == Some(origin) {
            return;
        }
        let repo = v["r"].as_str();
        if let Some(repo) = repo
            && let Ok(mut c) = self.repo_cache.write()
        {
            c.remove(repo);
        }
        if let Some(data) = v.get("d") {
            self.events.publish_value(repo, data.clone());
        } else if let (Some("repo:updated"), Some(repo)) = (v["k"].as_str(), repo) {
            // A repo row too large to send (a long prompt): read it here.
            match self.db.repo(repo).await {
                Ok(Some(row)) => {
                    self.events.publish(
                        "repo:updated",
                        Some(repo),
                        json!({ "repo": row.full_name, "row": row }),
                    );
                }
                Ok(None) => {
                    self.events
                        .publish("repo:removed", Some(repo), json!({ "repo": repo }));
                }
                Err(e) => tracing::warn!(error = %e, "cannot read the repo of a remote event"),
            }
        } else if let (Some(kind), Some(id)) = (v["k"].as_str(), v["review_id"].as_i64()) {
            match self.db.review(id).await {
                Ok(Some(row)) => {
                    self.events.publish(
                        kind,
                        Some(&row.repo_full_name),
                        json!({ "repo": row.repo_full_name, "review": row }),
                    );
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "cannot read the review of a remote event"),
            }
        }
    }

    /// Forgets every cached repo row: after the event connection to the other replicas was
    /// lost, their edits of that time were not heard.
    pub fn forget_cached_repos(&self) {
        if let Ok(mut c) = self.repo_cache.write() {
            c.clear();
        }
    }

    fn publish(&self, kind: &str, repo: Option<&str>, fields: Value) {
        let event = self.events.publish(kind, repo, fields);
        if let Some(tx) = self.fanout.get() {
            let _ = tx.send(event);
        }
    }

    /// A receiver of every event published from now on (GET /api/events).
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Publishes `webhook:received` for a verified delivery (docs/review-service.md §6): no row
    /// changes, so it is the one event published without a write.
    pub fn webhook_received(&self, repo: Option<&str>, name: &str, delivery: Option<&str>) {
        self.publish(
            "webhook:received",
            repo,
            json!({ "repo": repo, "name": name, "delivery": delivery }),
        );
    }

    fn cached_repo(&self, full_name: &str) -> Option<RepoRow> {
        self.repo_cache
            .read()
            .ok()
            .and_then(|c| c.get(full_name).cloned())
    }

    fn cache_repo(&self, row: &RepoRow) {
        if let Ok(mut c) = self.repo_cache.write() {
            c.insert(row.full_name.clone(), row.clone());
        }
    }

    fn repo_updated(&self, row: &RepoRow) {
        self.publish(
            "repo:updated",
            Some(&row.full_name),
            json!({ "repo": row.full_name, "row": row }),
        );
    }

    /// The one registration function (docs/review-service.md §6 rule 2): a new repo is inserted
    /// with enabled 0; an existing one changes only installation_id. repo:updated is published
    /// only when the re-read row changed.
    pub async fn register(
        &self,
        full_name: &str,
        installation_id: i64,
    ) -> Result<RepoRow, StoreError> {
        if let Some(row) = self.cached_repo(full_name)
            && row.installation_id == installation_id
        {
            return Ok(row);
        }
        let (row, changed) = self
            .db
            .register_repo(full_name, installation_id, now())
            .await?;
        self.cache_repo(&row);
        if changed {
            self.repo_updated(&row);
        }
        Ok(row)
    }

    /// A registered repo (cached).
    pub async fn repo(&self, full_name: &str) -> Result<Option<RepoRow>, StoreError> {
        if let Some(row) = self.cached_repo(full_name) {
            return Ok(Some(row));
        }
        let row = self.db.repo(full_name).await?;
        if let Some(row) = &row {
            self.cache_repo(row);
        }
        Ok(row)
    }

    /// PUT repo (docs/review-service.md §4): prompt and model written as given, enabled kept
    /// when None. Publishes repo:updated when the re-read row changed; None when the repo is
    /// not registered.
    pub async fn edit_repo(
        &self,
        full_name: &str,
        prompt: Option<&str>,
        model: Option<&str>,
        enabled: Option<i64>,
        min_severity: Option<Option<&str>>,
    ) -> Result<Option<RepoRow>, StoreError> {
        let before = self.db.repo(full_name).await?;
        let row = self
            .db
            .update_repo(full_name, prompt, model, enabled, min_severity)
            .await?;
        if let Some(row) = &row {
            self.cache_repo(row);
            if before.as_ref() != Some(row) {
                self.repo_updated(row);
            }
        }
        Ok(row)
    }

    /// DELETE repo; publishes repo:removed when a row was deleted. True when one was.
    pub async fn remove_repo(&self, full_name: &str) -> Result<bool, StoreError> {
        let removed = self.db.delete_repo(full_name).await?;
        if let Ok(mut c) = self.repo_cache.write() {
            c.remove(full_name);
        }
        if removed {
            self.publish(
                "repo:removed",
                Some(full_name),
                json!({ "repo": full_name }),
            );
        }
        Ok(removed)
    }

    /// Inserts a pending review with its waiting queue row, claiming delivery id `delivery`
    /// (None: no id) in the same transaction (`/review` commands, retries by hand, and the
    /// webhook on SQLite: docs/architecture.md, "The webhook inbox"); publishes
    /// review:created. None, nothing written, for a redelivery.
    pub async fn create_delivered_review(
        &self,
        delivery: Option<&str>,
        new: &NewReview,
        job: &str,
    ) -> Result<Option<ReviewRow>, StoreError> {
        let row = self
            .db
            .insert_delivered_review(delivery, new, job, now())
            .await?;
        if let Some(row) = &row {
            self.review_event("review:created", row);
        }
        Ok(row)
    }

    /// Moves up to `limit` of the oldest webhook inbox rows into pending reviews with their
    /// queue rows (docs/architecture.md, "The webhook inbox"); publishes review:created for
    /// each. Returns them oldest first; empty when the inbox is empty.
    pub async fn promote_accepted(&self, limit: i64) -> Result<Vec<PromotedReview>, StoreError> {
        let promoted = self.db.promote_inbox(limit, now()).await?;
        for p in &promoted {
            self.review_event("review:created", &p.row);
        }
        Ok(promoted)
    }

    /// Insert a pending review that `owner` runs itself under a lease until `lease_until`
    /// (epoch ms; improver runs); publishes review:created.
    pub async fn create_leased_review(
        &self,
        new: &NewReview,
        owner: &str,
        lease_until: i64,
    ) -> Result<ReviewRow, StoreError> {
        let row = self
            .db
            .insert_queued_review(new, "{}", Some(owner), Some(lease_until), now())
            .await?;
        self.review_event("review:created", &row);
        Ok(row)
    }

    /// Replace the automatic retry `retry_id` that `owner` holds with its review, queued with
    /// `job`; publishes review:created. None when `owner` lost the retry to another replica.
    pub async fn create_retry_review(
        &self,
        retry_id: i64,
        owner: &str,
        new: &NewReview,
        job: &str,
    ) -> Result<Option<ReviewRow>, StoreError> {
        let row = self
            .db
            .insert_retry_review(retry_id, owner, new, job, now())
            .await?;
        if let Some(row) = &row {
            self.review_event("review:created", row);
        }
        Ok(row)
    }

    /// Claims the oldest waiting review for `owner` until `lease_until` (epoch ms).
    pub async fn claim(
        &self,
        owner: &str,
        lease_until: i64,
    ) -> Result<Option<ClaimedReview>, StoreError> {
        self.db.claim_review(owner, lease_until).await
    }

    /// Renews `owner`'s leases; see [`Store::renew_leases`].
    pub async fn renew(&self, owner: &str, lease_until: i64) -> Result<Vec<HeldLease>, StoreError> {
        self.db.renew_leases(owner, lease_until).await
    }

    /// Removes the queue row of a run that ended.
    pub async fn release(&self, review_id: i64) -> Result<(), StoreError> {
        self.db.release_review(review_id).await
    }

    /// Asks the replica running `review_id` to end it; the owner's id when one holds a live
    /// lease.
    pub async fn request_cancel(
        &self,
        review_id: i64,
        reason: &str,
    ) -> Result<Option<String>, StoreError> {
        self.db.request_cancel(review_id, reason, now_ms()).await
    }

    /// pending -> failed with `error` while no replica has claimed the review; publishes
    /// review:updated. None when it was claimed or ended meanwhile.
    pub async fn fail_waiting(&self, id: i64, error: &str) -> Transition {
        Ok(self.review_updated(self.db.fail_waiting_review(id, error, now()).await?))
    }

    /// Fails the reviews whose replica stopped renewing their lease; publishes review:updated
    /// for each.
    pub async fn reap(&self, error: &str) -> Result<Vec<ReviewRow>, StoreError> {
        let lapsed = self.db.reap_lapsed(error, now_ms()).await?;
        for row in &lapsed {
            self.review_event("review:updated", row);
        }
        Ok(lapsed)
    }

    /// At boot, before the server listens: fails the unfinished reviews without a queue row
    /// (left by a version without the queue, or written by hand), and the reviews this replica
    /// (`owner`; None on SQLite: every lease) had claimed before it was killed, with `error`.
    /// Nothing is published: nobody listens yet.
    pub async fn fail_interrupted_at_boot(
        &self,
        owner: Option<&str>,
        error: &str,
    ) -> Result<Vec<ReviewRow>, StoreError> {
        let mut failed = self.db.fail_claimed_at_boot(owner, error, now()).await?;
        failed.extend(self.db.fail_orphaned(error, now()).await?);
        Ok(failed)
    }

    /// pending -> running with the agent session id (docs/review-service.md §3); publishes
    /// review:updated. None (nothing published) when the review was no longer pending.
    pub async fn start(&self, id: i64, session_id: &str) -> Transition {
        Ok(self.review_updated(self.db.start_review(id, session_id).await?))
    }

    /// Records the check run of a running review. The dashboard shows no check run, so
    /// nothing is published.
    pub async fn attach_check_run(&self, id: i64, check_run_id: i64) -> Result<(), StoreError> {
        self.db.set_check_run_id(id, check_run_id).await
    }

    /// running -> completed with what the run spent (docs/review-service.md §3); publishes
    /// review:updated. None when the review was no longer running.
    pub async fn complete(&self, id: i64, done: &Completion) -> Transition {
        Ok(self.review_updated(self.db.complete_review(id, done, now()).await?))
    }

    /// pending or running -> skipped with the PR's patch id (None: empty diff; see
    /// docs/architecture.md, Lifecycle extras); publishes review:updated. None when terminal.
    pub async fn skip(&self, id: i64, patch_id: Option<&str>) -> Transition {
        Ok(self.review_updated(self.db.skip_review(id, patch_id, now()).await?))
    }

    /// pending or running -> failed with `error` and, when known, what the run spent
    /// (docs/review-service.md §3); publishes review:updated. None when already terminal,
    /// which is how a stop of a finished review is told apart.
    pub async fn fail(&self, id: i64, error: &str, spent: Option<&Completion>) -> Transition {
        Ok(self.review_updated(self.db.fail_review(id, error, spent, now()).await?))
    }

    fn review_updated(&self, row: Option<ReviewRow>) -> Option<ReviewRow> {
        if let Some(row) = &row {
            self.review_event("review:updated", row);
        }
        row
    }

    fn review_event(&self, kind: &str, row: &ReviewRow) {
        self.publish(
            kind,
            Some(&row.repo_full_name),
            json!({ "repo": row.repo_full_name, "review": row }),
        );
    }

    /// The findings write-back (docs/architecture.md, Findings): validate all, write all in one
    /// transaction, publish review:findings. Errors: the first invalid finding (its index in
    /// the message), an unknown review, or the store.
    /// Records the candidates verification dropped from `review_id`, with the verifier's
    /// reasons (docs/review-service.md, "Verification before posting"); publishes
    /// review:findings so an open review page shows them.
    ///
    /// Errors: [`FindingsError::UnknownReview`]; the store's.
    pub async fn record_dropped(
        &self,
        review_id: i64,
        dropped: &[(review_domain::InlineComment, String)],
    ) -> Result<(), FindingsError> {
        let review = self
            .db
            .review(review_id)
            .await?
            .ok_or(FindingsError::UnknownReview(review_id))?;
        self.db
            .insert_dropped_findings(&review, dropped, now())
            .await?;
        self.publish(
            "review:findings",
            Some(&review.repo_full_name),
            json!({ "repo": review.repo_full_name, "reviewId": review.id }),
        );
        Ok(())
    }

    pub async fn record_findings(
        &self,
        review_id: i64,
        findings: &[NewFinding],
    ) -> Result<Vec<FindingRow>, FindingsError> {
        for (i, f) in findings.iter().enumerate() {
            f.validate().map_err(|e| {
                FindingsError::Invalid(e.replace("findings[]", &format!("findings[{i}]")))
            })?;
        }
        let review = self
            .db
            .review(review_id)
            .await?
            .ok_or(FindingsError::UnknownReview(review_id))?;
        let rows = self.db.insert_findings(&review, findings, now()).await?;
        self.publish(
            "review:findings",
            Some(&review.repo_full_name),
            json!({ "repo": review.repo_full_name, "reviewId": review.id }),
        );
        Ok(rows)
    }
}

/// Forwards each listed method to the same method of the wrapped [`Store`].
macro_rules! forward {
    ($($(#[$doc:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            $(#[$doc])*
            pub async fn $name(&self $(, $arg: $ty)*) -> Result<$ret, StoreError> {
                self.0.$name($($arg),*).await
            }
        )*
    };
}

/// The store without its writes of reviews, repos and findings: every read, and the writes of
/// settings, webhook deliveries and skills (tables no dashboard row event follows). Each method
/// is the [`Store`] method of the same name; see there for shapes and errors.
#[derive(Clone)]
pub struct StoreView(Store);

impl StoreView {
    /// The database's dialect.
    pub fn backend(&self) -> review_store::Backend {
        self.0.backend()
    }

    forward! {
        /// A review by id.
        fn review(&self, id: i64) -> Option<ReviewRow>;
        /// A repo by full name (uncached; [`Records::repo`] caches).
        fn repo(&self, full_name: &str) -> Option<RepoRow>;
        /// Every registered repo.
        fn repos(&self) -> Vec<RepoRow>;
        /// The newest reviews of a repo, or of one of its PRs.
        fn reviews_for(&self, repo: &str, pr_number: Option<i64>, limit: i64) -> Vec<ReviewRow>;
        /// The reviews of the review list under a filter.
        fn list_reviews(&self, f: &StatsFilter, status: Option<&str>, limit: i64) -> Vec<ReviewRow>;
        /// The findings of one review, by id.
        fn findings_for_review(&self, review_id: i64) -> Vec<FindingRow>;
        /// The findings of every review of a PR, by id.
        fn findings_for_pr(&self, repo: &str, pr_number: i64) -> Vec<FindingRow>;
        /// The candidates verification dropped from one review, by id.
        fn dropped_findings(&self, review_id: i64) -> Vec<review_domain::DroppedFindingRow>;
        /// The patch id of the PR's last completed review.
        fn last_completed_patch_id(&self, repo: &str, pr_number: i64) -> Option<String>;
        /// Whether a review of the PR other than `except` is pending or running.
        fn pr_has_active_review(&self, repo: &str, pr_number: i64, except: i64) -> bool;
        /// Whether an improver run of the repo is pending or running.
        fn improver_active(&self, repo: &str) -> bool;
        /// The repo's last completed or skipped improver run.
        fn last_finished_improver_run(&self, repo: &str) -> Option<ReviewRow>;
        /// The repo's PR reviews completed since `since` (epoch seconds).
        fn completed_reviews_since(&self, repo: &str, since: i64, limit: i64) -> Vec<ReviewRow>;
        /// The stats page's numbers.
        fn stats(&self, f: &StatsFilter) -> Stats;
        /// The stats page's charts.
        fn charts(&self, f: &StatsFilter) -> Charts;
        /// The chat's read-only SQL.
        fn read_query(&self, sql: &str) -> ReadQueryResult;
        /// Every stored setting.
        fn settings(&self) -> BTreeMap<String, String>;
        /// One stored setting.
        fn setting(&self, key: &str) -> Option<String>;
        /// Writes or (None) deletes a setting.
        fn put_setting(&self, key: &str, value: Option<&str>) -> ();
        /// Claims a webhook delivery id; false for a redelivery.
        fn claim_delivery(&self, id: &str, now: i64) -> bool;
        /// Forgets delivery ids older than the window.
        fn prune_deliveries(&self, now: i64) -> u64;
        /// Releases the claim of a delivery whose handling failed.
        fn release_delivery(&self, id: &str) -> ();
        /// Claims a delivery id and writes its review to the webhook inbox in one round trip;
        /// false for a redelivery.
        fn accept_delivery(&self, delivery: Option<&str>, new: &NewReview, job: &str, now_ms: i64) -> bool;
        /// How many accepted deliveries wait in the webhook inbox.
        fn inbox_len(&self) -> i64;
        /// SQLite: checkpoints the write-ahead log; (frames in the log, checkpointed).
        fn checkpoint(&self) -> (i64, i64);
        /// SQLite: folds the whole write-ahead log into the database file and empties it.
        fn checkpoint_at_shutdown(&self) -> bool;
        /// The PR's pending or running reviews other than `except`, by id.
        fn active_reviews_of_pr(&self, repo: &str, pr_number: i64, except: i64) -> Vec<i64>;
        /// Schedules an automatic retry (epoch ms).
        fn schedule_retry(&self, review_id: i64, job: &str, not_before: i64) -> ();
        /// Claims a due automatic retry.
        fn claim_due_retry(&self, owner: &str, lease_until: i64, now_ms: i64) -> Option<review_store::ClaimedRetry>;
        /// Drops a retry this replica holds.
        fn drop_retry(&self, id: i64, owner: &str) -> bool;
        /// How many automatic retries wait.
        fn waiting_retries(&self) -> i64;
        /// Stores a transcript document.
        fn save_transcript(&self, session_id: &str, doc: &str, now: i64) -> ();
        /// A stored transcript document.
        fn transcript(&self, session_id: &str) -> Option<String>;
        /// Sends a NOTIFY to every replica (PostgreSQL).
        fn notify(&self, channel: &str, payload: &str) -> ();
        /// A LISTEN connection (PostgreSQL).
        fn listener(&self, channels: &[&str]) -> Option<review_store::PgListener>;
        /// Every installed skill.
        fn skills(&self) -> Vec<review_domain::SkillMetaRow>;
        /// One installed skill.
        fn skill(&self, name: &str) -> Option<review_domain::SkillMetaRow>;
        /// Installs or re-installs a skill.
        fn upsert_skill(&self, skill: &NewSkill, now: i64) -> review_domain::SkillMetaRow;
        /// Enables or disables a skill.
        fn set_skill_enabled(&self, name: &str, enabled: bool) -> Option<review_domain::SkillMetaRow>;
        /// Removes a skill.
        fn delete_skill(&self, name: &str) -> bool;
        /// A skill's stored files.
        fn skill_blob(&self, name: &str) -> Option<Vec<u8>>;
        /// Every enabled skill with its stored files.
        fn enabled_skill_blobs(&self) -> Vec<(review_domain::SkillMetaRow, Vec<u8>)>;
    }
}

/// The NOTIFY payload of `event` from replica `origin`: `{"o", "r", "d"}` with the event's
/// data, or, when that is over [`MAX_NOTIFY_BYTES`] (a review with a long error, a repo with a
/// long prompt), `{"o", "r", "k", "review_id"}` for the receiver to re-read the row.
fn notify_payload(origin: &str, event: &Event) -> String {
    // `i`, the event's id on the sender's bus, keeps two equal events of one batch apart:
    // PostgreSQL delivers identical payloads sent in one transaction once.
    let full = json!({ "o": origin, "i": event.id, "r": event.repo, "d": event.data }).to_string();
    if full.len() <= MAX_NOTIFY_BYTES {
        return full;
    }
    json!({
        "o": origin,
        "i": event.id,
        "r": event.repo,
        "k": event.kind(),
        "review_id": event.data["review"]["id"],
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_event_over_the_notify_limit_is_sent_as_a_reference_to_its_row() {
        let bus = EventBus::new();
        let small = bus.publish(
            "review:updated",
            Some("o/r"),
            json!({ "repo": "o/r", "review": { "id": 7, "error": "short" } }),
        );
        let v: Value = serde_json::from_str(&notify_payload("a", &small)).unwrap();
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
        let text = notify_payload("a", &big);
        assert!(text.len() <= MAX_NOTIFY_BYTES, "{}", text.len());
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v,
            json!({ "o": "a", "i": 2, "r": "o/r", "k": "review:updated", "review_id": 7 })
        );
    }
}
