//! The one state struct of the app (docs/architecture.md, Layout): configuration, store and
//! bus (through [`Records`]), the forge and model providers as trait objects and settings, the
//! git cache, the live-run registry and the concurrency gate. It imports only the plain
//! modules below it, never the work that uses it.

use crate::auth::Auth;
use crate::config::Config;
use crate::guard::HostPolicy;
use crate::models::ModelCatalog;
use crate::records::Records;
use crate::run_settings;
use agent::{CancellationToken, Catalog, ProviderSettings, TranscriptStore};
use forge::Forge;
use git_cache::GitCache;
use review_domain::model_cascade;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
use tokio_util::task::TaskTracker;

/// Shared state handed to every handler.
pub(crate) type AppState = Arc<App>;

/// Why a live run was cancelled: decides its error text and that it is never retried
/// (docs/review-service.md §3, automatic retry rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    /// POST /api/reviews/:id/stop.
    Stopped,
    /// A newer push to the same PR.
    Superseded,
    /// The server is shutting down.
    Shutdown,
    /// Another replica failed the review because this one's lease lapsed (a stall longer
    /// than LEASE_SECS): the run must not post anything more.
    LeaseLost,
}

impl CancelReason {
    /// The error recorded on the failed row.
    pub fn message(self) -> &'static str {
        match self {
            Self::Stopped => "Stopped by user",
            Self::Superseded => "superseded by a newer push",
            Self::Shutdown => "interrupted by shutdown",
            Self::LeaseLost => "interrupted: this replica lost its lease on the review",
        }
    }

    /// The word written to the queue row when another replica is asked to cancel
    /// (docs/architecture.md, "Many replicas").
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stopped => "stopped",
            Self::Superseded => "superseded",
            Self::Shutdown => "shutdown",
            Self::LeaseLost => "lease-lost",
        }
    }

    /// The reason named by [`CancelReason::as_str`]; an unknown word counts as a stop.
    pub fn parse(word: &str) -> Self {
        match word {
            "superseded" => Self::Superseded,
            "shutdown" => Self::Shutdown,
            "lease-lost" => Self::LeaseLost,
            _ => Self::Stopped,
        }
    }
}

/// A run in progress in this process.
pub struct LiveRun {
    pub repo: String,
    pub pr_number: i64,
    pub cancel: CancellationToken,
    pub reason: Arc<Mutex<Option<CancelReason>>>,
}

/// The application.
pub struct App {
    pub config: Config,
    pub records: Records,
    /// Every forge call goes here: [`forge::Forges`] sends it to the repository's forge.
    pub forge: Arc<dyn Forge>,
    /// GitLab itself, when GITLAB_URL is set, for what only GitLab has (a member's access
    /// level, one discussion): the webhook's checks (docs/review-service.md, "GitLab").
    pub gitlab: Option<Arc<forge::gitlab::GitLabForge>>,
    pub git: Arc<GitCache>,
    pub catalog: Catalog,
    /// The public model catalog, cached for GET /api/models (docs/review-service.md §8, catalog cache).
    pub models: ModelCatalog,
    pub transcripts: TranscriptStore,
    /// Secret of the loopback findings route, made at boot (header X-Internal-Secret).
    pub internal_secret: String,
    /// Runs in progress by review id.
    pub live: Mutex<HashMap<i64, LiveRun>>,
    /// MAX_CONCURRENT_REVIEWS permits; tokio's semaphore is fair, so waiting reviews start in order.
    pub run_slots: Arc<Semaphore>,
    /// Review tasks, awaited on graceful shutdown.
    pub tasks: TaskTracker,
    /// Cancelled when the server shuts down: scheduled retries give up waiting.
    pub shutdown: CancellationToken,
    /// This replica's name in the work queue's leases: host, process id and a random part, new
    /// at every start (docs/architecture.md, "Many replicas").
    pub replica: String,
    /// Woken when a review was queued (here, or on another replica through PostgreSQL's
    /// NOTIFY), so an idle slot claims it at once.
    pub queue_wake: tokio::sync::Notify,
    /// Woken when this replica accepted a delivery into the webhook inbox, so the promoter
    /// turns it into a review at once (docs/architecture.md, "The webhook inbox").
    pub inbox_wake: tokio::sync::Notify,
    /// Held (write) while this replica queues GitLab reviews and marks their heads `pending`;
    /// a GitLab run takes it (read) before it posts `running`, so its `pending` always comes
    /// first (docs/review-service.md, "GitLab").
    pub queue_marks: tokio::sync::RwLock<()>,
    /// The OAuth gate; `None` when OAuth is not configured and the API is open (docs/review-service.md §5).
    pub auth: Option<Arc<Auth>>,
    /// CHAT_MAX_CONCURRENT permits, one per running chat turn.
    pub chat_turns: Arc<Semaphore>,
    /// The Host allow-list of the request guard (AUTH_URL and ALLOWED_HOSTS).
    pub hosts: HostPolicy,
}

impl App {
    /// `$DATA_DIR/worktrees`: every review's checkout lives here and is removed after the run.
    pub fn worktrees_dir(&self) -> PathBuf {
        self.config.data_dir.join("worktrees")
    }

    /// Cancel the live run of `review_id` for `reason`; true when one was running here.
    pub fn cancel_run(&self, review_id: i64, reason: CancelReason) -> bool {
        let live = match self.live.lock() {
            Ok(l) => l,
            Err(p) => p.into_inner(),
        };
        match live.get(&review_id) {
            Some(run) => {
                if let Ok(mut r) = run.reason.lock() {
                    r.get_or_insert(reason);
                }
                run.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// The reviews running in this process, by id.
    pub fn live_ids(&self) -> Vec<i64> {
        match self.live.lock() {
            Ok(l) => l.keys().copied().collect(),
            Err(p) => p.into_inner().keys().copied().collect(),
        }
    }

    /// The model of work that belongs to no repo and no purpose (GET /api/settings/test, POST
    /// /api/chat): the cascade of docs/review-service.md §4 rule 4 without its first two
    /// levels, so the `agent_model` setting, else AGENT_MODEL. Not parsed: callers report a bad
    /// spec their way.
    pub async fn global_model(&self) -> anyhow::Result<String> {
        let agent_model = self.records.store.setting("agent_model").await?;
        Ok(model_cascade(
            None,
            None,
            agent_model.as_deref(),
            &self.config.agent_model,
        ))
    }

    /// Provider endpoints and keys for a run, from the stored settings over the environment
    /// ([`run_settings::provider_settings`]).
    pub async fn provider_settings(&self) -> anyhow::Result<ProviderSettings> {
        let stored = self.records.store.settings().await?;
        Ok(run_settings::provider_settings(&self.config, &stored))
    }
}
