//! What the imgproxy and thumbor URL formats share: their sources mapped onto our store, our
//! own resize parameters built from their options, and the one resize path they end in
//! (docs/image-service.md, "Moving from imgproxy / thumbor").
//!
//! Neither format has parameters of its own here: each option becomes pairs of our
//! `image_params::Name`s, which `TransformSpec::from_query` reads exactly as it reads
//! `/images/resize`'s query, so caching, limits, admission and ETags are shared.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use image_params::{Format, Name};

use crate::error::ApiError;
use crate::routes::images::serve_resize;
use crate::storage::object_path;
use crate::transform::Deadline;
use crate::{AppState, unsigned_caps};

/// Longest path after a format's prefix that is parsed at all (the object path itself is held
/// to 1024 bytes; options and a base64 source take the rest).
pub(crate) const MAX_URL_PATH: usize = 8192;

/// Most options (imgproxy) or parts and filters (thumbor) one URL may hold.
pub(crate) const MAX_OPTIONS: usize = 64;

pub(crate) use crate::source::Source;

/// Maps a source as the URL names it: `local:///a/b.jpg` (imgproxy's local files, rooted at
/// the store), `s3://BUCKET/a/b.jpg` when STORAGE_URL is `s3://BUCKET`, a plain path `a/b.jpg`
/// (a leading `/` is dropped), or an `http(s)` URL when `remote` (ALLOWED_SOURCES) is set.
///
/// # Errors
/// 400 `invalid_request`: an `http(s)` source without ALLOWED_SOURCES ("remote sources are
/// not enabled"), another bucket or scheme, or a path our store refuses (docs/image-service.md
/// §2); 403 `source_not_allowed`: a remote source the allow-list or the address rules refuse.
pub(crate) fn source(
    remote: Option<&crate::remote::RemoteSources>,
    storage_url: &str,
    raw: &str,
) -> Result<Source, ApiError> {
    let path = if let Some(rest) = raw.strip_prefix("local://") {
        rest
    } else if let Some(rest) = raw.strip_prefix("s3://") {
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        let ours = storage_url
            .strip_prefix("s3://")
            .map(|b| b.split(['/', '?']).next().unwrap_or(b));
        if ours != Some(bucket) {
            return Err(ApiError::BadRequest(format!(
                "source bucket {bucket:?} is not this server's store (STORAGE_URL)"
            )));
        }
        key
    } else if raw.starts_with("http://") || raw.starts_with("https://") {
        let Some(remote) = remote else {
            return Err(ApiError::BadRequest(
                "remote sources are not enabled (ALLOWED_SOURCES): the source must be a path in \
                 this server's store"
                    .into(),
            ));
        };
        return remote
            .check(raw)
            .map(Source::Remote)
            .map_err(ApiError::from);
    } else if let Some((scheme, _)) = raw.split_once("://") {
        return Err(ApiError::BadRequest(format!(
            "source scheme {:?} is not supported (local://, s3:// or a path)",
            scheme.chars().take(20).collect::<String>()
        )));
    } else {
        raw
    };
    Ok(Source::Stored(object_path(path.trim_start_matches('/'))?))
}

/// The URL formats served beside our own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// imgproxy's, under IMGPROXY_PREFIX.
    Imgproxy,
    /// thumbor's, under THUMBOR_PREFIX.
    Thumbor,
}

/// `GET {prefix}/{*rest}` of either format: its signature checked first (403 before any other
/// work), its options read into our parameters, then answered as `/images/resize` answers
/// them.
///
/// # Errors
/// 403 a wrong signature; 400 an option that is malformed or not supported (named), a remote
/// source, a bad path; then what `/images/resize` answers.
pub(crate) async fn handle(
    kind: Kind,
    State(app): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
    request: Request,
) -> Result<Response, ApiError> {
    let deadline = Deadline::of(request.extensions(), app.config.request_timeout_secs);
    let (prefix, name) = match kind {
        Kind::Imgproxy => (app.config.imgproxy_prefix.as_str(), "imgproxy"),
        Kind::Thumbor => (app.config.thumbor_prefix.as_str(), "thumbor"),
    };
    let (signature, path) = split_signature(uri.path(), prefix, name)?;
    let (signed, source, pairs) = match kind {
        Kind::Imgproxy => super::imgproxy::read(&app, signature, path).await?,
        Kind::Thumbor => super::thumbor::read(&app, signature, path).await?,
    };
    serve(app, source, pairs, signed, &headers, deadline).await
}

/// The signature segment of a URL under `prefix` (the request's raw `path`) and the rest after
/// it, from its `/`, as sent; `what` names the format in errors.
///
/// # Errors
/// 400 `invalid_request` when the URL is longer than [`MAX_URL_PATH`] or has nothing after
/// the signature.
pub(crate) fn split_signature<'a>(
    path: &'a str,
    prefix: &str,
    what: &str,
) -> Result<(&'a str, &'a str), ApiError> {
    let rest = path.strip_prefix(prefix).unwrap_or("");
    if rest.len() > MAX_URL_PATH {
        return Err(ApiError::BadRequest(format!("{what} URL is too long")));
    }
    let rest = rest.strip_prefix('/').unwrap_or(rest);
    match rest.find('/') {
        Some(i) => Ok((&rest[..i], &rest[i..])),
        None => Err(ApiError::BadRequest(format!("{what} URL names no image"))),
    }
}

/// What a parsed URL's options start from: its source mapped onto the store ([`source`]), the
/// format implied by the source's extension, and, when `needs_size`, the source's size
/// ([`source_size`]).
///
/// # Errors
/// As [`source`] and [`source_size`].
pub(crate) async fn prepare(
    app: &AppState,
    raw_source: &str,
    needs_size: bool,
) -> Result<(Source, Pairs, Option<(u32, u32)>), ApiError> {
    let source = source(app.remote.as_ref(), &app.config.storage_url, raw_source)?;
    let mut pairs = Pairs::default();
    if let Some(f) = format_of_source(source.file_name()) {
        pairs.imply(Name::Format, f.name());
    }
    let size = if needs_size {
        Some(source_size(app, &source).await?)
    } else {
        None
    };
    Ok((source, pairs, size))
}

/// Our resize parameters, built option by option; a later setting of a name replaces the
/// earlier one (both formats let a later option win). Defaults are what the format implies
/// when neither the URL nor a preset it names sets the parameter.
#[derive(Debug, Default, Clone)]
pub(crate) struct Pairs {
    set: Vec<(String, String)>,
    defaults: Vec<(Name, String)>,
}

impl Pairs {
    /// Sets `name` to `value` unless the URL or a preset sets it.
    pub(crate) fn imply(&mut self, name: Name, value: impl ToString) {
        self.defaults.retain(|(n, _)| *n != name);
        self.defaults.push((name, value.to_string()));
    }

    /// Sets `name` to `value`, replacing an earlier value.
    pub(crate) fn set(&mut self, name: Name, value: impl ToString) {
        self.unset(name);
        self.set.push((name.as_str().to_owned(), value.to_string()));
    }

    /// Removes `name`.
    pub(crate) fn unset(&mut self, name: Name) {
        self.set.retain(|(k, _)| k != name.as_str());
    }

    /// The value of `name`, if set.
    #[cfg(test)]
    pub(crate) fn get(&self, name: Name) -> Option<&str> {
        self.set
            .iter()
            .find(|(k, _)| k == name.as_str())
            .map(|(_, v)| v.as_str())
    }
}

/// The format a result has when the URL names none: the source's own, by the extension of its
/// path, as imgproxy and thumbor answer; WebP (our default) when the extension names no
/// format we write.
pub(crate) fn format_of_source(path: &str) -> Option<Format> {
    let ext = path.rsplit_once('.')?.1;
    match Format::parse(ext)? {
        f @ (Format::Jpeg | Format::Png | Format::Webp | Format::Avif | Format::Gif) => Some(f),
        _ => None,
    }
}

/// A format both formats name: `jpg`/`jpeg`, `png`, `webp`, `avif`, `gif`.
///
/// # Errors
/// 400 naming `option` for any other (`bmp`, `tiff`, `heic`, `best`...).
pub(crate) fn output_format(option: &str, value: &str) -> Result<Format, ApiError> {
    match Format::parse(value) {
        Some(f @ (Format::Jpeg | Format::Png | Format::Webp | Format::Avif | Format::Gif)) => Ok(f),
        _ => Err(unsupported(
            option,
            &format!(
                "format {:?} (jpeg, png, webp, avif, gif)",
                value.chars().take(20).collect::<String>()
            ),
        )),
    }
}

/// 400 `invalid_parameter` naming an option (or one of its values) that is not supported.
pub(crate) fn unsupported(option: &str, what: &str) -> ApiError {
    ApiError::InvalidParameter(format!(
        "{}: {what} is not supported by this server",
        option.chars().take(40).collect::<String>()
    ))
}

/// 400 `invalid_parameter`: `option`'s value cannot be read.
pub(crate) fn malformed(option: &str, value: &str) -> ApiError {
    ApiError::InvalidParameter(format!(
        "{}: invalid value {:?}",
        option.chars().take(40).collect::<String>(),
        value.chars().take(40).collect::<String>()
    ))
}

/// A number of `option` in `range` (finite).
///
/// # Errors
/// 400 naming `option` when `value` is not such a number.
pub(crate) fn number(
    option: &str,
    value: &str,
    range: std::ops::RangeInclusive<f64>,
) -> Result<f64, ApiError> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && range.contains(n))
        .ok_or_else(|| malformed(option, value))
}

/// The oriented width and height of a stored source, read from its header (for the options
/// whose pixels depend on the source's size: imgproxy's crop, focus point and `auto`; thumbor's
/// focal point).
///
/// # Errors
/// 404 no source, 415/422 not a readable image, 503 the store.
pub(crate) async fn source_size(app: &AppState, source: &Source) -> Result<(u32, u32), ApiError> {
    let bytes = match source {
        Source::Stored(path) => super::images::fetch(app, path, "image not found:").await?,
        Source::Remote(url) => {
            let remote = app
                .remote
                .as_ref()
                .ok_or_else(|| ApiError::BadRequest("remote sources are not enabled".into()))?;
            remote.body(url).await.map_err(ApiError::from)?
        }
    };
    let max = app.limits.max_source_pixels;
    let info = tokio::task::spawn_blocking(move || image_pipeline::probe(&bytes, max))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))??;
    Ok(info.oriented_size())
}

/// The window of a `source` (width, height) with the aspect ratio of `target` (width, height)
/// that holds as much of the source as it can and whose centre is as near the focus point
/// (`fx`, `fy`, shares 0..=1 of the width and height) as the edges allow: imgproxy's
/// `fp:x:y` gravity and thumbor's focal point for a cover crop. Answers left, top, width,
/// height in source pixels.
pub(crate) fn focus_window(source: (u32, u32), target: (u32, u32), fx: f64, fy: f64) -> [u32; 4] {
    let (sw, sh) = (f64::from(source.0.max(1)), f64::from(source.1.max(1)));
    let (tw, th) = (f64::from(target.0.max(1)), f64::from(target.1.max(1)));
    let scale = (tw / sw).max(th / sh);
    let (cw, ch) = (
        (tw / scale).round().clamp(1.0, sw),
        (th / scale).round().clamp(1.0, sh),
    );
    let left = (fx * sw - cw / 2.0).round().clamp(0.0, sw - cw);
    let top = (fy * sh - ch / 2.0).round().clamp(0.0, sh - ch);
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "every value is clamped to 0..=the source's u32 size"
    )]
    [left as u32, top as u32, cw as u32, ch as u32]
}

/// Serves `source` with `pairs`, presets expanded (PRESETS_ONLY holds the URL's own
/// options) and then the defaults added where nothing set them: under the full limits when the URL's format requires
/// signatures (it was verified), under the MAX_UNSIGNED_* caps when it is open.
///
/// # Errors
/// As [`serve_resize`].
pub(crate) async fn serve(
    app: AppState,
    source: Source,
    pairs: Pairs,
    signed: bool,
    headers: &HeaderMap,
    deadline: Deadline,
) -> Result<Response, ApiError> {
    let limits = if signed {
        app.limits
    } else {
        unsigned_caps(&app.config, app.limits)
    };
    let mut expanded = app.presets.expand(pairs.set)?;
    for (name, value) in pairs.defaults {
        let given = expanded.iter().any(|(k, _)| {
            Name::lookup(k) == Some(name)
                || (name == Name::Zoom
                    && matches!(Name::lookup(k), Some(Name::Width | Name::Height)))
        });
        if !given {
            expanded.push((name.as_str().to_owned(), value));
        }
    }
    serve_resize(app, source, expanded, limits, headers, deadline).await
}

/// Deterministic strings of `tokens` for the parsers' no-panic tests: `count` of them, each of
/// up to 12 tokens.
#[cfg(test)]
pub(crate) fn token_soup(tokens: &[&str], count: usize) -> Vec<String> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(state >> 33).unwrap_or(0)
    };
    (0..count)
        .map(|_| {
            let n = next() % 12 + 1;
            (0..n).map(|_| tokens[next() % tokens.len()]).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_map_onto_the_store_and_remote_ones_are_refused() {
        let stored = |s: &str| object_path(s).map(Source::Stored).ok();
        let source = |store: &str, raw: &str| source(None, store, raw);
        assert_eq!(
            source("file://x", "local:///a/b.jpg").ok(),
            stored("a/b.jpg")
        );
        assert_eq!(source("file://x", "a/b.jpg").ok(), stored("a/b.jpg"));
        assert_eq!(
            source("s3://bkt", "s3://bkt/a/b.jpg").ok(),
            stored("a/b.jpg")
        );
        assert!(source("s3://bkt", "s3://other/a.jpg").is_err());
        assert!(source("file://x", "s3://bkt/a.jpg").is_err());
        let remote = source("file://x", "https://example.com/a.jpg").unwrap_err();
        assert!(
            remote
                .to_string()
                .contains("remote sources are not enabled"),
            "{remote}"
        );
        assert!(source("file://x", "gs://b/a.jpg").is_err());
        assert!(source("file://x", "local:///../etc/passwd").is_err());
    }

    #[test]
    fn the_focus_window_centres_on_the_point_within_the_edges() {
        // A 400x200 source into a square: a 200x200 window, centred on the point within the
        // edges.
        for (fx, fy, want) in [
            (0.5, 0.5, [100, 0, 200, 200]),
            (0.0, 0.5, [0, 0, 200, 200]),
            (1.0, 0.0, [200, 0, 200, 200]),
            (0.6, 0.5, [140, 0, 200, 200]),
        ] {
            assert_eq!(
                focus_window((400, 200), (100, 100), fx, fy),
                want,
                "{fx} {fy}"
            );
        }
    }
}
