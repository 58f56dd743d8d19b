//! The one writer of review, repo and finding rows. Each change the dashboard must hear about
//! is a method here that writes and then publishes its event with the re-read row
//! (docs/review-service.md §6 rules 1 and 2), so no caller can write without publishing. There
//! is one repo-registration path and one findings write-back path (docs/architecture.md,
//! Findings), shared by the webhook, the API, the agent tools and the loopback route.
//!
//! The store handle is private. Everything else reaches the database through [`StoreView`]
//! (`view.rs`): every read, plus the writes to tables the dashboard does not follow as rows
//! (settings, webhook deliveries, skills), which stay with their callers. `tests/architecture.rs`
//! fails when a file other than this one, its submodules included, calls a store method that
//! writes reviews, repos or findings.
//!
//! Beside the writer: `replicas.rs`, the events sent to and received from the other replicas
//! on PostgreSQL, and `repo_cache.rs`, the registered repo rows kept in memory.

mod replicas;
mod repo_cache;
mod view;

pub(crate) use replicas::EVENTS_CHANNEL;
pub(crate) use view::StoreView;

use events::{Event, EventBus, Payload};
use repo_cache::RepoCache;
use review_domain::{EpochMillis, EpochSeconds};
use review_domain::{FindingRow, NewFinding, RepoRow, ReviewRow};
use review_store::{
    ClaimedReview, Completion, HeldLease, NewReview, PromotedReview, Store, StoreError,
};
use std::sync::OnceLock;
use tokio::sync::{broadcast, mpsc};

/// Now, in the milliseconds of leases and the inbox.
pub(crate) fn now_ms() -> EpochMillis {
    EpochMillis::now()
}

/// Now, in the seconds of every `*_at` field.
pub(crate) fn now() -> EpochSeconds {
    EpochSeconds::now()
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
pub(crate) type Transition = Result<Option<ReviewRow>, StoreError>;

/// Store writes of reviews, repos and findings plus their events.
pub struct Records {
    /// Reads, and writes of the tables outside reviews, repos and findings.
    pub store: StoreView,
    db: Store,
    events: EventBus,
    /// Registered repos by full name, so an unchanged registration (most deliveries) costs no
    /// database round trip. Every write to `repos` goes through this type and refreshes it;
    /// another replica's writes arrive as its `repo:*` events ([`Records::receive_remote`]).
    repo_cache: RepoCache,
    /// PostgreSQL: where published events go to be sent to the other replicas.
    fanout: OnceLock<mpsc::UnboundedSender<Event>>,
}

impl Records {
    /// Records over a store and a bus.
    pub fn new(store: Store, events: EventBus) -> Self {
        Self {
            store: StoreView::new(store.clone()),
            db: store,
            events,
            repo_cache: RepoCache::default(),
            fanout: OnceLock::new(),
        }
    }

    fn publish(&self, payload: &Payload<&ReviewRow, &RepoRow>) {
        let event = self.events.publish_payload(payload);
        self.send_to_replicas(event);
    }

    /// A receiver of every event published from now on (GET /api/events).
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Publishes `webhook:received` for a verified delivery (docs/review-service.md §6): no row
    /// changes, so it is the one event published without a write.
    pub fn webhook_received(&self, repo: Option<&str>, name: &str, delivery: Option<&str>) {
        self.publish(&Payload::WebhookReceived {
            repo: repo.map(str::to_owned),
            name: name.to_owned(),
            delivery: delivery.map(str::to_owned),
        });
    }

    fn repo_updated(&self, row: &RepoRow) {
        self.publish(&Payload::RepoUpdated {
            repo: row.full_name.clone(),
            row,
        });
    }

    /// The one registration function (docs/review-service.md §6 rule 2): a new repo is inserted
    /// with enabled 0; an existing one changes only installation_id. repo:updated is published
    /// only when the re-read row changed.
    pub async fn register(
        &self,
        full_name: &str,
        installation_id: i64,
    ) -> Result<RepoRow, StoreError> {
        if let Some(row) = self.repo_cache.get(full_name)
            && row.installation_id == installation_id
        {
            return Ok(row);
        }
        let (row, changed) = self
            .db
            .register_repo(full_name, installation_id, now())
            .await?;
        self.repo_cache.put(&row);
        if changed {
            self.repo_updated(&row);
        }
        Ok(row)
    }

    /// A registered repo (cached).
    pub async fn repo(&self, full_name: &str) -> Result<Option<RepoRow>, StoreError> {
        if let Some(row) = self.repo_cache.get(full_name) {
            return Ok(Some(row));
        }
        let row = self.db.repo(full_name).await?;
        if let Some(row) = &row {
            self.repo_cache.put(row);
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
        monthly_budget: Option<Option<f64>>,
    ) -> Result<Option<RepoRow>, StoreError> {
        let before = self.db.repo(full_name).await?;
        let row = self
            .db
            .update_repo(
                full_name,
                prompt,
                model,
                enabled,
                min_severity,
                monthly_budget,
            )
            .await?;
        if let Some(row) = &row {
            self.repo_cache.put(row);
            if before.as_ref() != Some(row) {
                self.repo_updated(row);
            }
        }
        Ok(row)
    }

    /// DELETE repo; publishes repo:removed when a row was deleted. True when one was.
    pub async fn remove_repo(&self, full_name: &str) -> Result<bool, StoreError> {
        let removed = self.db.delete_repo(full_name).await?;
        self.repo_cache.forget(full_name);
        if removed {
            self.publish(&Payload::RepoRemoved {
                repo: full_name.to_owned(),
            });
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
            self.review_event(true, row);
        }
        Ok(row)
    }

    /// Moves up to `limit` of the oldest webhook inbox rows into pending reviews with their
    /// queue rows (docs/architecture.md, "The webhook inbox"); publishes review:created for
    /// each. Returns them oldest first; empty when the inbox is empty.
    pub async fn promote_accepted(&self, limit: i64) -> Result<Vec<PromotedReview>, StoreError> {
        let promoted = self.db.promote_inbox(limit, now()).await?;
        for p in &promoted {
            self.review_event(true, &p.row);
        }
        Ok(promoted)
    }

    /// Insert a pending review that `owner` runs itself under a lease until `lease_until`
    /// (epoch ms; improver runs); publishes review:created.
    pub async fn create_leased_review(
        &self,
        new: &NewReview,
        owner: &str,
        lease_until: EpochMillis,
    ) -> Result<ReviewRow, StoreError> {
        let row = self
            .db
            .insert_queued_review(new, "{}", Some(owner), Some(lease_until), now())
            .await?;
        self.review_event(true, &row);
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
            self.review_event(true, row);
        }
        Ok(row)
    }

    /// Claims the oldest waiting review for `owner` until `lease_until` (epoch ms).
    pub async fn claim(
        &self,
        owner: &str,
        lease_until: EpochMillis,
    ) -> Result<Option<ClaimedReview>, StoreError> {
        self.db.claim_review(owner, lease_until).await
    }

    /// Renews `owner`'s leases; see [`Store::renew_leases`].
    pub async fn renew(
        &self,
        owner: &str,
        lease_until: EpochMillis,
    ) -> Result<Vec<HeldLease>, StoreError> {
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
            self.review_event(false, row);
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

    /// pending or running -> skipped with why in `error`: the monthly budget is reached
    /// (docs/review-service.md, "Monthly budget") or an answer is over its limits
    /// (docs/review-service.md, "Answers in review threads"); publishes review:updated. None
    /// when terminal.
    pub async fn skip_because(&self, id: i64, error: &str) -> Transition {
        Ok(self.review_updated(self.db.skip_review_because(id, error, now()).await?))
    }

    /// Records that `repo`'s budget notice of `month` (`YYYY-MM`, UTC) goes on PR `pr_number`
    /// (docs/review-service.md, "Monthly budget"): true when this call wrote the record and
    /// its caller posts the comment, false when this or another replica already did. Nothing
    /// the dashboard follows, so nothing is published.
    pub async fn claim_budget_notice(
        &self,
        repo: &str,
        month: &str,
        pr_number: i64,
    ) -> Result<bool, StoreError> {
        self.db
            .insert_budget_notice(repo, month, pr_number, now())
            .await
    }

    /// pending or running -> failed with `error` and, when known, what the run spent
    /// (docs/review-service.md §3); publishes review:updated. None when already terminal,
    /// which is how a stop of a finished review is told apart.
    pub async fn fail(&self, id: i64, error: &str, spent: Option<&Completion>) -> Transition {
        Ok(self.review_updated(self.db.fail_review(id, error, spent, now()).await?))
    }

    fn review_updated(&self, row: Option<ReviewRow>) -> Option<ReviewRow> {
        if let Some(row) = &row {
            self.review_event(false, row);
        }
        row
    }

    /// Publishes review:created (`created`) or review:updated with `row`.
    fn review_event(&self, created: bool, row: &ReviewRow) {
        let repo = row.repo_full_name.clone();
        self.publish(&if created {
            Payload::ReviewCreated { repo, review: row }
        } else {
            Payload::ReviewUpdated { repo, review: row }
        });
    }

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
        self.publish(&Payload::ReviewFindings {
            repo: review.repo_full_name.clone(),
            review_id: review.id,
        });
        Ok(())
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
        self.publish(&Payload::ReviewFindings {
            repo: review.repo_full_name.clone(),
            review_id: review.id,
        });
        Ok(rows)
    }

    /// Moves open finding `id` to `outcome` (resolved at head `sha`, or dismissed) with its
    /// reason, and publishes review:findings for the review that posted it
    /// (docs/review-service.md, "Finding outcomes"). None when it was not open: another replica
    /// or an earlier call moved it first.
    pub async fn record_outcome(
        &self,
        id: i64,
        outcome: review_domain::FindingOutcome,
        sha: Option<&str>,
        reason: &str,
    ) -> Result<Option<FindingRow>, StoreError> {
        let row = self
            .db
            .set_finding_outcome(id, outcome, sha, reason, now())
            .await?;
        if let Some(f) = &row {
            self.publish(&Payload::ReviewFindings {
                repo: f.repo_full_name.clone(),
                review_id: f.review_id,
            });
        }
        Ok(row)
    }

    /// Dismisses open finding `id` with `reason` ([`Records::record_outcome`]). Used by the answers in review threads
    /// (docs/review-service.md, "Answers in review threads").
    pub async fn dismiss_finding(
        &self,
        id: i64,
        reason: &str,
    ) -> Result<Option<FindingRow>, StoreError> {
        self.record_outcome(id, review_domain::FindingOutcome::Dismissed, None, reason)
            .await
    }
}
