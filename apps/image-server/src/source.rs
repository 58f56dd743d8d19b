//! Where a request's source image lives: an object of our store, or a remote `http(s)` URL
//! (docs/image-service.md, "Remote sources"). Every route that serves a resize names its
//! source as one of these.

use reqwest::Url;

/// A resize's source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// An object of our store.
    Stored(object_store::path::Path),
    /// An allowed remote URL, checked by [`crate::remote::RemoteSources::check`].
    Remote(Url),
}

impl Source {
    /// The path its results are cached under: the object's path, or for a remote source
    /// `remote/<host>/<first 128 bits of SHA-256 of the URL, hex>`, so a purge of
    /// `remote/<host>/*` drops one origin's results (docs/image-service.md, "Cache clear").
    pub(crate) fn cache_path(&self) -> String {
        match self {
            Self::Stored(path) => path.to_string(),
            Self::Remote(url) => {
                use sha2::{Digest, Sha256};
                let digest = Sha256::digest(url.as_str().as_bytes());
                let host = url
                    .host_str()
                    .unwrap_or("-")
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .replace(':', "_");
                format!("remote/{host}/{}", hex::encode(&digest[..16]))
            }
        }
    }

    /// The file name part of the source (its last path segment), for the format its
    /// extension implies.
    pub(crate) fn file_name(&self) -> &str {
        match self {
            Self::Stored(path) => path.filename().unwrap_or(""),
            Self::Remote(url) => url.path().rsplit('/').next().unwrap_or(""),
        }
    }
}
