//! Prometheus metrics, served on their own listener when METRICS_LISTEN is set.
//!
//! Not in the spec: what imgproxy (`IMGPROXY_PROMETHEUS_BIND`) and thumbor give operators.
//! `GET http://METRICS_LISTEN/metrics` answers OpenMetrics text (which Prometheus scrapes);
//! the separate listener keeps the numbers off the public port behind the CDN. Families, all
//! prefixed `image_server_`:
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `http_requests_total` | counter | method, route, status | answered requests; `route` is the route template (`other` for none), never the raw path |
//! | `http_request_duration_seconds` | histogram | method, route | time to the response head |
//! | `resize_results_total` | counter | cache (`hit`, `miss`) | resize answers, as in X-Cache |
//! | `transform_duration_seconds` | histogram | source, output | decode to encode of one miss, on a blocking thread |
//! | `transforms_waiting` | gauge | | misses and upload checks queued for a transform slot (or the HEIF gate), `transform` |
//! | `transforms_running` | gauge | | transformations and upload checks running now |
//! | `cache_entries`, `cache_bytes` | gauge | | the memory tier, read at scrape time |

use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::AppState;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: &'static str,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: &'static str,
    route: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CacheLabels {
    cache: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransformLabels {
    source: &'static str,
    output: &'static str,
}

/// 1 ms to about 33 s, doubling.
fn duration_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// Every metric of one server, and the registry that encodes them.
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_seconds: Family<RouteLabels, Histogram, fn() -> Histogram>,
    results: Family<CacheLabels, Counter>,
    transform_seconds: Family<TransformLabels, Histogram, fn() -> Histogram>,
    waiting: Gauge,
    running: Gauge,
    cache_entries: Gauge,
    cache_bytes: Gauge,
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("image_server");
        let requests = Family::<RequestLabels, Counter>::default();
        let request_seconds =
            Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                duration_buckets,
            );
        let results = Family::<CacheLabels, Counter>::default();
        let transform_seconds =
            Family::<TransformLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                duration_buckets,
            );
        let (waiting, running) = (Gauge::default(), Gauge::default());
        let (cache_entries, cache_bytes) = (Gauge::default(), Gauge::default());
        registry.register("http_requests", "Answered HTTP requests", requests.clone());
        registry.register(
            "http_request_duration_seconds",
            "Time from request to response head",
            request_seconds.clone(),
        );
        registry.register(
            "resize_results",
            "Resize answers by cache outcome (X-Cache)",
            results.clone(),
        );
        registry.register(
            "transform_duration_seconds",
            "Decode-to-encode time of one transformation",
            transform_seconds.clone(),
        );
        registry.register(
            "transforms_waiting",
            "Transformations queued for a slot",
            waiting.clone(),
        );
        registry.register(
            "transforms_running",
            "Transformations running",
            running.clone(),
        );
        registry.register(
            "cache_entries",
            "Results in the memory cache",
            cache_entries.clone(),
        );
        registry.register(
            "cache_bytes",
            "Bytes of results in the memory cache",
            cache_bytes.clone(),
        );
        Self {
            registry,
            requests,
            request_seconds,
            results,
            transform_seconds,
            waiting,
            running,
            cache_entries,
            cache_bytes,
        }
    }

    /// Counts one resize answer: `hit` when it came from a cache tier.
    pub(crate) fn resize_result(&self, hit: bool) {
        let cache = if hit { "hit" } else { "miss" };
        self.results.get_or_create(&CacheLabels { cache }).inc();
    }

    /// Records one finished transformation of a `source` picture into `output`.
    pub(crate) fn transformed(&self, source: &'static str, output: &'static str, started: Instant) {
        self.transform_seconds
            .get_or_create(&TransformLabels { source, output })
            .observe(started.elapsed().as_secs_f64());
    }

    /// Marks a transformation as queued until the guard is turned into [`Self::running`] or
    /// dropped (the request went away).
    pub(crate) fn waiting(&self) -> GaugeGuard {
        GaugeGuard::new(self.waiting.clone())
    }

    /// Marks a transformation as running until the guard is dropped.
    pub(crate) fn running(&self) -> GaugeGuard {
        GaugeGuard::new(self.running.clone())
    }
}

/// Holds a gauge one higher while it lives.
pub(crate) struct GaugeGuard(Gauge);

impl GaugeGuard {
    fn new(gauge: Gauge) -> Self {
        gauge.inc();
        Self(gauge)
    }
}

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The routes of the public router, so labels are static strings (no allocation per request).
const ROUTES: [&str; 4] = [
    "/images/resize/{*path}",
    "/images/upload",
    "/admin/health",
    "/admin/cache/storage/clear",
];

/// Middleware: counts and times every routed request by method, route template and status.
pub(crate) async fn track(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = match *request.method() {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        _ => "other",
    };
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .and_then(|m| ROUTES.into_iter().find(|r| *r == m.as_str()))
        .unwrap_or("other");
    let response = next.run(request).await;
    let status = response.status().as_u16();
    app.metrics
        .request_seconds
        .get_or_create(&RouteLabels { method, route })
        .observe(started.elapsed().as_secs_f64());
    app.metrics
        .requests
        .get_or_create(&RequestLabels {
            method,
            route,
            status,
        })
        .inc();
    response
}

/// The router of the metrics listener: `GET /metrics`.
pub(crate) fn router(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .with_state(state)
}

/// OpenMetrics text of every family, with the memory cache's size read now.
async fn scrape(State(app): State<AppState>) -> Response {
    let (entries, bytes) = app.cache.stats().await;
    let m = &app.metrics;
    m.cache_entries
        .set(i64::try_from(entries).unwrap_or(i64::MAX));
    m.cache_bytes.set(i64::try_from(bytes).unwrap_or(i64::MAX));
    let mut body = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut body, &m.registry) {
        return crate::ApiError::Internal(format!("encoding metrics: {e}")).into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
        )],
        body,
    )
        .into_response()
}
