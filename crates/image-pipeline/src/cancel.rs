//! Cancellation of a running transformation: a job stops at its request's deadline or when
//! its client leaves, so the server's work never outlives its admission.
//!
//! The server hands a [`Cancel`] to the blocking job and runs the pipeline inside
//! [`Cancel::run`]; the pipeline calls [`check`] between its stages (after the plan, after the
//! decode and resize, after the finishing operations, before the encode) and before each frame
//! of an animation, and stops with [`PipelineError::Cancelled`] once the flag is set (the
//! client hung up, the server is shutting down) or the deadline has passed. The token lives in
//! a thread-local for the duration of [`Cancel::run`], so the stages need no extra argument;
//! outside `run` [`check`] never cancels.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::PipelineError;

/// A cancellation flag shared between the job and whoever may stop it, with an optional
/// deadline. Cloning shares the flag.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
    deadline: Option<Instant>,
}

impl Cancel {
    /// A token that is not cancelled and has no deadline.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The same flag, also cancelled once `deadline` has passed.
    #[must_use]
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Sets the flag: every clone sees it at its next check.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether the flag is set or the deadline has passed.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed) || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Runs `f` with this token installed for [`check`] on this thread.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        struct Restore(Option<Cancel>);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.with(|c| *c.borrow_mut() = self.0.take());
            }
        }
        let _restore = Restore(CURRENT.with(|c| c.borrow_mut().replace(self.clone())));
        f()
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Cancel>> = const { RefCell::new(None) };
}

/// [`PipelineError::Cancelled`] when the token of the enclosing [`Cancel::run`] is cancelled.
pub(crate) fn check() -> Result<(), PipelineError> {
    let cancelled = CURRENT.with(|c| c.borrow().as_ref().is_some_and(Cancel::is_cancelled));
    if cancelled {
        Err(PipelineError::Cancelled)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_sees_the_flag_and_the_deadline_only_inside_run() {
        let cancel = Cancel::new();
        assert_eq!(cancel.run(check), Ok(()));
        cancel.clone().cancel();
        assert_eq!(cancel.run(check), Err(PipelineError::Cancelled));
        assert_eq!(check(), Ok(()), "outside run nothing is cancelled");
        let late = Cancel::new().with_deadline(Instant::now());
        assert_eq!(late.run(check), Err(PipelineError::Cancelled));
    }
}
