//! The LLM review agent (docs/architecture.md, Agent): thin serde clients of the Anthropic Messages API and
//! OpenAI chat completions (no vendor SDK; docs/background.md, "Model provider clients" says why), one registry table mapping
//! providers to wire format and key slot, read-only tools confined to a worktree, the two
//! posting tools behind [`ReviewPoster`], the tool loop [`run_review`], transcripts per session
//! ([`TranscriptStore`]) and token cost from a models.dev-format [`Catalog`]; plus the chat over
//! recorded data ([`Chat`]), a one-tool loop that streams AI SDK UI message parts; and answers in
//! review threads ([`answer::run_answer`]).

pub mod answer;
pub mod catalog;
pub mod chat;
pub mod diff;
mod error;
pub mod fingerprint;
pub mod improve;
pub mod judge;
pub mod passes;
pub mod prompt;
pub mod provider;
pub mod recheck;
mod review;
pub mod tools;
mod transcript;
pub mod verify;

pub use catalog::{Catalog, CatalogModel, CatalogProvider, Cost, Limit};
pub use chat::{Chat, ChatDatabase, ChatEnd, ChatOutcome, UiPart};
pub use error::{AgentError, ErrorSource};
pub use prompt::{Skill, repo_instructions};
pub use provider::{ProviderSettings, Usage, complete, complete_text};
pub use recheck::{Recheck, RecheckVerdict, Rechecked};
pub use review::{Budget, REVIEW_TIMEOUT, ReviewJob, ReviewOutcome, Since, run_review};
pub use tokio_util::sync::CancellationToken;
pub use tools::ReviewPoster;
pub use transcript::{TranscriptMirror, TranscriptStore, validate_session_id};
