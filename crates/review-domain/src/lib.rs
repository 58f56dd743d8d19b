//! Plain types of the review service: the rows of docs/review-service.md §2, the enums of §3,
//! model specs, the pull request under review, the settings cascades, and what the agent's two
//! tools submit. No I/O lives here, so the store, the agent and the HTTP layer can all share
//! these shapes without depending on each other.

mod choice;
mod filters;
mod model;
mod pull;
mod rows;

pub use choice::{model_cascade, review_focus};
pub use filters::*;
pub use model::{ModelSpec, ModelSpecError};
pub use pull::PullRequest;
pub use rows::*;
