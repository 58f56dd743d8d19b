//! image-server: an image CDN origin (docs/image-service.md; docs/architecture.md, Image
//! server decisions).
//!
//! [`serve`] wires the object store, the result cache and the routes under one middleware
//! stack and serves until `shutdown` resolves. Tests start it on `127.0.0.1:0`.

mod auth;
mod cache;
mod config;
mod error;
mod failure;
mod metrics;
mod presets;
mod remote;
mod routes;
mod signing;
mod source;
mod storage;
mod transform;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use object_store::ObjectStore;
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

pub use config::Config;
pub use error::{ApiError, ErrorCode};
pub use storage::open as open_store;

/// The version reported by `/admin/health` (docs/image-service.md §9).
pub const VERSION: &str = "2.0.0";

/// Shared state of every handler.
pub(crate) struct App {
    pub config: Config,
    pub store: Arc<dyn ObjectStore>,
    pub cache: cache::ResultCache,
    pub api_key: secrecy::SecretString,
    /// Set when resize URLs must be signed (URL_SIGNING_KEY).
    pub signer: Option<signing::UrlSigner>,
    /// Set when imgproxy URLs must be signed (IMGPROXY_KEY and IMGPROXY_SALT).
    pub imgproxy: Option<routes::imgproxy::Signer>,
    /// Set when thumbor URLs must be signed (THUMBOR_SECURITY_KEY).
    pub thumbor: Option<routes::thumbor::Signer>,
    pub limits: image_pipeline::Limits,
    /// What a resize URL is held to: `limits` when URLs must be signed (every served URL was
    /// verified), `limits` with the MAX_UNSIGNED_* caps when they are open (README "Deployment").
    pub resize_limits: image_pipeline::Limits,
    /// The scheduling policy of every resize miss and upload check (admission, the HEIF gate,
    /// slots, metrics).
    pub transforms: transform::Transforms,
    /// Counters, histograms and gauges for the metrics listener.
    pub metrics: Arc<metrics::Metrics>,
    /// Short-lived memory of source ETags (path -> etag), so cache hits skip the store.
    pub etags: moka::future::Cache<String, String>,
    /// The remote source fetcher, when ALLOWED_SOURCES names some (docs/image-service.md,
    /// "Remote sources").
    pub remote: Option<remote::RemoteSources>,
    /// Named parameter sets of PRESETS_FILE, and whether URLs may name only them.
    pub presets: presets::Presets,
    /// `Cache-Control` of an answer whose URL does not pin its source: `public,
    /// max-age=CACHE_MAX_AGE_SECS`, made once.
    pub cache_control: axum::http::HeaderValue,
}

pub(crate) type AppState = Arc<App>;

/// Builds the router (exposed for in-process tests) from a ready configuration.
///
/// # Errors
/// The store cannot be opened, or the API key file cannot be read or written.
pub fn router(config: Config) -> anyhow::Result<Router> {
    build(config).map(|(router, _)| router)
}

/// The public router and the state it shares with the metrics listener.
fn build(config: Config) -> anyhow::Result<(Router, AppState)> {
    let store = storage::open(&config.storage_url, &config.storage_options)?;
    let api_key = auth::load_or_generate(&config)?;
    let signer = signing::UrlSigner::from_keys(config.url_signing_key.as_ref());
    if let Some(s) = &signer {
        tracing::info!(keys = s.key_count(), "resize URLs must be signed");
    }
    let imgproxy = routes::imgproxy::Signer::from_config(&config)?;
    let thumbor = routes::thumbor::Signer::new(
        config.thumbor_security_key.as_ref(),
        config.thumbor_allow_unsafe,
    );
    tracing::info!(
        imgproxy_prefix = %config.imgproxy_prefix,
        imgproxy_signed = imgproxy.is_some(),
        thumbor_prefix = %config.thumbor_prefix,
        thumbor_signed = thumbor.is_some(),
        "imgproxy and thumbor URLs served"
    );
    if config.imgproxy_prefix == config.thumbor_prefix {
        anyhow::bail!(
            "IMGPROXY_PREFIX and THUMBOR_PREFIX are both {:?}: one URL cannot be both",
            config.imgproxy_prefix
        );
    }
    let cache = cache::ResultCache::new(
        Arc::clone(&store),
        config.cache_max_bytes,
        Duration::from_secs(config.cache_ttl_secs.max(1)),
        config.storage_cache,
        Duration::from_millis(config.source_etag_ttl_ms.max(1)),
    );
    let workers = if config.transform_concurrency == 0 {
        std::thread::available_parallelism().map_or(2, std::num::NonZero::get)
    } else {
        config.transform_concurrency
    };
    let queue_size = config.transform_queue_size;
    let limits = image_pipeline::Limits {
        max_output_dimension: config.max_output_dimension,
        max_source_pixels: config.max_source_pixels,
        webp_effort: config.webp_effort,
        avif_max_pixels: config.avif_max_pixels,
        max_enlarge: None,
        max_grown_output_pixels: None,
        max_animation_frames: config.max_animation_frames,
        max_request_bytes: config.max_request_bytes,
        max_request_pixel_ops: config.max_request_pixel_ops,
        max_animation_output_pixels: config.max_animation_output_pixels,
        auto_quality_target: config.auto_quality_target,
    };
    let resize_limits = if signer.is_some() {
        limits
    } else {
        let caps = unsigned_caps(&config, limits);
        tracing::info!(
            max_enlarge = ?caps.max_enlarge,
            max_grown_output_pixels = ?caps.max_grown_output_pixels,
            "resize URLs are unsigned: enlargement and grown outputs are capped"
        );
        caps
    };
    let presets = presets::Presets::load(
        config.presets_file.as_deref(),
        config.presets_only,
        &resize_limits,
    )?;
    if !presets.is_empty() {
        tracing::info!(
            presets = presets.len(),
            only = config.presets_only,
            "resize presets loaded"
        );
    }
    let cache_control = axum::http::HeaderValue::from_str(&format!(
        "public, max-age={}",
        config.cache_max_age_secs
    ))
    .context("CACHE_MAX_AGE_SECS")?;
    let etags = moka::future::Cache::builder()
        .max_capacity(100_000)
        .time_to_live(Duration::from_millis(config.source_etag_ttl_ms.max(1)))
        .build();
    let remote = remote::RemoteSources::new(&config).context("ALLOWED_SOURCES")?;
    // Base64 JSON bodies are 4/3 of the image; the handler enforces the decoded limit (413).
    let body_limit = routes::images::raw_body_limit(config.max_upload_bytes);
    let timeout_secs = config.request_timeout_secs;
    let metrics = Arc::new(metrics::Metrics::new());
    let state: AppState = Arc::new(App {
        config,
        store,
        cache,
        api_key,
        signer,
        imgproxy,
        thumbor,
        limits,
        resize_limits,
        transforms: transform::Transforms::new(workers, queue_size, Arc::clone(&metrics)),
        metrics,
        etags,
        remote,
        presets,
        cache_control,
    });
    let trace = TraceLayer::new_for_http().make_span_with(|req: &Request| {
        let route = req
            .extensions()
            .get::<MatchedPath>()
            .map_or(req.uri().path(), MatchedPath::as_str);
        tracing::info_span!("request", method = %req.method(), route = %route)
    });
    let router = routes::images::router()
        .merge(routes::admin::router())
        .merge(routes::info::router())
        .merge(compat_routes(&state.config))
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .with_state(Arc::clone(&state))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            metrics::track,
        ))
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn_with_state(timeout_secs, deadline))
        .layer(CatchPanicLayer::custom(
            |_: Box<dyn std::any::Any + Send>| {
                use axum::response::IntoResponse;
                ApiError::Internal("handler panicked".into()).into_response()
            },
        ))
        .layer(trace);
    Ok((router, state))
}

/// `limits` with MAX_UNSIGNED_ENLARGE and MAX_UNSIGNED_OUTPUT_PIXELS (0: no limit), for
/// unsigned resize URLs.
pub(crate) fn unsigned_caps(
    config: &Config,
    limits: image_pipeline::Limits,
) -> image_pipeline::Limits {
    image_pipeline::Limits {
        max_enlarge: (config.max_unsigned_enlarge > 0.0).then_some(config.max_unsigned_enlarge),
        max_grown_output_pixels: (config.max_unsigned_output_pixels > 0)
            .then_some(config.max_unsigned_output_pixels),
        ..limits
    }
}

/// The imgproxy and thumbor routes under their prefixes; a root prefix (`""`) takes every GET
/// path no other route answers (docs/image-service.md, "Moving from imgproxy / thumbor").
fn compat_routes(config: &Config) -> Router<AppState> {
    use axum::extract::State;
    use axum::http::{HeaderMap, Uri};
    use axum::routing::get;
    use routes::compat::{Kind, handle};
    let at = |prefix: &str| format!("{prefix}/{{*rest}}");
    let route = |kind: Kind| {
        get(
            move |state: State<AppState>, uri: Uri, headers: HeaderMap, request: Request| {
                handle(kind, state, uri, headers, request)
            },
        )
    };
    Router::new()
        .route(&at(&config.imgproxy_prefix), route(Kind::Imgproxy))
        .route(&at(&config.thumbor_prefix), route(Kind::Thumbor))
}

/// Middleware: fixes the request's [`transform::Deadline`] (REQUEST_TIMEOUT_SECS from now) as
/// it arrives, hands it to the handlers in the request's extensions (a transformation the
/// request starts is cancelled at the same instant), and answers 503 `{"error"}` when the
/// request is not done by then.
async fn deadline(
    axum::extract::State(timeout_secs): axum::extract::State<u64>,
    mut request: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let deadline = transform::Deadline::from_now(timeout_secs);
    request.extensions_mut().insert(deadline);
    let at = tokio::time::Instant::from_std(deadline.at);
    match tokio::time::timeout_at(at, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::Timeout(deadline.secs).into_response(),
    }
}

/// 404 `{"error"}` for a path that is no endpoint (docs/image-service.md §7: errors are JSON).
async fn no_route() -> ApiError {
    ApiError::NotFound("no such endpoint (see README for the API)".into())
}

/// 405 `{"error"}` for an endpoint asked with another method.
async fn wrong_method() -> ApiError {
    ApiError::MethodNotAllowed
}

/// Serves image-server on `listener` until `shutdown` resolves, then drains in-flight
/// requests (graceful shutdown); with METRICS_LISTEN set, also binds and serves the metrics
/// listener.
///
/// # Errors
/// Setup failures (see [`router`]), a metrics address that cannot be bound, or a failing
/// listener.
pub async fn serve<F>(config: Config, listener: TcpListener, shutdown: F) -> anyhow::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    let metrics = match config.metrics_listen {
        Some(addr) => Some(
            TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding METRICS_LISTEN {addr}"))?,
        ),
        None => None,
    };
    serve_with_metrics(config, listener, metrics, shutdown).await
}

/// [`serve`] with the metrics listener already bound (`None`: no metrics listener, whatever
/// METRICS_LISTEN says). `GET /metrics` there answers until the public listener has drained.
///
/// # Errors
/// Setup failures (see [`router`]) or a failing listener.
pub async fn serve_with_metrics<F>(
    config: Config,
    listener: TcpListener,
    metrics: Option<TcpListener>,
    shutdown: F,
) -> anyhow::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    let storage = storage_label(&config.storage_url);
    let (app, state) = build(config)?;
    let addr = listener.local_addr().context("reading the bound address")?;
    let metrics_task = match metrics {
        Some(metrics) => {
            let at = metrics
                .local_addr()
                .context("reading the metrics address")?;
            tracing::info!(addr = %at, "metrics at /metrics");
            let router = metrics::router(Arc::clone(&state));
            Some(tokio::spawn(async move {
                if let Err(e) = axum::serve(metrics, router).await {
                    tracing::error!(error = %e, "metrics listener failed");
                }
            }))
        }
        None => None,
    };
    tracing::info!(%addr, %storage, version = VERSION, "image-server listening");
    let drain = Duration::from_secs(state.config.shutdown_drain_secs);
    let signalled = Arc::new(tokio::sync::Notify::new());
    let graceful = {
        let signalled = Arc::clone(&signalled);
        async move {
            shutdown.await;
            signalled.notify_one();
        }
    };
    let serving = axum::serve(listener, app)
        .with_graceful_shutdown(graceful)
        .into_future();
    tokio::pin!(serving);
    // The drain is bounded: after SHUTDOWN_DRAIN_SECS the running transformations are
    // cancelled (their requests answered 503), and a moment later serving stops whatever is
    // left (a connection that never closes).
    let served = tokio::select! {
        served = &mut serving => served,
        () = async {
            signalled.notified().await;
            tokio::time::sleep(drain).await;
        } => {
            tracing::warn!(
                drain_secs = drain.as_secs(),
                "drain timeout: cancelling the transformations still running"
            );
            state.transforms.cancel_all();
            tokio::time::timeout(Duration::from_secs(2), &mut serving)
                .await
                .unwrap_or(Ok(()))
        }
    }
    .context("serving HTTP");
    state.cache.flush(drain.min(Duration::from_secs(30))).await;
    if let Some(task) = metrics_task {
        task.abort();
    }
    served
}

/// The scheme and location of the store, for logs (S3 credentials live in env vars, never here).
fn storage_label(url: &str) -> String {
    url.split('?').next().unwrap_or(url).to_owned()
}
