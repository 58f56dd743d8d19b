//! The OAuth gate of the dashboard API (docs/review-service.md §5).
//!
//! On only when AUTH_SECRET, FORGE_APP_CLIENT_ID and FORGE_APP_CLIENT_SECRET are all set (rule
//! 1). Then every path under `/api/` needs a session cookie, except `/api/auth/*` (the sign-in
//! endpoints below) and `/api/auth-status` (rule 2); without one the answer is 401 with the
//! plain-text body `Unauthorized` (rule 3, §7). The webhook, `/health`, the internal
//! findings route and everything outside `/api` are never gated (rules 5 and 6).
//!
//! Sign-in is the forge App's OAuth authorization-code flow ([`forge::oauth::OAuthApp`]); a
//! login must be listed in ALLOWED_FORGE_USERS, and the code exchange is bound to the browser
//! that started it by PKCE (S256, RFC 7636) as well as the `state`. The session is a cookie
//! encrypted and authenticated with a key derived from AUTH_SECRET (AES-256-GCM, the `cookie`
//! crate's private jar) holding the login and an expiry: no session table is needed, a
//! restart keeps users signed in, and nobody can read the login from the cookie.

use crate::config::Config;
use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum_extra::extract::cookie::{Cookie, Key, PrivateCookieJar, SameSite};
use forge::ForgeKind;
use forge::oauth::{GitLabOAuthApp, OAuthApp};
use review_domain::EpochSeconds;
use secrecy::ExposeSecret;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha512};
use std::sync::Arc;

/// Name of the session cookie.
pub(crate) const SESSION_COOKIE: &str = "review_session";
/// Name of the short-lived cookie holding the OAuth `state` between sign-in and callback.
pub(crate) const STATE_COOKIE: &str = "review_oauth_state";
/// How long a session lasts: 7 days, in seconds.
pub(crate) const SESSION_SECS: i64 = 7 * 24 * 3600;
/// How long a sign-in may take between redirect and callback: 10 minutes, in seconds.
const STATE_SECS: i64 = 600;

/// A signed-in user, as stored in the session cookie.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// Forge login.
    pub login: String,
    /// Epoch seconds after which the cookie is refused.
    pub expires: i64,
}

/// A sign-in in progress, as stored in the (encrypted) state cookie.
#[derive(Debug, Serialize, Deserialize)]
struct PendingSignIn {
    state: String,
    /// The forge whose authorize page the browser was sent to: only its callback may finish
    /// the sign-in.
    #[serde(default = "github")]
    forge: ForgeKind,
    /// The PKCE code verifier whose S256 challenge went to the authorize URL.
    pkce_verifier: String,
    /// Same-site path to return to after sign-in.
    return_to: String,
    expires: i64,
}

fn github() -> ForgeKind {
    ForgeKind::GitHub
}

/// The gate's configuration; present on the app only when OAuth is enabled.
pub struct Auth {
    /// The GitHub App's OAuth client, when FORGE_APP_CLIENT_ID and its secret are set.
    pub oauth: Option<OAuthApp>,
    /// The GitLab OAuth application and GitLab's host (the prefix of its users' logins), when
    /// GITLAB_OAUTH_CLIENT_ID and its secret are set (docs/review-service.md, "GitLab").
    pub gitlab: Option<(GitLabOAuthApp, String)>,
    key: Key,
    /// Lower-cased logins allowed to sign in.
    allowed: Vec<String>,
    /// AUTH_URL without a trailing slash, if set.
    public_url: Option<String>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("client_id", &self.oauth.as_ref().map(|o| &o.client_id))
            .field(
                "gitlab_client_id",
                &self.gitlab.as_ref().map(|(o, _)| &o.client_id),
            )
            .field("allowed", &self.allowed)
            .finish_non_exhaustive()
    }
}

impl Auth {
    /// The gate when all three variables of rule 1 are set (and non-empty), or AUTH_SECRET
    /// with GitLab's OAuth pair, else `None`: the gate is off and the whole API is open (rule
    /// 4).
    pub fn from_config(config: &Config) -> Option<Auth> {
        let secret = config.auth_secret.as_ref()?.expose_secret();
        if secret.is_empty() {
            return None;
        }
        let pair = |id: Option<&str>, secret: Option<&secrecy::SecretString>| {
            let id = id?.trim();
            let secret = secret?;
            (!id.is_empty() && !secret.expose_secret().is_empty())
                .then(|| (id.to_owned(), secret.clone()))
        };
        let oauth = pair(
            config.app_client_id.as_deref(),
            config.app_client_secret.as_ref(),
        )
        .map(|(client_id, client_secret)| OAuthApp {
            client_id,
            client_secret,
            web_url: config.forge_url.clone(),
            api_url: config.forge_api_url.clone(),
        });
        let gitlab = pair(
            config.gitlab_oauth_client_id.as_deref(),
            config.gitlab_oauth_client_secret.as_ref(),
        )
        .zip(config.gitlab_url.clone().zip(config.gitlab_host()))
        .map(|((client_id, client_secret), (base_url, host))| {
            (
                GitLabOAuthApp {
                    client_id,
                    client_secret,
                    base_url,
                },
                host,
            )
        });
        if oauth.is_none() && gitlab.is_none() {
            return None;
        }
        // Any AUTH_SECRET becomes a 64-byte signing key; SHA-512 output is exactly that long.
        let key = Key::try_from(Sha512::digest(secret.as_bytes()).as_slice()).ok()?;
        let allowed: Vec<String> = config
            .allowed_forge_users
            .iter()
            .map(|u| u.trim().to_ascii_lowercase())
            .filter(|u| !u.is_empty())
            .collect();
        if allowed.is_empty() {
            tracing::warn!(
                "OAuth is on but ALLOWED_FORGE_USERS is empty: nobody can sign in to the dashboard"
            );
        }
        Some(Auth {
            oauth,
            gitlab,
            key,
            allowed,
            public_url: config
                .auth_url
                .as_deref()
                .map(|u| u.trim_end_matches('/').to_owned()),
        })
    }

    /// Whether `login` is in ALLOWED_FORGE_USERS (case-insensitive, as forge logins are).
    pub fn allows(&self, login: &str) -> bool {
        let login = login.to_ascii_lowercase();
        self.allowed.contains(&login)
    }

    fn jar(&self, headers: &HeaderMap) -> PrivateCookieJar {
        PrivateCookieJar::from_headers(headers, self.key.clone())
    }

    /// The unexpired session of a request, if its cookie carries a valid signature.
    pub fn session(&self, headers: &HeaderMap, now: EpochSeconds) -> Option<Session> {
        let cookie = self.jar(headers).get(SESSION_COOKIE)?;
        let session: Session = serde_json::from_str(cookie.value()).ok()?;
        (session.expires > now.0 && self.allows(&session.login)).then_some(session)
    }

    /// The forges a user may sign in with, GitHub first.
    pub fn providers(&self) -> Vec<ForgeKind> {
        let mut out = Vec::new();
        if self.oauth.is_some() {
            out.push(ForgeKind::GitHub);
        }
        if self.gitlab.is_some() {
            out.push(ForgeKind::GitLab);
        }
        out
    }

    /// `<public base>/api/auth/callback/<github|gitlab>`: AUTH_URL, else the request's own
    /// origin.
    pub fn callback_url(&self, headers: &HeaderMap, forge: ForgeKind) -> String {
        let base = match &self.public_url {
            Some(u) => u.clone(),
            None => {
                let get = |name: &str| {
                    headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.split(',').next())
                        .map(|v| v.trim().to_owned())
                };
                let proto = get("x-forwarded-proto").unwrap_or_else(|| "http".into());
                let host = get("x-forwarded-host")
                    .or_else(|| get("host"))
                    .unwrap_or_else(|| "localhost".into());
                format!("{proto}://{host}")
            }
        };
        format!("{base}/api/auth/callback/{}", forge.as_str())
    }

    /// Exchange `code` with `forge`'s OAuth client; the login as the allow-list and the
    /// session name it: a GitHub login as it is, a GitLab user as `<gitlab host>/<username>`.
    pub async fn exchange(
        &self,
        forge: ForgeKind,
        code: &str,
        pkce_verifier: &str,
        headers: &HeaderMap,
    ) -> Result<String, forge::ForgeError> {
        let callback = self.callback_url(headers, forge);
        let off = || {
            forge::ForgeError::Credentials(format!(
                "sign-in with {} is not configured",
                forge.display_name()
            ))
        };
        match forge {
            ForgeKind::GitHub => {
                let oauth = self.oauth.as_ref().ok_or_else(off)?;
                oauth.sign_in(code, pkce_verifier, &callback).await
            }
            ForgeKind::GitLab => {
                let (oauth, host) = self.gitlab.as_ref().ok_or_else(off)?;
                let username = oauth.sign_in(code, pkce_verifier, &callback).await?;
                Ok(format!("{host}/{username}"))
            }
        }
    }

    /// Start a sign-in: the cookie jar with the state cookie set (holding the state, the PKCE
    /// verifier and the return path), and the forge's authorize URL carrying the state and the
    /// S256 code challenge.
    pub fn begin(
        &self,
        headers: &HeaderMap,
        forge: ForgeKind,
        return_to: Option<&str>,
        now: EpochSeconds,
    ) -> Result<(PrivateCookieJar, String), forge::ForgeError> {
        let state = hex::encode(rand::random::<[u8; 32]>());
        let callback = self.callback_url(headers, forge);
        let pkce = forge::oauth::Pkce::new_random();
        let off = || {
            forge::ForgeError::Credentials(format!(
                "sign-in with {} is not configured",
                forge.display_name()
            ))
        };
        let url = match forge {
            ForgeKind::GitHub => self
                .oauth
                .as_ref()
                .ok_or_else(off)?
                .authorize_url(&callback, &state, &pkce)?,
            ForgeKind::GitLab => self
                .gitlab
                .as_ref()
                .ok_or_else(off)?
                .0
                .authorize_url(&callback, &state, &pkce)?,
        };
        let pending = PendingSignIn {
            state,
            forge,
            pkce_verifier: pkce.verifier().to_owned(),
            return_to: safe_return_path(return_to),
            expires: now.0 + STATE_SECS,
        };
        let cookie = self.cookie(
            STATE_COOKIE,
            serde_json::to_string(&pending).unwrap_or_default(),
            STATE_SECS,
            &callback,
        );
        Ok((self.jar(headers).add(cookie), url))
    }

    /// Check the callback's `state` against the state cookie; returns the jar with the state
    /// cookie removed, the path to return to and the PKCE verifier for the code exchange.
    /// `None`: missing, forged or expired state, or a sign-in begun with another forge than
    /// `forge`, the callback's.
    pub fn take_state(
        &self,
        headers: &HeaderMap,
        forge: ForgeKind,
        state: &str,
        now: EpochSeconds,
    ) -> Option<(PrivateCookieJar, String, String)> {
        let jar = self.jar(headers);
        let pending: PendingSignIn = serde_json::from_str(jar.get(STATE_COOKIE)?.value()).ok()?;
        let same = bool::from(subtle::ConstantTimeEq::ct_eq(
            pending.state.as_bytes(),
            state.as_bytes(),
        ));
        if !same || pending.expires <= now.0 || pending.forge != forge {
            return None;
        }
        let jar = jar.remove(Cookie::build(STATE_COOKIE).path("/api/auth"));
        Some((jar, pending.return_to, pending.pkce_verifier))
    }

    /// `jar` with a session cookie for `login` valid for [`SESSION_SECS`].
    pub fn sign_in(
        &self,
        jar: PrivateCookieJar,
        headers: &HeaderMap,
        login: &str,
        now: EpochSeconds,
    ) -> PrivateCookieJar {
        let session = Session {
            login: login.to_owned(),
            expires: now.0 + SESSION_SECS,
        };
        let value = serde_json::to_string(&session).unwrap_or_default();
        let callback = self.callback_url(headers, ForgeKind::GitHub);
        let mut cookie = self.cookie(SESSION_COOKIE, value, SESSION_SECS, &callback);
        cookie.set_path("/");
        jar.add(cookie)
    }

    /// `jar` without the session cookie.
    pub fn sign_out(&self, headers: &HeaderMap) -> PrivateCookieJar {
        self.jar(headers)
            .remove(Cookie::build(SESSION_COOKIE).path("/"))
    }

    fn cookie(
        &self,
        name: &'static str,
        value: String,
        max_age_secs: i64,
        origin: &str,
    ) -> Cookie<'static> {
        Cookie::build((name, value))
            .path("/api/auth")
            .http_only(true)
            .secure(origin.starts_with("https://"))
            .same_site(SameSite::Lax)
            .max_age(time::Duration::seconds(max_age_secs))
            .build()
    }
}

/// A same-origin path to return to after sign-in, else `/`: it must start with one `/` (not
/// `//`, which a browser reads as another host), and hold no backslash, whitespace or control
/// character (browsers strip tabs and newlines from URLs, so `/\t/evil.example` becomes
/// `//evil.example`; a newline would also break the Location header). Percent-encoded
/// forms are decoded once before the check, so `/%09/evil.example` is refused too.
fn safe_return_path(path: Option<&str>) -> String {
    let Some(p) = path else {
        return "/".to_owned();
    };
    let decoded = percent_encoding::percent_decode_str(p).decode_utf8_lossy();
    let clean = |s: &str| {
        s.starts_with('/')
            && !s.starts_with("//")
            && !s.contains('\\')
            && !s.chars().any(|c| c.is_whitespace() || c.is_control())
    };
    if clean(p) && clean(&decoded) && !decoded[1..].starts_with(['/', '\\']) {
        p.to_owned()
    } else {
        "/".to_owned()
    }
}

/// Whether rule 2 puts `path` behind the gate: under `/api/` but not `/api/auth/*` or
/// `/api/auth-status`.
pub(crate) fn is_gated(path: &str) -> bool {
    (path == "/api" || path.starts_with("/api/"))
        && !path.starts_with("/api/auth/")
        && path != "/api/auth-status"
}

/// The 401 of rule 3: plain text `Unauthorized`.
pub(crate) fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "Unauthorized",
    )
        .into_response()
}

/// Middleware: lets a request through when the gate is off, the path is not gated, or the
/// request carries a valid session; answers [`unauthorized`] otherwise.
pub(crate) async fn gate(
    axum::extract::State(auth): axum::extract::State<Option<Arc<Auth>>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(auth) = &auth else {
        return next.run(req).await;
    };
    if !is_gated(req.uri().path()) || auth.session(req.headers(), crate::records::now()).is_some() {
        return next.run(req).await;
    }
    unauthorized()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gated_paths_are_exactly_api_minus_auth_endpoints() {
        for p in [
            "/api",
            "/api/",
            "/api/repos",
            "/api/events",
            "/api/nope",
            "/api/authx",
        ] {
            assert!(is_gated(p), "{p}");
        }
        for p in [
            "/api/auth-status",
            "/api/auth/session",
            "/api/auth/callback/github",
            "/health",
            "/webhook/github",
            "/internal/reviews/1/findings",
            "/",
            "/apix",
        ] {
            assert!(!is_gated(p), "{p}");
        }
    }

    #[test]
    fn return_paths_stay_on_this_site() {
        assert_eq!(safe_return_path(Some("/reviews/3")), "/reviews/3");
        assert_eq!(safe_return_path(Some("//evil.example")), "/");
        assert_eq!(safe_return_path(Some("https://evil.example")), "/");
        assert_eq!(safe_return_path(Some("/\\evil.example")), "/");
        assert_eq!(safe_return_path(None), "/");
        for hostile in [
            "/\t/evil.example",
            "/%09/evil.example",
            "/\n/evil.example",
            "/%0a/evil.example",
            "/%0d%0aSet-Cookie:x=1",
            "/%2f/evil.example",
            "/%5cevil.example",
            "/ /evil.example",
            "/\u{7f}x",
        ] {
            assert_eq!(safe_return_path(Some(hostile)), "/", "{hostile:?}");
        }
        assert_eq!(
            safe_return_path(Some("/reviews?status=failed&repo=o%2Fr")),
            "/reviews?status=failed&repo=o%2Fr"
        );
    }
}
