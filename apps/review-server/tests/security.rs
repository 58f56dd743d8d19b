#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The defences of docs/security.md against the real binary: the Host allow-list and the
//! cross-site refusal (OAuth gate off and on), the body limits, redelivered webhooks, the
//! review budget, and secrets kept out of logs, rows and transcripts.

mod common;

use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_doubles::fake_forge::{FakeForge, TEST_APP_ID, TEST_APP_KEY};
use test_doubles::scripted_model::Behavior;
use utoipa::OpenApi;

/// A server with the OAuth gate on (`gated`) or off, nothing else configured.
async fn server(gated: bool) -> (tempfile::TempDir, Server, Option<FakeForge>) {
    if !gated {
        let (dir, server) = start_temp(&[]).await;
        return (dir, server, None);
    }
    let forge = FakeForge::start().await;
    forge.set_oauth_client("Iv1.client", "client-secret");
    let (dir, server) = start_temp(&[
        ("AUTH_SECRET", "an auth secret of some length".to_owned()),
        ("FORGE_APP_CLIENT_ID", "Iv1.client".to_owned()),
        ("FORGE_APP_CLIENT_SECRET", "client-secret".to_owned()),
        ("ALLOWED_FORGE_USERS", "octocat".to_owned()),
        ("FORGE_URL", forge.api_url()),
        ("FORGE_API_URL", forge.api_url()),
    ])
    .await;
    (dir, server, Some(forge))
}

async fn send(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut req = server.http.request(method, format!("{}{path}", server.url));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn a_dns_rebinding_host_is_refused_with_the_gate_off_and_on() {
    for gated in [false, true] {
        let (_dir, s, _forge) = server(gated).await;
        for path in ["/api/settings", "/api/repos", "/api/auth-status", "/"] {
            let r = send(
                &s,
                reqwest::Method::GET,
                path,
                &[("host", "rebind.attacker.example:8080")],
            )
            .await;
            assert_eq!(r.status(), 403, "gated={gated} {path}");
            let body: Value = r.json().await.unwrap();
            assert_eq!(body["code"], "forbidden_host", "{body}");
            assert!(
                body["error"].as_str().unwrap().contains("ALLOWED_HOSTS"),
                "{body}"
            );
        }
        // The server's own names pass (the gate may still ask for a session).
        for host in ["127.0.0.1", "localhost:8080", "[::1]:8080"] {
            let r = send(
                &s,
                reqwest::Method::GET,
                "/api/auth-status",
                &[("host", host)],
            )
            .await;
            assert_eq!(r.status(), 200, "gated={gated} {host}");
        }
        // The forge's deliveries and probes carry their own Host.
        let r = send(
            &s,
            reqwest::Method::GET,
            "/health",
            &[("host", "review-server.default.svc")],
        )
        .await;
        assert_eq!(r.status(), 200);
        let r = s
            .http
            .post(format!("{}/webhook/github", s.url))
            .header("host", "reviews.example.com")
            .header("x-github-event", "ping")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401, "unsigned, but past the Host check");
    }
}

#[tokio::test]
async fn allowed_hosts_and_auth_url_extend_the_list() {
    let (_dir, s) = start_temp(&[
        (
            "ALLOWED_HOSTS",
            "reviews.internal, ops.example.org".to_owned(),
        ),
        ("AUTH_URL", "https://reviews.example.com".to_owned()),
    ])
    .await;
    for host in [
        "reviews.internal:8080",
        "ops.example.org",
        "reviews.example.com",
    ] {
        let r = send(&s, reqwest::Method::GET, "/api/repos", &[("host", host)]).await;
        assert_eq!(r.status(), 200, "{host}");
    }
    let r = send(
        &s,
        reqwest::Method::GET,
        "/api/repos",
        &[("host", "other.example")],
    )
    .await;
    assert_eq!(r.status(), 403);
}

#[tokio::test]
async fn a_cross_site_write_is_refused_with_the_gate_off_and_on() {
    for gated in [false, true] {
        let (_dir, s, _forge) = server(gated).await;
        let own_origin = s.url.clone();
        for (method, path) in [
            (reqwest::Method::POST, "/api/repos/acme/widgets/improve"),
            (reqwest::Method::POST, "/api/reviews/1/retry"),
            (reqwest::Method::POST, "/api/reviews/1/stop"),
            (reqwest::Method::PUT, "/api/settings"),
            (reqwest::Method::DELETE, "/api/repos/acme/widgets"),
            (reqwest::Method::POST, "/api/chat"),
        ] {
            for headers in [
                vec![("origin", "http://attacker.example")],
                vec![("origin", "null")],
                vec![("sec-fetch-site", "cross-site")],
                vec![
                    ("origin", "http://attacker.example"),
                    ("sec-fetch-site", "cross-site"),
                ],
            ] {
                let r = send(&s, method.clone(), path, &headers).await;
                assert_eq!(r.status(), 403, "gated={gated} {method} {path} {headers:?}");
                let body: Value = r.json().await.unwrap();
                assert!(body["error"].as_str().unwrap().contains("cross-site"));
                assert_eq!(body["code"], "cross_site", "{body}");
            }
        }
        // The same request from the dashboard's own origin reaches the handler (the gate, when
        // on, then asks for a session).
        let r = send(
            &s,
            reqwest::Method::PUT,
            "/api/settings",
            &[
                ("origin", own_origin.as_str()),
                ("sec-fetch-site", "same-origin"),
                ("content-type", "application/json"),
            ],
        )
        .await;
        let expected = if gated { 401 } else { 422 };
        assert_eq!(r.status(), expected, "gated={gated}");
    }
    // Nothing was changed by the refused writes.
    let (_dir, s, _) = server(false).await;
    let r = s
        .http
        .put(format!("{}/api/settings", s.url))
        .header("origin", "http://attacker.example")
        .json(&json!({ "agent_model": "openai/gpt-evil" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(s.get_json("/api/settings").await, json!({}));
}

#[tokio::test]
async fn api_bodies_over_1_mib_are_413_while_a_2_mib_delivery_is_accepted() {
    let (_dir, s) = start_temp(&[("FORGE_WEBHOOK_SECRET", SECRET.to_owned())]).await;
    let big = format!(
        "{{\"default_prompt\": \"{}\"}}",
        "x".repeat(2 * 1024 * 1024)
    );
    for path in ["/api/settings", "/api/chat", "/internal/reviews/1/findings"] {
        let method = if path == "/api/settings" {
            reqwest::Method::PUT
        } else {
            reqwest::Method::POST
        };
        let r = s
            .http
            .request(method, format!("{}{path}", s.url))
            .header("content-type", "application/json")
            .body(big.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 413, "{path}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["code"], "payload_too_large", "{body}");
        assert!(
            body["error"].as_str().unwrap().contains("too large"),
            "{body}"
        );
    }
    // A chunked body without Content-Length is cut off the same way.
    let chunks = futures::stream::iter(
        (0..40).map(|_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b' '; 64 * 1024]))),
    );
    let r = s
        .http
        .put(format!("{}/api/settings", s.url))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    assert_eq!(s.get_json("/api/settings").await, json!({}));
    // GitHub sends up to 25 MiB: a 2 MiB ping is verified and acknowledged.
    let delivery = serde_json::to_vec(&json!({ "zen": "x".repeat(2 * 1024 * 1024) })).unwrap();
    let r = s.deliver("ping", &delivery, Some(SECRET)).await;
    assert_eq!(r.status(), 200);
}

/// Clients generated from the OpenAPI document must know the 413 too: every operation that
/// takes a body documents it with the error body (schemathesis fails on an undocumented status).
#[test]
fn every_operation_with_a_body_documents_the_413() {
    let doc = serde_json::to_value(review_server::routes::openapi::ApiDoc::openapi()).unwrap();
    let mut with_body = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if operation.get("requestBody").is_none() {
                continue;
            }
            with_body += 1;
            let answer = &operation["responses"]["413"];
            assert_eq!(
                answer["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/ErrorBody",
                "{method} {path}"
            );
        }
    }
    assert!(with_body >= 7, "{with_body} operations with a body");
}

/// POST a pull_request delivery with a fixed delivery id.
async fn deliver_with_id(w: &World, id: &str) -> reqwest::Response {
    let body = w.pull_request_payload("opened", &w.upstream.sha("feature"));
    w.server
        .http
        .post(format!("{}/webhook/github", w.server.url))
        .header("X-GitHub-Event", "pull_request")
        .header("X-GitHub-Delivery", id)
        .header("content-type", "application/json")
        .header("X-Hub-Signature-256", forge::sign(SECRET.as_bytes(), &body))
        .body(body)
        .send()
        .await
        .unwrap()
}

/// Only a delivery that starts a review claims its id: one for a repo nobody enabled is
/// answered without a write, so when the repo is enabled later, GitHub's redelivery of that
/// same id starts the review.
#[tokio::test]
async fn a_delivery_for_a_disabled_repo_claims_no_id() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-test", true).await;
    let id = "5c2f4a4e-cc78-11e3-81ab-4c9367dc0958";
    let r = deliver_with_id(&w, id).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        w.server
            .get_json(&format!("/api/repos/{}/pr/1", w.full_name()))
            .await,
        json!([]),
        "a disabled repo is not reviewed"
    );
    w.server.enable(&w.full_name(), None).await;
    let r = deliver_with_id(&w, id).await;
    assert_eq!(r.status(), 200);
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
}

#[tokio::test]
async fn a_delivery_sent_twice_is_reviewed_once_also_across_a_restart() {
    let mut w = World::start(Behavior::Reviewer, "anthropic/claude-test", true).await;
    w.server.enable(&w.full_name(), None).await;
    for _ in 0..2 {
        let r = deliver_with_id(&w, "72d3162e-cc78-11e3-81ab-4c9367dc0958").await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.json::<Value>().await.unwrap(), json!({ "ok": true }));
    }
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    // Restart on the same data: the id is remembered.
    let data_dir = w.server.data_dir.clone();
    let env = server_env(&w);
    w.server.child.kill().unwrap();
    w.server.child.wait().unwrap();
    w.server = Server::start(&data_dir, &env).await;
    let r = deliver_with_id(&w, "72d3162e-cc78-11e3-81ab-4c9367dc0958").await;
    assert_eq!(r.status(), 200);
    // A new id is a new delivery; of a head already reviewed, so it is recorded skipped and
    // posts nothing (one review per head).
    let r = deliver_with_id(&w, "0b4e8ea0-cc79-11e3-8f5e-5b1b2a1d6c4c").await;
    assert_eq!(r.status(), 200);
    // The handler records the delivery and creates the review row before it answers, so the
    // rows of the three deliveries above are all there by now.
    let rows = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0]["status"], "skipped", "{rows:?}");
    assert_eq!(w.forge.reviews().len(), 1);
}

/// The environment [`World::start`] gave its server, to restart it on the same data.
fn server_env(w: &World) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("FORGE_WEBHOOK_SECRET", SECRET.to_owned()),
        ("FORGE_APP_ID", TEST_APP_ID.to_owned()),
        ("FORGE_APP_PRIVATE_KEY", TEST_APP_KEY.to_owned()),
        ("FORGE_API_URL", w.forge.api_url()),
        ("FORGE_GIT_URL", w.upstream.git_url()),
    ];
    env.extend(model_env(&w.model, "anthropic/claude-test", true));
    env
}

// ---- the review budget -----------------------------------------------------------------------

/// Tokens used by the first `steps` model answers of a review, from its transcript.
async fn tokens_of_first_steps(server: &Server, review_id: i64, steps: usize) -> i64 {
    let session = server
        .get_json(&format!("/api/reviews/{review_id}/session"))
        .await;
    let mut found: Vec<&Value> = Vec::new();
    collect_usages(&session, &mut found);
    assert!(found.len() >= steps, "{session}");
    found[..steps]
        .iter()
        .map(|u| {
            u.as_object()
                .unwrap()
                .values()
                .filter_map(Value::as_i64)
                .sum::<i64>()
        })
        .sum()
}

/// Every `usage` object of assistant records, in order.
fn collect_usages<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    match v {
        Value::Object(m) => {
            if m.get("type") == Some(&json!("assistant"))
                && let Some(u) = m.get("usage")
            {
                out.push(u);
            }
            for x in m.values() {
                collect_usages(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_usages(x, out)),
        _ => {}
    }
}

#[tokio::test]
async fn review_max_tokens_stops_a_review_after_its_first_model_answer_without_retry() {
    let w = World::start_with(
        Upstream::new(),
        Behavior::Reviewer,
        "anthropic/claude-test",
        true,
        &[
            ("REVIEW_MAX_TOKENS", "1".to_owned()),
            ("RETRY_DELAY_SECS", "1".to_owned()),
        ],
    )
    .await;
    w.server.enable(&w.full_name(), None).await;
    w.deliver_pull_request("opened").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    let row = &rows[0];
    assert_eq!(row["status"], "failed", "{row}");
    let error = row["error"].as_str().unwrap();
    assert!(error.starts_with("budget exceeded: "), "{error}");
    assert!(error.contains("limit 1 (REVIEW_MAX_TOKENS)"), "{error}");
    // One model answer, then no more calls.
    assert_eq!(w.model.requests().len(), 1);
    // Not a genuine failure: no automatic retry after RETRY_DELAY_SECS.
    w.assert_no_automatic_retry().await;
    assert!(w.forge.reviews().is_empty());
    let check = &w.forge.completed_check_runs()[0];
    assert!(check.to_string().contains("budget exceeded"), "{check}");
}

#[tokio::test]
async fn a_review_that_reaches_its_budget_while_posting_says_it_was_cut_short() {
    // Measure what the first two answers (git_diff, read_file) cost on this repository.
    let probe = World::start(Behavior::Reviewer, "anthropic/claude-test", true).await;
    probe.review_once().await;
    let rows = probe.server.wait_reviews(&probe.full_name(), 1, 1).await;
    let two_steps = tokens_of_first_steps(&probe.server, rows[0]["id"].as_i64().unwrap(), 2).await;

    // The setting overrides the environment's 1-token limit: the third answer (post_review)
    // reaches the budget, is still posted, and says so.
    let w = World::start_with(
        Upstream::new(),
        Behavior::Reviewer,
        "anthropic/claude-test",
        true,
        &[("REVIEW_MAX_TOKENS", "1".to_owned())],
    )
    .await;
    let r = w
        .server
        .http
        .put(format!("{}/api/settings", w.server.url))
        .json(&json!({ "review_max_tokens": (two_steps + 20).to_string() }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let settings = w.server.get_json("/api/settings").await;
    assert_eq!(
        settings["review_max_tokens"],
        json!((two_steps + 20).to_string())
    );
    let review = w.review_once().await;
    let body = review["body"].as_str().unwrap();
    assert!(
        body.contains("This review was cut short at its budget")
            && body.contains("(review_max_tokens setting)"),
        "{body}"
    );
    assert!(!review["comments"].as_array().unwrap().is_empty());
    assert_eq!(w.model.requests().len(), 3);
    // An empty string deletes the setting; the environment applies again.
    let r = w
        .server
        .http
        .put(format!("{}/api/settings", w.server.url))
        .json(&json!({ "review_max_tokens": "" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.json::<Value>()
            .await
            .unwrap()
            .get("review_max_tokens")
            .is_none()
    );
}

#[tokio::test]
async fn budget_settings_are_validated() {
    let (_dir, s) = start_temp(&[]).await;
    for body in [
        json!({ "review_max_tokens": "0" }),
        json!({ "review_max_tokens": "-5" }),
        json!({ "review_max_cost": "free" }),
        json!({ "review_max_cost": 1.5 }),
    ] {
        let r = s
            .http
            .put(format!("{}/api/settings", s.url))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 422, "{body}");
    }
    let r = s
        .http
        .put(format!("{}/api/settings", s.url))
        .json(&json!({ "review_max_tokens": "50000", "review_max_cost": "0.25" }))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({ "review_max_tokens": "50000", "review_max_cost": "0.25" })
    );
}

// ---- secrets stay out of logs, rows and transcripts ------------------------------------------

/// Every file under `dir` except the database (which stores the settings by design).
fn files_under(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else if !path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("review.db")
        {
            out.push(path);
        }
    }
}

#[tokio::test]
async fn a_full_review_at_debug_level_logs_and_records_no_secret() {
    let canaries = [
        ("AGENT_API_KEY", "sk-ant-canary-agent-key-5d1f0c"),
        ("SECOND_API_KEY", "canary-second-key-9a7e21"),
        ("THIRD_API_KEY", "sk-canary-third-key-41b7d2"),
    ];
    // AUTH_SECRET and the OAuth client secret turn the gate on (with the client id), which this
    // review's API calls cannot pass; and one of them alone is a start-up error. Their canaries
    // run in tests/hostile_http.rs (`sign_in_secrets_reach_no_log_line`).
    let mut env: Vec<(&str, String)> = canaries.iter().map(|(k, v)| (*k, v.to_string())).collect();
    env.push(("RUST_LOG", "debug".to_owned()));
    let w = World::start_with(
        Upstream::new(),
        Behavior::Reviewer,
        "anthropic/claude-test",
        true,
        &env,
    )
    .await;
    w.server.enable(&w.full_name(), None).await;
    w.deliver_pull_request("opened").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(rows[0]["status"], "completed", "{}", w.server.log());
    // A key stored through the API is used for the next review, and stays out of it too.
    let stored_key = "sk-ant-canary-stored-setting-77aa";
    let r = w
        .server
        .http
        .put(format!("{}/api/settings", w.server.url))
        .json(&json!({ "agent_api_key": stored_key }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    w.upstream.push_feature_commit();
    w.deliver_pull_request("synchronize").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    assert!(rows.iter().all(|r| r["status"] == "completed"), "{rows:?}");
    let mut secrets: Vec<String> = canaries.iter().map(|(_, v)| v.to_string()).collect();
    secrets.push(stored_key.to_owned());
    secrets.push(SECRET.to_owned()); // the webhook secret
    secrets.push(format!("ghs_fake_{INSTALLATION}")); // the installation token
    // A line from the middle of the App's private key.
    let pem_lines: Vec<&str> = TEST_APP_KEY.lines().collect();
    secrets.push(pem_lines[pem_lines.len() / 2].to_owned());

    let log = w.server.log();
    assert!(log.contains("DEBUG"), "the log is at debug level");
    let mut files = Vec::new();
    files_under(&w.server.data_dir, &mut files);
    assert!(
        files
            .iter()
            .any(|f| f.to_string_lossy().contains("sessions")),
        "{files:?}"
    );
    for secret in &secrets {
        assert!(!log.contains(secret.as_str()), "the log holds {secret}");
        for f in &files {
            let bytes = std::fs::read(f).unwrap();
            let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
            assert!(!found, "{} holds {secret}", f.display());
        }
    }
    // The per-boot internal secret is 64 hex digits: no such run is in the log.
    let hex_run = log
        .as_bytes()
        .split(|b| !b.is_ascii_hexdigit())
        .any(|run| run.len() >= 64);
    assert!(!hex_run, "a 64-hex-digit value is in the log");
    // Rows: errors, findings and transcripts as the API serves them.
    let pool = sqlx_pool(&w.server.data_dir.join("review.db")).await;
    let texts: Vec<String> = sqlx::query_scalar(
        "SELECT coalesce(error, '') || coalesce(title, '') FROM reviews
         UNION ALL SELECT coalesce(body, '') FROM findings",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    for id in rows.iter().map(|r| r["id"].as_i64().unwrap()) {
        let session = w
            .server
            .get_json(&format!("/api/reviews/{id}/session"))
            .await;
        for secret in &secrets {
            assert!(
                !session.to_string().contains(secret.as_str()),
                "transcript holds {secret}"
            );
        }
    }
    for text in texts {
        for secret in &secrets {
            assert!(!text.contains(secret.as_str()), "a row holds {secret}");
        }
    }
}
