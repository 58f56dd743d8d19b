//! image-server binary: parse the configuration, start tracing, serve until SIGINT/SIGTERM.

use clap::Parser;
use image_server::{Config, serve};
use tracing_subscriber::EnvFilter;

fn main() -> anyhow::Result<()> {
    // Before the runtime starts its threads, so that every heap they create sees it.
    let mmap_threshold = tune_allocator();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(run(mmap_threshold));
    // Dropping the runtime would wait for every blocking thread: a transformation cancelled
    // at the drain timeout stops at its next stage, but one stage can be long. Give them a
    // moment, then exit anyway (the process ends with main).
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    result
}

async fn run(mmap_threshold: Option<usize>) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        // Colour only on a terminal: log files and journald get plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    if let Some(bytes) = mmap_threshold {
        tracing::debug!(bytes, "glibc malloc: mmap threshold set");
    }
    let config = Config::parse();
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    serve(config, listener, shutdown_signal()).await
}

/// The mmap threshold image-server sets for glibc's malloc when MALLOC_MMAP_THRESHOLD_ is not
/// set: 2 MiB, in bytes. glibc's default is dynamic: it starts at 128 KiB and rises to the size
/// of the largest buffer freed (up to 32 MiB), after which full-size decoded pictures stay in
/// per-thread heaps. Measured at concurrency 2 (`bench/image/RESULTS.md`; apps/image-server
/// README, "Configuration"): peak RSS 267 MB on a 12 MP HEIC and 114-135 MB on a 9 MP PNG with
/// glibc's default, 72-77 and 70-75 MB with 2 MiB. At 1 MiB the buffers of a 9 MP JPEG request
/// (source bytes, 1/4-scale decode, output) would be mapped afresh each time: 10% of the JPEG
/// rate.
const MMAP_THRESHOLD: usize = 2 * 1024 * 1024;

/// Sets glibc's mmap threshold to [`MMAP_THRESHOLD`] unless MALLOC_MMAP_THRESHOLD_ is set (then
/// glibc has already applied the operator's value). Returns the threshold it set, if any. Other
/// C libraries: nothing to do.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_allocator() -> Option<usize> {
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some() {
        return None;
    }
    let value = libc::c_int::try_from(MMAP_THRESHOLD).ok()?;
    // SAFETY: mallopt only changes malloc's tuning parameters, under malloc's own lock; it is
    // called before any other thread of this process exists.
    #[expect(
        unsafe_code,
        reason = "mallopt is a C call; the SAFETY comment above gives the conditions it needs"
    )]
    let ok = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, value) };
    (ok == 1).then_some(MMAP_THRESHOLD)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_allocator() -> Option<usize> {
    None
}

/// Resolves on Ctrl-C or SIGTERM (container stop), starting the graceful shutdown.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down: draining in-flight requests");
}
