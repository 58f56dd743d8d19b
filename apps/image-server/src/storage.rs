//! The object store behind the service (local directory, memory, S3, Azure Blob Storage or
//! Google Cloud Storage, all through `object_store`) and the validation of client-supplied
//! object paths.
//!
//! Every path a client names passes [`object_path`] before it reaches the store: `..` and `.`
//! segments (also when they arrived percent-encoded), absolute paths, backslashes, control
//! characters and the reserved `cache/` prefix are refused, so nothing outside the storage
//! root is ever read or written.

use std::sync::Arc;

use anyhow::Context;
use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;

use crate::error::ApiError;

/// Prefix under which transformation results are persisted (the storage cache tier).
pub(crate) const CACHE_PREFIX: &str = "cache";

/// Opens the store named by STORAGE_URL: `file://DIR`, `memory://`, `s3://BUCKET`,
/// `az://CONTAINER` (or `azure://`) or `gs://BUCKET` (docs/image-service.md, "Object stores").
///
/// Each cloud store reads its own environment first (`AWS_*`; `AZURE_STORAGE_*`, e.g.
/// AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY; `GOOGLE_*`, e.g.
/// GOOGLE_SERVICE_ACCOUNT), then applies `options`, object_store config keys such as
/// `aws_endpoint`, `azure_storage_endpoint` or `google_service_account`, on top.
///
/// # Errors
/// An unknown scheme or option, a directory that cannot be created, or invalid settings.
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
    let name = |rest: &str| rest.trim_end_matches('/').to_owned();
    if let Some(bucket) = url.strip_prefix("s3://") {
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(name(bucket));
        for (k, v) in options {
            let key = k
                .parse()
                .with_context(|| format!("unknown S3 option {k}"))?;
            builder = builder.with_config(key, v);
        }
        return Ok(Arc::new(builder.build().context("configuring S3 storage")?));
    }
    if let Some(container) = url
        .strip_prefix("az://")
        .or_else(|| url.strip_prefix("azure://"))
    {
        let mut builder = MicrosoftAzureBuilder::from_env().with_container_name(name(container));
        for (k, v) in options {
            let key = k
                .parse()
                .with_context(|| format!("unknown Azure option {k}"))?;
            builder = builder.with_config(key, v);
        }
        let store = builder.build().context("configuring Azure Blob Storage")?;
        return Ok(Arc::new(store));
    }
    if let Some(bucket) = url.strip_prefix("gs://") {
        let mut builder = GoogleCloudStorageBuilder::from_env().with_bucket_name(name(bucket));
        for (k, v) in options {
            let key = k
                .parse()
                .with_context(|| format!("unknown GCS option {k}"))?;
            builder = builder.with_config(key, v);
        }
        let store = builder
            .build()
            .context("configuring Google Cloud Storage")?;
        return Ok(Arc::new(store));
    }
    anyhow::bail!(
        "unsupported STORAGE_URL {url:?}: use file://DIR, memory://, s3://BUCKET, az://CONTAINER or gs://BUCKET"
    )
}

/// Longest accepted segment of an object path, in bytes.
const MAX_SEGMENT_BYTES: usize = 240;

/// Whether a store error means the path cannot name an object there: a stored file where the
/// path needs a folder (`a.jpg/b.jpg`), a folder where it needs a file, or a name the file
/// system refuses. The local store reports these as generic I/O errors; they are the client's
/// path, not an unavailable store.
pub(crate) fn is_unusable_path(e: &object_store::Error) -> bool {
    use std::io::ErrorKind;
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                ErrorKind::NotADirectory
                    | ErrorKind::IsADirectory
                    | ErrorKind::AlreadyExists
                    | ErrorKind::InvalidFilename
            );
        }
        cause = c.source();
    }
    false
}

/// Validates a client-supplied object path (already percent-decoded once by the router).
///
/// # Errors
/// [`ApiError::BadRequest`] naming what is wrong with the path.
pub(crate) fn object_path(raw: &str) -> Result<Path, ApiError> {
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
            // File systems cap a name at 255 bytes; the local store adds a few for its
            // staging files. The same cap on every backend keeps paths portable.
            s if s.len() > MAX_SEGMENT_BYTES => {
                return bad("a segment is longer than 240 bytes");
            }
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

    /// Each scheme opens its store with its own options; an option of another store, or a
    /// scheme we do not know, is refused naming it. (Azure is exercised against Azurite in
    /// tests/api.rs; GCS has no emulator that installs here: docs/image-service.md, "Object
    /// stores".)
    #[test]
    fn every_store_scheme_opens_with_its_own_options() {
        let opt = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let azure = [
            opt("azure_storage_account_name", "acct"),
            opt("azure_storage_account_key", "a2V5"),
        ];
        for url in ["az://photos", "azure://photos/"] {
            let store = open(url, &azure).unwrap();
            assert!(store.to_string().contains("photos"), "{store}");
        }
        let gcs = [opt("google_bucket", "photos")];
        let store = open("gs://photos", &gcs).unwrap();
        assert!(store.to_string().contains("photos"), "{store}");
        let e = open("az://photos", &[opt("aws_endpoint", "http://x")]).unwrap_err();
        assert!(
            format!("{e:#}").contains("unknown Azure option aws_endpoint"),
            "{e:#}"
        );
        let e = open("ftp://photos", &[]).unwrap_err();
        assert!(
            e.to_string().contains("az://CONTAINER or gs://BUCKET"),
            "{e}"
        );
    }

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
            &"x".repeat(241),
            &format!("a/{}/b.jpg", "y".repeat(241)),
        ] {
            assert!(object_path(p).is_err(), "{p:?} was accepted");
        }
    }

    #[test]
    fn ordinary_paths_are_kept_as_they_are() {
        let long = format!("{}.jpg", "n".repeat(236));
        for p in [
            "photo.jpg",
            "folder/sub/file name.heic",
            "a.b/c..d.png",
            &long,
        ] {
            assert_eq!(object_path(p).unwrap().as_ref(), p);
        }
    }
}
