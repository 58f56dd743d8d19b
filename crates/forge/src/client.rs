//! The GitHub client: App JWT (RS256), installation tokens cached until shortly before
//! expiry, and the REST and GraphQL calls of a review (docs/background.md, "Wire formats":
//! GitHub App).

use crate::{
    CheckConclusion, CheckRun, CommentUser, ContentEntry, Contents, FileChangePull, Forge,
    ForgeError, ForgeKind, OpenedPull, PullRequest, Reaction, RepoRead, RepoRef, ReviewComment,
    ReviewThread, ThreadComment,
};
use async_trait::async_trait;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use review_domain::{PostedReview, ReviewSubmission};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;
use time::OffsetDateTime;
use tokio::sync::Mutex;

/// A cached token is renewed when less than this much of its life is left.
const TOKEN_RENEW_MARGIN: Duration = Duration::from_secs(5 * 60);

/// Most pages of 100 reactions read for one review comment (1,000 reactions).
pub const REACTION_PAGES_CAP: usize = 10;
/// Most pages of 100 review threads read for one pull request (1,000 threads).
pub const THREAD_PAGES_CAP: usize = 10;
/// Most comments read per review thread: GraphQL's page limit; the first comments, which
/// include the one that opened the thread.
pub const THREAD_COMMENTS_CAP: usize = 100;

/// The review threads of a pull request, one page after `$cursor` (null: the first).
const REVIEW_THREADS_QUERY: &str =
    "query($owner: String!, $name: String!, $number: Int!, $cursor: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $cursor) {
        nodes {
          id
          isResolved
          comments(first: 100) {
            nodes { databaseId body author { login } authorAssociation createdAt }
          }
        }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
}";

/// Resolve one review thread by node id.
const RESOLVE_THREAD_MUTATION: &str = "mutation($threadId: ID!) {
  resolveReviewThread(input: { threadId: $threadId }) {
    thread { id isResolved }
  }
}";

/// GitHub App credentials: the app id and its PKCS#1 (or PKCS#8) RSA private key in PEM.
#[derive(Clone)]
pub struct AppCredentials {
    pub app_id: String,
    pub private_key_pem: SecretString,
}

/// [`Forge`] over GitHub's REST API at `api_url` (FORGE_API_URL) and its GraphQL API beside
/// it (`{api_url}/graphql`; `https://HOST/api/graphql` for an Enterprise Server base
/// `https://HOST/api/v3`).
pub struct GitHubForge {
    api_url: String,
    graphql_url: String,
    http: reqwest::Client,
    app: Option<(String, EncodingKey)>,
    tokens: Mutex<HashMap<i64, (SecretString, OffsetDateTime)>>,
}

#[derive(Serialize)]
struct Claims {
    iat: i64,
    exp: i64,
    iss: String,
}

#[derive(Deserialize)]
struct AccessToken {
    token: String,
    #[serde(with = "time::serde::rfc3339")]
    expires_at: OffsetDateTime,
}

impl GitHubForge {
    /// A client for `api_url` (no trailing slash needed). Without credentials every call that
    /// needs a token fails with [`ForgeError::Credentials`].
    ///
    /// Errors: a private key that is not an RSA PEM.
    pub fn new(api_url: &str, credentials: Option<AppCredentials>) -> Result<Self, ForgeError> {
        let app = match credentials {
            Some(c) => {
                let key = EncodingKey::from_rsa_pem(c.private_key_pem.expose_secret().as_bytes())
                    .map_err(|e| {
                    ForgeError::Credentials(format!("private key is not an RSA PEM: {e}"))
                })?;
                Some((c.app_id, key))
            }
            None => None,
        };
        let http = reqwest::Client::builder()
            .user_agent(concat!("review-server/", env!("CARGO_PKG_VERSION")))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| ForgeError::github_transport(e.to_string()))?;
        let api_url = api_url.trim_end_matches('/');
        Ok(Self {
            graphql_url: graphql_url(api_url),
            api_url: api_url.to_owned(),
            http,
            app,
            tokens: Mutex::new(HashMap::new()),
        })
    }

    /// The App JWT: RS256 with iat 60 s in the past and exp 9 minutes ahead (GitHub allows 10).
    fn app_jwt(&self) -> Result<String, ForgeError> {
        let (app_id, key) = self.app.as_ref().ok_or_else(|| {
            ForgeError::Credentials(
                "not configured: set FORGE_APP_ID and FORGE_APP_PRIVATE_KEY (or _PATH)".into(),
            )
        })?;
        let now = OffsetDateTime::now_utc().unix_timestamp();
        let claims = Claims {
            iat: now - 60,
            exp: now + 9 * 60,
            iss: app_id.clone(),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, key)
            .map_err(|e| ForgeError::Credentials(format!("cannot sign the App JWT: {e}")))
    }

    /// A REST call: `path` under the API base.
    async fn send(
        &self,
        method: &'static str,
        path: &str,
        bearer: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Value, ForgeError> {
        let url = format!("{}{}", self.api_url, path);
        self.send_to(method, &url, path, bearer, body).await
    }

    /// A call to `url` with GitHub's headers and error mapping; `path` names the call in
    /// errors.
    async fn send_to(
        &self,
        method: &'static str,
        url: &str,
        path: &str,
        bearer: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Value, ForgeError> {
        let m = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|e| ForgeError::github_transport(e.to_string()))?;
        let mut req = self
            .http
            .request(m, url)
            .header("Accept", "application/vnd.github+json")
            .header("X-GitHub-Api-Version", "2022-11-28");
        if let Some(bearer) = bearer {
            req = req.bearer_auth(bearer);
        }
        if let Some(body) = body {
            req = req.json(body);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| ForgeError::github_transport(format!("{method} {url}: {e}")))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| ForgeError::github_transport(format!("{method} {url}: {e}")))?;
        if !status.is_success() {
            return Err(ForgeError::Api {
                forge: ForgeKind::GitHub,
                method,
                path: path.to_owned(),
                status: status.as_u16(),
                message: github_message(&text),
            });
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|e| ForgeError::Decode {
            forge: ForgeKind::GitHub,
            path: path.to_owned(),
            message: e.to_string(),
        })
    }

    async fn call(
        &self,
        repo: &RepoRef,
        method: &'static str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ForgeError> {
        let token = self.installation_token(repo.installation_id).await?;
        self.send(method, path, Some(token.expose_secret()), body)
            .await
    }

    /// POST `{body}` (a comment's markdown) to `path`; the id of the comment made.
    async fn post_body(&self, repo: &RepoRef, path: &str, body: &str) -> Result<i64, ForgeError> {
        let v = self
            .call(repo, "POST", path, Some(&json!({ "body": body })))
            .await?;
        id_of(&v, path)
    }

    /// A GraphQL call with the installation's token: the `data` of the answer, or
    /// [`ForgeError::GraphQl`] when it carries `errors` (GitHub answers those with HTTP 200).
    async fn graphql(
        &self,
        repo: &RepoRef,
        operation: &'static str,
        query: &str,
        variables: Value,
    ) -> Result<Value, ForgeError> {
        let token = self.installation_token(repo.installation_id).await?;
        let body = json!({ "query": query, "variables": variables });
        let mut v = self
            .send_to(
                "POST",
                &self.graphql_url,
                "/graphql",
                Some(token.expose_secret()),
                Some(&body),
            )
            .await?;
        if let Some(errors) = v["errors"].as_array().filter(|e| !e.is_empty()) {
            let first = &errors[0];
            let mut message = first["message"].as_str().unwrap_or("no message").to_owned();
            if errors.len() > 1 {
                message.push_str(&format!(" (and {} more errors)", errors.len() - 1));
            }
            return Err(ForgeError::GraphQl {
                operation,
                kind: first["type"].as_str().map(str::to_owned),
                message,
            });
        }
        Ok(v["data"].take())
    }

    /// A GET of a repository that may not have the App installed: with the installation's
    /// token when there is one (anonymously when the App credentials are not configured).
    async fn read(&self, repo: &RepoRead, path: &str) -> Result<Value, ForgeError> {
        let token = match repo.installation_id {
            Some(id) => match self.installation_token(id).await {
                Ok(t) => Some(t),
                Err(ForgeError::Credentials(_)) => None,
                Err(e) => return Err(e),
            },
            None => None,
        };
        let bearer = token.as_ref().map(|t| t.expose_secret());
        self.send("GET", path, bearer, None).await
    }
}

/// The GraphQL endpoint beside the REST base `api_url`: `https://api.github.com/graphql` for
/// github.com, `https://HOST/api/graphql` for GitHub Enterprise Server, whose REST base is
/// `https://HOST/api/v3` (<https://docs.github.com/en/enterprise-server@latest/graphql/guides/forming-calls-with-graphql>).
fn graphql_url(api_url: &str) -> String {
    let api_url = api_url.trim_end_matches('/');
    match api_url.strip_suffix("/api/v3") {
        Some(host) => format!("{host}/api/graphql"),
        None => format!("{api_url}/graphql"),
    }
}

/// Percent-encode a repository path or ref for a URL path, keeping `/` separators.
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Percent-encode one path segment (an owner or repository name from a URL people paste):
/// `/` is encoded too, so the value can never name another API path.
fn encode_segment(segment: &str) -> String {
    encode_path(segment).replace('/', "%2F")
}

/// GitHub's error text: `message`, plus the first entry of `errors` when present (that is
/// where a 422 says which review comment was outside the diff).
fn github_message(body: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return body.chars().take(500).collect();
    };
    let message = v["message"].as_str().unwrap_or("no message").to_owned();
    match v["errors"].as_array().and_then(|e| e.first()) {
        Some(Value::String(s)) => format!("{message}: {s}"),
        Some(e) => match e["message"].as_str() {
            Some(s) => format!("{message}: {s}"),
            None => format!("{message}: {e}"),
        },
        None => message,
    }
}

/// A reaction as the REST API lists it.
#[derive(Deserialize)]
struct WireReaction {
    content: String,
    #[serde(default)]
    user: Option<CommentUser>,
}

impl From<WireReaction> for Reaction {
    fn from(r: WireReaction) -> Self {
        let (user_login, user_type) = match r.user {
            Some(u) => (u.login, u.kind.unwrap_or_else(|| "User".into())),
            None => ("ghost".into(), "User".into()),
        };
        Reaction {
            content: r.content,
            user_login,
            user_type,
        }
    }
}

/// `data` of [`REVIEW_THREADS_QUERY`]: `repository` and `pullRequest` are null (with a
/// NOT_FOUND error) when unknown.
#[derive(Deserialize)]
struct ThreadsData {
    repository: Option<ThreadsRepository>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ThreadsRepository {
    pull_request: Option<ThreadsPull>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ThreadsPull {
    review_threads: Connection<WireThread>,
}

/// A GraphQL connection: its nodes (each may be null) and, for paged ones, `pageInfo`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Connection<T> {
    nodes: Vec<Option<T>>,
    #[serde(default)]
    page_info: Option<PageInfo>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageInfo {
    has_next_page: bool,
    end_cursor: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireThread {
    id: String,
    is_resolved: bool,
    comments: Connection<WireThreadComment>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireThreadComment {
    database_id: Option<i64>,
    body: String,
    author: Option<WireActor>,
    author_association: String,
    #[serde(with = "time::serde::rfc3339")]
    created_at: OffsetDateTime,
}

#[derive(Deserialize)]
struct WireActor {
    login: String,
}

impl From<WireThread> for ReviewThread {
    fn from(t: WireThread) -> Self {
        ReviewThread {
            id: t.id,
            is_resolved: t.is_resolved,
            comments: t
                .comments
                .nodes
                .into_iter()
                .flatten()
                .map(|c| ThreadComment {
                    database_id: c.database_id,
                    body: c.body,
                    author_login: c.author.map(|a| a.login),
                    author_association: c.author_association,
                    created_at: c.created_at,
                })
                .collect(),
        }
    }
}

/// Decode a JSON answer into `T`, naming `path` in the error.
fn from_json<T: serde::de::DeserializeOwned>(v: Value, path: &str) -> Result<T, ForgeError> {
    serde_json::from_value(v).map_err(|e| ForgeError::Decode {
        forge: ForgeKind::GitHub,
        path: path.to_owned(),
        message: e.to_string(),
    })
}

fn id_of(v: &Value, path: &str) -> Result<i64, ForgeError> {
    v["id"].as_i64().ok_or_else(|| ForgeError::Decode {
        forge: ForgeKind::GitHub,
        path: path.to_owned(),
        message: "no numeric id in the response".into(),
    })
}

#[async_trait]
impl Forge for GitHubForge {
    async fn installation_token(&self, installation_id: i64) -> Result<SecretString, ForgeError> {
        let mut tokens = self.tokens.lock().await;
        if let Some((token, expires_at)) = tokens.get(&installation_id)
            && *expires_at - OffsetDateTime::now_utc() > TOKEN_RENEW_MARGIN
        {
            return Ok(token.clone());
        }
        let jwt = self.app_jwt()?;
        let path = format!("/app/installations/{installation_id}/access_tokens");
        let v = self.send("POST", &path, Some(&jwt), None).await?;
        let t: AccessToken = from_json(v, &path)?;
        let token = SecretString::from(t.token);
        tokens.insert(installation_id, (token.clone(), t.expires_at));
        Ok(token)
    }

    async fn pull_request(&self, repo: &RepoRef, number: i64) -> Result<PullRequest, ForgeError> {
        let path = format!("/repos/{}/{}/pulls/{number}", repo.owner, repo.name);
        let v = self.call(repo, "GET", &path, None).await?;
        from_json(v, &path)
    }

    async fn post_comment(
        &self,
        repo: &RepoRef,
        number: i64,
        body: &str,
    ) -> Result<i64, ForgeError> {
        let path = format!(
            "/repos/{}/{}/issues/{number}/comments",
            repo.owner, repo.name
        );
        self.post_body(repo, &path, body).await
    }

    async fn create_review(
        &self,
        repo: &RepoRef,
        number: i64,
        commit_id: &str,
        review: &ReviewSubmission,
    ) -> Result<PostedReview, ForgeError> {
        let path = format!("/repos/{}/{}/pulls/{number}/reviews", repo.owner, repo.name);
        let comments: Vec<Value> = review
            .comments
            .iter()
            .map(|c| {
                let mut v = json!({
                    "path": c.path,
                    "line": c.line,
                    "side": c.side.as_str(),
                    "body": c.body,
                });
                if let Some(start) = c.start_line.filter(|s| *s < c.line) {
                    v["start_line"] = json!(start);
                    v["start_side"] = json!(c.side.as_str());
                }
                v
            })
            .collect();
        let body = json!({
            "commit_id": commit_id,
            "body": review.summary,
            "event": review.event.as_str(),
            "comments": comments,
        });
        let v = self.call(repo, "POST", &path, Some(&body)).await?;
        let review_id = id_of(&v, &path)?;
        // The create call does not return the comment ids; list them, in submission order.
        let list_path = format!(
            "/repos/{}/{}/pulls/{number}/reviews/{review_id}/comments?per_page=100",
            repo.owner, repo.name
        );
        let comment_ids = match self.call(repo, "GET", &list_path, None).await {
            Ok(Value::Array(items)) => {
                let ids: Vec<Option<i64>> = items.iter().map(|c| c["id"].as_i64()).collect();
                (0..review.comments.len())
                    .map(|i| ids.get(i).copied().flatten())
                    .collect()
            }
            _ => vec![None; review.comments.len()],
        };
        Ok(PostedReview {
            review_id: Some(review_id),
            comment_ids,
        })
    }

    async fn create_check_run(
        &self,
        repo: &RepoRef,
        head_sha: &str,
        name: &str,
    ) -> Result<i64, ForgeError> {
        let path = format!("/repos/{}/{}/check-runs", repo.owner, repo.name);
        let body = json!({ "name": name, "head_sha": head_sha, "status": "in_progress" });
        let v = self.call(repo, "POST", &path, Some(&body)).await?;
        id_of(&v, &path)
    }

    async fn complete_check_run(
        &self,
        repo: &RepoRef,
        check_run: &CheckRun,
        conclusion: CheckConclusion,
        title: &str,
        summary: &str,
    ) -> Result<(), ForgeError> {
        let path = format!(
            "/repos/{}/{}/check-runs/{}",
            repo.owner, repo.name, check_run.id
        );
        let body = json!({
            "status": "completed",
            "conclusion": conclusion.as_str(),
            "output": { "title": title, "summary": summary },
        });
        self.call(repo, "PATCH", &path, Some(&body)).await?;
        Ok(())
    }

    async fn pull_review_comments(
        &self,
        repo: &RepoRef,
        number: i64,
    ) -> Result<Vec<ReviewComment>, ForgeError> {
        let path = format!(
            "/repos/{}/{}/pulls/{number}/comments?per_page=100",
            repo.owner, repo.name
        );
        let v = self.call(repo, "GET", &path, None).await?;
        from_json(v, &path)
    }

    async fn default_branch(&self, repo: &RepoRef) -> Result<String, ForgeError> {
        let path = format!("/repos/{}/{}", repo.owner, repo.name);
        let v = self.call(repo, "GET", &path, None).await?;
        v["default_branch"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ForgeError::Decode {
                forge: ForgeKind::GitHub,
                path,
                message: "no default_branch in the repository".into(),
            })
    }

    async fn open_file_pull(
        &self,
        repo: &RepoRef,
        change: &FileChangePull,
    ) -> Result<OpenedPull, ForgeError> {
        let refs = format!("/repos/{}/{}/git/refs", repo.owner, repo.name);
        let body =
            json!({ "ref": format!("refs/heads/{}", change.branch), "sha": change.base_sha });
        self.call(repo, "POST", &refs, Some(&body)).await?;
        let file = format!(
            "/repos/{}/{}/contents/{}",
            repo.owner,
            repo.name,
            encode_path(change.path.trim_matches('/'))
        );
        let existing = match self
            .call(
                repo,
                "GET",
                &format!("{file}?ref={}", encode_path(&change.branch)),
                None,
            )
            .await
        {
            Ok(v) => v["sha"].as_str().map(str::to_owned),
            Err(ForgeError::Api {
                forge: ForgeKind::GitHub,
                status: 404,
                ..
            }) => None,
            Err(e) => return Err(e),
        };
        let mut put = json!({
            "message": change.commit_message,
            "content": base64::engine::general_purpose::STANDARD.encode(&change.content),
            "branch": change.branch,
        });
        if let Some(sha) = existing {
            put["sha"] = json!(sha);
        }
        self.call(repo, "PUT", &file, Some(&put)).await?;
        let pulls = format!("/repos/{}/{}/pulls", repo.owner, repo.name);
        let body = json!({
            "title": change.title,
            "head": change.branch,
            "base": change.base,
            "body": change.body,
        });
        let v = self.call(repo, "POST", &pulls, Some(&body)).await?;
        from_json(v, &pulls)
    }

    async fn resolve_commit(&self, repo: &RepoRead, git_ref: &str) -> Result<String, ForgeError> {
        let path = format!(
            "/repos/{}/{}/commits/{}",
            encode_segment(&repo.owner),
            encode_segment(&repo.name),
            encode_path(git_ref)
        );
        let v = self.read(repo, &path).await?;
        v["sha"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ForgeError::Decode {
                forge: ForgeKind::GitHub,
                path,
                message: "no sha in the commit".into(),
            })
    }

    async fn contents(
        &self,
        repo: &RepoRead,
        path: &str,
        sha: &str,
    ) -> Result<Contents, ForgeError> {
        let api_path = format!(
            "/repos/{}/{}/contents/{}?ref={}",
            encode_segment(&repo.owner),
            encode_segment(&repo.name),
            encode_path(path.trim_matches('/')),
            encode_path(sha)
        );
        let v = self.read(repo, &api_path).await?;
        let decode = |message: String| ForgeError::Decode {
            forge: ForgeKind::GitHub,
            path: api_path.clone(),
            message,
        };
        if v.is_array() {
            let entries: Vec<ContentEntry> =
                serde_json::from_value(v).map_err(|e| decode(e.to_string()))?;
            return Ok(Contents::Dir(entries));
        }
        match v["type"].as_str() {
            Some("file") => {
                if v["encoding"].as_str() != Some("base64") {
                    return Err(decode(format!(
                        "{path} is too large for the contents API ({} bytes)",
                        v["size"]
                    )));
                }
                let b64: String = v["content"]
                    .as_str()
                    .unwrap_or_default()
                    .chars()
                    .filter(|c| !c.is_ascii_whitespace())
                    .collect();
                let content = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|e| decode(format!("{path}: bad base64 content: {e}")))?;
                Ok(Contents::File {
                    path: v["path"].as_str().unwrap_or(path).to_owned(),
                    content,
                })
            }
            Some(other) => Ok(Contents::Other(other.to_owned())),
            None => Err(decode("neither a file nor a folder".into())),
        }
    }

    async fn reply_to_review_comment(
        &self,
        repo: &RepoRef,
        number: i64,
        comment_id: i64,
        body: &str,
    ) -> Result<i64, ForgeError> {
        let path = format!(
            "/repos/{}/{}/pulls/{number}/comments/{comment_id}/replies",
            repo.owner, repo.name
        );
        self.post_body(repo, &path, body).await
    }

    async fn review_comment_reactions(
        &self,
        repo: &RepoRef,
        _number: i64,
        comment_id: i64,
    ) -> Result<Vec<Reaction>, ForgeError> {
        const PER_PAGE: usize = 100;
        let mut reactions = Vec::new();
        for page in 1..=REACTION_PAGES_CAP {
            let path = format!(
                "/repos/{}/{}/pulls/comments/{comment_id}/reactions?per_page={PER_PAGE}&page={page}",
                repo.owner, repo.name
            );
            let v = self.call(repo, "GET", &path, None).await?;
            let items: Vec<WireReaction> = from_json(v, &path)?;
            let last = items.len() < PER_PAGE;
            reactions.extend(items.into_iter().map(Reaction::from));
            if last {
                return Ok(reactions);
            }
        }
        tracing::warn!(
            repo = %repo.full_name(),
            comment_id,
            "more than {} reactions on a review comment: the rest are not read",
            reactions.len()
        );
        Ok(reactions)
    }

    async fn review_threads(
        &self,
        repo: &RepoRef,
        number: i64,
    ) -> Result<Vec<ReviewThread>, ForgeError> {
        let mut threads = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..THREAD_PAGES_CAP {
            let variables = json!({
                "owner": repo.owner, "name": repo.name, "number": number, "cursor": cursor,
            });
            let data = self
                .graphql(repo, "reviewThreads", REVIEW_THREADS_QUERY, variables)
                .await?;
            let data: ThreadsData = from_json(data, "/graphql")?;
            let Some(connection) = data
                .repository
                .and_then(|r| r.pull_request)
                .map(|p| p.review_threads)
            else {
                return Err(ForgeError::Decode {
                    forge: ForgeKind::GitHub,
                    path: "/graphql".into(),
                    message: format!("no pull request {number} in {}", repo.full_name()),
                });
            };
            threads.extend(
                connection
                    .nodes
                    .into_iter()
                    .flatten()
                    .map(ReviewThread::from),
            );
            match connection.page_info {
                Some(PageInfo {
                    has_next_page: true,
                    end_cursor: Some(next),
                }) => cursor = Some(next),
                _ => return Ok(threads),
            }
        }
        tracing::warn!(
            repo = %repo.full_name(),
            pr = number,
            "more than {} review threads: the rest are not read",
            threads.len()
        );
        Ok(threads)
    }

    async fn resolve_review_thread(
        &self,
        repo: &RepoRef,
        _number: i64,
        thread_id: &str,
    ) -> Result<(), ForgeError> {
        let variables = json!({ "threadId": thread_id });
        let data = self
            .graphql(
                repo,
                "resolveReviewThread",
                RESOLVE_THREAD_MUTATION,
                variables,
            )
            .await?;
        if data["resolveReviewThread"]["thread"]["isResolved"] == Value::Bool(true) {
            return Ok(());
        }
        Err(ForgeError::Decode {
            forge: ForgeKind::GitHub,
            path: "/graphql".into(),
            message: format!("thread {thread_id} is not resolved after resolveReviewThread"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_message_carries_the_first_validation_error() {
        let body = r#"{"message":"Unprocessable Entity","errors":["Line could not be resolved"]}"#;
        assert_eq!(
            github_message(body),
            "Unprocessable Entity: Line could not be resolved"
        );
        let body = r#"{"message":"Validation Failed","errors":[{"resource":"Issue","message":"body is too long"}]}"#;
        assert_eq!(github_message(body), "Validation Failed: body is too long");
        assert_eq!(github_message("Bad gateway"), "Bad gateway");
    }

    #[test]
    fn graphql_lives_beside_the_rest_base() {
        assert_eq!(
            graphql_url("https://api.github.com"),
            "https://api.github.com/graphql"
        );
        assert_eq!(
            graphql_url("https://ghe.example.com/api/v3/"),
            "https://ghe.example.com/api/graphql"
        );
        assert_eq!(
            graphql_url("http://127.0.0.1:9"),
            "http://127.0.0.1:9/graphql"
        );
    }

    #[test]
    fn the_threads_query_asks_for_the_pages_the_caps_count() {
        assert!(REVIEW_THREADS_QUERY.contains("reviewThreads(first: 100, after: $cursor)"));
        assert!(REVIEW_THREADS_QUERY.contains(&format!("comments(first: {THREAD_COMMENTS_CAP})")));
    }

    #[test]
    fn paths_and_refs_are_percent_encoded_but_keep_slashes() {
        assert_eq!(
            encode_path("skills/my skill/#1?.md"),
            "skills/my%20skill/%231%3F.md"
        );
        assert_eq!(encode_path("feature/x-1"), "feature/x-1");
    }

    #[test]
    fn a_key_that_is_not_pem_is_a_credentials_error() {
        let err = GitHubForge::new(
            "http://x",
            Some(AppCredentials {
                app_id: "1".into(),
                private_key_pem: SecretString::from("nope"),
            }),
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("RSA PEM"), "{err}");
    }
}
