//! GitLab as an OAuth 2 provider (Doorkeeper): the authorize page, the token endpoint with
//! PKCE, and GET /api/v4/user (<https://docs.gitlab.com/ee/api/oauth2.html>,
//! <https://docs.gitlab.com/ee/api/users.html#for-normal-users-1>).

use super::{Call, FakeGitLab, Shared, gl_error, user_json};
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde_json::{Value, json};
use std::collections::HashMap;

/// An authorization code's grant: who approved, for which redirect URI and scope, and the
/// PKCE challenge the exchange must answer.
pub(super) struct Grant {
    username: String,
    client_id: String,
    redirect_uri: String,
    scope: String,
    code_challenge: Option<String>,
}

/// Minimal `application/x-www-form-urlencoded` decoding (`+` and `%XX`), for query strings
/// and form bodies.
pub(super) fn form_fields(body: &str) -> HashMap<String, String> {
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
        .filter(|kv| !kv.is_empty())
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(kv), String::new()),
        })
        .collect()
}

/// Percent-encode a query value.
fn enc(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Doorkeeper's error body.
fn oauth_error(status: u16, error: &str, description: &str) -> Response {
    (
        StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
        Json(json!({ "error": error, "error_description": description })),
    )
        .into_response()
}

/// GET /oauth/authorize?client_id=&redirect_uri=&response_type=code&state=&scope=
/// &code_challenge=&code_challenge_method=S256, as GitLab answers it for a signed-in user who
/// already authorized the application ([`FakeGitLab::set_oauth_login`]): 302 to
/// `redirect_uri?code=..&state=..`. An unknown client, a missing redirect URI, a response type
/// other than `code`, a scope other than `read_user`/`api`/`openid`/`profile`/`email`, or a
/// challenge method other than S256 is a 400 page; nobody signed in, 403.
pub(super) async fn authorize(State(s): State<Shared>, call: Call) -> Response {
    let q = &call.query;
    let mut inner = s.lock();
    inner.requests.push(super::Recorded {
        method: call.method.clone(),
        path: call.path.clone(),
        body: json!(q),
        authenticated: false,
    });
    let client_ok = inner
        .oauth_client
        .as_ref()
        .is_some_and(|(id, _)| q.get("client_id") == Some(id));
    let Some(redirect) = q.get("redirect_uri").filter(|_| client_ok).cloned() else {
        return (StatusCode::BAD_REQUEST, "unknown client or no redirect_uri").into_response();
    };
    if q.get("response_type").map(String::as_str) != Some("code") {
        return (StatusCode::BAD_REQUEST, "response_type must be code").into_response();
    }
    let scope = q.get("scope").cloned().unwrap_or_default();
    let allowed = ["read_user", "api", "read_api", "openid", "profile", "email"];
    if scope.is_empty() || !scope.split(' ').all(|sc| allowed.contains(&sc)) {
        return (StatusCode::BAD_REQUEST, "the requested scope is invalid").into_response();
    }
    let challenge = q.get("code_challenge").cloned();
    if challenge.is_some() && q.get("code_challenge_method").map(String::as_str) != Some("S256") {
        return (
            StatusCode::BAD_REQUEST,
            "code_challenge_method must be S256",
        )
            .into_response();
    }
    let Some(username) = inner.oauth_login.clone() else {
        return (
            StatusCode::FORBIDDEN,
            "nobody is signed in to the fake GitLab",
        )
            .into_response();
    };
    let code = format!("glcode-{}", s.hex_id());
    inner.oauth_codes.insert(
        code.clone(),
        Grant {
            username,
            client_id: q.get("client_id").cloned().unwrap_or_default(),
            redirect_uri: redirect.clone(),
            scope,
            code_challenge: challenge,
        },
    );
    let state = q.get("state").cloned().unwrap_or_default();
    let sep = if redirect.contains('?') { '&' } else { '?' };
    let location = format!("{redirect}{sep}code={}&state={}", enc(&code), enc(&state));
    (StatusCode::FOUND, [("location", location)]).into_response()
}

/// POST /oauth/token (form or JSON; the client in the body or HTTP Basic):
/// `grant_type=authorization_code` with a code used once, the redirect URI of its authorize
/// request and the PKCE `code_verifier` of its challenge; else Doorkeeper's 401
/// `invalid_client` or 400 `invalid_grant` / `unsupported_grant_type`.
pub(super) async fn token(State(s): State<Shared>, call: Call, body: Bytes) -> Response {
    let params = call.params(&body);
    let mut fields: HashMap<String, String> = params
        .as_object()
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    if let Some(basic) = call.header("authorization").strip_prefix("Basic ")
        && let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(basic)
        && let Some((id, secret)) = String::from_utf8_lossy(&raw).split_once(':')
    {
        fields.insert("client_id".into(), id.to_owned());
        fields.insert("client_secret".into(), secret.to_owned());
    }
    let mut inner = s.lock();
    inner.requests.push(super::Recorded {
        method: "POST".into(),
        path: call.path.clone(),
        body: json!({
            "grant_type": fields.get("grant_type"), "code": fields.get("code"),
            "redirect_uri": fields.get("redirect_uri"), "client_id": fields.get("client_id"),
        }),
        authenticated: false,
    });
    let client_ok = inner.oauth_client.as_ref().is_some_and(|(id, secret)| {
        fields.get("client_id") == Some(id) && fields.get("client_secret") == Some(secret)
    });
    if !client_ok {
        return oauth_error(
            401,
            "invalid_client",
            "Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.",
        );
    }
    if fields.get("grant_type").map(String::as_str) != Some("authorization_code") {
        return oauth_error(
            400,
            "unsupported_grant_type",
            "The authorization grant type is not supported by the authorization server.",
        );
    }
    let invalid_grant = || {
        oauth_error(
            400,
            "invalid_grant",
            "The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.",
        )
    };
    // Used or not, a code presented once is gone.
    let Some(grant) = fields.get("code").and_then(|c| inner.oauth_codes.remove(c)) else {
        return invalid_grant();
    };
    let verified = match &grant.code_challenge {
        None => true,
        Some(challenge) => fields.get("code_verifier").is_some_and(|v| {
            let digest = <sha2::Sha256 as sha2::Digest>::digest(v.as_bytes());
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest) == *challenge
        }),
    };
    if !verified
        || fields.get("redirect_uri") != Some(&grant.redirect_uri)
        || fields.get("client_id") != Some(&grant.client_id)
    {
        return invalid_grant();
    }
    let token = format!("gloat-{}", s.hex_id());
    inner.oauth_tokens.insert(token.clone(), grant.username);
    Json(json!({
        "access_token": token,
        "token_type": "Bearer",
        "expires_in": 7200,
        "refresh_token": format!("glort-{}", s.hex_id()),
        "scope": grant.scope,
        "created_at": time::OffsetDateTime::now_utc().unix_timestamp(),
    }))
    .into_response()
}

/// GET /api/v4/user: the OAuth token's user (`Authorization: Bearer`), or the access token's
/// bot user (`PRIVATE-TOKEN`); 401 otherwise.
pub(super) async fn get_user(State(s): State<Shared>, call: Call) -> Response {
    if let Err(refusal) = s.check(&call, &Value::Null) {
        return refusal;
    }
    let bearer = call
        .header("authorization")
        .strip_prefix("Bearer ")
        .unwrap_or("");
    let mut inner = s.lock();
    let username = inner.oauth_tokens.get(bearer).cloned();
    match username {
        Some(username) => {
            let id = inner.user_id(&username, &s.next_id);
            let mut u = user_json(id, &username);
            u["bot"] = json!(false);
            Json(u).into_response()
        }
        None if call.header("private-token") == FakeGitLab::TOKEN => {
            Json(user_json(FakeGitLab::BOT_USER_ID, FakeGitLab::BOT_USERNAME)).into_response()
        }
        None => gl_error(401, "401 Unauthorized"),
    }
}
