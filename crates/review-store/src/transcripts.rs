//! The `transcripts` table of migration 0012 (PostgreSQL: 0003): each agent session's
//! transcript, written after every write of the local file in `DATA_DIR/sessions`, so any
//! replica can serve `GET /api/reviews/:id/session` (docs/architecture.md, "Many replicas").

use crate::{Result, Store};
use review_domain::EpochSeconds;
use sqlx::Row;
use sqlx::any::AnyRow;

impl Store {
    /// Writes (or replaces) the transcript document of `session_id`.
    pub async fn save_transcript(
        &self,
        session_id: &str,
        doc: &str,
        now: EpochSeconds,
    ) -> Result<()> {
        let query = sqlx::query(
            "INSERT INTO transcripts (session_id, doc, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (session_id) DO UPDATE SET doc = excluded.doc, updated_at = excluded.updated_at",
        )
        .bind(session_id)
        .bind(doc)
        .bind(now.0);
        self.changed(query).await?;
        Ok(())
    }

    /// The stored transcript document of `session_id`, if any.
    pub async fn transcript(&self, session_id: &str) -> Result<Option<String>> {
        let query =
            sqlx::query("SELECT doc FROM transcripts WHERE session_id = $1").bind(session_id);
        self.optional(query, |r: &AnyRow| Ok(r.try_get::<String, _>(0)?))
            .await
    }
}
