//! The transform service: the one scheduling policy for CPU-bound image work, shared by the
//! resize of a miss and the check of an upload (docs/architecture.md, Image server decisions).
//!
//! The policy, in the order a job meets it:
//! 1. admission (resize misses only): TRANSFORM_CONCURRENCY + TRANSFORM_QUEUE_SIZE tickets,
//!    taken without waiting before the source is fetched; none left is a 429
//!    (docs/configuration.md: TRANSFORM_QUEUE_SIZE);
//! 2. the HEIF gate: one HEIC/AVIF job at a time, taken *before* a slot, so that a HEIF job
//!    waiting for it never holds a slot another format could use (image-pipeline decodes one
//!    HEIF at a time anyway: libheif 1.15 holds the whole picture);
//! 3. a transform slot: TRANSFORM_CONCURRENCY jobs run at once;
//! 4. the job itself, on a blocking thread;
//! 5. metrics: `transforms_waiting` from the gate to the slot, `transforms_running` while the
//!    job runs, and, for a resize, `transform_duration_seconds` by source and output format.

use std::sync::Arc;

use image_pipeline::{
    Limits, Output, OutputFormat, PipelineError, SourceFormat, SourceInfo, TransformSpec,
};
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::failure::Failure;
use crate::metrics::Metrics;

/// The semaphores of the policy and the metrics they report to.
pub(crate) struct Transforms {
    /// TRANSFORM_CONCURRENCY slots.
    slots: Semaphore,
    /// One HEIF (HEIC or AVIF) job at a time.
    heif: Semaphore,
    /// Tickets for resize misses (`None`: TRANSFORM_QUEUE_SIZE is 0, no limit).
    admission: Option<Semaphore>,
    metrics: Arc<Metrics>,
}

/// A resize miss's place in the queue, held from before its source is fetched until its
/// answer is made.
pub(crate) struct Admitted<'a>(#[allow(dead_code)] Option<SemaphorePermit<'a>>);

impl Transforms {
    /// `workers` slots and, when `queue_size` > 0, `workers + queue_size` admission tickets.
    pub(crate) fn new(workers: usize, queue_size: usize, metrics: Arc<Metrics>) -> Self {
        Self {
            slots: Semaphore::new(workers),
            heif: Semaphore::new(1),
            admission: (queue_size > 0).then(|| Semaphore::new(workers + queue_size)),
            metrics,
        }
    }

    /// Admits a resize miss, without waiting.
    ///
    /// # Errors
    /// [`Failure::Busy`] (429) when every ticket is taken.
    pub(crate) fn admit(&self) -> Result<Admitted<'_>, Failure> {
        match &self.admission {
            Some(tickets) => tickets
                .try_acquire()
                .map(|t| Admitted(Some(t)))
                .map_err(|_| Failure::Busy),
            None => Ok(Admitted(None)),
        }
    }

    /// Transforms `source` as [`image_pipeline::transform`] does, under the policy, and
    /// records its duration by source and output format.
    ///
    /// # Errors
    /// The pipeline's refusals ([`Failure::Pipeline`]), or [`Failure::Internal`] when the
    /// blocking task dies.
    pub(crate) async fn resize(
        &self,
        source: bytes::Bytes,
        spec: TransformSpec,
        format: OutputFormat,
        mark: Option<bytes::Bytes>,
        limits: Limits,
    ) -> Result<Output, Failure> {
        let sniffed = image_pipeline::sniff(&source);
        let (out, started) = self
            .run(sniffed, move || {
                let started = std::time::Instant::now();
                image_pipeline::transform(&source, &spec, format, mark.as_deref(), &limits)
                    .map(|out| (out, started))
            })
            .await?;
        let source_name = sniffed.map_or("unknown", |f| {
            f.mime().strip_prefix("image/").unwrap_or("unknown")
        });
        self.metrics
            .transformed(source_name, out.format.name(), started);
        Ok(out)
    }

    /// Checks an upload: its header first ([`image_pipeline::probe`], so a bomb or a non-image
    /// is refused before waiting), then the whole picture at a small scale
    /// ([`image_pipeline::verify`]) under the policy (no admission: uploads need the key).
    ///
    /// # Errors
    /// [`Failure::Pipeline`] for a non-image (415), a bomb or an undecodable body (422).
    pub(crate) async fn verify(
        &self,
        bytes: bytes::Bytes,
        max_source_pixels: u64,
    ) -> Result<SourceInfo, Failure> {
        let info = image_pipeline::probe(&bytes, max_source_pixels)?;
        self.run(Some(info.format), move || {
            image_pipeline::verify(&bytes, &info).map(|()| info)
        })
        .await
    }

    /// Runs `job` on a blocking thread once the HEIF gate (for a HEIF `format`) and a slot
    /// are held.
    async fn run<T: Send + 'static>(
        &self,
        format: Option<SourceFormat>,
        job: impl FnOnce() -> Result<T, PipelineError> + Send + 'static,
    ) -> Result<T, Failure> {
        let closed = |e: tokio::sync::AcquireError| Failure::Internal(e.to_string());
        let waiting = self.metrics.waiting();
        let _heif = if matches!(format, Some(SourceFormat::Heif | SourceFormat::Avif)) {
            Some(self.heif.acquire().await.map_err(closed)?)
        } else {
            None
        };
        let _slot = self.slots.acquire().await.map_err(closed)?;
        drop(waiting);
        let _running = self.metrics.running();
        tokio::task::spawn_blocking(job)
            .await
            .map_err(|e| Failure::Internal(format!("transform task: {e}")))?
            .map_err(Failure::Pipeline)
    }
}
