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
//! 4. the job itself, on a blocking thread, which owns its admission ticket, HEIF gate and
//!    slot (owned permits moved into the job) and releases them when the work ends, not when
//!    the request's future is dropped: a client that hangs up cannot free a slot while its
//!    transformation runs on, so at most TRANSFORM_CONCURRENCY jobs run whatever the clients
//!    do (issue 26, finding 2);
//! 5. cancellation: each job has an [`image_pipeline::Cancel`] with the request deadline,
//!    checked by the pipeline between stages and per animation frame. It is set when the
//!    request's future is dropped (the client left, or the deadline middleware gave up): an
//!    abandoned job stops at its next stage boundary instead of finishing for nobody (its result
//!    would not be cached, since the cache's loader is the dropped future); and by
//!    [`Transforms::cancel_all`] when a shutdown's drain timeout has passed;
//! 6. metrics: `transforms_waiting` from the gate to the slot, `transforms_running` while the
//!    job runs (the guard lives in the job), and, for a resize, `transform_duration_seconds` by
//!    source and output format.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use image_pipeline::{
    Cancel, Limits, Output, OutputFormat, PipelineError, SourceFormat, SourceInfo, TransformSpec,
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::failure::Failure;
use crate::metrics::Metrics;

/// The semaphores of the policy and the metrics they report to.
pub(crate) struct Transforms {
    /// TRANSFORM_CONCURRENCY slots.
    slots: Arc<Semaphore>,
    /// One HEIF (HEIC or AVIF) job at a time.
    heif: Arc<Semaphore>,
    /// Tickets for resize misses (`None`: TRANSFORM_QUEUE_SIZE is 0, no limit).
    admission: Option<Arc<Semaphore>>,
    metrics: Arc<Metrics>,
    /// How long a job may run: the request deadline.
    deadline: Duration,
    /// The cancellation tokens of the jobs running now, by a serial number.
    jobs: Arc<Jobs>,
}

/// The running jobs' tokens, so that a shutdown can stop them all.
#[derive(Default)]
struct Jobs {
    next: AtomicU64,
    running: Mutex<HashMap<u64, Cancel>>,
    /// Set by [`Transforms::cancel_all`]: no job starts any more.
    stopped: AtomicBool,
}

/// A job's entry in [`Jobs`], removed when the job ends.
struct Registered(Arc<Jobs>, u64);

impl Drop for Registered {
    fn drop(&mut self) {
        if let Ok(mut running) = self.0.running.lock() {
            running.remove(&self.1);
        }
    }
}

/// Cancels a job when the request future that waits for it is dropped (a finished job does
/// not mind).
struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// A resize miss's place in the queue, held from before its source is fetched until its
/// transformation ends (it moves into the blocking job).
pub(crate) struct Admitted(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

impl Transforms {
    /// `workers` slots and, when `queue_size` > 0, `workers + queue_size` admission tickets.
    /// Each job is cancelled once it has run for `deadline`.
    pub(crate) fn new(
        workers: usize,
        queue_size: usize,
        metrics: Arc<Metrics>,
        deadline: Duration,
    ) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(workers)),
            heif: Arc::new(Semaphore::new(1)),
            admission: (queue_size > 0).then(|| Arc::new(Semaphore::new(workers + queue_size))),
            metrics,
            deadline,
            jobs: Arc::default(),
        }
    }

    /// Cancels every running job and refuses new ones (a shutdown whose drain timeout has
    /// passed): each stops at its next stage boundary with [`PipelineError::Cancelled`].
    pub(crate) fn cancel_all(&self) {
        self.jobs.stopped.store(true, Ordering::SeqCst);
        if let Ok(running) = self.jobs.running.lock() {
            for cancel in running.values() {
                cancel.cancel();
            }
        }
    }

    /// Admits a resize miss, without waiting.
    ///
    /// # Errors
    /// [`Failure::Busy`] (429) when every ticket is taken.
    pub(crate) fn admit(&self) -> Result<Admitted, Failure> {
        match &self.admission {
            Some(tickets) => Arc::clone(tickets)
                .try_acquire_owned()
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
        admitted: Admitted,
        source: bytes::Bytes,
        spec: TransformSpec,
        format: OutputFormat,
        mark: Option<bytes::Bytes>,
        limits: Limits,
    ) -> Result<Output, Failure> {
        let sniffed = image_pipeline::sniff(&source);
        let (out, started) = self
            .run(sniffed, admitted, move || {
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

    /// Checks an upload: its header ([`image_pipeline::probe`]: a bomb or a non-image is
    /// refused before decoding), then the whole picture at a small scale
    /// ([`image_pipeline::verify`]), both on a blocking thread under the policy (no admission:
    /// uploads need the key), since parsing an SVG's markup or a large header is CPU work that
    /// must not hold an async worker (issue 26: two slow uploads froze /health).
    ///
    /// # Errors
    /// [`Failure::Pipeline`] for a non-image (415), a bomb or an undecodable body (422).
    pub(crate) async fn verify(
        &self,
        bytes: bytes::Bytes,
        max_source_pixels: u64,
    ) -> Result<SourceInfo, Failure> {
        let sniffed = image_pipeline::sniff(&bytes);
        self.run(sniffed, Admitted(None), move || {
            let info = image_pipeline::probe(&bytes, max_source_pixels)?;
            image_pipeline::verify(&bytes, &info).map(|()| info)
        })
        .await
    }

    /// Runs `job` on a blocking thread once the HEIF gate (for a HEIF `format`) and a slot
    /// are held; the job owns them, `admitted` and the running gauge until it ends, and runs
    /// under a [`Cancel`] that this future sets when it is dropped.
    async fn run<T: Send + 'static>(
        &self,
        format: Option<SourceFormat>,
        admitted: Admitted,
        job: impl FnOnce() -> Result<T, PipelineError> + Send + 'static,
    ) -> Result<T, Failure> {
        let closed = |e: tokio::sync::AcquireError| Failure::Internal(e.to_string());
        let waiting = self.metrics.waiting();
        let heif = if matches!(format, Some(SourceFormat::Heif | SourceFormat::Avif)) {
            Some(
                Arc::clone(&self.heif)
                    .acquire_owned()
                    .await
                    .map_err(closed)?,
            )
        } else {
            None
        };
        let slot = Arc::clone(&self.slots)
            .acquire_owned()
            .await
            .map_err(closed)?;
        drop(waiting);
        if self.jobs.stopped.load(Ordering::SeqCst) {
            return Err(Failure::Pipeline(PipelineError::Cancelled));
        }
        let cancel = Cancel::new().with_deadline(Instant::now() + self.deadline);
        let id = self.jobs.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut running) = self.jobs.running.lock() {
            running.insert(id, cancel.clone());
        }
        let registered = Registered(Arc::clone(&self.jobs), id);
        let running = self.metrics.running();
        let _abandon = CancelOnDrop(cancel.clone());
        tokio::task::spawn_blocking(move || {
            // Released when the work ends, in this order: the gauge, the slot, the gate, the
            // ticket.
            let _held = (running, slot, heif, admitted, registered);
            cancel.run(job)
        })
        .await
        .map_err(|e| Failure::Internal(format!("transform task: {e}")))?
        .map_err(Failure::Pipeline)
    }
}
