//! The HTTP API end to end on real photographs, once on local storage and once on a real
//! S3-compatible server (IMAGE_TEST_S3_ENDPOINT; skipped with a notice when unset).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{KEY, Storage, TestServer, fixture, form, json_upload, magic, signature};
use image_pipeline::image::{Rgba, RgbaImage};
use image_pipeline::{OutputFormat, decode_to_rgba, samples};
use pretty_assertions::assert_eq;

fn pixels(bytes: &[u8]) -> RgbaImage {
    decode_to_rgba(bytes, u64::MAX).unwrap()
}

fn is_red(p: &Rgba<u8>) -> bool {
    p.0[0] > 200 && p.0[1] < 60 && p.0[2] < 60
}

async fn image(s: &TestServer, q: &str) -> (Vec<u8>, RgbaImage, String) {
    let r = s.get(q).await;
    assert_eq!(r.status(), 200, "{q}");
    let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
    let body = r.bytes().await.unwrap().to_vec();
    let px = pixels(&body);
    (body, px, ct)
}

async fn error(s: &TestServer, q: &str) -> (u16, String) {
    let r = s.get(q).await;
    let status = r.status().as_u16();
    let v: serde_json::Value = r.json().await.unwrap();
    (status, v["error"].as_str().unwrap().to_owned())
}

async fn every_parameter_on_real_photos(s: &TestServer) {
    s.upload("photos/lake.jpg", fixture("lake.jpg")).await;
    let mut marked = pixels(&fixture("large_image.jpg"));
    for y in 0..64 {
        for x in 0..64 {
            marked.put_pixel(x, y, Rgba([255, 0, 0, 255]));
        }
    }
    s.upload("photos/marked.png", samples::png(&marked)).await;

    for (f, m, ct) in [
        ("webp", "webp", "image/webp"),
        ("jpeg", "jpeg", "image/jpeg"),
        ("png", "png", "image/png"),
    ] {
        let (body, px, got) = image(
            s,
            &format!("/images/resize/photos/lake.jpg?width=800&format={f}"),
        )
        .await;
        assert_eq!(
            (magic(&body), px.dimensions(), got.as_str()),
            (m, (800, 450), ct)
        );
    }
    let (body, px, _) = image(s, "/images/resize/photos/lake.jpg?height=300").await;
    assert_eq!((magic(&body), px.dimensions()), ("webp", (533, 300)));

    for (fit, dims) in [
        ("cover", (300, 300)),
        ("contain", (300, 300)),
        ("fill", (300, 300)),
        ("inside", (300, 169)),
        ("outside", (533, 300)),
    ] {
        let (_, px, _) = image(s, &format!("/images/resize/photos/lake.jpg?width=300&height=300&fit={fit}&position=north&format=png")).await;
        assert_eq!(px.dimensions(), dims, "{fit}");
    }

    let (_, px, _) = image(s, "/images/resize/photos/marked.png?flip=true&format=png").await;
    assert!(
        is_red(px.get_pixel(px.width() - 2, 1)) && !is_red(px.get_pixel(1, 1)),
        "flip mirrors the marked corner"
    );
    let (_, px, _) = image(s, "/images/resize/photos/marked.png?flop=true&format=png").await;
    assert!(
        is_red(px.get_pixel(1, px.height() - 2)) && !is_red(px.get_pixel(1, 1)),
        "flop"
    );
    // Without a size the 2268x1512 photo is fitted inside the default 1920x1080 box first.
    let (_, px, _) = image(s, "/images/resize/photos/marked.png?rotate=90&format=png").await;
    assert_eq!(px.dimensions(), (1080, 1620), "rotate 90 swaps the sides");
    assert!(is_red(px.get_pixel(1078, 1)), "clockwise");
    let (_, px, _) = image(
        s,
        "/images/resize/photos/lake.jpg?width=400&rotate=45&background=00ff00&format=png",
    )
    .await;
    assert_eq!(px.get_pixel(0, 0).0, [0, 255, 0, 255]);
    let (_, px, _) = image(
        s,
        "/images/resize/photos/lake.jpg?width=300&grayscale=true&format=png",
    )
    .await;
    assert!(
        px.pixels().all(|p| p.0[0] == p.0[1] && p.0[1] == p.0[2]),
        "grayscale channels are equal"
    );
    let (_, px, _) = image(s, "/images/resize/photos/marked.png?cropLeft=0&cropTop=0&cropWidth=64&cropHeight=64&format=png").await;
    assert_eq!(px.dimensions(), (64, 64));
    assert!(px.pixels().all(is_red));
    for q in [
        "blur=2.5",
        "sharpen=true",
        "sharpen",
        "grayscale=1&blur=1",
        "progressive=true&format=jpeg",
    ] {
        let (_, px, _) = image(s, &format!("/images/resize/photos/lake.jpg?width=200&{q}")).await;
        assert_eq!(px.dimensions(), (200, 113), "{q}");
    }

    // Watermark from another stored image.
    s.upload(
        "logos/red.png",
        samples::png(&RgbaImage::from_pixel(40, 40, Rgba([255, 0, 0, 255]))),
    )
    .await;
    let (_, px, _) = image(s, "/images/resize/photos/lake.jpg?width=400&format=png&watermark=logos/red.png&watermark_opacity=1&watermark_position=southeast").await;
    assert!(is_red(px.get_pixel(395, 220)) && !is_red(px.get_pixel(5, 5)));

    // Quality changes the size monotonically.
    for f in ["jpeg", "webp"] {
        let mut sizes = Vec::new();
        for q in [10, 40, 70, 95] {
            let r = s
                .get(&format!(
                    "/images/resize/photos/lake.jpg?width=800&format={f}&quality={q}"
                ))
                .await;
            sizes.push(r.bytes().await.unwrap().len());
        }
        assert!(sizes.windows(2).all(|w| w[0] < w[1]), "{f}: {sizes:?}");
    }

    // format=auto negotiates and varies on Accept.
    let auto = "/images/resize/photos/lake.jpg?width=100&format=auto";
    for (accept, content_type) in [("image/webp,*/*", "image/webp"), ("*/*", "image/jpeg")] {
        let r = s.get_with(auto, "accept", accept).await;
        assert_eq!(r.headers()["content-type"], content_type, "{accept}");
        assert_eq!(r.headers()["vary"], "Accept", "{accept}");
    }
    // An explicit format=avif does not look at Accept, and is refused over AVIF_MAX_PIXELS.
    if cfg!(feature = "avif") {
        let r = s
            .get("/images/resize/photos/lake.jpg?width=100&format=avif")
            .await;
        assert_eq!(r.headers()["content-type"], "image/avif");
        assert!(r.headers().get("vary").is_none());
        assert_eq!(magic(&r.bytes().await.unwrap()), "avif");
        let (status, msg) = error(s, "/images/resize/photos/lake.jpg?width=1700&format=avif").await;
        assert_eq!(status, 400);
        assert!(
            msg.contains("format") && msg.contains("AVIF_MAX_PIXELS"),
            "{msg}"
        );
    }
}

async fn heic_and_exif_orientation(s: &TestServer) {
    s.upload("heic/iphone.heic", fixture("iphone.heic")).await;
    let (body, px, _) = image(s, "/images/resize/heic/iphone.heic?width=300&format=jpeg").await;
    assert_eq!((magic(&body), px.dimensions()), ("jpeg", (300, 400)));
    s.upload("heic/window.heic", fixture("window.heic")).await;
    let (_, px, _) = image(s, "/images/resize/heic/window.heic?width=800").await;
    assert_eq!(px.dimensions(), (800, 600));
    for (name, dims) in [
        ("xiaomi.heic", (400, 300)),
        ("nokia_bird_burst.heic", (400, 225)),
        ("pug.heic", (400, 300)),
    ] {
        s.upload(&format!("heic/{name}"), fixture(name)).await;
        let (_, px, _) = image(s, &format!("/images/resize/heic/{name}?width=400")).await;
        assert_eq!(px.dimensions(), dims, "{name}");
    }
    // AVIF sources (here one of our own AVIF outputs) go through libheif too, and an upload
    // names their type.
    if cfg!(feature = "avif") {
        let lake = fixture("lake.jpg");
        let limits = image_pipeline::Limits::default();
        let spec = image_pipeline::TransformSpec::from_query([("width", "300")], &limits).unwrap();
        let avif = image_pipeline::transform(&lake, &spec, OutputFormat::Avif, None, &limits)
            .unwrap()
            .bytes;
        let r = s
            .upload_json(&json_upload(&avif, Some("heic/lake.avif")))
            .await;
        assert_eq!(r.status(), 200);
        let v: serde_json::Value = r.json().await.unwrap();
        assert_eq!(v["contentType"], "image/avif");
        let (body, px, _) = image(s, "/images/resize/heic/lake.avif?width=150&format=jpeg").await;
        assert_eq!((magic(&body), px.width()), ("jpeg", 150));
    }
    // Real-world files: CMYK and YCCK JPEGs are stored and served in sRGB; turned, cropped
    // and deep mirrored AVIFs come out in their shown geometry (the deep mirrored one needs the
    // patched libheif-rs: third_party/libheif-rs/PATCHED.md).
    for (name, query, dims) in [
        ("lake_cmyk.jpg", "width=120&format=jpeg", (120, 68)),
        ("lake_ycck.jpg", "width=120&format=webp", (120, 68)),
        ("lake_irot1.avif", "width=100&format=png", (100, 178)),
        ("lake_irot1_clap.avif", "height=80&format=jpeg", (50, 80)),
        (
            "lake_10bit_irot2_imir1.avif",
            "width=120&format=webp",
            (120, 68),
        ),
        // Public files (crates/image-pipeline/tests/public_files.rs compares their pixels):
        // a turned and a clap-cropped AVIF, a Photoshop YCCK JPEG, a monochrome AVIF, and the
        // TIFF and SVG sources that were refused 415.
        ("kimono.rotate90.avif", "width=100&format=png", (100, 142)),
        ("kimono.crop.avif", "height=66&format=jpeg", (77, 66)),
        ("pil_sample_cmyk.jpg", "width=50&format=webp", (50, 50)),
        (
            "fox.profile0.8bpc.yuv420.monochrome.avif",
            "width=301&format=png",
            (301, 200),
        ),
        ("hopper_lzw.tif", "width=64&format=jpeg", (64, 64)),
        ("plum-blossom.svg", "width=300&format=png", (300, 300)),
    ] {
        s.upload(&format!("real/{name}"), fixture(name)).await;
        let (_, px, _) = image(s, &format!("/images/resize/real/{name}?{query}")).await;
        assert_eq!(px.dimensions(), dims, "{name}");
    }
    // An upload without a path is named with the type's usual extension.
    for (name, ext, mime) in [
        ("plum-blossom.svg", ".svg", "image/svg+xml"),
        ("hopper_lzw.tif", ".tiff", "image/tiff"),
    ] {
        let r = s.upload_json(&json_upload(&fixture(name), None)).await;
        assert_eq!(r.status(), 200, "{name}");
        let v: serde_json::Value = r.json().await.unwrap();
        assert_eq!(v["contentType"], mime, "{name}");
        assert!(v["path"].as_str().unwrap().ends_with(ext), "{name}: {v}");
    }
    let oriented = samples::with_exif_orientation(&fixture("large_image.jpg"), 6);
    s.upload("photos/portrait.jpg", oriented).await;
    let (_, px, _) = image(s, "/images/resize/photos/portrait.jpg?width=300").await;
    assert_eq!(px.dimensions(), (300, 450), "EXIF orientation 6 is applied");
}

async fn cache_etag_and_coalescing(s: &TestServer) {
    s.upload("c/lake.jpg", fixture("lake.jpg")).await;
    let q = "/images/resize/c/lake.jpg?width=640&format=jpeg";
    let first = s.get(q).await;
    assert_eq!(first.headers()["x-cache"], "MISS");
    // The source can be replaced at its path: a day, not a year, unless the URL pins it.
    assert_eq!(first.headers()["cache-control"], "public, max-age=86400");
    let etag = first.headers()["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with('"'), "strong ETag");
    let second = s
        .get("/images/resize/c/lake.jpg?format=jpg&width=640&quality=80")
        .await;
    assert_eq!(
        (
            second.headers()["x-cache"].to_str().unwrap(),
            second.headers()["etag"].to_str().unwrap()
        ),
        ("HIT", etag.as_str())
    );
    let not_modified = s.get_with(q, "if-none-match", &etag).await;
    assert_eq!(not_modified.status(), 304);

    // Identical requests in flight: one transformation.
    let q = "/images/resize/c/lake.jpg?width=333&format=webp";
    let all = futures::future::join_all((0..6).map(|_| s.get(q))).await;
    let misses = all
        .iter()
        .filter(|r| r.headers()["x-cache"] == "MISS")
        .count();
    assert_eq!(misses, 1);

    // A replaced source gets a new ETag and a fresh result.
    s.upload("c/lake.jpg", fixture("large_image.jpg")).await;
    let r = s
        .get("/images/resize/c/lake.jpg?width=640&format=jpeg")
        .await;
    assert_eq!(r.headers()["x-cache"], "MISS");
    assert_ne!(r.headers()["etag"].to_str().unwrap(), etag);

    // The storage tier holds results (written after the response); clearing it (with the key)
    // deletes them.
    await_persisted_at_least(&s.store, "c/lake.jpg", 1).await;
    let r = s
        .client
        .post(s.url("/admin/cache/storage/clear"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = s
        .client
        .post(s.url("/admin/cache/storage/clear?pattern=nothing/*"))
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap();
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v, serde_json::json!({"success": true, "count": 0}));
    let r = s
        .client
        .post(s.url("/admin/cache/storage/clear"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["success"], true);
    // The results made before the source was replaced went with the upload that replaced it.
    assert!(v["count"].as_u64().unwrap() >= 1, "{v}");
    let r = s
        .get("/images/resize/c/lake.jpg?width=640&format=jpeg")
        .await;
    assert_eq!(r.headers()["x-cache"], "MISS", "memory tier emptied too");

    let h: serde_json::Value = s.get("/admin/health").await.json().await.unwrap();
    assert_eq!(
        (
            h["status"].as_str(),
            h["version"].as_str(),
            h["storage"]["reachable"].as_bool()
        ),
        (Some("ok"), Some("2.0.0"), Some(true))
    );
    assert!(
        h["cache"]["entries"].as_u64().unwrap() >= 1 && h["cache"]["bytes"].as_u64().unwrap() > 0,
        "{h}"
    );
}

/// What a refusal's `error` must say.
enum Says {
    /// Anything (the status is what is checked).
    Any,
    /// Exactly this.
    Is(&'static str),
    /// Something containing this (the parameter or the input it names).
    Names(&'static str),
    /// Something starting with this.
    Starts(&'static str),
}

async fn bad_input_is_answered_not_panicked(s: &TestServer) {
    use Says::{Any, Is, Names, Starts};
    s.upload("b/lake.jpg", fixture("large_image.jpg")).await;
    let lake = fixture("lake.jpg");
    for (path, bytes) in [
        ("b/mark-bomb.png", samples::png_bomb(30_000, 30_000)),
        ("b/notes.jpg", b"this is not an image".to_vec()),
        ("b/truncated.jpg", lake[..lake.len() / 3].to_vec()),
        ("b/bomb.png", samples::png_bomb(60_000, 60_000)),
        ("b/200mp.heic", fixture("heic_200mp.heic")),
        ("b/truncated.heic", fixture("truncated.heic")),
    ] {
        s.put_raw(path, bytes).await;
    }
    // A segment too long for a file system: 400 on every backend, before the store is asked.
    let long = format!("/images/resize/b/{}.jpg", "n".repeat(250));
    let mut cases: Vec<(String, u16, Says)> = vec![
        (
            "/images/resize/b/missing.jpg".into(),
            404,
            Is("image not found: b/missing.jpg"),
        ),
        (
            "/images/resize/b/lake.jpg?watermark=b/none.png".into(),
            404,
            Is("watermark not found: b/none.png"),
        ),
        // Errors of the watermark's bytes name the watermark, not the source.
        (
            "/images/resize/b/lake.jpg?watermark=b/mark-bomb.png".into(),
            400,
            Names("watermark"),
        ),
        (long, 400, Any),
        // Paths that are no endpoint, and wrong methods, answer JSON too.
        ("/nope".into(), 404, Any),
        ("/images/resize/".into(), 404, Any),
        ("/images/upload".into(), 405, Any),
        // Sources that are no image, truncated, or over the pixel limit.
        ("/images/resize/b/notes.jpg".into(), 415, Any),
        ("/images/resize/b/truncated.jpg?width=100".into(), 422, Any),
        ("/images/resize/b/bomb.png".into(), 422, Any),
        // A 200 MP HEIC in 2.4 MB: refused from its header, the only place that names the
        // pixel limit (its decode would need about 600 MB).
        (
            "/images/resize/b/200mp.heic?width=100".into(),
            422,
            Starts("source is 12240x16320 pixels, above the limit of"),
        ),
        ("/images/resize/b/truncated.heic".into(), 422, Any),
    ];
    // A malformed or out-of-range value is a 400 naming its parameter.
    for (name, values) in [
        ("width", &["0", "abc", "100000"][..]),
        ("quality", &["0", "101"]),
        ("rotate", &["361"]),
        ("format", &["tiff"]),
    ] {
        for value in values {
            let target = format!("/images/resize/b/lake.jpg?{name}={value}");
            cases.push((target, 400, Names(name)));
        }
    }
    for (target, want, says) in cases {
        let (status, msg) = error(s, &target).await;
        assert_eq!(status, want, "{target}: {msg}");
        match says {
            Any => {}
            Is(text) => assert_eq!(msg, text, "{target}"),
            Names(name) => assert!(msg.contains(name), "{target}: {msg}"),
            Starts(start) => assert!(msg.starts_with(start), "{target}: {msg}"),
        }
    }

    // Uploads: the key is checked first (also before a body over the size limit is buffered,
    // and the client hears it), in either header.
    let post = || s.client.post(s.url("/images/upload"));
    let photo = || form("u/x.jpg", fixture("large_image.jpg"));
    let huge = vec![b'a'; 27 * 1024 * 1024];
    let keyed = [
        ("no key", post().multipart(photo()), 401),
        (
            "no key, a body over the size limit",
            post().header("content-type", "application/json").body(huge),
            401,
        ),
        (
            "a wrong key",
            post().header("x-api-key", "wrong").multipart(photo()),
            401,
        ),
        (
            "the key as a bearer token",
            post().bearer_auth(KEY).multipart(photo()),
            200,
        ),
    ];
    for (what, request, want) in keyed {
        assert_eq!(request.send().await.unwrap().status(), want, "{what}");
    }
    // With the key: the type is sniffed, not taken from the declared one.
    let declared_jpeg = reqwest::multipart::Part::bytes(b"<html>not an image</html>".to_vec())
        .mime_str("image/jpeg")
        .unwrap();
    let text = reqwest::multipart::Form::new()
        .part("file", declared_jpeg)
        .text("path", "u/fake.jpg");
    let r = s.upload_form(text).await;
    assert_eq!(r.status(), 415, "the declared type is not trusted");
    // A bomb, or a sound header over a truncated or corrupt body, is refused too, and nothing
    // is stored.
    let mut corrupt = fixture("large_image.jpg");
    let middle = corrupt.len() / 2;
    corrupt[middle..middle + 4096].fill(0xFF);
    let refused = [
        ("u/bomb.png", samples::png_bomb(100_000, 100_000)),
        ("u/truncated.jpg", lake[..lake.len() / 3].to_vec()),
        ("u/corrupt.jpg", corrupt),
        ("u/truncated.heic", fixture("truncated.heic")),
    ];
    for (path, bytes) in refused {
        let r = s.upload_form(form(path, bytes)).await;
        assert_eq!(r.status(), 422, "{path}");
        let v: serde_json::Value = r.json().await.unwrap();
        assert!(!v["error"].as_str().unwrap().is_empty(), "{path}: {v}");
        let (status, _) = error(s, &format!("/images/resize/{path}")).await;
        assert_eq!(status, 404, "{path} must not be stored");
    }
}

async fn paths_cannot_escape_the_storage_root(s: &TestServer) {
    // A file beside the storage root that must never be served.
    std::fs::write(s.dir.path().join("secret.jpg"), fixture("large_image.jpg")).unwrap();
    for target in [
        "/images/resize/../secret.jpg",
        "/images/resize/%2e%2e/secret.jpg",
        "/images/resize/%2E%2E%2Fsecret.jpg",
        "/images/resize/a/%2e%2e/%2e%2e/secret.jpg",
        "/images/resize//etc/passwd",
        "/images/resize/%2Fetc%2Fpasswd",
        "/images/resize/..%5Csecret.jpg",
        "/images/resize/a%00b.jpg",
        "/images/resize/%252e%252e/secret.jpg",
        "/images/resize/cache/anything.webp",
        "/images/resize/b/lake.jpg?watermark=../secret.jpg",
        // Not UTF-8 once decoded: axum's own rejection, answered in JSON too.
        "/images/resize/%FF%FE.jpg",
    ] {
        let (status, text) = s.raw_get(target).await;
        assert_eq!(status, 400, "{target}: {text}");
        assert!(text.contains("\"error\""), "{target}");
    }
    // Uploads of a sound image (so that only the path check can refuse them) to paths out of
    // the images root or into the reserved cache/: each a 400, and nothing is written, inside
    // the root or out of it.
    let files_before = files_under(s.dir.path());
    let objects_before = objects(s).await;
    let image = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        fixture("large_image.jpg"),
    );
    for path in [
        "../escape.jpg",
        "/abs.jpg",
        "a/../../escape.jpg",
        "./here.jpg",
        "a//b.jpg",
        "..\\escape.jpg",
        "%2e%2e/escape.jpg",
        "cache/poison.webp",
        "cache",
    ] {
        let r = s
            .upload_json(&serde_json::json!({"image": image, "path": path}))
            .await;
        let status = r.status().as_u16();
        let v: serde_json::Value = r.json().await.unwrap();
        assert_eq!(status, 400, "{path}: {v}");
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .starts_with("invalid image path"),
            "{path}: {v}"
        );
    }
    assert_eq!(files_under(s.dir.path()), files_before);
    assert_eq!(objects(s).await, objects_before);
    assert!(!std::path::Path::new("/abs.jpg").exists());
}

/// Every file below `dir`, as sorted paths relative to it.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.push(path.strip_prefix(root).unwrap().to_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Every object in the server's store, sorted.
async fn objects(s: &TestServer) -> Vec<String> {
    use futures::TryStreamExt;
    let listed: Vec<_> = s.store.list(None).try_collect().await.unwrap();
    let mut names: Vec<String> = listed.into_iter().map(|m| m.location.to_string()).collect();
    names.sort();
    names
}

async fn original_sdk_requests_work_unchanged(s: &TestServer) {
    use base64::Engine;
    // uploadImage(buffer, {path, contentType}): JSON, base64, x-api-key.
    let body = serde_json::json!({
        "image": base64::engine::general_purpose::STANDARD.encode(fixture("lake.jpg")),
        "path": "sdk/lake.jpg",
        "contentType": "image/jpeg",
    });
    let r = s
        .client
        .post(s.url("/images/upload"))
        .header("Content-Type", "application/json")
        .header("x-api-key", KEY)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(
        (v["success"].as_bool(), v["path"].as_str()),
        (Some(true), Some("sdk/lake.jpg"))
    );
    // A data URL is accepted too.
    let data_url = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(samples::png(&RgbaImage::from_pixel(
            30,
            30,
            Rgba([0, 0, 255, 255])
        )))
    );
    let r = s.client.post(s.url("/images/upload")).header("x-api-key", KEY)
        .json(&serde_json::json!({"image": data_url, "path": "sdk/mark.png", "contentType": "image/png"})).send().await.unwrap();
    assert_eq!(r.status(), 200);

    // getResizeUrl(path, {width, height, format, quality, rotate, flip, flop, grayscale, blur,
    // sharpen, watermark: {image, position, opacity}, crop: {left, top, width, height}}),
    // serialised in the SDK's order with URLSearchParams; fetched with its Bearer header.
    let url = "/images/resize/sdk/lake.jpg?width=300&height=200&format=jpeg&quality=75&rotate=180&flip=true&flop=false&grayscale=false&blur=0.5&sharpen=true&watermarkImage=sdk%2Fmark.png&watermarkPosition=bottom-right&watermarkOpacity=0.8&cropLeft=100&cropTop=50&cropWidth=3000&cropHeight=2000";
    let r = s
        .get_with(url, "Authorization", &format!("Bearer {KEY}"))
        .await;
    assert_eq!(r.status(), 200);
    let px = pixels(&r.bytes().await.unwrap());
    assert_eq!(px.dimensions(), (300, 200));
    // Same request without options, as getResizeUrl(path) builds it: WebP, fitted inside
    // 1920x1080 as the original capped it (the source is larger).
    let (body, px, _) = image(s, "/images/resize/sdk/lake.jpg").await;
    assert_eq!(magic(&body), "webp");
    let source = pixels(&fixture("lake.jpg")).dimensions();
    assert!(source.0 > 1920, "{source:?}");
    let capped = (
        1920,
        (1920.0 * f64::from(source.1) / f64::from(source.0)).round() as u32,
    );
    assert_eq!(px.dimensions(), capped);
    // getResizeUrl(path, {width: 400 * devicePixelRatio}) with a ratio of 4/3: the number
    // is printed as JavaScript prints it, and rounded to the nearest pixel.
    let (_, px, _) = image(s, "/images/resize/sdk/lake.jpg?width=533.3333333333334").await;
    assert_eq!(px.width(), 533);
    // watermark: {text}: burned in, as the original did, but drawn as characters: the
    // markup the original would have obeyed is only text here.
    s.upload(
        "sdk/night.png",
        samples::png(&RgbaImage::from_pixel(600, 200, Rgba([0, 0, 0, 255]))),
    )
    .await;
    let (_, px, _) = image(
        s,
        "/images/resize/sdk/night.png?format=png&watermarkText=%3Csvg%20onload%3Dx%3E%20%C2%A9%20Acme&watermarkPosition=center&watermarkOpacity=1&watermark_scale=0.5",
    )
    .await;
    let white = px.pixels().filter(|p| p.0[0] > 240 && p.0[1] > 240).count();
    assert!(white > 1000, "{white} white pixels of text");
    let outside_the_middle_half = px
        .enumerate_pixels()
        .filter(|(x, _, p)| (*x < 140 || *x > 460) && p.0[0] > 40)
        .count();
    assert_eq!(
        outside_the_middle_half, 0,
        "the text is half the width, centred"
    );
    for (query, name) in [
        ("watermarkText=", "watermarkText"),
        ("watermarkText=a%0Ab", "watermarkText"),
        ("watermarkText=hi&watermark=sdk/mark.png", "watermarkText"),
    ] {
        let (status, message) = error(s, &format!("/images/resize/sdk/night.png?{query}")).await;
        assert_eq!(status, 400, "{query}");
        assert!(message.contains(name), "{query}: {message}");
    }
    let long = "x".repeat(image_pipeline::MAX_WATERMARK_TEXT_CHARS + 1);
    let (status, _) = error(
        s,
        &format!("/images/resize/sdk/night.png?watermarkText={long}"),
    )
    .await;
    assert_eq!(status, 400);
}

async fn oversized_uploads_are_413(storage: &Storage) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config_for(storage, &dir).await;
    config.max_upload_bytes = 200_000;
    let s = TestServer::start_with(config, dir).await;
    let r = s.upload_form(form("big.jpg", fixture("lake.jpg"))).await;
    assert_eq!(r.status(), 413);
    let v: serde_json::Value = r.json().await.unwrap();
    assert!(v["error"].as_str().unwrap().contains("200000"));
    let body = json_upload(&fixture("large_image.jpg"), Some("big.jpg"));
    let r = s.upload_json(&body).await;
    assert_eq!(r.status(), 413);
    s.stop().await;
}

async fn results_survive_a_restart_in_the_storage_tier(storage: &Storage) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config_for(storage, &dir).await;
    // large_image.jpg is 3:2: 100x67 is under this, 120x80 over it.
    config.avif_max_pixels = 100 * 67;
    let s = TestServer::start_with(config, dir).await;
    s.upload("r/lake.jpg", fixture("large_image.jpg")).await;
    let chrome = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8";
    let get_auto = |s: &TestServer, width: u32| {
        s.client
            .get(s.url(&format!(
                "/images/resize/r/lake.jpg?width={width}&format=auto"
            )))
            .header("accept", chrome)
            .send()
    };
    let q = "/images/resize/r/lake.jpg?width=120&format=png";
    let mut made = Vec::new();
    for r in [
        s.get(q).await,
        get_auto(&s, 100).await.unwrap(),
        get_auto(&s, 120).await.unwrap(),
    ] {
        assert_eq!(r.headers()["x-cache"], "MISS");
        let ty = r.headers()["content-type"].to_str().unwrap().to_owned();
        made.push((ty, r.bytes().await.unwrap()));
    }
    // AVIF under AVIF_MAX_PIXELS, WebP (which Chrome accepts too) over it.
    assert_eq!(made[1].0, "image/avif");
    assert_eq!(magic(&made[1].1), "avif");
    assert_eq!(made[2].0, "image/webp");
    assert_eq!(magic(&made[2].1), "webp");
    // Stopping waits for the storage tier's writes still running.
    let (config, dir) = s.stop().await;
    let s = TestServer::start_with(config, dir).await;
    let again = [
        s.get(q).await,
        get_auto(&s, 100).await.unwrap(),
        get_auto(&s, 120).await.unwrap(),
    ];
    for (r, (ty, bytes)) in again.into_iter().zip(made) {
        assert_eq!(r.headers()["x-cache"], "HIT");
        // The stored WebP under the AVIF request's name is still sent as WebP.
        assert_eq!(r.headers()["content-type"], ty.as_str());
        assert_eq!(r.bytes().await.unwrap(), bytes);
    }
    s.stop().await;
}

/// How many results of `source` the storage tier holds.
async fn persisted(store: &std::sync::Arc<dyn object_store::ObjectStore>, source: &str) -> usize {
    use futures::TryStreamExt;
    let dir = object_store::path::Path::from(format!("cache/{source}"));
    let listed: Vec<_> = store.list(Some(&dir)).try_collect().await.unwrap();
    listed.len()
}

/// Polls until the storage tier holds at least `least` results of `source` (its writes run
/// after the response), for up to 5 s.
async fn await_persisted_at_least(
    store: &std::sync::Arc<dyn object_store::ObjectStore>,
    source: &str,
    least: usize,
) {
    for _ in 0..100 {
        if persisted(store, source).await >= least {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the storage tier holds fewer than {least} results of {source}");
}

/// Polls until the storage tier holds `want` results of `source` (its writes and deletes run
/// after the response), for up to 5 s.
async fn await_persisted(
    store: &std::sync::Arc<dyn object_store::ObjectStore>,
    source: &str,
    want: usize,
) {
    for _ in 0..100 {
        if persisted(store, source).await == want {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(persisted(store, source).await, want, "results of {source}");
}

/// Replacing a source through an upload deletes its persisted results (their keys hold the
/// old ETag: nothing would read them again).
async fn a_replaced_source_leaves_no_stale_results(storage: &Storage) {
    let s = TestServer::start(storage).await;
    let store = std::sync::Arc::clone(&s.store);
    s.upload("t/p.jpg", fixture("large_image.jpg")).await;
    // S3 and Azure keys are flat: an object can sit "below" another one, and so can its results.
    let nested = matches!(storage, Storage::S3(_) | Storage::Azure(_));
    if nested {
        s.upload("t/p.jpg/below.jpg", fixture("large_image.jpg"))
            .await;
        let q = "/images/resize/t/p.jpg/below.jpg?width=40&format=png";
        assert_eq!(s.get(q).await.status(), 200);
        await_persisted(&store, "t/p.jpg/below.jpg", 1).await;
    }
    for q in [
        "/images/resize/t/p.jpg?width=40&format=png",
        "/images/resize/t/p.jpg?width=50&format=png",
    ] {
        assert_eq!(s.get(q).await.status(), 200, "{q}");
    }
    await_persisted(&store, "t/p.jpg", 2 + usize::from(nested)).await;
    s.upload("t/p.jpg", fixture("lake.jpg")).await;
    // Only the replaced path's own results go, not those of a path below it.
    await_persisted(&store, "t/p.jpg", usize::from(nested)).await;

    s.stop().await;
}

/// A TCP proxy to `upstream` that holds every chunk a client sends for `delay` before passing
/// it on: an object store that answers slowly.
async fn slow_proxy(upstream: String, delay: std::time::Duration) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let upstream = upstream.trim_start_matches("http://").to_owned();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
                    return;
                };
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                });
                let mut buf = vec![0u8; 1024 * 1024];
                loop {
                    // Wait first, then pass on what arrived, unless the client has gone away
                    // meanwhile (its request then never reaches the store).
                    tokio::time::sleep(delay).await;
                    let Ok(n) = client_read.read(&mut buf).await else {
                        break;
                    };
                    if n == 0 {
                        break;
                    }
                    let mut rest = [0u8; 1];
                    let gone = matches!(
                        tokio::time::timeout(
                            std::time::Duration::from_millis(5),
                            client_read.peek(&mut rest)
                        )
                        .await,
                        Ok(Ok(0) | Err(_))
                    );
                    if gone || server_write.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

/// A result made just before a graceful shutdown is written to the storage tier before
/// `serve` returns, even when the store is slow (S3 behind a proxy that holds every request
/// for 300 ms). The server runs in a runtime of its own that ends with `serve`, as in the
/// binary, where whatever is still running then is dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_made_just_before_shutdown_is_persisted() {
    let Some(endpoint) = common::s3_endpoint() else {
        eprintln!("skipped: IMAGE_TEST_S3_ENDPOINT is unset");
        return;
    };
    let slow = slow_proxy(endpoint, std::time::Duration::from_millis(300)).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config_for(&Storage::S3(slow), &dir).await;
    config.source_etag_ttl_ms = 60_000;
    let store = image_server::open_store(&config.storage_url, &config.storage_options).unwrap();
    let source = object_store::path::Path::from("s/p.jpg");
    store
        .put(&source, fixture("large_image.jpg").into())
        .await
        .unwrap();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            image_server::serve(config, listener, async move {
                let _ = stop_rx.await;
            })
            .await
            .unwrap();
        });
        // Dropping the runtime drops every task still running, as returning from main does.
    });
    let addr = addr_rx.recv().unwrap();
    let r = reqwest::get(format!(
        "http://{addr}/images/resize/s/p.jpg?width=60&format=png"
    ))
    .await
    .unwrap();
    assert_eq!(r.headers()["x-cache"], "MISS");
    stop_tx.send(()).unwrap();
    tokio::task::spawn_blocking(move || server.join().unwrap())
        .await
        .unwrap();
    assert_eq!(persisted(&store, "s/p.jpg").await, 1);
}

macro_rules! on_every_storage {
    ($($name:ident),* ; $($own:ident),*) => {
        mod local {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let s = super::TestServer::start(&super::Storage::Local).await;
                    super::$name(&s).await;
                    s.stop().await;
                }
            )*
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $own() {
                    super::$own(&super::Storage::Local).await;
                }
            )*
        }
        mod s3 {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(endpoint) = super::common::s3_endpoint() else {
                        eprintln!("skipped: IMAGE_TEST_S3_ENDPOINT is unset");
                        return;
                    };
                    let s = super::TestServer::start(&super::Storage::S3(endpoint)).await;
                    super::$name(&s).await;
                    s.stop().await;
                }
            )*
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $own() {
                    let Some(endpoint) = super::common::s3_endpoint() else {
                        eprintln!("skipped: IMAGE_TEST_S3_ENDPOINT is unset");
                        return;
                    };
                    super::$own(&super::Storage::S3(endpoint)).await;
                }
            )*
        }
        mod azure {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(endpoint) = super::common::azure_endpoint() else {
                        eprintln!("skipped: IMAGE_TEST_AZURE_ENDPOINT is unset");
                        return;
                    };
                    let s = super::TestServer::start(&super::Storage::Azure(endpoint)).await;
                    super::$name(&s).await;
                    s.stop().await;
                }
            )*
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $own() {
                    let Some(endpoint) = super::common::azure_endpoint() else {
                        eprintln!("skipped: IMAGE_TEST_AZURE_ENDPOINT is unset");
                        return;
                    };
                    super::$own(&super::Storage::Azure(endpoint)).await;
                }
            )*
        }
    };
}

/// The upload reply's `url` is a URL: the stored path percent-encoded segment by segment, so
/// `?`, `#` and spaces in a name do not turn into a query or fragment.
async fn upload_reply_urls_fetch_the_stored_image(s: &TestServer) {
    let body = json_upload(&fixture("large_image.jpg"), Some("odd names/q?x=1 #2.jpg"));
    let r = s.upload_json(&body).await;
    assert_eq!(r.status(), 200);
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["path"], "odd names/q?x=1 #2.jpg");
    assert_eq!(v["url"], "/images/resize/odd%20names/q%3Fx=1%20%232.jpg");
    let r = s
        .get(&format!("{}?width=50", v["url"].as_str().unwrap()))
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(pixels(&r.bytes().await.unwrap()).width(), 50);
}

/// A source can be replaced at its path, so an answer lives a day; a URL carrying the
/// upload's `version` as `v` can never show another picture and is immutable for a year, until
/// the source changes and the old `v` falls back to a day (docs/image-service.md §4, Caching).
async fn a_url_pinning_the_source_version_is_immutable(s: &TestServer) {
    let upload = |name: &str| json_upload(&fixture(name), Some("pin/photo.jpg"));
    let v: serde_json::Value = s
        .upload_json(&upload("large_image.jpg"))
        .await
        .json()
        .await
        .unwrap();
    let version = v["version"].as_str().unwrap().to_owned();
    assert_eq!(version.len(), 16, "{v}");
    let cache_control =
        |r: &reqwest::Response| r.headers()["cache-control"].to_str().unwrap().to_owned();
    let pinned = s
        .get(&format!(
            "/images/resize/pin/photo.jpg?width=64&v={version}"
        ))
        .await;
    assert_eq!(
        cache_control(&pinned),
        "public, max-age=31536000, immutable"
    );
    let unpinned = s.get("/images/resize/pin/photo.jpg?width=64").await;
    assert_eq!(cache_control(&unpinned), "public, max-age=86400");
    // `v` is no transformation: one result, one ETag.
    assert_eq!(pinned.headers()["etag"], unpinned.headers()["etag"]);
    assert_eq!(unpinned.headers()["x-cache"], "HIT");
    let wrong = s
        .get("/images/resize/pin/photo.jpg?width=64&v=0000000000000000")
        .await;
    assert_eq!(cache_control(&wrong), "public, max-age=86400");

    let v: serde_json::Value = s
        .upload_json(&upload("lake.jpg"))
        .await
        .json()
        .await
        .unwrap();
    let replaced = v["version"].as_str().unwrap().to_owned();
    assert_ne!(replaced, version);
    let stale = s
        .get(&format!(
            "/images/resize/pin/photo.jpg?width=64&v={version}"
        ))
        .await;
    assert_eq!(stale.status(), 200);
    assert_eq!(cache_control(&stale), "public, max-age=86400");
    assert_eq!(
        pixels(&stale.bytes().await.unwrap()).dimensions(),
        (64, 36),
        "the current picture (lake.jpg is 16:9)"
    );
    let fresh = s
        .get(&format!(
            "/images/resize/pin/photo.jpg?width=64&v={replaced}"
        ))
        .await;
    assert_eq!(cache_control(&fresh), "public, max-age=31536000, immutable");
}

/// The original's health path, which its own tests probe, answers as `/admin/health` does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_on_the_original_path_too() {
    let s = TestServer::start(&Storage::Local).await;
    let admin = s.get("/admin/health").await;
    let original = s.get("/images/health").await;
    assert_eq!(
        (admin.status().as_u16(), original.status().as_u16()),
        (200, 200)
    );
    let (a, o): (serde_json::Value, serde_json::Value) =
        (admin.json().await.unwrap(), original.json().await.unwrap());
    assert_eq!(
        (o["status"].as_str(), o["version"].as_str()),
        (Some("ok"), Some("2.0.0"))
    );
    assert_eq!(a["storage"], o["storage"]);
    s.stop().await;
}

/// With PUBLIC_BASE_URL set the upload answer's `url` is absolute, as the original's was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upload_url_is_absolute_under_a_public_base_url() {
    let s = TestServer::start_local_with(|c| {
        c.public_base_url = Some("https://img.example.com/cdn".to_owned());
    })
    .await;
    let upload = form("a b/c.jpg", fixture("large_image.jpg"));
    let v: serde_json::Value = s.upload_form(upload).await.json().await.unwrap();
    assert_eq!(
        v["url"],
        "https://img.example.com/cdn/images/resize/a%20b/c.jpg"
    );
    s.stop().await;
}

/// A preset expands as configured; with PRESETS_ONLY any other parameter is a 400 naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presets_expand_and_presets_only_refuses_the_rest() {
    let files = tempfile::tempdir().unwrap();
    let presets = files.path().join("presets.conf");
    std::fs::write(
        &presets,
        "# gallery\nthumb = width=120&height=120&fit=cover&format=png\ngray = grayscale=true\n",
    )
    .unwrap();
    let file = presets.clone();
    let s = TestServer::start_local_with(move |c| c.presets_file = Some(file)).await;
    s.upload("p/lake.jpg", fixture("lake.jpg")).await;
    let (_, thumb, ct) = image(&s, "/images/resize/p/lake.jpg?preset=thumb").await;
    assert_eq!((thumb.dimensions(), ct.as_str()), ((120, 120), "image/png"));
    let (_, wider, _) = image(&s, "/images/resize/p/lake.jpg?preset=thumb&width=60").await;
    assert_eq!(wider.dimensions(), (60, 120), "the URL's own width wins");
    let (_, gray, _) = image(&s, "/images/resize/p/lake.jpg?preset=thumb,gray").await;
    assert!(gray.pixels().all(|p| p.0[0] == p.0[1] && p.0[1] == p.0[2]));
    let (status, message) = error(&s, "/images/resize/p/lake.jpg?preset=huge").await;
    assert_eq!(status, 400);
    assert!(message.contains("preset"), "{message}");
    s.stop().await;

    let file = presets.clone();
    let s = TestServer::start_local_with(move |c| {
        c.presets_file = Some(file);
        c.presets_only = true;
    })
    .await;
    s.upload("p/lake.jpg", fixture("lake.jpg")).await;
    let (_, thumb, _) = image(&s, "/images/resize/p/lake.jpg?preset=thumb").await;
    assert_eq!(thumb.dimensions(), (120, 120));
    for (query, name) in [("preset=thumb&width=4000", "width"), ("blur=50", "blur")] {
        let (status, message) = error(&s, &format!("/images/resize/p/lake.jpg?{query}")).await;
        assert_eq!(status, 400, "{query}");
        assert!(
            message.contains(name) && message.contains("presets only"),
            "{message}"
        );
    }
    s.stop().await;
}

/// The environment of one of two server processes sharing the store under `dir`: a look at
/// the clear marker holds 200 ms (SOURCE_ETAG_TTL_MS), a memory entry an hour.
fn replica_env(dir: &std::path::Path, data: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "STORAGE_URL",
            format!("file://{}", dir.join("images").display()),
        ),
        ("DATA_DIR", dir.join(data).display().to_string()),
        ("API_KEY", KEY.to_owned()),
        ("SOURCE_ETAG_TTL_MS", "200".to_owned()),
        ("CACHE_TTL_SECS", "3600".to_owned()),
    ]
}

fn x_cache(r: reqwest::Response) -> String {
    r.headers()["x-cache"].to_str().unwrap().to_owned()
}

/// GETs `url` every 50 ms until it is answered MISS (at most 5 s): the X-Cache answers.
async fn until_miss(url: &str) -> Vec<String> {
    let mut answers = Vec::new();
    for _ in 0..100 {
        let answer = x_cache(reqwest::get(url).await.unwrap());
        let done = answer == "MISS";
        answers.push(answer);
        if done {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    answers
}

async fn clear_through(replica: &str, pattern: Option<&str>) {
    let query = pattern.map_or(String::new(), |p| format!("?pattern={p}"));
    let cleared = reqwest::Client::new()
        .post(format!("{replica}/admin/cache/storage/clear{query}"))
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(cleared.status(), 200);
}

/// Two server processes on one store: a clear through one stops the other serving the result
/// it holds in memory (within SOURCE_ETAG_TTL_MS; CACHE_TTL_SECS is an hour here), and the
/// replica that cleared keeps serving without emptying its memory again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_clear_through_one_process_holds_for_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let (_a, a) = common::spawn_binary(&replica_env(dir.path(), "a"));
    let (_b, b) = common::spawn_binary(&replica_env(dir.path(), "b"));
    assert!(common::wait_healthy(&a).await && common::wait_healthy(&b).await);
    assert_eq!(
        common::upload_to(&a, "shared/lake.jpg", fixture("lake.jpg"))
            .await
            .status(),
        200
    );
    let url = format!("{b}/images/resize/shared/lake.jpg?width=64&format=png");
    assert_eq!(x_cache(reqwest::get(&url).await.unwrap()), "MISS");
    assert_eq!(x_cache(reqwest::get(&url).await.unwrap()), "HIT");
    // B's result reached the storage tier (written after its answer), so the clear removes it.
    let store = image_server::open_store(&replica_env(dir.path(), "a")[0].1, &[]).unwrap();
    await_persisted_at_least(&store, "shared/lake.jpg", 1).await;

    clear_through(&a, None).await;
    // B notices the clear at its next look at the marker; until then it may still answer from
    // memory. Without the marker it would answer HIT for CACHE_TTL_SECS.
    let answers = until_miss(&url).await;
    assert_eq!(
        answers.last().map(String::as_str),
        Some("MISS"),
        "{answers:?}"
    );
    assert_eq!(
        x_cache(reqwest::get(&url).await.unwrap()),
        "HIT",
        "cached again after"
    );
}

/// A purge of one source path, or of a prefix, through one process drops only the matching
/// results from the other's memory (docs/image-service.md, "Cache clear"): the rest stays
/// served from memory, and a later clear of everything drops everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purge_by_path_or_prefix_through_one_process_drops_only_those_on_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let (_a, a) = common::spawn_binary(&replica_env(dir.path(), "a"));
    let (_b, b) = common::spawn_binary(&replica_env(dir.path(), "b"));
    assert!(common::wait_healthy(&a).await && common::wait_healthy(&b).await);
    for path in ["shared/lake.jpg", "shared/kept.jpg", "team/x/lake.jpg"] {
        let uploaded = common::upload_to(&a, path, fixture("lake.jpg")).await;
        assert_eq!(uploaded.status(), 200);
    }
    let url = |path: &str| format!("{b}/images/resize/{path}?width=64&format=png");
    let (lake, kept, team) = (
        url("shared/lake.jpg"),
        url("shared/kept.jpg"),
        url("team/x/lake.jpg"),
    );
    for u in [&lake, &kept, &team] {
        assert_eq!(x_cache(reqwest::get(u).await.unwrap()), "MISS");
        assert_eq!(x_cache(reqwest::get(u).await.unwrap()), "HIT");
    }

    // One path: B drops that source's result within its look at the marker, keeps the others.
    clear_through(&a, Some("shared/lake.jpg")).await;
    let answers = until_miss(&lake).await;
    assert_eq!(
        answers.last().map(String::as_str),
        Some("MISS"),
        "{answers:?}"
    );
    assert_eq!(x_cache(reqwest::get(&kept).await.unwrap()), "HIT");
    assert_eq!(x_cache(reqwest::get(&team).await.unwrap()), "HIT");

    // A prefix: everything under team/ goes, shared/ stays.
    clear_through(&a, Some("team/*")).await;
    let answers = until_miss(&team).await;
    assert_eq!(
        answers.last().map(String::as_str),
        Some("MISS"),
        "{answers:?}"
    );
    assert_eq!(x_cache(reqwest::get(&kept).await.unwrap()), "HIT");
    assert_eq!(x_cache(reqwest::get(&lake).await.unwrap()), "HIT");

    // Everything.
    clear_through(&a, None).await;
    let answers = until_miss(&kept).await;
    assert_eq!(
        answers.last().map(String::as_str),
        Some("MISS"),
        "{answers:?}"
    );
    assert_eq!(x_cache(reqwest::get(&lake).await.unwrap()), "MISS");
}

/// `GET /images/info/{path}` describes a stored image with the key: format, size, orientation,
/// frames, alpha, ICC profile and EXIF (the values libvips and exiftool give, tests/info.rs in
/// image-pipeline); without the key nothing is told, since EXIF can hold a location.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn info_describes_a_stored_image_to_key_holders() {
    let s = TestServer::start(&Storage::Local).await;
    s.upload("info/photo.jpg", fixture("orient6.jpg")).await;
    s.upload("info/anim.gif", fixture("anim_5f.gif")).await;
    s.put_raw("info/notes.txt", b"not an image".to_vec()).await;
    let get = |path: &str, key: bool| {
        let request = s.client.get(s.url(&format!("/images/info/{path}")));
        let request = if key {
            request.header("x-api-key", KEY)
        } else {
            request
        };
        request.send()
    };
    let r = get("info/photo.jpg", false).await.unwrap();
    assert_eq!(r.status(), 401);
    let mut v: serde_json::Value = get("info/photo.jpg", true)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // Degrees from EXIF's degree, minute, second rationals: compared to a micro-degree.
    let exif = v["exif"].as_object_mut().unwrap();
    for (field, want) in [("gpsLatitude", -33.8688), ("gpsLongitude", 151.2093)] {
        let got = exif.remove(field).and_then(|v| v.as_f64()).unwrap();
        assert!((got - want).abs() < 1e-6, "{field}: {got}");
    }
    assert_eq!(
        v,
        serde_json::json!({
            "path": "info/photo.jpg", "format": "jpeg", "contentType": "image/jpeg",
            "width": 240, "height": 135, "orientation": 6, "frames": 1, "alpha": false,
            "iccProfile": null, "size": fixture("orient6.jpg").len(),
            "exif": {
                "make": "Canon", "model": "Canon EOS R5", "dateTimeOriginal": "2026:05:01 10:20:30",
                "exposureTime": 0.004, "fNumber": 5.6, "iso": 200, "focalLength": 35.0,
                "artist": "Jane Doe", "copyright": "© 2026 Example Photo Co.",
            },
        })
    );
    let v: serde_json::Value = get("info/anim.gif", true)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (v["frames"].as_u64(), v["alpha"].as_bool()),
        (Some(5), Some(true))
    );
    for (path, status) in [
        ("info/none.jpg", 404),
        ("info/notes.txt", 415),
        ("info/a%00b.jpg", 400),
        ("cache/x.jpg", 400),
    ] {
        assert_eq!(get(path, true).await.unwrap().status(), status, "{path}");
    }
    s.stop().await;
}

/// An animated GIF stays animated through the server (WebP by default, GIF on request), and
/// one over MAX_ANIMATION_FRAMES is refused 422 `too_many_frames` before decoding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn animations_stay_animated_and_their_frames_are_limited() {
    use image_pipeline::image::AnimationDecoder;
    let s = TestServer::start_local_with(|c| c.max_animation_frames = 5).await;
    s.upload("anim/dot.gif", fixture("anim_5f.gif")).await;
    let r = s.get("/images/resize/anim/dot.gif?width=32").await;
    assert_eq!(r.headers()["content-type"], "image/webp");
    let body = r.bytes().await.unwrap();
    let decoder =
        image_pipeline::image::codecs::webp::WebPDecoder::new(std::io::Cursor::new(&body)).unwrap();
    assert_eq!(decoder.into_frames().count(), 5);
    let r = s
        .get("/images/resize/anim/dot.gif?width=32&format=gif")
        .await;
    assert_eq!(r.headers()["content-type"], "image/gif");
    let (status, message) = error(&s, "/images/resize/anim/dot.gif?frame=9").await;
    assert_eq!(status, 400);
    assert!(message.contains("frame"), "{message}");
    s.stop().await;

    let s = TestServer::start_local_with(|c| c.max_animation_frames = 4).await;
    s.put_raw("anim/dot.gif", fixture("anim_5f.gif")).await;
    let r = s.get("/images/resize/anim/dot.gif?width=32").await;
    assert_eq!(r.status(), 422);
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["code"], "too_many_frames", "{v}");
    s.stop().await;
}

/// DEFAULT_OUTPUT_WIDTH and DEFAULT_OUTPUT_HEIGHT at 0 serve a bare URL at the source's size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_output_box_can_be_turned_off() {
    let s = TestServer::start_local_with(|c| {
        c.default_output_width = 0;
        c.default_output_height = 0;
    })
    .await;
    s.upload("big/lake.jpg", fixture("lake.jpg")).await;
    let (_, px, _) = image(&s, "/images/resize/big/lake.jpg?format=jpeg").await;
    assert_eq!(px.dimensions(), pixels(&fixture("lake.jpg")).dimensions());
    s.stop().await;
}

/// On a local directory, a path through a stored file (`a.jpg/b.jpg`) names nothing: 404 to
/// read, 400 to upload, never 503 "storage unavailable" (the store is fine).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_through_a_stored_file_are_client_errors_on_local_storage() {
    let s = TestServer::start(&Storage::Local).await;
    s.upload("f/photo.jpg", fixture("large_image.jpg")).await;
    let (status, msg) = error(&s, "/images/resize/f/photo.jpg/inner.jpg").await;
    assert_eq!(
        (status, msg.as_str()),
        (404, "image not found: f/photo.jpg/inner.jpg")
    );
    let r = s
        .client
        .post(s.url("/images/upload"))
        .header("x-api-key", KEY)
        .multipart(form("f/photo.jpg/inner.jpg", fixture("large_image.jpg")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        s.get("/images/resize/f/photo.jpg?width=10").await.status(),
        200
    );
    assert_eq!(s.get("/admin/health").await.status(), 200);
    s.stop().await;
}

on_every_storage!(
    upload_reply_urls_fetch_the_stored_image,
    every_parameter_on_real_photos,
    heic_and_exif_orientation,
    cache_etag_and_coalescing,
    bad_input_is_answered_not_panicked,
    paths_cannot_escape_the_storage_root,
    original_sdk_requests_work_unchanged,
    a_url_pinning_the_source_version_is_immutable;
    oversized_uploads_are_413,
    results_survive_a_restart_in_the_storage_tier,
    a_replaced_source_leaves_no_stale_results
);

/// A HEIC request waiting for the one HEIF decode at a time must not sit on a transform slot
/// (docs/architecture.md, Image server decisions). With two slots, the pipeline's HEIF decoder
/// held by the test, one HEIC request decoding (on a slot, at the decoder) and a second waiting
/// for the HEIF gate, a JPEG is still answered; both HEICs are answered once the decoder is
/// free. Before, the second HEIC took the other slot first and the JPEG waited for the decode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::await_holding_lock)] // the held guard is the decode in progress
async fn a_jpeg_is_not_held_up_behind_heic_requests_waiting_to_decode() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config_for(&Storage::Local, &dir).await;
    config.transform_concurrency = 2;
    config.cache_max_bytes = 0;
    config.storage_cache = false;
    let (s, metrics) = TestServer::start_with_metrics(config, dir).await;
    s.upload("h/window.heic", fixture("window.heic")).await;
    let small = samples::jpeg(
        &image_pipeline::image::RgbImage::from_pixel(
            64,
            64,
            image_pipeline::image::Rgb([9, 99, 199]),
        ),
        90,
    );
    s.upload("h/small.jpg", small).await;
    let get = |q: &'static str| {
        let (client, url) = (s.client.clone(), s.url(q));
        tokio::spawn(async move { client.get(url).send().await.unwrap().status().as_u16() })
    };

    let decoder = samples::hold_heif_decoder();
    let first = get("/images/resize/h/window.heic?width=800&format=jpeg");
    await_gauges(&metrics, 1, 0).await;
    let second = get("/images/resize/h/window.heic?width=700&format=jpeg");
    await_gauges(&metrics, 1, 1).await;
    // A hang here is the failure: the JPEG would wait for a decode the test holds back.
    let jpeg = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        get("/images/resize/h/small.jpg?width=32&format=jpeg"),
    )
    .await
    .expect("the JPEG waited for the held HEIF decode")
    .unwrap();
    assert_eq!(
        (jpeg, first.is_finished(), second.is_finished()),
        (200, false, false)
    );
    drop(decoder);
    assert_eq!((first.await.unwrap(), second.await.unwrap()), (200, 200));
    s.stop().await;
}

/// Polls the metrics listener at `metrics` until `transforms_running` and `transforms_waiting`
/// read `running` and `waiting` (up to 30 s, then fails naming what they read).
async fn await_gauges(metrics: &str, running: u32, waiting: u32) {
    let want = (Some(f64::from(running)), Some(f64::from(waiting)));
    let mut got = (None, None);
    for _ in 0..1500 {
        let text = reqwest::get(format!("{metrics}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        got = (
            sample(&text, "image_server_transforms_running"),
            sample(&text, "image_server_transforms_waiting"),
        );
        if got == want {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("transforms (running, waiting): want {want:?}, got {got:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misses_beyond_the_transform_queue_are_refused_429_and_hits_are_still_served() {
    let s = TestServer::start_local_with(|config| {
        config.transform_concurrency = 1;
        config.transform_queue_size = 2;
    })
    .await;
    s.upload("q/lake.jpg", fixture("lake.jpg")).await;
    let hit = "/images/resize/q/lake.jpg?width=40&format=png";
    assert_eq!(s.get(hit).await.status(), 200);

    // Twelve different misses at once: one runs, two wait, the rest are refused at once.
    let burst: Vec<_> = (0..12)
        .map(|i| {
            let client = reqwest::Client::new();
            let url = s.url(&format!("/images/resize/q/lake.jpg?width={}", 900 + i));
            tokio::spawn(async move { client.get(url).send().await.unwrap() })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let during = s.get(hit).await;
    assert_eq!(
        (
            during.status().as_u16(),
            during.headers()["x-cache"].to_str().unwrap()
        ),
        (200, "HIT")
    );
    let mut statuses = Vec::new();
    for r in burst {
        let r = r.await.unwrap();
        let status = r.status().as_u16();
        if status == 429 {
            assert_eq!(r.headers()["retry-after"], "1");
            let v: serde_json::Value = r.json().await.unwrap();
            assert!(v["error"].as_str().unwrap().contains("retry"), "{v}");
        }
        statuses.push(status);
    }
    statuses.sort_unstable();
    let served = statuses.iter().filter(|&&s| s == 200).count();
    assert!(
        served >= 3 && statuses.iter().all(|&s| s == 200 || s == 429),
        "{statuses:?}"
    );
    assert!(statuses.contains(&429), "{statuses:?}");
    // The queue drains: a refused request succeeds when retried.
    assert_eq!(
        s.get("/images/resize/q/lake.jpg?width=911").await.status(),
        200
    );
    s.stop().await;
}

/// With URL_SIGNING_KEY set, resize URLs are served only with a valid signature of their path
/// and query (any of the configured keys, the signature anywhere in the query), also from the
/// cache and for conditional requests; uploads and health are unaffected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resize_urls_must_be_signed_when_a_signing_key_is_set() {
    let s = TestServer::start_local_with(|config| {
        config.url_signing_key = Some("old-key, new-key".to_owned().into());
    })
    .await;
    let stored = s
        .upload("signed/a photo.jpg", fixture("large_image.jpg"))
        .await;
    assert_eq!(stored, "signed/a photo.jpg");

    let target = "signed/a%20photo.jpg?width=64&format=png";
    let sig = signature("new-key", target);
    let signed = format!("/images/resize/{target}&signature={sig}");
    let r = s.get(&signed).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-cache"], "MISS");
    let etag = r.headers()["etag"].to_str().unwrap().to_owned();
    assert_eq!(pixels(&r.bytes().await.unwrap()).width(), 64);
    // The old key of a rotation still verifies; the signature may come first.
    let old = signature("old-key", target);
    let r = s
        .get(&format!(
            "/images/resize/signed/a%20photo.jpg?signature={old}&width=64&format=png"
        ))
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-cache"], "HIT");

    let refused = [
        "/images/resize/signed/a%20photo.jpg?width=64&format=png".to_owned(),
        format!("/images/resize/signed/a%20photo.jpg?width=65&format=png&signature={sig}"),
        format!("/images/resize/signed/other.jpg?width=64&format=png&signature={sig}"),
        format!(
            "/images/resize/signed/a%20photo.jpg?width=64&format=png&signature={}",
            signature("wrong-key", target)
        ),
        format!("{signed}&signature={sig}"),
        "/images/resize/signed/a%20photo.jpg?width=64&format=png&signature=%%%".to_owned(),
    ];
    for q in &refused {
        let (status, message) = error(&s, q).await;
        assert_eq!(status, 403, "{q}");
        assert!(message.contains("signature"), "{message}");
    }
    // A cached result or a matching ETag is no way around the signature.
    for (target, want) in [
        (
            "/images/resize/signed/a%20photo.jpg?width=64&format=png",
            403,
        ),
        (signed.as_str(), 304),
    ] {
        let r = s.get_with(target, "if-none-match", &etag).await;
        assert_eq!(r.status(), want, "{target}");
    }
    // Sent byte for byte, with no query at all.
    let bare = format!(
        "/images/resize/signed/a%20photo.jpg?signature={}",
        signature("new-key", "signed/a%20photo.jpg")
    );
    assert_eq!(s.raw_get(&bare).await.0, 200);
    assert_eq!(s.get("/admin/health").await.status(), 200);
    s.stop().await;
}

/// The value of the OpenMetrics sample `name{labels}` in `text`, if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// With a metrics listener, `/metrics` there counts requests by route template and status,
/// cache hits and misses, and times transformations by source and output format; the public
/// port has no `/metrics`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_cache_results_and_transforms() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::config_for(&Storage::Local, &dir).await;
    let (s, metrics) = TestServer::start_with_metrics(config, dir).await;
    s.upload("m/lake.jpg", fixture("large_image.jpg")).await;
    let q = "/images/resize/m/lake.jpg?width=100&format=png";
    assert_eq!(s.get(q).await.headers()["x-cache"], "MISS");
    assert_eq!(s.get(q).await.headers()["x-cache"], "HIT");
    assert_eq!(s.get("/images/resize/m/absent.jpg").await.status(), 404);
    assert_eq!(s.get("/metrics").await.status(), 404);
    assert_eq!(s.get("/admin/health").await.status(), 200);

    let r = reqwest::get(format!("{metrics}/metrics")).await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    let text = r.text().await.unwrap();
    let resize = r#"method="GET",route="/images/resize/{*path}""#;
    let expect = [
        (format!("image_server_http_requests_total{{{resize},status=\"200\"}}"), 2.0),
        (format!("image_server_http_requests_total{{{resize},status=\"404\"}}"), 1.0),
        (
            r#"image_server_http_requests_total{method="POST",route="/images/upload",status="200"}"#.to_owned(),
            1.0,
        ),
        (format!("image_server_http_request_duration_seconds_count{{{resize}}}"), 3.0),
        // The test's one, and TestServer's readiness check at start.
        (
            r#"image_server_http_requests_total{method="GET",route="/admin/health",status="200"}"#.to_owned(),
            2.0,
        ),
        // No route at all: one series, whatever the path.
        (
            r#"image_server_http_requests_total{method="GET",route="other",status="404"}"#.to_owned(),
            1.0,
        ),
        (r#"image_server_resize_results_total{cache="miss"}"#.to_owned(), 1.0),
        (r#"image_server_resize_results_total{cache="hit"}"#.to_owned(), 1.0),
        (
            r#"image_server_transform_duration_seconds_count{source="jpeg",output="png"}"#.to_owned(),
            1.0,
        ),
        ("image_server_transforms_running".to_owned(), 0.0),
        ("image_server_transforms_waiting".to_owned(), 0.0),
        ("image_server_cache_entries".to_owned(), 1.0),
    ];
    for (series, value) in &expect {
        assert_eq!(sample(&text, series), Some(*value), "{series} in\n{text}");
    }
    assert!(
        sample(&text, "image_server_cache_bytes").unwrap() > 1000.0,
        "{text}"
    );
    assert!(
        !text.contains("absent.jpg"),
        "raw paths must not become labels"
    );
    s.stop().await;
}

/// The cache clear endpoint answers a malformed query in JSON, and only after the key check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_clear_query_is_a_json_400_after_the_key_check() {
    let s = TestServer::start(&Storage::Local).await;
    let url = s.url("/admin/cache/storage/clear?pattern=a&pattern=b");
    let r = s.client.post(&url).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = s
        .client
        .post(&url)
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: serde_json::Value = r.json().await.unwrap();
    assert!(v["error"].as_str().unwrap().contains("query"), "{v}");
    s.stop().await;
}

/// Without API_KEY the server generates one into DATA_DIR/api-key, accepts only it, and keeps
/// it across restarts (docs/configuration.md, image-server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_api_key_is_kept_in_the_data_dir_across_restarts() {
    let s = TestServer::start_local_with(|config| config.api_key = None).await;
    let file = s.config.data_dir.join("api-key");
    let key = std::fs::read_to_string(&file).unwrap().trim().to_owned();
    assert_eq!(key.len(), 64, "{key}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "only the owner may read the key file");
    }
    async fn upload(s: &TestServer, key: &str) -> reqwest::Response {
        s.upload_form_with_key(form("k/photo.jpg", fixture("large_image.jpg")), key)
            .await
    }
    assert_eq!(upload(&s, KEY).await.status(), 401);
    assert_eq!(upload(&s, &key).await.status(), 200);
    let (config, dir) = s.stop().await;
    let s = TestServer::start_with(config, dir).await;
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), key);
    assert_eq!(upload(&s, &key).await.status(), 200);
    s.stop().await;
}

/// CACHE_MAX_BYTES=0 and STORAGE_CACHE=false turn both tiers off: every request is
/// transformed, nothing is written under cache/, and the ETag is still the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_both_cache_tiers_off_every_request_is_transformed() {
    let s = TestServer::start_local_with(|config| {
        config.cache_max_bytes = 0;
        config.storage_cache = false;
    })
    .await;
    s.upload("o/photo.jpg", fixture("large_image.jpg")).await;
    let q = "/images/resize/o/photo.jpg?width=60&format=png";
    let mut etags = Vec::new();
    for _ in 0..3 {
        let r = s.get(q).await;
        assert_eq!(
            (
                r.status().as_u16(),
                r.headers()["x-cache"].to_str().unwrap()
            ),
            (200, "MISS")
        );
        etags.push(r.headers()["etag"].clone());
    }
    assert!(etags.windows(2).all(|w| w[0] == w[1]), "{etags:?}");
    let health: serde_json::Value = s.get("/admin/health").await.json().await.unwrap();
    assert_eq!(health["cache"]["entries"], 0, "{health}");
    // Stopping waits for every storage-tier write the requests started: none may exist.
    let store = std::sync::Arc::clone(&s.store);
    s.stop().await;
    assert_eq!(persisted(&store, "o/photo.jpg").await, 0);
}

/// Memory entries live CACHE_TTL_SECS: a hit within it, a new transformation after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_entries_expire_after_cache_ttl_secs() {
    let s = TestServer::start_local_with(|config| {
        config.cache_ttl_secs = 1;
        config.storage_cache = false;
    })
    .await;
    s.upload("e/photo.jpg", fixture("large_image.jpg")).await;
    let q = "/images/resize/e/photo.jpg?width=70&format=png";
    assert_eq!(s.get(q).await.headers()["x-cache"], "MISS");
    assert_eq!(s.get(q).await.headers()["x-cache"], "HIT");
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    assert_eq!(s.get(q).await.headers()["x-cache"], "MISS");
    s.stop().await;
}

async fn health(s: &TestServer) -> (u16, serde_json::Value) {
    let r = s.get("/admin/health").await;
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

/// A store that does not answer makes health 503 with `"status": "degraded"`; it recovers
/// when the store does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_is_503_degraded_while_the_store_fails() {
    let s = TestServer::start(&Storage::Local).await;
    let (status, v) = health(&s).await;
    assert_eq!((status, &v["status"]), (200, &serde_json::json!("ok")));
    // The storage root replaced by a file: every lookup below it fails.
    let root = s.dir.path().join("images");
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::write(&root, b"not a directory").unwrap();
    let (status, v) = health(&s).await;
    assert_eq!(status, 503, "{v}");
    assert_eq!(v["status"], "degraded");
    assert_eq!(v["storage"]["reachable"], false);
    assert_eq!(v["version"], "2.0.0");
    std::fs::remove_file(&root).unwrap();
    std::fs::create_dir(&root).unwrap();
    assert_eq!(health(&s).await.0, 200);
    s.stop().await;
}

/// Switches set to false or 0 are the switch left out (the same cached result), and a
/// watermark's position, opacity and scale default to southeast, 0.5 and 0.25.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switches_off_and_watermark_defaults_are_the_parameters_left_out() {
    let s = TestServer::start(&Storage::Local).await;
    s.upload("d/photo.jpg", fixture("large_image.jpg")).await;
    s.upload(
        "d/mark.png",
        samples::png(&RgbaImage::from_pixel(40, 40, Rgba([255, 0, 0, 255]))),
    )
    .await;
    let plain = "/images/resize/d/photo.jpg?width=200&format=png";
    let (bytes, _, _) = image(&s, plain).await;
    let off = format!("{plain}&flip=false&flop=0&grayscale=no&sharpen=off&enlarge=false");
    let r = s.get(&off).await;
    assert_eq!(r.headers()["x-cache"], "HIT", "the same transformation");
    assert_eq!(r.bytes().await.unwrap(), bytes);

    let marked = format!("{plain}&watermark=d/mark.png");
    let (defaults, px, _) = image(&s, &marked).await;
    let explicit =
        format!("{marked}&watermarkPosition=southeast&watermarkOpacity=0.5&watermarkScale=0.25");
    let r = s.get(&explicit).await;
    assert_eq!(r.headers()["x-cache"], "HIT", "the same transformation");
    assert_eq!(r.bytes().await.unwrap(), defaults);
    // Red at half opacity in the bottom-right corner, the photo untouched top-left.
    let plain_px = pixels(&bytes);
    let (w, h) = px.dimensions();
    let corner = px.get_pixel(w - 10, h - 10).0;
    let under = plain_px.get_pixel(w - 10, h - 10).0;
    let half_red = (f64::from(under[0]) + 255.0) / 2.0;
    assert!(
        (f64::from(corner[0]) - half_red).abs() < 3.0,
        "{corner:?} over {under:?}"
    );
    assert!(
        (f64::from(corner[1]) - f64::from(under[1]) / 2.0).abs() < 3.0,
        "{corner:?}"
    );
    assert_eq!(px.get_pixel(5, 5), plain_px.get_pixel(5, 5));
    s.stop().await;
}

/// `dpr` multiplies width and height: the result is the one of the multiplied size, from the
/// same cache entry; a bad ratio, or one that passes the output limit, is a 400 naming `dpr`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dpr_serves_the_multiplied_size_from_the_same_cache_entry() {
    let s = TestServer::start(&Storage::Local).await;
    s.upload("p/photo.jpg", fixture("large_image.jpg")).await;
    let (bytes, px, _) = image(
        &s,
        "/images/resize/p/photo.jpg?width=150&height=90&fit=cover&format=png",
    )
    .await;
    assert_eq!(px.dimensions(), (150, 90));
    let r = s
        .get("/images/resize/p/photo.jpg?format=png&fit=cover&width=100&height=60&dpr=1.5")
        .await;
    assert_eq!(r.headers()["x-cache"], "HIT");
    assert_eq!(r.bytes().await.unwrap(), bytes);
    for q in [
        "width=100&dpr=0",
        "width=100&dpr=6",
        "width=100&dpr=x",
        "width=5000&dpr=2",
    ] {
        let (status, msg) = error(&s, &format!("/images/resize/p/photo.jpg?{q}")).await;
        assert_eq!(status, 400, "{q}");
        assert!(msg.contains("dpr"), "{q}: {msg}");
    }
    s.stop().await;
}

/// The binary itself, configured as deploy/compose.yaml configures it (STORAGE_URL=s3://...
/// and the AWS_* variables), stores uploads in the bucket and serves resizes from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_reads_s3_settings_from_aws_variables() {
    let Some(endpoint) = common::s3_endpoint() else {
        eprintln!("skipped: IMAGE_TEST_S3_ENDPOINT is unset");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = common::config_for(&Storage::S3(endpoint.clone()), &dir).await;
    let (mut child, base) = common::spawn_binary(&[
        ("DATA_DIR", dir.path().join("data").display().to_string()),
        ("API_KEY", KEY.to_owned()),
        ("STORAGE_URL", config.storage_url.clone()),
        ("AWS_ENDPOINT_URL", endpoint.clone()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("AWS_ACCESS_KEY_ID", "local".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "local".to_owned()),
        ("AWS_ALLOW_HTTP", "true".to_owned()),
    ]);
    let client = reqwest::Client::new();
    let healthy = common::wait_healthy(&base).await;
    assert!(healthy, "the server did not come up healthy");
    let r = common::upload_to(&base, "env/photo.jpg", fixture("large_image.jpg")).await;
    assert_eq!(r.status(), 200);
    let r = client
        .get(format!(
            "{base}/images/resize/env/photo.jpg?width=64&format=png"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(pixels(&r.bytes().await.unwrap()).width(), 64);
    // The upload is in the bucket, where another S3 client finds it.
    let store = image_server::open_store(&config.storage_url, &config.storage_options).unwrap();
    let head = store
        .head(&object_store::path::Path::from("env/photo.jpg"))
        .await
        .unwrap();
    assert_eq!(head.size as usize, fixture("large_image.jpg").len());
    child.start_kill().unwrap();
    child.wait().await.unwrap();
}

/// `quality=auto` answers a valid image at its own cache key; `format=best` answers the
/// smallest of the formats the Accept header allows, each at its searched quality, with
/// `Vary: Accept`; bad values are a 400 naming the parameter (docs/image-service.md,
/// "Automatic quality").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quality_auto_and_format_best_pick_the_fewest_bytes_the_client_accepts() {
    let s = TestServer::start_local_with(|_| {}).await;
    s.upload("q/lake.jpg", fixture("lake.jpg")).await;
    let base = "/images/resize/q/lake.jpg?width=400";
    let mut auto_len = std::collections::HashMap::new();
    let formats: &[&str] = if cfg!(feature = "avif") {
        &["jpeg", "webp", "avif"]
    } else {
        &["jpeg", "webp"]
    };
    for f in formats {
        let q = format!("{base}&format={f}&quality=auto");
        let r = s.get(&q).await;
        assert_eq!(r.status(), 200, "{q}");
        assert_eq!(r.headers()["x-cache"], "MISS", "{q}");
        let etag = r.headers()["etag"].clone();
        let body = r.bytes().await.unwrap();
        assert_eq!(magic(&body), *f, "{q}");
        let again = s.get(&q).await;
        assert_eq!(
            again.headers()["x-cache"],
            "HIT",
            "the search's result is cached"
        );
        assert_eq!(again.bytes().await.unwrap(), body);
        let fixed = s.get(&format!("{base}&format={f}&quality=80")).await;
        assert_ne!(fixed.headers()["etag"], etag, "q=auto has its own key");
        let (w, _) = pixels(&body).dimensions();
        assert_eq!(w, 400);
        auto_len.insert(*f, body.len());
    }
    let best = format!("{base}&format=best");
    let mut cases = vec![
        ("image/webp,*/*", vec!["webp", "jpeg"]),
        ("*/*", vec!["jpeg"]),
    ];
    if cfg!(feature = "avif") {
        cases.push(("image/avif,image/webp,*/*", vec!["avif", "webp", "jpeg"]));
    }
    for (accept, allowed) in cases {
        let r = s.get_with(&best, "accept", accept).await;
        assert_eq!(r.status(), 200, "{accept}");
        assert_eq!(r.headers()["vary"], "Accept", "{accept}");
        let body = r.bytes().await.unwrap();
        let picked = magic(&body);
        let smallest = allowed.iter().map(|f| auto_len[f]).min().unwrap();
        assert!(allowed.contains(&picked), "{accept}: {picked}");
        assert_eq!(
            body.len(),
            smallest,
            "{accept}: {picked} is the smallest allowed"
        );
    }
    for (q, name) in [
        ("quality=autom", "quality"),
        ("quality=0", "quality"),
        ("format=bestest", "format"),
        ("format=best&quality=70", "quality"),
    ] {
        let (status, msg) = error(&s, &format!("{base}&{q}")).await;
        assert_eq!(status, 400, "{q}");
        assert!(msg.contains(name), "{q}: {msg}");
    }
    s.stop().await;
}

/// AUTO_QUALITY_FORMATS makes `auto` the quality of a listed format when a request names
/// none; an explicit quality still wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_quality_formats_make_auto_the_default_quality() {
    let s = TestServer::start_local_with(|c| {
        c.auto_quality_formats = vec![OutputFormat::Webp];
    })
    .await;
    s.upload("q/lake.jpg", fixture("lake.jpg")).await;
    let get = |q: &'static str| {
        let s = &s;
        async move {
            let r = s
                .get(&format!("/images/resize/q/lake.jpg?width=300&{q}"))
                .await;
            assert_eq!(r.status(), 200, "{q}");
            let etag = r.headers()["etag"].to_str().unwrap().to_owned();
            (etag, r.bytes().await.unwrap())
        }
    };
    let (default_tag, default_body) = get("format=webp").await;
    let (auto_tag, auto_body) = get("format=webp&quality=auto").await;
    let (fixed_tag, _) = get("format=webp&quality=80").await;
    assert_eq!((&default_tag, &default_body), (&auto_tag, &auto_body));
    assert_ne!(default_tag, fixed_tag);
    // JPEG is not listed: its default stays 80.
    let (jpeg_tag, _) = get("format=jpeg").await;
    let (jpeg80_tag, _) = get("format=jpeg&quality=80").await;
    assert_eq!(jpeg_tag, jpeg80_tag);
    s.stop().await;
}
