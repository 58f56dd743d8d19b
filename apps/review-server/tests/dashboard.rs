#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The dashboard beside the API, against the real binary (docs/review-service.md §1, the dashboard): app paths get
//! the single-page app (or, without a build, one line saying how to build it), API paths keep
//! their JSON 404, and the committed OpenAPI copy the dashboard's types are generated from is
//! the server's own document. The serving rules themselves (cache headers, encodings, paths)
//! are unit tests in `src/routes/dashboard.rs`.

mod common;

use common::*;
use pretty_assertions::assert_eq;
use review_server::routes::dashboard::{CSP, IMMUTABLE, NOT_BUILT};
use serde_json::Value;
use std::path::PathBuf;
use utoipa::OpenApi;

async fn get(server: &Server, path: &str) -> reqwest::Response {
    let url = format!("{}{path}", server.url);
    server.http.get(url).send().await.unwrap()
}

fn dashboard_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../dashboard")
}

/// `dashboard/openapi.json` is what `npm run gen:api` turns into the client's types; it must
/// equal GET /api/openapi.json. `UPDATE_OPENAPI=1` rewrites it (then run `npm run gen:api`).
#[test]
fn openapi_copy_for_the_dashboard_is_current() {
    let path = dashboard_dir().join("openapi.json");
    let served = serde_json::to_value(review_server::routes::openapi::ApiDoc::openapi()).unwrap();
    if std::env::var("UPDATE_OPENAPI").is_ok_and(|v| v == "1") {
        let text = serde_json::to_string_pretty(&served).unwrap() + "\n";
        std::fs::write(&path, text).unwrap();
    }
    let committed: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_default())
            .unwrap_or(Value::Null);
    assert!(
        committed == served,
        "dashboard/openapi.json is stale: run `UPDATE_OPENAPI=1 cargo test -p review-server \
         --test dashboard openapi`, then `npm run gen:api` in dashboard/, and commit both"
    );
}

#[tokio::test]
async fn app_paths_get_the_dashboard_and_api_paths_keep_the_json_404() {
    let (_dir, server) = start_temp(&[]).await;
    let built = dashboard_dir().join("dist/index.html").is_file();
    for path in [
        "/",
        "/reviews/3",
        "/repos/acme/widgets",
        "/settings?tab=keys",
    ] {
        let r = get(&server, path).await;
        assert_eq!(r.headers()["content-security-policy"], CSP, "{path}");
        assert_eq!(r.headers()["cache-control"], "no-cache", "{path}");
        if built {
            assert_eq!(r.status(), 200, "{path}");
            assert_eq!(r.headers()["content-type"], "text/html", "{path}");
            assert!(r.text().await.unwrap().contains("<div id=\"root\">"));
        } else {
            assert_eq!(r.status(), 503, "{path}");
            assert_eq!(r.text().await.unwrap(), NOT_BUILT);
        }
    }
    for path in ["/api/nope", "/api", "/internal/nope", "/webhook/nope"] {
        let r = get(&server, path).await;
        assert_eq!(r.status(), 404, "{path}");
        assert_eq!(
            r.json::<Value>().await.unwrap(),
            serde_json::json!({"error": "not found", "code": "not_found"}),
            "{path}"
        );
    }
    // Writes outside the API are not the app's: the JSON 404 too.
    let r = server
        .http
        .post(format!("{}/reviews", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // The API's own routes are untouched.
    assert_eq!(
        server.get_json("/health").await,
        serde_json::json!({"ok": true})
    );
    assert!(server.get_json("/api/repos").await.is_array());
}

/// With a build, its hashed script is served precompressed and immutable.
#[tokio::test]
async fn built_assets_are_served_compressed_and_immutable() {
    let assets = dashboard_dir().join("dist/assets");
    let Some(script) = std::fs::read_dir(&assets).ok().and_then(|d| {
        d.filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| n.ends_with(".js") && assets.join(format!("{n}.br")).is_file())
    }) else {
        eprintln!("dashboard/dist has no compressed script: nothing to check without a build");
        return;
    };
    let (_dir, server) = start_temp(&[]).await;
    let url = format!("{}/assets/{script}", server.url);
    let plain = std::fs::read(assets.join(&script)).unwrap();
    let brotli = std::fs::read(assets.join(format!("{script}.br"))).unwrap();
    // reqwest is built without decompression: the bytes arrive as sent.
    for (accept, encoding, body) in [
        ("br, gzip", Some("br"), &brotli),
        ("identity", None, &plain),
    ] {
        let r = server
            .http
            .get(&url)
            .header("accept-encoding", accept)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["cache-control"], IMMUTABLE);
        assert_eq!(r.headers()["content-type"], "text/javascript");
        assert_eq!(
            r.headers()
                .get("content-encoding")
                .map(|v| v.to_str().unwrap()),
            encoding
        );
        assert_eq!(&r.bytes().await.unwrap().to_vec(), body);
    }
}
