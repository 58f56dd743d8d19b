//! The two-tier result cache (docs/architecture.md, Image server decisions).
//!
//! Both tiers are keyed by the source path, the canonical [`TransformSpec`] string, the
//! resolved output format and the source's ETag (plus the watermark's ETag), so a replaced
//! source can never be answered with a stale result. Tier one is moka in memory, weighed in
//! encoded bytes with a TTL; its `entry().or_try_insert_with` also coalesces identical requests
//! in flight into one transformation. Tier two persists results under `cache/<source path>/`
//! in the object store, so restarts and replicas share them.
//!
//! A clear holds for every replica sharing the store (docs/image-service.md §4, Cache clear):
//! the replica that clears adds its pattern to the purge log [`PURGE_LOG`] and rewrites the
//! marker object [`CLEAR_MARKER`] after deleting the persisted tier, and every replica looks at
//! the marker's ETag at most once per SOURCE_ETAG_TTL_MS, before serving from memory; a new
//! ETag makes it read the log and drop the memory entries of the sources each new pattern
//! matches (everything when it cannot tell). So another replica stops serving a purged result
//! within the time it notices a replaced source, not after CACHE_TTL_SECS, and keeps the rest.
//!
//! [`TransformSpec`]: image_pipeline::TransformSpec

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use image_pipeline::OutputFormat;
use object_store::path::Path;
use object_store::{ObjectStore, PutPayload};
use sha2::{Digest, Sha256};
use tokio_util::task::TaskTracker;

use crate::error::ApiError;
use crate::failure::Failure;
use crate::storage::CACHE_PREFIX;

/// An encoded result as served.
#[derive(Debug)]
pub(crate) struct CachedImage {
    pub bytes: Bytes,
    pub content_type: &'static str,
    /// True when this value was produced by a transformation (not read from a cache tier).
    pub transformed: bool,
}

/// The identity of one result.
#[derive(Debug, Clone)]
pub(crate) struct CacheKey {
    /// Source object path.
    pub path: String,
    /// `spec|format|source etag|watermark etag`.
    pub variant: String,
    /// Extension of the output format (`webp`, `jpeg`...), for the persisted object's name.
    /// With `format=auto` the bytes may be in another format than the name says (WebP for an
    /// AVIF over AVIF_MAX_PIXELS, PNG for a transparent picture sent to a JPEG-only client);
    /// readers go by the bytes.
    pub ext: &'static str,
}

impl CacheKey {
    /// The full key string (memory tier key).
    pub(crate) fn full(&self) -> String {
        format!("{}|{}", self.path, self.variant)
    }

    /// A strong ETag for the response, derived from the key alone (same on every replica).
    pub(crate) fn etag(&self) -> String {
        let digest = Sha256::digest(self.full().as_bytes());
        format!("\"{}\"", hex::encode(&digest[..16]))
    }

    /// Where the storage tier keeps this result: `cache/<path>/<digest>.<ext>`.
    pub(crate) fn storage_path(&self) -> Path {
        let digest = Sha256::digest(self.variant.as_bytes());
        Path::from(format!(
            "{CACHE_PREFIX}/{}/{}.{}",
            self.path,
            hex::encode(&digest[..16]),
            self.ext
        ))
    }
}

/// The object whose ETag changes with every clear, on any replica: `cache/.clear-marker`.
pub(crate) const CLEAR_MARKER: &str = "cache/.clear-marker";

/// The purge log: one small object per clear, named `<epoch nanoseconds, 20 digits>-<random>`
/// so names sort by time, holding the clear's pattern (`*`: everything). It lives under
/// `cache/cache/`, the results folder of a source `cache/...`, which no source can have
/// (the `cache/` prefix is refused for sources), so no result can collide with it.
pub(crate) const PURGE_LOG: &str = "cache/cache/purges";

/// The name of the newest purge pruned from the log, so that a replica can tell a purge it
/// never read from none at all.
const PURGE_PRUNED: &str = "cache/cache/purges-pruned";

/// How long a purge stays in the log. A replica that has not looked for longer (an idle one)
/// finds its last-seen purge gone and empties its whole memory tier instead.
const PURGE_LOG_KEEP: Duration = Duration::from_secs(3600);

/// Epoch nanoseconds as 20 digits, the sortable head of a purge's name.
fn purge_stamp(at: std::time::SystemTime) -> String {
    let nanos = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:020}")
}

/// Both tiers.
pub(crate) struct ResultCache {
    memory: Option<moka::future::Cache<String, Arc<CachedImage>>>,
    /// The clear marker's ETag as last read from the store (`""`: no clear yet), remembered
    /// for SOURCE_ETAG_TTL_MS so that at most one HEAD per interval reaches the store.
    marker: moka::future::Cache<(), String>,
    /// The marker ETag this replica's memory tier is consistent with; `None` before the first
    /// look.
    seen_marker: Mutex<Option<String>>,
    /// The newest purge of the log this replica has applied: at first a stamp of its start
    /// less a minute (purges before it cannot concern its memory; the minute absorbs clock
    /// skew between replicas), then the name of the newest purge read.
    seen_purge: Mutex<String>,
    /// The purges this replica wrote itself: already applied to its memory when written.
    own_purges: Mutex<std::collections::HashSet<String>>,
    /// When the marker was last looked at, in milliseconds since `started` (plus one, so 0 is
    /// "never"): a cache hit between looks costs one atomic load, not a lookup and a lock.
    marker_looked: AtomicU64,
    /// How long a look holds, in milliseconds (SOURCE_ETAG_TTL_MS).
    marker_ttl_ms: u64,
    started: Instant,
    store: Arc<dyn ObjectStore>,
    persist: bool,
    /// Writes of the storage tier that run after the response; [`Self::flush`] waits for
    /// them at shutdown.
    background: TaskTracker,
}

impl ResultCache {
    /// `max_bytes` = 0 disables the memory tier (and with it, coalescing); `persist` enables the
    /// storage tier; `marker_ttl` (SOURCE_ETAG_TTL_MS) is how long the clear marker's ETag is
    /// trusted before the store is asked again.
    pub(crate) fn new(
        store: Arc<dyn ObjectStore>,
        max_bytes: u64,
        ttl: Duration,
        persist: bool,
        marker_ttl: Duration,
    ) -> Self {
        let memory = (max_bytes > 0).then(|| {
            moka::future::Cache::builder()
                .max_capacity(max_bytes)
                .weigher(|k: &String, v: &Arc<CachedImage>| {
                    u32::try_from(v.bytes.len() + k.len()).unwrap_or(u32::MAX)
                })
                .time_to_live(ttl)
                .support_invalidation_closures()
                .build()
        });
        Self {
            memory,
            marker: moka::future::Cache::builder()
                .max_capacity(1)
                .time_to_live(marker_ttl)
                .build(),
            seen_marker: Mutex::new(None),
            seen_purge: Mutex::new(purge_stamp(
                std::time::SystemTime::now() - Duration::from_secs(60),
            )),
            own_purges: Mutex::new(std::collections::HashSet::new()),
            marker_looked: AtomicU64::new(0),
            marker_ttl_ms: u64::try_from(marker_ttl.as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
            started: Instant::now(),
            store,
            persist,
            background: TaskTracker::new(),
        }
    }

    /// Empties the memory tier when another replica (or this one) has cleared since this
    /// replica last looked: the clear marker's ETag, read at most once per `marker_ttl`, is not
    /// the one its memory holds results for. A store that does not answer changes nothing
    /// (the request goes on; the next look tries again).
    async fn follow_clears(&self) {
        let Some(memory) = &self.memory else { return };
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX) + 1;
        let looked = self.marker_looked.load(Ordering::Relaxed);
        if looked != 0 && now.saturating_sub(looked) < self.marker_ttl_ms {
            return;
        }
        self.marker_looked.store(now, Ordering::Relaxed);
        let marker = self
            .marker
            .try_get_with((), async {
                match self.store.head(&Path::from(CLEAR_MARKER)).await {
                    Ok(meta) => Ok(meta.e_tag.unwrap_or_else(|| {
                        meta.last_modified
                            .timestamp_nanos_opt()
                            .unwrap_or(0)
                            .to_string()
                    })),
                    Err(object_store::Error::NotFound { .. }) => Ok(String::new()),
                    Err(e) => Err(e),
                }
            })
            .await;
        let marker = match marker {
            Ok(marker) => marker,
            Err(e) => {
                tracing::warn!(error = %e, "reading the cache clear marker failed");
                return;
            }
        };
        let changed = {
            let mut seen = self
                .seen_marker
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let changed = seen.as_deref().is_some_and(|known| known != marker);
            *seen = Some(marker);
            changed
        };
        if changed {
            self.apply_purges(memory).await;
        }
    }

    /// Drops from `memory` the entries of the sources each purge of the log newer than the
    /// last one applied here matches (docs/image-service.md, "Cache clear"). Everything goes
    /// when the log cannot be read, when a purge is `*`, or when purges may have been missed
    /// (the newest one applied here has left the log).
    async fn apply_purges(&self, memory: &moka::future::Cache<String, Arc<CachedImage>>) {
        let mut names = Vec::new();
        let mut listing = self.store.list(Some(&Path::from(PURGE_LOG)));
        while let Some(meta) = listing.next().await {
            match meta {
                Ok(meta) => {
                    if let Some(name) = meta.location.filename() {
                        names.push(name.to_owned());
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading the purge log failed: memory tier emptied");
                    memory.invalidate_all();
                    return;
                }
            }
        }
        names.sort();
        let seen = self
            .seen_purge
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        // Purges are pruned oldest first, so one this replica never read can be gone only when
        // the oldest left is newer than its last read; then the prune record says.
        let missed = match names.first() {
            Some(oldest) if *oldest <= seen => false,
            _ => self.pruned_after(&seen).await,
        };
        let fresh: Vec<&String> = names.iter().filter(|n| **n > seen).collect();
        let own = self
            .own_purges
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let mut patterns = Vec::new();
        let mut everything = missed;
        for name in &fresh {
            if own.contains(*name) || everything {
                continue;
            }
            let path = Path::from(format!("{PURGE_LOG}/{name}"));
            match self.store.get(&path).await {
                Ok(got) => match got.bytes().await {
                    Ok(bytes) => {
                        let pattern = String::from_utf8_lossy(&bytes).into_owned();
                        everything |= pattern == "*";
                        patterns.push(pattern);
                    }
                    Err(_) => everything = true,
                },
                // Pruned meanwhile: it was older than the log keeps, so this replica missed it.
                Err(_) => everything = true,
            }
        }
        if everything {
            memory.invalidate_all();
            tracing::info!("the cache was cleared through another replica: memory tier emptied");
        } else if !patterns.is_empty() {
            let count = patterns.len();
            let dropped = memory.invalidate_entries_if(move |key, _| {
                let source = key.split_once('|').map_or(key.as_str(), |(path, _)| path);
                patterns.iter().any(|p| glob(p, source))
            });
            if let Err(e) = dropped {
                tracing::warn!(error = %e, "a selective purge failed: memory tier emptied");
                memory.invalidate_all();
            }
            tracing::info!(
                purges = count,
                "results purged through another replica dropped from memory"
            );
        }
        // Read up to now: a purge written from here on is named after now, less the minute of
        // clock skew allowed between replicas.
        let read_to = purge_stamp(std::time::SystemTime::now() - Duration::from_secs(60));
        let newest = fresh.last().map(|n| (*n).clone()).unwrap_or_default();
        *self
            .seen_purge
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = newest.max(read_to).max(seen);
    }

    /// Whether a purge newer than `seen` has been pruned from the log (or the record of
    /// prunes cannot be read).
    async fn pruned_after(&self, seen: &str) -> bool {
        match self.store.get(&Path::from(PURGE_PRUNED)).await {
            Ok(got) => got
                .bytes()
                .await
                .map_or(true, |b| String::from_utf8_lossy(&b).as_ref() > seen),
            Err(object_store::Error::NotFound { .. }) => false,
            Err(_) => true,
        }
    }

    /// Returns the cached result or runs `make` (at most once per key at a time).
    ///
    /// # Errors
    /// Whatever `make` fails with, given to every request that waited for it.
    pub(crate) async fn get_or_make<F>(
        &self,
        key: &CacheKey,
        make: F,
    ) -> Result<Arc<CachedImage>, Failure>
    where
        F: Future<Output = Result<CachedImage, Failure>> + Send,
    {
        self.follow_clears().await;
        let load = async {
            // The type is read from the bytes, not the name (see `CacheKey::ext`); anything
            // that is no image (a file replaced behind our back) is made again.
            if self.persist
                && let Ok(hit) = self.store.get(&key.storage_path()).await
                && let Ok(bytes) = hit.bytes().await
                && let Some(format) = OutputFormat::of(&bytes)
            {
                return Ok(Arc::new(CachedImage {
                    bytes,
                    content_type: format.mime(),
                    transformed: false,
                }));
            }
            let made = make.await?;
            if self.persist {
                let store = Arc::clone(&self.store);
                let path = key.storage_path();
                let payload = PutPayload::from_bytes(made.bytes.clone());
                self.background.spawn(async move {
                    if let Err(e) = store.put(&path, payload).await {
                        tracing::warn!(error = %e, %path, "persisting a result failed");
                    }
                });
            }
            Ok::<_, Failure>(Arc::new(made))
        };
        match &self.memory {
            None => load.await,
            Some(memory) => {
                let entry = memory
                    .entry(key.full())
                    .or_try_insert_with(load)
                    .await
                    .map_err(|shared| Failure::clone(&shared))?;
                if entry.is_fresh() {
                    Ok(entry.into_value())
                } else {
                    let v = entry.into_value();
                    Ok(Arc::new(CachedImage {
                        bytes: v.bytes.clone(),
                        content_type: v.content_type,
                        transformed: false,
                    }))
                }
            }
        }
    }

    /// Deletes the persisted results of `source` (its variants made before it was replaced:
    /// their keys hold the old ETag, so nothing would read them again). Only the results of
    /// this exact path go, not those of paths below it. Failures are logged, not returned:
    /// the upload they follow has succeeded.
    pub(crate) async fn forget_source(&self, source: &str) {
        if !self.persist {
            return;
        }
        let dir = Path::from(format!("{CACHE_PREFIX}/{source}"));
        let listing = match self.store.list_with_delimiter(Some(&dir)).await {
            Ok(listing) => listing,
            Err(e) => {
                tracing::warn!(error = %e, %dir, "listing stale results failed");
                return;
            }
        };
        for meta in listing.objects {
            match self.store.delete(&meta.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => {
                    tracing::warn!(error = %e, path = %meta.location, "deleting a stale result failed");
                }
            }
        }
    }

    /// Waits (up to `limit`) for the storage tier's writes still running, so that a
    /// result made just before shutdown is not lost. Called once, after the last request.
    pub(crate) async fn flush(&self, limit: Duration) {
        self.background.close();
        if tokio::time::timeout(limit, self.background.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                pending = self.background.len(),
                "shutdown: storage-tier writes still running were abandoned"
            );
        }
    }

    /// Entries and weighed bytes of the memory tier.
    pub(crate) async fn stats(&self) -> (u64, u64) {
        match &self.memory {
            None => (0, 0),
            Some(m) => {
                m.run_pending_tasks().await;
                (m.entry_count(), m.weighted_size())
            }
        }
    }

    /// Deletes persisted results whose source path matches `pattern` (`*` wildcards; all when
    /// `None`), empties the memory tier, and rewrites [`CLEAR_MARKER`] so that every other
    /// replica empties its memory tier within SOURCE_ETAG_TTL_MS (the others cannot tell which
    /// of their entries a pattern matched, so they drop all). Returns the number of result
    /// objects deleted.
    ///
    /// # Errors
    /// [`ApiError::Storage`] when listing or deleting fails.
    pub(crate) async fn clear(&self, pattern: Option<&str>) -> Result<u64, ApiError> {
        if let Some(m) = &self.memory {
            match pattern {
                None => m.invalidate_all(),
                Some(p) => {
                    let p = p.to_owned();
                    if m.invalidate_entries_if(move |key, _| {
                        glob(
                            &p,
                            key.split_once('|').map_or(key.as_str(), |(path, _)| path),
                        )
                    })
                    .is_err()
                    {
                        m.invalidate_all();
                    }
                }
            }
        }
        // Only the folder of the pattern's literal head is listed: `photos/2024/*` lists
        // `cache/photos/2024/`, not the whole cache.
        let head = pattern
            .map(|p| p.split('*').next().unwrap_or_default())
            .and_then(|literal| {
                if pattern.is_some_and(|p| !p.contains('*')) {
                    Some(literal)
                } else {
                    literal.rsplit_once('/').map(|(dir, _)| dir)
                }
            })
            .filter(|dir| !dir.is_empty());
        let prefix = Path::from(match head {
            Some(dir) => format!("{CACHE_PREFIX}/{dir}"),
            None => CACHE_PREFIX.to_owned(),
        });
        let mut listing = self.store.list(Some(&prefix));
        let mut doomed = Vec::new();
        // The marker, the purge log and its prune record are the cache's own, not results.
        let own = format!("{CACHE_PREFIX}/{CACHE_PREFIX}/");
        while let Some(meta) = listing.next().await {
            let meta = meta.map_err(ApiError::Storage)?;
            let full = meta.location.as_ref();
            if full == CLEAR_MARKER || full.starts_with(&own) {
                continue;
            }
            let source = full
                .strip_prefix(&format!("{CACHE_PREFIX}/"))
                .and_then(|rest| rest.rsplit_once('/'))
                .map_or("", |(dir, _)| dir);
            if pattern.is_none_or(|p| glob(p, source)) {
                doomed.push(meta.location);
            }
        }
        let mut count = 0;
        for path in doomed {
            match self.store.delete(&path).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => count += 1,
                Err(e) => return Err(ApiError::Storage(e)),
            }
        }
        self.log_purge(pattern.unwrap_or("*")).await?;
        // Unique content, so that every store gives the marker a new ETag.
        let stamp = format!(
            "{} {}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
            pattern.unwrap_or("*")
        );
        let written = self
            .store
            .put(
                &Path::from(CLEAR_MARKER),
                PutPayload::from(stamp.into_bytes()),
            )
            .await
            .map_err(ApiError::Storage)?;
        // This replica's memory is already empty: it need not empty it again.
        if let Some(etag) = written.e_tag {
            *self
                .seen_marker
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(etag.clone());
            self.marker.insert((), etag).await;
        }
        Ok(count)
    }

    /// Adds `pattern` to the purge log (before the marker changes, so a replica that sees the
    /// new marker finds it) and prunes purges older than [`PURGE_LOG_KEEP`].
    async fn log_purge(&self, pattern: &str) -> Result<(), ApiError> {
        let now = std::time::SystemTime::now();
        let name = format!("{}-{:08x}", purge_stamp(now), rand::random::<u32>());
        self.store
            .put(
                &Path::from(format!("{PURGE_LOG}/{name}")),
                PutPayload::from(pattern.as_bytes().to_vec()),
            )
            .await
            .map_err(ApiError::Storage)?;
        self.own_purges
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name);
        let cutoff = purge_stamp(now - PURGE_LOG_KEEP);
        let mut listing = self.store.list(Some(&Path::from(PURGE_LOG)));
        let mut pruned: Option<String> = None;
        while let Some(Ok(meta)) = listing.next().await {
            let Some(name) = meta.location.filename().map(str::to_owned) else {
                continue;
            };
            if name < cutoff && self.store.delete(&meta.location).await.is_ok() {
                pruned = pruned.max(Some(name));
            }
        }
        // Written after the deletes; two replicas pruning at once may leave the lower of
        // their records, which only matters to a replica idle for the whole PURGE_LOG_KEEP.
        if let Some(pruned) = pruned {
            let _ = self
                .store
                .put(
                    &Path::from(PURGE_PRUNED),
                    PutPayload::from(pruned.into_bytes()),
                )
                .await;
        }
        Ok(())
    }
}

/// `*` matches any run of characters (slashes included); everything else is literal.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || !text[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn glob_matches_prefixes_and_suffixes() {
        assert!(glob("photos/*", "photos/a/b.jpg"));
        assert!(glob("*.jpg", "x/y.jpg"));
        assert!(!glob("photos/*", "other/a.jpg"));
        assert!(glob("a.jpg", "a.jpg"));
        assert!(glob("a*b*c", "aXXbYYc"));
    }
}
