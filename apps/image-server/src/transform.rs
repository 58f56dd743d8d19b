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
//!    do (docs/image-service.md §8: transformations at once);
//! 5. cancellation: each job has an [`image_pipeline::Cancel`] with its request's [`Deadline`]
//!    (fixed when the request arrived, the instant the deadline middleware answers 503), checked
//!    before the job starts (a job whose slot came too late never starts) and by the pipeline
//!    between stages and per animation frame. It is set when the
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

/// When a request must be answered: fixed once as it arrives (the deadline middleware), the
/// same instant for the 503 and for the cancellation of the transformation it started.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    /// The instant the request runs out of time.
    pub(crate) at: Instant,
    /// REQUEST_TIMEOUT_SECS, for the 503's message.
    pub(crate) secs: u64,
}

impl Deadline {
    /// A deadline `secs` seconds from now.
    pub(crate) fn from_now(secs: u64) -> Self {
        Self {
            at: Instant::now() + Duration::from_secs(secs),
            secs,
        }
    }

    /// The deadline the middleware put in `extensions`, or one from now when the request did
    /// not pass the middleware.
    pub(crate) fn of(extensions: &axum::http::Extensions, timeout_secs: u64) -> Self {
        extensions
            .get::<Self>()
            .copied()
            .unwrap_or_else(|| Self::from_now(timeout_secs))
    }
}

/// The semaphores of the policy and the metrics they report to.
pub(crate) struct Transforms {
    /// TRANSFORM_CONCURRENCY slots.
    slots: Arc<Semaphore>,
    /// One HEIF (HEIC or AVIF) job at a time.
    heif: Arc<Semaphore>,
    /// Tickets for resize misses (`None`: TRANSFORM_QUEUE_SIZE is 0, no limit).
    admission: Option<Arc<Semaphore>>,
    metrics: Arc<Metrics>,
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
/// transformation ends (it moves into the blocking job), and its request's deadline.
pub(crate) struct Admitted {
    #[expect(
        dead_code,
        reason = "held for its drop: the queue place is released when the job ends"
    )]
    ticket: Option<OwnedSemaphorePermit>,
    deadline: Deadline,
}

impl Transforms {
    /// `workers` slots and, when `queue_size` > 0, `workers + queue_size` admission tickets.
    pub(crate) fn new(workers: usize, queue_size: usize, metrics: Arc<Metrics>) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(workers)),
            heif: Arc::new(Semaphore::new(1)),
            admission: (queue_size > 0).then(|| Arc::new(Semaphore::new(workers + queue_size))),
            metrics,
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

    /// Admits a resize miss whose request must be answered by `deadline`, without waiting.
    ///
    /// # Errors
    /// [`Failure::Busy`] (429) when every ticket is taken.
    pub(crate) fn admit(&self, deadline: Deadline) -> Result<Admitted, Failure> {
        let ticket = match &self.admission {
            Some(tickets) => Some(
                Arc::clone(tickets)
                    .try_acquire_owned()
                    .map_err(|_| Failure::Busy)?,
            ),
            None => None,
        };
        Ok(Admitted { ticket, deadline })
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
    /// must not hold an async worker (a slow upload check must not delay /health). It is
    /// cancelled at the upload request's `deadline`.
    ///
    /// # Errors
    /// [`Failure::Pipeline`] for a non-image (415), a bomb or an undecodable body (422).
    pub(crate) async fn verify(
        &self,
        bytes: bytes::Bytes,
        max_source_pixels: u64,
        deadline: Deadline,
    ) -> Result<SourceInfo, Failure> {
        let sniffed = image_pipeline::sniff(&bytes);
        let admitted = Admitted {
            ticket: None,
            deadline,
        };
        self.run(sniffed, admitted, move || {
            let info = image_pipeline::probe(&bytes, max_source_pixels)?;
            image_pipeline::verify(&bytes, &info).map(|()| info)
        })
        .await
    }

    /// Runs `job` on a blocking thread once the HEIF gate (for a HEIF `format`) and a slot
    /// are held; the job owns them, `admitted` and the running gauge until it ends, and runs
    /// under a [`Cancel`] with the request's deadline (`admitted`'s) that this future also sets
    /// when it is dropped. A job whose deadline has passed by the time it could start does not
    /// start.
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
        let deadline = admitted.deadline;
        let timed_out = Failure::Timeout(deadline.secs);
        let cancel = Cancel::new().with_deadline(deadline.at);
        if self.jobs.stopped.load(Ordering::SeqCst) || cancel.is_cancelled() {
            return Err(timed_out);
        }
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
            // The blocking pool may have queued the job: check once more before any work.
            if cancel.is_cancelled() {
                return Err(PipelineError::Cancelled);
            }
            cancel.run(job)
        })
        .await
        .map_err(|e| Failure::Internal(format!("transform task: {e}")))?
        .map_err(|e| match e {
            PipelineError::Cancelled => timed_out,
            e => Failure::Pipeline(e),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job whose request's deadline passes while it waits for a slot never starts: it
    /// answers [`Failure::Timeout`] once the slot is free, without running.
    #[tokio::test]
    async fn a_job_whose_deadline_passed_before_its_slot_never_starts() {
        let transforms = Arc::new(Transforms::new(1, 0, Arc::new(Metrics::new())));
        let admitted = |ms| Admitted {
            ticket: None,
            deadline: Deadline {
                at: Instant::now() + Duration::from_millis(ms),
                secs: 7,
            },
        };
        let first = {
            let (transforms, admitted) = (Arc::clone(&transforms), admitted(10_000));
            tokio::spawn(async move {
                transforms
                    .run(None, admitted, || {
                        std::thread::sleep(Duration::from_millis(300));
                        Ok(())
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        let second = transforms
            .run(None, admitted(100), move || {
                flag.store(true, Ordering::SeqCst);
                Ok(())
            })
            .await;
        assert!(matches!(first.await, Ok(Ok(()))));
        assert!(matches!(second, Err(Failure::Timeout(7))), "{second:?}");
        assert!(!ran.load(Ordering::SeqCst), "the late job ran");
    }
}
