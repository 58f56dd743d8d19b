#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The OAuth gate end to end (docs/review-service.md §5, §4 outside the dashboard prefix, §7
//! first row): the real binary, the fake forge playing GitHub's OAuth
//! endpoints (`/login/oauth/access_token`, `/user`), a browser played by hand (no redirects
//! followed, cookies carried explicitly).

mod common;

use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_doubles::fake_forge::FakeForge;

const CLIENT_ID: &str = "Iv1.testclient";
const CLIENT_SECRET: &str = "test-client-secret";

struct Gated {
    _dir: tempfile::TempDir,
    forge: FakeForge,
    server: Server,
    http: reqwest::Client,
}

/// A server with OAuth on (all three variables) and ALLOWED_FORGE_USERS = `allowed`.
async fn gated(allowed: &str) -> Gated {
    let forge = FakeForge::start().await;
    forge.set_oauth_client(CLIENT_ID, CLIENT_SECRET);
    let env = vec![
        ("FORGE_WEBHOOK_SECRET", SECRET.to_owned()),
        ("FORGE_URL", forge.api_url()),
        ("FORGE_API_URL", forge.api_url()),
        ("AUTH_SECRET", "a-long-random-auth-secret".to_owned()),
        ("FORGE_APP_CLIENT_ID", CLIENT_ID.to_owned()),
        ("FORGE_APP_CLIENT_SECRET", CLIENT_SECRET.to_owned()),
        ("ALLOWED_FORGE_USERS", allowed.to_owned()),
    ];
    let (dir, server) = start_temp(&env).await;
    Gated {
        _dir: dir,
        forge,
        server,
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap(),
    }
}

/// `name=value` pairs of every Set-Cookie of a response, joined for a Cookie header; cookies
/// being removed (empty value) are left out.
fn cookies(r: &reqwest::Response) -> String {
    r.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.split(';').next())
        .filter(|kv| kv.split_once('=').is_some_and(|(_, v)| !v.is_empty()))
        .collect::<Vec<_>>()
        .join("; ")
}

fn location(r: &reqwest::Response) -> String {
    r.headers()["location"].to_str().unwrap().to_owned()
}

fn query_param(url: &str, name: &str) -> String {
    let query = url.split_once('?').unwrap().1;
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
        .unwrap()
        .to_owned()
}

impl Gated {
    async fn get(&self, path: &str, cookie: Option<&str>) -> reqwest::Response {
        let mut req = self.http.get(format!("{}{path}", self.server.url));
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        req.send().await.unwrap()
    }

    /// The whole browser dance for `login`: signin -> forge authorize (approved by the fake
    /// forge) -> callback. Returns the callback's response and the state cookie it consumed.
    async fn sign_in_as(&self, login: &str) -> reqwest::Response {
        let r = self
            .get("/api/auth/signin?callbackUrl=/reviews/7", None)
            .await;
        assert_eq!(r.status(), 303);
        let state_cookie = cookies(&r);
        let authorize = location(&r);
        let state = query_param(&authorize, "state");
        let challenge = query_param(&authorize, "code_challenge");
        let code = self.forge.approve_oauth_pkce(login, &challenge);
        self.get(
            &format!("/api/auth/callback/github?code={code}&state={state}"),
            Some(&state_cookie),
        )
        .await
    }
}

async fn body_text(r: reqwest::Response) -> (u16, String, String) {
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, ct, r.text().await.unwrap())
}

#[tokio::test]
async fn gate_is_off_and_the_api_open_when_oauth_is_not_configured() {
    let (_dir, server) = start_temp(&[]).await;
    assert_eq!(
        server.get_json("/api/auth-status").await,
        json!({"enabled": false})
    );
    let r = server
        .http
        .get(format!("{}/api/repos", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // The sign-in endpoints do not exist then: the global handler answers.
    let r = server
        .http
        .get(format!("{}/api/auth/session", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"error": "not found", "code": "not_found"})
    );
}

// Some but not all of the three variables is a start-up error naming the missing ones
// (rule 1, fail closed): tests/hostile_http.rs.

#[tokio::test]
async fn unauthenticated_api_requests_get_401_plain_text_unauthorized() {
    let g = gated("octocat").await;
    for path in [
        "/api/repos",
        "/api/repos/acme/widgets",
        "/api/reviews",
        "/api/reviews/1",
        "/api/stats",
        "/api/stats/charts",
        "/api/settings",
        "/api/models",
        "/api/skills",
        "/api/events",
        "/api/openapi.json",
        "/api/no-such-route",
    ] {
        let (status, ct, body) = body_text(g.get(path, None).await).await;
        assert_eq!((status, body.as_str()), (401, "Unauthorized"), "GET {path}");
        assert!(ct.starts_with("text/plain"), "GET {path}: {ct}");
    }
    let r = g
        .http
        .post(format!("{}/api/repos", g.server.url))
        .json(&json!({"full_name": "acme/widgets", "installation_id": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(body_text(r).await.2, "Unauthorized");
    // Nothing was written by the refused POST.
    let db = sqlx_pool(&g.server.data_dir.join("review.db")).await;
    let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM repos")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(n, 0);
}

#[tokio::test]
async fn auth_status_health_and_webhook_are_outside_the_gate() {
    let g = gated("octocat").await;
    let r = g.get("/api/auth-status", None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap(), json!({"enabled": true}));
    let r = g.get("/health", None).await;
    assert_eq!(r.status(), 200);
    // The webhook's authentication is its signature, not a session.
    let r = g.server.deliver("ping", b"{}", Some("wrong-secret")).await;
    assert_eq!(r.status(), 401);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"error": "invalid signature", "code": "invalid_signature"})
    );
    let r = g.server.deliver("ping", b"{}", Some(SECRET)).await;
    assert_eq!(r.status(), 200);
    // The auth library's own endpoints answer without a session.
    let r = g.get("/api/auth/session", None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap(), json!({"user": null}));
}

#[tokio::test]
async fn signing_in_through_the_forge_opens_the_api() {
    let g = gated("someone-else, OctoCat").await;
    let r = g.get("/api/auth/signin?callbackUrl=/reviews/7", None).await;
    assert_eq!(r.status(), 303);
    let authorize = location(&r);
    assert!(
        authorize.starts_with(&format!("{}/login/oauth/authorize?", g.forge.api_url())),
        "{authorize}"
    );
    assert_eq!(query_param(&authorize, "client_id"), CLIENT_ID);
    assert!(authorize.contains("redirect_uri=http%3A%2F%2F127.0.0.1%3A"));
    assert!(!authorize.contains(CLIENT_SECRET));

    let r = g.sign_in_as("octocat").await;
    assert_eq!(r.status(), 303, "{:?}", r.text().await);
    assert_eq!(location(&r), "/reviews/7");
    let set: Vec<String> = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    let session = set
        .iter()
        .find(|c| c.starts_with("review_session="))
        .unwrap();
    assert!(session.contains("HttpOnly"), "{session}");
    assert!(session.contains("SameSite=Lax"), "{session}");
    let cookie = cookies(&r);

    let r = g.get("/api/repos", Some(&cookie)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap(), json!([]));
    let r = g.get("/api/auth/session", Some(&cookie)).await;
    let s: Value = r.json().await.unwrap();
    assert_eq!(s["user"], json!({"login": "octocat"}));
    // The event stream is under the same gate and opens with a session.
    let r = g.get("/api/events", Some(&cookie)).await;
    assert_eq!(r.status(), 200);
    // The code was exchanged with the App's own credentials, once.
    let exchanges: Vec<_> = g
        .forge
        .requests()
        .into_iter()
        .filter(|r| r.path == "/login/oauth/access_token")
        .collect();
    assert_eq!(exchanges.len(), 1);
}

#[tokio::test]
async fn users_not_in_allowed_forge_users_are_refused() {
    let g = gated("octocat").await;
    let r = g.sign_in_as("mallory").await;
    assert_eq!(r.status(), 403);
    assert!(!cookies(&r).contains("review_session"));
    assert_eq!(
        r.text().await.unwrap(),
        "mallory is not allowed to use this dashboard"
    );
}

#[tokio::test]
async fn empty_allowed_forge_users_lets_nobody_in() {
    let g = gated("").await;
    let r = g.sign_in_as("octocat").await;
    assert_eq!(r.status(), 403);
    assert_eq!(
        body_text(g.get("/api/repos", None).await).await.2,
        "Unauthorized"
    );
}

#[tokio::test]
async fn forged_state_or_cookie_never_opens_the_api() {
    let g = gated("octocat").await;
    // A callback without the state cookie of a sign-in started here (login CSRF).
    let code = g.forge.approve_oauth("octocat");
    let r = g
        .get(
            &format!("/api/auth/callback/github?code={code}&state=guessed"),
            None,
        )
        .await;
    assert_eq!(r.status(), 400);
    assert!(!cookies(&r).contains("review_session"));
    // A session cookie whose signature does not match.
    let r = g.sign_in_as("octocat").await;
    let cookie = cookies(&r);
    let (name, value) = cookie.split_once('=').unwrap();
    let mut bytes = value.as_bytes().to_vec();
    let mid = bytes.len() / 2;
    bytes[mid] = if bytes[mid] == b'A' { b'B' } else { b'A' };
    let tampered = format!("{name}={}", String::from_utf8(bytes).unwrap());
    let (status, _, body) = body_text(g.get("/api/repos", Some(&tampered)).await).await;
    assert_eq!((status, body.as_str()), (401, "Unauthorized"));
    let (status, _, body) =
        body_text(g.get("/api/repos", Some("review_session=made-up")).await).await;
    assert_eq!((status, body.as_str()), (401, "Unauthorized"));
    // A code the forge refuses (already used) signs nobody in.
    let r = g.get("/api/auth/signin", None).await;
    let state_cookie = cookies(&r);
    let state = query_param(&location(&r), "state");
    let r = g
        .get(
            &format!("/api/auth/callback/github?code={code}-reused&state={state}"),
            Some(&state_cookie),
        )
        .await;
    assert_eq!(r.status(), 400);
    assert!(!cookies(&r).contains("review_session"));
}

#[tokio::test]
async fn signing_out_ends_the_session() {
    let g = gated("octocat").await;
    let r = g.sign_in_as("octocat").await;
    let cookie = cookies(&r);
    let r = g
        .http
        .post(format!("{}/api/auth/signout", g.server.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let removal = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|c| c.starts_with("review_session="))
        .unwrap();
    assert!(removal.contains("Max-Age=0"), "{removal}");
}

// ---- sign-in hardening (docs/security.md, Sign-in) --------------------------------------

#[tokio::test]
async fn the_authorize_redirect_carries_a_pkce_s256_challenge_the_exchange_must_answer() {
    let g = gated("octocat").await;
    let r = g.get("/api/auth/signin", None).await;
    let authorize = location(&r);
    let challenge = query_param(&authorize, "code_challenge");
    assert_eq!(challenge.len(), 43, "base64url SHA-256: {authorize}");
    assert_eq!(query_param(&authorize, "code_challenge_method"), "S256");
    // A code approved for another challenge (stolen from another browser's sign-in) signs
    // nobody in: the verifier in this browser's state cookie does not match it.
    let state_cookie = cookies(&r);
    let state = query_param(&authorize, "state");
    let code = g
        .forge
        .approve_oauth_pkce("octocat", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    let r = g
        .get(
            &format!("/api/auth/callback/github?code={code}&state={state}"),
            Some(&state_cookie),
        )
        .await;
    assert_eq!(r.status(), 400);
    assert!(!cookies(&r).contains("review_session"));
}

#[tokio::test]
async fn a_browser_signs_in_through_the_forge_authorize_page() {
    let g = gated("octocat").await;
    g.forge.set_oauth_login("octocat");
    let r = g.get("/api/auth/signin?callbackUrl=/reviews", None).await;
    let state_cookie = cookies(&r);
    // The browser follows the redirect to the forge, which redirects back with a code.
    let r = g.http.get(location(&r)).send().await.unwrap();
    assert_eq!(r.status(), 302);
    let callback = location(&r);
    let path = callback.strip_prefix(&g.server.url).unwrap();
    let r = g.get(path, Some(&state_cookie)).await;
    assert_eq!(r.status(), 303, "{:?}", r.text().await);
    assert_eq!(location(&r), "/reviews");
    let r = g.get("/api/repos", Some(&cookies(&r))).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn no_cookie_carries_the_login_in_any_encoding() {
    let g = gated("octocat").await;
    let r = g.get("/api/auth/signin", None).await;
    let mut values: Vec<String> = cookies(&r)
        .split("; ")
        .map(|c| c.split_once('=').unwrap().1.to_owned())
        .collect();
    let r = g.sign_in_as("octocat").await;
    assert_eq!(r.status(), 303);
    values.extend(
        cookies(&r)
            .split("; ")
            .map(|c| c.split_once('=').unwrap().1.to_owned()),
    );
    assert!(!values.is_empty());
    use base64::Engine;
    let engines = [
        base64::engine::general_purpose::STANDARD,
        base64::engine::general_purpose::STANDARD_NO_PAD,
        base64::engine::general_purpose::URL_SAFE,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    for value in &values {
        let lower = value.to_ascii_lowercase();
        let decoded = percent_encoding::percent_decode_str(value)
            .decode_utf8_lossy()
            .to_ascii_lowercase();
        assert!(
            !lower.contains("octocat") && !decoded.contains("octocat"),
            "{value}"
        );
        assert!(!lower.contains(&hex::encode("octocat")), "{value}");
        for engine in &engines {
            // Every alignment of the login inside a base64 text.
            for pad in 0..3 {
                let encoded = engine.encode(format!("{}octocat", "x".repeat(pad)));
                let core = &encoded[(pad * 4).div_ceil(3) + 1..encoded.len().saturating_sub(2)];
                assert!(!value.contains(core), "{value} holds {core}");
            }
            if let Ok(bytes) = engine.decode(decoded.as_bytes()) {
                let text = String::from_utf8_lossy(&bytes).to_ascii_lowercase();
                assert!(!text.contains("octocat"), "{value}");
            }
        }
    }
}

#[tokio::test]
async fn return_paths_with_tabs_newlines_or_other_hosts_go_home() {
    let g = gated("octocat").await;
    for hostile in [
        "/%09/attacker.example/",
        "/%0a/attacker.example",
        "/%0d%0aSet-Cookie:%20x=1",
        "//attacker.example",
        "/%5Cattacker.example",
        "/%252f/attacker.example",
        "https://attacker.example",
        "/%20/attacker.example",
    ] {
        let r = g
            .get(&format!("/api/auth/signin?callbackUrl={hostile}"), None)
            .await;
        assert_eq!(r.status(), 303, "{hostile}");
        let state_cookie = cookies(&r);
        let authorize = location(&r);
        let state = query_param(&authorize, "state");
        let challenge = query_param(&authorize, "code_challenge");
        let code = g.forge.approve_oauth_pkce("octocat", &challenge);
        let r = g
            .get(
                &format!("/api/auth/callback/github?code={code}&state={state}"),
                Some(&state_cookie),
            )
            .await;
        assert_eq!(r.status(), 303, "{hostile}");
        assert_eq!(location(&r), "/", "{hostile}");
    }
}

/// A server signing in with GitLab only (AUTH_SECRET and GitLab's OAuth pair), the fake GitLab
/// approving as `login`, with ALLOWED_FORGE_USERS = `allowed` (`{host}` is replaced by GitLab's
/// host).
async fn gated_by_gitlab(
    allowed: &str,
    login: &str,
) -> (
    test_doubles::fake_gitlab::FakeGitLab,
    tempfile::TempDir,
    Server,
    String,
) {
    let gitlab = test_doubles::fake_gitlab::FakeGitLab::start().await;
    gitlab.set_oauth_client("gitlab-app-id", "gitlab-app-secret");
    gitlab.set_oauth_login(login);
    let host = gitlab.base_url().trim_start_matches("http://").to_owned();
    let env = vec![
        ("GITLAB_URL", gitlab.base_url()),
        ("GITLAB_TOKEN", "glpat-x".to_owned()),
        ("AUTH_SECRET", "a-long-random-auth-secret".to_owned()),
        ("GITLAB_OAUTH_CLIENT_ID", "gitlab-app-id".to_owned()),
        ("GITLAB_OAUTH_CLIENT_SECRET", "gitlab-app-secret".to_owned()),
        ("ALLOWED_FORGE_USERS", allowed.replace("{host}", &host)),
    ];
    let (dir, server) = start_temp(&env).await;
    (gitlab, dir, server, host)
}

/// The browser's sign-in with GitLab, redirects followed by hand: the callback's answer.
async fn sign_in_with_gitlab(server: &Server) -> reqwest::Response {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = http
        .get(format!(
            "{}/api/auth/signin?provider=gitlab&callbackUrl=/stats",
            server.url
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let state_cookie = cookies(&r);
    let authorize = location(&r);
    assert!(authorize.contains("/oauth/authorize?"), "{authorize}");
    assert_eq!(query_param(&authorize, "code_challenge_method"), "S256");
    assert!(authorize.contains("redirect_uri=http%3A%2F%2F127.0.0.1%3A"));
    assert!(
        authorize.contains("%2Fapi%2Fauth%2Fcallback%2Fgitlab"),
        "{authorize}"
    );
    // GitLab's authorize page, approved: back to the callback with a code.
    let r = http.get(&authorize).send().await.unwrap();
    assert_eq!(r.status(), 302, "{:?}", r.text().await);
    let callback = location(&r);
    http.get(&callback)
        .header("cookie", state_cookie)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn signing_in_with_gitlab_opens_the_api_for_a_listed_gitlab_user() {
    let (gitlab, _dir, server, host) = gated_by_gitlab("{host}/ada", "ada").await;
    assert_eq!(
        server.get_json("/api/auth-status").await,
        json!({"enabled": true, "providers": ["gitlab"]})
    );
    let r = sign_in_with_gitlab(&server).await;
    assert_eq!(r.status(), 303, "{:?}", r.text().await);
    assert_eq!(location(&r), "/stats");
    let cookie = cookies(&r);
    let r = server
        .http
        .get(format!("{}/api/auth/session", server.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    let s: Value = r.json().await.unwrap();
    assert_eq!(s["user"], json!({"login": format!("{host}/ada")}));
    let r = server
        .http
        .get(format!("{}/api/stats", server.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // The code was exchanged once, with the PKCE verifier (the fake checks it).
    assert_eq!(gitlab.posted("POST", "/oauth/token").len(), 1);
}

#[tokio::test]
async fn a_github_login_of_the_same_name_does_not_let_a_gitlab_user_in() {
    let (_gitlab, _dir, server, _host) = gated_by_gitlab("ada", "ada").await;
    let r = sign_in_with_gitlab(&server).await;
    assert_eq!(r.status(), 403);
    let (_, _, text) = body_text(r).await;
    assert!(text.contains("/ada is not allowed"), "{text}");
    // GitHub's sign-in is not configured here: its routes are not there.
    let r = server
        .http
        .get(format!("{}/api/auth/signin?provider=github", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}
