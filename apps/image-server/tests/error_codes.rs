//! Every JSON error body carries a stable `code` beside `error`, one per distinct failure
//! (docs/image-service.md §7): one request per status class, through the real server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{TestServer, fixture, signature};
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

    // Uploads: no key, a wrong key, too large, not an image, a bad body.
    let form = |bytes: Vec<u8>| common::form("e/new.jpg", bytes);
    let no_key = s
        .client
        .post(s.url("/images/upload"))
        .multipart(form(fixture("large_image.jpg")))
        .send()
        .await
        .unwrap();
    assert_eq!(status_and_code(no_key).await, code(401, "invalid_api_key"));
    let wrong_key = s
        .upload_form_with_key(form(fixture("large_image.jpg")), "wrong")
        .await;
    assert_eq!(
        status_and_code(wrong_key).await,
        code(401, "invalid_api_key")
    );
    let large = s.upload_form(form(lake.clone())).await;
    assert_eq!(status_and_code(large).await, code(413, "payload_too_large"));
    let text = s.upload_form(form(b"plain text".to_vec())).await;
    assert_eq!(status_and_code(text).await, code(415, "not_an_image"));
    let avc = s.upload_form(form(fixture("avc32.heif"))).await;
    let v: serde_json::Value = avc.json().await.unwrap();
    assert_eq!(v["code"], "unsupported_image");
    assert!(v["error"].as_str().unwrap().contains("H.264/AVC"), "{v}");
    let bad_json = s
        .upload_json(&serde_json::json!({"image": "not base64!", "path": "e/x.jpg"}))
        .await;
    assert_eq!(
        status_and_code(bad_json).await,
        code(400, "invalid_request")
    );
    let clear = s
        .client
        .post(s.url("/admin/cache/storage/clear"))
        .send()
        .await
        .unwrap();
    assert_eq!(status_and_code(clear).await, code(401, "invalid_api_key"));
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
