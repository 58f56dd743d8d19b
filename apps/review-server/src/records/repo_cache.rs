//! Registered repo rows by full name, kept in memory so an unchanged registration (most webhook
//! deliveries) costs no database round trip.
//!
//! Only [`Records`](super::Records) fills it, after each write of `repos`, so it is exact for
//! this replica's own writes. Another replica's writes arrive as its `repo:*` events, which drop
//! the row here (`replicas.rs`); when the event connection drops, everything is forgotten
//! (docs/architecture.md, "Many replicas").

use review_domain::RepoRow;
use std::collections::HashMap;
use std::sync::RwLock;

/// Repo rows by full name. A poisoned lock reads as a miss and skips the write: the cache is
/// then bypassed, never wrong.
#[derive(Debug, Default)]
pub(super) struct RepoCache(RwLock<HashMap<String, RepoRow>>);

impl RepoCache {
    /// The cached row of `full_name`, if any.
    pub(super) fn get(&self, full_name: &str) -> Option<RepoRow> {
        self.0.read().ok().and_then(|c| c.get(full_name).cloned())
    }

    /// Caches `row` under its full name, replacing what was there.
    pub(super) fn put(&self, row: &RepoRow) {
        if let Ok(mut c) = self.0.write() {
            c.insert(row.full_name.clone(), row.clone());
        }
    }

    /// Drops the row of `full_name`: it was deleted, or changed elsewhere.
    pub(super) fn forget(&self, full_name: &str) {
        if let Ok(mut c) = self.0.write() {
            c.remove(full_name);
        }
    }

    /// Drops every row.
    pub(super) fn clear(&self) {
        if let Ok(mut c) = self.0.write() {
            c.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, installation_id: i64) -> RepoRow {
        RepoRow {
            full_name: name.to_owned(),
            installation_id,
            prompt: None,
            model: None,
            enabled: 0,
            created_at: 0,
            min_severity: None,
            monthly_budget: None,
        }
    }

    #[test]
    fn a_cached_row_is_read_back_until_forgotten_or_cleared() {
        let cache = RepoCache::default();
        assert_eq!(cache.get("o/a"), None);
        cache.put(&row("o/a", 1));
        cache.put(&row("o/b", 2));
        cache.put(&row("o/a", 3));
        assert_eq!(cache.get("o/a"), Some(row("o/a", 3)));
        cache.forget("o/a");
        assert_eq!(cache.get("o/a"), None);
        assert_eq!(cache.get("o/b"), Some(row("o/b", 2)));
        cache.clear();
        assert_eq!(cache.get("o/b"), None);
    }
}
