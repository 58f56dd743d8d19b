//! Starts the real server on 127.0.0.1:0 over local storage, a real S3-compatible server or
//! Azurite, Microsoft's Azure Blob Storage emulator.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::sync::Arc;

use image_server::{Config, serve_with_metrics};
use object_store::ObjectStore;
use object_store::path::Path;

pub(crate) const KEY: &str = "test-key-0123456789";

#[derive(Debug, Clone)]
pub(crate) enum Storage {
    Local,
    S3(String),
    /// Azurite's blob endpoint with its account, `http://127.0.0.1:PORT/devstoreaccount1`.
    Azure(String),
}

pub(crate) struct TestServer {
    pub base: String,
    pub client: reqwest::Client,
    pub store: Arc<dyn ObjectStore>,
    pub dir: tempfile::TempDir,
    pub config: Config,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

/// The S3 endpoint to test against, from IMAGE_TEST_S3_ENDPOINT.
///
/// Under CI (`CI` set) an unset endpoint fails the test instead of skipping it: scripts/test.sh
/// starts moto there, so a missing endpoint means the S3 suite silently did not run.
pub(crate) fn s3_endpoint() -> Option<String> {
    let endpoint = std::env::var("IMAGE_TEST_S3_ENDPOINT")
        .ok()
        .filter(|s| !s.is_empty());
    assert!(
        endpoint.is_some() || !under_ci(),
        "IMAGE_TEST_S3_ENDPOINT is unset under CI: the S3 suite would be skipped (scripts/test.sh starts moto)"
    );
    endpoint
}

/// The Azurite blob endpoint to test against, from IMAGE_TEST_AZURE_ENDPOINT
/// (`http://127.0.0.1:PORT/devstoreaccount1`); under CI an unset one fails, as for S3.
pub(crate) fn azure_endpoint() -> Option<String> {
    let endpoint = std::env::var("IMAGE_TEST_AZURE_ENDPOINT")
        .ok()
        .filter(|s| !s.is_empty());
    assert!(
        endpoint.is_some() || !under_ci(),
        "IMAGE_TEST_AZURE_ENDPOINT is unset under CI: the Azure suite would be skipped (scripts/test.sh starts Azurite)"
    );
    endpoint
}

/// Azurite's account and its published key (the same in every Azurite).
const AZURITE_ACCOUNT: &str = "devstoreaccount1";
const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// Creates `container` in Azurite with a Shared Key request, as Azure's REST API takes it
/// (object_store reads and writes blobs but creates no container).
async fn create_azure_container(endpoint: &str, container: &str) {
    use base64::Engine;
    use hmac::{Hmac, Mac};
    let b64 = base64::engine::general_purpose::STANDARD;
    let date = httpdate::fmt_http_date(std::time::SystemTime::now());
    let version = "2021-08-06";
    let url = reqwest::Url::parse(&format!("{endpoint}/{container}?restype=container")).unwrap();
    let to_sign = format!(
        "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:{version}\n/{AZURITE_ACCOUNT}{}\nrestype:container",
        url.path()
    );
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&b64.decode(AZURITE_KEY).unwrap()).unwrap();
    mac.update(to_sign.as_bytes());
    let signature = b64.encode(mac.finalize().into_bytes());
    let r = reqwest::Client::new()
        .put(url)
        .header("x-ms-date", date)
        .header("x-ms-version", version)
        .header("content-length", "0")
        .header(
            "authorization",
            format!("SharedKey {AZURITE_ACCOUNT}:{signature}"),
        )
        .send()
        .await
        .unwrap();
    assert!(
        r.status().is_success(),
        "creating container: {} {}",
        r.status(),
        r.text().await.unwrap_or_default()
    );
}

/// Whether the tests run under CI (`CI` set to anything but empty, `0` or `false`), where a
/// part that cannot run must fail rather than skip.
pub(crate) fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

#[allow(unused_imports)] // not every test binary uses it
pub(crate) use image_pipeline::samples::fixture;

pub(crate) async fn config_for(storage: &Storage, dir: &tempfile::TempDir) -> Config {
    let mut config = Config::defaults();
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.data_dir = dir.path().join("data");
    config.api_key = Some(KEY.to_owned().into());
    config.storage_cache = true;
    config.cache_max_bytes = 64 * 1024 * 1024;
    config.source_etag_ttl_ms = 1;
    match storage {
        Storage::Local => {
            config.storage_url = format!("file://{}", dir.path().join("images").display());
        }
        Storage::S3(endpoint) => {
            let bucket = format!("img-{}", rand_suffix());
            // moto and s3s accept an unsigned bucket creation.
            let r = reqwest::Client::new()
                .put(format!("{endpoint}/{bucket}"))
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success(), "creating bucket: {}", r.status());
            config.storage_url = format!("s3://{bucket}");
            config.storage_options = vec![
                ("aws_endpoint".into(), endpoint.clone()),
                ("aws_allow_http".into(), "true".into()),
                ("aws_region".into(), "us-east-1".into()),
                ("aws_access_key_id".into(), "test".into()),
                ("aws_secret_access_key".into(), "test".into()),
            ];
        }
        Storage::Azure(endpoint) => {
            let container = format!("img-{}", rand_suffix());
            create_azure_container(endpoint, &container).await;
            config.storage_url = format!("az://{container}");
            config.storage_options = vec![
                ("azure_storage_account_name".into(), AZURITE_ACCOUNT.into()),
                ("azure_storage_account_key".into(), AZURITE_KEY.into()),
                ("azure_storage_endpoint".into(), endpoint.clone()),
                ("azure_allow_http".into(), "true".into()),
            ];
        }
    }
    config
}

fn rand_suffix() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let n = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{:x}{:x}", n, std::process::id())
}

impl TestServer {
    pub(crate) async fn start(storage: &Storage) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = config_for(storage, &dir).await;
        Self::start_with(config, dir).await
    }

    /// Starts on local storage with the test defaults changed by `configure`.
    pub(crate) async fn start_local_with(configure: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config_for(&Storage::Local, &dir).await;
        configure(&mut config);
        Self::start_with(config, dir).await
    }

    pub(crate) async fn start_with(config: Config, dir: tempfile::TempDir) -> Self {
        Self::start_serving(config, dir, None).await
    }

    /// Starts with a metrics listener on a free port; returns its base URL too.
    pub(crate) async fn start_with_metrics(
        config: Config,
        dir: tempfile::TempDir,
    ) -> (Self, String) {
        let metrics = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let metrics_base = format!("http://{}", metrics.local_addr().unwrap());
        (
            Self::start_serving(config, dir, Some(metrics)).await,
            metrics_base,
        )
    }

    async fn start_serving(
        config: Config,
        dir: tempfile::TempDir,
        metrics: Option<tokio::net::TcpListener>,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let store = image_server::open_store(&config.storage_url, &config.storage_options).unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(serve_with_metrics(
            config.clone(),
            listener,
            metrics,
            async move {
                let _ = rx.await;
            },
        ));
        let server = Self {
            base,
            client: reqwest::Client::new(),
            store,
            dir,
            config,
            shutdown: Some(tx),
            task: Some(task),
        };
        // The listener is bound, but start-up (the API key file, the store) runs in the task:
        // a first answer means it is done.
        let health = server.get("/admin/health").await;
        assert!(health.status().is_success(), "{}", health.status());
        server
    }

    /// Stops the server gracefully and returns its temp dir and config for a restart.
    pub(crate) async fn stop(mut self) -> (Config, tempfile::TempDir) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            t.await.unwrap().unwrap();
        }
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        (self.config.clone(), dir)
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Posts a multipart upload with the key and returns the response, whatever its status.
    pub(crate) async fn upload_form(&self, form: reqwest::multipart::Form) -> reqwest::Response {
        self.upload_form_with_key(form, KEY).await
    }

    /// [`Self::upload_form`] with another API key.
    pub(crate) async fn upload_form_with_key(
        &self,
        form: reqwest::multipart::Form,
        key: &str,
    ) -> reqwest::Response {
        self.client
            .post(self.url("/images/upload"))
            .header("x-api-key", key)
            .multipart(form)
            .send()
            .await
            .unwrap()
    }

    /// Uploads through the API (multipart) and returns the stored path.
    pub(crate) async fn upload(&self, path: &str, bytes: Vec<u8>) -> String {
        let form = reqwest::multipart::Form::new()
            .part(
                "file",
                reqwest::multipart::Part::bytes(bytes).file_name("x"),
            )
            .text("path", path.to_owned());
        let r = self.upload_form(form).await;
        assert_eq!(
            r.status(),
            200,
            "upload {path}: {}",
            r.text().await.unwrap()
        );
        let v: serde_json::Value = r.json().await.unwrap();
        v["path"].as_str().unwrap().to_owned()
    }

    /// Posts the original SDK's JSON upload body with the key.
    pub(crate) async fn upload_json(&self, body: &serde_json::Value) -> reqwest::Response {
        self.client
            .post(self.url("/images/upload"))
            .header("x-api-key", KEY)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// Writes bytes straight into the store, bypassing upload checks.
    pub(crate) async fn put_raw(&self, path: &str, bytes: Vec<u8>) {
        self.store
            .put(&Path::from(path), bytes.into())
            .await
            .unwrap();
    }

    pub(crate) async fn get(&self, path_and_query: &str) -> reqwest::Response {
        self.client
            .get(self.url(path_and_query))
            .send()
            .await
            .unwrap()
    }

    /// [`Self::get`] with one request header (`accept`, `if-none-match`, `authorization`).
    pub(crate) async fn get_with(
        &self,
        path_and_query: &str,
        name: &str,
        value: &str,
    ) -> reqwest::Response {
        self.client
            .get(self.url(path_and_query))
            .header(name, value)
            .send()
            .await
            .unwrap()
    }

    /// Sends a request line exactly as written (no client-side path normalisation).
    pub(crate) async fn raw_get(&self, target: &str) -> (u16, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let addr = self.base.trim_start_matches("http://");
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(
            format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.unwrap();
        let text = String::from_utf8_lossy(&buf).to_string();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (status, text)
    }
}

/// Starts the image-server binary on a free loopback port with only PATH and `envs` in its
/// environment (stderr piped, logging at warn so that the pipe never fills); returns it and its
/// base URL. Wait with [`wait_healthy`].
pub(crate) fn spawn_binary(envs: &[(&str, String)]) -> (tokio::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_image-server"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("LISTEN", format!("127.0.0.1:{port}"))
        .env("RUST_LOG", "warn")
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    (child, format!("http://127.0.0.1:{port}"))
}

/// A multipart upload form: `bytes` as the `file` part, to be stored at `path`.
pub(crate) fn form(path: &str, bytes: Vec<u8>) -> reqwest::multipart::Form {
    reqwest::multipart::Form::new()
        .part("file", reqwest::multipart::Part::bytes(bytes))
        .text("path", path.to_owned())
}

/// The original SDK's JSON upload body: `bytes` in base64 as `image`, and `path` when given.
pub(crate) fn json_upload(bytes: &[u8], path: Option<&str>) -> serde_json::Value {
    use base64::Engine;
    let image = base64::engine::general_purpose::STANDARD.encode(bytes);
    match path {
        Some(path) => serde_json::json!({"image": image, "path": path}),
        None => serde_json::json!({"image": image}),
    }
}

/// Uploads `bytes` as `path` (multipart, with the test key) to the server at `base`.
pub(crate) async fn upload_to(base: &str, path: &str, bytes: Vec<u8>) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{base}/images/upload"))
        .header("x-api-key", KEY)
        .multipart(form(path, bytes))
        .send()
        .await
        .unwrap()
}

/// Waits up to 10 s for `GET {base}/admin/health` to answer; whether it answered 200.
pub(crate) async fn wait_healthy(base: &str) -> bool {
    for _ in 0..100 {
        if let Ok(r) = reqwest::get(format!("{base}/admin/health")).await {
            return r.status() == 200;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    false
}

/// base64url (no padding) of HMAC-SHA256: the signature README "Signed URLs" documents,
/// computed here independently of the server's code.
pub(crate) fn signature(key: &str, message: &str) -> String {
    use base64::Engine;
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key.as_bytes()).unwrap();
    mac.update(message.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
}

pub(crate) fn magic(bytes: &[u8]) -> &'static str {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        "jpeg"
    } else if bytes.starts_with(b"\x89PNG") {
        "png"
    } else if bytes.len() > 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        "webp"
    } else if bytes.len() > 12 && &bytes[4..12] == b"ftypavif" {
        "avif"
    } else {
        "unknown"
    }
}
