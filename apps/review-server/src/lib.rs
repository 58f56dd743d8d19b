//! review-server: reviews GitHub pull requests with an LLM agent and records every review,
//! finding, cost and token (docs/review-service.md). `main.rs` only wires; everything else
//! is here so tests can start the real server on port 0 through [`serve`].
//!
//! The modules, lowest first; each imports only modules of the rows above it
//! (`tests/architecture.rs` fails on an import circle):
//! - plain parts: [`config`], [`records`] (the one writer of review, repo and finding rows),
//!   [`job`], [`run_settings`], [`models`], [`guard`], [`auth`], [`error`];
//! - [`state`]: the one app struct that holds them;
//! - the work: [`review`] (a PR's review, by stage), [`improver`], [`skills`], [`cli`];
//! - [`routes`]: HTTP, one module per feature.

pub(crate) mod auth;
pub mod cli;
pub mod config;
pub(crate) mod error;
pub mod eval;
pub(crate) mod forges;
pub(crate) mod guard;
pub(crate) mod improver;
pub(crate) mod job;
pub(crate) mod models;
pub(crate) mod records;
pub(crate) mod review;
pub mod routes;
pub(crate) mod run_settings;
pub(crate) mod skills;
pub(crate) mod state;

use crate::config::Config;
use crate::records::Records;
use crate::state::{App, AppState, CancelReason};
use agent::{Catalog, TranscriptStore};
use anyhow::Context;
use events::EventBus;
use forge::{AppCredentials, GitHubForge};
use git_cache::GitCache;
use review_store::Store;
use secrecy::{ExposeSecret, SecretString};
use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::task::TaskTracker;

/// How long shutdown waits for cancelled reviews to record their end state.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Build the application: data folders, database (migrated), forge client, git cache, and this
/// replica's part in the work queue (docs/architecture.md, "Many replicas": reviews a dead
/// process left running are failed once its lease lapses, waiting ones are run).
pub async fn build(config: Config) -> anyhow::Result<AppState> {
    config.check_sign_in()?;
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("cannot create DATA_DIR {}", config.data_dir.display()))?;
    let records = Records::new(Store::open(&config.database_url()).await?, EventBus::new());
    let replica = replica_name(&config.data_dir);
    records.fan_out(replica.clone());
    if config.webhook_secret.is_none() {
        tracing::warn!(
            "FORGE_WEBHOOK_SECRET is not set: every webhook delivery will be rejected with 401"
        );
    }
    let github = GitHubForge::new(&config.forge_api_url, app_credentials(&config)?)?;
    let gitlab = gitlab_forge(&config)?;
    let forge = forge::Forges::new(
        Arc::new(github),
        gitlab.clone().map(|g| g as Arc<dyn forge::Forge>),
    );
    let secret: [u8; 32] = rand::random();
    let mirror = transcript_mirror(&records);
    let auth = auth::Auth::from_config(&config).map(Arc::new);
    let exposure = config.api_exposure(auth.is_some());
    log_exposure(exposure, &config);
    let hosts = guard::HostPolicy::new(config.auth_url.as_deref(), &config.allowed_hosts)
        .with_limits(
            exposure == config::ApiExposure::Refused,
            Duration::from_secs(config.body_timeout_secs.max(1)),
            config.webhook_max_concurrent_bodies,
        )
        .with_gitlab_token(config.gitlab_webhook_secret.as_ref());
    let app = App {
        records,
        forge: Arc::new(forge),
        gitlab,
        git: Arc::new(GitCache::new(config.data_dir.join("repos"))),
        catalog: Catalog::bundled(),
        models: models::ModelCatalog::new(&config.models_catalog_url),
        transcripts: TranscriptStore::new(config.data_dir.join("sessions")).with_mirror(mirror),
        internal_secret: hex::encode(secret),
        live: Mutex::new(HashMap::new()),
        run_slots: Arc::new(Semaphore::new(config.max_concurrent_reviews.max(1))),
        tasks: TaskTracker::new(),
        shutdown: agent::CancellationToken::new(),
        replica,
        queue_wake: tokio::sync::Notify::new(),
        inbox_wake: tokio::sync::Notify::new(),
        queue_marks: tokio::sync::RwLock::new(()),
        auth,
        chat_turns: Arc::new(Semaphore::new(config.chat_max_concurrent.max(1))),
        hosts,
        config,
    };
    let app = Arc::new(app);
    sweep_worktrees(&app.worktrees_dir());
    review::sweep_orphans(&app).await;
    review::spawn_replica_tasks(&app);
    Ok(app)
}

/// GitLab's client when GITLAB_URL is set (docs/review-service.md, "GitLab"). Errors: a
/// GitLab setting without GITLAB_URL, or GITLAB_URL without GITLAB_TOKEN.
fn gitlab_forge(config: &Config) -> anyhow::Result<Option<Arc<forge::gitlab::GitLabForge>>> {
    let set = |v: Option<&str>| v.is_some_and(|v| !v.trim().is_empty());
    let url = config
        .gitlab_url
        .as_deref()
        .filter(|u| !u.trim().is_empty());
    let token = config
        .gitlab_token
        .clone()
        .filter(|t| set(Some(t.expose_secret())));
    let Some(url) = url else {
        let stray = [
            ("GITLAB_TOKEN", token.is_some()),
            (
                "GITLAB_WEBHOOK_SECRET",
                set(config
                    .gitlab_webhook_secret
                    .as_ref()
                    .map(|s| s.expose_secret())),
            ),
            ("GITLAB_GIT_URL", set(config.gitlab_git_url.as_deref())),
            (
                "GITLAB_OAUTH_CLIENT_ID",
                set(config.gitlab_oauth_client_id.as_deref()),
            ),
        ];
        if let Some((name, _)) = stray.iter().find(|(_, on)| *on) {
            anyhow::bail!(
                "{name} is set but GITLAB_URL is not: set GITLAB_URL to the GitLab instance (https://gitlab.com or your own)"
            );
        }
        return Ok(None);
    };
    let Some(token) = token else {
        anyhow::bail!(
            "GITLAB_URL is set but GITLAB_TOKEN is not: GitLab needs an access token with the api scope"
        );
    };
    if config.gitlab_webhook_secret.is_none() {
        tracing::warn!(
            "GITLAB_WEBHOOK_SECRET is not set: every GitLab delivery will be rejected with 401"
        );
    }
    Ok(Some(Arc::new(forge::gitlab::GitLabForge::new(url, token)?)))
}

/// The boot log line saying how `/api` is exposed (docs/security.md, "Sign-in").
fn log_exposure(exposure: config::ApiExposure, config: &Config) {
    let listen = config.listen;
    match exposure {
        config::ApiExposure::Gated => {
            tracing::info!(%listen, "dashboard API: OAuth gate on (sign-in required)")
        }
        config::ApiExposure::OpenOnLoopback => tracing::info!(
            %listen,
            "dashboard API: OAuth gate off, open on loopback only"
        ),
        config::ApiExposure::OpenByOptIn => tracing::warn!(
            %listen,
            "dashboard API: OAuth gate off, open to the network by ALLOW_OPEN_API=true"
        ),
        config::ApiExposure::Refused => tracing::warn!(
            %listen,
            "dashboard API: OAuth gate off on a non-loopback LISTEN: every /api request is refused \
             (403 open_api_refused); set AUTH_SECRET, FORGE_APP_CLIENT_ID and \
             FORGE_APP_CLIENT_SECRET, or ALLOW_OPEN_API=true"
        ),
    }
}

/// This replica's name in the work queue's leases: `<host>-<random>`, kept in
/// DATA_DIR/replica-id so that after a kill the restarted process knows which runs were its own
/// and fails them at boot ("interrupted by restart") instead of waiting for their
/// leases to lapse. The file is locked for the life of the process: a second process started
/// on the same DATA_DIR (never a supported set-up) gets a name of its own for this run, with a
/// warning, so two processes never share leases.
fn replica_name(data_dir: &std::path::Path) -> String {
    let fresh = || {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty() && h.len() <= 64)
            .unwrap_or_else(|| "replica".to_owned());
        let suffix: u64 = rand::random();
        format!("{host}-{suffix:016x}")
    };
    let path = data_dir.join("replica-id");
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path);
    let mut file = match opened {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot open the replica id file; using a new id for this run");
            return fresh();
        }
    };
    if file.try_lock().is_err() {
        tracing::warn!(path = %path.display(), "another process holds this DATA_DIR's replica id; using a new id for this run");
        return fresh();
    }
    use std::io::{Read, Seek, Write};
    let mut kept = String::new();
    let _ = file.read_to_string(&mut kept);
    let kept = kept.trim();
    let valid = !kept.is_empty()
        && kept.len() <= 100
        && kept
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
    let name = if valid {
        kept.to_owned()
    } else {
        let name = fresh();
        let written = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(format!("{name}\n").as_bytes()))
            .and_then(|()| file.sync_all());
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "cannot keep the replica id");
        }
        name
    };
    // The lock lives as long as the process: the descriptor is never closed.
    std::mem::forget(file);
    name
}

/// Writes every transcript document to the database too, so any replica serves it
/// (GET /api/reviews/:id/session; docs/architecture.md, "Many replicas").
fn transcript_mirror(records: &Records) -> agent::TranscriptMirror {
    let store = records.store.clone();
    Arc::new(move |session_id: String, doc: String| {
        let store = store.clone();
        Box::pin(async move {
            if let Err(e) = store
                .save_transcript(&session_id, &doc, records::now())
                .await
            {
                tracing::warn!(session_id, error = %e, "cannot store the transcript in the database");
            }
        })
    })
}

/// Removes every checkout left under DATA_DIR/worktrees by a process that died mid-review
/// at boot: no review is running, so none of them is in use. Failures are
/// logged, never fatal.
fn sweep_worktrees(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut removed = 0usize;
    for entry in entries.flatten() {
        let path = entry.path();
        let result = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        match result {
            Ok(()) => removed += 1,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove a leftover worktree")
            }
        }
    }
    if removed > 0 {
        tracing::warn!(
            count = removed,
            "worktrees left by an earlier process removed"
        );
    }
}

fn app_credentials(config: &Config) -> anyhow::Result<Option<AppCredentials>> {
    let Some(app_id) = config.app_id.clone() else {
        return Ok(None);
    };
    let pem = match (&config.app_private_key, &config.app_private_key_path) {
        (Some(pem), _) => pem.clone(),
        (None, Some(path)) => {
            SecretString::from(std::fs::read_to_string(path).with_context(|| {
                format!("cannot read FORGE_APP_PRIVATE_KEY_PATH {}", path.display())
            })?)
        }
        (None, None) => anyhow::bail!(
            "FORGE_APP_ID is set but neither FORGE_APP_PRIVATE_KEY nor FORGE_APP_PRIVATE_KEY_PATH"
        ),
    };
    Ok(Some(AppCredentials {
        app_id,
        private_key_pem: pem,
    }))
}

/// Serve on `listener` until `shutdown` resolves, then cancel running reviews (they are
/// recorded failed, never retried), wait up to 10 s for them to record it, and (SQLite) fold
/// the write-ahead log into the database file.
pub async fn serve(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let app = build(config).await?;
    tracing::info!(addr = %listener.local_addr()?, "review-server listening");
    let router = routes::router(app.clone());
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await?;
    app.shutdown.cancel();
    for id in app.live_ids() {
        app.cancel_run(id, CancelReason::Shutdown);
    }
    app.tasks.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, app.tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!("reviews still running at shutdown; they will be failed at next boot");
    }
    match app.records.store.checkpoint_at_shutdown().await {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!("part of the SQLite write-ahead log is left for the next start")
        }
        Err(e) => tracing::warn!(error = %e, "cannot checkpoint the SQLite write-ahead log"),
    }
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gitlab_setting_without_gitlab_url_or_a_url_without_a_token_refuses_to_start() {
        let mut c = Config::defaults();
        assert!(gitlab_forge(&c).unwrap().is_none(), "GitLab off by default");
        c.gitlab_webhook_secret = Some(SecretString::from("s".to_owned()));
        let e = gitlab_forge(&c).err().unwrap().to_string();
        assert!(
            e.starts_with("GITLAB_WEBHOOK_SECRET is set but GITLAB_URL is not"),
            "{e}"
        );
        c.gitlab_url = Some("https://gitlab.example.com".into());
        let e = gitlab_forge(&c).err().unwrap().to_string();
        assert!(
            e.starts_with("GITLAB_URL is set but GITLAB_TOKEN is not"),
            "{e}"
        );
        c.gitlab_token = Some(SecretString::from("glpat-x".to_owned()));
        assert!(gitlab_forge(&c).unwrap().is_some());
    }
}
