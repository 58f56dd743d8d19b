//! Webhook delivery ids seen recently (docs/security.md, "Webhook deliveries"): a delivery
//! whose id was claimed in the last [`DELIVERY_WINDOW_SECS`] is a redelivery and is not
//! dispatched again. The ids live in the database, so a restart keeps them and every replica
//! on one PostgreSQL database shares them: the primary key makes one concurrent claim win
//! (tests/store.rs, `a_delivery_is_new_once_per_window`, runs on both backends).

use crate::{Result, Store};
use review_domain::EpochSeconds;

/// How long a delivery id is remembered: 24 hours, in seconds.
pub const DELIVERY_WINDOW_SECS: i64 = 24 * 3600;

/// The claim of delivery id `$1` at `$2` (epoch seconds): a new row, or an old one last seen
/// before `$3` (the window's start) taken over in place; one row changed when the claim is
/// won, none for a redelivery. Also the first half of the webhook inbox's statement (inbox.rs).
pub(crate) const CLAIM_SQL: &str = "INSERT INTO deliveries (id, received_at) VALUES ($1, $2)
     ON CONFLICT (id) DO UPDATE SET received_at = excluded.received_at
     WHERE deliveries.received_at < $3";

/// Claims delivery `id` at `now` (epoch seconds) inside transaction `tx` ([`CLAIM_SQL`]);
/// false for a redelivery.
pub(crate) async fn claim_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    id: &str,
    now: EpochSeconds,
) -> Result<bool> {
    let claimed = sqlx::query(CLAIM_SQL)
        .bind(id)
        .bind(now.0)
        .bind(now.0 - DELIVERY_WINDOW_SECS)
        .execute(&mut **tx)
        .await?
        .rows_affected()
        == 1;
    Ok(claimed)
}

impl Store {
    /// Claims delivery `id` at `now` (epoch seconds). Returns true when it is new (never seen,
    /// or last seen more than [`DELIVERY_WINDOW_SECS`] ago), false for a redelivery inside
    /// the window. One statement, so the webhook's acknowledgement pays one round trip: an id
    /// seen before the window is taken over in place; [`Store::prune_deliveries`] removes old
    /// ids off the request path.
    pub async fn claim_delivery(&self, id: &str, now: EpochSeconds) -> Result<bool> {
        let claimed = sqlx::query(CLAIM_SQL)
            .bind(id)
            .bind(now.0)
            .bind(now.0 - DELIVERY_WINDOW_SECS)
            .execute(&self.pool)
            .await?
            .rows_affected()
            == 1;
        Ok(claimed)
    }

    /// Deletes the delivery ids last seen more than [`DELIVERY_WINDOW_SECS`] before `now`;
    /// returns how many (run by each replica's keeper, docs/architecture.md, "Many replicas").
    pub async fn prune_deliveries(&self, now: EpochSeconds) -> Result<u64> {
        Ok(sqlx::query("DELETE FROM deliveries WHERE received_at < $1")
            .bind(now.0 - DELIVERY_WINDOW_SECS)
            .execute(&self.pool)
            .await?
            .rows_affected())
    }

    /// Forgets delivery `id`, so a redelivery is dispatched: for a delivery whose handling
    /// failed after it was claimed.
    pub async fn release_delivery(&self, id: &str) -> Result<()> {
        sqlx::query("DELETE FROM deliveries WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
