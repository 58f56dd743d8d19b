//! Model providers: the registry table (provider id -> wire format, key slot, base URL), the
//! settings it reads, and the client that sends one [`ModelRequest`] over HTTP, streamed or not,
//! with an idle timeout per event (the codex-rs shape: transport, then a provider client that
//! turns the wire into a closed event enum).

pub mod anthropic;
pub mod openai;
mod sse;
pub mod types;

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};

use crate::error::AgentError;
pub use types::*;

/// Endpoints, keys and the streaming switch of the three providers (docs/configuration.md.
/// The app fills it from the settings table with the environment as fallback.
#[derive(Clone)]
pub struct ProviderSettings {
    /// Anthropic base without `/v1` (the client appends `/v1/messages`); env ANTHROPIC_BASE_URL.
    pub anthropic_base_url: String,
    /// OpenAI base ending in `/v1`; env OPENAI_BASE_URL.
    pub openai_base_url: String,
    /// Z.ai coding-plan base ending in `/api/coding/paas/v4`; env ZAI_CODING_PLAN_BASE_URL.
    pub zai_base_url: String,
    /// Key of `anthropic` (setting `agent_api_key`, env AGENT_API_KEY).
    pub agent_api_key: Option<SecretString>,
    /// Key of `zai-coding-plan` (setting `second_api_key`, env SECOND_API_KEY).
    pub second_api_key: Option<SecretString>,
    /// Key of `openai` (setting `third_api_key`, env THIRD_API_KEY).
    pub third_api_key: Option<SecretString>,
    /// Stream responses (SSE); default true.
    pub stream: bool,
}

impl Default for ProviderSettings {
    fn default() -> Self {
        ProviderSettings {
            anthropic_base_url: "https://api.anthropic.com".into(),
            openai_base_url: "https://api.openai.com/v1".into(),
            zai_base_url: "https://api.z.ai/api/coding/paas/v4".into(),
            agent_api_key: None,
            second_api_key: None,
            third_api_key: None,
            stream: true,
        }
    }
}

impl std::fmt::Debug for ProviderSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |k: &Option<SecretString>| if k.is_some() { "set" } else { "unset" };
        f.debug_struct("ProviderSettings")
            .field("anthropic_base_url", &self.anthropic_base_url)
            .field("openai_base_url", &self.openai_base_url)
            .field("zai_base_url", &self.zai_base_url)
            .field("agent_api_key", &set(&self.agent_api_key))
            .field("second_api_key", &set(&self.second_api_key))
            .field("third_api_key", &set(&self.third_api_key))
            .field("stream", &self.stream)
            .finish()
    }
}

/// The two wire formats we speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// Anthropic Messages API, `POST {base}/v1/messages`.
    AnthropicMessages,
    /// OpenAI chat completions (and compatibles), `POST {base}/chat/completions`.
    OpenAiChat,
}

/// Which key slot unlocks a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySlot {
    /// `agent_api_key` / AGENT_API_KEY.
    Agent,
    /// `second_api_key` / SECOND_API_KEY.
    Second,
    /// `third_api_key` / THIRD_API_KEY.
    Third,
}

impl KeySlot {
    /// The settings key.
    pub fn setting(self) -> &'static str {
        match self {
            KeySlot::Agent => "agent_api_key",
            KeySlot::Second => "second_api_key",
            KeySlot::Third => "third_api_key",
        }
    }

    /// The environment fallback.
    pub fn env(self) -> &'static str {
        match self {
            KeySlot::Agent => "AGENT_API_KEY",
            KeySlot::Second => "SECOND_API_KEY",
            KeySlot::Third => "THIRD_API_KEY",
        }
    }
}

/// One row of the registry table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderEntry {
    /// Provider id as in model specs and the models.dev catalog.
    pub id: &'static str,
    /// Wire format spoken.
    pub wire: WireFormat,
    /// Key slot that unlocks it.
    pub key: KeySlot,
}

/// The registry: the one table mapping provider ids to wire format and key slot
/// (docs/configuration.md: providers and key slots). Base URLs come from [`ProviderSettings`].
pub const PROVIDERS: &[ProviderEntry] = &[
    ProviderEntry {
        id: "anthropic",
        wire: WireFormat::AnthropicMessages,
        key: KeySlot::Agent,
    },
    ProviderEntry {
        id: "zai-coding-plan",
        wire: WireFormat::OpenAiChat,
        key: KeySlot::Second,
    },
    ProviderEntry {
        id: "openai",
        wire: WireFormat::OpenAiChat,
        key: KeySlot::Third,
    },
];

/// Looks a provider id up in [`PROVIDERS`].
pub fn provider_entry(id: &str) -> Option<&'static ProviderEntry> {
    PROVIDERS.iter().find(|p| p.id == id)
}

impl ProviderSettings {
    /// The configured key of a slot, if any (empty strings count as unset).
    pub fn key(&self, slot: KeySlot) -> Option<&SecretString> {
        let k = match slot {
            KeySlot::Agent => &self.agent_api_key,
            KeySlot::Second => &self.second_api_key,
            KeySlot::Third => &self.third_api_key,
        };
        k.as_ref().filter(|k| !k.expose_secret().trim().is_empty())
    }

    /// The base URL of a provider (without trailing slash).
    pub fn base_url(&self, entry: &ProviderEntry) -> &str {
        let url = match entry.key {
            KeySlot::Agent => &self.anthropic_base_url,
            KeySlot::Second => &self.zai_base_url,
            KeySlot::Third => &self.openai_base_url,
        };
        url.trim_end_matches('/')
    }

    /// Resolves a provider id into a ready client.
    ///
    /// Errors: [`AgentError::UnknownProvider`] for an id outside the registry,
    /// [`AgentError::MissingKey`] (naming the setting and env var) when its key is unset.
    pub fn client(&self, provider: &str) -> Result<ModelClient, AgentError> {
        let entry =
            provider_entry(provider).ok_or_else(|| AgentError::UnknownProvider(provider.into()))?;
        let key = self.key(entry.key).ok_or_else(|| AgentError::MissingKey {
            provider: provider.into(),
            setting: entry.key.setting(),
            env: entry.key.env(),
        })?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| AgentError::transport("", e))?;
        Ok(ModelClient {
            http,
            wire: entry.wire,
            base_url: self.base_url(entry).to_owned(),
            key: key.clone(),
            stream: self.stream,
        })
    }
}

/// A client of one provider: wire format, base URL and key. Cheap to clone.
#[derive(Clone)]
pub struct ModelClient {
    http: reqwest::Client,
    wire: WireFormat,
    base_url: String,
    key: SecretString,
    stream: bool,
}

impl std::fmt::Debug for ModelClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelClient")
            .field("wire", &self.wire)
            .field("base_url", &self.base_url)
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl ModelClient {
    /// The wire format of this client.
    pub fn wire(&self) -> WireFormat {
        self.wire
    }

    /// Sends one request and folds the answer into a [`ModelResponse`], retrying transient
    /// failures (HTTP 429, 503, 529 and connection errors) up to [`RETRIES`] times with a
    /// growing pause; the run's cancellation and total timeout still apply around it.
    ///
    /// `idle` bounds the wait for the response headers, for each streamed event, and (not
    /// streaming) for the whole body; `on_event` sees every event as it arrives (the loop uses
    /// it to note progress). Errors: [`AgentError::Provider`] with the provider's message for
    /// an error status or an error event, [`AgentError::Transport`] for network and parse
    /// failures, [`AgentError::Timeout`] when `idle` passes without progress.
    pub async fn send(
        &self,
        request: &ModelRequest,
        idle: Duration,
        on_event: &mut (dyn FnMut(&ResponseEvent) + Send),
    ) -> Result<ModelResponse, AgentError> {
        let mut attempt = 0u32;
        loop {
            match self.send_once(request, idle, on_event).await {
                Err(e) if attempt < RETRIES && is_transient(&e) => {
                    attempt += 1;
                    tracing::warn!(error = %e, attempt, "transient model provider failure; retrying");
                    tokio::time::sleep(RETRY_PAUSE * attempt).await;
                }
                other => return other,
            }
        }
    }

    async fn send_once(
        &self,
        request: &ModelRequest,
        idle: Duration,
        on_event: &mut (dyn FnMut(&ResponseEvent) + Send),
    ) -> Result<ModelResponse, AgentError> {
        let (url, body) = match self.wire {
            WireFormat::AnthropicMessages => (
                format!("{}/v1/messages", self.base_url),
                anthropic::request_body(request, self.stream),
            ),
            WireFormat::OpenAiChat => (
                format!("{}/chat/completions", self.base_url),
                openai::request_body(request, self.stream),
            ),
        };
        let builder = self.http.post(&url).json(&body);
        let builder = match self.wire {
            WireFormat::AnthropicMessages => builder
                .header("x-api-key", self.key.expose_secret())
                .header("anthropic-version", "2023-06-01"),
            WireFormat::OpenAiChat => builder.bearer_auth(self.key.expose_secret()),
        };
        let builder = if self.stream {
            builder.header(reqwest::header::ACCEPT, "text/event-stream")
        } else {
            builder
        };
        let response = tokio::time::timeout(idle, builder.send())
            .await
            .map_err(|_| idle_timeout(idle))?
            .map_err(|e| AgentError::transport(url.clone(), e))?;
        let status = response.status();
        if !status.is_success() {
            let text = tokio::time::timeout(idle, response.text())
                .await
                .map_err(|_| idle_timeout(idle))?
                .unwrap_or_default();
            return Err(provider_error(status.as_u16(), &text));
        }
        let mut out = ModelResponse::default();
        let mut emit = |ev: ResponseEvent, out: &mut ModelResponse| {
            on_event(&ev);
            out.apply(ev);
        };
        if self.stream {
            // One parser per wire format; only the one of `self.wire` is fed.
            let mut anthropic_parser = anthropic::StreamParser::default();
            let mut openai_parser = openai::StreamParser::default();
            let wire = &self.wire;
            sse::drive(response, idle, |data| {
                let (events, done) = match wire {
                    WireFormat::AnthropicMessages => anthropic_parser.on_data(data)?,
                    WireFormat::OpenAiChat => openai_parser.on_data(data)?,
                };
                for ev in events {
                    emit(ev, &mut out);
                }
                Ok(done)
            })
            .await?;
            if matches!(wire, WireFormat::OpenAiChat) {
                // A stream that ends after a finish reason without `[DONE]` still completes.
                for ev in openai_parser.finish() {
                    emit(ev, &mut out);
                }
            }
            if !out.completed {
                return Err(AgentError::Transport {
                    context: "the response stream ended before the response was complete".into(),
                    source: None,
                });
            }
        } else {
            let bytes = tokio::time::timeout(idle, response.bytes())
                .await
                .map_err(|_| idle_timeout(idle))?
                .map_err(|e| AgentError::transport(url.clone(), e))?;
            let events = match self.wire {
                WireFormat::AnthropicMessages => anthropic::parse_response(&bytes)?,
                WireFormat::OpenAiChat => openai::parse_response(&bytes)?,
            };
            for ev in events {
                emit(ev, &mut out);
            }
        }
        Ok(out)
    }
}

/// How often [`ModelClient::send`] retries a transient failure.
pub const RETRIES: u32 = 2;
const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// Rate limits, overload and refused connections pass; other errors would repeat.
fn is_transient(e: &AgentError) -> bool {
    match e {
        AgentError::Provider { status, .. } => matches!(status, 429 | 503 | 529),
        // A request that never reached the provider (refused, reset, DNS) may pass.
        AgentError::Transport {
            source: Some(source),
            ..
        } => source
            .downcast_ref::<reqwest::Error>()
            .is_some_and(|e| e.is_connect() || e.is_request()),
        _ => false,
    }
}

fn idle_timeout(idle: Duration) -> AgentError {
    AgentError::Timeout(format!(
        "no progress from the model for {} s",
        idle.as_secs()
    ))
}

/// Builds a [`AgentError::Provider`] from an error response: the provider's `error.message`
/// (both vendors nest it so) or else the first 500 characters of the body.
pub(crate) fn provider_error(status: u16, body: &str) -> AgentError {
    let message = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let err = v.get("error")?;
            err.get("message")
                .and_then(|m| m.as_str())
                .map(str::to_owned)
                .or_else(|| err.as_str().map(str::to_owned))
        })
        .unwrap_or_else(|| {
            let t = body.trim();
            if t.is_empty() {
                "(empty body)".to_owned()
            } else {
                t.chars().take(500).collect()
            }
        });
    AgentError::Provider { status, message }
}

/// Sends one small prompt without tools and returns the reply text (GET /api/settings/test).
/// `spec` picks provider and model; errors as [`ModelClient::send`], plus the registry errors.
pub async fn complete_text(
    providers: &ProviderSettings,
    spec: &review_domain::ModelSpec,
    prompt: &str,
) -> Result<String, AgentError> {
    Ok(complete(providers, spec, "", prompt).await?.0)
}

/// Sends one prompt without tools under a system prompt (empty: none) and returns the reply
/// text with the call's token counts; at most 1,024 output tokens, 2 minutes without progress.
/// Errors as [`ModelClient::send`], plus the registry errors.
pub async fn complete(
    providers: &ProviderSettings,
    spec: &review_domain::ModelSpec,
    system: &str,
    prompt: &str,
) -> Result<(String, Usage), AgentError> {
    let client = providers.client(&spec.provider)?;
    let request = ModelRequest {
        model: spec.model.clone(),
        system: system.to_owned(),
        messages: vec![Message::User {
            text: prompt.to_owned(),
        }],
        tools: Vec::new(),
        max_tokens: 1024,
    };
    let response = client
        .send(&request, Duration::from_secs(120), &mut |_| {})
        .await?;
    Ok((response.text, response.usage))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_key_names_the_setting_and_env_var() {
        let settings = ProviderSettings::default();
        let err = settings.client("zai-coding-plan").unwrap_err().to_string();
        assert!(
            err.contains("second_api_key") && err.contains("SECOND_API_KEY"),
            "{err}"
        );
        let err = settings.client("openai").unwrap_err().to_string();
        assert!(
            err.contains("third_api_key") && err.contains("THIRD_API_KEY"),
            "{err}"
        );
        let err = settings.client("anthropic").unwrap_err().to_string();
        assert!(
            err.contains("agent_api_key") && err.contains("AGENT_API_KEY"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_refused_connection_keeps_its_source_and_is_retried() {
        // A port nothing listens on: bind, read the port, close.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}/v1/messages");
        let err = reqwest::Client::new().post(&url).send().await.unwrap_err();
        let e = AgentError::transport(url.clone(), err);
        assert!(is_transient(&e));
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("model provider request failed: {url}: ")),
            "{text}"
        );
        let source = std::error::Error::source(&e).expect("the reqwest error is the source");
        assert!(source.downcast_ref::<reqwest::Error>().is_some());
        // A response that does not parse is not retried, and reads as before.
        let parse = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
        let e = AgentError::transport("unreadable Anthropic response", parse);
        assert!(!is_transient(&e));
        assert!(
            e.to_string()
                .starts_with("model provider request failed: unreadable Anthropic response: EOF")
        );
    }

    #[test]
    fn unknown_provider_is_refused() {
        let settings = ProviderSettings::default();
        assert!(
            matches!(settings.client("nope"), Err(AgentError::UnknownProvider(p)) if p == "nope")
        );
    }

    #[test]
    fn registry_maps_providers_to_wire_and_key() {
        let settings = ProviderSettings {
            agent_api_key: Some("a".into()),
            second_api_key: Some("b".into()),
            third_api_key: Some("c".into()),
            ..Default::default()
        };
        assert_eq!(
            settings.client("anthropic").unwrap().wire(),
            WireFormat::AnthropicMessages
        );
        assert_eq!(
            settings.client("openai").unwrap().wire(),
            WireFormat::OpenAiChat
        );
        let zai = settings.client("zai-coding-plan").unwrap();
        assert_eq!(zai.base_url, "https://api.z.ai/api/coding/paas/v4");
    }

    #[test]
    fn provider_error_keeps_the_providers_message() {
        let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        match provider_error(529, body) {
            AgentError::Provider { status, message } => {
                assert_eq!((status, message.as_str()), (529, "Overloaded"));
            }
            other => panic!("{other:?}"),
        }
        match provider_error(502, "<html>bad gateway</html>") {
            AgentError::Provider { message, .. } => assert_eq!(message, "<html>bad gateway</html>"),
            other => panic!("{other:?}"),
        }
    }
}
