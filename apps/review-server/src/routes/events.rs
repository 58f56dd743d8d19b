//! GET /api/events: the live event stream of docs/review-service.md §6.
//!
//! A named `heartbeat` event opens the stream and is sent again after HEARTBEAT_SECS of
//! silence; every other frame is `id: <monotonic>` plus `data: <json with type>`. The `repo`
//! query keeps only that repo's events (an empty value means all). There is no replay:
//! `Last-Event-ID` is ignored. A subscriber that falls too far behind skips what it missed and
//! goes on (clients refetch on reconnect anyway, rule 4).

use crate::error::ApiError;
use crate::state::AppState;
use axum::Router;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::Response;
use axum::routing::get;
use bytes::Bytes;
use serde::Deserialize;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

pub(crate) fn router() -> Router<AppState> {
    Router::new().route("/api/events", get(stream))
}

/// Query of GET /api/events.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct EventsQuery {
    /// `owner/name`: only this repo's events.
    repo: Option<String>,
}

/// GET /api/events: `text/event-stream`; 400 `invalid_query` when the query string cannot be
/// read (a repeated `repo`).
#[utoipa::path(get, path = "/api/events", params(EventsQuery),
    responses((status = 200, description = "server-sent events: each unnamed frame's `data` is one LiveEvent (docs/review-service.md §6); named `heartbeat` frames carry `{}`",
            content_type = "text/event-stream", body = events::Payload<review_domain::ReviewRow, review_domain::RepoRow>),
        (status = 400, description = "the query string cannot be read", body = crate::error::ErrorBody)))]
pub(crate) async fn stream(
    State(app): State<AppState>,
    query: Result<Query<EventsQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = query?;
    let filter = q.repo.filter(|r| !r.is_empty());
    let rx = app.records.subscribe();
    let heartbeat = Duration::from_secs(app.config.heartbeat_secs.max(1));
    let opening = futures::stream::once(async {
        Ok::<Bytes, Infallible>(Bytes::from_static(events::heartbeat_frame().as_bytes()))
    });
    // State: the subscription, the filter, and when this client was last sent anything (events
    // of other repos do not count as activity for it).
    let start = (rx, filter, tokio::time::Instant::now());
    let frames = futures::stream::unfold(start, move |(mut rx, filter, last_sent)| async move {
        loop {
            let deadline = last_sent + heartbeat;
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Err(_) => {
                    let frame = Bytes::from_static(events::heartbeat_frame().as_bytes());
                    let now = tokio::time::Instant::now();
                    return Some((Ok::<Bytes, Infallible>(frame), (rx, filter, now)));
                }
                Ok(Ok(event)) => {
                    if filter.is_none() || event.repo.as_deref() == filter.as_deref() {
                        let now = tokio::time::Instant::now();
                        return Some((Ok(Bytes::from(event.to_sse())), (rx, filter, now)));
                    }
                }
                Ok(Err(RecvError::Lagged(n))) => {
                    tracing::debug!(missed = n, "event-stream subscriber lagged");
                }
                Ok(Err(RecvError::Closed)) => return None,
            }
        }
    });
    Ok(event_stream_response(Body::from_stream(
        futures::StreamExt::chain(opening, frames),
    )))
}

/// A 200 `text/event-stream` response around `body`, uncached and unbuffered by proxies
/// (`x-accel-buffering: no`); shared by the event stream and the chat stream.
pub(crate) fn event_stream_response(body: Body) -> Response {
    let mut resp = Response::new(body);
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/event-stream"),
    );
    h.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    h.insert("x-accel-buffering", header::HeaderValue::from_static("no"));
    resp
}
