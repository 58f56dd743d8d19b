#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The HTTP surface against a hostile network, through the
//! real binary: a partial sign-in configuration refuses to start, `/api` is refused on a
//! non-loopback LISTEN without the gate or the opt-in, the settings test (a model call) is
//! refused cross-site, a skill URL cannot steer the installation token to another API path,
//! and a webhook body that stalls is answered 408 within its deadline.

mod common;

use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use test_doubles::fake_forge::{FakeForge, TEST_APP_ID, TEST_APP_KEY};
use test_doubles::scripted_model::Behavior;

/// The binary with exactly `env` (plus LISTEN, DATA_DIR and RUST_LOG), its log in `log`.
fn spawn(listen: &str, data: &Path, log: &Path, env: &[(&str, String)]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_review-server"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("LISTEN", listen)
        .env("DATA_DIR", data)
        .env(
            "DATABASE_URL",
            format!("sqlite://{}/review.db", data.display()),
        )
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// A running binary on `LISTEN=<ip>:<port>`, reached through 127.0.0.1.
struct Running {
    child: Child,
    url: String,
    log: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Running {
    /// GET `path` without headers: see [`get`].
    async fn get(&self, path: &str) -> (u16, Value) {
        get(&format!("{}{path}", self.url), &[]).await
    }

    /// Asserts that the server's log holds `text`.
    fn assert_logged(&self, text: &str) {
        let log = std::fs::read_to_string(&self.log).unwrap();
        assert!(log.contains(text), "{log}");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start_on(ip: &str, env: &[(&str, String)]) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let log = dir.path().join("server.log");
    let child = spawn(&format!("{ip}:{port}"), dir.path(), &log, env);
    let running = Running {
        child,
        url: format!("http://127.0.0.1:{port}"),
        log,
        _dir: dir,
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(r) = reqwest::get(format!("{}/health", running.url)).await
            && r.status() == 200
        {
            return running;
        }
        assert!(
            Instant::now() < deadline,
            "server did not become healthy; log: {}",
            std::fs::read_to_string(&running.log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn get(url: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut req = reqwest::Client::new().get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

// ---- finding 7: sign-in fails closed ------------------------------------------------------

#[tokio::test]
async fn a_partial_sign_in_configuration_refuses_to_start_naming_the_missing_variables() {
    const ALL: [&str; 3] = [
        "AUTH_SECRET",
        "FORGE_APP_CLIENT_ID",
        "FORGE_APP_CLIENT_SECRET",
    ];
    for given in [
        vec!["AUTH_SECRET"],
        vec!["FORGE_APP_CLIENT_ID"],
        vec!["FORGE_APP_CLIENT_SECRET"],
        vec!["AUTH_SECRET", "FORGE_APP_CLIENT_ID"],
        vec!["AUTH_SECRET", "FORGE_APP_CLIENT_SECRET"],
        vec!["FORGE_APP_CLIENT_ID", "FORGE_APP_CLIENT_SECRET"],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        let env: Vec<(&str, String)> = given.iter().map(|k| (*k, "value".to_owned())).collect();
        let mut child = spawn(
            &format!("127.0.0.1:{}", free_port()),
            dir.path(),
            &log,
            &env,
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("{given:?}: the server started");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(!status.success(), "{given:?}: {status}");
        let text = std::fs::read_to_string(&log).unwrap();
        let missing: Vec<&str> = ALL.into_iter().filter(|k| !given.contains(k)).collect();
        assert!(
            text.contains(&format!("but {} missing", missing.join(" and "))),
            "{given:?}: {text}"
        );
    }
}

#[tokio::test]
async fn without_the_gate_a_non_loopback_listen_refuses_the_api() {
    let s = start_on("0.0.0.0", &[]).await;
    for path in ["/api/settings", "/api/settings/test", "/api/auth-status"] {
        let (status, body) = s.get(path).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert_eq!(body["code"], "open_api_refused", "{path}");
        assert!(
            body["error"].as_str().unwrap().contains("AUTH_SECRET"),
            "{body}"
        );
    }
    let r = reqwest::Client::new()
        .put(format!("{}/api/settings", s.url))
        .json(&json!({"agent_api_key": "sk-replaced"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // /health and the webhook stay reachable; the boot log says which mode runs.
    assert_eq!(s.get("/health").await.0, 200);
    s.assert_logged("every /api request is refused");
}

/// Every exposure of `/api` but the refusal above (docs/security.md, "Sign-in"): how a
/// server on that LISTEN answers GET /api/settings and /api/auth-status, and the boot log line
/// naming the mode.
#[tokio::test]
async fn an_open_or_gated_listen_answers_the_api_as_its_boot_log_says() {
    let gate = vec![
        ("AUTH_SECRET", "a-long-random-auth-secret".to_owned()),
        ("FORGE_APP_CLIENT_ID", "Iv1.client".to_owned()),
        ("FORGE_APP_CLIENT_SECRET", "client-secret".to_owned()),
    ];
    let opt_in = vec![
        ("ALLOW_OPEN_API", "true".to_owned()),
        ("AGENT_API_KEY", "sk-env".to_owned()),
    ];
    let open = (200, json!({"enabled": false}));
    // (the behaviour, LISTEN's address, the environment, the answer to GET /api/settings,
    // the answer to GET /api/auth-status, the boot log's words)
    let cases = [
        (
            "ALLOW_OPEN_API opens a non-loopback listen by choice",
            "0.0.0.0",
            opt_in,
            (200, json!({})),
            open.clone(),
            "open to the network by ALLOW_OPEN_API=true",
        ),
        (
            "loopback without the gate stays open and says so",
            "127.0.0.1",
            vec![],
            (200, json!({})),
            open,
            "open on loopback only",
        ),
        (
            "the gate on a non-loopback listen asks for a session",
            "0.0.0.0",
            gate,
            (401, json!("Unauthorized")),
            (200, json!({"enabled": true})),
            "OAuth gate on (sign-in required)",
        ),
    ];
    for (behaviour, ip, env, settings, auth_status, logged) in cases {
        let s = start_on(ip, &env).await;
        assert_eq!(s.get("/api/settings").await, settings, "{behaviour}");
        assert_eq!(s.get("/api/auth-status").await, auth_status, "{behaviour}");
        s.assert_logged(logged);
    }
}

#[tokio::test]
async fn sign_in_secrets_reach_no_log_line() {
    const AUTH: &str = "canary-auth-secret-0f3e9b77";
    const CLIENT: &str = "canary-client-secret-c0ffee";
    // The refusal of a partial configuration names variables, never values.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("partial.log");
    let mut child = spawn(
        &format!("127.0.0.1:{}", free_port()),
        dir.path(),
        &log,
        &[("AUTH_SECRET", AUTH.into()), ("RUST_LOG", "debug".into())],
    );
    assert!(!child.wait().unwrap().success());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("AUTH_SECRET set but"), "{text}");
    assert!(!text.contains(AUTH), "{text}");
    // A gated server at debug level, asked with and without a session.
    let s = start_on(
        "0.0.0.0",
        &[
            ("AUTH_SECRET", AUTH.into()),
            ("FORGE_APP_CLIENT_ID", "Iv1.canary".into()),
            ("FORGE_APP_CLIENT_SECRET", CLIENT.into()),
            ("RUST_LOG", "debug".into()),
        ],
    )
    .await;
    assert_eq!(s.get("/api/settings").await.0, 401);
    let r = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{}/api/auth/signin?callbackUrl=/", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let text = std::fs::read_to_string(&s.log).unwrap();
    assert!(!text.contains(AUTH) && !text.contains(CLIENT), "{text}");
}

// ---- finding 8: the settings test is same-site --------------------------------------------

#[tokio::test]
async fn a_cross_site_settings_test_is_refused_without_a_model_call() {
    let (model, _d, s) = start_with_anthropic(
        Behavior::Reviewer,
        "anthropic/claude-a",
        &[("AGENT_API_KEY", "sk-env".into())],
    )
    .await;
    let url = format!("{}/api/settings/test", s.url);
    for headers in [
        vec![("sec-fetch-site", "cross-site")],
        vec![("origin", "http://evil.example")],
        vec![("origin", "null")],
    ] {
        let (status, body) = get(&url, &headers).await;
        assert_eq!(status, 403, "{headers:?}: {body}");
        assert_eq!(body["code"], "cross_site", "{headers:?}");
    }
    assert_eq!(model.requests().len(), 0);
    // Same-origin (the dashboard) and header-less (curl) calls still run it.
    let origin = s.url.clone();
    let (status, body) = get(
        &url,
        &[
            ("origin", origin.as_str()),
            ("sec-fetch-site", "same-origin"),
        ],
    )
    .await;
    assert_eq!((status, &body["ok"]), (200, &json!(true)), "{body}");
    assert_eq!(get(&url, &[]).await.0, 200);
    assert_eq!(model.requests().len(), 2);
}

// ---- finding 11: skill URLs ---------------------------------------------------------------

#[tokio::test]
async fn an_encoded_skill_path_is_refused_and_the_token_goes_nowhere_else() {
    let forge = FakeForge::start().await;
    forge.add_commit(
        "acme/skill-pack",
        "main",
        "1111111111111111111111111111111111111111",
        &[("skills/sql-safety/SKILL.md", b"# SQL safety\n")],
    );
    let (_d, s) = start_temp(&[
        ("FORGE_API_URL", forge.api_url()),
        ("FORGE_APP_ID", TEST_APP_ID.to_owned()),
        ("FORGE_APP_PRIVATE_KEY", TEST_APP_KEY.to_owned()),
    ])
    .await;
    let post = |body: Value| {
        let s = &s;
        async move {
            let r = s
                .http
                .post(format!("{}/api/skills", s.url))
                .json(&body)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let r = s
        .http
        .post(format!("{}/api/repos", s.url))
        .json(&json!({"full_name": "acme/skill-pack", "installation_id": 9}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    for url in [
        "https://github.com/acme/skill-pack/tree/..%2F..%2Fuser%2Finstallations/skills/sql-safety",
        "https://github.com/acme/skill-pack/tree/main%2F..%2F..%2F..%2Fuser/skills/sql-safety",
        "https://github.com/acme/skill-pack/tree/main/skills%2F..%2F..%2F..%2F..%2Fuser/sql-safety",
        "https://github.com/acme/skill-pack/tree/main/skills%5C..%5Cx/sql-safety",
        "https://github.com/acme/skill-pack/tree/main%252F..%252Fuser/skills/sql-safety",
        "https://github.com/acme%2F..%2F..%2Fuser/skill-pack/tree/main/skills/sql-safety",
    ] {
        let (status, body) = post(json!({ "url": url })).await;
        assert_eq!(status, 422, "{url}: {body}");
        assert_eq!(body["code"], "skill_install_failed", "{url}");
    }
    assert_eq!(
        forge
            .requests()
            .iter()
            .map(|r| r.path.clone())
            .collect::<Vec<_>>(),
        Vec::<String>::new(),
        "a refused URL reaches the forge"
    );
    // A good URL: every call is under the repository, the token with it.
    let (status, body) = post(json!({
        "url": "https://github.com/acme/skill-pack/tree/main/skills/sql-safety"
    }))
    .await;
    assert_eq!(status, 200, "{body}");
    let requests = forge.requests();
    assert!(!requests.is_empty());
    for r in requests {
        let allowed = r.path.starts_with("/repos/acme/skill-pack/commits/")
            || r.path
                .starts_with("/repos/acme/skill-pack/contents/skills/sql-safety")
            || r.path == "/app/installations/9/access_tokens";
        assert!(allowed, "unexpected forge call {} {}", r.method, r.path);
    }
}

// ---- finding 12: webhook bodies -----------------------------------------------------------

/// Sends the headers of a webhook delivery announcing `len` bytes and one byte of body, then
/// nothing more.
fn stalled_delivery(base: &str, len: usize) -> std::net::TcpStream {
    let addr = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /webhook/github HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         X-GitHub-Event: ping\r\nContent-Length: {len}\r\n\r\n{{"
    )
    .unwrap();
    stream.flush().unwrap();
    stream
}

#[tokio::test]
async fn a_stalled_webhook_body_is_answered_408_within_the_deadline() {
    let (_d, s) = start_temp(&[
        ("FORGE_WEBHOOK_SECRET", "whsec".into()),
        ("BODY_TIMEOUT_SECS", "2".into()),
    ])
    .await;
    let url = s.url.clone();
    let (elapsed, answer) = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let mut stream = stalled_delivery(&url, 1_000_000);
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        (started.elapsed(), answer)
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"code\":\"body_timeout\""), "{answer}");
    assert!(
        elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn webhook_bodies_beyond_the_concurrency_bound_get_503() {
    let (_d, s) = start_temp(&[
        ("FORGE_WEBHOOK_SECRET", "whsec".into()),
        ("BODY_TIMEOUT_SECS", "5".into()),
        ("WEBHOOK_MAX_CONCURRENT_BODIES", "1".into()),
    ])
    .await;
    // The stalled 2 MB body must hold the one permit before the large deliveries below ask
    // for it: had one of them been reading when the stalled head arrived, the stalled one
    // would be the delivery turned away. So the test waits until the server is reading the
    // stalled body (a first large delivery gets 503), opening it again if it was turned away.
    let url = s.url.clone();
    let large = vec![b' '; 1024 * 1024 + 1];
    // An unsigned ping delivery of `body`.
    let ping = |body: Vec<u8>| {
        s.http
            .post(format!("{}/webhook/github", s.url))
            .header("x-github-event", "ping")
            .body(body)
            .send()
    };
    let mut held = None;
    let mut answer = None;
    for attempt in 1..=5u64 {
        let u = url.clone();
        let stream = tokio::task::spawn_blocking(move || stalled_delivery(&u, 2_000_000))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200 * attempt)).await;
        let r = ping(large.clone()).await.unwrap();
        held = Some(stream);
        if r.status() == 503 {
            answer = Some(r);
            break;
        }
    }
    let held = held.unwrap();
    // While the stalled body is read, a second large delivery is turned away at once, and
    // ordinary small ones (a declared length of at most 1 MiB) still go through.
    let r = answer.expect("no 503 while a body was being read");
    assert_eq!(
        r.headers().get("retry-after").map(|v| v.to_str().unwrap()),
        Some("5")
    );
    assert_eq!(r.json::<Value>().await.unwrap()["code"], "webhook_busy");
    let small = ping(b"{}".to_vec()).await.unwrap();
    assert_eq!(small.status(), 401, "a small delivery is not counted");
    drop(held);
    // Once the stalled connection is gone the permit is back.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = ping(large.clone()).await.unwrap();
        if r.status() != 503 {
            assert_eq!(r.status(), 401);
            break;
        }
        assert!(Instant::now() < deadline, "the permit never came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
