//! The LLM review agent (DESIGN.md, Agent): thin serde clients of the Anthropic Messages API and
//! OpenAI chat completions (no vendor SDK; FACTS.md explains why), one registry table mapping
//! providers to wire format and key slot, read-only tools confined to a worktree, the two
//! posting tools behind [`ReviewPoster`], and token cost from a models.dev-format [`Catalog`].

pub mod catalog;
pub mod diff;
mod error;
pub mod provider;
pub mod tools;

pub use catalog::{Catalog, CatalogModel, CatalogProvider, Cost, Limit};
pub use error::AgentError;
pub use provider::{ProviderSettings, Usage, complete_text};
pub use tools::ReviewPoster;
