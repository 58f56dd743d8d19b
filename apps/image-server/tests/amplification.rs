//! Unsigned resize URLs cannot turn a tiny stored image into a huge output (docs/image-service.md §8):
//! the enlargement and the grown output area are capped (MAX_UNSIGNED_ENLARGE,
//! MAX_UNSIGNED_OUTPUT_PIXELS, README "Deployment"), signed URLs keep the full range, and the
//! caps are settings. Against the real server on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{KEY, TestServer, signature};
use image_pipeline::image::{Rgba, RgbaImage};
use image_pipeline::{decode_to_rgba, samples};
use pretty_assertions::assert_eq;

/// The security review's URL: a tiny PNG enlarged to 8192x8192, blurred at the largest sigma
/// and sent as PNG (24 s of CPU and 410 MB before the caps).
const AMPLIFY: &str = "width=8192&height=8192&fit=fill&enlarge=true&blur=100&format=png";

/// An 8x8 PNG of a few dozen bytes, like the review's 77-byte one.
fn tiny_png() -> Vec<u8> {
    samples::png(&RgbaImage::from_fn(8, 8, |x, y| {
        Rgba([
            u8::try_from(x * 30).unwrap(),
            u8::try_from(y * 30).unwrap(),
            128,
            255,
        ])
    }))
}

/// What a request should get: an image of this size, or a JSON 400 whose `error` contains
/// every one of these strings.
enum Want {
    Served(u32, u32),
    Refused(&'static [&'static str]),
}

/// GETs `{base}{prefix}{query}` for each case and checks what came back.
async fn expect(base: &str, prefix: &str, cases: &[(impl AsRef<str>, Want)]) {
    for (query, want) in cases {
        let query = query.as_ref();
        let r = reqwest::get(format!("{base}{prefix}{query}"))
            .await
            .unwrap();
        let status = r.status().as_u16();
        let json =
            r.headers().get("content-type").map(|v| v.as_bytes()) == Some(b"application/json");
        let body = r.bytes().await.unwrap();
        match want {
            Want::Served(w, h) => {
                assert_eq!(status, 200, "{query}: {}", String::from_utf8_lossy(&body));
                let got = decode_to_rgba(&body, u64::MAX).unwrap().dimensions();
                assert_eq!(got, (*w, *h), "{query}");
            }
            Want::Refused(says) => {
                assert_eq!((status, json), (400, true), "{query}");
                let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
                let message = v["error"].as_str().unwrap();
                for part in *says {
                    assert!(message.contains(part), "{query}: {message}");
                }
            }
        }
    }
}

/// `query` with its signature, as a client holding `key` sends it.
fn signed(key: &str, path: &str, query: &str) -> String {
    let message = format!("{path}?{query}");
    format!("{query}&signature={}", signature(key, &message))
}

/// With the default caps (enlarge at most 4 times a side, grown outputs at most 8,388,608
/// pixels) the review's URL and its variants are refused 400 from the header, naming the
/// parameter; what stays within the caps, and every output no larger than its source, is
/// served as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsigned_urls_cannot_make_a_tiny_image_huge() {
    use Want::{Refused, Served};
    let s = TestServer::start_local_with(|_| {}).await;
    s.upload("tiny.png", tiny_png()).await;
    let enlarge: &[&str] = &[
        "invalid parameter enlarge:",
        "at most 4 times",
        "MAX_UNSIGNED_ENLARGE",
        "sign the URL",
    ];
    let grown = |name: &'static str| -> Want {
        Refused(match name {
            "width" => &[
                "invalid parameter width:",
                "8388608 pixels",
                "MAX_UNSIGNED_OUTPUT_PIXELS",
                "sign the URL",
            ],
            "height" => &[
                "invalid parameter height:",
                "8388608 pixels",
                "MAX_UNSIGNED_OUTPUT_PIXELS",
            ],
            _ => &[
                "invalid parameter rotate:",
                "8388608 pixels",
                "MAX_UNSIGNED_OUTPUT_PIXELS",
            ],
        })
    };
    let cases = [
        (AMPLIFY, Refused(enlarge)),
        // Every other blur or size is a new cache key, and is refused the same way.
        (
            "width=8191&height=8192&fit=fill&enlarge=true&blur=99.5&format=png",
            Refused(enlarge),
        ),
        ("width=33&enlarge", Refused(enlarge)),
        ("width=32&height=33&fit=fill&enlarge", Refused(enlarge)),
        ("height=8&dpr=5&enlarge", Refused(enlarge)),
        ("width=300&height=300&fit=cover&enlarge", Refused(enlarge)),
        // Padding grows the output without enlarging anything.
        (
            "width=4096&height=4096&fit=contain&blur=100&format=png",
            grown("width"),
        ),
        ("width=1100&height=8192&fit=contain", grown("height")),
        // A padded box under the cap that a 45-degree turn takes over it.
        (
            "width=2896&height=2896&fit=contain&rotate=45",
            grown("rotate"),
        ),
        // Four times a side, on one side or both.
        ("width=32&enlarge&format=png", Served(32, 32)),
        (
            "width=32&height=20&fit=fill&enlarge&format=png",
            Served(32, 20),
        ),
        ("width=6&dpr=5&enlarge&format=png", Served(30, 30)),
        // Never enlarged without `enlarge`: the source's own size, whatever was asked.
        ("width=8192&height=8192&blur=100&format=png", Served(8, 8)),
        // Padded, blurred and turned, within the cap.
        (
            "width=1024&height=512&fit=contain&blur=100&rotate=90&format=png",
            Served(512, 1024),
        ),
    ];
    expect(&s.base, "/images/resize/tiny.png?", &cases).await;
    s.stop().await;
}

/// An output no larger than its source is never capped: a photo is served at its own size,
/// and turned without a size it is shrunk to fit instead of refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outputs_no_larger_than_their_source_are_not_capped() {
    use Want::{Refused, Served};
    let s = TestServer::start_local_with(|config| {
        config.max_unsigned_output_pixels = 10_000;
    })
    .await;
    let photo = samples::png(&RgbaImage::from_pixel(300, 200, Rgba([9, 99, 199, 255])));
    s.upload("photo.png", photo).await;
    let cases = [
        // 60,000 pixels, its own size.
        ("format=png", Served(300, 200)),
        // The crop's own size.
        (
            "cropWidth=100&cropHeight=100&width=100&height=100&fit=contain&format=png",
            Served(100, 100),
        ),
        // Turned by 30 degrees the box would be 360x323, over 60,000 pixels: shrunk to 258x231.
        ("rotate=30&format=png", Served(258, 231)),
        (
            "width=300&rotate=30&format=png",
            Refused(&["invalid parameter rotate:"]),
        ),
    ];
    expect(&s.base, "/images/resize/photo.png?", &cases).await;
    s.stop().await;
}

/// With URL_SIGNING_KEY set every served URL is signed, and signed URLs keep the full range:
/// what an unsigned server refuses is served. (The review's full 8192 px URL takes seconds in a
/// release build; here the caps are lowered so that small URLs stand for it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_urls_keep_the_full_range() {
    use Want::{Refused, Served};
    let lowered = |config: &mut image_server::Config| {
        config.max_unsigned_enlarge = 2.0;
        config.max_unsigned_output_pixels = 1_000;
    };
    let open = TestServer::start_local_with(lowered).await;
    let signing = TestServer::start_local_with(|config| {
        lowered(config);
        config.url_signing_key = Some("sign-me".to_owned().into());
    })
    .await;
    for s in [&open, &signing] {
        s.upload("tiny.png", tiny_png()).await;
    }
    let enlarged = "width=64&height=64&fit=fill&enlarge=true&blur=100&format=png";
    let padded = "width=100&height=100&fit=contain&format=png";
    let cases = [
        (
            AMPLIFY,
            Refused(&["invalid parameter enlarge:", "at most 2 times"]),
        ),
        (enlarged, Refused(&["invalid parameter enlarge:"])),
        (
            padded,
            Refused(&["invalid parameter width:", "up to 1000 pixels"]),
        ),
    ];
    expect(&open.base, "/images/resize/tiny.png?", &cases).await;
    let cases = [
        (signed("sign-me", "tiny.png", enlarged), Served(64, 64)),
        (signed("sign-me", "tiny.png", padded), Served(100, 100)),
    ];
    expect(&signing.base, "/images/resize/tiny.png?", &cases).await;
    open.stop().await;
    signing.stop().await;
}

/// The caps are the binary's MAX_UNSIGNED_ENLARGE and MAX_UNSIGNED_OUTPUT_PIXELS variables:
/// their values show in the refusals, 0 lifts a cap, and a value that is no cap stops the
/// binary at start with a message naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_caps_are_read_from_the_environment() {
    use Want::{Refused, Served};
    let dir = tempfile::tempdir().unwrap();
    let start = |enlarge: &str, pixels: &str| {
        common::spawn_binary(&[
            ("DATA_DIR", dir.path().join("data").display().to_string()),
            (
                "STORAGE_URL",
                format!("file://{}", dir.path().join("images").display()),
            ),
            ("API_KEY", KEY.to_owned()),
            ("MAX_UNSIGNED_ENLARGE", enlarge.to_owned()),
            ("MAX_UNSIGNED_OUTPUT_PIXELS", pixels.to_owned()),
        ])
    };

    let (mut child, base) = start("2.5", "2000");
    assert!(common::wait_healthy(&base).await);
    let r = common::upload_to(&base, "tiny.png", tiny_png()).await;
    assert_eq!(r.status(), 200);
    let cases = [
        ("width=20&enlarge&format=png", Served(20, 20)),
        (
            "width=21&enlarge&format=png",
            Refused(&["at most 2.5 times"]),
        ),
        ("width=40&height=50&fit=contain&format=png", Served(40, 50)),
        (
            "width=40&height=51&fit=contain&format=png",
            Refused(&["up to 2000 pixels"]),
        ),
    ];
    expect(&base, "/images/resize/tiny.png?", &cases).await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();

    // 0 lifts both caps.
    let (mut child, base) = start("0", "0");
    assert!(common::wait_healthy(&base).await);
    let cases = [(
        "width=80&height=60&fit=fill&enlarge&format=png",
        Served(80, 60),
    )];
    expect(&base, "/images/resize/tiny.png?", &cases).await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();

    // A factor under 1 is no cap: the binary refuses to start.
    let (child, _) = start("0.5", "0");
    let out = child.wait_with_output().await.unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("max-unsigned-enlarge") && stderr.contains("at least 1"),
        "{stderr}"
    );
}
