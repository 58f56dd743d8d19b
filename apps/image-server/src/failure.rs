//! Why a resize miss produced no image, in a form the result cache can share.
//!
//! Identical misses in flight are coalesced into one transformation (`cache`), and its failure
//! goes to every request that waited for it: so it is a small cloneable value, turned into an
//! [`ApiError`] (and so a status and body, docs/image-service.md §7) only at the edge.

use std::sync::Arc;

use image_pipeline::PipelineError;

use crate::error::ApiError;

/// A failed miss: what the transform service or the source fetch refused.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum Failure {
    /// The pipeline refused the source or the parameters (400, 415, 422 or 500, as
    /// [`ApiError`]'s `From<PipelineError>` maps them).
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// 404: no object at the source or watermark path; the message names it.
    #[error("{0}")]
    NotFound(String),
    /// 429: every admission ticket is taken.
    #[error("too many transformations waiting")]
    Busy,
    /// 503: the object store failed.
    #[error("storage: {0}")]
    Storage(Arc<object_store::Error>),
    /// 503: the transformation was cancelled at its request's deadline (REQUEST_TIMEOUT_SECS,
    /// given) or at shutdown, or its deadline passed before it could start.
    #[error("cancelled at the request deadline of {0} s")]
    Timeout(u64),
    /// 500: anything else; the message is logged, not sent.
    #[error("{0}")]
    Internal(String),
    /// A remote source refused or not fetched (403, 404, 422 or 502).
    #[error(transparent)]
    Remote(#[from] crate::remote::RemoteError),
}

impl From<Failure> for ApiError {
    fn from(f: Failure) -> Self {
        match f {
            Failure::Pipeline(e) => e.into(),
            Failure::NotFound(m) => Self::NotFound(m),
            Failure::Busy => Self::Busy,
            Failure::Storage(e) => Self::Storage(object_store::Error::Generic {
                store: "object store",
                source: Box::new(e),
            }),
            Failure::Timeout(secs) => Self::Timeout(secs),
            Failure::Internal(m) => Self::Internal(m),
            Failure::Remote(e) => e.into(),
        }
    }
}
