//! Webhook delivery ids seen recently (docs/security.md, "Webhook deliveries"): a delivery
//! whose id was claimed in the last [`DELIVERY_WINDOW_SECS`] is a redelivery and is not
//! dispatched again. The ids live in the database, so a restart keeps them.

use crate::{Result, Store};

/// How long a delivery id is remembered: 24 hours, in seconds.
pub const DELIVERY_WINDOW_SECS: i64 = 24 * 3600;

impl Store {
    /// Claims delivery `id` at `now` (epoch seconds). Returns true when it is new (never seen,
    /// or last seen more than [`DELIVERY_WINDOW_SECS`] ago), false for a redelivery inside
    /// the window. Ids older than the window are pruned on the way.
    pub async fn claim_delivery(&self, id: &str, now: i64) -> Result<bool> {
        let cutoff = now - DELIVERY_WINDOW_SECS;
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM deliveries WHERE received_at < ?")
            .bind(cutoff)
            .execute(&mut *tx)
            .await?;
        let claimed = sqlx::query(
            "INSERT INTO deliveries (id, received_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(now)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        tx.commit().await?;
        Ok(claimed)
    }

    /// Forgets delivery `id`, so a redelivery is dispatched: for a delivery whose handling
    /// failed after it was claimed.
    pub async fn release_delivery(&self, id: &str) -> Result<()> {
        sqlx::query("DELETE FROM deliveries WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_delivery_is_new_once_per_window() {
        let (_dir, store) = crate::test_store().await;
        assert!(store.claim_delivery("d-1", 1000).await.unwrap());
        assert!(!store.claim_delivery("d-1", 1001).await.unwrap());
        assert!(store.claim_delivery("d-2", 1001).await.unwrap());
        // Still a redelivery just inside the window; new again after it.
        assert!(
            !store
                .claim_delivery("d-1", 1000 + DELIVERY_WINDOW_SECS)
                .await
                .unwrap()
        );
        assert!(
            store
                .claim_delivery("d-1", 1001 + DELIVERY_WINDOW_SECS)
                .await
                .unwrap()
        );
        // A released claim is new again.
        store.release_delivery("d-2").await.unwrap();
        assert!(store.claim_delivery("d-2", 1002).await.unwrap());
    }
}
