//! The object store behind the service (local directory, memory or S3, all through
//! `object_store`) and the validation of client-supplied object paths.
//!
//! Every path a client names passes [`object_path`] before it reaches the store: `..` and `.`
//! segments (also when they arrived percent-encoded), absolute paths, backslashes, control
//! characters and the reserved `cache/` prefix are refused, so nothing outside the storage
//! root is ever read or written.

use std::sync::Arc;

use anyhow::Context;
use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;

use crate::error::ApiError;

/// Prefix under which transformation results are persisted (the storage cache tier).
pub const CACHE_PREFIX: &str = "cache";

/// Opens the store named by STORAGE_URL (`file://DIR`, `memory://`, `s3://BUCKET`).
///
/// `s3://` reads AWS_* variables (endpoint, region, credentials, AWS_ALLOW_HTTP), then applies
/// `options` (object_store config keys such as `aws_endpoint`) on top.
///
/// # Errors
/// An unknown scheme, a directory that cannot be created, or invalid S3 settings.
pub fn open(url: &str, options: &[(String, String)]) -> anyhow::Result<Arc<dyn ObjectStore>> {
    if let Some(dir) = url.strip_prefix("file://") {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating storage directory {dir}"))?;
        let fs = LocalFileSystem::new_with_prefix(dir)
            .with_context(|| format!("opening storage directory {dir}"))?;
        return Ok(Arc::new(fs));
    }
    if url == "memory://" || url == "memory:" {
        return Ok(Arc::new(InMemory::new()));
    }
    if let Some(bucket) = url.strip_prefix("s3://") {
        let bucket = bucket.trim_end_matches('/');
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
        for (k, v) in options {
            let key = k
                .parse()
                .with_context(|| format!("unknown S3 option {k}"))?;
            builder = builder.with_config(key, v);
        }
        return Ok(Arc::new(builder.build().context("configuring S3 storage")?));
    }
    anyhow::bail!("unsupported STORAGE_URL {url:?}: use file://DIR, memory:// or s3://BUCKET")
}

/// Validates a client-supplied object path (already percent-decoded once by the router).
///
/// # Errors
/// [`ApiError::BadRequest`] naming what is wrong with the path.
pub fn object_path(raw: &str) -> Result<Path, ApiError> {
    let bad = |why: &str| Err(ApiError::BadRequest(format!("invalid image path: {why}")));
    if raw.is_empty() {
        return bad("empty");
    }
    if raw.len() > 1024 {
        return bad("longer than 1024 bytes");
    }
    if raw.starts_with('/') {
        return bad("absolute paths are not allowed");
    }
    if raw.contains('\\') {
        return bad("backslashes are not allowed");
    }
    if raw.chars().any(char::is_control) {
        return bad("control characters are not allowed");
    }
    // A second layer of encoding (`%252e%252e` arriving as `%2e%2e`) is refused too.
    if raw.contains('%') {
        return bad("percent signs are not allowed");
    }
    for segment in raw.split('/') {
        match segment {
            "" => return bad("empty segments (//) are not allowed"),
            "." | ".." => return bad("dot segments are not allowed"),
            _ => {}
        }
    }
    if raw == CACHE_PREFIX || raw.starts_with(&format!("{CACHE_PREFIX}/")) {
        return bad("the cache/ prefix is reserved");
    }
    Path::parse(raw).or_else(|_| bad("not a valid object path"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traversal_and_absolute_paths_are_refused() {
        for p in [
            "../etc/passwd",
            "a/../../b",
            "./a",
            "/etc/passwd",
            "a\\..\\b",
            "a//b",
            "%2e%2e/x",
            "a\0b",
            "cache/x.webp",
            "",
        ] {
            assert!(object_path(p).is_err(), "{p:?} was accepted");
        }
    }

    #[test]
    fn ordinary_paths_are_kept_as_they_are() {
        for p in ["photo.jpg", "folder/sub/file name.heic", "a.b/c..d.png"] {
            assert_eq!(object_path(p).unwrap().as_ref(), p);
        }
    }
}
