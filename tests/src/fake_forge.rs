//! A fake forge: the GitHub REST endpoints review-server calls, and the GraphQL review-thread
//! calls, on loopback, recording what was posted (docs/architecture.md, Test doubles and real
//! parts). It speaks GitHub's wire format: App JWTs (RS256,
//! verified against the test key's public half) are exchanged for installation tokens, and
//! every other call must carry such a token, as on GitHub.

mod threads;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The test App's private key (PKCS#1 PEM), for FORGE_APP_PRIVATE_KEY.
pub const TEST_APP_KEY: &str = include_str!("../fixtures/test-app-key.pem");
const TEST_APP_PUBLIC_KEY: &str = include_str!("../fixtures/test-app-key.pub.pem");
/// The test App's id, for FORGE_APP_ID.
pub const TEST_APP_ID: &str = "4242";
/// The login of the test App's account, as the REST API shows its comments (GraphQL drops
/// the `[bot]` suffix).
pub const APP_LOGIN: &str = "review-bot[bot]";

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub body: Value,
    /// Whether the call carried an installation token (contents calls may be anonymous).
    pub authenticated: bool,
}

/// One commit of a repository as the contents API serves it: the names that resolve to it
/// (branch, tag, the SHA itself) and its files by path.
#[derive(Debug, Clone, Default)]
struct Commit {
    names: Vec<String>,
    sha: String,
    files: BTreeMap<String, Vec<u8>>,
}

#[derive(Default)]
struct Inner {
    requests: Vec<Recorded>,
    pulls: HashMap<String, Value>,
    review_comments: HashMap<i64, Vec<Value>>,
    /// Answer every call whose path starts with the key with this status and message.
    failures: Vec<(String, u16, String)>,
    /// Commits served by the commits and contents APIs, by repository full name.
    commits: HashMap<String, Vec<Commit>>,
    /// The App's OAuth client id and secret (`/login/oauth/access_token`).
    oauth_client: Option<(String, String)>,
    /// Unused authorization codes -> the grant they stand for.
    oauth_codes: HashMap<String, OAuthGrant>,
    /// The login GitHub's authorize page approves as (`GET /login/oauth/authorize`).
    oauth_login: Option<String>,
    /// The installation each repository belongs to: its token is the only one GitHub accepts
    /// on the repository (others get 404, as on GitHub).
    installations: HashMap<String, i64>,
    /// `git diff base...head` of a pull request by `owner/repo@head_sha`: inline review
    /// comments must sit on its lines (GitHub answers 422 otherwise).
    diffs: HashMap<String, String>,
    /// User tokens -> login (`GET /user`).
    user_tokens: HashMap<String, String>,
    /// Inline review comments and replies by `owner/repo#number`, oldest first.
    pull_comments: HashMap<String, Vec<Value>>,
    /// Files written through PUT contents, by `owner/repo:branch:path`.
    written_files: HashMap<String, Vec<u8>>,
    /// Reactions by review comment id, oldest first, in the REST API's format.
    reactions: HashMap<i64, Vec<Value>>,
    /// Resolved review threads, by the id of the comment that opened each.
    resolved_threads: BTreeSet<i64>,
}

/// An authorization code's grant: who approved, and the PKCE challenge of the authorize
/// request, which the code exchange must then answer with its verifier.
struct OAuthGrant {
    login: String,
    code_challenge: Option<String>,
}

#[derive(Clone)]
struct Shared {
    inner: Arc<Mutex<Inner>>,
    next_id: Arc<AtomicI64>,
}

/// The running fake forge; stops when dropped.
pub struct FakeForge {
    addr: std::net::SocketAddr,
    shared: Shared,
    task: JoinHandle<()>,
}

impl Drop for FakeForge {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeForge {
    /// Start on 127.0.0.1:0. Must be called inside a tokio runtime.
    pub async fn start() -> FakeForge {
        let shared = Shared {
            inner: Arc::default(),
            next_id: Arc::new(AtomicI64::new(1000)),
        };
        let app = Router::new()
            .route("/app/installations/{id}/access_tokens", post(access_token))
            .route("/repos/{o}/{r}/pulls/{n}", get(get_pull))
            .route("/repos/{o}/{r}/issues/{n}/comments", post(post_comment))
            .route("/repos/{o}/{r}/pulls/{n}/reviews", post(post_review))
            .route(
                "/repos/{o}/{r}/pulls/{n}/reviews/{id}/comments",
                get(review_comments),
            )
            .route("/repos/{o}/{r}/check-runs", post(post_check_run))
            .route("/repos/{o}/{r}/check-runs/{id}", patch(patch_check_run))
            .route("/repos/{o}/{r}/commits/{*git_ref}", get(get_commit))
            .route(
                "/repos/{o}/{r}/contents/{*path}",
                get(get_contents).put(put_contents),
            )
            .route("/repos/{o}/{r}", get(get_repo))
            .route("/repos/{o}/{r}/pulls/{n}/comments", get(list_pull_comments))
            .route(
                "/repos/{o}/{r}/pulls/{n}/comments/{id}/replies",
                post(threads::post_reply),
            )
            .route(
                "/repos/{o}/{r}/pulls/comments/{id}/reactions",
                get(threads::list_reactions),
            )
            .route("/graphql", post(threads::graphql))
            .route("/repos/{o}/{r}/git/refs", post(create_ref))
            .route("/repos/{o}/{r}/pulls", post(create_pull))
            .route("/login/oauth/authorize", get(oauth_authorize))
            .route("/login/oauth/access_token", post(oauth_access_token))
            .route("/user", get(oauth_user))
            .fallback(
                |State(s): State<Shared>,
                 method: axum::http::Method,
                 uri: axum::http::Uri,
                 headers: HeaderMap| async move {
                    // Recorded too, so a test can assert that no call went anywhere else.
                    let _ = s.check(
                        method.as_str(),
                        uri.path().to_owned(),
                        &headers,
                        Value::Null,
                        false,
                    );
                    (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"})))
                },
            )
            .with_state(shared.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeForge { addr, shared, task }
    }

    /// The REST base, for FORGE_API_URL.
    pub fn api_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A reply by `login` (`kind` `User` or `Bot`) to the inline comment `in_reply_to` of PR
    /// `number`, as GitHub lists it under GET pulls/{n}/comments; returns its id. A `User` is
    /// a MEMBER of the repository, a `Bot` has no association (NONE), as GitHub reports them.
    pub fn add_reply(
        &self,
        full_name: &str,
        number: i64,
        in_reply_to: i64,
        login: &str,
        kind: &str,
        body: &str,
    ) -> i64 {
        let association = if kind == "Bot" { "NONE" } else { "MEMBER" };
        self.add_reply_as(
            full_name,
            number,
            in_reply_to,
            login,
            kind,
            association,
            body,
        )
    }

    /// [`FakeForge::add_reply`] with GitHub's `author_association` given (`OWNER`, `MEMBER`,
    /// `COLLABORATOR`, `CONTRIBUTOR`, `NONE`, ...).
    #[expect(
        clippy::too_many_arguments,
        reason = "a test helper that seeds one reply with every field a test may vary"
    )]
    pub fn add_reply_as(
        &self,
        full_name: &str,
        number: i64,
        in_reply_to: i64,
        login: &str,
        kind: &str,
        association: &str,
        body: &str,
    ) -> i64 {
        let id = self.shared.id();
        self.shared
            .inner
            .lock()
            .unwrap()
            .pull_comments
            .entry(format!("{full_name}#{number}"))
            .or_default()
            .push(json!({
                "id": id,
                "in_reply_to_id": in_reply_to,
                "user": { "login": login, "type": kind },
                "author_association": association,
                "body": body,
                "created_at": now_rfc3339(),
            }));
        id
    }

    /// The inline comments posted on PR `number` through reviews, with replies, oldest first.
    pub fn pull_comments(&self, full_name: &str, number: i64) -> Vec<Value> {
        self.shared
            .inner
            .lock()
            .unwrap()
            .pull_comments
            .get(&format!("{full_name}#{number}"))
            .cloned()
            .unwrap_or_default()
    }

    /// The bytes written to `path` on `branch` through PUT contents.
    pub fn written_file(&self, full_name: &str, branch: &str, path: &str) -> Option<Vec<u8>> {
        self.shared
            .inner
            .lock()
            .unwrap()
            .written_files
            .get(&format!("{full_name}:{branch}:{path}"))
            .cloned()
    }

    /// Accept this OAuth client (the App's FORGE_APP_CLIENT_ID and FORGE_APP_CLIENT_SECRET) at
    /// `POST /login/oauth/access_token`. The web endpoints live on the same base as the API,
    /// so FORGE_URL = [`FakeForge::api_url`].
    pub fn set_oauth_client(&self, client_id: &str, client_secret: &str) {
        self.shared.inner.lock().unwrap().oauth_client =
            Some((client_id.to_owned(), client_secret.to_owned()));
    }

    /// What GitHub's authorize page does once `login` approves: an authorization code, valid
    /// once, for the callback's `code` parameter (an authorize request without PKCE).
    pub fn approve_oauth(&self, login: &str) -> String {
        self.grant(login, None)
    }

    /// [`FakeForge::approve_oauth`] for an authorize request that carried a PKCE
    /// `code_challenge` (method S256): the exchange must send the matching `code_verifier`, as
    /// GitHub requires.
    pub fn approve_oauth_pkce(&self, login: &str, code_challenge: &str) -> String {
        self.grant(login, Some(code_challenge.to_owned()))
    }

    /// The login the browser-facing `GET /login/oauth/authorize` approves as: it then
    /// redirects straight back to `redirect_uri` with a code and the state, as GitHub does
    /// for a user who already authorized the App.
    pub fn set_oauth_login(&self, login: &str) {
        self.shared.inner.lock().unwrap().oauth_login = Some(login.to_owned());
    }

    fn grant(&self, login: &str, code_challenge: Option<String>) -> String {
        let code = format!(
            "code_{}",
            self.shared.next_id.fetch_add(1, Ordering::SeqCst)
        );
        self.shared.inner.lock().unwrap().oauth_codes.insert(
            code.clone(),
            OAuthGrant {
                login: login.to_owned(),
                code_challenge,
            },
        );
        code
    }

    /// Make `installation_id` the installation of `full_name`: calls on the repository then
    /// need that installation's token, as on GitHub.
    pub fn set_installation(&self, full_name: &str, installation_id: i64) {
        self.shared
            .inner
            .lock()
            .unwrap()
            .installations
            .insert(full_name.to_owned(), installation_id);
    }

    /// The diff of a pull request whose head is `head_sha` (`git diff base...head`): a review
    /// with `commit_id` = `head_sha` is then refused 422 when an inline comment is not on a line
    /// of it, as GitHub refuses it. Reviews on commits without a diff set are not checked.
    pub fn set_diff(&self, full_name: &str, head_sha: &str, diff: &str) {
        self.shared
            .inner
            .lock()
            .unwrap()
            .diffs
            .insert(format!("{full_name}@{head_sha}"), diff.to_owned());
    }

    /// Serve `pull` (GitHub's pull request JSON) at GET /repos/{full_name}/pulls/{number}.
    pub fn set_pull(&self, full_name: &str, number: i64, pull: Value) {
        self.shared
            .inner
            .lock()
            .unwrap()
            .pulls
            .insert(format!("{full_name}#{number}"), pull);
    }

    /// Serve a commit of `full_name` through the commits and contents APIs: `git_ref` (a branch
    /// or tag name, may contain `/`) and `sha` resolve to it; `files` are (path from the
    /// repository root, bytes).
    pub fn add_commit(&self, full_name: &str, git_ref: &str, sha: &str, files: &[(&str, &[u8])]) {
        let commit = Commit {
            names: vec![git_ref.to_owned(), sha.to_owned()],
            sha: sha.to_owned(),
            files: files
                .iter()
                .map(|(p, b)| ((*p).to_owned(), b.to_vec()))
                .collect(),
        };
        self.shared
            .inner
            .lock()
            .unwrap()
            .commits
            .entry(full_name.to_owned())
            .or_default()
            .push(commit);
    }

    /// [`FakeForge::add_commit`] with every file under `dir`, placed under `prefix` (for
    /// example `skills/my-skill`).
    pub fn add_commit_from_dir(
        &self,
        full_name: &str,
        git_ref: &str,
        sha: &str,
        prefix: &str,
        dir: &std::path::Path,
    ) {
        fn walk(dir: &std::path::Path, rel: &str, out: &mut Vec<(String, Vec<u8>)>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                let rel = if rel.is_empty() {
                    name
                } else {
                    format!("{rel}/{name}")
                };
                if e.file_type().unwrap().is_dir() {
                    walk(&e.path(), &rel, out);
                } else {
                    out.push((rel, std::fs::read(e.path()).unwrap()));
                }
            }
        }
        let mut files = Vec::new();
        walk(dir, prefix.trim_matches('/'), &mut files);
        let refs: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(p, b)| (p.as_str(), b.as_slice()))
            .collect();
        self.add_commit(full_name, git_ref, sha, &refs);
    }

    /// Answer calls whose path starts with `prefix` with `status` and GitHub's error body.
    pub fn fail(&self, prefix: &str, status: u16, message: &str) {
        self.shared.inner.lock().unwrap().failures.push((
            prefix.to_owned(),
            status,
            message.to_owned(),
        ));
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.inner.lock().unwrap().requests.clone()
    }

    /// Requests whose method is `method` and whose path ends with `suffix`.
    pub fn posted(&self, method: &str, suffix: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == method && r.path.ends_with(suffix))
            .collect()
    }

    /// Bodies of the formal reviews created.
    pub fn reviews(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/reviews"))
            .map(|r| r.body)
            .collect()
    }

    /// Bodies of the check-run PATCHes (completions).
    pub fn completed_check_runs(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "PATCH" && r.path.contains("/check-runs/"))
            .map(|r| r.body)
            .collect()
    }
}

/// What a route handler answers: `Err` is a refusal in GitHub's error format, so the shared
/// prelude (`s.check(..)?`: record the call, then refuse as GitHub would) and a handler's own
/// refusals read alike.
type Answer = Result<Response, Response>;

fn gh_error(status: u16, message: &str) -> Response {
    (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        Json(json!({ "message": message, "documentation_url": "https://docs.github.com/rest" })),
    )
        .into_response()
}

impl Shared {
    fn id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Record the call; answer an injected failure or a missing token as GitHub would.
    #[expect(
        clippy::result_large_err,
        reason = "the error is the HTTP response the handler returns as it is"
    )]
    fn check(
        &self,
        method: &str,
        path: String,
        headers: &HeaderMap,
        body: Value,
        token: bool,
    ) -> Result<(), Response> {
        let mut inner = self.inner.lock().unwrap();
        let auth = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        inner.requests.push(Recorded {
            method: method.into(),
            path: path.clone(),
            body,
            authenticated: auth.starts_with("Bearer ghs_fake_"),
        });
        if let Some((_, status, message)) = inner
            .failures
            .iter()
            .find(|(p, _, _)| path.starts_with(p.as_str()))
        {
            return Err(gh_error(*status, message));
        }
        if headers.get("x-github-api-version").is_none() {
            return Err(gh_error(400, "missing X-GitHub-Api-Version"));
        }
        // A token is required where GitHub requires one; where it is optional (public reads)
        // a token that is sent must still be valid.
        // (The App endpoints carry the App JWT instead; `access_token` verifies it.)
        if !path.starts_with("/app/")
            && (token || !auth.is_empty())
            && !auth.starts_with("Bearer ghs_fake_")
        {
            return Err(gh_error(401, "Bad credentials"));
        }
        // An installation token reaches only the repositories of its installation.
        if let Some(repo) = path.strip_prefix("/repos/") {
            let full_name: String = repo.split('/').take(2).collect::<Vec<_>>().join("/");
            if !inner.reaches(auth, &full_name) {
                return Err(gh_error(404, "Not Found"));
            }
        }
        Ok(())
    }
}

impl Inner {
    /// Whether a call with this `authorization` header may see `full_name`: an installation
    /// token reaches only the repositories of its installation (other calls are refused
    /// before they get here).
    fn reaches(&self, auth: &str, full_name: &str) -> bool {
        match self.installations.get(full_name) {
            Some(id) if auth.starts_with("Bearer ghs_fake_") => {
                auth == format!("Bearer ghs_fake_{id}")
            }
            _ => true,
        }
    }
}

/// Now in RFC 3339, as GitHub writes `created_at`.
fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap_or_else(|_| time::OffsetDateTime::now_utc())
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

async fn access_token(State(s): State<Shared>, Path(id): Path<i64>, headers: HeaderMap) -> Answer {
    let path = format!("/app/installations/{id}/access_tokens");
    s.check("POST", path, &headers, Value::Null, false)?;
    let jwt = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_required_spec_claims(&["exp", "iat", "iss"]);
    validation.set_issuer(&[TEST_APP_ID]);
    let key = DecodingKey::from_rsa_pem(TEST_APP_PUBLIC_KEY.as_bytes()).unwrap();
    if let Err(e) = jsonwebtoken::decode::<Value>(jwt, &key, &validation) {
        return Err(gh_error(
            401,
            &format!("A JSON web token could not be decoded: {e}"),
        ));
    }
    let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let expires = expires
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    Ok((
        StatusCode::CREATED,
        Json(json!({ "token": format!("ghs_fake_{id}"), "expires_at": expires })),
    )
        .into_response())
}

async fn get_pull(
    State(s): State<Shared>,
    Path((o, r, n)): Path<(String, String, i64)>,
    headers: HeaderMap,
) -> Answer {
    let path = format!("/repos/{o}/{r}/pulls/{n}");
    s.check("GET", path, &headers, Value::Null, true)?;
    let pull = s
        .inner
        .lock()
        .unwrap()
        .pulls
        .get(&format!("{o}/{r}#{n}"))
        .cloned();
    match pull {
        Some(p) => Ok(Json(p).into_response()),
        None => Err(gh_error(404, "Not Found")),
    }
}

async fn post_comment(
    State(s): State<Shared>,
    Path((o, r, n)): Path<(String, String, i64)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Answer {
    let path = format!("/repos/{o}/{r}/issues/{n}/comments");
    s.check("POST", path, &headers, body.clone(), true)?;
    if body["body"].as_str().is_none_or(str::is_empty) {
        return Err(gh_error(422, "Validation Failed"));
    }
    Ok((
        StatusCode::CREATED,
        Json(json!({ "id": s.id(), "body": body["body"] })),
    )
        .into_response())
}

async fn post_review(
    State(s): State<Shared>,
    Path((o, r, n)): Path<(String, String, i64)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Answer {
    let path = format!("/repos/{o}/{r}/pulls/{n}/reviews");
    s.check("POST", path, &headers, body.clone(), true)?;
    let event = body["event"].as_str().unwrap_or_default();
    if !matches!(event, "COMMENT" | "APPROVE" | "REQUEST_CHANGES") {
        return Err(gh_error(422, "Unprocessable Entity"));
    }
    let body_text = body["body"].as_str().unwrap_or_default();
    if body_text.trim().is_empty() && event != "APPROVE" {
        return Err(gh_error(
            422,
            &format!("Unprocessable Entity: body is required for a {event} review"),
        ));
    }
    let Some(commit) = body["commit_id"].as_str().filter(|c| !c.is_empty()) else {
        return Err(gh_error(422, "Unprocessable Entity: commit_id is required"));
    };
    let diff = s
        .inner
        .lock()
        .unwrap()
        .diffs
        .get(&format!("{o}/{r}@{commit}"))
        .cloned();
    if let Some(diff) = diff {
        let lines = DiffLines::parse(&diff);
        for c in body["comments"].as_array().cloned().unwrap_or_default() {
            if !lines.contains(&c) {
                return Err(gh_error(
                    422,
                    "Unprocessable Entity: Pull request review thread line must be part of the diff",
                ));
            }
        }
    }
    let id = s.id();
    let comments: Vec<Value> = body["comments"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut c| {
            c["id"] = json!(s.id());
            c
        })
        .collect();
    let mut inner = s.inner.lock().unwrap();
    inner
        .pull_comments
        .entry(format!("{o}/{r}#{n}"))
        .or_default()
        .extend(comments.iter().map(|c| {
            let mut c = c.clone();
            c["user"] = json!({ "login": APP_LOGIN, "type": "Bot" });
            c["created_at"] = json!(now_rfc3339());
            c
        }));
    inner.review_comments.insert(id, comments);
    drop(inner);
    Ok(
        Json(json!({ "id": id, "state": body["event"], "commit_id": body["commit_id"] }))
            .into_response(),
    )
}

async fn review_comments(
    State(s): State<Shared>,
    Path((o, r, n, id)): Path<(String, String, i64, i64)>,
    headers: HeaderMap,
) -> Answer {
    let path = format!("/repos/{o}/{r}/pulls/{n}/reviews/{id}/comments");
    s.check("GET", path, &headers, Value::Null, true)?;
    let comments = s
        .inner
        .lock()
        .unwrap()
        .review_comments
        .get(&id)
        .cloned()
        .unwrap_or_default();
    Ok(Json(Value::Array(comments)).into_response())
}

async fn post_check_run(
    State(s): State<Shared>,
    Path((o, r)): Path<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Answer {
    let path = format!("/repos/{o}/{r}/check-runs");
    s.check("POST", path, &headers, body.clone(), true)?;
    if body["name"].as_str().is_none() || body["head_sha"].as_str().is_none() {
        return Err(gh_error(
            422,
            "Invalid request: name and head_sha are required",
        ));
    }
    Ok((
        StatusCode::CREATED,
        Json(json!({ "id": s.id(), "status": body["status"] })),
    )
        .into_response())
}

async fn patch_check_run(
    State(s): State<Shared>,
    Path((o, r, id)): Path<(String, String, i64)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Answer {
    let path = format!("/repos/{o}/{r}/check-runs/{id}");
    s.check("PATCH", path, &headers, body.clone(), true)?;
    if body["status"] == "completed" && !body["conclusion"].is_string() {
        return Err(gh_error(
            422,
            "Unprocessable Entity: conclusion is required when status is completed",
        ));
    }
    Ok(
        Json(json!({ "id": id, "status": body["status"], "conclusion": body["conclusion"] }))
            .into_response(),
    )
}

/// The lines of a unified diff a review comment may sit on, by path: new-file numbers of
/// added and context lines (side RIGHT), old-file numbers of removed and context lines (LEFT).
#[derive(Debug, Default)]
struct DiffLines {
    right: BTreeSet<(String, i64)>,
    left: BTreeSet<(String, i64)>,
}

impl DiffLines {
    fn parse(diff: &str) -> DiffLines {
        let mut out = DiffLines::default();
        let (mut path, mut old_line, mut new_line) = (String::new(), 0i64, 0i64);
        for l in diff.lines() {
            if let Some(p) = l.strip_prefix("+++ ") {
                path = p.strip_prefix("b/").unwrap_or(p).to_owned();
            } else if l.starts_with("--- ") || l.starts_with("diff --git") {
            } else if let Some(h) = l.strip_prefix("@@ ") {
                let nums: Vec<i64> = h
                    .split(' ')
                    .take(2)
                    .map(|r| {
                        r[1..]
                            .split(',')
                            .next()
                            .and_then(|n| n.parse().ok())
                            .unwrap_or(0)
                    })
                    .collect();
                (old_line, new_line) = (nums[0], nums[1]);
            } else if let Some(first) = l.chars().next() {
                match first {
                    '+' => {
                        out.right.insert((path.clone(), new_line));
                        new_line += 1;
                    }
                    '-' => {
                        out.left.insert((path.clone(), old_line));
                        old_line += 1;
                    }
                    ' ' => {
                        out.right.insert((path.clone(), new_line));
                        out.left.insert((path.clone(), old_line));
                        new_line += 1;
                        old_line += 1;
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// Whether a review comment (`path`, `line`, optional `start_line`, `side`) is on the diff.
    fn contains(&self, comment: &Value) -> bool {
        let path = comment["path"].as_str().unwrap_or_default().to_owned();
        let set = if comment["side"] == "LEFT" {
            &self.left
        } else {
            &self.right
        };
        let on = |line: Option<i64>| line.is_some_and(|n| set.contains(&(path.clone(), n)));
        on(comment["line"].as_i64())
            && (comment.get("start_line").is_none_or(Value::is_null)
                || on(comment["start_line"].as_i64()))
    }
}

/// The commit of `full_name` that `name` (branch, tag or SHA) resolves to.
fn find_commit(s: &Shared, full_name: &str, name: &str) -> Option<Commit> {
    let inner = s.inner.lock().unwrap();
    inner
        .commits
        .get(full_name)?
        .iter()
        .rev()
        .find(|c| c.names.iter().any(|n| n == name))
        .cloned()
}

async fn get_commit(
    State(s): State<Shared>,
    Path((o, r, git_ref)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Answer {
    let path = format!("/repos/{o}/{r}/commits/{git_ref}");
    s.check("GET", path, &headers, Value::Null, false)?;
    match find_commit(&s, &format!("{o}/{r}"), &git_ref) {
        Some(c) => {
            Ok(Json(json!({ "sha": c.sha, "commit": { "message": "fake" } })).into_response())
        }
        None => Err(gh_error(
            422,
            &format!("No commit found for SHA: {git_ref}"),
        )),
    }
}

/// GitHub wraps base64 content at 60 characters per line.
fn github_base64(bytes: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut out = String::new();
    for (i, c) in b64.chars().enumerate() {
        if i > 0 && i % 60 == 0 {
            out.push('\n');
        }
        out.push(c);
    }
    out.push('\n');
    out
}

async fn get_contents(
    State(s): State<Shared>,
    Path((o, r, path)): Path<(String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Answer {
    let git_ref = query.get("ref").cloned().unwrap_or_else(|| "main".into());
    let recorded = format!("/repos/{o}/{r}/contents/{path}?ref={git_ref}");
    s.check("GET", recorded, &headers, Value::Null, false)?;
    let Some(commit) = find_commit(&s, &format!("{o}/{r}"), &git_ref) else {
        return Err(gh_error(
            404,
            &format!("No commit found for the ref {git_ref}"),
        ));
    };
    let path = path.trim_matches('/').to_owned();
    if let Some(bytes) = commit.files.get(&path) {
        let name = path.rsplit('/').next().unwrap_or(&path);
        // Like GitHub: files over 1 MB come without inline content.
        let (encoding, content) = if bytes.len() > 1024 * 1024 {
            ("none", String::new())
        } else {
            ("base64", github_base64(bytes))
        };
        return Ok(Json(json!({
            "type": "file", "name": name, "path": path, "size": bytes.len(),
            "encoding": encoding, "content": content, "sha": format!("blob-{}", bytes.len()),
        }))
        .into_response());
    }
    let prefix = format!("{path}/");
    let mut dirs = BTreeSet::new();
    let mut entries = Vec::new();
    for (p, bytes) in &commit.files {
        let Some(rest) = p.strip_prefix(&prefix) else {
            continue;
        };
        match rest.split_once('/') {
            Some((dir, _)) => {
                dirs.insert(dir.to_owned());
            }
            None => entries.push(json!({
                "type": "file", "name": rest, "path": p, "size": bytes.len(),
            })),
        }
    }
    if entries.is_empty() && dirs.is_empty() {
        return Err(gh_error(404, "Not Found"));
    }
    for d in dirs {
        entries.push(json!({ "type": "dir", "name": d, "path": format!("{path}/{d}"), "size": 0 }));
    }
    Ok(Json(Value::Array(entries)).into_response())
}

/// Minimal `application/x-www-form-urlencoded` decoding (`+` and `%XX`).
fn form_fields(body: &str) -> HashMap<String, String> {
    fn decode(s: &str) -> String {
        let bytes = s.replace('+', " ").into_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%'
                && i + 2 < bytes.len()
                && let Ok(b) =
                    u8::from_str_radix(&String::from_utf8_lossy(&bytes[i + 1..i + 3]), 16)
            {
                out.push(b);
                i += 3;
                continue;
            }
            out.push(bytes[i]);
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    body.split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

/// `POST /login/oauth/access_token` as GitHub answers it with `Accept: application/json`:
/// 200 with a token, or 200 with an `error` field for a bad code or client.
async fn oauth_access_token(State(s): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let mut fields = form_fields(&body);
    if let Some(auth) = headers.get("authorization").and_then(|v| v.to_str().ok())
        && let Some(basic) = auth.strip_prefix("Basic ")
        && let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(basic)
        && let Some((id, secret)) = String::from_utf8_lossy(&raw).split_once(':')
    {
        fields.insert("client_id".into(), id.to_owned());
        fields.insert("client_secret".into(), secret.to_owned());
    }
    let mut inner = s.inner.lock().unwrap();
    inner.requests.push(Recorded {
        method: "POST".into(),
        path: "/login/oauth/access_token".into(),
        body: json!({ "code": fields.get("code"), "redirect_uri": fields.get("redirect_uri") }),
        authenticated: false,
    });
    let client_ok = inner.oauth_client.as_ref().is_some_and(|(id, secret)| {
        fields.get("client_id") == Some(id) && fields.get("client_secret") == Some(secret)
    });
    if !client_ok {
        return Json(json!({
            "error": "incorrect_client_credentials",
            "error_description": "The client_id and/or client_secret passed are incorrect."
        }))
        .into_response();
    }
    let grant = fields.get("code").and_then(|c| inner.oauth_codes.remove(c));
    let verified = |g: &OAuthGrant| match &g.code_challenge {
        None => true,
        Some(challenge) => fields.get("code_verifier").is_some_and(|v| {
            let digest = <sha2::Sha256 as sha2::Digest>::digest(v.as_bytes());
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest) == *challenge
        }),
    };
    let login = grant.filter(verified).map(|g| g.login);
    let Some(login) = login else {
        return Json(json!({
            "error": "bad_verification_code",
            "error_description": "The code passed is incorrect or expired."
        }))
        .into_response();
    };
    let token = format!("ghu_fake_{}", s.next_id.fetch_add(1, Ordering::SeqCst));
    inner.user_tokens.insert(token.clone(), login);
    Json(json!({ "access_token": token, "token_type": "bearer", "scope": "" })).into_response()
}

/// `GET /login/oauth/authorize` as GitHub answers it for a user who already authorized the
/// App (the login of [`FakeForge::set_oauth_login`]): 302 to `redirect_uri?code=..&state=..`.
/// An unknown client, a missing redirect_uri or a `code_challenge_method` other than S256 is
/// a 400 page; with no login set, 403.
async fn oauth_authorize(
    State(s): State<Shared>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let mut inner = s.inner.lock().unwrap();
    let client_ok = inner
        .oauth_client
        .as_ref()
        .is_some_and(|(id, _)| q.get("client_id") == Some(id));
    let Some(redirect) = q.get("redirect_uri").filter(|_| client_ok) else {
        return (StatusCode::BAD_REQUEST, "unknown client or no redirect_uri").into_response();
    };
    let challenge = q.get("code_challenge").cloned();
    if challenge.is_some() && q.get("code_challenge_method").map(String::as_str) != Some("S256") {
        return (
            StatusCode::BAD_REQUEST,
            "code_challenge_method must be S256",
        )
            .into_response();
    }
    let Some(login) = inner.oauth_login.clone() else {
        return (
            StatusCode::FORBIDDEN,
            "nobody is signed in to the fake forge",
        )
            .into_response();
    };
    let code = format!("code_{}", s.next_id.fetch_add(1, Ordering::SeqCst));
    inner.oauth_codes.insert(
        code.clone(),
        OAuthGrant {
            login,
            code_challenge: challenge,
        },
    );
    let state = q.get("state").cloned().unwrap_or_default();
    let sep = if redirect.contains('?') { '&' } else { '?' };
    let enc = |v: &str| {
        v.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    let location = format!("{redirect}{sep}code={}&state={}", enc(&code), enc(&state));
    (StatusCode::FOUND, [("location", location)]).into_response()
}

/// `GET /user` with a user token from the OAuth exchange.
async fn oauth_user(State(s): State<Shared>, headers: HeaderMap) -> Response {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let login = s.inner.lock().unwrap().user_tokens.get(token).cloned();
    match login {
        Some(login) => Json(json!({ "login": login, "id": 1, "type": "User" })).into_response(),
        None => gh_error(401, "Bad credentials"),
    }
}

async fn get_repo(
    State(s): State<Shared>,
    Path((o, r)): Path<(String, String)>,
    headers: HeaderMap,
) -> Answer {
    let path = format!("/repos/{o}/{r}");
    s.check("GET", path, &headers, Value::Null, true)?;
    Ok(Json(json!({ "full_name": format!("{o}/{r}"), "default_branch": "main" })).into_response())
}

async fn list_pull_comments(
    State(s): State<Shared>,
    Path((o, r, n)): Path<(String, String, i64)>,
    headers: HeaderMap,
) -> Answer {
    let path = format!("/repos/{o}/{r}/pulls/{n}/comments");
    s.check("GET", path, &headers, Value::Null, true)?;
    let inner = s.inner.lock().unwrap();
    let comments = inner
        .pull_comments
        .get(&format!("{o}/{r}#{n}"))
        .cloned()
        .unwrap_or_default();
    Ok(Json(Value::Array(comments)).into_response())
}

async fn create_ref(
    State(s): State<Shared>,
    Path((o, r)): Path<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Answer {
    let path = format!("/repos/{o}/{r}/git/refs");
    s.check("POST", path, &headers, body.clone(), true)?;
    let valid = body["ref"]
        .as_str()
        .is_some_and(|r| r.starts_with("refs/heads/"))
        && body["sha"].as_str().is_some_and(|s| s.len() == 40);
    if !valid {
        return Err(gh_error(422, "Reference update failed"));
    }
    Ok((
        StatusCode::CREATED,
        Json(json!({ "ref": body["ref"], "object": { "type": "commit", "sha": body["sha"] } })),
    )
        .into_response())
}

async fn put_contents(
    State(s): State<Shared>,
    Path((o, r, path)): Path<(String, String, String)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Answer {
    let recorded = format!("/repos/{o}/{r}/contents/{path}");
    s.check("PUT", recorded, &headers, body.clone(), true)?;
    let (Some(branch), Some(content), Some(_)) = (
        body["branch"].as_str(),
        body["content"].as_str(),
        body["message"].as_str(),
    ) else {
        return Err(gh_error(
            422,
            "Invalid request: message, content and branch are required",
        ));
    };
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(content) else {
        return Err(gh_error(422, "content is not valid Base64"));
    };
    s.inner
        .lock()
        .unwrap()
        .written_files
        .insert(format!("{o}/{r}:{branch}:{path}"), bytes);
    Ok((
        StatusCode::CREATED,
        Json(json!({ "content": { "path": path }, "commit": { "sha": "0".repeat(40) } })),
    )
        .into_response())
}

async fn create_pull(
    State(s): State<Shared>,
    Path((o, r)): Path<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Answer {
    let path = format!("/repos/{o}/{r}/pulls");
    s.check("POST", path, &headers, body.clone(), true)?;
    if body["title"].as_str().is_none() || body["head"].as_str().is_none() {
        return Err(gh_error(422, "Validation Failed"));
    }
    let number = s.id();
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "number": number,
            "html_url": format!("https://github.com/{o}/{r}/pull/{number}"),
        })),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn call(forge: &FakeForge, method: &str, path: &str, token: &str, body: Value) -> u16 {
        let client = reqwest::Client::new();
        let url = format!("{}{path}", forge.api_url());
        let req = match method {
            "GET" => client.get(url),
            "PATCH" => client.patch(url).json(&body),
            _ => client.post(url).json(&body),
        };
        req.header("authorization", format!("Bearer {token}"))
            .header("x-github-api-version", "2022-11-28")
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    const DIFF: &str = "diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,3 +1,4 @@\n fn a() {\n-    old();\n+    new();\n+    more();\n }\n";

    #[tokio::test]
    async fn reviews_are_refused_where_github_refuses_them() {
        let forge = FakeForge::start().await;
        forge.set_diff("o/r", "abc", DIFF);
        let review = |comments: Value| json!({"commit_id": "abc", "body": "Summary", "event": "COMMENT", "comments": comments});
        let path = "/repos/o/r/pulls/1/reviews";
        let t = "ghs_fake_1";
        // On the diff: added and context lines on the right, removed and context on the left.
        let on = json!([
            {"path": "src/a.rs", "line": 2, "side": "RIGHT", "body": "x"},
            {"path": "src/a.rs", "line": 1, "start_line": 1, "side": "RIGHT", "body": "x"},
            {"path": "src/a.rs", "line": 2, "side": "LEFT", "body": "x"},
        ]);
        assert_eq!(call(&forge, "POST", path, t, review(on)).await, 200);
        for off in [
            json!([{"path": "src/a.rs", "line": 9, "side": "RIGHT", "body": "x"}]),
            json!([{"path": "src/b.rs", "line": 2, "side": "RIGHT", "body": "x"}]),
            json!([{"path": "src/a.rs", "line": 4, "side": "LEFT", "body": "x"}]),
            json!([{"path": "src/a.rs", "line": 2, "start_line": 7, "body": "x"}]),
        ] {
            assert_eq!(
                call(&forge, "POST", path, t, review(off.clone())).await,
                422,
                "{off}"
            );
        }
        let no_body = json!({"commit_id": "abc", "event": "REQUEST_CHANGES", "comments": []});
        assert_eq!(call(&forge, "POST", path, t, no_body).await, 422);
        let no_commit = json!({"body": "S", "event": "COMMENT", "comments": []});
        assert_eq!(call(&forge, "POST", path, t, no_commit).await, 422);
    }

    #[tokio::test]
    async fn check_runs_complete_only_with_a_conclusion() {
        let forge = FakeForge::start().await;
        let path = "/repos/o/r/check-runs/5";
        let t = "ghs_fake_1";
        let done = json!({"status": "completed", "conclusion": "success"});
        assert_eq!(call(&forge, "PATCH", path, t, done).await, 200);
        let bare = json!({"status": "completed"});
        assert_eq!(call(&forge, "PATCH", path, t, bare).await, 422);
    }

    #[tokio::test]
    async fn an_installation_token_reaches_only_its_installations_repositories() {
        let forge = FakeForge::start().await;
        forge.set_installation("o/r", 5);
        forge.set_pull("o/r", 1, json!({"number": 1}));
        let path = "/repos/o/r/pulls/1";
        assert_eq!(
            call(&forge, "GET", path, "ghs_fake_5", Value::Null).await,
            200
        );
        assert_eq!(
            call(&forge, "GET", path, "ghs_fake_6", Value::Null).await,
            404
        );
        assert_eq!(
            call(&forge, "GET", path, "not-a-token", Value::Null).await,
            401
        );
    }
}
