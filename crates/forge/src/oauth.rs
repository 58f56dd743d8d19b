//! Signing a dashboard user in with the forge App's own OAuth credentials (docs/review-service.md §5
//! rule 1): the authorization-code flow of GitHub (`/login/oauth/authorize`, then
//! `/login/oauth/access_token`), then `GET /user` for the login. The protocol is the `oauth2`
//! crate's; this module only knows GitHub's endpoint paths and the user call.
//!
//! GitLab's sign-in ([`GitLabOAuthApp`]) is the same flow against an OAuth application of the
//! GitLab instance: `{base}/oauth/authorize` (PKCE S256, scope `read_user`), `{base}/oauth/token`
//! with the client secret in the body, then `GET {base}/api/v4/user` for the `username`
//! (<https://docs.gitlab.com/ee/api/oauth2.html#authorization-code-with-proof-key-for-code-exchange-pkce>).
//! [`OAuthProvider`] holds either.

use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, Scope, TokenResponse, TokenUrl,
};
use secrecy::{ExposeSecret, SecretString};

use crate::{ForgeError, ForgeKind};

/// The App's OAuth client: FORGE_APP_CLIENT_ID and FORGE_APP_CLIENT_SECRET, with the forge's web
/// base (FORGE_URL, where the authorize and token endpoints are) and REST base (FORGE_API_URL).
#[derive(Debug, Clone)]
pub struct OAuthApp {
    /// The App's client id.
    pub client_id: String,
    /// The App's client secret.
    pub client_secret: SecretString,
    /// Web base, e.g. `https://github.com`.
    pub web_url: String,
    /// REST base, e.g. `https://api.github.com`.
    pub api_url: String,
}

/// A PKCE pair (RFC 7636, method S256): the challenge goes to the authorize URL, the verifier
/// stays with the browser that started the sign-in (in its encrypted state cookie) and is
/// sent with the code exchange, so a stolen code is useless elsewhere.
#[derive(Debug)]
pub struct Pkce {
    challenge: PkceCodeChallenge,
    verifier: String,
}

impl Pkce {
    /// A fresh random verifier (32 random bytes, base64url) and its SHA-256 challenge.
    pub fn new_random() -> Self {
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        Pkce {
            challenge,
            verifier: verifier.secret().to_owned(),
        }
    }

    /// The verifier, to keep until the callback.
    pub fn verifier(&self) -> &str {
        &self.verifier
    }

    /// The `code_challenge` parameter: base64url(SHA-256(verifier)), unpadded.
    pub fn challenge(&self) -> &str {
        self.challenge.as_str()
    }
}

impl OAuthApp {
    fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.web_url.trim_end_matches('/'))
    }

    /// Where to send the browser: `<web>/login/oauth/authorize?response_type=code&client_id=..
    /// &state=<state>&code_challenge=<pkce>&code_challenge_method=S256&redirect_uri=..`.
    /// Errors: a base URL that does not parse.
    pub fn authorize_url(
        &self,
        redirect_uri: &str,
        state: &str,
        pkce: &Pkce,
    ) -> Result<String, ForgeError> {
        authorize_url(
            &self.client_id,
            &self.endpoint("/login/oauth/authorize"),
            redirect_uri,
            state,
            pkce,
            None,
        )
    }

    /// Exchange the callback's `code` (with the PKCE verifier of [`Pkce::verifier`]) for a user
    /// token and return the user's login. Errors: [`ForgeError::Api`] when the forge refuses
    /// the code (expired, already used, wrong verifier or client secret),
    /// [`ForgeError::Transport`] when it cannot be reached.
    pub async fn sign_in(
        &self,
        code: &str,
        pkce_verifier: &str,
        redirect_uri: &str,
    ) -> Result<String, ForgeError> {
        let (http, token) = TokenEndpoint {
            forge: ForgeKind::GitHub,
            client_id: &self.client_id,
            client_secret: &self.client_secret,
            url: self.endpoint("/login/oauth/access_token"),
            path: "/login/oauth/access_token",
        }
        .exchange(code, pkce_verifier, redirect_uri)
        .await?;
        let url = format!("{}/user", self.api_url.trim_end_matches('/'));
        let resp = http
            .get(&url)
            .bearer_auth(&token)
            .header("Accept", "application/vnd.github+json")
            .header("X-GitHub-Api-Version", "2022-11-28")
            .header("User-Agent", "review-server")
            .send()
            .await
            .map_err(|e| ForgeError::github_transport(format!("GET {url}: {e}")))?;
        let status = resp.status();
        let body: serde_json::Value = resp.json().await.map_err(|e| ForgeError::Decode {
            forge: ForgeKind::GitHub,
            path: "/user".into(),
            message: e.to_string(),
        })?;
        if !status.is_success() {
            return Err(ForgeError::Api {
                forge: ForgeKind::GitHub,
                method: "GET",
                path: "/user".into(),
                status: status.as_u16(),
                message: body["message"].as_str().unwrap_or("no message").to_owned(),
            });
        }
        body["login"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ForgeError::Decode {
                forge: ForgeKind::GitHub,
                path: "/user".into(),
                message: "no login in the user".into(),
            })
    }
}

/// A GitLab OAuth application (Admin or group/user settings, Applications: confidential, scope
/// `read_user`, the dashboard's callback as redirect URI) on the instance at `base_url`
/// (GITLAB_URL, where `/oauth/authorize`, `/oauth/token` and `/api/v4/user` are).
#[derive(Debug, Clone)]
pub struct GitLabOAuthApp {
    /// The application's id (GitLab calls it Application ID).
    pub client_id: String,
    /// The application's secret.
    pub client_secret: SecretString,
    /// The instance's base, e.g. `https://gitlab.com` (a path prefix is kept).
    pub base_url: String,
}

/// The scope GitLab sign-in asks for: enough to read the user's profile, nothing more
/// (<https://docs.gitlab.com/ee/integration/oauth_provider.html#view-all-authorized-applications>).
pub const GITLAB_SIGN_IN_SCOPE: &str = "read_user";

impl GitLabOAuthApp {
    fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.base_url.trim().trim_end_matches('/'))
    }

    /// Where to send the browser: `<base>/oauth/authorize?response_type=code&client_id=..
    /// &state=<state>&code_challenge=<pkce>&code_challenge_method=S256&redirect_uri=..
    /// &scope=read_user`. Errors: a base URL that does not parse.
    pub fn authorize_url(
        &self,
        redirect_uri: &str,
        state: &str,
        pkce: &Pkce,
    ) -> Result<String, ForgeError> {
        authorize_url(
            &self.client_id,
            &self.endpoint("/oauth/authorize"),
            redirect_uri,
            state,
            pkce,
            Some(GITLAB_SIGN_IN_SCOPE),
        )
    }

    /// Exchange the callback's `code` (with the PKCE verifier) at `<base>/oauth/token` for a
    /// user token and return the user's `username` (GET `<base>/api/v4/user` with the token as
    /// `Authorization: Bearer`). Errors: [`ForgeError::Api`] naming GitLab when the instance
    /// refuses the code (`invalid_grant`: expired, already used, wrong verifier) or the client
    /// (`invalid_client`), or the user call; [`ForgeError::Transport`] when it cannot be
    /// reached.
    pub async fn sign_in(
        &self,
        code: &str,
        pkce_verifier: &str,
        redirect_uri: &str,
    ) -> Result<String, ForgeError> {
        let transport = |message: String| ForgeError::Transport {
            forge: ForgeKind::GitLab,
            message,
        };
        let (http, token) = TokenEndpoint {
            forge: ForgeKind::GitLab,
            client_id: &self.client_id,
            client_secret: &self.client_secret,
            url: self.endpoint("/oauth/token"),
            path: "/oauth/token",
        }
        .exchange(code, pkce_verifier, redirect_uri)
        .await?;
        let url = self.endpoint("/api/v4/user");
        let resp = http
            .get(&url)
            .bearer_auth(&token)
            .header("User-Agent", "review-server")
            .send()
            .await
            .map_err(|e| transport(format!("GET {url}: {e}")))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| transport(format!("GET {url}: {e}")))?;
        if !status.is_success() {
            return Err(ForgeError::Api {
                forge: ForgeKind::GitLab,
                method: "GET",
                path: "/user".into(),
                status: status.as_u16(),
                message: crate::gitlab::gitlab_message(&text),
            });
        }
        let decode = |message: String| ForgeError::Decode {
            forge: ForgeKind::GitLab,
            path: "/user".into(),
            message,
        };
        let body: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| decode(e.to_string()))?;
        body["username"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| decode("no username in the user".into()))
    }
}

/// The OAuth sign-in of either forge, for a dashboard that offers one of them.
#[derive(Debug, Clone)]
pub enum OAuthProvider {
    GitHub(OAuthApp),
    GitLab(GitLabOAuthApp),
}

impl OAuthProvider {
    /// The forge users sign in with.
    pub fn forge(&self) -> ForgeKind {
        match self {
            OAuthProvider::GitHub(_) => ForgeKind::GitHub,
            OAuthProvider::GitLab(_) => ForgeKind::GitLab,
        }
    }

    /// [`OAuthApp::authorize_url`] or [`GitLabOAuthApp::authorize_url`].
    pub fn authorize_url(
        &self,
        redirect_uri: &str,
        state: &str,
        pkce: &Pkce,
    ) -> Result<String, ForgeError> {
        match self {
            OAuthProvider::GitHub(a) => a.authorize_url(redirect_uri, state, pkce),
            OAuthProvider::GitLab(a) => a.authorize_url(redirect_uri, state, pkce),
        }
    }

    /// [`OAuthApp::sign_in`] or [`GitLabOAuthApp::sign_in`]: the login (GitHub) or username
    /// (GitLab).
    pub async fn sign_in(
        &self,
        code: &str,
        pkce_verifier: &str,
        redirect_uri: &str,
    ) -> Result<String, ForgeError> {
        match self {
            OAuthProvider::GitHub(a) => a.sign_in(code, pkce_verifier, redirect_uri).await,
            OAuthProvider::GitLab(a) => a.sign_in(code, pkce_verifier, redirect_uri).await,
        }
    }
}

/// The forge's reason for refusing a code (`bad_verification_code`, ...), else the error text.
/// The authorize URL of either forge: `auth_url?response_type=code&client_id=..&state=..
/// &code_challenge=..&code_challenge_method=S256&redirect_uri=..[&scope=..]`. Errors: a URL
/// that does not parse.
fn authorize_url(
    client_id: &str,
    auth_url: &str,
    redirect_uri: &str,
    state: &str,
    pkce: &Pkce,
    scope: Option<&str>,
) -> Result<String, ForgeError> {
    let bad = |e: oauth2::url::ParseError| ForgeError::Credentials(format!("OAuth URL: {e}"));
    let client = BasicClient::new(ClientId::new(client_id.to_owned()))
        .set_auth_uri(AuthUrl::new(auth_url.to_owned()).map_err(bad)?)
        .set_redirect_uri(RedirectUrl::new(redirect_uri.to_owned()).map_err(bad)?);
    let state = state.to_owned();
    let mut request = client
        .authorize_url(move || CsrfToken::new(state))
        .set_pkce_challenge(pkce.challenge.clone());
    if let Some(scope) = scope {
        request = request.add_scope(Scope::new(scope.to_owned()));
    }
    Ok(request.url().0.to_string())
}

/// A forge's token endpoint, for the code exchange both forges share.
struct TokenEndpoint<'a> {
    forge: ForgeKind,
    client_id: &'a str,
    client_secret: &'a SecretString,
    /// The endpoint's URL.
    url: String,
    /// Its path, naming it in errors.
    path: &'static str,
}

impl TokenEndpoint<'_> {
    /// POST the code with the PKCE verifier (client secret in the body); the HTTP client for
    /// the user call (no redirects followed, 30 s timeout) and the access token. Errors:
    /// [`ForgeError::Api`] with the forge's OAuth error when the code is refused (expired,
    /// used, wrong verifier or secret), [`ForgeError::Credentials`] for a URL that does not
    /// parse, [`ForgeError::Transport`] when the client cannot be built.
    async fn exchange(
        &self,
        code: &str,
        pkce_verifier: &str,
        redirect_uri: &str,
    ) -> Result<(reqwest::Client, String), ForgeError> {
        let bad = |e: oauth2::url::ParseError| ForgeError::Credentials(format!("OAuth URL: {e}"));
        let client = BasicClient::new(ClientId::new(self.client_id.to_owned()))
            .set_client_secret(ClientSecret::new(
                self.client_secret.expose_secret().to_owned(),
            ))
            .set_auth_type(AuthType::RequestBody)
            .set_token_uri(TokenUrl::new(self.url.clone()).map_err(bad)?)
            .set_redirect_uri(RedirectUrl::new(redirect_uri.to_owned()).map_err(bad)?);
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| ForgeError::Transport {
                forge: self.forge,
                message: e.to_string(),
            })?;
        let token = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.to_owned()))
            .request_async(&http)
            .await
            .map_err(|e| ForgeError::Api {
                forge: self.forge,
                method: "POST",
                path: self.path.into(),
                status: 400,
                message: oauth_error(&e),
            })?;
        Ok((http, token.access_token().secret().to_owned()))
    }
}

fn oauth_error<RE, T>(e: &oauth2::RequestTokenError<RE, T>) -> String
where
    RE: std::error::Error + 'static,
    T: oauth2::ErrorResponse + 'static,
{
    match e {
        oauth2::RequestTokenError::ServerResponse(r) => r.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorize_url_carries_client_state_and_redirect() {
        let app = OAuthApp {
            client_id: "Iv1.abc".into(),
            client_secret: SecretString::from("s3cret"),
            web_url: "https://github.com/".into(),
            api_url: "https://api.github.com".into(),
        };
        let pkce = Pkce::new_random();
        let url = app
            .authorize_url(
                "https://reviews.example.com/api/auth/callback/github",
                "xyz",
                &pkce,
            )
            .unwrap();
        assert!(url.contains(&format!("code_challenge={}", pkce.challenge())));
        assert!(url.contains("code_challenge_method=S256"));
        assert!(!url.contains(pkce.verifier()));
        assert!(url.starts_with("https://github.com/login/oauth/authorize?"));
        assert!(url.contains("client_id=Iv1.abc"));
        assert!(url.contains("state=xyz"));
        assert!(url.contains(
            "redirect_uri=https%3A%2F%2Freviews.example.com%2Fapi%2Fauth%2Fcallback%2Fgithub"
        ));
        assert!(!url.contains("s3cret"));
    }

    #[test]
    fn gitlab_authorize_url_asks_for_read_user_with_pkce() {
        let app = GitLabOAuthApp {
            client_id: "app-id".into(),
            client_secret: SecretString::from("s3cret"),
            base_url: "https://gitlab.example.com/gl/".into(),
        };
        let pkce = Pkce::new_random();
        let url = app
            .authorize_url("https://reviews.example.com/cb", "xyz", &pkce)
            .unwrap();
        assert!(
            url.starts_with("https://gitlab.example.com/gl/oauth/authorize?"),
            "{url}"
        );
        assert!(url.contains("response_type=code"));
        assert!(url.contains("client_id=app-id"));
        assert!(url.contains("scope=read_user"));
        assert!(url.contains("code_challenge_method=S256"));
        assert!(url.contains(&format!("code_challenge={}", pkce.challenge())));
        assert!(!url.contains("s3cret"));
    }
}
