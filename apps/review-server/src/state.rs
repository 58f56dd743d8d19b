//! The one state struct of the app (STYLE.md rule 3): configuration, store and bus (through
//! [`Records`]), the forge and model providers as trait objects and settings, the git cache,
//! the live-run registry and the concurrency gate.

use crate::config::Config;
use crate::records::Records;
use agent::{Budget, CancellationToken, Catalog, ProviderSettings, TranscriptStore};
use forge::Forge;
use git_cache::GitCache;
use secrecy::SecretString;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
use tokio_util::task::TaskTracker;

/// Shared state handed to every handler.
pub type AppState = Arc<App>;

/// Why a live run was cancelled: decides its error text and that it is never retried
/// (spec/review-service.md section 3, automatic retry rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    /// POST /api/reviews/:id/stop.
    Stopped,
    /// A newer push to the same PR.
    Superseded,
    /// The server is shutting down.
    Shutdown,
}

impl CancelReason {
    /// The error recorded on the failed row.
    pub fn message(self) -> &'static str {
        match self {
            Self::Stopped => "Stopped by user",
            Self::Superseded => "superseded by a newer push",
            Self::Shutdown => "interrupted by shutdown",
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
    pub forge: Arc<dyn Forge>,
    pub git: Arc<GitCache>,
    pub catalog: Catalog,
    /// The public model catalog, cached for GET /api/models (spec section 8, catalog cache).
    pub models: crate::models::ModelCatalog,
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
    /// Genuine failures waiting for their automatic retry (see `pipeline::spawn_retry_worker`).
    pub retries: tokio::sync::mpsc::UnboundedSender<crate::pipeline::RetryRequest>,
    /// The OAuth gate; `None` when OAuth is not configured and the API is open (spec section 5).
    pub auth: Option<Arc<crate::auth::Auth>>,
    /// CHAT_MAX_CONCURRENT permits, one per running chat turn.
    pub chat_turns: Arc<Semaphore>,
    /// The Host allow-list of the request guard (AUTH_URL and ALLOWED_HOSTS).
    pub hosts: crate::guard::HostPolicy,
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

    /// Cancel every live run of a PR except `keep` (a newer push supersedes them).
    pub fn supersede(&self, repo: &str, pr_number: i64, keep: i64) {
        let ids: Vec<i64> = match self.live.lock() {
            Ok(live) => live
                .iter()
                .filter(|(id, r)| **id != keep && r.repo == repo && r.pr_number == pr_number)
                .map(|(id, _)| *id)
                .collect(),
            Err(_) => Vec::new(),
        };
        for id in ids {
            tracing::info!(
                review_id = id,
                repo,
                pr_number,
                "superseded by a newer push"
            );
            self.cancel_run(id, CancelReason::Superseded);
        }
    }

    /// The model of work that belongs to no repo and no purpose (GET /api/settings/test, POST
    /// /api/chat): the cascade of spec section 4 rule 4 without its first two levels, so the
    /// `agent_model` setting, else AGENT_MODEL. Not parsed: callers report a bad spec their way.
    pub async fn global_model(&self) -> anyhow::Result<String> {
        let agent_model = self.records.store.setting("agent_model").await?;
        Ok(model_cascade(
            None,
            None,
            agent_model.as_deref(),
            &self.config.agent_model,
        ))
    }

    /// The budget of a review (docs/security.md, "Review budget"): the review_max_tokens and
    /// review_max_cost settings (in `settings`, the stored settings) win over REVIEW_MAX_TOKENS
    /// and REVIEW_MAX_COST; a stored value that does not parse is ignored with a warning.
    pub fn review_budget(&self, settings: &BTreeMap<String, String>) -> Budget {
        fn stored<T: std::str::FromStr>(
            settings: &BTreeMap<String, String>,
            key: &str,
        ) -> Option<T> {
            let text = settings.get(key)?.trim();
            let parsed = text.parse().ok();
            if parsed.is_none() {
                tracing::warn!(
                    key,
                    value = text,
                    "ignoring a budget setting that is not a number"
                );
            }
            parsed
        }
        let (max_tokens, tokens_source) = match stored::<i64>(settings, "review_max_tokens") {
            Some(n) => (Some(n), "review_max_tokens setting"),
            None => (self.config.review_max_tokens, "REVIEW_MAX_TOKENS"),
        };
        let (max_cost, cost_source) = match stored::<f64>(settings, "review_max_cost") {
            Some(c) => (Some(c), "review_max_cost setting"),
            None => (self.config.review_max_cost, "REVIEW_MAX_COST"),
        };
        Budget {
            max_tokens,
            max_cost,
            tokens_source: tokens_source.to_owned(),
            cost_source: cost_source.to_owned(),
        }
    }

    /// Provider endpoints and keys for a run: stored settings win, the environment is the
    /// fallback (spec section 4, Settings rule 2).
    pub async fn provider_settings(&self) -> anyhow::Result<ProviderSettings> {
        let stored = self.records.store.settings().await?;
        let key = |name: &str, env: &Option<SecretString>| {
            stored
                .get(name)
                .filter(|v| !v.is_empty())
                .map(|v| SecretString::from(v.clone()))
                .or_else(|| env.clone())
        };
        Ok(ProviderSettings {
            anthropic_base_url: self.config.anthropic_base_url.clone(),
            openai_base_url: self.config.openai_base_url.clone(),
            zai_base_url: self.config.zai_base_url.clone(),
            agent_api_key: key("agent_api_key", &self.config.agent_api_key),
            second_api_key: key("second_api_key", &self.config.second_api_key),
            third_api_key: key("third_api_key", &self.config.third_api_key),
            stream: self.config.agent_stream,
        })
    }
}

/// The model cascade of spec section 4 (Settings rule 4), one function used everywhere:
/// the repo's own override, then the purpose's global setting (refine_model or
/// implement_model for those agents; none for reviews), then the global review default
/// (agent_model), then the built-in default.
pub fn model_cascade(
    repo_model: Option<&str>,
    purpose_setting: Option<&str>,
    agent_model: Option<&str>,
    built_in: &str,
) -> String {
    [repo_model, purpose_setting, agent_model]
        .into_iter()
        .flatten()
        .map(str::trim)
        .find(|m| !m.is_empty())
        .unwrap_or(built_in)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_cascade_most_specific_first() {
        assert_eq!(
            model_cascade(Some("a/r"), Some("a/p"), Some("a/g"), "a/d"),
            "a/r"
        );
        assert_eq!(model_cascade(None, Some("a/p"), Some("a/g"), "a/d"), "a/p");
        assert_eq!(model_cascade(Some(""), None, Some("a/g"), "a/d"), "a/g");
        assert_eq!(model_cascade(None, None, None, "a/d"), "a/d");
    }
}
