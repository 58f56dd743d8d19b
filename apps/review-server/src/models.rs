//! The model search of docs/review-service.md §4 (Models) and its catalog cache
//! (§8): the public catalog at MODELS_CATALOG_URL (models.dev `api.json` format) is kept
//! in process for 30 minutes; `refresh=1` rebuilds it; when the catalog is unreachable or
//! unreadable the snapshot bundled with `crates/agent` answers instead (and the fetch is
//! retried after a minute rather than on every request).
//!
//! Configured providers (§4), with the key slots of docs/configuration.md:
//! - a key slot that has a key (stored setting, else the environment) configures every provider
//!   the registry table of `crates/agent` maps to that slot: `agent_api_key` -> `anthropic`,
//!   `second_api_key` -> `zai-coding-plan` (the coding-plan provider), `third_api_key` ->
//!   `openai`, whose models always come from the bundled snapshot (ids `openai/<key>`);
//! - the providers named by the review default (the cascade: agent_model, else AGENT_MODEL),
//!   by improver_model and by any repo's model override are configured even without a key.
//!
//! The agent vendor's second provider: the spec (written against a gateway vendor with two
//! catalog providers behind one key) has the agent key configure two providers. The models.dev
//! providers of the Anthropic family besides `anthropic` (`google-vertex-anthropic`,
//! `amazon-bedrock`) take cloud credentials, not an Anthropic key, and our agent cannot call
//! them, so listing them as configured would offer models that fail at review time. The agent
//! key therefore configures exactly the registry's agent-slot providers (today `anthropic`);
//! a second Anthropic-compatible provider added to the registry appears here with no change.

use agent::provider::{KeySlot, PROVIDERS};
use agent::{Catalog, CatalogModel, CatalogProvider, ProviderSettings};
use review_domain::{ModelSpec, RepoRow, model_cascade};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a fetched catalog is served before it is fetched again (docs/review-service.md §8).
pub(crate) const CATALOG_TTL: Duration = Duration::from_secs(30 * 60);

/// How long the bundled fallback is served before the public catalog is tried again.
pub(crate) const FALLBACK_TTL: Duration = Duration::from_secs(60);

/// Most models in one answer (docs/review-service.md §8).
pub(crate) const MAX_MODELS: usize = 100;

/// Time allowed for the catalog download.
const FETCH_TIMEOUT: Duration = Duration::from_secs(15);

/// Where the served catalog came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogSource {
    /// MODELS_CATALOG_URL.
    Public,
    /// The snapshot bundled with `crates/agent`, because the public catalog failed.
    Bundled,
}

struct Cached {
    catalog: Arc<Catalog>,
    source: CatalogSource,
    fetched: Instant,
}

/// The in-process catalog cache held by the app state (docs/review-service.md §8, catalog cache). Concurrent
/// requests during a fetch wait for that one fetch.
pub struct ModelCatalog {
    url: String,
    http: reqwest::Client,
    bundled: Arc<Catalog>,
    cached: tokio::sync::Mutex<Option<Cached>>,
}

impl ModelCatalog {
    /// A cache of the catalog at `url` (MODELS_CATALOG_URL); nothing is fetched until asked.
    pub fn new(url: &str) -> Self {
        let http = reqwest::Client::builder()
            .user_agent(concat!("review-server/", env!("CARGO_PKG_VERSION")))
            .timeout(FETCH_TIMEOUT)
            .build()
            .unwrap_or_default();
        Self {
            url: url.to_owned(),
            http,
            bundled: Arc::new(Catalog::bundled()),
            cached: tokio::sync::Mutex::new(None),
        }
    }

    /// The catalog: the cached one while fresh, else fetched again (always when `refresh`);
    /// the bundled snapshot when the fetch fails.
    pub async fn get(&self, refresh: bool) -> (Arc<Catalog>, CatalogSource) {
        let mut cached = self.cached.lock().await;
        if !refresh && let Some(c) = cached.as_ref() {
            let ttl = match c.source {
                CatalogSource::Public => CATALOG_TTL,
                CatalogSource::Bundled => FALLBACK_TTL,
            };
            if c.fetched.elapsed() < ttl {
                return (c.catalog.clone(), c.source);
            }
        }
        let (catalog, source) = match self.fetch().await {
            Ok(c) => (Arc::new(c), CatalogSource::Public),
            Err(e) => {
                tracing::warn!(url = %self.url, error = %e, "model catalog unreachable; using the bundled snapshot");
                (self.bundled.clone(), CatalogSource::Bundled)
            }
        };
        *cached = Some(Cached {
            catalog: catalog.clone(),
            source,
            fetched: Instant::now(),
        });
        (catalog, source)
    }

    /// The snapshot bundled with `crates/agent`.
    pub fn bundled(&self) -> &Catalog {
        &self.bundled
    }

    async fn fetch(&self) -> anyhow::Result<Catalog> {
        let resp = self.http.get(&self.url).send().await?.error_for_status()?;
        let text = resp.text().await?;
        let catalog = Catalog::from_json(&text)?;
        anyhow::ensure!(
            catalog.providers().next().is_some(),
            "the catalog lists no providers"
        );
        Ok(catalog)
    }
}

/// Query of GET /api/models (docs/review-service.md §4, Models).
#[derive(Debug, Default, Clone, serde::Deserialize, utoipa::IntoParams)]
pub(crate) struct ModelQuery {
    /// Case-insensitive substring of `<provider>/<model>`.
    pub q: Option<String>,
    /// `1`: search the whole catalog, not only configured providers.
    pub all: Option<String>,
    /// `1`: rebuild the cached catalog first.
    pub refresh: Option<String>,
}

/// One model of the answer.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModelEntry {
    /// `<provider>/<model>`, usable as a model setting.
    pub id: String,
    pub provider: String,
    pub provider_name: String,
    pub model: String,
    pub model_name: String,
    /// Whether the provider is configured.
    pub configured: bool,
}

/// The body of GET /api/models (docs/review-service.md §4, Models).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub(crate) struct ModelList {
    /// Models matching the query before the cap of 100.
    pub total: usize,
    /// The configured providers, sorted.
    pub providers: Vec<String>,
    /// At most 100 models, ordered by provider then model id.
    pub models: Vec<ModelEntry>,
}

/// The configured providers of docs/review-service.md §4 (see the module docs for the rules),
/// from the run's provider keys, the stored settings, the registered repos and AGENT_MODEL
/// (`built_in`). Model specs that do not parse name no provider.
pub(crate) fn configured_providers(
    keys: &ProviderSettings,
    settings: &BTreeMap<String, String>,
    repos: &[RepoRow],
    built_in: &str,
) -> BTreeSet<String> {
    let mut set: BTreeSet<String> = PROVIDERS
        .iter()
        .filter(|p| keys.key(p.key).is_some())
        .map(|p| p.id.to_owned())
        .collect();
    let review_default = model_cascade(
        None,
        None,
        settings.get("agent_model").map(String::as_str),
        built_in,
    );
    let named = std::iter::once(review_default)
        .chain(settings.get("improver_model").cloned())
        .chain(repos.iter().filter_map(|r| r.model.clone()));
    for spec in named {
        if let Ok(spec) = spec.parse::<ModelSpec>() {
            set.insert(spec.provider);
        }
    }
    set
}

/// The provider whose models come from the bundled snapshot rather than the public catalog
/// (docs/review-service.md §4: the third provider's list is bundled with its plugin).
fn bundled_provider_id() -> Option<&'static str> {
    PROVIDERS
        .iter()
        .find(|p| p.key == KeySlot::Third)
        .map(|p| p.id)
}

/// Search `catalog` (docs/review-service.md §4, Models): without `all`, only the configured providers'
/// models (the third provider's from `bundled`); `q` filters on `<provider>/<model>`
/// case-insensitively; at most 100 models, `total` counts every match.
pub(crate) fn search(
    catalog: &Catalog,
    bundled: &Catalog,
    configured: &BTreeSet<String>,
    q: Option<&str>,
    all: bool,
) -> ModelList {
    let needle = q.map(|q| q.trim().to_lowercase()).filter(|q| !q.is_empty());
    let bundled_id = bundled_provider_id();
    let entry = |p: &CatalogProvider, m: &CatalogModel| ModelEntry {
        id: format!("{}/{}", p.id, m.id),
        provider: p.id.clone(),
        provider_name: p.name.clone(),
        model: m.id.clone(),
        model_name: m.name.clone(),
        configured: configured.contains(&p.id),
    };
    let providers: Vec<&CatalogProvider> = if all {
        catalog.providers().collect()
    } else {
        configured
            .iter()
            .filter_map(|id| {
                if Some(id.as_str()) == bundled_id {
                    bundled.provider(id).or_else(|| catalog.provider(id))
                } else {
                    catalog.provider(id)
                }
            })
            .collect()
    };
    let matches = providers
        .into_iter()
        .flat_map(|p| p.models.values().map(move |m| entry(p, m)))
        .filter(|e| {
            needle
                .as_deref()
                .is_none_or(|n| e.id.to_lowercase().contains(n))
        });
    let mut total = 0;
    let mut models = Vec::new();
    for e in matches {
        total += 1;
        if models.len() < MAX_MODELS {
            models.push(e);
        }
    }
    ModelList {
        total,
        providers: configured.iter().cloned().collect(),
        models,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(providers: &[(&str, usize)]) -> Catalog {
        let mut root = serde_json::Map::new();
        for (p, n) in providers {
            let models: serde_json::Map<String, serde_json::Value> = (0..*n)
                .map(|i| {
                    let id = format!("m{i:03}");
                    (
                        id.clone(),
                        serde_json::json!({"id": id, "name": format!("M {i}")}),
                    )
                })
                .collect();
            root.insert(
                (*p).to_owned(),
                serde_json::json!({"id": p, "name": p.to_uppercase(), "models": models}),
            );
        }
        Catalog::from_json(&serde_json::Value::Object(root).to_string()).unwrap()
    }

    fn set(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn third_provider_models_come_from_the_bundled_snapshot() {
        let live = catalog(&[("openai", 3), ("anthropic", 2)]);
        let bundled = Catalog::bundled();
        let list = search(&live, &bundled, &set(&["openai"]), None, false);
        let n = bundled.provider("openai").unwrap().models.len();
        assert_eq!(list.total, n);
        assert!(list.models.iter().all(|m| m.id.starts_with("openai/gpt")));
    }

    #[test]
    fn query_is_case_insensitive_on_the_spec_and_capped() {
        let live = catalog(&[("big", 250), ("other", 5)]);
        let list = search(&live, &live, &set(&[]), Some("BIG/M1"), true);
        assert_eq!(list.total, 100);
        assert_eq!(list.models.len(), 100);
        assert!(list.models.iter().all(|m| !m.configured));
        let list = search(&live, &live, &set(&["big"]), None, true);
        assert_eq!((list.total, list.models.len()), (255, 100));
    }
}
