//! GitLab, as the review service needs it (docs/review-service.md, "GitLab"): the REST v4
//! calls of a review behind [`crate::Forge`] ([`GitLabForge`]) and the webhook payloads of
//! merge request and note events ([`webhook`]).

mod client;
pub mod webhook;

pub use client::GitLabForge;
