//! Signing a dashboard user in with the forge App's own OAuth credentials (docs/review-service.md §5
//! rule 1): the authorization-code flow of GitHub (`/login/oauth/authorize`, then
//! `/login/oauth/access_token`), then `GET /user` for the login. The protocol is the `oauth2`
//! crate's; this module only knows GitHub's endpoint paths and the user call.

use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, TokenResponse, TokenUrl,
};
use secrecy::{ExposeSecret, SecretString};

use crate::ForgeError;

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
        let bad = |e: oauth2::url::ParseError| ForgeError::Credentials(format!("OAuth URL: {e}"));
        let client = BasicClient::new(ClientId::new(self.client_id.clone()))
            .set_auth_uri(AuthUrl::new(self.endpoint("/login/oauth/authorize")).map_err(bad)?)
            .set_redirect_uri(RedirectUrl::new(redirect_uri.to_owned()).map_err(bad)?);
        let state = state.to_owned();
        let (url, _) = client
            .authorize_url(move || CsrfToken::new(state))
            .set_pkce_challenge(pkce.challenge.clone())
            .url();
        Ok(url.to_string())
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
        let bad = |e: oauth2::url::ParseError| ForgeError::Credentials(format!("OAuth URL: {e}"));
        let client = BasicClient::new(ClientId::new(self.client_id.clone()))
            .set_client_secret(ClientSecret::new(
                self.client_secret.expose_secret().to_owned(),
            ))
            .set_auth_type(AuthType::RequestBody)
            .set_token_uri(TokenUrl::new(self.endpoint("/login/oauth/access_token")).map_err(bad)?)
            .set_redirect_uri(RedirectUrl::new(redirect_uri.to_owned()).map_err(bad)?);
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ForgeError::Transport(e.to_string()))?;
        let token = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.to_owned()))
            .request_async(&http)
            .await
            .map_err(|e| ForgeError::Api {
                method: "POST",
                path: "/login/oauth/access_token".into(),
                status: 400,
                message: oauth_error(&e),
            })?;
        let url = format!("{}/user", self.api_url.trim_end_matches('/'));
        let resp = http
            .get(&url)
            .bearer_auth(token.access_token().secret())
            .header("Accept", "application/vnd.github+json")
            .header("X-GitHub-Api-Version", "2022-11-28")
            .header("User-Agent", "review-server")
            .send()
            .await
            .map_err(|e| ForgeError::Transport(format!("GET {url}: {e}")))?;
        let status = resp.status();
        let body: serde_json::Value = resp.json().await.map_err(|e| ForgeError::Decode {
            path: "/user".into(),
            message: e.to_string(),
        })?;
        if !status.is_success() {
            return Err(ForgeError::Api {
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
                path: "/user".into(),
                message: "no login in the user".into(),
            })
    }
}

/// The forge's reason for refusing a code (`bad_verification_code`, ...), else the error text.
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
}
