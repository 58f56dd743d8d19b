//! HTTP routes, one module per feature, merged in [`router`] under one middleware stack: trace
//! span on the matched route, catch-panic, body limit, the request guard and the OAuth gate
//! (docs/review-service.md §5), with JSON 404 and 405 fallbacks (docs/review-service.md §7).

pub(crate) mod auth;
pub(crate) mod bodies;
pub(crate) mod budget;
pub(crate) mod chat;
pub mod dashboard;
pub(crate) mod effective;
pub(crate) mod events;
pub(crate) mod health;
pub(crate) mod internal;
pub(crate) mod models;
pub mod openapi;
pub(crate) mod repos;
pub(crate) mod reviews;
pub(crate) mod settings;
pub(crate) mod skills;
pub(crate) mod stats;
pub(crate) mod webhook;
pub(crate) mod webhook_gitlab;

use crate::error::{method_not_allowed, not_found, panic_response};
use crate::state::AppState;
use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

/// Every route of the server.
pub fn router(state: AppState) -> Router {
    Router::new()
        .merge(health::router())
        .merge(auth::router())
        .merge(openapi::router())
        .merge(events::router())
        .merge(webhook::router())
        .merge(webhook_gitlab::router())
        .merge(internal::router())
        .merge(repos::router())
        .merge(reviews::router())
        .merge(stats::router())
        .merge(budget::router())
        .merge(settings::router())
        .merge(effective::router())
        .merge(models::router())
        .merge(skills::router())
        .merge(chat::router())
        .merge(dashboard::router())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            state.auth.clone(),
            crate::auth::gate,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.hosts.clone(),
            crate::guard::guard,
        ))
        .layer(DefaultBodyLimit::max(crate::guard::WEBHOOK_BODY_LIMIT))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(TraceLayer::new_for_http().make_span_with(|req: &Request| {
            let route = req
                .extensions()
                .get::<MatchedPath>()
                .map_or("unmatched", MatchedPath::as_str);
            tracing::debug_span!("http", method = %req.method(), route)
        }))
        .with_state(state)
}
