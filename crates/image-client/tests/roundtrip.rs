//! The client against the real server on 127.0.0.1:0.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use image_client::{
    ClientError, Format, ImageClient, ResizeOptions, WatermarkMark, WatermarkOptions,
};
use pretty_assertions::assert_eq;

async fn start() -> (String, tempfile::TempDir, tokio::sync::oneshot::Sender<()>) {
    start_with(None).await
}

async fn start_with(
    url_signing_key: Option<&str>,
) -> (String, tempfile::TempDir, tokio::sync::oneshot::Sender<()>) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = image_server::Config::defaults();
    config.url_signing_key = url_signing_key.map(|k| k.to_owned().into());
    config.data_dir = dir.path().join("data");
    config.storage_url = "memory://".into();
    config.api_key = Some("client-key".to_owned().into());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(image_server::serve(config, listener, async move {
        let _ = rx.await;
    }));
    (base, dir, tx)
}

fn photo() -> Vec<u8> {
    std::fs::read(format!(
        "{}/../image-pipeline/tests/fixtures/large_image.jpg",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[tokio::test]
async fn upload_returns_the_path_and_resize_url_serves_it() {
    let (base, _dir, _stop) = start().await;
    let client = ImageClient::new(&base, "client-key").unwrap();
    let uploaded = client
        .upload(photo(), "albums/one photo.jpg", "image/jpeg")
        .await
        .unwrap();
    assert_eq!(uploaded.path, "albums/one photo.jpg");
    assert_eq!(uploaded.url, "/images/resize/albums/one%20photo.jpg");
    let path = uploaded.path;
    let url = client.resize_url(
        &path,
        &ResizeOptions {
            width: Some(200),
            format: Some(Format::Png),
            grayscale: true,
            ..Default::default()
        },
    );
    let body = reqwest::get(&url).await.unwrap().bytes().await.unwrap();
    let img = image_pipeline::decode_to_rgba(&body, u64::MAX).unwrap();
    assert_eq!(img.dimensions(), (200, 133));
    // In CSS pixels for a 1.5x screen.
    let url = client.resize_url(
        &path,
        &ResizeOptions {
            width: Some(120),
            dpr: Some(1.5),
            format: Some(Format::Png),
            ..Default::default()
        },
    );
    assert!(url.contains("width=120&dpr=1.5"), "{url}");
    let body = reqwest::get(&url).await.unwrap().bytes().await.unwrap();
    let img = image_pipeline::decode_to_rgba(&body, u64::MAX).unwrap();
    assert_eq!(img.width(), 180);
}

/// A URL pinned to the upload's version is cached for a year; a text watermark is drawn.
#[tokio::test]
async fn version_pins_and_text_watermarks_reach_the_server() {
    let (base, _dir, _stop) = start().await;
    let client = ImageClient::new(&base, "client-key").unwrap();
    let uploaded = client
        .upload(photo(), "pinned/photo.jpg", "image/jpeg")
        .await
        .unwrap();
    let pinned = ResizeOptions {
        width: Some(300),
        format: Some(Format::Png),
        version: uploaded.version.clone(),
        ..Default::default()
    };
    let r = reqwest::get(client.resize_url(&uploaded.path, &pinned))
        .await
        .unwrap();
    assert_eq!(
        r.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    let plain = image_pipeline::decode_to_rgba(&r.bytes().await.unwrap(), u64::MAX).unwrap();
    let marked = ResizeOptions {
        watermark: Some(WatermarkOptions {
            mark: WatermarkMark::Text("© Acme".into()),
            position: Some("centre".into()),
            opacity: Some(1.0),
            scale: Some(0.5),
        }),
        ..pinned
    };
    let url = client.resize_url(&uploaded.path, &marked);
    assert!(url.contains("watermark_text=%C2%A9+Acme"), "{url}");
    let body = reqwest::get(&url).await.unwrap().bytes().await.unwrap();
    let img = image_pipeline::decode_to_rgba(&body, u64::MAX).unwrap();
    assert_eq!(img.dimensions(), plain.dimensions());
    assert_ne!(img.as_raw(), plain.as_raw(), "the text is drawn");

    let placeholder = |options: ResizeOptions| {
        let url = client.resize_url(&uploaded.path, &options);
        async move {
            let r = reqwest::get(&url).await.unwrap();
            assert_eq!(r.headers()["content-type"], "application/json", "{url}");
            r.json::<serde_json::Value>().await.unwrap()
        }
    };
    let hash = placeholder(ResizeOptions {
        width: Some(300),
        format: Some(Format::Blurhash),
        blurhash_components: Some((5, 2)),
        ..Default::default()
    })
    .await;
    assert_eq!(hash["components"], serde_json::json!({"x": 5, "y": 2}));
    assert_eq!(hash["blurhash"].as_str().unwrap().len(), 4 + 2 * 10);
    let lqip = placeholder(ResizeOptions {
        width: Some(300),
        lqip: true,
        ..Default::default()
    })
    .await;
    assert!(
        lqip["lqip"]
            .as_str()
            .unwrap()
            .starts_with("data:image/webp;base64,")
    );
    assert_eq!(
        (&lqip["width"], &lqip["height"]),
        (&serde_json::json!(300), &serde_json::json!(200))
    );
}

#[tokio::test]
async fn a_wrong_key_is_reported_with_the_server_message() {
    let (base, _dir, _stop) = start().await;
    let client = ImageClient::new(&base, "wrong").unwrap();
    match client.upload(photo(), "x.jpg", "image/jpeg").await {
        Err(ClientError::Status {
            status: 401,
            message,
        }) => assert!(message.contains("API key")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn signed_urls_are_served_by_a_server_that_requires_them() {
    let (base, _dir, _stop) = start_with(Some("sign-me")).await;
    let client = ImageClient::new(&base, "client-key").unwrap();
    let path = client
        .upload(photo(), "signed/one photo.jpg", "image/jpeg")
        .await
        .unwrap()
        .path;
    let options = ResizeOptions {
        width: Some(120),
        format: Some(Format::Jpeg),
        quality: Some(70),
        ..Default::default()
    };
    let unsigned = client.resize_url(&path, &options);
    assert_eq!(reqwest::get(&unsigned).await.unwrap().status(), 403);
    let signed = client
        .clone()
        .with_signing_key("sign-me")
        .resize_url(&path, &options);
    let r = reqwest::get(&signed).await.unwrap();
    assert_eq!(r.status(), 200, "{signed}");
    let img = image_pipeline::decode_to_rgba(&r.bytes().await.unwrap(), u64::MAX).unwrap();
    assert_eq!(img.width(), 120);
}

#[tokio::test]
async fn an_invalid_content_type_is_refused_before_sending() {
    let client = ImageClient::new("http://127.0.0.1:9", "k").unwrap();
    match client.upload(photo(), "x.jpg", "not a type").await {
        Err(ClientError::InvalidContentType(t)) => assert_eq!(t, "not a type"),
        other => panic!("{other:?}"),
    }
}
