//! Every JSON error body carries a stable `code` beside `error`, one per distinct failure
//! (docs/image-service.md §7): one request per status class, through the real server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{KEY, TestServer, fixture, form, signature};
use image_pipeline::samples;
use pretty_assertions::assert_eq;
use secrecy::SecretString;

/// Status and `code` of an answer, after checking that `error` is a non-empty sentence.
async fn status_and_code(r: reqwest::Response) -> (u16, String) {
    let status = r.status().as_u16();
    let v: serde_json::Value = r.json().await.unwrap();
    assert!(
        v["error"].as_str().is_some_and(|e| !e.is_empty()),
        "no error sentence: {v}"
    );
    (status, v["code"].as_str().unwrap_or("(none)").to_owned())
}

fn code(status: u16, code: &str) -> (u16, String) {
    (status, code.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_failure_answers_its_own_code() {
    let s = TestServer::start_local_with(|c| c.max_upload_bytes = 200_000).await;
    s.put_raw("e/photo.jpg", fixture("large_image.jpg")).await;
    s.put_raw("e/notes.jpg", b"this is not an image".to_vec())
        .await;
    let lake = fixture("lake.jpg");
    s.put_raw("e/truncated.jpg", lake[..lake.len() / 3].to_vec())
        .await;
    s.put_raw("e/bomb.png", samples::png_bomb(60_000, 60_000))
        .await;
    for name in ["avc32.heif", "avif32-mini.heif", "corrupt-header.jpg"] {
        s.put_raw(&format!("e/{name}"), fixture(name)).await;
    }

    let cases = [
        (
            "/images/resize/e/photo.jpg?width=abc",
            code(400, "invalid_parameter"),
        ),
        (
            "/images/resize/e/photo.jpg?quality=101",
            code(400, "invalid_parameter"),
        ),
        (
            "/images/resize/cache/e/photo.jpg",
            code(400, "invalid_request"),
        ),
        ("/images/resize/e/missing.jpg", code(404, "not_found")),
        (
            "/images/resize/e/photo.jpg?watermark=e/none.png",
            code(404, "not_found"),
        ),
        ("/no/such/endpoint", code(404, "not_found")),
        ("/images/upload", code(405, "method_not_allowed")),
        ("/images/resize/e/notes.jpg", code(415, "not_an_image")),
        (
            "/images/resize/e/truncated.jpg?width=100",
            code(422, "undecodable_image"),
        ),
        ("/images/resize/e/bomb.png", code(422, "too_many_pixels")),
        // A HEIF coded as H.264 and a compact AVIF: images, but not ones we can decode.
        (
            "/images/resize/e/avc32.heif",
            code(415, "unsupported_image"),
        ),
        (
            "/images/resize/e/avif32-mini.heif",
            code(415, "unsupported_image"),
        ),
        (
            "/images/resize/e/corrupt-header.jpg",
            code(422, "undecodable_image"),
        ),
    ];
    for (target, want) in cases {
        assert_eq!(status_and_code(s.get(target).await).await, want, "{target}");
    }

    // Uploads: no key, a wrong key, too large, not an image, not one we decode, a bad body;
    // the cache clear without the key. The last column is a text `error` must contain.
    let post = |path: &str| s.client.post(s.url(path));
    let upload = |key: &str, bytes: Vec<u8>| {
        post("/images/upload")
            .header("x-api-key", key)
            .multipart(form("e/new.jpg", bytes))
    };
    let photo = || fixture("large_image.jpg");
    let bad_json = serde_json::json!({"image": "not base64!", "path": "e/x.jpg"});
    let requests = [
        (
            "no key",
            post("/images/upload").multipart(form("e/new.jpg", photo())),
            code(401, "invalid_api_key"),
            None,
        ),
        (
            "a wrong key",
            upload("wrong", photo()),
            code(401, "invalid_api_key"),
            None,
        ),
        (
            "too large",
            upload(KEY, lake.clone()),
            code(413, "payload_too_large"),
            None,
        ),
        (
            "plain text",
            upload(KEY, b"plain text".to_vec()),
            code(415, "not_an_image"),
            None,
        ),
        (
            "a HEIF coded as H.264",
            upload(KEY, fixture("avc32.heif")),
            code(415, "unsupported_image"),
            Some("H.264/AVC"),
        ),
        (
            "JSON with bad base64",
            post("/images/upload")
                .header("x-api-key", KEY)
                .json(&bad_json),
            code(400, "invalid_request"),
            None,
        ),
        (
            "a cache clear without the key",
            post("/admin/cache/storage/clear"),
            code(401, "invalid_api_key"),
            None,
        ),
    ];
    for (what, request, want, naming) in requests {
        let r = request.send().await.unwrap();
        let status = r.status().as_u16();
        let v: serde_json::Value = r.json().await.unwrap();
        let error = v["error"].as_str().unwrap_or_default();
        assert!(!error.is_empty(), "{what}: no error sentence: {v}");
        let got = (status, v["code"].as_str().unwrap_or("(none)").to_owned());
        assert_eq!(got, want, "{what}");
        if let Some(text) = naming {
            assert!(error.contains(text), "{what}: {v}");
        }
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsigned_url_is_invalid_url_signature_when_signing_is_on() {
    let s = TestServer::start_local_with(|c| {
        c.url_signing_key = Some(SecretString::from("sign-key".to_owned()));
    })
    .await;
    s.upload("e/photo.jpg", fixture("large_image.jpg")).await;
    let unsigned = s.get("/images/resize/e/photo.jpg?width=10").await;
    assert_eq!(
        status_and_code(unsigned).await,
        code(403, "invalid_url_signature")
    );
    let message = "e/photo.jpg?width=10";
    let signed = s
        .get(&format!(
            "/images/resize/{message}&signature={}",
            signature("sign-key", message)
        ))
        .await;
    assert_eq!(signed.status(), 200);
    s.stop().await;
}
