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
    Charts, Completion, NewReview, NewSkill, ReadQueryResult, Stats, Store, StoreError,
};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::sync::RwLock;
use tokio::sync::broadcast;

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
    /// database round trip. Every write to `repos` goes through this type and refreshes it.
    repo_cache: RwLock<HashMap<String, RepoRow>>,
}

impl Records {
    /// Records over a store and a bus.
    pub fn new(store: Store, events: EventBus) -> Self {
        Self {
            store: StoreView(store.clone()),
            db: store,
            events,
            repo_cache: RwLock::new(HashMap::new()),
        }
    }

    /// A receiver of every event published from now on (GET /api/events).
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Publishes `webhook:received` for a verified delivery (docs/review-service.md §6): no row
    /// changes, so it is the one event published without a write.
    pub fn webhook_received(&self, repo: Option<&str>, name: &str, delivery: Option<&str>) {
        self.events.publish(
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
        self.events.publish(
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
    ) -> Result<Option<RepoRow>, StoreError> {
        let before = self.db.repo(full_name).await?;
        let row = self
            .db
            .update_repo(full_name, prompt, model, enabled)
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
            self.events.publish(
                "repo:removed",
                Some(full_name),
                json!({ "repo": full_name }),
            );
        }
        Ok(removed)
    }

    /// Insert a pending review (docs/review-service.md §3); publishes review:created.
    pub async fn create_review(&self, new: &NewReview) -> Result<ReviewRow, StoreError> {
        let row = self.db.insert_review(new, now()).await?;
        self.review_event("review:created", &row);
        Ok(row)
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

    /// At boot, fails every review a previous process left pending or running with `error`
    /// (docs/architecture.md, Lifecycle extras). Nothing is published: no client can be
    /// subscribed before the server listens.
    pub async fn fail_interrupted(&self, error: &str) -> Result<Vec<ReviewRow>, StoreError> {
        self.db.fail_unfinished(error, now()).await
    }

    fn review_updated(&self, row: Option<ReviewRow>) -> Option<ReviewRow> {
        if let Some(row) = &row {
            self.review_event("review:updated", row);
        }
        row
    }

    fn review_event(&self, kind: &str, row: &ReviewRow) {
        self.events.publish(
            kind,
            Some(&row.repo_full_name),
            json!({ "repo": row.repo_full_name, "review": row }),
        );
    }

    /// The findings write-back (docs/architecture.md, Findings): validate all, write all in one
    /// transaction, publish review:findings. Errors: the first invalid finding (its index in
    /// the message), an unknown review, or the store.
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
        self.events.publish(
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
        /// Releases the claim of a delivery whose handling failed.
        fn release_delivery(&self, id: &str) -> ();
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
