//! GET /api/settings/effective: what is in force, and where each value comes from
//! (docs/review-service.md, "Settings in force"). The settings page shows it beside the stored
//! values, and the overview turns its alarms into the triage band's configuration rows.

use crate::config::ApiExposure;
use crate::error::ApiError;
use crate::run_settings::{provider_settings, verification_on};
use crate::state::AppState;
use agent::provider::{KeySlot, PROVIDERS, provider_entry};
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use review_domain::ModelSpec;
use serde::Serialize;
use std::collections::BTreeMap;

/// Routes of this module.
pub(crate) fn router() -> Router<AppState> {
    Router::new().route("/api/settings/effective", get(effective))
}

/// Where a value in force comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Source {
    /// A stored setting (the settings page).
    Setting,
    /// The environment variable named beside it.
    Environment,
    /// The built-in default.
    Default,
    /// Follows another role's model (the verifier without `verify_model`, the improver and
    /// chat without their own).
    Inherited,
    /// A repository's own model.
    Repository,
    /// Switched off (`review_verify=false`).
    Off,
    /// Nothing: a key that is set nowhere.
    Missing,
}

/// One model role and the model it uses.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModelInForce {
    /// `review`, `verify`, `improver`, `chat`, or `review of owner/name` for a repository's own
    /// model.
    pub role: String,
    /// The setting that chooses it (`agent_model`, `verify_model`, ...; `repos.model` for a
    /// repository).
    pub setting: String,
    /// `<provider>/<model>`; null when the role is off.
    pub model: Option<String>,
    pub source: Source,
    /// The provider's key slot, e.g. `agent_api_key`; null when the provider is unknown.
    pub key: Option<String>,
    /// Whether that key is set (stored or in the environment).
    pub has_key: bool,
    /// Whether the model catalog lists the model (a warning, not an error, when not: a new
    /// model may be missing from it).
    pub in_catalog: bool,
    /// Why the model cannot run, when it cannot: not `<provider>/<model>`, an unknown
    /// provider, or no key.
    pub problem: Option<String>,
}

/// One provider key slot.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct KeyInForce {
    /// The setting, e.g. `agent_api_key`.
    pub setting: String,
    /// Its environment fallback, e.g. `AGENT_API_KEY`.
    pub env: String,
    /// The provider it unlocks.
    pub provider: String,
    /// `setting`, `environment` or `missing`.
    pub source: Source,
    /// The roles whose model needs it.
    pub used_by: Vec<String>,
}

/// A configuration problem the overview's triage band shows.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub(crate) struct Alarm {
    /// `model_without_key`, `model_invalid`, `no_webhook_secret`, `no_app_credentials`,
    /// `no_gitlab_webhook_secret` or `open_api`. With GitLab on (GITLAB_URL) and no GitHub
    /// setting given, GitHub is off by choice: its two alarms are not raised
    /// (docs/review-service.md, "GitLab").
    pub code: String,
    /// What is wrong and what to do, in one sentence.
    pub message: String,
}

/// The body of GET /api/settings/effective.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EffectiveSettings {
    /// FORGE_URL without a trailing slash: the base of pull request and finding links.
    pub forge_url: String,
    /// **Added.** GITLAB_URL without a trailing slash, null when GitLab is off: the base of
    /// the links of GitLab projects, whose full names are `<gitlab host>/<namespace>/<project>`
    /// (docs/review-service.md, "GitLab").
    pub gitlab_url: Option<String>,
    /// `gated` (OAuth sign-in), `open_on_loopback` or `open_by_opt_in` (ALLOW_OPEN_API).
    pub api_exposure: String,
    /// Whether FORGE_WEBHOOK_SECRET is set (without it every delivery is refused).
    pub webhook_secret: bool,
    /// Whether the GitHub App's id and private key are set (without them nothing is posted).
    pub app_credentials: bool,
    pub models: Vec<ModelInForce>,
    pub keys: Vec<KeyInForce>,
    pub alarms: Vec<Alarm>,
}

/// GET /api/settings/effective: the model of each role and where it comes from, each key's
/// state, the forge URL, and the alarms (docs/review-service.md, "Settings in force"). Never
/// shows a key's value.
#[utoipa::path(get, path = "/api/settings/effective",
    responses((status = 200, body = EffectiveSettings)))]
pub(crate) async fn effective(
    State(app): State<AppState>,
) -> Result<Json<EffectiveSettings>, ApiError> {
    let stored = app.records.store.settings().await?;
    let repos = app.records.store.repos().await?;
    let (catalog, _) = app.models.get(false).await;
    let bundled = app.models.bundled();
    let in_catalog =
        |spec: &ModelSpec| catalog.model(spec).is_some() || bundled.model(spec).is_some();
    let provider_keys = provider_settings(&app.config, &stored);
    let key_source = |slot: KeySlot| {
        if stored.get(slot.setting()).is_some_and(|v| !v.is_empty()) {
            Source::Setting
        } else if provider_keys.key(slot).is_some() {
            Source::Environment
        } else {
            Source::Missing
        }
    };
    let model_in_force = |role: String, setting: &str, model: Option<String>, source: Source| {
        let mut row = ModelInForce {
            role,
            setting: setting.to_owned(),
            model: model.clone(),
            source,
            key: None,
            has_key: false,
            in_catalog: false,
            problem: None,
        };
        let Some(model) = model else { return row };
        match model.parse::<ModelSpec>() {
            Err(e) => row.problem = Some(e.to_string()),
            Ok(spec) => {
                row.in_catalog = in_catalog(&spec);
                match provider_entry(&spec.provider) {
                    None => row.problem = Some(format!("unknown provider {:?}", spec.provider)),
                    Some(p) => {
                        row.key = Some(p.key.setting().to_owned());
                        row.has_key = key_source(p.key) != Source::Missing;
                        if !row.has_key {
                            row.problem = Some(format!(
                                "no API key: set `{}` here or {} in the environment",
                                p.key.setting(),
                                p.key.env()
                            ));
                        }
                    }
                }
            }
        }
        row
    };

    let review = chosen(&stored, "agent_model", &app.config.agent_model);
    let mut models = vec![model_in_force(
        "review".into(),
        "agent_model",
        Some(review.0.clone()),
        review.1,
    )];
    let verify = if !verification_on(&stored) {
        (None, Source::Off)
    } else {
        match own(&stored, "verify_model") {
            Some(m) => (Some(m), Source::Setting),
            None => (Some(review.0.clone()), Source::Inherited),
        }
    };
    models.push(model_in_force(
        "verify".into(),
        "verify_model",
        verify.0,
        verify.1,
    ));
    let improver = own(&stored, "improver_model")
        .map_or((review.0.clone(), Source::Inherited), |m| {
            (m, Source::Setting)
        });
    models.push(model_in_force(
        "improver".into(),
        "improver_model",
        Some(improver.0),
        improver.1,
    ));
    models.push(model_in_force(
        "chat".into(),
        "agent_model",
        Some(review.0.clone()),
        review.1,
    ));
    for repo in &repos {
        if let Some(m) = repo.model.as_deref().filter(|m| !m.trim().is_empty()) {
            models.push(model_in_force(
                format!("review of {}", repo.full_name),
                "repos.model",
                Some(m.trim().to_owned()),
                Source::Repository,
            ));
        }
    }

    let keys = PROVIDERS
        .iter()
        .map(|p| KeyInForce {
            setting: p.key.setting().to_owned(),
            env: p.key.env().to_owned(),
            provider: p.id.to_owned(),
            source: key_source(p.key),
            used_by: models
                .iter()
                .filter(|m| m.key.as_deref() == Some(p.key.setting()))
                .map(|m| m.role.clone())
                .collect(),
        })
        .collect();

    let gate = app.auth.is_some();
    let exposure = app.config.api_exposure(gate);
    let webhook_secret = app.config.webhook_secret.is_some();
    let app_credentials = app.config.app_id.is_some()
        && (app.config.app_private_key.is_some() || app.config.app_private_key_path.is_some());
    let mut alarms: Vec<Alarm> = models
        .iter()
        .filter_map(|m| {
            let problem = m.problem.as_deref()?;
            let code = if m.key.is_some() {
                "model_without_key"
            } else {
                "model_invalid"
            };
            let model = m.model.as_deref().unwrap_or_default();
            Some(alarm(
                code,
                format!("The {} model {model} cannot run: {problem}.", m.role),
            ))
        })
        .collect();
    // A server for GitLab alone has no GitHub App: GitHub's alarms only where GitHub is meant
    // to work (GitLab off, or one of its settings given).
    let gitlab = app.config.gitlab_url.is_some();
    let github_meant = !gitlab || webhook_secret || app.config.app_id.is_some();
    if gitlab && app.config.gitlab_webhook_secret.is_none() {
        alarms.push(alarm(
            "no_gitlab_webhook_secret",
            "GITLAB_WEBHOOK_SECRET is not set: every GitLab delivery is refused with 401, so no merge request is reviewed.".into(),
        ));
    }
    if github_meant && !webhook_secret {
        alarms.push(alarm(
            "no_webhook_secret",
            "FORGE_WEBHOOK_SECRET is not set: every webhook delivery is refused with 401, so no review starts.".into(),
        ));
    }
    if github_meant && !app_credentials {
        alarms.push(alarm(
            "no_app_credentials",
            "The GitHub App's id and private key (FORGE_APP_ID, FORGE_APP_PRIVATE_KEY) are not set: reviews cannot fetch or post.".into(),
        ));
    }
    if exposure == ApiExposure::OpenByOptIn {
        alarms.push(alarm(
            "open_api",
            "The API is open without sign-in (ALLOW_OPEN_API=true): anyone who reaches this server can read and change it.".into(),
        ));
    }
    Ok(Json(EffectiveSettings {
        forge_url: app.config.forge_url.trim_end_matches('/').to_owned(),
        gitlab_url: (app.config.gitlab_url.as_deref()).map(|u| u.trim_end_matches('/').to_owned()),
        api_exposure: match exposure {
            ApiExposure::Gated => "gated",
            ApiExposure::OpenOnLoopback => "open_on_loopback",
            ApiExposure::OpenByOptIn | ApiExposure::Refused => "open_by_opt_in",
        }
        .to_owned(),
        webhook_secret,
        app_credentials,
        models,
        keys,
        alarms,
    }))
}

fn alarm(code: &str, message: String) -> Alarm {
    Alarm {
        code: code.to_owned(),
        message,
    }
}

/// A stored setting when it is not blank.
fn own(stored: &BTreeMap<String, String>, key: &str) -> Option<String> {
    stored
        .get(key)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// The model of a setting with the environment's fallback: the stored value, else AGENT_MODEL
/// when it is set (in the environment, or as `--agent-model`, which makes it differ from the
/// built-in default), else the default.
fn chosen(stored: &BTreeMap<String, String>, key: &str, env: &str) -> (String, Source) {
    let from_env = std::env::var("AGENT_MODEL").is_ok_and(|v| v.trim() == env);
    if let Some(v) = own(stored, key) {
        (v, Source::Setting)
    } else if from_env || env != crate::config::BUILT_IN_MODEL {
        (env.to_owned(), Source::Environment)
    } else {
        (env.to_owned(), Source::Default)
    }
}
