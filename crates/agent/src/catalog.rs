//! The model catalog in models.dev's `api.json` format: `{providerId: {id, name, env[], npm,
//! api?, doc, models: {modelId: {id, name, reasoning, tool_call, cost?{input, output,
//! cache_read?, cache_write?}, limit{context, output}}}}}` (docs/background.md, "Wire formats"). Costs are USD per million
//! tokens and may be absent. Parsing is lenient: unknown fields are ignored, and a provider or
//! model entry that does not parse is skipped rather than failing the whole catalog.
//!
//! A bundled snapshot (`models-snapshot.json`) holds the three providers we speak; the app may
//! later load the public catalog with [`Catalog::from_json`] and fall back to the snapshot.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::AgentError;
use crate::provider::Usage;
use review_domain::ModelSpec;

/// Prices in USD per million tokens; any may be absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cost {
    /// Uncached input.
    pub input: Option<f64>,
    /// Output.
    pub output: Option<f64>,
    /// Input read from the prompt cache (falls back to `input` when absent).
    pub cache_read: Option<f64>,
    /// Input written to the prompt cache (falls back to `input` when absent).
    pub cache_write: Option<f64>,
}

impl Cost {
    /// USD for these token counts: sum(tokens x price) / 1e6. Missing input or output prices
    /// count as 0; missing cache prices fall back to the input price.
    pub fn of(&self, usage: &Usage) -> f64 {
        let input = self.input.unwrap_or(0.0);
        let output = self.output.unwrap_or(0.0);
        let read = self.cache_read.unwrap_or(input);
        let write = self.cache_write.unwrap_or(input);
        (usage.input_tokens as f64 * input
            + usage.output_tokens as f64 * output
            + usage.cache_read_tokens as f64 * read
            + usage.cache_write_tokens as f64 * write)
            / 1e6
    }
}

/// Token limits of a model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limit {
    /// Context window, tokens.
    pub context: Option<u64>,
    /// Maximum output, tokens.
    pub output: Option<u64>,
}

/// One model of the catalog.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CatalogModel {
    /// Model id within its provider (the part after `provider/` in a spec).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Whether the model reasons.
    pub reasoning: bool,
    /// Whether the model can call tools.
    pub tool_call: bool,
    /// Prices, when known.
    pub cost: Option<Cost>,
    /// Limits, when known.
    pub limit: Option<Limit>,
    /// Every other field of the entry (family, release_date, modalities, ...), kept as given.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// One provider of the catalog.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CatalogProvider {
    /// Provider id (`anthropic`, `openai`, `zai-coding-plan`, ...).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Environment variables the vendor's SDK reads.
    pub env: Vec<String>,
    /// npm package of the vendor's SDK.
    pub npm: Option<String>,
    /// API base URL, when the catalog gives one.
    pub api: Option<String>,
    /// Documentation URL.
    pub doc: Option<String>,
    /// Models by id.
    pub models: BTreeMap<String, CatalogModel>,
}

/// A parsed catalog: providers by id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    providers: BTreeMap<String, CatalogProvider>,
}

const SNAPSHOT: &str = include_str!("../models-snapshot.json");

impl Catalog {
    /// The bundled snapshot of the three providers we speak.
    pub fn bundled() -> Catalog {
        // The snapshot is checked by a unit test; a broken one would only lose prices.
        Catalog::from_json(SNAPSHOT).unwrap_or_default()
    }

    /// Parses a models.dev `api.json` document leniently. Errors only when the document is not
    /// a JSON object.
    pub fn from_json(json: &str) -> Result<Catalog, AgentError> {
        let root: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(json).map_err(AgentError::Catalog)?;
        let mut providers = BTreeMap::new();
        for (pid, pval) in root {
            let Some(pobj) = pval.as_object() else {
                continue;
            };
            let mut provider = CatalogProvider {
                id: pid.clone(),
                ..Default::default()
            };
            let text = |k: &str| pobj.get(k).and_then(|v| v.as_str()).map(str::to_owned);
            provider.name = text("name").unwrap_or_else(|| pid.clone());
            provider.npm = text("npm");
            provider.api = text("api");
            provider.doc = text("doc");
            provider.env = pobj
                .get("env")
                .and_then(|v| v.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|e| e.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(models) = pobj.get("models").and_then(|m| m.as_object()) {
                for (mid, mval) in models {
                    let Ok(mut model) = serde_json::from_value::<CatalogModel>(mval.clone()) else {
                        continue;
                    };
                    if model.id.is_empty() {
                        model.id = mid.clone();
                    }
                    if model.name.is_empty() {
                        model.name = mid.clone();
                    }
                    provider.models.insert(mid.clone(), model);
                }
            }
            providers.insert(pid, provider);
        }
        Ok(Catalog { providers })
    }

    /// All providers, ordered by id.
    pub fn providers(&self) -> impl Iterator<Item = &CatalogProvider> {
        self.providers.values()
    }

    /// One provider by id.
    pub fn provider(&self, id: &str) -> Option<&CatalogProvider> {
        self.providers.get(id)
    }

    /// Every model as `(provider, model)`, ordered by provider id then model id.
    pub fn models(&self) -> impl Iterator<Item = (&CatalogProvider, &CatalogModel)> {
        self.providers
            .values()
            .flat_map(|p| p.models.values().map(move |m| (p, m)))
    }

    /// The model a spec names.
    pub fn model(&self, spec: &ModelSpec) -> Option<&CatalogModel> {
        self.providers.get(&spec.provider)?.models.get(&spec.model)
    }

    /// The prices of the model a spec names, when the catalog has them.
    pub fn price(&self, spec: &ModelSpec) -> Option<Cost> {
        self.model(spec)?.cost
    }

    /// USD for these tokens on this model; 0.0 when the catalog has no price.
    pub fn cost(&self, spec: &ModelSpec, usage: &Usage) -> f64 {
        self.price(spec).map(|c| c.of(usage)).unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> ModelSpec {
        s.parse().unwrap()
    }

    #[test]
    fn bundled_snapshot_has_the_three_providers_with_prices() {
        let c = Catalog::bundled();
        for p in ["anthropic", "openai", "zai-coding-plan"] {
            let provider = c.provider(p).unwrap_or_else(|| panic!("{p} missing"));
            assert!(!provider.models.is_empty(), "{p}");
            assert!(provider.models.values().all(|m| m.tool_call), "{p}");
        }
        let price = c.price(&spec("anthropic/claude-sonnet-4-5")).unwrap();
        assert_eq!(price.input, Some(3.0));
        assert_eq!(price.cache_write, Some(3.75));
    }

    #[test]
    fn cost_is_tokens_times_price_per_million() {
        let c = Catalog::bundled();
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 1_000_000,
        };
        // 3.00 + 1.50 + 0.60 + 3.75
        let cost = c.cost(&spec("anthropic/claude-sonnet-4-5"), &usage);
        assert!((cost - 8.85).abs() < 1e-9, "{cost}");
        assert_eq!(c.cost(&spec("anthropic/unknown"), &usage), 0.0);
    }

    #[test]
    fn lenient_parse_skips_broken_entries_and_absent_costs() {
        let json = r#"{
            "p": {"id": "p", "name": "P", "models": {
                "ok": {"id": "ok", "name": "Ok", "tool_call": true, "limit": {"context": 10, "output": 5}, "extra": [1]},
                "free": {"id": "free", "name": "Free"},
                "bad": {"id": 7},
                "partial": {"id": "partial", "cost": {"input": 1}}
            }},
            "junk": 3
        }"#;
        let c = Catalog::from_json(json).unwrap();
        let p = c.provider("p").unwrap();
        assert_eq!(p.models.len(), 3);
        assert_eq!(c.price(&spec("p/free")), None);
        assert_eq!(c.price(&spec("p/partial")).unwrap().output, None);
        assert!(Catalog::from_json("[]").is_err());
        let ok = &p.models["ok"];
        assert_eq!(ok.extra.get("extra"), Some(&serde_json::json!([1])));
        let specs: Vec<String> = c
            .models()
            .map(|(p, m)| format!("{}/{}", p.id, m.id))
            .collect();
        assert_eq!(specs, vec!["p/free", "p/ok", "p/partial"]);
    }
}
