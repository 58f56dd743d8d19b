//! This replica's part in the durable work queue (docs/architecture.md, "Many replicas"):
//!
//! - the promoter: turns the webhook inbox's accepted deliveries into queued reviews;
//! - the claim loop: with a free MAX_CONCURRENT_REVIEWS slot, claim the oldest waiting review
//!   (any replica may have queued it) and run it; woken by a local enqueue, by PostgreSQL's
//!   NOTIFY on `review_queue`, or every QUEUE_POLL_MS;
//! - the renewer: renews this replica's leases every third of LEASE_SECS (a run whose lease
//!   was lost, or that another replica asked to end, is cancelled here);
//! - the keeper: fails the reviews of replicas whose lease lapsed ("interrupted", never
//!   retried), and runs the automatic retries that are due;
//! - the listener (PostgreSQL): the other replicas' events for `/api/events`, their cancels,
//!   and queue wake-ups.

use super::retry::run_due_retry;
use crate::records::{EVENTS_CHANNEL, now_ms};
use crate::state::{AppState, CancelReason};
use std::collections::HashMap;
use std::time::Duration;

/// The channel of cancels sent to the replica that runs a review: `{"cancel": id, "reason":
/// "stopped" | "superseded"}`.
pub(crate) const CONTROL_CHANNEL: &str = "review_control";
/// How often a replica forgets webhook delivery ids older than their 24-hour window.
const PRUNE_EVERY: Duration = Duration::from_secs(60);
/// The channel migration postgres/0003 notifies when a review is queued.
const QUEUE_CHANNEL: &str = "review_queue";
/// The error of a review whose replica stopped renewing its lease.
const LAPSED: &str = "interrupted: its replica stopped renewing its lease";
/// The error of a review this replica ran when it was killed, or of an unfinished review that
/// no queue row runs at boot (left by a version without the queue, or written by hand).
const ORPHANED: &str = "interrupted by restart";

/// Starts the claim loop, the lease renewer, the keeper and (PostgreSQL) the listener of this
/// replica.
pub(crate) fn spawn_replica_tasks(app: &AppState) {
    tokio::spawn(claim_loop(app.clone()));
    tokio::spawn(renewer(app.clone()));
    tokio::spawn(promoter(app.clone()));
    tokio::spawn(keeper(app.clone()));
    tokio::spawn(listener(app.clone()));
}

fn lease_ms(app: &AppState) -> i64 {
    i64::try_from(app.config.lease_secs.max(1).saturating_mul(1000)).unwrap_or(i64::MAX / 2)
}

fn poll(app: &AppState) -> Duration {
    Duration::from_millis(app.config.queue_poll_ms.max(10))
}

async fn claim_loop(app: AppState) {
    loop {
        let permit = tokio::select! {
            p = app.run_slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
            _ = app.shutdown.cancelled() => return,
        };
        let claimed = loop {
            if app.shutdown.is_cancelled() {
                return;
            }
            match app
                .records
                .claim(&app.replica, now_ms().plus_millis(lease_ms(&app)))
                .await
            {
                Ok(Some(c)) => break c,
                Ok(None) => {}
                Err(e) => tracing::error!(error = %e, "cannot claim from the work queue"),
            }
            tokio::select! {
                _ = app.queue_wake.notified() => {}
                _ = tokio::time::sleep(poll(&app)) => {}
                _ = app.shutdown.cancelled() => return,
            }
        };
        tracing::debug!(review_id = claimed.review_id, "claimed");
        app.tasks
            .spawn(super::run_claimed(app.clone(), claimed, permit));
    }
}

/// Turns the webhook inbox's rows into reviews (docs/architecture.md, "The webhook inbox"):
/// at once when this replica accepted a delivery, and every QUEUE_POLL_MS for the rows a
/// replica that died after its reply left behind.
async fn promoter(app: AppState) {
    loop {
        super::drain_inbox(&app).await;
        tokio::select! {
            _ = app.inbox_wake.notified() => {}
            _ = tokio::time::sleep(poll(&app)) => {}
            _ = app.shutdown.cancelled() => return,
        }
    }
}

/// Renews this replica's leases every third of LEASE_SECS, in a task of its own so that slow
/// housekeeping never delays a renewal.
async fn renewer(app: AppState) {
    let renew_every = Duration::from_millis(u64::try_from(lease_ms(&app) / 3).unwrap_or(1000));
    loop {
        renew(&app).await;
        tokio::select! {
            _ = tokio::time::sleep(renew_every) => {}
            _ = app.shutdown.cancelled() => return,
        }
    }
}

/// Every QUEUE_POLL_MS fails the reviews of lapsed leases, runs the due retries and (SQLite)
/// checkpoints the write-ahead log, and every minute forgets old delivery ids.
async fn keeper(app: AppState) {
    let mut last_prune: Option<tokio::time::Instant> = None;
    loop {
        if last_prune.is_none_or(|t| t.elapsed() >= PRUNE_EVERY) {
            if let Err(e) = app
                .records
                .store
                .prune_deliveries(crate::records::now())
                .await
            {
                tracing::warn!(error = %e, "cannot forget old webhook delivery ids");
            }
            last_prune = Some(tokio::time::Instant::now());
        }
        reap(&app).await;
        due_retries(&app).await;
        if let Err(e) = app.records.store.checkpoint().await {
            tracing::warn!(error = %e, "cannot checkpoint the SQLite write-ahead log");
        }
        tokio::select! {
            _ = tokio::time::sleep(poll(&app)) => {}
            _ = app.shutdown.cancelled() => return,
        }
    }
}

/// Renews this replica's leases; cancels the runs that lost theirs or were asked to end.
async fn renew(app: &AppState) {
    // The runs live before the renewal: a run claimed while the renewal is on its way is not
    // in the renewal's answer yet, and must not be taken for a run whose lease was lost (its
    // claim committed before it became live, so a later renewal sees it).
    let live_before = app.live_ids();
    let held = match app
        .records
        .renew(&app.replica, now_ms().plus_millis(lease_ms(app)))
        .await
    {
        Ok(h) => h,
        Err(e) => {
            tracing::error!(error = %e, "cannot renew the leases of this replica");
            return;
        }
    };
    let held: HashMap<i64, Option<String>> =
        held.into_iter().map(|h| (h.review_id, h.cancel)).collect();
    for id in live_before {
        if !held.contains_key(&id) && app.cancel_run(id, CancelReason::LeaseLost) {
            tracing::warn!(
                review_id = id,
                "this replica lost its lease on the review; run cancelled"
            );
        }
    }
    for (id, cancel) in held {
        let Some(word) = cancel else { continue };
        let reason = CancelReason::parse(&word);
        if app.cancel_run(id, reason) {
            tracing::info!(
                review_id = id,
                reason = reason.as_str(),
                "run cancelled at another replica's request (lease renewal)"
            );
        } else {
            // Not a live review run here (an improver run, or claimed a moment ago): the row
            // is failed directly, and the run finds it no longer running.
            if let Err(e) = app.records.fail(id, reason.message(), None).await {
                tracing::error!(review_id = id, error = %e, "cannot fail a cancelled review");
            }
        }
    }
}

/// Fails the reviews of replicas whose lease lapsed.
async fn reap(app: &AppState) {
    match app.records.reap(LAPSED).await {
        Ok(lapsed) => {
            for row in lapsed {
                tracing::warn!(
                    review_id = row.id,
                    "review interrupted: its replica's lease lapsed; no automatic retry"
                );
            }
        }
        Err(e) => tracing::error!(error = %e, "cannot fail the reviews of lapsed leases"),
    }
}

/// At boot, before the server listens and before this replica claims anything, fails as
/// [`ORPHANED`] the reviews it ran when it was killed (its leases carry its stable id,
/// DATA_DIR/replica-id; on SQLite, one process, every lease) and the unfinished rows no queue
/// row runs. Awaited by `build`: run in the background, it could fail rows written after the
/// start, which are not the boot's to fail.
pub(crate) async fn sweep_orphans(app: &AppState) {
    let owner = match app.records.store.backend() {
        review_store::Backend::Sqlite => None,
        review_store::Backend::Postgres => Some(app.replica.as_str()),
    };
    match app.records.fail_interrupted_at_boot(owner, ORPHANED).await {
        Ok(failed) if !failed.is_empty() => {
            for row in &failed {
                tracing::warn!(
                    review_id = row.id,
                    "review interrupted by a restart marked failed"
                );
            }
            tracing::warn!(
                count = failed.len(),
                "reviews interrupted by a restart marked failed; no automatic retry"
            );
        }
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "cannot fail the reviews a restart interrupted"),
    }
}

/// Runs every automatic retry that is due, one at a time.
async fn due_retries(app: &AppState) {
    loop {
        let now = now_ms();
        match app
            .records
            .store
            .claim_due_retry(&app.replica, now.plus_millis(lease_ms(app)), now)
            .await
        {
            Ok(Some(claimed)) => run_due_retry(app, claimed).await,
            Ok(None) => return,
            Err(e) => {
                tracing::error!(error = %e, "cannot claim a due automatic retry");
                return;
            }
        }
    }
}

/// PostgreSQL: hears the other replicas until shutdown; reconnects when the connection drops.
async fn listener(app: AppState) {
    let channels = [EVENTS_CHANNEL, CONTROL_CHANNEL, QUEUE_CHANNEL];
    let mut listener = loop {
        match app.records.store.listener(&channels).await {
            Ok(Some(l)) => break l,
            Ok(None) => return, // SQLite: one process, nobody to hear
            Err(e) => {
                tracing::error!(error = %e, "cannot listen to the other replicas; trying again");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = app.shutdown.cancelled() => return,
                }
            }
        }
    };
    loop {
        let next = tokio::select! {
            n = listener.try_recv() => n,
            _ = app.shutdown.cancelled() => return,
        };
        match next {
            Ok(Some(n)) => match n.channel() {
                EVENTS_CHANNEL => app.records.receive_remote(&app.replica, n.payload()).await,
                CONTROL_CHANNEL => control(&app, n.payload()),
                _ => app.queue_wake.notify_one(),
            },
            Ok(None) => {
                // The connection dropped and is re-established by the next call: whatever the
                // other replicas said meanwhile is lost, so forget what it could have changed.
                tracing::warn!("the connection to the other replicas dropped; reconnecting");
                app.records.forget_cached_repos();
                app.queue_wake.notify_one();
            }
            Err(e) => {
                tracing::error!(error = %e, "listening to the other replicas failed; trying again");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = app.shutdown.cancelled() => return,
                }
            }
        }
    }
}

/// A cancel sent on [`CONTROL_CHANNEL`]: ends the run if it is live here (the renewal covers
/// the rest).
fn control(app: &AppState, payload: &str) {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(payload) else {
        return;
    };
    if let Some(id) = v["cancel"].as_i64() {
        let reason = CancelReason::parse(v["reason"].as_str().unwrap_or_default());
        if app.cancel_run(id, reason) {
            tracing::info!(
                review_id = id,
                reason = reason.as_str(),
                "run cancelled at another replica's request"
            );
        }
    }
}
