//! Settings under /api (docs/review-service.md §4, Settings): the flat key-value object,
//! its PUT rules 1-4, and the one-prompt connection test.
//!
//! Decisions where the spec is open: only the eight keys the dashboard writes are accepted (an
//! unknown key or a value that is not a string is 422 naming the field, and nothing is written);
//! a value that is empty after trimming counts as empty (rule 2: the row is deleted so the
//! fallback applies; rule 3: a no-op for `default_prompt`); the four model fields must read as
//! `<provider>/<model>` so a typo cannot break every later review; the two budget keys must be
//! a positive integer (`review_max_tokens`) and a positive finite number (`review_max_cost`);
//! `review_min_severity` one of the three severities; `review_quiet` and `review_verify` `true`
//! or `false`; `review_passes` 1 to 5; `thread_max_answers` and `pr_max_answers` a whole
//! number (0: no answers); `monthly_budget` a positive finite number.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::routing::get;
use axum::{Json, Router};
use review_domain::{ModelSpec, Severity};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The keys the dashboard writes (docs/review-service.md §2, Settings), and the two keys of the
/// review budget (docs/security.md, "Review budget"), which override REVIEW_MAX_TOKENS and
/// REVIEW_MAX_COST, and the monthly budget (docs/review-service.md, "Monthly budget"), which
/// overrides MONTHLY_BUDGET.
pub(crate) const SETTING_KEYS: [&str; 18] = [
    "agent_api_key",
    "second_api_key",
    "third_api_key",
    "agent_model",
    "refine_model",
    "implement_model",
    "default_prompt",
    "improver_model",
    "review_max_tokens",
    "review_max_cost",
    "review_min_severity",
    "review_quiet",
    "review_verify",
    "verify_model",
    "review_passes",
    "thread_max_answers",
    "pr_max_answers",
    "monthly_budget",
];

/// Keys whose value is a model spec `<provider>/<model>`.
const MODEL_KEYS: [&str; 5] = [
    "agent_model",
    "refine_model",
    "implement_model",
    "improver_model",
    "verify_model",
];

/// The prompt of GET /api/settings/test: small, so the test costs about one request.
const TEST_PROMPT: &str = "This is a connection test. Reply with the single word: pong";

/// Longest reply text returned by the test (docs/review-service.md §8).
const TEST_REPLY_CHARS: usize = 200;

/// Routes of this module.
pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/settings", get(get_settings).put(put_settings))
        .route("/api/settings/test", get(test_settings))
}

/// The settings object (docs/review-service.md §4, Settings): the body of PUT /api/settings and
/// the answer of GET and PUT. In a PUT every field is optional; an absent field keeps its value,
/// an empty string deletes the row (the API keys then fall back to the environment, the model
/// fields to the cascade), an empty `default_prompt` is a no-op. In an answer, a key never set
/// is absent and API keys are unredacted.
#[derive(Debug, Default, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "an OpenAPI schema: it documents the body, which the handler reads through its own checks"
)]
pub(crate) struct SettingsUpdate {
    #[schema(nullable = false)]
    pub agent_api_key: Option<String>,
    #[schema(nullable = false)]
    pub second_api_key: Option<String>,
    #[schema(nullable = false)]
    pub third_api_key: Option<String>,
    /// `<provider>/<model>`; empty: the cascade applies.
    #[schema(nullable = false, pattern = "^$|^[a-z0-9][a-z0-9-]*/[!-~]+$")]
    pub agent_model: Option<String>,
    /// `<provider>/<model>`; empty: the cascade applies.
    #[schema(nullable = false, pattern = "^$|^[a-z0-9][a-z0-9-]*/[!-~]+$")]
    pub refine_model: Option<String>,
    /// `<provider>/<model>`; empty: the cascade applies.
    #[schema(nullable = false, pattern = "^$|^[a-z0-9][a-z0-9-]*/[!-~]+$")]
    pub implement_model: Option<String>,
    #[schema(nullable = false)]
    pub default_prompt: Option<String>,
    /// `<provider>/<model>`; empty: the cascade applies.
    #[schema(nullable = false, pattern = "^$|^[a-z0-9][a-z0-9-]*/[!-~]+$")]
    pub improver_model: Option<String>,
    /// Most input plus output tokens one review may use, a positive integer as a string;
    /// empty: REVIEW_MAX_TOKENS applies (unset: no limit).
    #[schema(nullable = false, pattern = "^$|^[1-9][0-9]{0,17}$")]
    pub review_max_tokens: Option<String>,
    /// Most cost one review may reach, in the units of ReviewRow.cost (USD), a positive
    /// number as a string; empty: REVIEW_MAX_COST applies (unset: no limit).
    #[schema(
        nullable = false,
        pattern = "^$|^[1-9][0-9]{0,8}(\\.[0-9]{1,6})?$|^0\\.[0-9]{0,5}[1-9]$"
    )]
    pub review_max_cost: Option<String>,
    /// Inline findings under this severity are not posted, only counted in the summary:
    /// `nit` (everything is posted), `question` or `blocking`; empty: `nit`
    /// (docs/review-service.md, "Minimum severity and quiet reviews").
    #[schema(nullable = false, pattern = "^$|^(nit|question|blocking)$")]
    pub review_min_severity: Option<String>,
    /// `true`: a review with no inline finding to post and a COMMENT event posts nothing; the
    /// check run says "No findings". `false` or empty: it is posted.
    #[schema(nullable = false, pattern = "^$|^(true|false)$")]
    pub review_quiet: Option<String>,
    /// `false`: inline findings are posted without verification; `true` or empty: each is
    /// checked by an independent verifier first, per
    /// docs/review-service.md, "Verification before posting".
    #[schema(nullable = false, pattern = "^$|^(true|false)$")]
    pub review_verify: Option<String>,
    /// The verifier's model, `<provider>/<model>`; empty: the review's own model.
    #[schema(nullable = false, pattern = "^$|^[a-z0-9][a-z0-9-]*/[!-~]+$")]
    pub verify_model: Option<String>,
    /// Independent passes over the diff, 1 to 5, their findings merged before verification,
    /// per docs/review-service.md, "Several passes"; empty: 1.
    #[schema(nullable = false, pattern = "^$|^[1-5]$")]
    pub review_passes: Option<String>,
    /// Most answers the App posts in one review thread, a whole number (0: none); empty:
    /// THREAD_MAX_ANSWERS (default 3), per docs/review-service.md, "Answers in review threads".
    #[schema(nullable = false, pattern = "^$|^[0-9]{1,9}$")]
    pub thread_max_answers: Option<String>,
    /// Most answers (in threads and to `/ask`) the App posts on one pull request, a whole
    /// number (0: none); empty: PR_MAX_ANSWERS (default 20).
    #[schema(nullable = false, pattern = "^$|^[0-9]{1,9}$")]
    pub pr_max_answers: Option<String>,
    /// Most the whole service may spend in a calendar month (UTC), in the units of
    /// ReviewRow.cost (USD), a positive number as a string; empty: MONTHLY_BUDGET applies
    /// (unset: no limit). A repository's own monthly_budget replaces it for that repository,
    /// per docs/review-service.md, "Monthly budget".
    #[schema(
        nullable = false,
        pattern = "^$|^[1-9][0-9]{0,8}(\\.[0-9]{1,6})?$|^0\\.[0-9]{0,5}[1-9]$"
    )]
    pub monthly_budget: Option<String>,
}

/// The body of GET /api/settings/test (docs/review-service.md §4, Settings): `{ok: true, text}`
/// with the reply cut to 200 characters, or `{ok: false, error}`. Always status 200.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct SettingsTest {
    pub ok: bool,
    /// The model that was asked (`<provider>/<model>`), when one could be resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// GET /api/settings: every stored setting as a flat object of strings, API keys unredacted
/// (docs/review-service.md §4, Settings). A key never set is absent.
#[utoipa::path(get, path = "/api/settings",
    responses((status = 200, description = "every stored setting", body = SettingsUpdate)))]
pub(crate) async fn get_settings(
    State(app): State<AppState>,
) -> Result<Json<BTreeMap<String, String>>, ApiError> {
    Ok(Json(app.records.store.settings().await?))
}

/// PUT /api/settings: apply rules 1-3 of docs/review-service.md §4, Settings, and answer the
/// full settings object.
/// 422 `{error}` naming the field for an unknown key, a non-string value or a model field that
/// is not `<provider>/<model>`; nothing is written then.
#[utoipa::path(put, path = "/api/settings", request_body = SettingsUpdate,
    responses((status = 200, description = "every stored setting after the write", body = SettingsUpdate),
        (status = 422, description = "a field is not accepted", body = crate::error::ErrorBody)))]
pub(crate) async fn put_settings(
    State(app): State<AppState>,
    body: Result<Json<Value>, JsonRejection>,
) -> Result<Json<BTreeMap<String, String>>, ApiError> {
    let Json(body) = body.map_err(|e| ApiError::Unprocessable(e.body_text()))?;
    let writes = plan_writes(&body)?;
    for (key, value) in writes {
        app.records.store.put_setting(key, value.as_deref()).await?;
    }
    Ok(Json(app.records.store.settings().await?))
}

/// The writes a PUT body asks for, validated as a whole before any is made: `(key, Some(value))`
/// stores, `(key, None)` deletes.
fn plan_writes(body: &Value) -> Result<Vec<(&'static str, Option<String>)>, ApiError> {
    let Some(fields) = body.as_object() else {
        return Err(ApiError::Unprocessable(
            "expected a JSON object of settings".into(),
        ));
    };
    let mut writes = Vec::new();
    for (field, value) in fields {
        let Some(key) = SETTING_KEYS.iter().copied().find(|k| k == field) else {
            return Err(ApiError::Unprocessable(format!(
                "{field}: unknown setting (accepted: {})",
                SETTING_KEYS.join(", ")
            )));
        };
        let Some(text) = value.as_str() else {
            return Err(ApiError::Unprocessable(format!("{key}: expected a string")));
        };
        let blank = text.trim().is_empty();
        if blank && key == "default_prompt" {
            continue; // rule 3: the global prompt can be replaced, never unset
        }
        if blank {
            writes.push((key, None)); // rule 2: the fallback applies
            continue;
        }
        if MODEL_KEYS.contains(&key) && text.trim().parse::<ModelSpec>().is_err() {
            return Err(ApiError::Unprocessable(format!(
                "{key}: expected a model spec <provider>/<model>, got {text:?}"
            )));
        }
        if key == "review_max_tokens" && !text.trim().parse::<i64>().is_ok_and(|n| n > 0) {
            return Err(ApiError::Unprocessable(format!(
                "{key}: expected a positive whole number of tokens, got {text:?}"
            )));
        }
        if matches!(key, "review_max_cost" | "monthly_budget")
            && !text
                .trim()
                .parse::<f64>()
                .is_ok_and(|c| c.is_finite() && c > 0.0)
        {
            return Err(ApiError::Unprocessable(format!(
                "{key}: expected a positive cost in USD, got {text:?}"
            )));
        }
        if key == "review_min_severity" && text.trim().parse::<Severity>().is_err() {
            return Err(ApiError::Unprocessable(format!(
                "{key}: expected nit, question or blocking, got {text:?}"
            )));
        }
        if key == "review_passes"
            && !text
                .trim()
                .parse::<u32>()
                .is_ok_and(|n| (1..=agent::passes::MAX_PASSES).contains(&n))
        {
            return Err(ApiError::Unprocessable(format!(
                "{key}: expected a whole number of passes from 1 to {}, got {text:?}",
                agent::passes::MAX_PASSES
            )));
        }
        if matches!(key, "thread_max_answers" | "pr_max_answers")
            && text.trim().parse::<u32>().is_err()
        {
            return Err(ApiError::Unprocessable(format!(
                "{key}: expected a whole number of answers, got {text:?}"
            )));
        }
        if matches!(key, "review_quiet" | "review_verify") && text.trim().parse::<bool>().is_err() {
            return Err(ApiError::Unprocessable(format!(
                "{key}: expected true or false, got {text:?}"
            )));
        }
        let stored = if key == "default_prompt" {
            text.to_owned()
        } else {
            text.trim().to_owned()
        };
        writes.push((key, Some(stored)));
    }
    Ok(writes)
}

/// GET /api/settings/test: one small real prompt through `agent::complete_text` with the key and
/// the review model the cascade gives ([`crate::state::App::global_model`]: the agent_model
/// setting, else the AGENT_MODEL default). Failures (no key, unknown provider, provider error)
/// are reported in the body with status 200.
#[utoipa::path(get, path = "/api/settings/test",
    responses((status = 200, description = "ok true with text, or ok false with error", body = SettingsTest),
        (status = 403, description = "a cross-site request (`cross_site`): the test spends a model call", body = crate::error::ErrorBody)))]
pub(crate) async fn test_settings(
    State(app): State<AppState>,
) -> Result<Json<SettingsTest>, ApiError> {
    let model = app.global_model().await?;
    let failed = |model: Option<String>, error: String| SettingsTest {
        ok: false,
        model,
        text: None,
        error: Some(error),
    };
    let spec: ModelSpec = match model.parse() {
        Ok(s) => s,
        Err(e) => return Ok(Json(failed(Some(model), e.to_string()))),
    };
    let providers = app.provider_settings().await?;
    Ok(Json(
        match agent::complete_text(&providers, &spec, TEST_PROMPT).await {
            Ok(text) => SettingsTest {
                ok: true,
                model: Some(model),
                text: Some(text.trim().chars().take(TEST_REPLY_CHARS).collect()),
                error: None,
            },
            Err(e) => failed(Some(model), e.to_string()),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_follow_rules_1_to_3() {
        let body = json!({"agent_api_key": " k ", "second_api_key": "", "default_prompt": ""});
        let mut w = plan_writes(&body).unwrap();
        w.sort();
        assert_eq!(
            w,
            vec![
                ("agent_api_key", Some("k".to_owned())),
                ("second_api_key", None)
            ]
        );
    }

    #[test]
    fn bad_fields_are_named() {
        for (body, field) in [
            (json!({"agent_model": 3}), "agent_model"),
            (json!({"nope": "x"}), "nope"),
            (json!({"improver_model": "no-slash"}), "improver_model"),
            (json!({"review_max_tokens": "0"}), "review_max_tokens"),
            (json!({"review_max_tokens": "1.5"}), "review_max_tokens"),
            (json!({"review_max_tokens": "lots"}), "review_max_tokens"),
            (json!({"review_max_cost": "-1"}), "review_max_cost"),
            (json!({"review_max_cost": "NaN"}), "review_max_cost"),
            (json!({"review_max_cost": "inf"}), "review_max_cost"),
            (json!({"thread_max_answers": "-1"}), "thread_max_answers"),
            (json!({"pr_max_answers": "many"}), "pr_max_answers"),
            (json!({"monthly_budget": "0"}), "monthly_budget"),
            (json!({"monthly_budget": "ten"}), "monthly_budget"),
        ] {
            match plan_writes(&body) {
                Err(ApiError::Unprocessable(m)) => assert!(m.starts_with(field), "{m}"),
                other => panic!("{other:?}"),
            }
        }
        assert!(plan_writes(&json!([1])).is_err());
    }

    #[test]
    fn schema_matches_what_put_accepts() {
        use utoipa::PartialSchema;
        let schema = serde_json::to_value(SettingsUpdate::schema()).unwrap();
        assert_eq!(schema["additionalProperties"], json!(false), "{schema}");
        assert_eq!(
            schema["properties"]["agent_api_key"]["type"],
            json!("string"),
            "{schema}"
        );
        assert!(schema.get("required").is_none(), "{schema}");
        let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), SETTING_KEYS.len());
    }
}
