//! The GitLab client: REST API v4 (`{GITLAB_URL}/api/v4`) with one access token (a project,
//! group or personal access token with the `api` scope) sent as `PRIVATE-TOKEN` on every call
//! (<https://docs.gitlab.com/ee/api/rest/authentication.html>), and the calls of a review
//! mapped onto [`Forge`]: merge requests for pull requests, notes and diff discussions for
//! review comments, commit statuses for check runs (docs/review-service.md, "GitLab").

use crate::{
    CheckConclusion, CheckRun, CommentUser, ContentEntry, Contents, FileChangePull, Forge,
    ForgeError, ForgeKind, OpenedPull, PullRequest, REACTION_PAGES_CAP, Reaction, RepoRead,
    RepoRef, ReviewComment, ReviewThread, THREAD_COMMENTS_CAP, THREAD_PAGES_CAP, ThreadComment,
};
use async_trait::async_trait;
use base64::Engine;
use review_domain::{InlineComment, PostedReview, ReviewEvent, ReviewSubmission, Side};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;
use time::OffsetDateTime;

/// Largest file [`Forge::contents`] returns, in bytes (1 MiB, the limit GitHub's contents API
/// inlines, so both forges refuse the same files).
pub const CONTENTS_MAX_BYTES: u64 = 1024 * 1024;

/// GitLab caps a commit status `description` at 255 characters
/// (<https://docs.gitlab.com/ee/api/commits.html#set-the-pipeline-status-of-a-commit>).
pub const STATUS_DESCRIPTION_MAX_CHARS: usize = 255;

/// Most pages of 100 file diffs read for one merge request (2,000 files).
const DIFF_PAGES_CAP: usize = 20;
/// Most pages of 100 entries read for one folder listing (1,000 entries).
const TREE_PAGES_CAP: usize = 10;
/// GitLab's largest page (`per_page`).
const PER_PAGE: usize = 100;

/// [`Forge`] over GitLab's REST API v4 at `{base_url}/api/v4`, for `gitlab.com` or a
/// self-managed instance (whose base may carry a path prefix, `https://host/gitlab`).
///
/// Projects are addressed by their URL-encoded full path (`group%2Fsub%2Fproject`, from
/// [`RepoRef::gitlab_path`]), which GitLab accepts wherever it accepts the numeric id
/// (<https://docs.gitlab.com/ee/api/rest/#namespaced-path-encoding>).
pub struct GitLabForge {
    api_url: String,
    http: reqwest::Client,
    token: SecretString,
}

/// A merge request as GET /projects/:id/merge_requests/:iid shows it (the fields a review
/// reads; <https://docs.gitlab.com/ee/api/merge_requests.html#get-single-mr>).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeRequest {
    /// The instance-wide id.
    pub id: i64,
    /// The project-scoped number, `!iid` (the pull request number of [`Forge`]).
    pub iid: i64,
    pub title: String,
    /// Markdown; null when empty.
    #[serde(default)]
    pub description: Option<String>,
    /// `opened`, `closed`, `locked` or `merged`.
    pub state: String,
    #[serde(default)]
    pub draft: bool,
    /// The older name of `draft` (GitLab before 14.0, still sent).
    #[serde(default)]
    pub work_in_progress: bool,
    #[serde(default)]
    pub author: Option<GitLabUser>,
    pub source_branch: String,
    pub target_branch: String,
    /// The head commit of the source branch.
    #[serde(default)]
    pub sha: Option<String>,
    /// The commits the diff is between; null while GitLab is still computing it.
    #[serde(default)]
    pub diff_refs: Option<DiffRefs>,
    #[serde(default)]
    pub web_url: String,
}

/// The commits a merge request's diff is between: a diff discussion's `position` must carry
/// all three (<https://docs.gitlab.com/ee/api/discussions.html#create-a-new-thread-in-the-merge-request-diff>).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffRefs {
    /// The merge base of source and target.
    pub base_sha: String,
    /// The target branch's head when the diff was made.
    pub start_sha: String,
    /// The source branch's head.
    pub head_sha: String,
}

/// A GitLab user as notes, award emoji and merge requests embed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitLabUser {
    pub id: i64,
    pub username: String,
    /// True for bot users (project and group access tokens, service accounts).
    #[serde(default)]
    pub bot: bool,
}

/// What addresses a GitLab project in an API path: a [`RepoRef`] or [`RepoRead`] (owner
/// `host/namespace`, name `project`), a full path `group/sub/project`, or a numeric id.
pub trait GitLabProject {
    /// The `:id` path segment: the URL-encoded full path (`group%2Fsub%2Fproject`) or the
    /// numeric id.
    fn project_segment(&self) -> String;
}

impl GitLabProject for RepoRef {
    fn project_segment(&self) -> String {
        owner_name_segment(&self.owner, &self.name)
    }
}

impl GitLabProject for RepoRead {
    fn project_segment(&self) -> String {
        owner_name_segment(&self.owner, &self.name)
    }
}

impl GitLabProject for str {
    /// `self` is a full path (`group/sub/project`, without the host) or a numeric id.
    fn project_segment(&self) -> String {
        encode_all(self.trim_matches('/'))
    }
}

impl GitLabProject for String {
    fn project_segment(&self) -> String {
        self.as_str().project_segment()
    }
}

impl GitLabProject for i64 {
    fn project_segment(&self) -> String {
        self.to_string()
    }
}

/// The path of a project whose owner is `host/namespace` ([`crate::gitlab_path`]); an owner
/// without a host is taken as a namespace on the configured instance.
fn owner_name_segment(owner: &str, name: &str) -> String {
    let path = crate::gitlab_path(owner, name).unwrap_or_else(|| format!("{owner}/{name}"));
    encode_all(&path)
}

/// Percent-encode everything but RFC 3986's unreserved characters: `/` too, as GitLab wants
/// for project paths, file paths and refs in a path segment.
fn encode_all(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// GitLab's error text from an error body: `message` as a string, or flattened from the
/// object (`{"base": ["..."], "line_code": ["..."]}`) or array it can be; OAuth's `error` and
/// `error_description`; else the start of the body
/// (<https://docs.gitlab.com/ee/api/rest/troubleshooting.html#status-codes>).
pub(crate) fn gitlab_message(body: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return body.chars().take(500).collect();
    };
    if let Some(m) = v.get("message").filter(|m| !m.is_null()) {
        return flatten(m);
    }
    match (v["error"].as_str(), v["error_description"].as_str()) {
        (Some(e), Some(d)) => format!("{e}: {d}"),
        (Some(e), None) => e.to_owned(),
        _ => body.chars().take(500).collect(),
    }
}

/// A JSON value as one line of text: strings as they are, arrays joined with `, `, objects as
/// `key: value` joined with `; `.
fn flatten(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(flatten).collect::<Vec<_>>().join(", "),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}: {}", flatten(v)))
            .collect::<Vec<_>>()
            .join("; "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Whether `username` is one of the bot users GitLab makes for project and group access
/// tokens, `project_<id>_bot...` and `group_<id>_bot...`
/// (<https://docs.gitlab.com/ee/user/project/settings/project_access_tokens.html#bot-users-for-projects>),
/// or a service account (`service_account_...`, GitLab's default name for them).
pub fn is_bot_username(username: &str) -> bool {
    if username.starts_with("service_account") {
        return true;
    }
    let rest = username
        .strip_prefix("project_")
        .or_else(|| username.strip_prefix("group_"));
    let Some(rest) = rest else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && rest[digits..].starts_with("_bot")
}

/// GitHub's `author_association` for a GitLab access level
/// (<https://docs.gitlab.com/ee/api/members.html#roles>): Owner (50) is `OWNER`, Developer (30)
/// and Maintainer (40) are `MEMBER` (they can push), anything less or no membership `NONE`.
pub fn association_of(access_level: Option<u32>) -> &'static str {
    match access_level {
        Some(l) if l >= 50 => "OWNER",
        Some(l) if l >= 30 => "MEMBER",
        _ => "NONE",
    }
}

/// GitHub's reaction name for a GitLab award emoji name (`thumbsup` is `+1`, `tada` is
/// `hooray`, ...); other emoji keep their GitLab name.
pub fn reaction_content(emoji: &str) -> String {
    match emoji {
        "thumbsup" => "+1",
        "thumbsdown" => "-1",
        "laughing" => "laugh",
        "tada" => "hooray",
        other => other,
    }
    .to_owned()
}

/// Rewrite GitHub suggestion fences to GitLab's: an opening line `` ```suggestion `` becomes
/// `` ```suggestion:-N+0 `` with `N` = `line - start_line` (0 for one line), so the suggestion
/// replaces the lines the comment spans, ending at the commented line
/// (<https://docs.gitlab.com/ee/user/project/merge_requests/reviews/suggestions.html#multi-line-suggestions>).
pub fn gitlab_suggestions(body: &str, line: i64, start_line: Option<i64>) -> String {
    let above = start_line
        .filter(|s| *s < line)
        .map(|s| line - s)
        .unwrap_or(0);
    let mut out = String::with_capacity(body.len() + 8);
    for (i, l) in body.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let trimmed = l.trim_start();
        let ticks = trimmed.bytes().take_while(|b| *b == b'`').count();
        if ticks >= 3 && trimmed[ticks..].trim_end() == "suggestion" {
            let indent = &l[..l.len() - trimmed.len()];
            out.push_str(&format!(
                "{indent}{}suggestion:-{above}+0",
                "`".repeat(ticks)
            ));
        } else {
            out.push_str(l);
        }
    }
    out
}

/// Truncate to at most `max` characters, on a char boundary.
fn truncate_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The commit status state GitLab's API names for a conclusion: `success` for Success,
/// Neutral and Skipped (nothing failed), `failed`, `canceled`.
fn status_state(conclusion: CheckConclusion) -> &'static str {
    match conclusion {
        CheckConclusion::Success | CheckConclusion::Neutral | CheckConclusion::Skipped => "success",
        CheckConclusion::Failure => "failed",
        CheckConclusion::Cancelled => "canceled",
    }
}

/// Whether `e` is GitLab refusing to move a commit status into the state it is already in
/// (400 `Cannot transition status via :run from :running`): the status already says what we
/// wanted.
fn is_same_state(e: &ForgeError, state: &str) -> bool {
    matches!(e, ForgeError::Api { status: 400, message, .. }
        if message.contains("Cannot transition status via")
            && message.trim_end().ends_with(&format!("from :{state}")))
}

/// A note of a discussion (<https://docs.gitlab.com/ee/api/discussions.html>).
#[derive(Debug, Clone, Deserialize)]
struct WireNote {
    id: i64,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    body: String,
    #[serde(default)]
    author: Option<GitLabUser>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    created_at: Option<OffsetDateTime>,
    #[serde(default)]
    resolved: bool,
    #[serde(default)]
    position: Option<WirePosition>,
}

#[derive(Debug, Clone, Deserialize)]
struct WirePosition {
    #[serde(default)]
    new_path: Option<String>,
    #[serde(default)]
    old_path: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct WireDiscussion {
    id: String,
    #[serde(default)]
    notes: Vec<WireNote>,
}

impl WireDiscussion {
    /// Whether the discussion is a diff thread: its first note is a `DiffNote`.
    fn is_diff(&self) -> bool {
        self.notes
            .first()
            .is_some_and(|n| n.kind.as_deref() == Some("DiffNote"))
    }
}

/// One file of GET /projects/:id/merge_requests/:iid/diffs.
#[derive(Debug, Clone, Deserialize)]
struct WireDiff {
    old_path: String,
    new_path: String,
    #[serde(default)]
    diff: String,
}

/// One line of a merge request's diff, as GitLab's diff lines describe it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DiffLine {
    /// Its number in the old file: None for an added line.
    old_line: Option<i64>,
    /// Its number in the new file: None for a removed line.
    new_line: Option<i64>,
    /// GitLab's counters where the line sits (for an added line the old counter is the next
    /// old line, for a removed one the next new line): what its line code is made of.
    code: (i64, i64),
}

impl DiffLine {
    /// GitLab's line type: `new` (added), `old` (removed), null (unchanged).
    fn kind(&self) -> Value {
        match (self.old_line, self.new_line) {
            (None, _) => json!("new"),
            (_, None) => json!("old"),
            _ => Value::Null,
        }
    }
}

/// GitLab's line code of a diff line: `<sha1(path)>_<old>_<new>`, from `Gitlab::Git.diff_line_code`
/// (<https://gitlab.com/gitlab-org/gitlab/-/issues/323760>).
pub fn line_code(path: &str, old: i64, new: i64) -> String {
    let digest = <sha1::Sha1 as sha1::Digest>::digest(path.as_bytes());
    format!("{}_{old}_{new}", hex::encode(digest))
}

/// The lines of a merge request's diff, to fill a discussion `position`: GitLab wants both
/// `old_line` and `new_line` for an unchanged (context) line (gitlab-org/gitlab#325161), the
/// file's `old_path`, and line codes for a multi-line `line_range`.
#[derive(Debug, Default)]
struct DiffMap {
    /// new path -> old path.
    old_paths: HashMap<String, String>,
    /// (new path, new side?, number on that side) -> the line.
    lines: HashMap<(String, bool, i64), DiffLine>,
}

impl DiffMap {
    fn add(&mut self, d: &WireDiff) {
        self.old_paths
            .insert(d.new_path.clone(), d.old_path.clone());
        let (mut old, mut new) = (0i64, 0i64);
        let path = &d.new_path;
        for l in d.diff.lines() {
            if let Some(h) = l.strip_prefix("@@ ") {
                let mut nums = h.split(' ').take(2).map(|r| {
                    r.get(1..)
                        .and_then(|r| r.split(',').next())
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0)
                });
                old = nums.next().unwrap_or(0);
                new = nums.next().unwrap_or(0);
                continue;
            }
            let line = |old_line, new_line| DiffLine {
                old_line,
                new_line,
                code: (old, new),
            };
            match l.as_bytes().first() {
                Some(b'+') => {
                    self.lines
                        .insert((path.clone(), true, new), line(None, Some(new)));
                    new += 1;
                }
                Some(b'-') => {
                    self.lines
                        .insert((path.clone(), false, old), line(Some(old), None));
                    old += 1;
                }
                Some(b' ') => {
                    let both = line(Some(old), Some(new));
                    self.lines.insert((path.clone(), true, new), both);
                    self.lines.insert((path.clone(), false, old), both);
                    new += 1;
                    old += 1;
                }
                _ => {}
            }
        }
    }

    /// The `position` of an inline comment: paths, `new_line` (side RIGHT) or `old_line`
    /// (LEFT), with the other one too when the line is unchanged, and for a comment spanning
    /// lines a `line_range` from `start_line` to `line` when both are on the diff (else it
    /// is anchored at `line` alone).
    fn position(&self, c: &InlineComment, refs: &DiffRefs) -> Value {
        let old_path = self.old_paths.get(&c.path).unwrap_or(&c.path);
        let mut p = json!({
            "position_type": "text",
            "base_sha": refs.base_sha,
            "start_sha": refs.start_sha,
            "head_sha": refs.head_sha,
            "old_path": old_path,
            "new_path": c.path,
        });
        let right = c.side == Side::Right;
        let find = |n: i64| self.lines.get(&(c.path.clone(), right, n));
        match find(c.line) {
            Some(l) => {
                if let Some(o) = l.old_line {
                    p["old_line"] = json!(o);
                }
                if let Some(n) = l.new_line {
                    p["new_line"] = json!(n);
                }
            }
            None if right => p["new_line"] = json!(c.line),
            None => p["old_line"] = json!(c.line),
        }
        if let Some(start) = c.start_line.filter(|s| *s < c.line)
            && let (Some(s), Some(e)) = (find(start), find(c.line))
        {
            let end = |l: &DiffLine| {
                json!({
                    "line_code": line_code(&c.path, l.code.0, l.code.1),
                    "type": l.kind(),
                    "old_line": l.old_line,
                    "new_line": l.new_line,
                })
            };
            p["line_range"] = json!({ "start": end(s), "end": end(e) });
        }
        p
    }
}

impl GitLabForge {
    /// A client for the instance at `base_url` (GITLAB_URL: `https://gitlab.com`, or a
    /// self-managed base, possibly with a path prefix; a trailing `/` is ignored), calling
    /// `{base_url}/api/v4` with `token` as `PRIVATE-TOKEN`, each call timing out after 30 s.
    ///
    /// Errors: [`ForgeError::Credentials`] for a base that is not an http(s) URL,
    /// [`ForgeError::Transport`] when the HTTP client cannot be built.
    pub fn new(base_url: &str, token: SecretString) -> Result<Self, ForgeError> {
        let base = base_url.trim().trim_end_matches('/');
        if !(base.starts_with("https://") || base.starts_with("http://")) {
            return Err(ForgeError::Credentials(format!(
                "GITLAB_URL must be an http(s) URL, not {base:?}"
            )));
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!("review-server/", env!("CARGO_PKG_VERSION")))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| transport(e.to_string()))?;
        Ok(Self {
            api_url: format!("{base}/api/v4"),
            http,
            token,
        })
    }

    /// The REST base, `{base_url}/api/v4`.
    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    /// A call to `path` under the API base with the token; the JSON answer (Null for an empty
    /// body). Errors name GitLab, the method and `path`, with GitLab's message.
    async fn send(
        &self,
        method: &'static str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ForgeError> {
        let url = format!("{}{}", self.api_url, path);
        let m =
            reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| transport(e.to_string()))?;
        let mut req = self
            .http
            .request(m, &url)
            .header("PRIVATE-TOKEN", self.token.expose_secret());
        if let Some(body) = body {
            req = req.json(body);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| transport(format!("{method} {url}: {e}")))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| transport(format!("{method} {url}: {e}")))?;
        if !status.is_success() {
            return Err(ForgeError::Api {
                forge: ForgeKind::GitLab,
                method,
                path: path.to_owned(),
                status: status.as_u16(),
                message: gitlab_message(&text),
            });
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|e| decode(path, e.to_string()))
    }

    /// GET `path` (which has a query already) page by page, 100 a page, at most `cap` pages;
    /// the items, and whether the cap cut the list short.
    async fn get_pages<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        cap: usize,
    ) -> Result<(Vec<T>, bool), ForgeError> {
        let sep = if path.contains('?') { '&' } else { '?' };
        let mut out = Vec::new();
        for page in 1..=cap {
            let p = format!("{path}{sep}per_page={PER_PAGE}&page={page}");
            let v = self.send("GET", &p, None).await?;
            let items: Vec<T> = from_json(v, &p)?;
            let last = items.len() < PER_PAGE;
            out.extend(items);
            if last {
                return Ok((out, false));
            }
        }
        Ok((out, true))
    }

    /// GET /projects/:id/merge_requests/:iid: the merge request with its `diff_refs`.
    ///
    /// Errors: [`ForgeError::Api`] 404 for an unknown project or merge request.
    pub async fn merge_request(
        &self,
        repo: &(impl GitLabProject + ?Sized),
        iid: i64,
    ) -> Result<MergeRequest, ForgeError> {
        let path = format!("/projects/{}/merge_requests/{iid}", repo.project_segment());
        let v = self.send("GET", &path, None).await?;
        from_json(v, &path)
    }

    /// The access level of user `user_id` on the project, inherited memberships included
    /// (GET /projects/:id/members/all/:user_id): 10 Guest, 20 Reporter, 30 Developer, 40
    /// Maintainer, 50 Owner (<https://docs.gitlab.com/ee/api/members.html#get-a-member-of-a-group-or-project-including-inherited-and-invited-members>).
    /// None when the user is not a member (404).
    pub async fn member_access_level(
        &self,
        repo: &(impl GitLabProject + ?Sized),
        user_id: i64,
    ) -> Result<Option<u32>, ForgeError> {
        self.access_level_at(&repo.project_segment(), user_id).await
    }

    /// [`GitLabForge::member_access_level`] on the project whose `:id` segment (already
    /// encoded) is `project`.
    async fn access_level_at(
        &self,
        project: &str,
        user_id: i64,
    ) -> Result<Option<u32>, ForgeError> {
        let path = format!("/projects/{project}/members/all/{user_id}");
        match self.send("GET", &path, None).await {
            Ok(v) => Ok(v["access_level"].as_u64().map(|l| l as u32)),
            Err(ForgeError::Api { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// One discussion of merge request `iid` (GET
    /// /projects/:id/merge_requests/:iid/discussions/:discussion_id) as a [`ReviewThread`]:
    /// id, resolved (its first note's `resolved`) and notes with their authors'
    /// associations. Errors: [`ForgeError::Api`] 404 for an unknown discussion.
    pub async fn discussion(
        &self,
        repo: &(impl GitLabProject + ?Sized),
        iid: i64,
        discussion_id: &str,
    ) -> Result<ReviewThread, ForgeError> {
        let project = repo.project_segment();
        let path = format!(
            "/projects/{project}/merge_requests/{iid}/discussions/{}",
            encode_all(discussion_id)
        );
        let v = self.send("GET", &path, None).await?;
        let d: WireDiscussion = from_json(v, &path)?;
        let mut cache = HashMap::new();
        self.thread_of(&project, d, &mut cache).await
    }

    /// The [`ReviewThread`] of a discussion, the associations looked up through `cache`.
    async fn thread_of(
        &self,
        project: &str,
        d: WireDiscussion,
        cache: &mut HashMap<i64, &'static str>,
    ) -> Result<ReviewThread, ForgeError> {
        let is_resolved = d.notes.first().is_some_and(|n| n.resolved);
        let mut comments = Vec::new();
        for n in d.notes.into_iter().take(THREAD_COMMENTS_CAP) {
            let author_association = self
                .association(project, n.author.as_ref(), cache)
                .await?
                .to_owned();
            comments.push(ThreadComment {
                database_id: Some(n.id),
                body: n.body,
                author_login: n.author.map(|a| a.username),
                author_association,
                created_at: n.created_at.unwrap_or(OffsetDateTime::UNIX_EPOCH),
            });
        }
        Ok(ReviewThread {
            id: d.id,
            is_resolved,
            comments,
        })
    }

    /// The association of a note's author ([`association_of`]), one members call per user.
    async fn association(
        &self,
        project: &str,
        author: Option<&GitLabUser>,
        cache: &mut HashMap<i64, &'static str>,
    ) -> Result<&'static str, ForgeError> {
        let Some(author) = author else {
            return Ok("NONE");
        };
        if let Some(a) = cache.get(&author.id) {
            return Ok(a);
        }
        let level = self.access_level_at(project, author.id).await?;
        let a = association_of(level);
        cache.insert(author.id, a);
        Ok(a)
    }

    /// Every discussion of merge request `iid`, oldest first (100 a page, at most
    /// [`THREAD_PAGES_CAP`] pages; a warning when more are left).
    async fn discussions(
        &self,
        project: &str,
        iid: i64,
    ) -> Result<Vec<WireDiscussion>, ForgeError> {
        let path = format!("/projects/{project}/merge_requests/{iid}/discussions");
        let (items, capped) = self.get_pages(&path, THREAD_PAGES_CAP).await?;
        if capped {
            tracing::warn!(
                project,
                mr = iid,
                "more than {} discussions on a merge request: the rest are not read",
                items.len()
            );
        }
        Ok(items)
    }

    /// The file diffs of merge request `iid` (GET .../diffs, GitLab 15.7+; GET .../changes on
    /// older instances), as a [`DiffMap`].
    async fn diff_map(&self, project: &str, iid: i64) -> Result<DiffMap, ForgeError> {
        let path = format!("/projects/{project}/merge_requests/{iid}/diffs");
        let mut map = DiffMap::default();
        match self.get_pages::<WireDiff>(&path, DIFF_PAGES_CAP).await {
            Ok((diffs, _)) => diffs.iter().for_each(|d| map.add(d)),
            Err(ForgeError::Api { status: 404, .. }) => {
                let path = format!("/projects/{project}/merge_requests/{iid}/changes");
                let v = self.send("GET", &path, None).await?;
                let diffs: Vec<WireDiff> = from_json(v["changes"].clone(), &path)?;
                diffs.iter().for_each(|d| map.add(d));
            }
            Err(e) => return Err(e),
        }
        Ok(map)
    }

    /// POST a note on merge request `iid`; its id.
    async fn note(&self, project: &str, iid: i64, body: &str) -> Result<i64, ForgeError> {
        let path = format!("/projects/{project}/merge_requests/{iid}/notes");
        let v = self
            .send("POST", &path, Some(&json!({ "body": body })))
            .await?;
        id_of(&v, &path)
    }

    /// POST a commit status `state` named `name` on `sha`; its id.
    async fn status(
        &self,
        project: &str,
        sha: &str,
        state: &str,
        name: &str,
        description: &str,
    ) -> Result<i64, ForgeError> {
        let path = format!("/projects/{project}/statuses/{}", encode_all(sha));
        let body = json!({
            "state": state,
            "name": name,
            "description": truncate_chars(description, STATUS_DESCRIPTION_MAX_CHARS),
        });
        let v = self.send("POST", &path, Some(&body)).await?;
        id_of(&v, &path)
    }

    /// Approve merge request `iid` at `sha`; when GitLab will not take the approval (the tier
    /// has none, the token's user wrote the merge request or may not approve: 401, 403, 404,
    /// 405 or 409), say so in a note instead.
    async fn approve(&self, project: &str, iid: i64, sha: &str) -> Result<(), ForgeError> {
        let path = format!("/projects/{project}/merge_requests/{iid}/approve");
        match self.send("POST", &path, Some(&json!({ "sha": sha }))).await {
            Ok(_) => Ok(()),
            Err(ForgeError::Api {
                status: 401 | 403 | 404 | 405 | 409,
                message,
                ..
            }) => {
                tracing::warn!(project, mr = iid, %message, "GitLab did not accept the approval");
                let body = format!(
                    "Approved by the reviewer (this GitLab instance did not accept an approval: {message})"
                );
                self.note(project, iid, &body).await.map(|_| ())
            }
            Err(e) => Err(e),
        }
    }
}

fn transport(message: String) -> ForgeError {
    ForgeError::Transport {
        forge: ForgeKind::GitLab,
        message,
    }
}

fn decode(path: &str, message: String) -> ForgeError {
    ForgeError::Decode {
        forge: ForgeKind::GitLab,
        path: path.to_owned(),
        message,
    }
}

/// Decode a JSON answer into `T`, naming `path` in the error.
fn from_json<T: serde::de::DeserializeOwned>(v: Value, path: &str) -> Result<T, ForgeError> {
    serde_json::from_value(v).map_err(|e| decode(path, e.to_string()))
}

fn id_of(v: &Value, path: &str) -> Result<i64, ForgeError> {
    v["id"]
        .as_i64()
        .ok_or_else(|| decode(path, "no numeric id in the response".into()))
}

/// A comment author as [`CommentUser`]: `Bot` for bot users ([`GitLabUser::bot`] or a
/// [`is_bot_username`] name), else `User`.
fn comment_user(u: &GitLabUser) -> CommentUser {
    CommentUser {
        login: u.username.clone(),
        kind: Some(user_type(u.bot, &u.username).to_owned()),
    }
}

fn user_type(bot: bool, username: &str) -> &'static str {
    if bot || is_bot_username(username) {
        "Bot"
    } else {
        "User"
    }
}

#[async_trait]
impl Forge for GitLabForge {
    /// The configured token: GitLab has no installations.
    async fn installation_token(&self, _installation_id: i64) -> Result<SecretString, ForgeError> {
        Ok(self.token.clone())
    }

    async fn clone_token(&self, _repo: &RepoRef) -> Result<SecretString, ForgeError> {
        Ok(self.token.clone())
    }

    async fn pull_request(&self, repo: &RepoRef, iid: i64) -> Result<PullRequest, ForgeError> {
        let mr = self.merge_request(repo, iid).await?;
        let state = match mr.state.as_str() {
            "opened" => "open".to_owned(),
            other => other.to_owned(),
        };
        Ok(PullRequest {
            number: mr.iid,
            title: mr.title,
            body: mr.description,
            draft: mr.draft || mr.work_in_progress,
            state: Some(state),
            user: mr
                .author
                .map(|a| crate::webhook::User { login: a.username }),
            head: crate::webhook::GitRef {
                git_ref: mr.source_branch,
                sha: mr.sha.unwrap_or_default(),
            },
            base: crate::webhook::GitRef {
                git_ref: mr.target_branch,
                sha: mr.diff_refs.map(|r| r.base_sha).unwrap_or_default(),
            },
        })
    }

    async fn post_comment(&self, repo: &RepoRef, iid: i64, body: &str) -> Result<i64, ForgeError> {
        self.note(&repo.project_segment(), iid, body).await
    }

    /// The summary as a note (its id is the review id), each inline comment as a diff
    /// discussion (the id of its first note; None where GitLab refused the position with 400),
    /// and for APPROVE an approval (or a note saying why there is none).
    async fn create_review(
        &self,
        repo: &RepoRef,
        iid: i64,
        commit_id: &str,
        review: &ReviewSubmission,
    ) -> Result<PostedReview, ForgeError> {
        let project = repo.project_segment();
        let mr = self.merge_request(repo, iid).await?;
        let discussions = format!("/projects/{project}/merge_requests/{iid}/discussions");
        let Some(refs) = mr.diff_refs else {
            return Err(ForgeError::Api {
                forge: ForgeKind::GitLab,
                method: "POST",
                path: discussions,
                status: 409,
                message: format!("merge request !{iid} has no diff_refs yet"),
            });
        };
        if refs.head_sha != commit_id {
            return Err(ForgeError::Api {
                forge: ForgeKind::GitLab,
                method: "POST",
                path: discussions,
                status: 409,
                message: format!(
                    "merge request !{iid} moved: its head is {}, the review is of {commit_id}",
                    refs.head_sha
                ),
            });
        }
        let review_id = if review.summary.trim().is_empty() {
            None
        } else {
            Some(self.note(&project, iid, &review.summary).await?)
        };
        let map = if review.comments.is_empty() {
            DiffMap::default()
        } else {
            self.diff_map(&project, iid).await?
        };
        let mut comment_ids = Vec::with_capacity(review.comments.len());
        for c in &review.comments {
            let body = json!({
                "body": gitlab_suggestions(&c.body, c.line, c.start_line),
                "position": map.position(c, &refs),
            });
            match self.send("POST", &discussions, Some(&body)).await {
                Ok(v) => comment_ids.push(v["notes"][0]["id"].as_i64()),
                Err(ForgeError::Api {
                    status: 400,
                    message,
                    ..
                }) => {
                    tracing::warn!(
                        project, mr = iid, path = %c.path, line = c.line, %message,
                        "GitLab refused an inline comment"
                    );
                    comment_ids.push(None);
                }
                Err(e) => return Err(e),
            }
        }
        if review.event == ReviewEvent::Approve {
            self.approve(&project, iid, commit_id).await?;
        }
        Ok(PostedReview {
            review_id,
            comment_ids,
        })
    }

    /// A `pending` commit status, "Queued for review" (already pending or running is Ok).
    async fn mark_queued(
        &self,
        repo: &RepoRef,
        head_sha: &str,
        name: &str,
    ) -> Result<(), ForgeError> {
        let project = repo.project_segment();
        match self
            .status(&project, head_sha, "pending", name, "Queued for review")
            .await
        {
            Ok(_) => Ok(()),
            // Already pending, or already running (a review of this commit has started):
            // the status shows the commit is being looked at either way.
            Err(e) if is_same_state(&e, "pending") || is_same_state(&e, "running") => {
                tracing::debug!(
                    project,
                    head_sha,
                    name,
                    "commit status already pending or running"
                );
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// A `running` commit status; its id.
    async fn create_check_run(
        &self,
        repo: &RepoRef,
        head_sha: &str,
        name: &str,
    ) -> Result<i64, ForgeError> {
        let project = repo.project_segment();
        self.status(&project, head_sha, "running", name, "Review in progress")
            .await
    }

    /// The commit status `check_run.name` on `check_run.head_sha` to `success`, `failed` or
    /// `canceled`, with `title` as its description (255 characters at most; the summary is in
    /// the review's note). Already in that state is Ok.
    async fn complete_check_run(
        &self,
        repo: &RepoRef,
        check_run: &CheckRun,
        conclusion: CheckConclusion,
        title: &str,
        _summary: &str,
    ) -> Result<(), ForgeError> {
        let project = repo.project_segment();
        let state = status_state(conclusion);
        match self
            .status(&project, &check_run.head_sha, state, &check_run.name, title)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_same_state(&e, state) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn resolve_commit(&self, repo: &RepoRead, git_ref: &str) -> Result<String, ForgeError> {
        let path = format!(
            "/projects/{}/repository/commits/{}",
            repo.project_segment(),
            encode_all(git_ref)
        );
        let v = self.send("GET", &path, None).await?;
        v["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| decode(&path, "no id in the commit".into()))
    }

    /// The DiffNote notes of the merge request's discussions, oldest first; a later note of
    /// a discussion is a reply to its first.
    async fn pull_review_comments(
        &self,
        repo: &RepoRef,
        iid: i64,
    ) -> Result<Vec<ReviewComment>, ForgeError> {
        let project = repo.project_segment();
        let mut cache = HashMap::new();
        let mut out = Vec::new();
        for d in self.discussions(&project, iid).await? {
            if !d.is_diff() {
                continue;
            }
            let first = d.notes.first().map(|n| n.id);
            for n in d.notes {
                if n.kind.as_deref() != Some("DiffNote") {
                    continue;
                }
                let association = self
                    .association(&project, n.author.as_ref(), &mut cache)
                    .await?;
                out.push(ReviewComment {
                    id: n.id,
                    in_reply_to_id: first.filter(|f| *f != n.id),
                    user: n.author.as_ref().map(comment_user),
                    path: n
                        .position
                        .as_ref()
                        .and_then(|p| p.new_path.clone().or_else(|| p.old_path.clone())),
                    body: n.body,
                    author_association: Some(association.to_owned()),
                });
            }
        }
        Ok(out)
    }

    async fn default_branch(&self, repo: &RepoRef) -> Result<String, ForgeError> {
        let path = format!("/projects/{}", repo.project_segment());
        let v = self.send("GET", &path, None).await?;
        v["default_branch"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| decode(&path, "no default_branch in the project".into()))
    }

    /// A branch at `base_sha`, one commit writing the file (`create` or `update` as it exists
    /// on the branch), and a merge request into `base`.
    async fn open_file_pull(
        &self,
        repo: &RepoRef,
        change: &FileChangePull,
    ) -> Result<OpenedPull, ForgeError> {
        let project = repo.project_segment();
        let branches = format!(
            "/projects/{project}/repository/branches?branch={}&ref={}",
            encode_all(&change.branch),
            encode_all(&change.base_sha)
        );
        self.send("POST", &branches, None).await?;
        let file_path = change.path.trim_matches('/');
        let file = format!(
            "/projects/{project}/repository/files/{}?ref={}",
            encode_all(file_path),
            encode_all(&change.branch)
        );
        let action = match self.send("GET", &file, None).await {
            Ok(_) => "update",
            Err(ForgeError::Api { status: 404, .. }) => "create",
            Err(e) => return Err(e),
        };
        let commits = format!("/projects/{project}/repository/commits");
        let body = json!({
            "branch": change.branch,
            "commit_message": change.commit_message,
            "actions": [{
                "action": action,
                "file_path": file_path,
                "content": base64::engine::general_purpose::STANDARD.encode(&change.content),
                "encoding": "base64",
            }],
        });
        self.send("POST", &commits, Some(&body)).await?;
        let mrs = format!("/projects/{project}/merge_requests");
        let body = json!({
            "source_branch": change.branch,
            "target_branch": change.base,
            "title": change.title,
            "description": change.body,
        });
        let v = self.send("POST", &mrs, Some(&body)).await?;
        let number = v["iid"]
            .as_i64()
            .ok_or_else(|| decode(&mrs, "no iid in the merge request".into()))?;
        Ok(OpenedPull {
            number,
            html_url: v["web_url"].as_str().unwrap_or_default().to_owned(),
        })
    }

    /// GET repository/files (a file) and, when that is 404, repository/tree (a folder: `tree`
    /// entries are `dir`, `blob` `file`, `commit` `submodule`, sizes unknown: 0).
    async fn contents(
        &self,
        repo: &RepoRead,
        path: &str,
        sha: &str,
    ) -> Result<Contents, ForgeError> {
        let project = repo.project_segment();
        let file_path = path.trim_matches('/');
        let mut not_found = None;
        if !file_path.is_empty() {
            let api_path = format!(
                "/projects/{project}/repository/files/{}?ref={}",
                encode_all(file_path),
                encode_all(sha)
            );
            match self.send("GET", &api_path, None).await {
                Ok(v) => return file_contents(&api_path, file_path, &v),
                Err(e @ ForgeError::Api { status: 404, .. }) => not_found = Some(e),
                Err(e) => return Err(e),
            }
        }
        let tree = format!(
            "/projects/{project}/repository/tree?path={}&ref={}",
            encode_all(file_path),
            encode_all(sha)
        );
        let entries: Vec<Value> = match self.get_pages(&tree, TREE_PAGES_CAP).await {
            Ok((entries, _)) => entries,
            Err(ForgeError::Api { status: 404, .. }) if not_found.is_some() => Vec::new(),
            Err(e) => return Err(e),
        };
        if entries.is_empty() {
            return Err(not_found.unwrap_or_else(|| ForgeError::Api {
                forge: ForgeKind::GitLab,
                method: "GET",
                path: tree,
                status: 404,
                message: "404 Tree Not Found".into(),
            }));
        }
        let entries = entries
            .iter()
            .map(|e| ContentEntry {
                kind: match e["type"].as_str() {
                    Some("tree") => "dir",
                    Some("commit") => "submodule",
                    _ => "file",
                }
                .to_owned(),
                name: e["name"].as_str().unwrap_or_default().to_owned(),
                path: e["path"].as_str().unwrap_or_default().to_owned(),
                size: 0,
            })
            .collect();
        Ok(Contents::Dir(entries))
    }

    /// POST a note in the discussion that `comment_id` opens. Errors: [`ForgeError::Api`] 404
    /// when no discussion of the merge request starts with that note.
    async fn reply_to_review_comment(
        &self,
        repo: &RepoRef,
        iid: i64,
        comment_id: i64,
        body: &str,
    ) -> Result<i64, ForgeError> {
        let project = repo.project_segment();
        let discussions = self.discussions(&project, iid).await?;
        let Some(d) = discussions
            .iter()
            .find(|d| d.notes.first().is_some_and(|n| n.id == comment_id))
        else {
            return Err(ForgeError::Api {
                forge: ForgeKind::GitLab,
                method: "POST",
                path: format!("/projects/{project}/merge_requests/{iid}/discussions"),
                status: 404,
                message: format!("no discussion of !{iid} starts with note {comment_id}"),
            });
        };
        let path = format!(
            "/projects/{project}/merge_requests/{iid}/discussions/{}/notes",
            encode_all(&d.id)
        );
        let v = self
            .send("POST", &path, Some(&json!({ "body": body })))
            .await?;
        id_of(&v, &path)
    }

    /// The award emoji on note `comment_id`, oldest first, named as GitHub names reactions
    /// ([`reaction_content`]); at most [`REACTION_PAGES_CAP`] pages of 100.
    async fn review_comment_reactions(
        &self,
        repo: &RepoRef,
        iid: i64,
        comment_id: i64,
    ) -> Result<Vec<Reaction>, ForgeError> {
        let path = format!(
            "/projects/{}/merge_requests/{iid}/notes/{comment_id}/award_emoji",
            repo.project_segment()
        );
        let (items, capped) = self.get_pages::<Value>(&path, REACTION_PAGES_CAP).await?;
        if capped {
            tracing::warn!(
                repo = %repo.full_name(),
                comment_id,
                "more than {} award emoji on a note: the rest are not read",
                items.len()
            );
        }
        Ok(items
            .iter()
            .map(|a| {
                let login = a["user"]["username"].as_str().unwrap_or("ghost").to_owned();
                let bot = a["user"]["bot"].as_bool().unwrap_or(false);
                Reaction {
                    content: reaction_content(a["name"].as_str().unwrap_or_default()),
                    user_type: user_type(bot, &login).to_owned(),
                    user_login: login,
                }
            })
            .collect())
    }

    /// The diff discussions (first note a DiffNote) as threads, oldest first.
    async fn review_threads(
        &self,
        repo: &RepoRef,
        iid: i64,
    ) -> Result<Vec<ReviewThread>, ForgeError> {
        let project = repo.project_segment();
        let mut cache = HashMap::new();
        let mut threads = Vec::new();
        for d in self.discussions(&project, iid).await? {
            if d.is_diff() {
                threads.push(self.thread_of(&project, d, &mut cache).await?);
            }
        }
        Ok(threads)
    }

    /// PUT .../discussions/:discussion_id?resolved=true (resolving a resolved discussion is
    /// Ok too). Errors: [`ForgeError::Api`] 404 for an unknown discussion.
    async fn resolve_review_thread(
        &self,
        repo: &RepoRef,
        iid: i64,
        thread_id: &str,
    ) -> Result<(), ForgeError> {
        let path = format!(
            "/projects/{}/merge_requests/{iid}/discussions/{}?resolved=true",
            repo.project_segment(),
            encode_all(thread_id)
        );
        self.send("PUT", &path, None).await?;
        Ok(())
    }
}

/// A repository/files answer as [`Contents::File`]; over [`CONTENTS_MAX_BYTES`] is a
/// [`ForgeError::Decode`], as GitHub's contents API refuses such files.
fn file_contents(api_path: &str, path: &str, v: &Value) -> Result<Contents, ForgeError> {
    let size = v["size"].as_u64().unwrap_or(0);
    if size > CONTENTS_MAX_BYTES {
        return Err(decode(
            api_path,
            format!("{path} is too large for the contents API ({size} bytes)"),
        ));
    }
    let b64: String = v["content"]
        .as_str()
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let content = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| decode(api_path, format!("{path}: bad base64 content: {e}")))?;
    if content.len() as u64 > CONTENTS_MAX_BYTES {
        return Err(decode(
            api_path,
            format!(
                "{path} is too large for the contents API ({} bytes)",
                content.len()
            ),
        ));
    }
    Ok(Contents::File {
        path: v["file_path"].as_str().unwrap_or(path).to_owned(),
        content,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_flattened_to_text() {
        assert_eq!(
            gitlab_message(r#"{"message":"404 Project Not Found"}"#),
            "404 Project Not Found"
        );
        assert_eq!(
            gitlab_message(
                r#"{"message":{"base":["Cannot approve"],"sha":["is stale","is wrong"]}}"#
            ),
            "base: Cannot approve; sha: is stale, is wrong"
        );
        assert_eq!(gitlab_message(r#"{"message":["a","b"]}"#), "a, b");
        assert_eq!(
            gitlab_message(r#"{"error":"invalid_grant","error_description":"expired"}"#),
            "invalid_grant: expired"
        );
        assert_eq!(gitlab_message("Bad gateway"), "Bad gateway");
    }

    #[test]
    fn suggestion_fences_span_the_commented_lines() {
        let body = "Use this:\n```suggestion\nlet x = 1;\n```\n";
        assert_eq!(
            gitlab_suggestions(body, 7, None),
            "Use this:\n```suggestion:-0+0\nlet x = 1;\n```\n"
        );
        assert_eq!(
            gitlab_suggestions(body, 7, Some(5)),
            "Use this:\n```suggestion:-2+0\nlet x = 1;\n```\n"
        );
        assert_eq!(
            gitlab_suggestions("```rust\nx\n```", 1, None),
            "```rust\nx\n```"
        );
    }

    #[test]
    fn bot_users_are_recognised_by_name() {
        assert!(is_bot_username("project_42_bot_3f2a"));
        assert!(is_bot_username("group_7_bot"));
        assert!(is_bot_username("service_account_group_5_x"));
        assert!(!is_bot_username("project_bot"));
        assert!(!is_bot_username("project_manager"));
        assert!(!is_bot_username("group_lead_bot"));
        assert!(!is_bot_username("alice"));
    }

    #[test]
    fn paths_are_encoded_with_their_slashes() {
        let repo = RepoRef {
            installation_id: 42,
            owner: "gitlab.example.com/group/sub".into(),
            name: "project".into(),
        };
        assert_eq!(repo.project_segment(), "group%2Fsub%2Fproject");
        assert_eq!("a/b c".project_segment(), "a%2Fb%20c");
    }

    #[test]
    fn descriptions_are_cut_on_a_char_boundary() {
        let s = "é".repeat(300);
        assert_eq!(truncate_chars(&s, 255).chars().count(), 255);
        assert_eq!(truncate_chars("short", 255), "short");
    }

    #[test]
    fn same_state_refusals_are_recognised() {
        let e = ForgeError::Api {
            forge: ForgeKind::GitLab,
            method: "POST",
            path: "/x".into(),
            status: 400,
            message: "Cannot transition status via :run from :running".into(),
        };
        assert!(is_same_state(&e, "running"));
        assert!(!is_same_state(&e, "success"));
        assert_eq!(
            e.to_string(),
            "GitLab POST /x failed with 400: Cannot transition status via :run from :running"
        );
    }
}
