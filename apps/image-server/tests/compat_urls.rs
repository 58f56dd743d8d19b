//! imgproxy's and thumbor's URL formats
//! (docs/image-service.md, "Moving from imgproxy / thumbor"), with URLs written by their official builders: `@imgproxy/imgproxy-node` run by
//! node and `libthumbor` run by python, both from tests/url-clients (`npm ci` there, and a
//! `.venv` with its requirements.txt; .ci/run installs both). Every mapped option, signed and
//! unsigned, against the real server on loopback; the answers are decoded and their size,
//! crop (pixel colours) and format checked. Without the builders the test is skipped on a
//! developer's machine and fails under CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::TestServer;
use image_pipeline::image::{Rgba, RgbaImage};
use image_pipeline::samples;
use serde_json::{Value, json};

const IMGPROXY_KEY: &str = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881";
const IMGPROXY_SALT: &str = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5";
const THUMBOR_KEY: &str = "thumbor-security-key";

const RED: [u8; 3] = [255, 0, 0];
const GREEN: [u8; 3] = [0, 255, 0];
const BLUE: [u8; 3] = [0, 0, 255];
const YELLOW: [u8; 3] = [255, 255, 0];
const WHITE: [u8; 3] = [255, 255, 255];

/// The folder of the builders' scripts and packages.
fn clients() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/url-clients")
}

/// The python of the builders' venv (`THUMBOR_CLIENT_PYTHON` overrides it).
fn python() -> PathBuf {
    std::env::var_os("THUMBOR_CLIENT_PYTHON")
        .map_or_else(|| clients().join(".venv/bin/python"), PathBuf::from)
}

/// Whether the venv's python imports libthumbor.
fn thumbor_importable() -> bool {
    std::process::Command::new(python())
        .args(["-c", "import libthumbor"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether both builders are installed; under CI their absence fails the test.
fn builders_installed() -> bool {
    let node = clients().join("node_modules/@imgproxy/imgproxy-node/package.json");
    let missing: Vec<String> = [
        (!node.exists()).then(|| format!("{} (npm ci in tests/url-clients)", node.display())),
        (!thumbor_importable()).then(|| {
            format!(
                "{} (python3 -m venv .venv && .venv/bin/pip install -r requirements.txt in \
                 tests/url-clients)",
                python().display()
            )
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        !common::under_ci(),
        "the official URL builders are missing under CI: {missing:?}"
    );
    eprintln!("skipped: the official URL builders are missing: {missing:?}");
    false
}

/// Runs `program script` with `input` on stdin and parses its JSON array of URLs.
fn run(program: &std::path::Path, script: &str, input: &Value) -> Vec<String> {
    use std::io::Write;
    let mut child = std::process::Command::new(program)
        .arg(clients().join(script))
        .current_dir(clients())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running {}: {e}", program.display()));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{script} failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The URLs imgproxy-node builds for `requests` (`[source, displayAs, options]`), signed with
/// our test key and salt when `signed`.
fn imgproxy_urls(base: &str, signed: bool, requests: &[(&str, &str, Value)]) -> Vec<String> {
    let input: Vec<Value> = requests
        .iter()
        .map(|(source, display, options)| {
            let mut r = json!({"endpoint": format!("{base}/imgproxy"), "source": source,
                "displayAs": display, "options": options});
            if signed {
                r["key"] = json!(IMGPROXY_KEY);
                r["salt"] = json!(IMGPROXY_SALT);
            }
            r
        })
        .collect();
    run(
        std::path::Path::new("node"),
        "imgproxy_urls.cjs",
        &json!(input),
    )
}

/// The URLs (paths from the prefix on) libthumbor builds for `options`, signed when `signed`.
fn thumbor_urls(signed: bool, options: &[Value]) -> Vec<String> {
    let key = signed.then_some(THUMBOR_KEY);
    let input: Vec<Value> = options
        .iter()
        .map(|o| json!({"key": key, "options": o}))
        .collect();
    run(&python(), "thumbor_urls.py", &json!(input))
}

/// A 400x200 picture in four quadrants: red, green (top), blue, yellow (bottom).
fn quadrants() -> RgbaImage {
    RgbaImage::from_fn(400, 200, |x, y| {
        let [r, g, b] = match (x < 200, y < 100) {
            (true, true) => RED,
            (false, true) => GREEN,
            (true, false) => BLUE,
            (false, false) => YELLOW,
        };
        Rgba([r, g, b, 255])
    })
}

/// A 100x100 white picture with a red 50x50 square in its middle (for trim).
fn framed() -> RgbaImage {
    RgbaImage::from_fn(100, 100, |x, y| {
        if (25..75).contains(&x) && (25..75).contains(&y) {
            Rgba([255, 0, 0, 255])
        } else {
            Rgba([255, 255, 255, 255])
        }
    })
}

/// What an answer must be.
#[derive(Debug, Clone)]
struct Expect {
    size: (u32, u32),
    /// `image/png`...
    mime: &'static str,
    /// Pixels (x, y) and the colour each must be near.
    pixels: Vec<(u32, u32, [u8; 3])>,
    /// Largest body, for max_bytes.
    max_bytes: Option<usize>,
    /// Every pixel gray (r = g = b).
    gray: bool,
}

fn expect(size: (u32, u32), mime: &'static str) -> Expect {
    Expect {
        size,
        mime,
        pixels: Vec::new(),
        max_bytes: None,
        gray: false,
    }
}

impl Expect {
    fn at(mut self, x: u32, y: u32, colour: [u8; 3]) -> Self {
        self.pixels.push((x, y, colour));
        self
    }
}

/// GETs `url` and checks the answer against `want`.
async fn check(client: &reqwest::Client, label: &str, url: &str, want: &Expect) {
    let r = client.get(url).send().await.unwrap();
    let status = r.status();
    let mime = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = r.bytes().await.unwrap();
    assert_eq!(
        status,
        200,
        "{label}: {url}: {}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(mime, want.mime, "{label}: {url}");
    if let Some(max) = want.max_bytes {
        assert!(body.len() <= max, "{label}: {} bytes", body.len());
    }
    let img = image_pipeline::decode_to_rgba(&body, 100_000_000).unwrap();
    assert_eq!(img.dimensions(), want.size, "{label}: {url}");
    for &(x, y, colour) in &want.pixels {
        let p = img.get_pixel(x, y).0;
        let near = p[..3].iter().zip(colour).all(|(a, b)| a.abs_diff(b) <= 40);
        assert!(
            near,
            "{label}: {url}: pixel ({x}, {y}) is {p:?}, expected {colour:?}"
        );
    }
    if want.gray {
        assert!(
            img.pixels().all(|p| p[0] == p[1] && p[1] == p[2]),
            "{label}: not gray"
        );
    }
}

/// GETs `url` and returns the status and the JSON body.
async fn error(client: &reqwest::Client, url: &str) -> (u16, Value) {
    let r = client.get(url).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// Starts a server with the quadrant and framed pictures, a watermark and a preset; signed
/// sets the imgproxy and thumbor keys.
async fn server(signed: bool) -> TestServer {
    let presets = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(presets.path(), "small = width=40&height=40&fit=cover\n").unwrap();
    let file = presets.path().to_owned();
    let s = TestServer::start_local_with(move |c| {
        c.presets_file = Some(file);
        c.imgproxy_watermark_path = Some("marks/wm.png".into());
        if signed {
            c.imgproxy_key = Some(IMGPROXY_KEY.to_owned().into());
            c.imgproxy_salt = Some(IMGPROXY_SALT.to_owned().into());
            c.thumbor_security_key = Some(THUMBOR_KEY.to_owned().into());
        }
    })
    .await;
    drop(presets);
    for (path, bytes) in pictures() {
        s.put_raw(path, bytes).await;
    }
    s
}

/// The pictures every case reads: the quadrants, the framed square and a 20x20 black mark.
fn pictures() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("pics/q.png", samples::png(&quadrants())),
        ("pics/framed.png", samples::png(&framed())),
        (
            "marks/wm.png",
            samples::png(&RgbaImage::from_pixel(20, 20, Rgba([0, 0, 0, 255]))),
        ),
    ]
}

const PNG: &str = "image/png";

/// A case of the quadrant picture by a plain `local://` source.
fn plain(
    label: &'static str,
    options: Value,
    want: Expect,
) -> (&'static str, &'static str, &'static str, Value, Expect) {
    (label, "local:///pics/q.png", "plain", options, want)
}

/// Every mapped imgproxy option, as imgproxy-node writes it, and what imgproxy answers.
fn imgproxy_cases() -> Vec<(&'static str, &'static str, &'static str, Value, Expect)> {
    let q = "local:///pics/q.png";
    vec![
        plain(
            "fit",
            json!({"resizing_type": "fit", "width": 100, "height": 100}),
            expect((100, 50), PNG).at(10, 10, RED).at(90, 40, YELLOW),
        ),
        plain(
            "resize",
            json!({"resize": {"resizing_type": "fill", "width": 100, "height": 100}}),
            expect((100, 100), PNG).at(10, 10, RED).at(90, 90, YELLOW),
        ),
        plain(
            "size + gravity west",
            json!({"size": {"width": 100, "height": 100}, "resizing_type": "fill", "gravity": {"type": "we"}}),
            expect((100, 100), PNG).at(50, 10, RED).at(50, 90, BLUE),
        ),
        plain(
            "gravity east",
            json!({"width": 100, "height": 100, "resizing_type": "fill", "gravity": {"type": "ea"}}),
            expect((100, 100), PNG).at(50, 10, GREEN).at(50, 90, YELLOW),
        ),
        plain(
            "gravity sm",
            json!({"width": 100, "height": 100, "resizing_type": "fill", "gravity": {"type": "sm"}}),
            expect((100, 100), PNG),
        ),
        plain(
            "focus point",
            json!({"width": 100, "height": 100, "resizing_type": "fill", "gravity": {"type": "fp", "x": 1, "y": 0}}),
            expect((100, 100), PNG).at(10, 10, GREEN).at(90, 90, YELLOW),
        ),
        plain(
            "fill-down",
            json!({"width": 100, "height": 100, "resizing_type": "fill-down"}),
            expect((100, 100), PNG).at(5, 5, RED).at(95, 95, YELLOW),
        ),
        plain(
            "fill, source smaller than the box",
            json!({"width": 800, "height": 800, "resizing_type": "fill"}),
            expect((400, 200), PNG),
        ),
        plain(
            "fill-down, source smaller than the box",
            json!({"width": 800, "height": 800, "resizing_type": "fill-down"}),
            expect((200, 200), PNG).at(5, 5, RED).at(195, 195, YELLOW),
        ),
        plain(
            "fill, source shorter than the box",
            json!({"width": 300, "height": 300, "resizing_type": "fill"}),
            expect((300, 200), PNG).at(5, 5, RED).at(295, 195, YELLOW),
        ),
        plain(
            "fill extended to a box larger than the source",
            json!({"width": 800, "height": 800, "resizing_type": "fill", "extend": {"extend": 1}}),
            expect((800, 800), PNG)
                .at(210, 310, RED)
                .at(590, 490, YELLOW),
        ),
        plain(
            "extend with a background",
            json!({"width": 100, "height": 100, "extend": {"extend": 1}, "background": "00ff00"}),
            expect((100, 100), PNG).at(50, 5, GREEN).at(20, 30, RED),
        ),
        plain(
            "force",
            json!({"width": 50, "height": 50, "resizing_type": "force"}),
            expect((50, 50), PNG).at(5, 5, RED).at(45, 45, YELLOW),
        ),
        plain(
            "auto (landscape into portrait: fit)",
            json!({"width": 100, "height": 200, "resizing_type": "auto"}),
            expect((100, 50), PNG),
        ),
        plain(
            "auto (landscape into landscape: fill)",
            json!({"width": 100, "height": 80, "resizing_type": "auto"}),
            expect((100, 80), PNG),
        ),
        plain("height only", json!({"height": 50}), expect((100, 50), PNG)),
        plain("no enlarge", json!({"width": 800}), expect((400, 200), PNG)),
        plain(
            "enlarge",
            json!({"width": 800, "enlarge": 1}),
            expect((800, 400), PNG),
        ),
        plain(
            "extend",
            json!({"width": 100, "height": 100, "extend": {"extend": 1}}),
            expect((100, 100), PNG).at(20, 30, RED),
        ),
        plain(
            "crop",
            json!({"crop": {"width": 200, "height": 100, "gravity": {"type": "nowe"}}}),
            expect((200, 100), PNG).at(5, 5, RED).at(195, 95, RED),
        ),
        plain(
            "relative crop, south-east",
            json!({"crop": {"width": 0.5, "height": 0.5, "gravity": {"type": "soea"}}}),
            expect((200, 100), PNG).at(100, 50, YELLOW),
        ),
        (
            "trim",
            "local:///pics/framed.png",
            "plain",
            json!({"trim": {"threshold": 10}}),
            expect((50, 50), PNG).at(25, 25, RED),
        ),
        plain(
            "padding",
            json!({"width": 100, "padding": {"top": 10, "right": 5}}),
            expect((110, 70), PNG).at(7, 15, RED),
        ),
        plain(
            "rotate",
            json!({"width": 100, "rotate": 90}),
            expect((50, 100), PNG).at(45, 5, RED).at(5, 95, YELLOW),
        ),
        plain(
            "blur",
            json!({"width": 100, "blur": 2}),
            expect((100, 50), PNG),
        ),
        plain(
            "sharpen",
            json!({"width": 100, "sharpen": 1}),
            expect((100, 50), PNG),
        ),
        plain(
            "pixelate",
            json!({"width": 100, "pixelate": 5}),
            expect((100, 50), PNG).at(10, 10, RED),
        ),
        plain(
            "watermark",
            json!({"width": 100, "watermark": {"opacity": 1, "position": "soea"}}),
            expect((100, 50), PNG).at(98, 48, [0, 0, 0]).at(10, 10, RED),
        ),
        plain(
            "quality + format",
            json!({"width": 100, "quality": 50, "format": "jpg"}),
            expect((100, 50), "image/jpeg").at(10, 10, RED),
        ),
        plain(
            "extension",
            json!({"width": 100, "format": "webp"}),
            expect((100, 50), "image/webp"),
        ),
        plain(
            "dpr",
            json!({"width": 100, "dpr": 2}),
            expect((200, 100), PNG),
        ),
        plain(
            "strip_metadata",
            json!({"width": 100, "strip_metadata": 1}),
            expect((100, 50), PNG),
        ),
        plain(
            "max_bytes",
            json!({"width": 300, "max_bytes": 3000, "format": "jpg"}),
            Expect {
                max_bytes: Some(3000),
                ..expect((300, 150), "image/jpeg")
            },
        ),
        plain(
            "preset",
            json!({"preset": ["small"]}),
            expect((40, 40), PNG),
        ),
        plain(
            "cachebuster",
            json!({"width": 100, "cachebuster": "v2"}),
            expect((100, 50), PNG),
        ),
        (
            "base64 source",
            q,
            "base64",
            json!({"width": 100}),
            expect((100, 50), PNG),
        ),
        (
            "plain path source",
            "pics/q.png",
            "base64",
            json!({"width": 100}),
            expect((100, 50), PNG),
        ),
    ]
}

/// Every mapped thumbor part and filter, as libthumbor writes it, and what thumbor answers.
fn thumbor_cases() -> Vec<(&'static str, Value, Expect)> {
    let img = "pics/q.png";
    vec![
        (
            "crop to fill",
            json!({"image_url": img, "width": 100, "height": 100}),
            expect((100, 100), PNG).at(5, 5, RED).at(95, 95, YELLOW),
        ),
        (
            "halign left",
            json!({"image_url": img, "width": 100, "height": 100, "halign": "left"}),
            expect((100, 100), PNG).at(50, 10, RED).at(50, 90, BLUE),
        ),
        (
            "halign right, valign top",
            json!({"image_url": img, "width": 100, "height": 100, "halign": "right", "valign": "top"}),
            expect((100, 100), PNG).at(50, 10, GREEN).at(50, 90, YELLOW),
        ),
        (
            "smart",
            json!({"image_url": img, "width": 100, "height": 100, "smart": true}),
            expect((100, 100), PNG),
        ),
        (
            "fit-in",
            json!({"image_url": img, "width": 100, "height": 100, "fit_in": true}),
            expect((100, 50), PNG).at(10, 10, RED),
        ),
        (
            "adaptive-fit-in (the box turned to the source's orientation)",
            json!({"image_url": img, "width": 100, "height": 200, "adaptive_fit_in": true}),
            expect((200, 100), PNG),
        ),
        (
            "full-fit-in (the smaller side fits)",
            json!({"image_url": img, "width": 100, "height": 100, "full_fit_in": true}),
            expect((200, 100), PNG),
        ),
        (
            "proportional",
            json!({"image_url": img, "width": 100}),
            expect((100, 50), PNG),
        ),
        (
            "upscaled by default",
            json!({"image_url": img, "width": 800}),
            expect((800, 400), PNG),
        ),
        (
            "flip",
            json!({"image_url": img, "width": 100, "flip": true}),
            expect((100, 50), PNG).at(10, 10, GREEN).at(90, 10, RED),
        ),
        (
            "flop",
            json!({"image_url": img, "width": 100, "height": 50, "flop": true}),
            expect((100, 50), PNG).at(10, 10, BLUE).at(10, 40, RED),
        ),
        (
            "manual crop",
            json!({"image_url": img, "crop": [[200, 100], [400, 200]]}),
            expect((200, 100), PNG).at(5, 5, YELLOW).at(195, 95, YELLOW),
        ),
        (
            "orig width (the source's own)",
            json!({"image_url": img, "width": "orig", "height": 100}),
            expect((400, 100), PNG).at(5, 5, RED).at(395, 95, YELLOW),
        ),
        (
            "orig height after a manual crop (the crop's own)",
            json!({"image_url": img, "crop": [[200, 100], [400, 200]], "width": 50, "height": "orig"}),
            expect((50, 100), PNG).at(25, 50, YELLOW),
        ),
        (
            "trim",
            json!({"image_url": "pics/framed.png", "trim": true}),
            expect((50, 50), PNG).at(25, 25, RED),
        ),
        (
            "quality + format",
            json!({"image_url": img, "width": 100, "filters": ["quality(50)", "format(jpeg)"]}),
            expect((100, 50), "image/jpeg").at(10, 10, RED),
        ),
        (
            "format webp",
            json!({"image_url": img, "width": 100, "filters": ["format(webp)"]}),
            expect((100, 50), "image/webp"),
        ),
        (
            "blur",
            json!({"image_url": img, "width": 100, "filters": ["blur(3)"]}),
            expect((100, 50), PNG),
        ),
        (
            "grayscale",
            json!({"image_url": img, "width": 100, "filters": ["grayscale()"]}),
            Expect {
                gray: true,
                ..expect((100, 50), PNG)
            },
        ),
        (
            "rotate (counter-clockwise)",
            json!({"image_url": img, "width": 100, "filters": ["rotate(90)"]}),
            expect((50, 100), PNG).at(5, 5, GREEN).at(45, 95, BLUE),
        ),
        (
            "fill",
            json!({"image_url": img, "width": 100, "height": 100, "fit_in": true, "filters": ["fill(ffffff)"]}),
            expect((100, 100), PNG).at(50, 5, WHITE).at(20, 30, RED),
        ),
        (
            "max_bytes",
            json!({"image_url": img, "width": 300, "filters": ["format(jpeg)", "max_bytes(3000)"]}),
            Expect {
                max_bytes: Some(3000),
                ..expect((300, 150), "image/jpeg")
            },
        ),
        (
            "strip_exif",
            json!({"image_url": img, "width": 100, "filters": ["strip_exif()"]}),
            expect((100, 50), PNG),
        ),
        (
            "no_upscale",
            json!({"image_url": img, "width": 800, "filters": ["no_upscale()"]}),
            expect((400, 200), PNG),
        ),
        (
            "focal",
            json!({"image_url": img, "width": 100, "height": 100, "filters": ["focal(300x0:400x100)"]}),
            expect((100, 100), PNG).at(10, 10, GREEN).at(90, 90, YELLOW),
        ),
        (
            "watermark",
            json!({"image_url": img, "width": 100, "filters": ["watermark(marks/wm.png,-0,-0,0)"]}),
            expect((100, 50), PNG).at(98, 48, [0, 0, 0]).at(10, 10, RED),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imgproxy_urls_from_its_own_builder_are_answered_as_imgproxy_would() {
    if !builders_installed() {
        return;
    }
    for signed in [false, true] {
        let s = server(signed).await;
        let cases = imgproxy_cases();
        let requests: Vec<(&str, &str, Value)> = cases
            .iter()
            .map(|(_, src, d, o, _)| (*src, *d, o.clone()))
            .collect();
        let urls = imgproxy_urls(&s.base, signed, &requests);
        for ((label, .., want), url) in cases.iter().zip(&urls) {
            check(&s.client, &format!("{label} (signed: {signed})"), url, want).await;
        }
        // Unsupported options are named, remote sources refused.
        let bad = imgproxy_urls(
            &s.base,
            signed,
            &[
                (
                    "local:///pics/q.png",
                    "plain",
                    json!({"width": 10, "brightness": 10}),
                ),
                ("https://example.com/a.jpg", "plain", json!({"width": 10})),
                (
                    "s3://other-bucket/pics/q.png",
                    "plain",
                    json!({"width": 10}),
                ),
            ],
        );
        let (status, body) = error(&s.client, &bad[0]).await;
        assert_eq!(status, 400, "{body}");
        assert!(body["error"].as_str().unwrap().contains("br"), "{body}");
        let (status, body) = error(&s.client, &bad[1]).await;
        assert_eq!(status, 400, "{body}");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("remote sources are not enabled")
        );
        assert_eq!(error(&s.client, &bad[2]).await.0, 400);
        if signed {
            // A wrong or missing signature is refused before any work.
            let good = &urls[0];
            let (head, tail) = good.split_at(s.base.len() + "/imgproxy/".len());
            let wrong = format!("{head}AAAA{}", &tail[4..]);
            let (status, body) = error(&s.client, &wrong).await;
            assert_eq!(
                (status, body["code"].as_str()),
                (403, Some("invalid_url_signature"))
            );
            let insecure = imgproxy_urls(&s.base, false, &requests[..1]);
            assert_eq!(error(&s.client, &insecure[0]).await.0, 403);
            let tampered = good.replace("w:100", "w:101").replace("100:100", "100:101");
            assert_eq!(error(&s.client, &tampered).await.0, 403);
        }
        s.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thumbor_urls_from_its_own_builder_are_answered_as_thumbor_would() {
    if !builders_installed() {
        return;
    }
    for signed in [false, true] {
        let s = server(signed).await;
        let cases = thumbor_cases();
        let options: Vec<Value> = cases.iter().map(|(_, o, _)| o.clone()).collect();
        let paths = thumbor_urls(signed, &options);
        for ((label, _, want), path) in cases.iter().zip(&paths) {
            let url = s.url(&format!("/thumbor{path}"));
            check(
                &s.client,
                &format!("{label} (signed: {signed})"),
                &url,
                want,
            )
            .await;
        }
        let bad = thumbor_urls(
            signed,
            &[
                json!({"image_url": "pics/q.png", "width": 10, "filters": ["sepia()"]}),
                json!({"image_url": "http://example.com/a.jpg", "width": 10}),
            ],
        );
        let (status, body) = error(&s.client, &s.url(&format!("/thumbor{}", bad[0]))).await;
        assert_eq!(status, 400, "{body}");
        assert!(body["error"].as_str().unwrap().contains("sepia"), "{body}");
        let (status, body) = error(&s.client, &s.url(&format!("/thumbor{}", bad[1]))).await;
        assert_eq!(status, 400, "{body}");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("remote sources are not enabled")
        );
        if signed {
            let wrong = paths[0].replacen('/', "/AAAA", 1);
            let (status, body) = error(&s.client, &s.url(&format!("/thumbor{wrong}"))).await;
            assert_eq!(
                (status, body["code"].as_str()),
                (403, Some("invalid_url_signature"))
            );
            let unsafe_url = thumbor_urls(false, &options[..1]);
            let unsafe_url = s.url(&format!("/thumbor{}", unsafe_url[0]));
            assert_eq!(error(&s.client, &unsafe_url).await.0, 403);
            let tampered = s.url(&format!(
                "/thumbor{}",
                paths[0].replace("100x100", "100x101")
            ));
            assert_eq!(error(&s.client, &tampered).await.0, 403);
        }
        s.stop().await;
    }
}

/// thumbor itself (7.x from PyPI, installed beside libthumbor in the builders' venv) answers
/// every thumbor case, signed and unsigned, with what the case expects of us: size, crop,
/// format and colours. So the expectations our answers are held to are thumbor's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thumbor_itself_answers_every_thumbor_case_as_the_case_expects() {
    let thumbor = clients().join(".venv/bin/thumbor");
    if !thumbor.exists() || !builders_installed() {
        assert!(
            !common::under_ci(),
            "thumbor is missing under CI: {} (pip install -r requirements.txt in tests/url-clients)",
            thumbor.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("images");
    for (path, bytes) in pictures() {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, bytes).unwrap();
    }
    let conf = dir.path().join("thumbor.conf");
    std::fs::write(
        &conf,
        format!(
            "LOADER = 'thumbor.loaders.file_loader'\nFILE_LOADER_ROOT_PATH = '{}'\n\
             STORAGE = 'thumbor.storages.no_storage'\nRESULT_STORAGE = None\n\
             SECURITY_KEY = '{THUMBOR_KEY}'\nALLOW_UNSAFE_URL = True\nQUALITY = 80\n\
             AUTO_WEBP = False\nMAX_AGE = 0\n",
            root.display()
        ),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _thumbor = tokio::process::Command::new(&thumbor)
        .args(["--ip", "127.0.0.1", "--port", &port.to_string(), "--conf"])
        .arg(&conf)
        .args(["-l", "error"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let client = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let mut up = false;
    for _ in 0..300 {
        if client
            .get(format!("{base}/healthcheck"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            up = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(up, "thumbor did not start");
    let cases = thumbor_cases();
    let options: Vec<Value> = cases.iter().map(|(_, o, _)| o.clone()).collect();
    for signed in [false, true] {
        let paths = thumbor_urls(signed, &options);
        for ((label, _, want), path) in cases.iter().zip(&paths) {
            let label = format!("thumbor: {label} (signed: {signed})");
            check(&client, &label, &format!("{base}{path}"), want).await;
        }
    }
}

/// thumbor takes `orig` after trimming; the trimmed size is known only once decoded, so
/// `orig` with `trim` is refused naming it rather than answered with another size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thumbor_orig_with_trim_is_400_naming_orig() {
    if !builders_installed() {
        return;
    }
    let s = server(false).await;
    let url = thumbor_urls(
        false,
        &[json!({"image_url": "pics/framed.png", "trim": true, "width": "orig", "height": 10})],
    );
    let (status, body) = error(&s.client, &s.url(&format!("/thumbor{}", url[0]))).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("orig"), "{body}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsafe_thumbor_urls_pass_with_a_key_only_when_allowed() {
    let s = TestServer::start_local_with(|c| {
        c.thumbor_security_key = Some(THUMBOR_KEY.to_owned().into());
        c.thumbor_allow_unsafe = true;
    })
    .await;
    s.put_raw("pics/q.png", samples::png(&quadrants())).await;
    let want = expect((100, 50), PNG).at(10, 10, RED);
    check(
        &s.client,
        "unsafe allowed",
        &s.url("/thumbor/unsafe/100x0/pics/q.png"),
        &want,
    )
    .await;
    assert_eq!(s.get("/thumbor/bogus/100x0/pics/q.png").await.status(), 403);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presets_only_holds_imgproxy_urls_to_presets() {
    let presets = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(presets.path(), "small = width=40&height=40&fit=cover\n").unwrap();
    let file = presets.path().to_owned();
    let s = TestServer::start_local_with(move |c| {
        c.presets_file = Some(file);
        c.presets_only = true;
    })
    .await;
    s.put_raw("pics/q.png", samples::png(&quadrants())).await;
    let want = expect((40, 40), PNG);
    let url = s.url("/imgproxy/insecure/pr:small/plain/local:///pics/q.png");
    check(&s.client, "preset only", &url, &want).await;
    let (status, body) = error(
        &s.client,
        &s.url("/imgproxy/insecure/w:10/plain/pics/q.png"),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("presets only"),
        "{body}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imgproxy_at_the_root_leaves_our_routes_alone() {
    let s = TestServer::start_local_with(|c| c.imgproxy_prefix = String::new()).await;
    s.put_raw("pics/q.png", samples::png(&quadrants())).await;
    let want = expect((100, 50), PNG);
    let url = s.url("/insecure/w:100/plain/local:///pics/q.png@png");
    check(&s.client, "root", &url, &want).await;
    let ours = s
        .get("/images/resize/pics/q.png?width=100&format=png")
        .await;
    assert_eq!(ours.status(), 200);
    // The same parameters are the same cached result with the same ETag.
    let theirs = s.get("/insecure/w:100/f:png/plain/pics/q.png").await;
    assert_eq!(theirs.headers()["etag"], ours.headers()["etag"]);
    assert_eq!(s.get("/admin/health").await.status(), 200);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_compat_urls_are_4xx_never_5xx() {
    let s = TestServer::start_local_with(|_| {}).await;
    s.put_raw("pics/q.png", samples::png(&quadrants())).await;
    let long = "w:1/".repeat(3000);
    for target in [
        "/imgproxy/x".to_owned(),
        "/imgproxy/x/".to_owned(),
        "/imgproxy/x/w:abc/plain/pics/q.png".to_owned(),
        "/imgproxy/x/w:1e30/plain/pics/q.png".to_owned(),
        "/imgproxy/x/rs:fit:-5:3/plain/pics/q.png".to_owned(),
        "/imgproxy/x/c:99999999:5/plain/pics/q.png".to_owned(),
        "/imgproxy/x/g:fp:2:0/plain/pics/q.png".to_owned(),
        "/imgproxy/x/%ff%fe/plain/pics/q.png".to_owned(),
        "/imgproxy/x/w:10/plain/local:///../../etc/passwd".to_owned(),
        "/imgproxy/x/w:10/!!!!.png".to_owned(),
        format!("/imgproxy/x/{long}plain/pics/q.png"),
        "/imgproxy/x/w:10/plain/pics/q.png@bmp".to_owned(),
        "/thumbor/unsafe/".to_owned(),
        "/thumbor/unsafe/99999999999x1/pics/q.png".to_owned(),
        "/thumbor/unsafe/filters:quality(/pics/q.png".to_owned(),
        "/thumbor/unsafe/filters:rotate(1e999)/pics/q.png".to_owned(),
        "/thumbor/unsafe/filters:watermark(a)/pics/q.png".to_owned(),
        "/thumbor/unsafe/100x100/pics/missing.png".to_owned(),
    ] {
        let (status, body) = s.raw_get(&target).await;
        assert!((400..500).contains(&status), "{target}: {status} {body}");
    }
    s.stop().await;
}
