//! The API key of upload and admin endpoints (docs/image-service.md §5: `X-API-Key`, the
//! original's header, or `Authorization: Bearer <key>`; resize and health are open).

use anyhow::Context;
use axum::http::HeaderMap;
use rand::RngCore;
use secrecy::{ExposeSecret, SecretString};
use subtle::ConstantTimeEq;

use crate::config::Config;
use crate::error::ApiError;

/// API_KEY when set; otherwise the key in DATA_DIR/api-key, generated on first start.
///
/// # Errors
/// The key file cannot be read or written.
pub(crate) fn load_or_generate(config: &Config) -> anyhow::Result<SecretString> {
    if let Some(key) = &config.api_key
        && !key.expose_secret().is_empty()
    {
        return Ok(key.clone());
    }
    let file = config.data_dir.join("api-key");
    if let Ok(existing) = std::fs::read_to_string(&file) {
        let existing = existing.trim();
        if !existing.is_empty() {
            tracing::info!(file = %file.display(), "API_KEY unset: using the key stored in this file");
            return Ok(SecretString::from(existing.to_owned()));
        }
    }
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating {}", config.data_dir.display()))?;
    let mut raw = [0u8; 32];
    rand::rng().fill_bytes(&mut raw);
    let key = hex::encode(raw);
    write_private(&file, &key).with_context(|| format!("writing {}", file.display()))?;
    tracing::warn!(file = %file.display(), "API_KEY unset: generated a key into this file");
    Ok(SecretString::from(key))
}

#[cfg(unix)]
fn write_private(path: &std::path::Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(contents.as_bytes())
}

#[cfg(not(unix))]
fn write_private(path: &std::path::Path, contents: &str) -> std::io::Result<()> {
    std::fs::write(path, contents)
}

/// Checks the request's key in constant time.
///
/// # Errors
/// [`ApiError::Unauthorized`] when no key is sent or it differs.
pub(crate) fn require_key(headers: &HeaderMap, expected: &SecretString) -> Result<(), ApiError> {
    let sent = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .or_else(|| {
            headers
                .get(axum::http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| {
                    v.strip_prefix("Bearer ")
                        .or_else(|| v.strip_prefix("bearer "))
                })
        })
        .map(str::trim)
        .ok_or(ApiError::Unauthorized)?;
    let expected = expected.expose_secret().as_bytes();
    if sent.as_bytes().ct_eq(expected).into() {
        Ok(())
    } else {
        Err(ApiError::Unauthorized)
    }
}
