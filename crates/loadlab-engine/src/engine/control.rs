//! Stopping a run from another thread (Ctrl-C, a dying server, an experiment's stop) and
//! watching its progress. Shared by reference counting; written by the workers' counters.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Live counters of one worker thread, written by it alone, read by progress displays.
#[derive(Debug, Default)]
pub struct ThreadProgress {
    pub completed: AtomicU64,
    pub failed: AtomicU64,
}

/// Lets another thread stop a run (Ctrl-C) and watch its progress.
#[derive(Debug, Clone, Default)]
pub struct RunControl {
    pub(super) inner: Arc<ControlInner>,
}

#[derive(Debug, Default)]
pub(super) struct ControlInner {
    pub(super) stop: AtomicBool,
    pub(super) notify: tokio::sync::Notify,
    /// Set when the run starts.
    pub(super) started: Mutex<Option<Instant>>,
    pub(super) progress: Mutex<Vec<Arc<ThreadProgress>>>,
}

/// A snapshot for progress bars.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProgressSnapshot {
    pub elapsed: Duration,
    pub completed: u64,
    pub failed: u64,
}

impl RunControl {
    pub fn new() -> Self {
        Self::default()
    }

    /// Ends the run as soon as possible; requests in flight are abandoned and reported so.
    pub fn stop(&self) {
        self.inner.stop.store(true, Ordering::Release);
        self.inner.notify.notify_waiters();
    }

    /// When the run started (the origin of its timeline), once it has.
    pub fn started_at(&self) -> Option<Instant> {
        self.inner.started.lock().ok().and_then(|s| *s)
    }

    pub fn is_stopped(&self) -> bool {
        self.inner.stop.load(Ordering::Acquire)
    }

    pub fn progress(&self) -> ProgressSnapshot {
        let elapsed = self
            .inner
            .started
            .lock()
            .ok()
            .and_then(|s| s.map(|s| s.elapsed()))
            .unwrap_or_default();
        let threads = self
            .inner
            .progress
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default();
        let mut snap = ProgressSnapshot {
            elapsed,
            ..ProgressSnapshot::default()
        };
        for t in threads {
            snap.completed += t.completed.load(Ordering::Relaxed);
            snap.failed += t.failed.load(Ordering::Relaxed);
        }
        snap
    }

    pub(super) async fn stopped(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }
}
