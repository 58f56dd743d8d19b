//! Plain types of the review service: the rows of docs/review-service.md §2, the enums of §2
//! and §3, model specs, the pull request under review, the settings cascades, what the agent's
//! two tools submit, and the pure rules of reviewer skills ([`skills`]). No I/O lives here, so
//! the store, the agent and the HTTP layer can all share these shapes without depending on
//! each other.

mod choice;
mod clock;
mod enums;
mod filters;
mod model;
mod pull;
mod rows;
pub mod skills;

pub use choice::{model_cascade, review_focus};
pub use clock::{EpochMillis, EpochSeconds};
pub use enums::*;
pub use filters::*;
pub use model::{ModelSpec, ModelSpecError};
pub use pull::PullRequest;
pub use rows::*;
