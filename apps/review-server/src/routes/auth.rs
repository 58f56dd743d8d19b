//! `/api/auth-status` and the sign-in endpoints under `/api/auth/*` (docs/review-service.md
//! §4, outside the dashboard prefix; §5). The sign-in endpoints exist only while OAuth is
//! on; otherwise they fall through to the global `{"error":"not found"}`.

use crate::auth::Auth;
use crate::error::not_found;
use crate::records::now;
use crate::state::AppState;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use forge::ForgeKind;
use serde::{Deserialize, Serialize};
use serde_json::json;

pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/auth-status", get(auth_status))
        .route("/api/auth/signin", get(sign_in))
        .route("/api/auth/callback/github", get(callback_github))
        .route("/api/auth/callback/gitlab", get(callback_gitlab))
        .route("/api/auth/session", get(session))
        .route("/api/auth/signout", post(sign_out))
}

/// Whether OAuth is configured (docs/review-service.md §4).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct AuthStatus {
    /// True when AUTH_SECRET, FORGE_APP_CLIENT_ID and FORGE_APP_CLIENT_SECRET are all set
    /// (or AUTH_SECRET with GitLab's OAuth pair).
    pub enabled: bool,
    /// **Added.** The forges a user can sign in with, `github` and/or `gitlab`, present when
    /// sign-in with GitLab is configured; absent: GitHub's alone, or the gate is off (the
    /// specification's body) (docs/review-service.md, "GitLab").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub providers: Option<Vec<String>>,
}

/// GET /api/auth-status: 200 `{enabled}`; exempt from the gate.
#[utoipa::path(get, path = "/api/auth-status", tag = "auth",
    responses((status = 200, body = AuthStatus)))]
pub(crate) async fn auth_status(State(app): State<AppState>) -> Json<AuthStatus> {
    Json(AuthStatus {
        enabled: app.auth.is_some(),
        providers: (app.auth.as_ref())
            .map(|a| a.providers())
            .filter(|p| p.contains(&ForgeKind::GitLab))
            .map(|p| p.iter().map(|f| f.as_str().to_owned()).collect::<Vec<_>>()),
    })
}

#[derive(Debug, Deserialize)]
pub(crate) struct SignInQuery {
    #[serde(rename = "callbackUrl")]
    callback_url: Option<String>,
    /// `github` or `gitlab`; default the first configured, GitHub's when both are.
    provider: Option<String>,
}

/// GET /api/auth/signin?callbackUrl=/path[&provider=gitlab]: 303 to the forge's authorize
/// page; 404 for a provider that is not configured.
async fn sign_in(
    State(app): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<SignInQuery>,
) -> Response {
    let Some(auth) = &app.auth else {
        return not_found().await;
    };
    let providers = auth.providers();
    let forge = match q.provider.as_deref() {
        None => providers.first().copied(),
        Some(p) => providers.iter().copied().find(|f| f.as_str() == p),
    };
    let Some(forge) = forge else {
        return not_found().await;
    };
    match auth.begin(&headers, forge, q.callback_url.as_deref(), now()) {
        Ok((jar, url)) => (jar, Redirect::to(&url)).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "cannot start an OAuth sign-in");
            text(StatusCode::INTERNAL_SERVER_ERROR, "OAuth is misconfigured")
        }
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// GET /api/auth/callback/github?code&state: see [`callback`].
async fn callback_github(
    State(app): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<CallbackQuery>,
) -> Response {
    callback(app, headers, q, ForgeKind::GitHub).await
}

/// GET /api/auth/callback/gitlab?code&state: see [`callback`].
async fn callback_gitlab(
    State(app): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<CallbackQuery>,
) -> Response {
    callback(app, headers, q, ForgeKind::GitLab).await
}

/// The callback of `forge`'s sign-in: checks the state (begun with this forge), exchanges the
/// code, checks ALLOWED_FORGE_USERS, sets the session cookie and returns 303 to where sign-in
/// started. 400 on a missing or forged state or a refused code; 403 for a login not allowed.
async fn callback(
    app: AppState,
    headers: HeaderMap,
    q: CallbackQuery,
    forge: ForgeKind,
) -> Response {
    let Some(auth) = &app.auth else {
        return not_found().await;
    };
    if !auth.providers().contains(&forge) {
        return not_found().await;
    }
    let now = now();
    let Some((jar, return_to, pkce_verifier)) =
        auth.take_state(&headers, forge, q.state.as_deref().unwrap_or(""), now)
    else {
        return text(
            StatusCode::BAD_REQUEST,
            "Sign-in failed: the OAuth state is missing, expired or does not match; start again",
        );
    };
    if let Some(error) = q.error {
        return (
            jar,
            text(
                StatusCode::BAD_REQUEST,
                &format!("Sign-in refused: {error}"),
            ),
        )
            .into_response();
    }
    let Some(code) = q.code.filter(|c| !c.is_empty()) else {
        return (
            jar,
            text(StatusCode::BAD_REQUEST, "Sign-in failed: no code"),
        )
            .into_response();
    };
    let login = match auth.exchange(forge, &code, &pkce_verifier, &headers).await {
        Ok(login) => login,
        Err(e) => {
            tracing::warn!(error = %e, "OAuth sign-in failed");
            return (
                jar,
                text(StatusCode::BAD_REQUEST, &format!("Sign-in failed: {e}")),
            )
                .into_response();
        }
    };
    if !auth.allows(&login) {
        tracing::warn!(%login, "sign-in refused: not in ALLOWED_FORGE_USERS");
        return (
            jar,
            text(
                StatusCode::FORBIDDEN,
                &format!("{login} is not allowed to use this dashboard"),
            ),
        )
            .into_response();
    }
    tracing::info!(%login, "signed in");
    let jar = auth.sign_in(jar, &headers, &login, now);
    (jar, Redirect::to(&return_to)).into_response()
}

/// GET /api/auth/session: 200 `{"user": {"login"}, "expires"}` or `{"user": null}`.
async fn session(State(app): State<AppState>, headers: HeaderMap) -> Response {
    let Some(auth) = &app.auth else {
        return not_found().await;
    };
    Json(session_body(auth, &headers)).into_response()
}

fn session_body(auth: &Auth, headers: &HeaderMap) -> serde_json::Value {
    match auth.session(headers, now()) {
        Some(s) => json!({ "user": { "login": s.login }, "expires": s.expires }),
        None => json!({ "user": null }),
    }
}

/// POST /api/auth/signout: removes the session cookie; 200 `{"ok": true}`.
async fn sign_out(State(app): State<AppState>, headers: HeaderMap) -> Response {
    let Some(auth) = &app.auth else {
        return not_found().await;
    };
    (auth.sign_out(&headers), Json(json!({ "ok": true }))).into_response()
}

fn text(status: StatusCode, body: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.to_owned(),
    )
        .into_response()
}
