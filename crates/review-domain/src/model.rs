//! Model specs: `<provider>/<model>` (docs/review-service.md §2, RepoRow.model).

use std::fmt;
use std::str::FromStr;

/// A model spec `<provider>/<model>`, for example `anthropic/claude-sonnet-4-5`.
///
/// The model part may itself contain slashes (`openai/gpt-4o` or `zai-coding-plan/glm-4.6`):
/// the provider is everything before the first `/`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelSpec {
    /// Provider id as the model catalog names it (`anthropic`, `openai`, `zai-coding-plan`).
    pub provider: String,
    /// Model id within the provider.
    pub model: String,
}

/// Why a string is not a model spec.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("model spec {0:?} is not of the form <provider>/<model>")]
pub struct ModelSpecError(pub String);

impl FromStr for ModelSpec {
    type Err = ModelSpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().split_once('/') {
            Some((p, m)) if !p.is_empty() && !m.is_empty() => Ok(ModelSpec {
                provider: p.to_owned(),
                model: m.to_owned(),
            }),
            _ => Err(ModelSpecError(s.to_owned())),
        }
    }
}

impl fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_is_everything_before_the_first_slash() {
        let spec: ModelSpec = "openrouter/anthropic/claude".parse().unwrap();
        assert_eq!(spec.provider, "openrouter");
        assert_eq!(spec.model, "anthropic/claude");
        assert_eq!(spec.to_string(), "openrouter/anthropic/claude");
    }

    #[test]
    fn spec_without_provider_or_model_is_rejected() {
        for bad in ["", "claude", "/x", "x/", "  "] {
            assert!(bad.parse::<ModelSpec>().is_err(), "{bad:?}");
        }
    }
}
