#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The dashboard in a real browser. This harness starts the real binary
//! with the fake forge and the scripted model on a seeded database (`dashboard/e2e/seed.sql`),
//! then runs `dashboard/e2e/run.mjs` (playwright-core driving Debian's chromium) against it:
//! once on the seeded world, once with the OAuth gate on, once over 100,000 reviews for the
//! overview's timing (printed, not asserted).
//!
//! Ignored by a plain `cargo test`: it needs chromium (`/usr/bin/chromium`, or CHROMIUM) and
//! the dashboard's npm dependencies and build, which `.ci/run` installs and `scripts/test.sh`
//! provides before running it with `--ignored`. The browser's screenshots go to
//! `dashboard/test-results/screenshots/` (or E2E_SCREENSHOTS).

mod common;

use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use test_doubles::fake_forge::FakeForge;
use test_doubles::scripted_model::{Behavior, ChatScript, ScriptedModel};

const REVIEW_MODEL: &str = "openai/gpt-5";
const CHAT_MODEL: &str = "anthropic/claude-sonnet-4-5";

fn dashboard_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../dashboard")
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Run one scenario of `e2e/run.mjs`; its output goes straight to the test's output.
fn browser(mode: &str, base_url: &str, env: &[(&str, String)]) {
    let dir = dashboard_dir();
    assert!(
        dir.join("node_modules/playwright-core").is_dir(),
        "run `npm ci` in dashboard/ first (scripts/test.sh does)"
    );
    assert!(
        dir.join("dist/index.html").is_file(),
        "the dashboard is not built: run `npm run build` in dashboard/"
    );
    let status = Command::new("node")
        .arg("e2e/run.mjs")
        .current_dir(&dir)
        .env("E2E_MODE", mode)
        .env("E2E_BASE_URL", base_url)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .status()
        .expect("node runs");
    assert!(status.success(), "browser scenario {mode} failed");
}

/// Load `seed.sql` (with `:now`) and the seeded transcript into a running server's data.
async fn seed(server: &Server) {
    let sql = std::fs::read_to_string(dashboard_dir().join("e2e/seed.sql"))
        .unwrap()
        .replace(":now", &now().to_string());
    let pool = sqlx_pool(&server.data_dir.join("review.db")).await;
    sqlx::raw_sql(&sql).execute(&pool).await.unwrap();
    pool.close().await;
    let sessions = server.data_dir.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::copy(
        dashboard_dir().join("e2e/transcript.json"),
        sessions.join("ses_seed_transcript.json"),
    )
    .unwrap();
    // The transcript of the seeded running review, as the agent has written it so far: the
    // browser test appends to it (E2E_DATA_DIR) and watches the page follow.
    let at = now();
    let running = json!({
        "session_id": "ses_running",
        "model": "anthropic/claude-sonnet-4-5",
        "started_at": at - 50,
        "updated_at": at - 40,
        "status": "running",
        "items": [
            {"type": "message", "at": at - 50, "role": "user", "text": "Review PR #63 of acme/gadgets."},
            {"type": "assistant", "at": at - 45, "step": 1, "text": "Reading the diff.",
             "tool_calls": [{"id": "c1", "name": "git_diff", "arguments": "{}"}],
             "usage": {"input_tokens": 1200, "output_tokens": 80, "cache_read_tokens": 0, "cache_write_tokens": 0},
             "cost": 0.0048},
            {"type": "tool_call", "at": at - 45, "step": 1, "id": "c1", "name": "git_diff", "arguments": "{}"},
        ],
    });
    std::fs::write(
        sessions.join("ses_running.json"),
        serde_json::to_vec(&running).unwrap(),
    )
    .unwrap();
    let r = server
        .http
        .put(format!("{}/api/settings", server.url))
        .json(&json!({
            "third_api_key": "sk-seeded-third-key-123456",
            "default_prompt": "Seeded default prompt: be brief.",
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
}

/// The pull_request delivery for PR `n` of acme/widgets, written to `dir`; returns its path.
fn payload(w: &World, dir: &Path, n: i64, title: &str) -> String {
    let mut v: Value =
        serde_json::from_slice(&w.pull_request_payload("opened", &w.upstream.sha("feature")))
            .unwrap();
    v["number"] = json!(n);
    v["pull_request"]["number"] = json!(n);
    v["pull_request"]["title"] = json!(title);
    // The forge knows the PR, for retries.
    w.forge
        .set_pull(&w.full_name(), n, v["pull_request"].clone());
    let path = dir.join(format!("pr{n}.json"));
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs chromium and dashboard/node_modules; scripts/test.sh runs it with --ignored"]
async fn the_dashboard_works_in_a_real_browser() {
    // The seeded world: reviews run on a slow scripted reviewer (acme/widgets' own model is
    // openai/*), one at a time so that a second PR waits pending; the chat (the global model,
    // anthropic/*) runs on the chat script.
    let upstream = Upstream::new();
    upstream.publish_pull(2, "feature");
    let chat = ScriptedModel::start(Behavior::Chat(ChatScript::CountReviews));
    let w = World::start_with(
        upstream,
        Behavior::Slow(Duration::from_millis(1200)),
        REVIEW_MODEL,
        true,
        &[
            ("ANTHROPIC_BASE_URL", chat.base_url()),
            ("AGENT_MODEL", CHAT_MODEL.to_owned()),
            ("MAX_CONCURRENT_REVIEWS", "1".to_owned()),
            ("HEARTBEAT_SECS", "2".to_owned()),
            // GitHub Enterprise: links to pull requests and comments go here (defect 8).
            ("FORGE_URL", "https://ghe.example.com".to_owned()),
        ],
    )
    .await;
    seed(&w.server).await;
    let payloads = tempfile::tempdir().unwrap();
    let pr1 = payload(&w, payloads.path(), 1, "Parse helpers");
    let pr2 = payload(&w, payloads.path(), 2, "Parse helpers, second take");
    browser(
        "main",
        &w.server.url,
        &[
            ("E2E_WEBHOOK_SECRET", SECRET.to_owned()),
            ("E2E_PAYLOAD_PR1", pr1),
            ("E2E_PAYLOAD_PR2", pr2),
            ("E2E_DATA_DIR", w.server.data_dir.display().to_string()),
        ],
    );

    // The OAuth gate on: the sign-in page, then signing in through the fake forge.
    let forge = FakeForge::start().await;
    forge.set_oauth_client("dash-client", "dash-client-secret");
    let (_dir, gated) = start_temp(&[
        ("FORGE_URL", forge.api_url()),
        ("FORGE_API_URL", forge.api_url()),
        (
            "AUTH_SECRET",
            "a-long-random-auth-secret-for-e2e".to_owned(),
        ),
        ("FORGE_APP_CLIENT_ID", "dash-client".to_owned()),
        ("FORGE_APP_CLIENT_SECRET", "dash-client-secret".to_owned()),
        ("ALLOWED_FORGE_USERS", "octocat".to_owned()),
    ])
    .await;
    let code = forge.approve_oauth("octocat");
    browser(
        "signin",
        &gated.url,
        &[("E2E_FORGE_URL", forge.api_url()), ("E2E_OAUTH_CODE", code)],
    );

    // Sign-in with GitLab beside GitHub's, and a GitLab project's review linking to GitLab
    // (docs/review-service.md, "GitLab").
    let gitlab = test_doubles::fake_gitlab::FakeGitLab::start().await;
    gitlab.set_oauth_client("gitlab-dash", "gitlab-dash-secret");
    gitlab.set_oauth_login("ada");
    let host = gitlab.base_url().trim_start_matches("http://").to_owned();
    let (_dir, both) = start_temp(&[
        ("FORGE_URL", forge.api_url()),
        ("FORGE_API_URL", forge.api_url()),
        ("GITLAB_URL", gitlab.base_url()),
        ("GITLAB_TOKEN", "glpat-dash".to_owned()),
        (
            "AUTH_SECRET",
            "a-long-random-auth-secret-for-e2e".to_owned(),
        ),
        ("FORGE_APP_CLIENT_ID", "dash-client".to_owned()),
        ("FORGE_APP_CLIENT_SECRET", "dash-client-secret".to_owned()),
        ("GITLAB_OAUTH_CLIENT_ID", "gitlab-dash".to_owned()),
        (
            "GITLAB_OAUTH_CLIENT_SECRET",
            "gitlab-dash-secret".to_owned(),
        ),
        ("ALLOWED_FORGE_USERS", format!("octocat, {host}/ada")),
    ])
    .await;
    let project = format!("{host}/acme/platform/widgets");
    let pool = sqlx_pool(&both.data_dir.join("review.db")).await;
    let at = now();
    sqlx::query(
        "INSERT INTO repos (full_name, installation_id, enabled, created_at) VALUES (?, 42, 1, ?)",
    )
    .bind(&project)
    .bind(at - 600)
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO reviews (id, repo_full_name, pr_number, title, status, \"trigger\", attempt, cost, tokens, model, created_at, completed_at) VALUES (7001, ?, 1, 'Parse helpers', 'completed', 'opened', 0, 0.03, 3000, 'anthropic/claude-sonnet-4-5', ?, ?)")
        .bind(&project)
        .bind(at - 300)
        .bind(at - 200)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO findings (review_id, repo_full_name, pr_number, kind, severity, path, line, body, github_comment_id, created_at) VALUES (7001, ?, 1, 'inline', 'blocking', 'src/parse.rs', 5, 'unwrap() panics on bad input', 5123, ?)")
        .bind(&project)
        .bind(at - 200)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    browser(
        "signin-gitlab",
        &both.url,
        &[
            ("E2E_GITLAB_URL", gitlab.base_url()),
            ("E2E_GITLAB_PROJECT", project.clone()),
        ],
    );

    // The overview over 100,000 reviews and 300,000 findings (the stats benchmark's seed), timed
    // by the browser.
    let (_dir, big) = start_temp(&[]).await;
    let pool = sqlx_pool(&big.data_dir.join("review.db")).await;
    sqlx::query(include_str!("../../../bench/review-stats/seed_reviews.sql"))
        .bind(100_000i64)
        .bind(now())
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query(include_str!(
        "../../../bench/review-stats/seed_findings.sql"
    ))
    .bind(300_000i64)
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    browser("bench", &big.url, &[]);
}
