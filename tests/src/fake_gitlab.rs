//! A fake GitLab: the REST v4 endpoints review-server calls, and GitLab's OAuth sign-in, on
//! loopback, recording every request (docs/architecture.md, Test doubles and real parts). It
//! is as strict as GitLab where GitLab is strict: every `/api/v4` call needs the
//! `PRIVATE-TOKEN` ([`FakeGitLab::TOKEN`]) or 401; projects are found by numeric id or
//! URL-encoded full path, else 404; a diff discussion's `position` must carry the merge
//! request's `diff_refs` and sit on a line of its diff (an unchanged line needs both
//! `old_line` and `new_line`), else 400; a commit status cannot move into the state it is in;
//! approvals must name the head SHA; OAuth codes are single-use and PKCE is checked.
//!
//! References: <https://docs.gitlab.com/ee/api/rest/>, the pages of each endpoint cited at its
//! handler.
#![allow(
    clippy::result_large_err,
    reason = "handlers answer Err(response): the error is the HTTP response returned as it is"
)]

mod mr;
mod oauth;
mod repo;

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// The path as sent (still percent-encoded), with its query.
    pub path: String,
    /// The parameters: the JSON or form body, with the query's parameters added.
    pub body: Value,
    /// Whether the call carried the right `PRIVATE-TOKEN` (or an OAuth token from the fake's
    /// own `/oauth/token`).
    pub authenticated: bool,
}

/// One commit of a project: the names that resolve to it (branches, tags, the SHA itself)
/// and its files by path.
#[derive(Debug, Clone, Default)]
struct Commit {
    names: Vec<String>,
    sha: String,
    files: BTreeMap<String, Vec<u8>>,
}

/// A project member: `access_level` 10 Guest, 20 Reporter, 30 Developer, 40 Maintainer, 50
/// Owner.
#[derive(Debug, Clone)]
struct Member {
    username: String,
    access_level: u32,
}

/// A thread of notes on a merge request; a plain note is a discussion of its own
/// (`individual_note`).
#[derive(Debug, Clone)]
struct Discussion {
    id: String,
    individual_note: bool,
    notes: Vec<Value>,
}

#[derive(Debug, Clone, Default)]
struct MergeRequest {
    json: Value,
    /// `git diff base...head`; discussions are checked against it.
    diff: String,
    discussions: Vec<Discussion>,
    /// The head SHAs approvals were given at.
    approvals: Vec<String>,
}

/// One commit status as posted.
#[derive(Debug, Clone)]
struct Status {
    id: i64,
    sha: String,
    name: String,
    state: String,
    description: String,
}

#[derive(Debug, Clone)]
struct Project {
    id: i64,
    path: String,
    default_branch: String,
    mrs: BTreeMap<i64, MergeRequest>,
    members: BTreeMap<i64, Member>,
    commits: Vec<Commit>,
    statuses: Vec<Status>,
}

impl Project {
    /// The commit `name` (branch, tag or SHA) resolves to: the newest one bearing it.
    fn commit(&self, name: &str) -> Option<&Commit> {
        self.commits
            .iter()
            .rev()
            .find(|c| c.names.iter().any(|n| n == name))
    }

    fn web_url(&self) -> String {
        format!("https://gitlab.example.com/{}", self.path)
    }
}

#[derive(Default)]
struct Inner {
    requests: Vec<Recorded>,
    projects: Vec<Project>,
    /// Answer every call whose path contains the key with this status and message.
    failures: Vec<(String, u16, String)>,
    /// Award emoji by note id, oldest first, in GitLab's format.
    awards: HashMap<i64, Vec<Value>>,
    /// How the approve endpoint refuses, when set.
    approval_refusal: Option<(u16, String)>,
    /// Known users by username -> id (members and whoever wrote a note).
    users: HashMap<String, i64>,
    /// The OAuth application's id and secret.
    oauth_client: Option<(String, String)>,
    /// Who approves on the authorize page.
    oauth_login: Option<String>,
    /// Unused authorization codes -> their grant.
    oauth_codes: HashMap<String, oauth::Grant>,
    /// OAuth access tokens -> username.
    oauth_tokens: HashMap<String, String>,
}

impl Inner {
    /// The project `key` names: a numeric id, or a full path (matched without regard to
    /// case, as GitLab matches paths).
    fn project(&mut self, key: &str) -> Option<&mut Project> {
        let key = key.trim_matches('/');
        match key.parse::<i64>() {
            Ok(id) => self.projects.iter_mut().find(|p| p.id == id),
            Err(_) => self
                .projects
                .iter_mut()
                .find(|p| p.path.eq_ignore_ascii_case(key)),
        }
    }

    /// The id of `username`, made up (and remembered) for a user the fake has not seen.
    fn user_id(&mut self, username: &str, next: &AtomicI64) -> i64 {
        if username == FakeGitLab::BOT_USERNAME {
            return FakeGitLab::BOT_USER_ID;
        }
        *self
            .users
            .entry(username.to_owned())
            .or_insert_with(|| next.fetch_add(1, Ordering::Relaxed))
    }
}

#[derive(Clone)]
struct Shared {
    inner: Arc<Mutex<Inner>>,
    next_id: Arc<AtomicI64>,
}

/// The running fake GitLab; stops when dropped.
pub struct FakeGitLab {
    addr: std::net::SocketAddr,
    /// The path prefix the instance is served under (`""` or e.g. `/gitlab`).
    prefix: String,
    shared: Shared,
    task: JoinHandle<()>,
}

impl Drop for FakeGitLab {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What a route handler answers: `Err` is a refusal in GitLab's error format.
type Answer = Result<Response, Response>;

/// GitLab's error body `{"message": ...}` with `status`.
fn gl_error(status: u16, message: impl Into<Value>) -> Response {
    (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        Json(json!({ "message": message.into() })),
    )
        .into_response()
}

/// Grape's error body for a missing or invalid parameter: `{"error": ...}` with 400.
fn param_error(message: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": message }))).into_response()
}

fn not_found(what: &str) -> Response {
    gl_error(404, format!("404 {what} Not Found"))
}

fn created(v: Value) -> Answer {
    Ok((StatusCode::CREATED, Json(v)).into_response())
}

fn ok(v: Value) -> Answer {
    Ok(Json(v).into_response())
}

/// The request line and headers of a call, as every handler records them.
struct Call {
    method: String,
    /// Raw path and query.
    path: String,
    headers: HeaderMap,
    query: HashMap<String, String>,
}

impl<S: Send + Sync> FromRequestParts<S> for Call {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Infallible> {
        let query = parts
            .uri
            .query()
            .map(oauth::form_fields)
            .unwrap_or_default();
        Ok(Call {
            method: parts.method.as_str().to_owned(),
            path: parts
                .uri
                .path_and_query()
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default(),
            headers: parts.headers.clone(),
            query,
        })
    }
}

impl Call {
    /// The call's parameters: the query's, overlaid by the JSON object or form body.
    fn params(&self, body: &[u8]) -> Value {
        let mut map: Map<String, Value> = self
            .query
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let is_json = self
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if is_json {
            if let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(body) {
                map.extend(o);
            }
        } else if !body.is_empty() {
            for (k, v) in oauth::form_fields(&String::from_utf8_lossy(body)) {
                map.insert(k, Value::String(v));
            }
        }
        Value::Object(map)
    }

    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

impl Shared {
    fn id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap()
    }

    /// Record the call, then refuse it as GitLab would: an injected failure, or 401 without
    /// the token.
    fn check(&self, call: &Call, params: &Value) -> Result<(), Response> {
        let mut inner = self.lock();
        let token_ok = call.header("private-token") == FakeGitLab::TOKEN
            || call
                .header("authorization")
                .strip_prefix("Bearer ")
                .is_some_and(|t| inner.oauth_tokens.contains_key(t));
        inner.requests.push(Recorded {
            method: call.method.clone(),
            path: call.path.clone(),
            body: params.clone(),
            authenticated: token_ok,
        });
        if let Some((_, status, message)) = inner
            .failures
            .iter()
            .find(|(p, _, _)| call.path.contains(p.as_str()))
        {
            return Err(gl_error(*status, message.clone()));
        }
        if !token_ok {
            return Err(gl_error(401, "401 Unauthorized"));
        }
        Ok(())
    }

    /// Run `f` on project `key`, or answer GitLab's 404.
    fn with_project<T>(
        &self,
        key: &str,
        f: impl FnOnce(&mut Project, &Shared) -> Result<T, Response>,
    ) -> Result<T, Response> {
        let mut inner = self.lock();
        let project = inner.project(key).ok_or_else(|| not_found("Project"))?;
        f(project, self)
    }

    /// A 40-hex id (a discussion id or a made-up commit SHA).
    fn hex_id(&self) -> String {
        let n = self.id();
        let digest = <sha2::Sha256 as sha2::Digest>::digest(format!("fake-gitlab-{n}"));
        digest.iter().take(20).map(|b| format!("{b:02x}")).collect()
    }
}

/// Now in RFC 3339 with milliseconds, as GitLab writes `created_at`.
fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let ms = now.millisecond();
    let now = now.replace_nanosecond(0).unwrap_or(now);
    let s = now
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    match s.strip_suffix('Z') {
        Some(base) => format!("{base}.{ms:03}Z"),
        None => s,
    }
}

/// A user as GitLab embeds one in a note or award.
fn user_json(id: i64, username: &str) -> Value {
    json!({
        "id": id,
        "username": username,
        "name": username,
        "state": "active",
        "bot": username == FakeGitLab::BOT_USERNAME || is_bot_name(username),
        "web_url": format!("https://gitlab.example.com/{username}"),
    })
}

/// GitLab's bot users for project and group access tokens: `project_<n>_bot...`,
/// `group_<n>_bot...`.
fn is_bot_name(username: &str) -> bool {
    let rest = username
        .strip_prefix("project_")
        .or_else(|| username.strip_prefix("group_"));
    rest.is_some_and(|r| {
        let d = r.bytes().take_while(u8::is_ascii_digit).count();
        d > 0 && r[d..].starts_with("_bot")
    })
}

/// Anything no route serves: recorded too (so a test can assert that no call went anywhere
/// else), then GitLab's 404.
async fn fallback(State(s): State<Shared>, call: Call) -> Response {
    let _ = s.check(&call, &Value::Null);
    gl_error(404, "404 Not Found")
}

/// Items `page` of `per_page` (GitLab's defaults: 1 and 20; at most 100).
fn paginate(items: Vec<Value>, query: &HashMap<String, String>) -> Vec<Value> {
    let per_page = query
        .get("per_page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(20)
        .clamp(1, 100);
    let page = query
        .get("page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    items
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect()
}

impl FakeGitLab {
    /// The access token every `/api/v4` call must carry as `PRIVATE-TOKEN` (GITLAB_TOKEN).
    pub const TOKEN: &'static str = "glpat-fake-review-bot-token";
    /// The bot user the token belongs to (a project access token's bot): the author of every
    /// note, discussion and approval made through the API.
    pub const BOT_USERNAME: &'static str = "project_42_bot_5e1f";
    /// The bot user's id.
    pub const BOT_USER_ID: i64 = 4242;

    /// Start on 127.0.0.1:0. Must be called inside a tokio runtime.
    pub async fn start() -> FakeGitLab {
        Self::start_under("").await
    }

    /// [`FakeGitLab::start`] for a self-managed instance served under a path prefix
    /// (`/gitlab`: the API at `/gitlab/api/v4`); [`FakeGitLab::base_url`] includes it, and
    /// recorded paths leave it out.
    pub async fn start_under(prefix: &str) -> FakeGitLab {
        let prefix = prefix.trim_end_matches('/').to_owned();
        let shared = Shared {
            inner: Arc::default(),
            next_id: Arc::new(AtomicI64::new(5000)),
        };
        let p = "/api/v4/projects/{id}";
        let mrs = "/api/v4/projects/{id}/merge_requests/{iid}";
        let app = Router::new()
            .route(p, get(repo::get_project))
            .route(
                &format!("{p}/members/all/{{user_id}}"),
                get(repo::get_member),
            )
            .route(&format!("{p}/statuses/{{sha}}"), post(repo::post_status))
            .route(
                &format!("{p}/repository/files/{{file_path}}"),
                get(repo::get_file),
            )
            .route(&format!("{p}/repository/tree"), get(repo::get_tree))
            .route(
                &format!("{p}/repository/commits/{{sha}}"),
                get(repo::get_commit),
            )
            .route(&format!("{p}/repository/commits"), post(repo::post_commit))
            .route(&format!("{p}/repository/branches"), post(repo::post_branch))
            .route(
                &format!("{p}/merge_requests"),
                post(repo::post_merge_request),
            )
            .route(mrs, get(mr::get_merge_request))
            .route(&format!("{mrs}/diffs"), get(mr::get_diffs))
            .route(
                &format!("{mrs}/notes"),
                get(mr::list_notes).post(mr::post_note),
            )
            .route(
                &format!("{mrs}/notes/{{note_id}}/award_emoji"),
                get(mr::list_awards),
            )
            .route(
                &format!("{mrs}/discussions"),
                get(mr::list_discussions).post(mr::post_discussion),
            )
            .route(
                &format!("{mrs}/discussions/{{did}}"),
                get(mr::get_discussion).put(mr::put_discussion),
            )
            .route(
                &format!("{mrs}/discussions/{{did}}/notes"),
                post(mr::post_discussion_note),
            )
            .route(&format!("{mrs}/approve"), post(mr::post_approve))
            .route("/api/v4/user", get(oauth::get_user))
            .route("/oauth/authorize", get(oauth::authorize))
            .route("/oauth/token", post(oauth::token))
            .fallback(fallback);
        let app = if prefix.is_empty() {
            app
        } else {
            Router::new().nest(&prefix, app).fallback(fallback)
        }
        .with_state(shared.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeGitLab {
            addr,
            prefix,
            shared,
            task,
        }
    }

    /// The instance's base, for GITLAB_URL (the API is under `/api/v4`, OAuth under
    /// `/oauth`).
    pub fn base_url(&self) -> String {
        format!("http://{}{}", self.addr, self.prefix)
    }

    /// The REST base, `{base_url}/api/v4`.
    pub fn api_url(&self) -> String {
        format!("{}/api/v4", self.base_url())
    }

    /// A project at full path `path` (`group/sub/project`) with numeric id `id`; calls may
    /// name it either way.
    pub fn add_project(&self, path: &str, id: i64, default_branch: &str) {
        self.shared.lock().projects.push(Project {
            id,
            path: path.trim_matches('/').to_owned(),
            default_branch: default_branch.to_owned(),
            mrs: BTreeMap::new(),
            members: BTreeMap::new(),
            commits: Vec::new(),
            statuses: Vec::new(),
        });
    }

    fn project<T>(&self, path: &str, f: impl FnOnce(&mut Project) -> T) -> T {
        let mut inner = self.shared.lock();
        let project = inner
            .project(path)
            .unwrap_or_else(|| panic!("no project {path}: add_project first"));
        f(project)
    }

    /// Serve merge request `mr` (GitLab's JSON: `iid`, `title`, `description`, `state`,
    /// `draft`, `author` {id, username}, `source_branch`, `target_branch`, `sha`, `diff_refs`
    /// {base_sha, start_sha, head_sha}, `web_url`) in project `path`. Missing `id`,
    /// `project_id`, `web_url`, `state` and `draft` are filled in; its head and base commits
    /// become commits of the project (without files), as they exist on GitLab. Serving an
    /// existing merge request again (its head moved) keeps its discussions and approvals.
    pub fn add_merge_request(&self, path: &str, mr: Value) {
        let id = self.shared.id();
        self.project(path, |p| {
            let mut mr = mr;
            let iid = mr["iid"].as_i64().expect("a merge request needs an iid");
            let defaults = [
                ("id", json!(id)),
                ("project_id", json!(p.id)),
                ("state", json!("opened")),
                ("draft", json!(false)),
                ("work_in_progress", json!(false)),
                (
                    "web_url",
                    json!(format!("{}/-/merge_requests/{iid}", p.web_url())),
                ),
            ];
            for (k, v) in defaults {
                if mr.get(k).is_none_or(Value::is_null) {
                    mr[k] = v;
                }
            }
            for sha in [
                &mr["sha"],
                &mr["diff_refs"]["base_sha"],
                &mr["diff_refs"]["start_sha"],
            ] {
                if let Some(sha) = sha.as_str()
                    && p.commit(sha).is_none()
                {
                    p.commits.push(Commit {
                        names: vec![sha.to_owned()],
                        sha: sha.to_owned(),
                        files: BTreeMap::new(),
                    });
                }
            }
            // A merge request served again (a push moved its head) keeps its discussions and
            // approvals, as on GitLab.
            p.mrs.entry(iid).or_default().json = mr;
        });
    }

    /// The diff of merge request `iid` (`git diff base...head`): served by GET .../diffs, and
    /// every diff discussion is checked against it.
    pub fn set_merge_request_diff(&self, path: &str, iid: i64, diff: &str) {
        self.project(path, |p| {
            p.mrs.get_mut(&iid).expect("add_merge_request first").diff = diff.to_owned();
        });
    }

    /// Make `username` (user `user_id`) a member of the project with `access_level` (10
    /// Guest, 20 Reporter, 30 Developer, 40 Maintainer, 50 Owner).
    pub fn add_member(&self, path: &str, user_id: i64, username: &str, access_level: u32) {
        self.shared
            .lock()
            .users
            .insert(username.to_owned(), user_id);
        self.project(path, |p| {
            p.members.insert(
                user_id,
                Member {
                    username: username.to_owned(),
                    access_level,
                },
            );
        });
    }

    /// A commit of the project for the repository files, tree and commits APIs: `names`
    /// (branches or tags, may contain `/`) and `sha` resolve to it; `files` are (path from the
    /// repository root, bytes).
    pub fn add_commit(&self, path: &str, names: &[&str], sha: &str, files: &[(&str, &[u8])]) {
        let mut all: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        all.push(sha.to_owned());
        let commit = Commit {
            names: all,
            sha: sha.to_owned(),
            files: files
                .iter()
                .map(|(p, b)| ((*p).to_owned(), b.to_vec()))
                .collect(),
        };
        self.project(path, |p| p.commits.push(commit));
    }

    /// An award emoji `name` (`thumbsup`, `tada`, ...) by `username` on note `note_id`.
    pub fn add_award(&self, path: &str, note_id: i64, name: &str, username: &str) {
        self.project(path, |_| ());
        let id = self.shared.id();
        let mut inner = self.shared.lock();
        let user_id = inner.user_id(username, &self.shared.next_id);
        inner.awards.entry(note_id).or_default().push(json!({
            "id": id,
            "name": name,
            "user": user_json(user_id, username),
            "created_at": now_rfc3339(),
            "updated_at": now_rfc3339(),
            "awardable_id": note_id,
            "awardable_type": "Note",
        }));
    }

    /// A reply by `username` in discussion `discussion_id` of merge request `iid`, as if
    /// written in GitLab's interface; returns the note's id. The author's id is the member's
    /// when `username` was added with [`FakeGitLab::add_member`].
    pub fn add_discussion_reply(
        &self,
        path: &str,
        iid: i64,
        discussion_id: &str,
        username: &str,
        body: &str,
    ) -> i64 {
        let note_id = self.shared.id();
        let mut inner = self.shared.lock();
        let user_id = inner.user_id(username, &self.shared.next_id);
        let project = inner.project(path).expect("no such project");
        let mr = project.mrs.get_mut(&iid).expect("no such merge request");
        let d = mr
            .discussions
            .iter_mut()
            .find(|d| d.id == discussion_id)
            .expect("no such discussion");
        let mut note = d.notes[0].clone();
        note["id"] = json!(note_id);
        note["body"] = json!(body);
        note["author"] = user_json(user_id, username);
        note["created_at"] = json!(now_rfc3339());
        note["updated_at"] = note["created_at"].clone();
        d.notes.push(note);
        note_id
    }

    /// Make POST .../approve answer `status` with `{"message": message}` (GitLab answers 401
    /// `401 Unauthorized` when the token's user may not approve, e.g. it wrote the merge
    /// request, and 404 or 403 where approvals are not available).
    pub fn refuse_approvals(&self, status: u16, message: &str) {
        self.shared.lock().approval_refusal = Some((status, message.to_owned()));
    }

    /// Accept this OAuth application at `/oauth/authorize` and `/oauth/token`.
    pub fn set_oauth_client(&self, client_id: &str, client_secret: &str) {
        self.shared.lock().oauth_client = Some((client_id.to_owned(), client_secret.to_owned()));
    }

    /// The user who approves on the authorize page: `GET /oauth/authorize` then redirects
    /// straight back with a code, as GitLab does for a user who already authorized the
    /// application.
    pub fn set_oauth_login(&self, username: &str) {
        self.shared.lock().oauth_login = Some(username.to_owned());
    }

    /// Answer calls whose path (as sent, percent-encoded, with its query) contains `part`
    /// with `status` and `{"message": message}`.
    pub fn fail_path(&self, part: &str, status: u16, message: &str) {
        self.shared
            .lock()
            .failures
            .push((part.to_owned(), status, message.to_owned()));
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// Requests whose method is `method` and whose path (with query) contains `part`.
    pub fn posted(&self, method: &str, part: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == method && r.path.contains(part))
            .collect()
    }

    /// The commit statuses posted on `sha`, oldest first: (name, state, description).
    pub fn statuses(&self, path: &str, sha: &str) -> Vec<(String, String, String)> {
        self.project(path, |p| {
            p.statuses
                .iter()
                .filter(|s| s.sha == sha)
                .map(|s| (s.name.clone(), s.state.clone(), s.description.clone()))
                .collect()
        })
    }

    /// The discussions of merge request `iid` as GitLab lists them (`id`,
    /// `individual_note`, `notes`), oldest first.
    pub fn discussions(&self, path: &str, iid: i64) -> Vec<Value> {
        self.project(path, |p| {
            p.mrs
                .get(&iid)
                .map(|m| m.discussions.iter().map(mr::discussion_json).collect())
                .unwrap_or_default()
        })
    }

    /// Every note of merge request `iid`, plain notes and discussion notes, oldest first.
    pub fn notes(&self, path: &str, iid: i64) -> Vec<Value> {
        self.project(path, |p| {
            p.mrs
                .get(&iid)
                .map(|m| {
                    m.discussions
                        .iter()
                        .flat_map(|d| d.notes.iter().cloned())
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    /// The head SHAs merge request `iid` was approved at.
    pub fn approvals(&self, path: &str, iid: i64) -> Vec<String> {
        self.project(path, |p| {
            p.mrs
                .get(&iid)
                .map(|m| m.approvals.clone())
                .unwrap_or_default()
        })
    }

    /// The merge request `iid` as the fake serves it (opened through the API, or added).
    pub fn merge_request(&self, path: &str, iid: i64) -> Option<Value> {
        self.project(path, |p| p.mrs.get(&iid).map(|m| m.json.clone()))
    }

    /// The bytes of `file` at the head of `branch` (after commits made through the API).
    pub fn file_at(&self, path: &str, branch: &str, file: &str) -> Option<Vec<u8>> {
        self.project(path, |p| p.commit(branch)?.files.get(file).cloned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/src/a.rs b/src/a.rs\nindex 1111111..2222222 100644\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,3 +1,4 @@\n fn a() {\n-    old();\n+    new();\n+    more();\n }\n";

    async fn call(
        gl: &FakeGitLab,
        method: &str,
        path: &str,
        token: &str,
        body: Value,
    ) -> (u16, Value) {
        let client = reqwest::Client::new();
        let url = format!("{}{path}", gl.api_url());
        let req = match method {
            "GET" => client.get(url),
            "PUT" => client.put(url).json(&body),
            _ => client.post(url).json(&body),
        };
        let resp = req.header("private-token", token).send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    fn mr_json() -> Value {
        json!({
            "iid": 1, "title": "T", "description": "D",
            "author": {"id": 7, "username": "alice"},
            "source_branch": "feature", "target_branch": "main", "sha": "h".repeat(40),
            "diff_refs": {"base_sha": "b".repeat(40), "start_sha": "s".repeat(40), "head_sha": "h".repeat(40)},
        })
    }

    async fn started() -> FakeGitLab {
        let gl = FakeGitLab::start().await;
        gl.add_project("group/sub/project", 42, "main");
        gl.add_merge_request("group/sub/project", mr_json());
        gl.set_merge_request_diff("group/sub/project", 1, DIFF);
        gl
    }

    #[tokio::test]
    async fn a_wrong_token_is_401_and_projects_resolve_by_id_or_path() {
        let gl = started().await;
        let (status, body) = call(&gl, "GET", "/projects/42", "nope", Value::Null).await;
        assert_eq!(
            (status, body),
            (401, json!({"message": "401 Unauthorized"}))
        );
        let t = FakeGitLab::TOKEN;
        assert_eq!(
            call(&gl, "GET", "/projects/42", t, Value::Null).await.0,
            200
        );
        let (status, body) = call(
            &gl,
            "GET",
            "/projects/group%2Fsub%2Fproject",
            t,
            Value::Null,
        )
        .await;
        assert_eq!((status, body["id"].clone()), (200, json!(42)));
        let (status, body) = call(&gl, "GET", "/projects/group%2Fother", t, Value::Null).await;
        assert_eq!(
            (status, body),
            (404, json!({"message": "404 Project Not Found"}))
        );
        assert_eq!(call(&gl, "GET", "/nowhere", t, Value::Null).await.0, 404);
        assert!(gl.requests().iter().any(|r| r.path == "/api/v4/nowhere"));
    }

    #[tokio::test]
    async fn positions_off_the_diff_or_its_refs_are_refused() {
        let gl = started().await;
        let t = FakeGitLab::TOKEN;
        let path = "/projects/42/merge_requests/1/discussions";
        let pos = |extra: Value| {
            let mut p = json!({
                "position_type": "text", "base_sha": "b".repeat(40), "start_sha": "s".repeat(40),
                "head_sha": "h".repeat(40), "old_path": "src/a.rs", "new_path": "src/a.rs",
            });
            p.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            json!({"body": "x", "position": p})
        };
        // Added line (new_line), removed line (old_line), unchanged line (both).
        for on in [
            json!({"new_line": 2}),
            json!({"old_line": 2}),
            json!({"old_line": 1, "new_line": 1}),
        ] {
            let (status, body) = call(&gl, "POST", path, t, pos(on.clone())).await;
            assert_eq!(status, 201, "{on} {body}");
            assert_eq!(body["notes"][0]["type"], "DiffNote");
            assert_eq!(body["id"].as_str().unwrap().len(), 40);
        }
        let line_code = json!({"message": "400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}"});
        for off in [
            json!({"new_line": 9}),
            json!({"new_line": 1}),
            json!({"old_line": 3}),
            json!({"old_line": 1, "new_line": 2}),
            json!({"new_path": "src/b.rs", "old_path": "src/b.rs", "new_line": 2}),
        ] {
            let (status, body) = call(&gl, "POST", path, t, pos(off.clone())).await;
            assert_eq!((status, body), (400, line_code.clone()), "{off}");
        }
        let (status, _) = call(
            &gl,
            "POST",
            path,
            t,
            pos(json!({"head_sha": "x".repeat(40), "new_line": 2})),
        )
        .await;
        assert_eq!(status, 400);
        // A multi-line range: by line code (sha1 of the path, old and new counters), ending at
        // the note's line.
        let code = |o: i64, n: i64| mr::line_code("src/a.rs", o, n);
        let range = |start: &str, end: &str| {
            pos(json!({"new_line": 3, "line_range": {
                "start": {"line_code": start, "type": "new", "old_line": null, "new_line": 2},
                "end": {"line_code": end, "type": "new", "old_line": null, "new_line": 3},
            }}))
        };
        let (status, body) = call(&gl, "POST", path, t, range(&code(3, 2), &code(3, 3))).await;
        assert_eq!(status, 201, "{body}");
        for (start, end) in [(code(2, 2), code(3, 3)), (code(3, 2), code(3, 4))] {
            let (status, _) = call(&gl, "POST", path, t, range(&start, &end)).await;
            assert_eq!(status, 400, "{start} {end}");
        }
        assert_eq!(gl.discussions("group/sub/project", 1).len(), 4);
    }

    #[tokio::test]
    async fn a_status_cannot_move_into_the_state_it_is_in() {
        let gl = started().await;
        let t = FakeGitLab::TOKEN;
        let sha = "h".repeat(40);
        let path = format!("/projects/42/statuses/{sha}");
        let st = |state: &str| json!({"state": state, "name": "review", "description": "d"});
        assert_eq!(call(&gl, "POST", &path, t, st("pending")).await.0, 201);
        assert_eq!(call(&gl, "POST", &path, t, st("running")).await.0, 201);
        let (status, body) = call(&gl, "POST", &path, t, st("running")).await;
        assert_eq!(
            (status, body),
            (
                400,
                json!({"message": "Cannot transition status via :run from :running"})
            )
        );
        assert_eq!(call(&gl, "POST", &path, t, st("bogus")).await.0, 400);
        assert_eq!(call(&gl, "POST", &path, t, st("success")).await.0, 201);
        let unknown = format!("/projects/42/statuses/{}", "0".repeat(40));
        assert_eq!(call(&gl, "POST", &unknown, t, st("running")).await.0, 404);
        let states: Vec<String> = gl
            .statuses("group/sub/project", &sha)
            .into_iter()
            .map(|(_, s, _)| s)
            .collect();
        assert_eq!(states, ["pending", "running", "success"]);
    }

    #[tokio::test]
    async fn approvals_need_the_head_sha() {
        let gl = started().await;
        let t = FakeGitLab::TOKEN;
        let path = "/projects/42/merge_requests/1/approve";
        let (status, body) = call(&gl, "POST", path, t, json!({"sha": "x".repeat(40)})).await;
        assert_eq!(
            (status, body),
            (
                409,
                json!({"message": "SHA does not match HEAD of source branch"})
            )
        );
        assert_eq!(
            call(&gl, "POST", path, t, json!({"sha": "h".repeat(40)}))
                .await
                .0,
            201
        );
        gl.refuse_approvals(401, "401 Unauthorized");
        assert_eq!(
            call(&gl, "POST", path, t, json!({"sha": "h".repeat(40)}))
                .await
                .0,
            401
        );
        assert_eq!(gl.approvals("group/sub/project", 1).len(), 1);
    }

    #[tokio::test]
    async fn a_pkce_mismatch_is_refused_and_codes_are_single_use() {
        let gl = started().await;
        gl.set_oauth_client("app", "secret");
        gl.set_oauth_login("alice");
        let verifier = "v".repeat(50);
        let digest = <sha2::Sha256 as sha2::Digest>::digest(verifier.as_bytes());
        let challenge =
            base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, digest);
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let code = async || {
            let resp = client
                .get(format!("{}/oauth/authorize", gl.base_url()))
                .query(&[
                    ("client_id", "app"),
                    ("redirect_uri", "http://cb/x"),
                    ("response_type", "code"),
                    ("state", "st"),
                    ("scope", "read_user"),
                    ("code_challenge", challenge.as_str()),
                    ("code_challenge_method", "S256"),
                ])
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status().as_u16(), 302);
            let loc = resp.headers()["location"].to_str().unwrap().to_owned();
            assert!(loc.starts_with("http://cb/x?code="), "{loc}");
            assert!(loc.ends_with("&state=st"), "{loc}");
            loc["http://cb/x?code=".len()..loc.len() - "&state=st".len()].to_owned()
        };
        let exchange = |code: String, verifier: String| {
            let client = client.clone();
            let url = format!("{}/oauth/token", gl.base_url());
            async move {
                let resp = client
                    .post(url)
                    .form(&[
                        ("grant_type", "authorization_code"),
                        ("client_id", "app"),
                        ("client_secret", "secret"),
                        ("code", code.as_str()),
                        ("redirect_uri", "http://cb/x"),
                        ("code_verifier", verifier.as_str()),
                    ])
                    .send()
                    .await
                    .unwrap();
                let status = resp.status().as_u16();
                (status, resp.json::<Value>().await.unwrap())
            }
        };
        let (status, body) = exchange(code().await, "w".repeat(50)).await;
        assert_eq!(
            (status, body["error"].clone()),
            (400, json!("invalid_grant"))
        );
        let good = code().await;
        let (status, body) = exchange(good.clone(), verifier.clone()).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["token_type"], "Bearer");
        let (status, _) = exchange(good, verifier).await;
        assert_eq!(status, 400, "a code is single-use");
        let me = client
            .get(format!("{}/user", gl.api_url()))
            .bearer_auth(body["access_token"].as_str().unwrap())
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap();
        assert_eq!(me["username"], "alice");
    }
}
