//! The GitHub REST client: App JWT (RS256), installation tokens cached until shortly before
//! expiry, and the calls of a review (docs/background.md, "Wire formats": GitHub App).

use crate::{
    CheckConclusion, ContentEntry, Contents, FileChangePull, Forge, ForgeError, OpenedPull,
    PullRequest, RepoRead, RepoRef, ReviewComment,
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

/// GitHub App credentials: the app id and its PKCS#1 (or PKCS#8) RSA private key in PEM.
#[derive(Clone)]
pub struct AppCredentials {
    pub app_id: String,
    pub private_key_pem: SecretString,
}

/// [`Forge`] over GitHub's REST API at `api_url` (FORGE_API_URL).
pub struct GitHubForge {
    api_url: String,
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
            .map_err(|e| ForgeError::Transport(e.to_string()))?;
        Ok(Self {
            api_url: api_url.trim_end_matches('/').to_owned(),
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

    async fn send(
        &self,
        method: &'static str,
        path: &str,
        bearer: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Value, ForgeError> {
        let url = format!("{}{}", self.api_url, path);
        let m = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|e| ForgeError::Transport(e.to_string()))?;
        let mut req = self
            .http
            .request(m, &url)
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
            .map_err(|e| ForgeError::Transport(format!("{method} {url}: {e}")))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| ForgeError::Transport(format!("{method} {url}: {e}")))?;
        if !status.is_success() {
            return Err(ForgeError::Api {
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

fn id_of(v: &Value, path: &str) -> Result<i64, ForgeError> {
    v["id"].as_i64().ok_or_else(|| ForgeError::Decode {
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
        let t: AccessToken = serde_json::from_value(v).map_err(|e| ForgeError::Decode {
            path,
            message: e.to_string(),
        })?;
        let token = SecretString::from(t.token);
        tokens.insert(installation_id, (token.clone(), t.expires_at));
        Ok(token)
    }

    async fn pull_request(&self, repo: &RepoRef, number: i64) -> Result<PullRequest, ForgeError> {
        let path = format!("/repos/{}/{}/pulls/{number}", repo.owner, repo.name);
        let v = self.call(repo, "GET", &path, None).await?;
        serde_json::from_value(v).map_err(|e| ForgeError::Decode {
            path,
            message: e.to_string(),
        })
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
        let v = self
            .call(repo, "POST", &path, Some(&json!({ "body": body })))
            .await?;
        id_of(&v, &path)
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
        check_run_id: i64,
        conclusion: CheckConclusion,
        title: &str,
        summary: &str,
    ) -> Result<(), ForgeError> {
        let path = format!(
            "/repos/{}/{}/check-runs/{check_run_id}",
            repo.owner, repo.name
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
        serde_json::from_value(v).map_err(|e| ForgeError::Decode {
            path,
            message: e.to_string(),
        })
    }

    async fn default_branch(&self, repo: &RepoRef) -> Result<String, ForgeError> {
        let path = format!("/repos/{}/{}", repo.owner, repo.name);
        let v = self.call(repo, "GET", &path, None).await?;
        v["default_branch"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ForgeError::Decode {
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
            Err(ForgeError::Api { status: 404, .. }) => None,
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
        serde_json::from_value(v).map_err(|e| ForgeError::Decode {
            path: pulls,
            message: e.to_string(),
        })
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
