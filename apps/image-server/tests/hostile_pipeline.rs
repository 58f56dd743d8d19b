//! Hostile inputs against the pipeline's cost model (docs/image-service.md §8): each
//! test starts the real image-server binary with its default settings and unsigned URLs,
//! stores a hostile input, sends the request, and checks the answer, the time it took, that
//! the process is still alive, and its peak resident memory (VmHWM of /proc/<pid>/status).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::KEY;
use image_pipeline::image::codecs::gif::{GifEncoder, Repeat};
use image_pipeline::image::{Delay, Frame, Rgb, RgbImage, Rgba, RgbaImage};
use image_pipeline::samples;

/// The memory one request may grow the server to: the goal of 512 MiB, as peak
/// resident memory of the whole (debug) process.
const MAX_RSS_KIB: u64 = 512 * 1024;

/// The server binary with its default limits, on local storage in a temp dir.
struct Server {
    child: tokio::process::Child,
    base: String,
    dir: tempfile::TempDir,
}

impl Server {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (child, base) = common::spawn_binary(&[
            ("DATA_DIR", dir.path().join("data").display().to_string()),
            (
                "STORAGE_URL",
                format!("file://{}", dir.path().join("images").display()),
            ),
            ("API_KEY", KEY.to_owned()),
        ]);
        assert!(
            common::wait_healthy(&base).await,
            "the server did not start"
        );
        Self { child, base, dir }
    }

    /// Stores `bytes` at `path` as a sync into the bucket would, past the upload's checks.
    fn put(&self, path: &str, bytes: &[u8]) {
        let file = self.dir.path().join("images").join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, bytes).unwrap();
    }

    /// GETs a resize URL: status, body and how long the answer took.
    async fn resize(&self, path: &str, query: &str) -> (u16, Vec<u8>, Duration) {
        let started = Instant::now();
        let r = reqwest::Client::new()
            .get(format!("{}/images/resize/{path}?{query}", self.base))
            .timeout(Duration::from_secs(110))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body = r.bytes().await.unwrap().to_vec();
        (status, body, started.elapsed())
    }

    /// Peak resident memory of the server process, in KiB.
    fn peak_rss_kib(&self) -> u64 {
        let pid = self.child.id().unwrap();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    /// Asserts the process is alive and answers, and that its peak memory stayed bounded.
    async fn assert_alive_and_bounded(&mut self) {
        assert!(
            self.child.try_wait().unwrap().is_none(),
            "the server process ended"
        );
        assert!(common::wait_healthy(&self.base).await, "no health answer");
        let peak = self.peak_rss_kib();
        eprintln!("peak RSS of the server: {peak} KiB");
        assert!(
            peak < MAX_RSS_KIB,
            "peak RSS {peak} KiB, above {MAX_RSS_KIB}"
        );
    }
}

/// The `error` of a JSON error body.
fn error_of(body: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap();
    v["error"].as_str().unwrap().to_owned()
}

/// A 4032x3024 JPEG, a phone photo's size.
fn photo() -> Vec<u8> {
    let img = RgbImage::from_fn(4032, 3024, |x, y| {
        Rgb([
            (x / 16 % 256) as u8,
            (y / 12 % 256) as u8,
            ((x + y) % 256) as u8,
        ])
    });
    samples::jpeg(&img, 80)
}

/// An opaque PNG of `w`x`h`.
fn mark(w: u32, h: u32) -> Vec<u8> {
    samples::png(&RgbaImage::from_pixel(w, h, Rgba([200, 30, 30, 255])))
}

/// Finding 1: a tall, narrow stored image as the watermark of a full-width output asked for
/// 39 to 161 GB and aborted the process in 0.3 s. It is fitted inside the output now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tall_narrow_watermark_is_fitted_inside_the_output() {
    let mut s = Server::start().await;
    s.put("photo.jpg", &photo());
    s.put("marks/thin.png", &mark(1, 600));
    s.put("marks/tall.png", &mark(100, 20000));
    for query in [
        "width=4032&watermark=marks/thin.png&watermark_scale=1&format=jpeg",
        "width=4032&watermark=marks/tall.png&watermark_scale=1&format=jpeg",
        "width=4032&watermark=marks/tall.png&format=jpeg",
    ] {
        let (status, body, took) = s.resize("photo.jpg", query).await;
        assert_eq!(status, 200, "{query}: {}", String::from_utf8_lossy(&body));
        let out = image_pipeline::decode_to_rgba(&body, u64::MAX).unwrap();
        assert_eq!(out.dimensions(), (4032, 3024), "{query}");
        assert!(took < Duration::from_secs(30), "{query}: {took:?}");
    }
    s.assert_alive_and_bounded().await;
}

/// An animated GIF of `frames` frames of `side`x`side`.
fn animation(frames: u32, side: u32) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut encoder = GifEncoder::new_with_speed(&mut out, 30);
        encoder.set_repeat(Repeat::Infinite).unwrap();
        for i in 0..frames {
            let img = RgbaImage::from_fn(side, side, |x, _| {
                Rgba([((x + i * 7) % 256) as u8, (i * 2) as u8, 90, 255])
            });
            encoder
                .encode_frame(Frame::from_parts(
                    img,
                    0,
                    0,
                    Delay::from_numer_denom_ms(40, 1),
                ))
                .unwrap();
        }
    }
    out
}

/// Finding 3: a 100-frame animation enlarged 4 times a side was bounded per frame only (6.2 GB
/// and 57 s as GIF). Frames x output pixels are bounded now, before decoding; an animation
/// within the bound is served, one frame at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_frame_enlargement_is_refused_before_decoding() {
    let mut s = Server::start().await;
    s.put("anim.gif", &animation(100, 300));
    for format in ["gif", "webp"] {
        let query = format!("width=1200&height=1200&fit=fill&enlarge=true&format={format}");
        let (status, body, took) = s.resize("anim.gif", &query).await;
        assert_eq!(status, 400, "{query}");
        let error = error_of(&body);
        assert!(
            error.contains("MAX_ANIMATION_OUTPUT_PIXELS") && error.contains("100 frames"),
            "{error}"
        );
        assert!(took < Duration::from_secs(2), "{query}: {took:?}");
    }
    // 100 frames of 400x400: 16 million pixels over all frames, within the bound.
    let (status, body, _) = s
        .resize(
            "anim.gif",
            "width=400&height=400&fit=fill&enlarge=true&format=webp",
        )
        .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    s.assert_alive_and_bounded().await;
}

/// An entity bomb within roxmltree's own loop limits (ten levels, 255 references an entity):
/// 300 references to an entity of 250 references to 20 KB, 26 KB expanding to 1.5 GB.
fn bomb(prefix: &str, early: &str) -> String {
    let dtd = format!(
        "{early}<!ENTITY l0 \"{}\"><!ENTITY l1 \"{}\">",
        "x".repeat(20_000),
        "&l0;".repeat(250)
    );
    format!(
        "{prefix}<!DOCTYPE svg [{dtd}]><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100\" \
         height=\"100\"><text>{}</text></svg>",
        "&l1;".repeat(300)
    )
}

/// A billion-laughs SVG: `levels` entities each naming the one before ten times.
fn laughs(levels: usize) -> String {
    let mut dtd = String::from("<!ENTITY l0 \"lol lol lol lol lol lol lol lol\">");
    for i in 1..=levels {
        let refs = format!("&l{};", i - 1).repeat(10);
        dtd.push_str(&format!("<!ENTITY l{i} \"{refs}\">"));
    }
    format!(
        "<!DOCTYPE svg [{dtd}]><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100\" \
         height=\"100\"><text>&l{levels};</text></svg>"
    )
}

/// Finding 4: the entity pre-check looked for the first DOCTYPE and `]>` in the text, so a
/// comment holding `<!DOCTYPE x []>` or `]>` inside an entity value passed it (1.55 GB and
/// 2.9 s for a 31 KB file, at upload and at every resize); filters were unbounded (47 s for
/// `feMorphology radius=50` on a 2000 px canvas). Each is refused quickly now, at upload (422)
/// and when already stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_svgs_are_refused_quickly_at_upload_and_resize() {
    let mut s = Server::start().await;
    let morphology = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"2000\" height=\"2000\">\
         <filter id=\"f\"><feMorphology operator=\"dilate\" radius=\"50\"/></filter>\
         <rect width=\"2000\" height=\"2000\" filter=\"url(#f)\"/></svg>";
    let cases = [
        ("nested.svg", laughs(8)),
        ("comment.svg", bomb("<!-- <!DOCTYPE x []> -->\n", "")),
        // The old check's subset ended at this `]>`, and its sniffing found `<svg` after it.
        ("bracket.svg", bomb("", "<!ENTITY a \"]><svg \">")),
        ("morphology.svg", morphology.to_owned()),
    ];
    for (name, svg) in &cases {
        let started = Instant::now();
        let r = common::upload_to(&s.base, name, svg.clone().into_bytes()).await;
        let status = r.status().as_u16();
        let body = r.bytes().await.unwrap();
        assert_eq!(status, 422, "{name}: {}", String::from_utf8_lossy(&body));
        assert!(started.elapsed() < Duration::from_secs(5), "{name}");
        s.put(name, svg.as_bytes());
        let (status, body, took) = s.resize(name, "width=2000&format=png").await;
        assert_eq!(status, 422, "{name}: {}", String::from_utf8_lossy(&body));
        assert!(took < Duration::from_secs(5), "{name}: {took:?}");
    }
    // A small morphology radius is still drawn.
    s.put(
        "small.svg",
        morphology
            .replace("radius=\"50\"", "radius=\"2\"")
            .as_bytes(),
    );
    let (status, _, _) = s.resize("small.svg", "width=400&format=png").await;
    assert_eq!(status, 200);
    s.assert_alive_and_bounded().await;
}

/// Finding 5: "." and 199 combining marks took 14.8 s instead of 1.0 s (and again for every
/// frame). More than MAX_COMBINING_MARKS on one character is refused; the marks allowed are
/// drawn in bounded time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn combining_marks_in_a_text_watermark_are_bounded() {
    let mut s = Server::start().await;
    s.put("photo.jpg", &photo());
    let pile = format!(".{}", "%CC%B8".repeat(199));
    let (status, body, took) = s
        .resize(
            "photo.jpg",
            &format!("width=4032&watermarkText={pile}&watermark_scale=1&format=jpeg"),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        error_of(&body).contains("combining marks"),
        "{}",
        error_of(&body)
    );
    assert!(took < Duration::from_secs(2), "{took:?}");
    let four = format!(".{}", "%CC%B8".repeat(image_pipeline::MAX_COMBINING_MARKS));
    let (status, body, took) = s
        .resize(
            "photo.jpg",
            &format!("width=4032&watermarkText={four}&watermark_scale=1&format=jpeg"),
        )
        .await;
    assert!(
        status == 200 || (status == 400 && error_of(&body).contains("watermarkText")),
        "{status}: {}",
        String::from_utf8_lossy(&body)
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
    s.assert_alive_and_bounded().await;
}
