//! What a model run may use: the provider endpoints and keys, and the review budget, each
//! from the stored settings over the environment (docs/review-service.md §4, Settings rule 2;
//! docs/configuration.md). Pure functions of the configuration and the stored settings, so the
//! server (settings from the database) and the local `review` command (no database: an empty
//! map) choose the same way.

use crate::config::Config;
use agent::{Budget, ProviderSettings};
use review_domain::{ModelSpec, Severity};
use secrecy::SecretString;
use std::collections::BTreeMap;

/// Provider endpoints and keys for a run: a stored, non-empty `agent_api_key`,
/// `second_api_key` or `third_api_key` wins over AGENT_API_KEY, SECOND_API_KEY or
/// THIRD_API_KEY; endpoints and the streaming switch come from the configuration.
pub(crate) fn provider_settings(
    config: &Config,
    stored: &BTreeMap<String, String>,
) -> ProviderSettings {
    let key = |name: &str, env: &Option<SecretString>| {
        stored
            .get(name)
            .filter(|v| !v.is_empty())
            .map(|v| SecretString::from(v.clone()))
            .or_else(|| env.clone())
    };
    ProviderSettings {
        anthropic_base_url: config.anthropic_base_url.clone(),
        openai_base_url: config.openai_base_url.clone(),
        zai_base_url: config.zai_base_url.clone(),
        agent_api_key: key("agent_api_key", &config.agent_api_key),
        second_api_key: key("second_api_key", &config.second_api_key),
        third_api_key: key("third_api_key", &config.third_api_key),
        stream: config.agent_stream,
    }
}

/// The budget of a review (docs/security.md, "Review budget"): the `review_max_tokens` and
/// `review_max_cost` settings win over REVIEW_MAX_TOKENS and REVIEW_MAX_COST; a stored value
/// that does not parse is ignored with a warning. The sources are named for the messages.
pub(crate) fn review_budget(config: &Config, stored: &BTreeMap<String, String>) -> Budget {
    fn parsed<T: std::str::FromStr>(stored: &BTreeMap<String, String>, key: &str) -> Option<T> {
        let text = stored.get(key)?.trim();
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
    let (max_tokens, tokens_source) = match parsed::<i64>(stored, "review_max_tokens") {
        Some(n) => (Some(n), "review_max_tokens setting"),
        None => (config.review_max_tokens, "REVIEW_MAX_TOKENS"),
    };
    let (max_cost, cost_source) = match parsed::<f64>(stored, "review_max_cost") {
        Some(c) => (Some(c), "review_max_cost setting"),
        None => (config.review_max_cost, "REVIEW_MAX_COST"),
    };
    Budget {
        max_tokens,
        max_cost,
        tokens_source: tokens_source.to_owned(),
        cost_source: cost_source.to_owned(),
    }
}

/// The global monthly budget in USD and where it comes from, per
/// docs/review-service.md, "Monthly budget": the `monthly_budget` setting wins over
/// MONTHLY_BUDGET; a stored value that is not a positive number is ignored with a warning (PUT
/// /api/settings refuses one). None: no global budget.
pub(crate) fn monthly_budget(
    config: &Config,
    stored: &BTreeMap<String, String>,
) -> Option<(f64, &'static str)> {
    if let Some(text) = stored.get("monthly_budget").map(|v| v.trim()) {
        match text.parse::<f64>() {
            Ok(b) if b.is_finite() && b > 0.0 => return Some((b, "monthly_budget setting")),
            _ => tracing::warn!(
                value = text,
                "ignoring a monthly_budget setting that is not a positive number"
            ),
        }
    }
    config
        .monthly_budget
        .filter(|b| b.is_finite() && *b > 0.0)
        .map(|b| (b, "MONTHLY_BUDGET"))
}

/// What reaches the pull request, per docs/review-service.md, "Minimum severity and quiet reviews":
/// the `review_min_severity` setting (`nit`, `question` or `blocking`; absent: `nit`,
/// everything is posted) and `review_quiet` (`true` or `false`; absent: `false`). A stored
/// value that does not parse is ignored with a warning (PUT /api/settings refuses one).
pub(crate) fn review_noise(stored: &BTreeMap<String, String>) -> (Severity, bool) {
    let min_severity = match stored.get("review_min_severity").map(|v| v.trim()) {
        None => Severity::Nit,
        Some(text) => text.parse().unwrap_or_else(|_| {
            tracing::warn!(
                value = text,
                "ignoring a review_min_severity that is not nit, question or blocking"
            );
            Severity::Nit
        }),
    };
    let quiet = match stored.get("review_quiet").map(|v| v.trim()) {
        None => false,
        Some(text) => text.parse().unwrap_or_else(|_| {
            tracing::warn!(
                value = text,
                "ignoring a review_quiet that is not true or false"
            );
            false
        }),
    };
    (min_severity, quiet)
}

/// The verifier's model, or None when verification is off (docs/review-service.md,
/// "Verification before posting"): the `review_verify` setting (absent or not `false`: on),
/// and `verify_model` when it is a valid spec, else the review's own `model`.
pub(crate) fn review_verifier(
    stored: &BTreeMap<String, String>,
    model: &ModelSpec,
) -> Option<ModelSpec> {
    if !verification_on(stored) {
        return None;
    }
    let own = stored
        .get("verify_model")
        .and_then(|v| v.trim().parse::<ModelSpec>().ok());
    Some(own.unwrap_or_else(|| model.clone()))
}

/// Whether inline findings are verified before posting: the `review_verify` setting is absent
/// or anything but `false` (docs/review-service.md, "Verification before posting").
pub(crate) fn verification_on(stored: &BTreeMap<String, String>) -> bool {
    stored.get("review_verify").map(|v| v.trim()) != Some("false")
}

/// How many independent passes a review makes (docs/review-service.md, "Several passes"): the
/// `review_passes` setting, 1 to [`agent::passes::MAX_PASSES`]; absent or not such a number: 1.
pub(crate) fn review_passes(stored: &BTreeMap<String, String>) -> u32 {
    stored
        .get("review_passes")
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|n| (1..=agent::passes::MAX_PASSES).contains(n))
        .unwrap_or(1)
}

/// The limits on answers, per docs/review-service.md, "Answers in review threads":
/// `(per thread, per pull request)`, the `thread_max_answers` and `pr_max_answers` settings
/// over THREAD_MAX_ANSWERS and PR_MAX_ANSWERS. A stored value that is not a whole number is
/// ignored with a warning (PUT /api/settings refuses one); 0 turns answers off.
pub(crate) fn answer_limits(config: &Config, stored: &BTreeMap<String, String>) -> (u32, u32) {
    let limit = |key: &str, env: u32| match stored.get(key).map(|v| v.trim()) {
        None => env,
        Some(text) => text.parse().unwrap_or_else(|_| {
            tracing::warn!(
                key,
                value = text,
                "ignoring an answer limit that is not a whole number"
            );
            env
        }),
    };
    (
        limit("thread_max_answers", config.thread_max_answers),
        limit("pr_max_answers", config.pr_max_answers),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use secrecy::ExposeSecret;

    fn stored(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn answer_limits_come_from_the_settings_over_the_environment() {
        let mut config = Config::defaults();
        assert_eq!(answer_limits(&config, &stored(&[])), (3, 20));
        config.thread_max_answers = 5;
        assert_eq!(
            answer_limits(
                &config,
                &stored(&[("thread_max_answers", "lots"), ("pr_max_answers", " 2 ")])
            ),
            (5, 2)
        );
    }

    #[test]
    fn the_monthly_budget_setting_wins_over_the_environment() {
        let mut config = Config::defaults();
        assert_eq!(monthly_budget(&config, &stored(&[])), None);
        config.monthly_budget = Some(50.0);
        assert_eq!(
            monthly_budget(&config, &stored(&[])),
            Some((50.0, "MONTHLY_BUDGET"))
        );
        assert_eq!(
            monthly_budget(&config, &stored(&[("monthly_budget", " 12.5 ")])),
            Some((12.5, "monthly_budget setting"))
        );
        assert_eq!(
            monthly_budget(&config, &stored(&[("monthly_budget", "lots")])),
            Some((50.0, "MONTHLY_BUDGET"))
        );
    }

    #[test]
    fn passes_are_one_unless_set_to_one_to_five() {
        assert_eq!(review_passes(&stored(&[])), 1);
        assert_eq!(review_passes(&stored(&[("review_passes", " 3 ")])), 3);
        assert_eq!(review_passes(&stored(&[("review_passes", "9")])), 1);
        assert_eq!(review_passes(&stored(&[("review_passes", "two")])), 1);
    }

    #[test]
    fn verification_is_on_by_default_with_the_review_model() {
        let model: ModelSpec = "anthropic/claude-a".parse().unwrap();
        let verifier =
            |pairs: &[(&str, &str)]| review_verifier(&stored(pairs), &model).map(|m| m.to_string());
        assert_eq!(verifier(&[]).as_deref(), Some("anthropic/claude-a"));
        assert_eq!(
            verifier(&[("verify_model", "openai/gpt-x")]).as_deref(),
            Some("openai/gpt-x")
        );
        assert_eq!(
            verifier(&[("review_verify", "false"), ("verify_model", "openai/gpt-x")]),
            None
        );
        assert_eq!(
            verifier(&[("review_verify", "true")]).as_deref(),
            Some("anthropic/claude-a")
        );
    }

    #[test]
    fn noise_settings_default_to_posting_everything_and_ignore_bad_values() {
        assert_eq!(review_noise(&stored(&[])), (Severity::Nit, false));
        assert_eq!(
            review_noise(&stored(&[
                ("review_min_severity", " question "),
                ("review_quiet", "true")
            ])),
            (Severity::Question, true)
        );
        assert_eq!(
            review_noise(&stored(&[
                ("review_min_severity", "loud"),
                ("review_quiet", "yes")
            ])),
            (Severity::Nit, false)
        );
    }

    fn shown(key: &Option<SecretString>) -> Option<&str> {
        key.as_ref().map(|k| k.expose_secret())
    }

    #[test]
    fn a_stored_key_wins_over_the_environment_and_an_empty_one_falls_back() {
        let mut config = Config::defaults();
        config.agent_api_key = Some(SecretString::from("env-agent"));
        config.second_api_key = Some(SecretString::from("env-second"));
        let s = provider_settings(
            &config,
            &stored(&[("agent_api_key", "stored-agent"), ("second_api_key", "")]),
        );
        assert_eq!(
            (
                shown(&s.agent_api_key),
                shown(&s.second_api_key),
                shown(&s.third_api_key)
            ),
            (Some("stored-agent"), Some("env-second"), None)
        );
        let none = provider_settings(&config, &BTreeMap::new());
        assert_eq!(shown(&none.agent_api_key), Some("env-agent"));
    }

    #[test]
    fn budget_settings_win_and_ones_that_are_not_numbers_are_ignored() {
        let mut config = Config::defaults();
        config.review_max_tokens = Some(1000);
        config.review_max_cost = Some(2.5);
        let budget = |pairs: &[(&str, &str)]| {
            let b = review_budget(&config, &stored(pairs));
            (b.max_tokens, b.max_cost, b.tokens_source, b.cost_source)
        };
        let (setting_t, setting_c) = ("review_max_tokens setting", "review_max_cost setting");
        let (env_t, env_c) = ("REVIEW_MAX_TOKENS", "REVIEW_MAX_COST");
        assert_eq!(
            budget(&[("review_max_tokens", " 500 "), ("review_max_cost", "0.75")]),
            (Some(500), Some(0.75), setting_t.into(), setting_c.into())
        );
        assert_eq!(
            budget(&[("review_max_tokens", "lots"), ("review_max_cost", "")]),
            (Some(1000), Some(2.5), env_t.into(), env_c.into())
        );
        assert_eq!(
            budget(&[]),
            (Some(1000), Some(2.5), env_t.into(), env_c.into())
        );
    }
}
