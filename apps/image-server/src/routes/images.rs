//! `GET /images/resize/{*path}` and `POST /images/upload` (docs/image-service.md §4).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequest, Multipart, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use image_pipeline::TransformSpec;
use object_store::PutPayload;
use rand::RngCore;
use serde::Deserialize;
use serde_json::json;

use crate::cache::{CacheKey, CachedImage};
use crate::error::ApiError;
use crate::failure::Failure;
use crate::source::Source;
use crate::storage::{is_unusable_path, object_path};
use crate::transform::Deadline;
use crate::{App, AppState, auth};

pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/images/resize/{*path}", get(resize))
        .route("/images/resize", get(resize_url))
        .route("/images/upload", post(upload))
}

/// The route prefix in front of a resize URL's image path.
const RESIZE_PREFIX: &str = "/images/resize/";

/// `Cache-Control` of an answer whose URL pins the source's version (`v`, see
/// [`source_version`]): a new upload to the path changes the version, so the URL never shows
/// another picture and may be kept for a year.
const PINNED_CACHE_CONTROL: &str = "public, max-age=31536000, immutable";

/// The query parameter that pins a source version (docs/image-service.md §4, Caching).
const VERSION_PARAM: &str = image_params::Name::Version.as_str();

/// The version of a source as a URL carries it: the first 64 bits of SHA-256 of its ETag in
/// hex (16 characters). The store's ETag changes whenever the object is replaced; hashing it
/// keeps quotes, slashes and the store's format out of URLs. The upload answer gives it as
/// `version`.
fn source_version(etag: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(&Sha256::digest(etag.as_bytes())[..8])
}

/// The answer's `Cache-Control`: immutable for a year when the URL's `v` is the source's
/// current version, else `public, max-age=CACHE_MAX_AGE_SECS`, since the source can be
/// replaced at the same path (a stale or absent `v` is served, not refused).
fn cache_control(app: &App, pairs: &[(String, String)], source_tag: &str) -> HeaderValue {
    let pinned = pairs
        .iter()
        .any(|(k, v)| k == VERSION_PARAM && *v == source_version(source_tag));
    if pinned {
        return HeaderValue::from_static(PINNED_CACHE_CONTROL);
    }
    app.cache_control.clone()
}

/// The source's current ETag, remembered for SOURCE_ETAG_TTL_MS.
async fn source_etag(
    app: &App,
    path: &object_store::path::Path,
    what: &str,
) -> Result<String, ApiError> {
    let key = path.to_string();
    if let Some(e) = app.etags.get(&key).await {
        return Ok(e);
    }
    let meta = app
        .store
        .head(path)
        .await
        .map_err(|e| not_found_or_storage(e, path, what))?;
    let etag = meta.e_tag.unwrap_or_else(|| {
        format!(
            "{}-{}",
            meta.size,
            meta.last_modified.timestamp_nanos_opt().unwrap_or(0)
        )
    });
    app.etags.insert(key, etag.clone()).await;
    Ok(etag)
}

pub(crate) async fn fetch(
    app: &App,
    path: &object_store::path::Path,
    what: &str,
) -> Result<Bytes, Failure> {
    let got = app
        .store
        .get(path)
        .await
        .map_err(|e| not_found_or_storage(e, path, what))?;
    got.bytes().await.map_err(|e| Failure::Storage(Arc::new(e)))
}

/// A read's failure: 404 when nothing can be at `path` (absent, or a stored file where the
/// path needs a folder), 503 when the store itself failed.
fn not_found_or_storage(
    e: object_store::Error,
    path: &object_store::path::Path,
    what: &str,
) -> Failure {
    if matches!(e, object_store::Error::NotFound { .. }) || is_unusable_path(&e) {
        Failure::NotFound(format!("{what} {path}"))
    } else {
        Failure::Storage(Arc::new(e))
    }
}

fn if_none_match_hits(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == etag || t == "*")
}

/// Serves the transformed image. Errors: 403 unsigned when URL_SIGNING_KEY is set (checked
/// first, before any other work), 400 bad parameter or path (for unsigned URLs also an
/// enlargement or grown output over the MAX_UNSIGNED_* caps), 404 no source, 415 not an image,
/// 422 undecodable or too many pixels.
async fn resize(
    State(app): State<AppState>,
    uri: Uri,
    raw_path: Result<Path<String>, PathRejection>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    headers: HeaderMap,
    extensions: axum::http::Extensions,
) -> Result<Response, ApiError> {
    let deadline = Deadline::of(&extensions, app.config.request_timeout_secs);
    if let Some(signer) = &app.signer {
        let target = uri.path().strip_prefix(RESIZE_PREFIX).unwrap_or("");
        signer.verify(target, uri.query())?;
    }
    // axum's own rejections (a path that is not UTF-8 once percent-decoded, a malformed query)
    // are plain text; answer them in JSON like every other 400.
    let Path(raw_path) =
        raw_path.map_err(|e| ApiError::BadRequest(format!("invalid path: {e}")))?;
    let Query(pairs) = query.map_err(|e| ApiError::BadRequest(format!("invalid query: {e}")))?;
    let pairs = app.presets.expand(pairs)?;
    let path = object_path(&raw_path)?;
    let limits = app.resize_limits;
    serve_resize(app, Source::Stored(path), pairs, limits, &headers, deadline).await
}

/// `GET /images/resize?url=<http(s) URL>&...`: a resize of a remote source, with the same
/// parameters and answers as a stored one (docs/image-service.md, "Remote sources"). Errors:
/// 400 without `url=` or without ALLOWED_SOURCES, 403 a wrong signature (checked first) or a
/// source the allow-list or the address rules refuse, then what a stored source's resize
/// answers, and 422 `source_too_large` / 502 `source_unavailable` for the download.
async fn resize_url(
    State(app): State<AppState>,
    uri: Uri,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    headers: HeaderMap,
    extensions: axum::http::Extensions,
) -> Result<Response, ApiError> {
    let deadline = Deadline::of(&extensions, app.config.request_timeout_secs);
    if let Some(signer) = &app.signer {
        signer.verify("", uri.query())?;
    }
    let Query(mut pairs) =
        query.map_err(|e| ApiError::BadRequest(format!("invalid query: {e}")))?;
    let mut urls = pairs.iter().filter(|(k, _)| k == URL_PARAM).map(|(_, v)| v);
    let (Some(raw), None) = (urls.next(), urls.next()) else {
        return Err(ApiError::BadRequest(
            "name one source: /images/resize/{path}, or /images/resize?url=<http(s) URL>".into(),
        ));
    };
    let source = crate::routes::compat::source(app.remote.as_ref(), "", raw)?;
    if !matches!(source, Source::Remote(_)) {
        return Err(ApiError::BadRequest(
            "url= takes an http(s) URL; a stored image is /images/resize/{path}".into(),
        ));
    }
    pairs.retain(|(k, _)| k != URL_PARAM);
    let pairs = app.presets.expand(pairs)?;
    let limits = app.resize_limits;
    serve_resize(app, source, pairs, limits, &headers, deadline).await
}

/// The query parameter that names a remote source on our own API.
const URL_PARAM: &str = "url";

/// Answers a resize of the stored image at `path` with our parameter `pairs` (presets
/// expanded) under `limits`: the one path from parameters to an image that `/images/resize`
/// and the imgproxy and thumbor URL formats share (the same [`TransformSpec`], so the same
/// cache entries, limits, admission and ETags). The caller has checked the URL's signature.
/// docs/image-service.md, "Moving from imgproxy / thumbor"
///
/// # Errors
/// 400 a bad parameter, 404 no source or watermark, 415/422 a source that cannot be read, 429
/// a full queue, 503 the store or the deadline.
pub(crate) async fn serve_resize(
    app: AppState,
    source: Source,
    pairs: Vec<(String, String)>,
    limits: image_pipeline::Limits,
    headers: &HeaderMap,
    deadline: Deadline,
) -> Result<Response, ApiError> {
    let mut spec =
        TransformSpec::from_query(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())), &limits)?;
    spec.fit_unsized_into(
        app.config.default_output_width,
        app.config.default_output_height,
    );
    let watermark_path = match spec.watermark.as_ref().and_then(|w| w.image_path()) {
        Some(p) => Some(object_path(p)?),
        None => None,
    };
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let format = spec.output_format(accept);
    // AUTO_QUALITY_FORMATS: `quality=auto` for a request that names no quality (its key says
    // `q=auto`, so results made at 80 before the switch are not served for it).
    if !spec.auto_quality
        && app.config.auto_quality_formats.contains(&format)
        && !pairs
            .iter()
            .any(|(k, _)| image_params::Name::lookup(k) == Some(image_params::Name::Quality))
    {
        spec.auto_quality = true;
    }

    // A remote source whose origin must be asked (first seen, or not confirmed within
    // SOURCE_ETAG_TTL_MS) takes its admission ticket before the download: fetching is work the
    // transform queue bounds, and the transformation then runs on that ticket.
    let (source_tag, prefetched, admitted) = match &source {
        Source::Stored(path) => (
            source_etag(&app, path, "image not found:").await?,
            None,
            None,
        ),
        Source::Remote(url) => {
            let remote = app
                .remote
                .as_ref()
                .ok_or_else(|| ApiError::BadRequest("remote sources are not enabled".into()))?;
            match remote.fresh_version(url).await {
                Some(version) => (version, None, None),
                None => {
                    let admitted = app.transforms.admit(deadline)?;
                    let found = remote.version(url).await.map_err(ApiError::from)?;
                    (found.version, found.bytes, Some(admitted))
                }
            }
        }
    };
    let mark_tag = match &watermark_path {
        Some(p) => source_etag(&app, p, "watermark not found:").await?,
        None => String::new(),
    };
    let key = CacheKey {
        path: source.cache_path(),
        variant: format!("{spec}|{}|{source_tag}|{mark_tag}", format.name()),
        ext: format.name(),
    };
    let etag = key.etag();
    let mut common = HeaderMap::new();
    common.insert(
        header::CACHE_CONTROL,
        cache_control(&app, &pairs, &source_tag),
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        common.insert(header::ETAG, v);
    }
    if spec.negotiated() {
        common.insert(header::VARY, HeaderValue::from_static("Accept"));
    }
    if if_none_match_hits(headers, &etag) {
        return Ok((StatusCode::NOT_MODIFIED, common).into_response());
    }

    let make = {
        let app = Arc::clone(&app);
        async move {
            let admitted = match admitted {
                Some(admitted) => admitted,
                None => app.transforms.admit(deadline)?,
            };
            let source = match (prefetched, &source) {
                (Some(bytes), _) => bytes,
                (None, Source::Stored(path)) => fetch(&app, path, "image not found:").await?,
                (None, Source::Remote(url)) => match &app.remote {
                    Some(remote) => remote.body(url).await?,
                    None => return Err(Failure::Internal("remote sources are off".into())),
                },
            };
            let mark = match &watermark_path {
                Some(p) => Some(fetch(&app, p, "watermark not found:").await?),
                None => None,
            };
            let out = app
                .transforms
                .resize(admitted, source, spec, format, mark, limits)
                .await?;
            Ok(CachedImage {
                bytes: Bytes::from(out.bytes),
                content_type: out.format.mime(),
                transformed: true,
            })
        }
    };
    let image = app.cache.get_or_make(&key, make).await?;
    app.metrics.resize_result(!image.transformed);
    let mut response = (StatusCode::OK, common, image.bytes.clone()).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(image.content_type),
    );
    h.insert(
        "x-cache",
        HeaderValue::from_static(if image.transformed { "MISS" } else { "HIT" }),
    );
    Ok(response)
}

/// The original SDK's JSON upload body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonUpload {
    /// Base64, or a `data:` URL.
    image: String,
    path: Option<String>,
    /// Ignored: the type is sniffed from the bytes.
    #[expect(
        dead_code,
        reason = "accepted for compatibility with clients that send it; the type is sniffed from the bytes"
    )]
    content_type: Option<String>,
}

/// The largest request body accepted for an upload of `limit` bytes: base64 JSON is 4/3 of the
/// image, plus room for the other fields.
pub(crate) fn raw_body_limit(limit: usize) -> usize {
    limit / 3 * 4 + 64 * 1024
}

/// The least a refused body is read (and dropped) before answering: 16 MiB.
const DRAIN_FLOOR: usize = 16 << 20;

/// How much of a refused request body is read and dropped before the answer is sent: four
/// times `max`, and at least [`DRAIN_FLOOR`]. Hyper closes a connection whose body is unread,
/// and a client still writing it then sees a broken pipe instead of our 401 or 413, as nginx's
/// lingering close avoids. Nothing drained is held; the request timeout bounds the time.
fn drain_cap(max: usize) -> usize {
    max.saturating_mul(4).max(DRAIN_FLOOR)
}

/// Collects up to `max` bytes of `body`. Beyond that it keeps reading and discarding (up to
/// [`drain_cap`], then gives up) and answers [`ApiError::TooLarge`] naming `limit`.
pub(crate) async fn read_body(
    body: axum::body::Body,
    max: usize,
    limit: usize,
) -> Result<Bytes, ApiError> {
    use futures::StreamExt;
    let mut stream = body.into_data_stream();
    let mut buf = Vec::new();
    let mut total = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| ApiError::BadRequest(format!("reading the body: {e}")))?;
        total = total.saturating_add(chunk.len());
        if total <= max {
            buf.extend_from_slice(&chunk);
        } else if total > drain_cap(max) {
            break;
        }
    }
    if total > max {
        return Err(ApiError::TooLarge(limit));
    }
    Ok(Bytes::from(buf))
}

/// Reads and drops up to `max` bytes of `body`, holding none of them.
async fn discard_body(body: axum::body::Body, max: usize) {
    use futures::StreamExt;
    let mut stream = body.into_data_stream();
    let mut total = 0usize;
    while let Some(Ok(chunk)) = stream.next().await {
        total = total.saturating_add(chunk.len());
        if total > max {
            break;
        }
    }
}

/// An object path as a URL path: each segment percent-encoded, the slashes kept.
fn url_path(path: &str) -> String {
    use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
    /// What a path segment may not hold unencoded (RFC 3986 pchar, minus `%`).
    const SEGMENT: &AsciiSet = &CONTROLS
        .add(b' ')
        .add(b'"')
        .add(b'#')
        .add(b'%')
        .add(b'<')
        .add(b'>')
        .add(b'?')
        .add(b'[')
        .add(b'\\')
        .add(b']')
        .add(b'^')
        .add(b'`')
        .add(b'{')
        .add(b'|')
        .add(b'}');
    path.split('/')
        .map(|s| utf8_percent_encode(s, SEGMENT).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

fn too_large_or_bad(status: StatusCode, message: String, limit: usize) -> ApiError {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::TooLarge(limit)
    } else {
        ApiError::BadRequest(message)
    }
}

/// Stores an image. Multipart (`file`, `path`, `contentType`) or JSON `{image, path,
/// contentType}`; needs the key. The type is sniffed from the bytes. Answers
/// `{"success": true, "path", "url", "contentType", "size", "version"}`: `url` is absolute
/// when PUBLIC_BASE_URL is set, `version` the [`source_version`] a URL may pin with `v`.
async fn upload(state: State<AppState>, headers: HeaderMap, request: Request) -> Response {
    match store_upload(state, headers, request).await {
        Ok(reply) => reply.into_response(),
        Err(e) => {
            // The body may be unread (refused before or while reading it): close the connection
            // so a client cannot reuse it with our unread bytes in flight.
            let mut response = e.into_response();
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            response
        }
    }
}

async fn store_upload(
    State(app): State<AppState>,
    headers: HeaderMap,
    request: Request,
) -> Result<Json<serde_json::Value>, ApiError> {
    let limit = app.config.max_upload_bytes;
    let deadline = Deadline::of(request.extensions(), app.config.request_timeout_secs);
    let (parts, body) = request.into_parts();
    // The key first: a client without it gets nothing buffered. What it is still sending is
    // read and dropped (bounded), so the 401 reaches it instead of a reset connection.
    if let Err(e) = auth::require_key(&headers, &app.api_key) {
        discard_body(body, drain_cap(raw_body_limit(limit))).await;
        return Err(e);
    }
    // Then the whole body (bounded), so that a 413 reaches the client the same way.
    let raw = read_body(body, raw_body_limit(limit), limit).await?;
    let request = Request::from_parts(parts, axum::body::Body::from(raw));
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let (bytes, raw_path) = if content_type.starts_with("multipart/form-data") {
        let mut multipart = Multipart::from_request(request, &())
            .await
            .map_err(|e| ApiError::BadRequest(e.body_text()))?;
        let (mut file, mut path) = (None, None);
        loop {
            let field = multipart
                .next_field()
                .await
                .map_err(|e| too_large_or_bad(e.status(), e.body_text(), limit))?;
            let Some(field) = field else { break };
            match field.name() {
                Some("file" | "image") => {
                    file = Some(
                        field
                            .bytes()
                            .await
                            .map_err(|e| too_large_or_bad(e.status(), e.body_text(), limit))?,
                    );
                }
                Some("path") => {
                    path = Some(
                        field
                            .text()
                            .await
                            .map_err(|e| ApiError::BadRequest(e.body_text()))?,
                    );
                }
                _ => {}
            }
        }
        let file =
            file.ok_or_else(|| ApiError::BadRequest("multipart field `file` is missing".into()))?;
        (file, path)
    } else {
        let body = Bytes::from_request(request, &())
            .await
            .map_err(|e| too_large_or_bad(e.status(), e.body_text(), limit))?;
        let parsed: JsonUpload = serde_json::from_slice(&body).map_err(|e| {
            ApiError::BadRequest(format!(
                "expected multipart/form-data or JSON {{image, path, contentType}}: {e}"
            ))
        })?;
        let b64 = match parsed.image.split_once(',') {
            Some((prefix, data)) if prefix.starts_with("data:") => data,
            _ => parsed.image.as_str(),
        };
        let b64: String = b64.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        if b64.len() / 4 * 3 > limit + 3 {
            return Err(ApiError::TooLarge(limit));
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(&b64)
            .map_err(|e| ApiError::BadRequest(format!("`image` is not valid base64: {e}")))?;
        (Bytes::from(decoded), parsed.path)
    };
    if bytes.len() > limit {
        return Err(ApiError::TooLarge(limit));
    }
    let named = match raw_path.filter(|p| !p.is_empty()) {
        Some(p) => Some(object_path(&p)?),
        None => None,
    };
    let info = app
        .transforms
        .verify(bytes.clone(), app.limits.max_source_pixels, deadline)
        .await?;
    let path = match named {
        Some(p) => p,
        None => {
            let mut id = [0u8; 12];
            rand::rng().fill_bytes(&mut id);
            let ext = info.format.extension();
            object_path(&format!("uploads/{}.{ext}", hex::encode(id)))?
        }
    };
    let size = bytes.len();
    app.store
        .put(&path, PutPayload::from_bytes(bytes))
        .await
        .map_err(|e| {
            if is_unusable_path(&e) {
                ApiError::BadRequest(format!(
                    "invalid image path: {path} cannot be stored (a stored image or folder is in \
                     the way)"
                ))
            } else {
                ApiError::Storage(e)
            }
        })?;
    app.etags.invalidate(path.as_ref()).await;
    app.cache.forget_source(path.as_ref()).await;
    tracing::info!(%path, size, format = ?info.format, "image uploaded");
    let version = source_etag(&app, &path, "image not found:")
        .await
        .map(|tag| source_version(&tag))
        .ok();
    let base = app.config.public_base_url.as_deref().unwrap_or("");
    Ok(Json(json!({
        "success": true,
        "path": path.as_ref(),
        "url": format!("{base}/images/resize/{}", url_path(path.as_ref())),
        "contentType": info.format.mime(),
        "size": size,
        "version": version,
    })))
}
