//! GitLab, as the review service needs it (docs/review-service.md, "GitLab"): the REST v4
//! calls of a review behind [`crate::Forge`] ([`GitLabForge`]) and the webhook payloads of
//! merge request and note events ([`webhook`]).

mod client;
pub mod webhook;

pub(crate) use client::gitlab_message;
pub use client::{
    CONTENTS_MAX_BYTES, DiffRefs, GitLabForge, GitLabProject, GitLabUser, MergeRequest,
    STATUS_DESCRIPTION_MAX_CHARS, association_of, gitlab_suggestions, is_bot_username, line_code,
    reaction_content,
};
