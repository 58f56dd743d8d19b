//! The `settings` table (docs/review-service.md §2): key/value settings the dashboard edits,
//! among them the provider API keys, which the chat tool's SQL can never read
//! ([`crate::HIDDEN_TABLES`]).

use crate::{Result, Store};
use sqlx::Row;
use std::collections::BTreeMap;

impl Store {
    /// Every stored setting.
    pub async fn settings(&self) -> Result<BTreeMap<String, String>> {
        let rows = sqlx::query("SELECT key, value FROM settings ORDER BY key")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<String, _>(0), r.get::<String, _>(1)))
            .collect())
    }

    /// One stored setting.
    pub async fn setting(&self, key: &str) -> Result<Option<String>> {
        let row = sqlx::query("SELECT value FROM settings WHERE key = $1")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.get::<String, _>(0)))
    }

    /// Store (Some) or delete (None) a setting.
    pub async fn put_setting(&self, key: &str, value: Option<&str>) -> Result<()> {
        match value {
            Some(v) => {
                sqlx::query(
                    "INSERT INTO settings (key, value) VALUES ($1, $2)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                )
                .bind(key)
                .bind(v)
                .execute(&self.pool)
                .await?
            }
            None => {
                sqlx::query("DELETE FROM settings WHERE key = $1")
                    .bind(key)
                    .execute(&self.pool)
                    .await?
            }
        };
        Ok(())
    }
}
