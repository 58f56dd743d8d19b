//! The dashboard: the single-page app of docs/review-service.md §1, served by this server
//! from `dashboard/dist` (docs/architecture.md, Dashboard).
//!
//! Release builds embed the built files in the binary (rust-embed); debug builds read
//! `dashboard/dist` from disk on every request, so `npm run build` shows on reload. The build
//! writes a `.br` and a `.gz` copy next to every compressible file; [`respond`] picks the one
//! the request's Accept-Encoding prefers (br, then gzip, then the plain file).
//!
//! Rules, in order:
//! - a path whose first segment is `api`, `health`, `webhook` or `internal` keeps the JSON 404
//!   of docs/review-service.md §7: those prefixes belong to the API;
//! - a request other than GET or HEAD gets the same JSON 404;
//! - a file of the build is served as it is; a missing file under `/assets/` is a plain 404
//!   (a stale hashed chunk answered with HTML would only fail as a script);
//! - every other GET gets `index.html`, so the app's router handles deep links;
//! - without a build, `/` and the other app paths answer 503 with one line saying how to build.
//!
//! Headers: hashed files under `/assets/` are `public, max-age=31536000, immutable`; everything
//! else `no-cache` (revalidated through its ETag). Every answer carries a Content-Security-Policy
//! limited to 'self' (Vite's build needs no inline script) and `nosniff`.

use crate::error::not_found;
use crate::state::AppState;
use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use std::borrow::Cow;
use std::path::PathBuf;

/// The Content-Security-Policy of every dashboard response: nothing but this origin.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; \
    base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

/// Cache-Control of content-hashed files under `/assets/`: one year, never revalidated.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The one line `/` answers when the dashboard was never built.
pub const NOT_BUILT: &str = "The dashboard is not built: install Node.js 20.19 or newer and run \
    `npm ci && npm run build` in dashboard/ (or rebuild review-server, whose build script does it).";

/// Path prefixes (first segment) that belong to the API, never to the app.
const API_SEGMENTS: [&str; 4] = ["api", "health", "webhook", "internal"];

/// One file of the build: its bytes and a hash of them (for the ETag).
#[derive(Debug, Clone)]
pub struct Asset {
    /// The file's content, as stored (a `.br` or `.gz` copy is already compressed).
    pub bytes: Cow<'static, [u8]>,
    /// SHA-256 of `bytes`; its first 16 bytes, hex, are the ETag.
    pub sha256: [u8; 32],
}

/// Where the built files come from: the embedded build, or a folder (tests).
pub trait AssetSource: Send + Sync {
    /// The file at `path` (relative, `/`-separated, e.g. `assets/index-3f2a.js`), if any.
    fn get(&self, path: &str) -> Option<Asset>;
}

#[derive(rust_embed::RustEmbed)]
#[folder = "../../dashboard/dist"]
#[allow_missing = true]
struct Dist;

/// The build of `dashboard/dist`: embedded in release builds, read from disk in debug builds.
pub struct Embedded;

impl AssetSource for Embedded {
    fn get(&self, path: &str) -> Option<Asset> {
        Dist::get(path).map(|f| Asset {
            bytes: f.data,
            sha256: f.metadata.sha256_hash(),
        })
    }
}

/// A folder of built files on disk, read on every request.
pub struct Folder(pub PathBuf);

impl AssetSource for Folder {
    fn get(&self, path: &str) -> Option<Asset> {
        let bytes = std::fs::read(self.0.join(path)).ok()?;
        use sha2::Digest;
        let sha256 = sha2::Sha256::digest(&bytes).into();
        Some(Asset {
            bytes: Cow::Owned(bytes),
            sha256,
        })
    }
}

/// Every path no other route matches, any method: answered by [`respond`] from the build.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", any(serve))
        .route("/{*path}", any(serve))
}

/// The dashboard for app paths, the JSON 404 for everything else.
async fn serve(req: Request) -> Response {
    respond(&Embedded, req.method(), req.uri().path(), req.headers()).await
}

/// Answer one request from `source` by the rules of the module documentation.
pub async fn respond(
    source: &dyn AssetSource,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Response {
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    if API_SEGMENTS.contains(&first) || (method != Method::GET && method != Method::HEAD) {
        return not_found().await;
    }
    let Some(rel) = file_path(path) else {
        return not_found().await;
    };
    let encodings = accepted(headers);
    if let Some(resp) = serve_file(source, &rel, &encodings, headers) {
        return resp;
    }
    if rel.starts_with("assets/") {
        return text(StatusCode::NOT_FOUND, "Not found");
    }
    serve_file(source, "index.html", &encodings, headers)
        .unwrap_or_else(|| text(StatusCode::SERVICE_UNAVAILABLE, NOT_BUILT))
}

/// The relative file path of a URL path: `index.html` for `/`; `None` for a path that tries
/// to leave the folder (`..`, a backslash, an empty or hidden segment).
fn file_path(path: &str) -> Option<String> {
    let rel = path.trim_start_matches('/');
    if rel.is_empty() {
        return Some("index.html".to_owned());
    }
    let rel = rel.trim_end_matches('/');
    let bad = rel.contains('\\')
        || rel.contains('\0')
        || rel.split('/').any(|s| s.is_empty() || s.starts_with('.'));
    (!bad).then(|| rel.to_owned())
}

/// A content coding the build has precompressed copies for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    Brotli,
    Gzip,
}

impl Coding {
    fn suffix(self) -> &'static str {
        match self {
            Coding::Brotli => ".br",
            Coding::Gzip => ".gz",
        }
    }
    fn name(self) -> &'static str {
        match self {
            Coding::Brotli => "br",
            Coding::Gzip => "gzip",
        }
    }
}

/// The precompressed codings the request accepts, most preferred first (RFC 9110 section
/// 12.5.3: a q of 0 refuses a coding, `*` stands for any coding not listed; on equal q, br
/// first, as it is smaller).
fn accepted(headers: &HeaderMap) -> Vec<Coding> {
    let mut listed: Vec<(String, f32)> = Vec::new();
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            if name.is_empty() {
                continue;
            }
            let mut q = 1.0f32;
            for p in parts {
                if let Some(v) = p.trim().strip_prefix("q=").or(p.trim().strip_prefix("Q=")) {
                    q = v
                        .trim()
                        .parse::<f32>()
                        .ok()
                        .filter(|q| q.is_finite())
                        .unwrap_or(0.0);
                }
            }
            listed.push((name, q.clamp(0.0, 1.0)));
        }
    }
    let star = listed.iter().find(|(n, _)| n == "*").map(|(_, q)| *q);
    let q_of = |name: &str| {
        listed
            .iter()
            .find(|(n, _)| n == name || (name == "gzip" && n == "x-gzip"))
            .map(|(_, q)| *q)
            .or(star)
            .unwrap_or(0.0)
    };
    let mut out: Vec<(Coding, f32)> = [Coding::Brotli, Coding::Gzip]
        .into_iter()
        .map(|c| (c, q_of(c.name())))
        .filter(|(_, q)| *q > 0.0)
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out.into_iter().map(|(c, _)| c).collect()
}

/// `rel` from `source`, as the most preferred precompressed copy that exists, else plain.
fn serve_file(
    source: &dyn AssetSource,
    rel: &str,
    encodings: &[Coding],
    req: &HeaderMap,
) -> Option<Response> {
    let plain = source.get(rel)?;
    let chosen = encodings.iter().find_map(|c| {
        source
            .get(&format!("{rel}{}", c.suffix()))
            .map(|asset| (Some(*c), asset))
    });
    let (coding, asset) = chosen.unwrap_or((None, plain));
    let etag = format!(
        "\"{}{}\"",
        hex::encode(&asset.sha256[..16]),
        coding.map_or("", |c| c.suffix())
    );
    let mut resp = if if_none_match(req, &etag) {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        Response::new(Body::from(asset.bytes))
    };
    let h = resp.headers_mut();
    let mime = mime_guess::from_path(rel).first_or_octet_stream();
    if let Ok(v) = HeaderValue::from_str(mime.as_ref()) {
        h.insert(header::CONTENT_TYPE, v);
    }
    if let Some(c) = coding {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(c.name()));
    }
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    let cache = if rel.starts_with("assets/") {
        IMMUTABLE
    } else {
        "no-cache"
    };
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    security_headers(h);
    Some(resp)
}

/// Whether If-None-Match names `etag` (or is `*`).
fn if_none_match(req: &HeaderMap, etag: &str) -> bool {
    req.get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == etag || t == "*")
}

fn security_headers(h: &mut HeaderMap) {
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
}

fn text(status: StatusCode, body: &'static str) -> Response {
    let mut resp = (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response();
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    security_headers(resp.headers_mut());
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const INDEX: &str = "<!doctype html><div id=root></div>";

    /// A build folder: index.html, a hashed script with .br and .gz copies, a hashed style
    /// without copies, an icon at the root.
    fn build() -> (tempfile::TempDir, Folder) {
        let dir = tempfile::tempdir().unwrap();
        let assets = dir.path().join("assets");
        std::fs::create_dir_all(&assets).unwrap();
        std::fs::write(dir.path().join("index.html"), INDEX).unwrap();
        std::fs::write(assets.join("app-1a2b.js"), "console.log(1)").unwrap();
        std::fs::write(assets.join("app-1a2b.js.br"), "BROTLI").unwrap();
        std::fs::write(assets.join("app-1a2b.js.gz"), "GZIP").unwrap();
        std::fs::write(assets.join("app-1a2b.css"), "body{}").unwrap();
        std::fs::write(dir.path().join("favicon.svg"), "<svg/>").unwrap();
        let folder = Folder(dir.path().to_owned());
        (dir, folder)
    }

    async fn get(source: &dyn AssetSource, path: &str, accept: Option<&str>) -> Response {
        let mut h = HeaderMap::new();
        if let Some(a) = accept {
            h.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(a).unwrap());
        }
        respond(source, &Method::GET, path, &h).await
    }

    async fn body(resp: Response) -> String {
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    fn header_of(resp: &Response, name: header::HeaderName) -> &str {
        resp.headers().get(name).map_or("", |v| v.to_str().unwrap())
    }

    #[tokio::test]
    async fn app_paths_fall_back_to_index_html_without_caching() {
        let (_d, src) = build();
        for path in [
            "/",
            "/reviews",
            "/reviews/42",
            "/repos/acme/widgets",
            "/stats?x=1",
        ] {
            let resp = get(&src, path, None).await;
            assert_eq!(resp.status(), StatusCode::OK, "{path}");
            assert_eq!(
                header_of(&resp, header::CONTENT_TYPE),
                "text/html",
                "{path}"
            );
            assert_eq!(header_of(&resp, header::CACHE_CONTROL), "no-cache");
            assert_eq!(header_of(&resp, header::CONTENT_SECURITY_POLICY), CSP);
            assert_eq!(body(resp).await, INDEX);
        }
    }

    #[tokio::test]
    async fn api_prefixes_keep_the_json_404() {
        let (_d, src) = build();
        for path in [
            "/api",
            "/api/nope",
            "/api/reviews/1/nothing",
            "/health/x",
            "/webhook",
            "/webhook/bitbucket",
            "/internal/x",
        ] {
            let resp = get(&src, path, None).await;
            assert_eq!(resp.status(), StatusCode::NOT_FOUND, "{path}");
            assert_eq!(
                header_of(&resp, header::CONTENT_TYPE),
                "application/json",
                "{path}"
            );
            assert_eq!(
                body(resp).await,
                r#"{"error":"not found","code":"not_found"}"#
            );
        }
    }

    #[tokio::test]
    async fn writes_outside_the_api_are_json_404s_not_the_app() {
        let (_d, src) = build();
        for method in [Method::POST, Method::PUT, Method::DELETE, Method::PATCH] {
            let resp = respond(&src, &method, "/reviews", &HeaderMap::new()).await;
            assert_eq!(resp.status(), StatusCode::NOT_FOUND);
            assert_eq!(
                body(resp).await,
                r#"{"error":"not found","code":"not_found"}"#
            );
        }
    }

    #[tokio::test]
    async fn hashed_assets_are_immutable_and_other_files_revalidate() {
        let (_d, src) = build();
        let css = get(&src, "/assets/app-1a2b.css", None).await;
        assert_eq!(header_of(&css, header::CACHE_CONTROL), IMMUTABLE);
        assert_eq!(header_of(&css, header::CONTENT_TYPE), "text/css");
        assert_eq!(header_of(&css, header::CONTENT_SECURITY_POLICY), CSP);
        let icon = get(&src, "/favicon.svg", None).await;
        assert_eq!(header_of(&icon, header::CACHE_CONTROL), "no-cache");
        assert_eq!(header_of(&icon, header::CONTENT_TYPE), "image/svg+xml");
    }

    #[tokio::test]
    async fn the_precompressed_copy_follows_accept_encoding() {
        let (_d, src) = build();
        let cases = [
            (None, None, "console.log(1)"),
            (Some("gzip, deflate, br, zstd"), Some("br"), "BROTLI"),
            (Some("gzip"), Some("gzip"), "GZIP"),
            (Some("br;q=0, gzip"), Some("gzip"), "GZIP"),
            (Some("br;q=0.5, gzip;q=0.8"), Some("gzip"), "GZIP"),
            (Some("gzip;q=0, br;q=0"), None, "console.log(1)"),
            (Some("*"), Some("br"), "BROTLI"),
            (Some("*;q=0"), None, "console.log(1)"),
            (Some("identity"), None, "console.log(1)"),
            (Some("br;q=nonsense, gzip"), Some("gzip"), "GZIP"),
            (Some(";;,, ,q=1"), None, "console.log(1)"),
        ];
        for (accept, coding, expected) in cases {
            let resp = get(&src, "/assets/app-1a2b.js", accept).await;
            assert_eq!(resp.status(), StatusCode::OK, "{accept:?}");
            assert_eq!(
                resp.headers()
                    .get(header::CONTENT_ENCODING)
                    .map(|v| v.to_str().unwrap()),
                coding,
                "{accept:?}"
            );
            assert_eq!(header_of(&resp, header::CONTENT_TYPE), "text/javascript");
            assert_eq!(header_of(&resp, header::VARY), "accept-encoding");
            assert_eq!(body(resp).await, expected, "{accept:?}");
        }
        // A file without copies is served plain whatever the request accepts.
        let css = get(&src, "/assets/app-1a2b.css", Some("br, gzip")).await;
        assert_eq!(css.headers().get(header::CONTENT_ENCODING), None);
        assert_eq!(body(css).await, "body{}");
    }

    #[tokio::test]
    async fn a_matching_etag_answers_304() {
        let (_d, src) = build();
        let first = get(&src, "/", None).await;
        let etag = header_of(&first, header::ETAG).to_owned();
        assert!(etag.starts_with('"') && etag.len() > 10, "{etag}");
        let mut h = HeaderMap::new();
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_str(&etag).unwrap());
        let again = respond(&src, &Method::GET, "/", &h).await;
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(body(again).await, "");
        // The compressed copy has its own tag: a cached plain copy is not revalidated as br.
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("br"));
        let br = respond(&src, &Method::GET, "/assets/app-1a2b.js", &h).await;
        assert_eq!(br.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_missing_hashed_asset_is_a_plain_404_not_html() {
        let (_d, src) = build();
        let resp = get(&src, "/assets/app-old.js", None).await;
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            header_of(&resp, header::CONTENT_TYPE),
            "text/plain; charset=utf-8"
        );
    }

    #[tokio::test]
    async fn paths_that_leave_the_build_folder_are_refused() {
        let outer = tempfile::tempdir().unwrap();
        std::fs::write(outer.path().join("secret.txt"), "SECRET").unwrap();
        let dist = outer.path().join("dist");
        std::fs::create_dir_all(&dist).unwrap();
        std::fs::write(dist.join("index.html"), INDEX).unwrap();
        let src = Folder(dist);
        for path in [
            "/../secret.txt",
            "/assets/../../secret.txt",
            "/..%2fsecret.txt",
            "/.env",
            "/a//b",
            "/x\\..\\secret.txt",
        ] {
            let resp = get(&src, path, None).await;
            let text = body(resp).await;
            assert!(!text.contains("SECRET"), "{path}: {text}");
        }
    }

    #[tokio::test]
    async fn without_a_build_the_app_paths_say_how_to_build_in_one_line() {
        let empty = tempfile::tempdir().unwrap();
        let src = Folder(empty.path().to_owned());
        let resp = get(&src, "/", None).await;
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        let text = body(resp).await;
        assert_eq!(text, NOT_BUILT);
        assert!(!text.contains('\n'));
        let api = get(&src, "/api/nope", None).await;
        assert_eq!(api.status(), StatusCode::NOT_FOUND);
    }
}
