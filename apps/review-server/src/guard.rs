//! The request guard in front of every route (docs/security.md, "HTTP"): the Host allow-list
//! against DNS rebinding, the refusal of cross-site state changes, and the body limit of each
//! route. It holds whether the OAuth gate is on or off: a page in the operator's own browser
//! must not be able to read `/api/settings` or spend money through `/api/.../improve`.
//!
//! 1. **Host.** Every request but the webhook, the internal route and `/health` must name an
//!    allowed host: an IP literal (a browser that reached us by IP is same-origin with it, so
//!    DNS rebinding cannot use one), `localhost`, AUTH_URL's host, or a name in ALLOWED_HOSTS
//!    (`*` allows any, for a proxy that checks Host itself). Otherwise 403 `forbidden_host`.
//! 2. **Cross-site writes.** A POST, PUT, PATCH or DELETE under `/api` is refused 403 when its
//!    `Sec-Fetch-Site` is `cross-site` or its `Origin` is another origin than the Host it was
//!    sent to (or AUTH_URL's origin): `cross_site`. Requests without either header (curl,
//!    server-to-server) pass: browsers always send `Origin` on cross-origin writes.
//! 3. **Body size.** 25 MiB for the webhook (GitHub's cap), 1 MiB for everything else; over
//!    it, 413 `payload_too_large` before the handler runs.
//!
//! 4. **Open API.** With the OAuth gate off and LISTEN on an address that is not loopback,
//!    every `/api` request is 403 `open_api_refused` unless ALLOW_OPEN_API=true: a partial or
//!    forgotten sign-in configuration never serves the stored API keys to the network.
//! 5. **The settings test is same-site.** `GET /api/settings/test` spends a model call, so it
//!    is refused like a write (rule 2) when cross-site: an `<img src>` on another page must
//!    not spend the operator's money.
//! 6. **Body time and webhook concurrency.** A body must arrive within BODY_TIMEOUT_SECS
//!    (408 `body_timeout`), and at most WEBHOOK_MAX_CONCURRENT_BODIES webhook bodies over 1 MiB
//!    (or without a Content-Length) are read at once (503 `webhook_busy`, with Retry-After): a
//!    client that stalls or sends many 25 MiB bodies holds neither a connection nor memory for
//!    long. Bodies that declare at most 1 MiB, every ordinary delivery, are not counted.
//! 7. **GitLab's token first.** GitLab sends its secret token in `X-Gitlab-Token`, so a
//!    delivery to `/webhook/gitlab` without the right one is refused 401 `invalid_signature`
//!    before any of its body is read (docs/review-service.md, "GitLab").
//!
//! Refusals are JSON `{"error", "code"}` with the codes of docs/review-service.md §7.
//!
//! The webhook and the internal route are exempt from 1 and 2: the forge sends its own Host,
//! and the internal route has its own secret and loopback check. `/health` is exempt from 1
//! because orchestrators probe it by pod IP or service name.

use crate::error::{ErrorCode, error_response};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use secrecy::{ExposeSecret, SecretString};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// Largest webhook delivery: GitHub caps payloads at 25 MiB.
pub(crate) const WEBHOOK_BODY_LIMIT: usize = 25 * 1024 * 1024;
/// GitLab's webhook route, whose token is checked before the body is read.
const GITLAB_WEBHOOK: &str = "/webhook/gitlab";

/// Largest body of every other route (`/api` JSON, the internal findings route): 1 MiB.
pub(crate) const API_BODY_LIMIT: usize = 1024 * 1024;

/// The hosts a request may name besides IP literals and `localhost`: AUTH_URL's host and
/// ALLOWED_HOSTS, lower-cased, without ports.
/// The guard's whole policy: allowed hosts (rule 1), whether `/api` is refused (rule 4) and
/// the body limits (rules 3 and 6).
#[derive(Debug, Clone)]
pub struct HostPolicy {
    names: Vec<String>,
    any: bool,
    /// AUTH_URL's origin (`scheme://host[:port]`, lower-cased), accepted as `Origin`.
    public_origin: Option<String>,
    /// Rule 4: the gate is off on a non-loopback LISTEN without ALLOW_OPEN_API.
    refuse_api: bool,
    /// Rule 6: how long a body may take to arrive.
    body_timeout: Duration,
    /// Rule 6: one permit per webhook body being read.
    webhook_bodies: Arc<Semaphore>,
    /// GITLAB_WEBHOOK_SECRET: GitLab sends its token in a header, so a delivery without the
    /// right one is refused before its body is read (empty: every GitLab delivery is).
    gitlab_token: Arc<SecretString>,
}

impl Default for HostPolicy {
    fn default() -> Self {
        HostPolicy {
            names: Vec::new(),
            any: false,
            public_origin: None,
            refuse_api: false,
            body_timeout: Duration::from_secs(10),
            webhook_bodies: Arc::new(Semaphore::new(4)),
            gitlab_token: Arc::new(SecretString::from(String::new())),
        }
    }
}

impl HostPolicy {
    /// From AUTH_URL and ALLOWED_HOSTS (entries may carry a port or a scheme; both are
    /// ignored, as the check compares host names).
    pub fn new(auth_url: Option<&str>, allowed_hosts: &[String]) -> Self {
        let mut names = Vec::new();
        let mut any = false;
        for entry in allowed_hosts {
            let entry = entry.trim();
            if entry == "*" {
                any = true;
            } else if let Some(host) = host_name(strip_scheme(entry)) {
                names.push(host);
            }
        }
        let public_origin = auth_url.and_then(origin_of);
        if let Some(host) = public_origin
            .as_deref()
            .and_then(|o| host_name(strip_scheme(o)))
        {
            names.push(host);
        }
        HostPolicy {
            names,
            any,
            public_origin,
            ..HostPolicy::default()
        }
    }

    /// With rule 4 (`refuse_api`: answer every `/api` request 403) and the limits of rule 6.
    pub fn with_limits(
        mut self,
        refuse_api: bool,
        body_timeout: Duration,
        webhook_bodies: usize,
    ) -> Self {
        self.refuse_api = refuse_api;
        self.body_timeout = body_timeout;
        self.webhook_bodies = Arc::new(Semaphore::new(webhook_bodies.max(1)));
        self
    }

    /// GITLAB_WEBHOOK_SECRET, for refusing a GitLab delivery before its body is read.
    pub fn with_gitlab_token(mut self, token: Option<&SecretString>) -> Self {
        if let Some(t) = token {
            self.gitlab_token = Arc::new(t.clone());
        }
        self
    }

    /// Whether a request naming `host` (a Host header value) is let through.
    pub fn allows(&self, host: &str) -> bool {
        let Some(name) = host_name(host) else {
            return false;
        };
        self.any || name == "localhost" || is_ip_literal(&name) || self.names.contains(&name)
    }
}

/// Middleware applying rules 1-3 of the module docs.
pub(crate) async fn guard(State(hosts): State<HostPolicy>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let exempt = path.starts_with("/webhook/") || path.starts_with("/internal/");
    if !exempt && path != "/health" {
        let host = request_host(&req);
        if !hosts.allows(host.unwrap_or_default()) {
            let shown: String = host.unwrap_or("(none)").chars().take(100).collect();
            return error_response(
                ErrorCode::ForbiddenHost,
                format!("host {shown:?} is not allowed: add it to ALLOWED_HOSTS (or set AUTH_URL)"),
            );
        }
    }
    if hosts.refuse_api && is_api(path) {
        return error_response(
            ErrorCode::OpenApiRefused,
            "the dashboard API is off: the OAuth gate is off and LISTEN is not a loopback \
             address. Set AUTH_SECRET, FORGE_APP_CLIENT_ID and FORGE_APP_CLIENT_SECRET to turn \
             the gate on, bind LISTEN to 127.0.0.1, or set ALLOW_OPEN_API=true when a proxy in \
             front authenticates every request",
        );
    }
    if !exempt
        && is_api(path)
        && (is_write(req.method()) || path == SETTINGS_TEST)
        && let Some(why) = cross_site(req.headers(), request_host(&req), &hosts)
    {
        return error_response(ErrorCode::CrossSite, why);
    }
    let webhook = path.starts_with("/webhook/");
    if path == GITLAB_WEBHOOK && req.method() == Method::POST {
        let given = req
            .headers()
            .get("x-gitlab-token")
            .map(|v| v.as_bytes())
            .unwrap_or_default();
        let secret = hosts.gitlab_token.expose_secret().as_bytes();
        if !forge::gitlab::webhook::verify_token(secret, given) {
            let mut resp = crate::error::ApiError::InvalidSignature.into_response();
            resp.headers_mut().insert(
                header::CONNECTION,
                header::HeaderValue::from_static("close"),
            );
            return resp;
        }
    }
    let _permit = if webhook && !declared_small(req.headers()) {
        match hosts.webhook_bodies.clone().try_acquire_owned() {
            Ok(permit) => Some(permit),
            Err(_) => {
                let mut resp = error_response(
                    ErrorCode::WebhookBusy,
                    "too many webhook deliveries are being read at once; retry shortly",
                );
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
                resp.headers_mut().insert(
                    header::CONNECTION,
                    header::HeaderValue::from_static("close"),
                );
                return resp;
            }
        }
    } else {
        None
    };
    let limit = if webhook {
        WEBHOOK_BODY_LIMIT
    } else {
        API_BODY_LIMIT
    };
    let read = tokio::time::timeout(hosts.body_timeout, limit_body(req, limit)).await;
    drop(_permit);
    match read {
        Ok(Ok(req)) => next.run(req).await,
        Ok(Err(resp)) => resp,
        Err(_) => {
            let mut resp = error_response(
                ErrorCode::BodyTimeout,
                format!(
                    "the request body did not arrive within {} s",
                    hosts.body_timeout.as_secs_f64()
                ),
            );
            resp.headers_mut().insert(
                header::CONNECTION,
                header::HeaderValue::from_static("close"),
            );
            resp
        }
    }
}

/// Whether the body declares (Content-Length) at most [`API_BODY_LIMIT`] bytes: such a webhook
/// body needs no permit of rule 6, so a burst of ordinary deliveries (a few KB each) is never
/// turned away; only large or unannounced ones are counted.
fn declared_small(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n <= API_BODY_LIMIT as u64)
}

/// The one GET that spends money (a model call): refused cross-site like a write (rule 5).
const SETTINGS_TEST: &str = "/api/settings/test";

fn is_api(path: &str) -> bool {
    path == "/api" || path.starts_with("/api/")
}

fn is_write(method: &Method) -> bool {
    matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    )
}

/// The host the request was sent to: the Host header, else the URI's authority (HTTP/2).
fn request_host(req: &Request) -> Option<&str> {
    req.headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))
}

/// Why a write is cross-site, or `None` when it is not (rule 2).
fn cross_site(headers: &HeaderMap, host: Option<&str>, hosts: &HostPolicy) -> Option<String> {
    let fetch_site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if fetch_site.eq_ignore_ascii_case("cross-site") {
        return Some("cross-site request refused (Sec-Fetch-Site: cross-site)".into());
    }
    let origin = headers.get(header::ORIGIN)?;
    let Some(origin) = origin.to_str().ok().and_then(origin_of) else {
        return Some("cross-site request refused: the Origin is opaque or malformed".into());
    };
    if hosts.public_origin.as_deref() == Some(origin.as_str()) {
        return None;
    }
    let (scheme, authority) = origin.split_once("://")?;
    let same = host.is_some_and(|h| {
        with_default_port(authority, scheme) == with_default_port(&h.to_ascii_lowercase(), scheme)
    });
    (!same).then(|| {
        let shown: String = origin.chars().take(100).collect();
        format!("cross-site request refused: Origin {shown} is not this server's origin")
    })
}

/// `scheme://host[:port]` of a URL or origin, lower-cased; `None` for `null` or a value
/// that is not an http(s) origin.
fn origin_of(url: &str) -> Option<String> {
    let url = url.trim().to_ascii_lowercase();
    let (scheme, rest) = url.split_once("://")?;
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.is_empty() || authority.contains(['@', ' ', '\t']) {
        return None;
    }
    Some(format!("{scheme}://{authority}"))
}

fn with_default_port(authority: &str, scheme: &str) -> String {
    let has_port = match authority.rfind(':') {
        Some(i) => !authority[i..].contains(']'),
        None => false,
    };
    if has_port {
        authority.to_owned()
    } else {
        let port = if scheme == "https" { 443 } else { 80 };
        format!("{authority}:{port}")
    }
}

fn strip_scheme(entry: &str) -> &str {
    entry.split_once("://").map_or(entry, |(_, rest)| rest)
}

/// The host name of a Host value (`name`, `name:port`, `[v6]`, `[v6]:port`), lower-cased,
/// without a trailing dot; `None` when empty or not a plausible host.
fn host_name(host: &str) -> Option<String> {
    let host = host.trim().split('/').next()?.to_ascii_lowercase();
    let name = if let Some(rest) = host.strip_prefix('[') {
        format!("[{}]", rest.split(']').next()?)
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name.to_owned(),
            Some(_) => return None,
            None => host,
        }
    };
    let name = name.trim_end_matches('.').to_owned();
    let plausible = !name.is_empty()
        && name.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'[' | b']' | b':')
        });
    plausible.then_some(name)
}

fn is_ip_literal(name: &str) -> bool {
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<IpAddr>().is_ok()
}

/// Bytes of an over-limit body read and dropped before the 413 is sent, so the client,
/// still sending, sees the answer instead of a reset connection (as nginx's lingering close).
const DRAIN_MAX: u64 = 32 * 1024 * 1024;

/// Longest wait for an over-limit body to drain.
const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The request with its body read into memory, at most `limit` bytes; a longer body is a 413
/// (rule 3), whether its Content-Length says so up front or it streams past the limit.
async fn limit_body(req: Request, limit: usize) -> Result<Request, Response> {
    let too_large = || {
        error_response(
            ErrorCode::PayloadTooLarge,
            format!("request body too large: at most {limit} bytes"),
        )
    };
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let (parts, body) = req.into_parts();
    if declared.is_some_and(|n| n > limit as u64) {
        drain(body).await;
        return Err(too_large());
    }
    let mut body = body.into_data_stream();
    let mut buffered = bytes::BytesMut::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| {
            error_response(
                ErrorCode::UnreadableBody,
                format!("cannot read the request body: {e}"),
            )
        })?;
        if buffered.len() + chunk.len() > limit {
            drain(Body::from_stream(body)).await;
            return Err(too_large());
        }
        buffered.extend_from_slice(&chunk);
    }
    Ok(Request::from_parts(parts, Body::from(buffered.freeze())))
}

/// Reads and drops up to [`DRAIN_MAX`] bytes of `body` within [`DRAIN_TIMEOUT`].
async fn drain(body: Body) {
    let mut stream = body.into_data_stream();
    let mut seen = 0u64;
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while let Some(Ok(chunk)) = stream.next().await {
            seen += chunk.len() as u64;
            if seen > DRAIN_MAX {
                break;
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> HostPolicy {
        HostPolicy::new(
            Some("https://reviews.example.com/"),
            &[
                "review.internal:8080".into(),
                "https://ops.example.org".into(),
            ],
        )
    }

    #[test]
    fn loopback_ip_literals_auth_url_and_listed_hosts_are_allowed() {
        let p = policy();
        for host in [
            "127.0.0.1:8080",
            "localhost",
            "LOCALHOST:3000",
            "[::1]:8080",
            "10.1.2.3:8080",
            "reviews.example.com",
            "reviews.example.com.",
            "review.internal:9999",
            "ops.example.org",
        ] {
            assert!(p.allows(host), "{host}");
        }
        for host in [
            "",
            "evil.example",
            "rebind.evil.example:8080",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
            "reviews.example.com.evil",
            "a b",
            "host:port",
        ] {
            assert!(!p.allows(host), "{host}");
        }
        assert!(HostPolicy::new(None, &["*".into()]).allows("anything.example"));
    }

    #[test]
    fn writes_from_another_origin_are_cross_site() {
        let p = policy();
        let headers = |pairs: &[(&'static str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, v.parse().unwrap());
            }
            h
        };
        let host = Some("127.0.0.1:8080");
        for same in [
            headers(&[]),
            headers(&[("origin", "http://127.0.0.1:8080")]),
            headers(&[("sec-fetch-site", "same-origin")]),
            headers(&[("origin", "https://reviews.example.com")]),
        ] {
            assert_eq!(cross_site(&same, host, &p), None, "{same:?}");
        }
        for other in [
            headers(&[("origin", "http://evil.example")]),
            headers(&[("origin", "http://127.0.0.1:9999")]),
            headers(&[("origin", "null")]),
            headers(&[("sec-fetch-site", "cross-site")]),
        ] {
            assert!(cross_site(&other, host, &p).is_some(), "{other:?}");
        }
        // Default ports are the same origin.
        assert_eq!(
            cross_site(
                &headers(&[("origin", "https://reviews.example.com")]),
                Some("reviews.example.com:443"),
                &HostPolicy::default()
            ),
            None
        );
    }
}
