//! [`StoreView`]: the store as every module but the writer sees it. It forwards no method that
//! writes review, repo or finding rows: one here would let a caller write without publishing
//! (`tests/architecture.rs` would then fail on this file).

use review_domain::{EpochMillis, EpochSeconds};
use review_domain::{FindingRow, RepoRow, ReviewRow, StatsFilter};
use review_store::{
    Charts, NewReview, NewSkill, OutcomeStats, ReadQueryResult, Stats, Store, StoreError,
};
use std::collections::BTreeMap;

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
    /// The view of `store`; only [`Records`](super::Records) makes one, next to its writer.
    pub(super) fn new(store: Store) -> Self {
        Self(store)
    }

    /// The database's dialect.
    pub fn backend(&self) -> review_store::Backend {
        self.0.backend()
    }

    forward! {
        /// The month-to-date spend of a repo, or of every repo, per
        /// docs/review-service.md, "Monthly budget".
        fn spend_since(&self, repo: Option<&str>, since: EpochSeconds) -> f64;
        /// The spend of each repo since a time.
        fn spend_by_repo_since(&self, since: EpochSeconds) -> Vec<(String, f64)>;
        /// A review by id.
        fn review(&self, id: i64) -> Option<ReviewRow>;
        /// A repo by full name (uncached; [`Records::repo`](super::Records::repo) caches).
        fn repo(&self, full_name: &str) -> Option<RepoRow>;
        /// Every registered repo.
        fn repos(&self) -> Vec<RepoRow>;
        /// The newest reviews of a repo, or of one of its PRs.
        fn reviews_for(&self, repo: &str, pr_number: Option<i64>, limit: i64) -> Vec<ReviewRow>;
        /// The reviews of the review list under a filter.
        fn list_reviews(&self, f: &StatsFilter, status: Option<&str>, before: Option<i64>, limit: i64) -> Vec<ReviewRow>;
        /// How many reviews the review list pages through under a filter.
        fn count_reviews(&self, f: &StatsFilter, status: Option<&str>) -> i64;
        /// The findings of one review, by id.
        fn findings_for_review(&self, review_id: i64) -> Vec<FindingRow>;
        /// The findings of every review of a PR, by id.
        fn findings_for_pr(&self, repo: &str, pr_number: i64) -> Vec<FindingRow>;
        /// The candidates verification dropped from one review, by id.
        fn dropped_findings(&self, review_id: i64) -> Vec<review_domain::DroppedFindingRow>;
        /// The patch id of the PR's last completed review.
        fn last_completed_patch_id(&self, repo: &str, pr_number: i64) -> Option<String>;
        /// The fingerprints and bodies of the PR's posted inline findings.
        fn posted_fingerprints(&self, repo: &str, pr_number: i64) -> Vec<(String, String)>;
        /// The PR's open inline findings with the head SHA each was posted for.
        fn open_findings(&self, repo: &str, pr_number: i64) -> Vec<(FindingRow, Option<String>)>;
        /// The PR's dismissed inline findings with the head SHA each was posted for.
        fn dismissed_findings(&self, repo: &str, pr_number: i64) -> Vec<(FindingRow, Option<String>)>;
        /// The head SHA of the PR's last completed review.
        fn last_reviewed_head(&self, repo: &str, pr_number: i64) -> Option<String>;
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
        /// The outcome table of posted findings.
        fn outcome_stats(&self, f: &StatsFilter) -> OutcomeStats;
        /// Per-repository numbers and the files with most findings.
        fn repo_scores(&self, f: &StatsFilter) -> review_store::RepoScores;
        /// The chat's read-only SQL.
        fn read_query(&self, sql: &str) -> ReadQueryResult;
        /// Every stored setting.
        fn settings(&self) -> BTreeMap<String, String>;
        /// One stored setting.
        fn setting(&self, key: &str) -> Option<String>;
        /// Writes or (None) deletes a setting.
        fn put_setting(&self, key: &str, value: Option<&str>) -> ();
        /// Claims a webhook delivery id; false for a redelivery.
        fn claim_delivery(&self, id: &str, now: EpochSeconds) -> bool;
        /// Forgets delivery ids older than the window.
        fn prune_deliveries(&self, now: EpochSeconds) -> u64;
        /// Releases the claim of a delivery whose handling failed.
        fn release_delivery(&self, id: &str) -> ();
        /// Claims a delivery id and writes its review to the webhook inbox in one round trip;
        /// false for a redelivery.
        fn accept_delivery(&self, delivery: Option<&str>, new: &NewReview, job: &str, now_ms: EpochMillis) -> bool;
        /// How many accepted deliveries wait in the webhook inbox.
        fn inbox_len(&self) -> i64;
        /// SQLite: checkpoints the write-ahead log; (frames in the log, checkpointed).
        fn checkpoint(&self) -> (i64, i64);
        /// SQLite: folds the whole write-ahead log into the database file and empties it.
        fn checkpoint_at_shutdown(&self) -> bool;
        /// The PR's pending or running reviews other than `except`, by id.
        fn active_reviews_of_pr(&self, repo: &str, pr_number: i64, except: i64) -> Vec<i64>;
        /// Schedules an automatic retry.
        fn schedule_retry(&self, review_id: i64, job: &str, not_before: EpochMillis) -> ();
        /// Claims a due automatic retry.
        fn claim_due_retry(&self, owner: &str, lease_until: EpochMillis, now_ms: EpochMillis) -> Option<review_store::ClaimedRetry>;
        /// Drops a retry this replica holds.
        fn drop_retry(&self, id: i64, owner: &str) -> bool;
        /// How many automatic retries wait.
        fn waiting_retries(&self) -> i64;
        /// Stores a transcript document.
        fn save_transcript(&self, session_id: &str, doc: &str, now: EpochSeconds) -> ();
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
        fn upsert_skill(&self, skill: &NewSkill, now: EpochSeconds) -> review_domain::SkillMetaRow;
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
