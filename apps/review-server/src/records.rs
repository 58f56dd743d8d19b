//! The write sites of the review service. Every write that the dashboard must hear about goes
//! through here, and the event is published right after the write with the re-read row
//! (spec/review-service.md section 6, rules 1 and 2). There is one repo-registration path and
//! one findings write-back path (DESIGN.md, Findings), shared by the agent tools and the
//! loopback route.

use events::EventBus;
use review_domain::{FindingRow, NewFinding, RepoRow, ReviewRow};
use review_store::{NewReview, Store, StoreError};
use serde_json::json;
use std::collections::HashMap;
use std::sync::RwLock;

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

/// Store writes plus their events.
pub struct Records {
    pub store: Store,
    pub events: EventBus,
    /// Registered repos by full name, so an unchanged registration (most deliveries) costs no
    /// database round trip. Every write to `repos` goes through this type and refreshes it.
    repo_cache: RwLock<HashMap<String, RepoRow>>,
}

impl Records {
    /// Records over a store and a bus.
    pub fn new(store: Store, events: EventBus) -> Self {
        Self {
            store,
            events,
            repo_cache: RwLock::new(HashMap::new()),
        }
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

    /// The one registration function (spec section 6 rule 2): a new repo is inserted with
    /// enabled 0; an existing one changes only installation_id. repo:updated is published
    /// only when the re-read row changed.
    pub async fn register_repo(
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
            .store
            .register_repo(full_name, installation_id, now())
            .await?;
        self.cache_repo(&row);
        if changed {
            self.events.publish(
                "repo:updated",
                Some(full_name),
                json!({ "repo": full_name, "row": row }),
            );
        }
        Ok(row)
    }

    /// A registered repo (cached).
    pub async fn repo(&self, full_name: &str) -> Result<Option<RepoRow>, StoreError> {
        if let Some(row) = self.cached_repo(full_name) {
            return Ok(Some(row));
        }
        let row = self.store.repo(full_name).await?;
        if let Some(row) = &row {
            self.cache_repo(row);
        }
        Ok(row)
    }

    /// PUT repo (spec section 4): prompt and model written as given, enabled kept when None.
    /// Publishes repo:updated when the re-read row changed.
    pub async fn update_repo(
        &self,
        full_name: &str,
        prompt: Option<&str>,
        model: Option<&str>,
        enabled: Option<i64>,
    ) -> Result<Option<RepoRow>, StoreError> {
        let before = self.store.repo(full_name).await?;
        let row = self
            .store
            .update_repo(full_name, prompt, model, enabled)
            .await?;
        if let Some(row) = &row {
            self.cache_repo(row);
            if before.as_ref() != Some(row) {
                self.events.publish(
                    "repo:updated",
                    Some(full_name),
                    json!({ "repo": full_name, "row": row }),
                );
            }
        }
        Ok(row)
    }

    /// DELETE repo; publishes repo:removed when a row was deleted.
    pub async fn delete_repo(&self, full_name: &str) -> Result<bool, StoreError> {
        let removed = self.store.delete_repo(full_name).await?;
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

    /// Insert a pending review; publishes review:created.
    pub async fn create_review(&self, new: &NewReview) -> Result<ReviewRow, StoreError> {
        let row = self.store.insert_review(new, now()).await?;
        self.review_event("review:created", &row);
        Ok(row)
    }

    /// Publish review:updated for a re-read row (None: nothing changed, nothing published).
    pub fn review_updated(&self, row: Option<ReviewRow>) -> Option<ReviewRow> {
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

    /// The findings write-back (DESIGN.md, Findings): validate all, write all in one
    /// transaction, publish review:findings.
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
            .store
            .review(review_id)
            .await?
            .ok_or(FindingsError::UnknownReview(review_id))?;
        let rows = self.store.insert_findings(&review, findings, now()).await?;
        self.events.publish(
            "review:findings",
            Some(&review.repo_full_name),
            json!({ "repo": review.repo_full_name, "reviewId": review.id }),
        );
        Ok(rows)
    }
}
