//! The GitLab REST v4 client (to be written).

/// [`crate::Forge`] over GitLab's REST API v4.
pub struct GitLabForge;
