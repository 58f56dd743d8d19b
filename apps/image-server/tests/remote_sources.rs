//! Remote `http(s)` sources (docs/image-service.md, "Remote sources"): fetched from an origin
//! on loopback through our API, imgproxy's and thumbor's URLs, and every refusal of the
//! defences: remote sources off, a host off the list, a private or metadata address, a name
//! that resolves to loopback, a redirect to a private address or off the list, too many
//! redirects, an oversized body (announced or not), a slow body; and revalidation with the
//! origin's ETag instead of a second download.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use common::TestServer;
use image_pipeline::image::{Rgba, RgbaImage};
use image_pipeline::samples;
use serde_json::Value;

/// The origin: a picture with an ETag that can change, redirects, an oversized and a slow
/// body; it counts full and conditional requests.
#[derive(Default)]
struct Origin {
    version: AtomicUsize,
    full: AtomicUsize,
    conditional: AtomicUsize,
    not_modified: AtomicUsize,
}

/// A `width`x100 picture: red, or blue from version 1 on.
fn picture(width: u32, version: usize) -> Vec<u8> {
    let colour = if version == 0 {
        Rgba([255, 0, 0, 255])
    } else {
        Rgba([0, 0, 255, 255])
    };
    samples::png(&RgbaImage::from_pixel(width, 100, colour))
}

async fn photo(State(o): State<Arc<Origin>>, headers: HeaderMap) -> Response {
    let version = o.version.load(Ordering::SeqCst);
    let etag = format!("\"v{version}\"");
    if let Some(given) = headers.get(header::IF_NONE_MATCH) {
        o.conditional.fetch_add(1, Ordering::SeqCst);
        if given.to_str().unwrap() == etag {
            o.not_modified.fetch_add(1, Ordering::SeqCst);
            return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
        }
    } else {
        o.full.fetch_add(1, Ordering::SeqCst);
    }
    let width = if version == 0 { 400 } else { 300 };
    (
        [
            (header::ETAG, etag),
            (header::CONTENT_TYPE, "image/png".to_owned()),
        ],
        picture(width, version),
    )
        .into_response()
}

/// The photo of the lake (a real JPEG of the repository's fixtures) with a Last-Modified and
/// no ETag, as many static origins send it; If-Modified-Since of that date is a 304.
async fn lake(State(o): State<Arc<Origin>>, headers: HeaderMap) -> Response {
    const MODIFIED: &str = "Wed, 21 Oct 2026 07:28:00 GMT";
    if headers.get(header::IF_MODIFIED_SINCE).is_some() {
        o.conditional.fetch_add(1, Ordering::SeqCst);
        if headers[header::IF_MODIFIED_SINCE] == MODIFIED {
            o.not_modified.fetch_add(1, Ordering::SeqCst);
            return StatusCode::NOT_MODIFIED.into_response();
        }
    } else {
        o.full.fetch_add(1, Ordering::SeqCst);
    }
    (
        [
            (header::LAST_MODIFIED, MODIFIED),
            (header::CONTENT_TYPE, "image/jpeg"),
        ],
        common::fixture("lake.jpg"),
    )
        .into_response()
}

/// Starts the origin on 127.0.0.1; answers its port.
async fn origin() -> (u16, Arc<Origin>) {
    let state = Arc::new(Origin::default());
    let app = axum::Router::new()
        .route("/photo.png", get(photo))
        .route(
            "/moved.png",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/photo.png")]) }),
        )
        .route(
            "/to-private.png",
            get(|| async {
                (
                    StatusCode::FOUND,
                    [(header::LOCATION, "http://10.0.0.1/photo.png")],
                )
            }),
        )
        .route(
            "/to-elsewhere.png",
            get(|| async {
                (
                    StatusCode::FOUND,
                    [(header::LOCATION, "http://img.example.com/photo.png")],
                )
            }),
        )
        .route(
            "/loop.png",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/loop.png")]) }),
        )
        .route(
            "/big.png",
            get(|| async { ([(header::CONTENT_TYPE, "image/png")], vec![0u8; 300_000]) }),
        )
        .route(
            "/big-unannounced.png",
            get(|| async {
                let chunks = (0..30).map(|_| Ok::<_, std::io::Error>(vec![0u8; 10_000]));
                Body::from_stream(futures::stream::iter(chunks))
            }),
        )
        .route(
            "/slow.png",
            get(|| async {
                let head = futures::stream::once(async {
                    Ok::<_, std::io::Error>(picture(400, 0)[..100].to_vec())
                });
                let rest = futures::stream::once(async {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    Ok::<_, std::io::Error>(Vec::new())
                });
                Body::from_stream(futures::StreamExt::chain(head, rest))
            }),
        )
        .route("/lake.jpg", get(lake))
        .route("/missing.png", get(|| async { StatusCode::NOT_FOUND }))
        .with_state(Arc::clone(&state));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, state)
}

/// A server allowing `allowed` sources, loopback addresses when `loopback`; a 200 kB body
/// limit, a 1 s download limit and a 150 ms revalidation interval.
async fn server(allowed: Vec<String>, loopback: bool) -> TestServer {
    TestServer::start_local_with(move |c| {
        c.allowed_sources = allowed;
        c.allow_loopback_source_addresses = loopback;
        c.max_upload_bytes = 200_000;
        c.source_download_timeout_ms = 1000;
        c.source_etag_ttl_ms = 150;
    })
    .await
}

/// GETs `path` and answers its status, its `code` (errors) and its body.
async fn fetch(s: &TestServer, path: &str) -> (u16, String, bytes::Bytes) {
    let r = s.client.get(s.url(path)).send().await.unwrap();
    let status = r.status().as_u16();
    let body = r.bytes().await.unwrap();
    let code = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["code"].as_str().map(str::to_owned))
        .unwrap_or_default();
    (status, code, body)
}

fn error_text(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body).unwrap()["error"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn size_of(body: &[u8]) -> (u32, u32) {
    image_pipeline::decode_to_rgba(body, 10_000_000)
        .unwrap()
        .dimensions()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_source_is_served_through_our_api_and_imgproxy_and_thumbor_urls() {
    let (port, o) = origin().await;
    let s = server(vec![format!("127.0.0.1:{port}")], true).await;
    let src = format!("http://127.0.0.1:{port}/photo.png");

    let (status, _, body) = fetch(
        &s,
        &format!("/images/resize?url={src}&width=100&format=png"),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(size_of(&body), (100, 25));
    let (status, _, body) = fetch(
        &s,
        &format!("/imgproxy/unsafe/rs:fit:200:0/plain/{src}@png"),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(size_of(&body), (200, 50));
    let (status, _, body) = fetch(&s, &format!("/thumbor/unsafe/50x0/{src}")).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(size_of(&body), (50, 13));
    // A redirect to an allowed source is followed.
    let moved = format!("http://127.0.0.1:{port}/moved.png");
    let (status, _, body) = fetch(
        &s,
        &format!("/images/resize?url={moved}&width=40&format=png"),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(size_of(&body), (40, 10));
    // One download per result made: the version found by the first stays fresh for the others
    // (no revalidation), and there is no cache of source bytes, as imgproxy keeps none.
    assert_eq!(o.full.load(Ordering::SeqCst), 4);
    assert_eq!(o.conditional.load(Ordering::SeqCst), 0);
    // A missing picture is a 404, as a stored one.
    let (status, code, _) = fetch(
        &s,
        &format!("/images/resize?url=http://127.0.0.1:{port}/missing.png&width=10"),
    )
    .await;
    assert_eq!((status, code.as_str()), (404, "not_found"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_sources_are_off_without_allowed_sources() {
    let (port, o) = origin().await;
    let s = TestServer::start_local_with(|_| {}).await;
    let src = format!("http://127.0.0.1:{port}/photo.png");
    for path in [
        format!("/images/resize?url={src}&width=10"),
        format!("/thumbor/unsafe/10x0/{src}"),
    ] {
        let (status, code, body) = fetch(&s, &path).await;
        assert_eq!((status, code.as_str()), (400, "invalid_request"), "{path}");
        assert!(error_text(&body).contains("ALLOWED_SOURCES"), "{path}");
    }
    assert_eq!(o.full.load(Ordering::SeqCst), 0);
    s.stop().await;
}

/// Every refusal is a 403 `source_not_allowed` naming why, answered before any connection to a
/// refused address (the origin counts none).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_off_the_list_private_metadata_and_loopback_addresses_and_redirects_are_refused() {
    let (port, o) = origin().await;
    let on_list = vec![
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "10.0.0.1".to_owned(),
        "169.254.169.254".to_owned(),
        "[::ffff:127.0.0.1]".to_owned(),
    ];
    // Loopback allowed: the origin is reachable, so what is refused is the rule under test.
    let s = server(on_list.clone(), true).await;
    let refused = [
        (
            "http://img.example.com/photo.png".to_owned(),
            "not in ALLOWED_SOURCES",
        ),
        (
            "http://10.0.0.1/photo.png".to_owned(),
            "ALLOW_PRIVATE_SOURCE_ADDRESSES",
        ),
        (
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "ALLOW_LINK_LOCAL_SOURCE_ADDRESSES",
        ),
        (
            format!("http://127.0.0.1:{port}/to-private.png"),
            "ALLOW_PRIVATE_SOURCE_ADDRESSES",
        ),
        (
            format!("http://127.0.0.1:{port}/to-elsewhere.png"),
            "not in ALLOWED_SOURCES",
        ),
        (
            format!("http://127.0.0.1:{port}/loop.png"),
            "SOURCE_MAX_REDIRECTS",
        ),
        (
            format!("http://user:secret@127.0.0.1:{port}/photo.png"),
            "credentials",
        ),
        ("ftp://127.0.0.1/photo.png".to_owned(), "not supported"),
    ];
    for (src, why) in &refused {
        let (status, code, body) = fetch(&s, &format!("/images/resize?url={src}&width=10")).await;
        let text = String::from_utf8_lossy(&body);
        if src.starts_with("ftp:") {
            assert_eq!(status, 400, "{src}: {text}");
        } else {
            assert_eq!(
                (status, code.as_str()),
                (403, "source_not_allowed"),
                "{src}: {text}"
            );
        }
        assert!(error_text(&body).contains(why), "{src}: {text}");
    }
    assert_eq!(
        o.full.load(Ordering::SeqCst),
        0,
        "no refused source was fetched"
    );
    s.stop().await;

    // Loopback not allowed: a name that resolves to 127.0.0.1, and the literal forms of it.
    let s = server(on_list, false).await;
    for src in [
        format!("http://localhost:{port}/photo.png"),
        format!("http://127.0.0.1:{port}/photo.png"),
        format!("http://[::ffff:127.0.0.1]:{port}/photo.png"),
    ] {
        let (status, code, body) = fetch(&s, &format!("/images/resize?url={src}&width=10")).await;
        let text = String::from_utf8_lossy(&body);
        assert_eq!(
            (status, code.as_str()),
            (403, "source_not_allowed"),
            "{src}: {text}"
        );
        assert!(
            error_text(&body).contains("ALLOW_LOOPBACK_SOURCE_ADDRESSES"),
            "{src}: {text}"
        );
        if src.contains("localhost") {
            // The rule, not what the name resolved to: no address of the server's network.
            assert!(
                !text.contains("127.0.0.1") && !text.contains("::1"),
                "{src}: {text}"
            );
        }
    }
    assert_eq!(
        o.full.load(Ordering::SeqCst),
        0,
        "loopback was never reached"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_and_slow_bodies_are_cut_off() {
    let (port, _) = origin().await;
    let s = server(vec![format!("127.0.0.1:{port}")], true).await;
    for name in ["big.png", "big-unannounced.png"] {
        let src = format!("http://127.0.0.1:{port}/{name}");
        let (status, code, body) = fetch(&s, &format!("/images/resize?url={src}&width=10")).await;
        assert_eq!(
            (status, code.as_str()),
            (422, "source_too_large"),
            "{name}: {}",
            String::from_utf8_lossy(&body)
        );
        assert!(error_text(&body).contains("MAX_UPLOAD_BYTES"));
    }
    let started = Instant::now();
    let src = format!("http://127.0.0.1:{port}/slow.png");
    let (status, code, body) = fetch(&s, &format!("/images/resize?url={src}&width=10")).await;
    assert_eq!((status, code.as_str()), (502, "source_unavailable"));
    assert!(error_text(&body).contains("SOURCE_DOWNLOAD_TIMEOUT_MS"));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "cut off at the 1 s download limit, not the origin's 30 s"
    );
    s.stop().await;
}

/// Within SOURCE_ETAG_TTL_MS the origin is not asked; after it, the origin is asked with
/// If-None-Match and its 304 keeps the cached result; a changed picture is fetched and served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_source_is_revalidated_with_its_etag_not_fetched_again() {
    let (port, o) = origin().await;
    let s = server(vec![format!("127.0.0.1:{port}")], true).await;
    let url = s.url(&format!(
        "/images/resize?url=http://127.0.0.1:{port}/photo.png&width=100&format=png"
    ));
    let x_cache = |r: &reqwest::Response| r.headers()["x-cache"].to_str().unwrap().to_owned();
    let first = s.client.get(&url).send().await.unwrap();
    assert_eq!(x_cache(&first), "MISS");
    let second = s.client.get(&url).send().await.unwrap();
    assert_eq!(x_cache(&second), "HIT");
    assert_eq!(
        (
            o.full.load(Ordering::SeqCst),
            o.conditional.load(Ordering::SeqCst)
        ),
        (1, 0),
        "within the interval the origin is not asked"
    );

    tokio::time::sleep(Duration::from_millis(200)).await;
    let third = s.client.get(&url).send().await.unwrap();
    assert_eq!(x_cache(&third), "HIT");
    assert_eq!(
        (
            o.full.load(Ordering::SeqCst),
            o.not_modified.load(Ordering::SeqCst)
        ),
        (1, 1),
        "after it, one conditional request answered 304"
    );

    // The origin's picture changes: the next look fetches it and the answer follows.
    o.version.store(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let fourth = s.client.get(&url).send().await.unwrap();
    assert_eq!(x_cache(&fourth), "MISS");
    let body = fourth.bytes().await.unwrap();
    assert_eq!(size_of(&body), (100, 33), "the new 300x100 picture");
    s.stop().await;
}

/// With URL_SIGNING_KEY, a `url=` resize is signed like any other: the signature covers the
/// query, the source URL included, so a signed URL cannot be pointed at another source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_source_url_is_signed_like_any_resize() {
    const SIGNING: &str = "remote-signing-key";
    let (port, _) = origin().await;
    let s = TestServer::start_local_with(move |c| {
        c.allowed_sources = vec![format!("127.0.0.1:{port}")];
        c.allow_loopback_source_addresses = true;
        c.url_signing_key = Some(SIGNING.to_owned().into());
    })
    .await;
    let query = format!("url=http://127.0.0.1:{port}/photo.png&width=80&format=png");
    let signed = common::signature(SIGNING, &format!("?{query}"));
    let (status, _, body) = fetch(&s, &format!("/images/resize?{query}&signature={signed}")).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(size_of(&body), (80, 20));
    let (status, code, _) = fetch(&s, &format!("/images/resize?{query}")).await;
    assert_eq!((status, code.as_str()), (403, "invalid_url_signature"));
    let other = query.replace("photo.png", "moved.png");
    let (status, code, _) = fetch(&s, &format!("/images/resize?{other}&signature={signed}")).await;
    assert_eq!((status, code.as_str()), (403, "invalid_url_signature"));
    s.stop().await;
}

/// A real photo (the lake JPEG) through imgproxy's base64 source form and thumbor's URL, with
/// the sizes the photo's aspect gives; its origin sends Last-Modified only, and after
/// SOURCE_ETAG_TTL_MS the server asks with If-Modified-Since and a 304 keeps the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_photo_is_served_from_a_base64_imgproxy_source_and_revalidated_by_date() {
    use base64::Engine;
    let (port, o) = origin().await;
    let prefix = format!("http://127.0.0.1:{port}/lake");
    // The photo is over the 200 kB of the other tests: the default MAX_UPLOAD_BYTES here.
    let s = TestServer::start_local_with(move |c| {
        c.allowed_sources = vec![prefix];
        c.allow_loopback_source_addresses = true;
        c.source_etag_ttl_ms = 150;
    })
    .await;
    let (w, h) = size_of(&common::fixture("lake.jpg"));
    let src = format!("http://127.0.0.1:{port}/lake.jpg");
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&src);
    let path = format!("/imgproxy/unsafe/rs:fit:320:0/{b64}.png");
    let (status, _, body) = fetch(&s, &path).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let expected_h = (f64::from(h) * 320.0 / f64::from(w)).round() as u32;
    let (got_w, got_h) = size_of(&body);
    assert_eq!(got_w, 320);
    assert!(got_h.abs_diff(expected_h) <= 1, "{got_h} vs {expected_h}");
    let (status, _, body) = fetch(&s, &format!("/thumbor/unsafe/0x90/{src}")).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(size_of(&body).1, 90);
    assert_eq!(
        &body[..2],
        &[0xff, 0xd8],
        "thumbor answers in the source's format, JPEG"
    );

    // On our API, a source URL with a query of its own is percent-encoded whole.
    let encoded: String =
        url::form_urlencoded::byte_serialize(format!("{src}?v=2").as_bytes()).collect();
    let (status, _, body) = fetch(&s, &format!("/images/resize?url={encoded}&width=64")).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(size_of(&body).0, 64);

    // The prefix entry admits /lake.jpg and nothing else of the origin.
    let (status, code, _) = fetch(
        &s,
        &format!("/images/resize?url=http://127.0.0.1:{port}/photo.png&width=10"),
    )
    .await;
    assert_eq!((status, code.as_str()), (403, "source_not_allowed"));

    let downloads = o.full.load(Ordering::SeqCst);
    let not_modified = o.not_modified.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = s.client.get(s.url(&path)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-cache"], "HIT");
    assert_eq!(size_of(&r.bytes().await.unwrap()).0, 320);
    assert_eq!(
        (
            o.full.load(Ordering::SeqCst),
            o.not_modified.load(Ordering::SeqCst)
        ),
        (downloads, not_modified + 1),
        "revalidated with If-Modified-Since, not downloaded again"
    );
    s.stop().await;
}
