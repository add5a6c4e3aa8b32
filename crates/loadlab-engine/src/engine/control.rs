//! Stopping a run from another thread (Ctrl-C, a dying server, an experiment's stop) and
//! watching its progress. Shared by reference counting; written by the workers' counters.

use crate::collector::{IntervalSink, StreamReport};
use crate::ErrorClass;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Live counters of one worker thread, written by it alone, read by progress displays.
#[derive(Debug)]
pub struct ThreadProgress {
    pub completed: AtomicU64,
    pub failed: AtomicU64,
    /// `failed`, by class (indexed by `ErrorClass as usize`): touched only on a failure.
    pub failed_by_class: [AtomicU64; ErrorClass::COUNT],
    /// Requests sent and not yet answered (the thread's recorder's count, mirrored).
    pub in_flight: AtomicU64,
    /// Connections open now: counted as each opens, and no longer as it is dropped.
    pub connections_open: AtomicU64,
}

// By hand: `Default` is derived for arrays of at most 32, and there are more classes.
impl Default for ThreadProgress {
    fn default() -> Self {
        ThreadProgress {
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            failed_by_class: std::array::from_fn(|_| AtomicU64::new(0)),
            in_flight: AtomicU64::new(0),
            connections_open: AtomicU64::new(0),
        }
    }
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
    /// Where the next run streams its finished intervals, if anywhere.
    pub(super) sink: Mutex<Option<SinkSlot>>,
    pub(super) stream_report: Mutex<Option<StreamReport>>,
    /// A run driven elsewhere ([`RunControl::begin_external`]): its parts' counters hold only
    /// what their intervals told (no requests in flight, no connections open).
    pub(super) external: AtomicBool,
    /// Who sees each part's own intervals in such a run, until it finishes.
    pub(super) part_observers: Mutex<Vec<PartSlot>>,
    /// An HTTP/3 run's QUIC connections, for the path's sampler (`h3::paths`).
    pub(super) quic: Arc<super::QuicPaths>,
}

/// Sees each part's own finished intervals in a run driven elsewhere (the shards of a
/// generator fleet), as they arrive, before they are merged.
pub trait PartObserver: Send {
    fn interval(&mut self, part: usize, interval: &loadlab_result::IntervalSummary);
}

pub(super) struct PartSlot(Box<dyn PartObserver>);

impl std::fmt::Debug for PartSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PartObserver")
    }
}

pub(super) struct SinkSlot(pub(super) Box<dyn IntervalSink>);

impl std::fmt::Debug for SinkSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IntervalSink")
    }
}

/// A snapshot for progress bars.
#[derive(Debug, Clone, Copy)]
pub struct ProgressSnapshot {
    pub elapsed: Duration,
    pub completed: u64,
    pub failed: u64,
    /// `failed` by class, indexed by `ErrorClass as usize`.
    pub failed_by_class: [u64; ErrorClass::COUNT],
    /// Requests sent and not yet answered.
    pub in_flight: u64,
    /// Connections open now.
    pub connections_open: u64,
    /// The run is driven elsewhere (a fleet's shards): `in_flight` and `connections_open`
    /// are not known here (they read 0).
    pub remote: bool,
}

// By hand, as `ThreadProgress`'s.
impl Default for ProgressSnapshot {
    fn default() -> Self {
        ProgressSnapshot {
            elapsed: Duration::ZERO,
            completed: 0,
            failed: 0,
            failed_by_class: [0; ErrorClass::COUNT],
            in_flight: 0,
            connections_open: 0,
            remote: false,
        }
    }
}

impl ProgressSnapshot {
    /// The classes that occurred so far, by their keys (`connect_refused`, ...), as the
    /// result's `errors` names them.
    pub fn failed_classes(&self) -> Vec<(&'static str, u64)> {
        ErrorClass::ALL
            .iter()
            .map(|c| (c.key(), self.failed_by_class[*c as usize]))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
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

    /// The next run hands each finished interval to `sink` as it finishes, and keeps only
    /// running totals of them (the result's timeline then comes from what the sink wrote).
    pub fn stream_intervals_to(&self, sink: Box<dyn IntervalSink>) {
        if let Ok(mut slot) = self.inner.sink.lock() {
            *slot = Some(SinkSlot(sink));
        }
    }

    /// Also shows each finished interval to `observer`, after the sink set by
    /// [`RunControl::stream_intervals_to`] has taken it. Only beside such a sink: the sink is
    /// what keeps the timeline, an observer keeps nothing. Returns false (and drops
    /// `observer`) when no sink is set.
    pub fn observe_intervals(&self, observer: Box<dyn IntervalSink>) -> bool {
        let Ok(mut slot) = self.inner.sink.lock() else {
            return false;
        };
        match slot.take() {
            Some(SinkSlot(sink)) => {
                *slot = Some(SinkSlot(Box::new(crate::collector::Observed {
                    sink,
                    observer,
                })));
                true
            }
            None => false,
        }
    }

    /// What streaming the intervals came to, once the run has ended.
    pub fn stream_report(&self) -> Option<StreamReport> {
        self.inner.stream_report.lock().ok().and_then(|r| r.clone())
    }

    /// For a run driven elsewhere (the shards of a generator fleet, run by agents on other
    /// hosts): the run starts now, at `at`, with a progress counter per remote part, and the
    /// sink set for it is handed to the driver, which feeds it the merged intervals and
    /// reports how that went with [`RunControl::finish_external`]. The engine's own run does
    /// none of this: it is the same contract, kept by whoever drives the load.
    pub fn begin_external(
        &self,
        at: Instant,
        parts: usize,
    ) -> (Option<Box<dyn IntervalSink>>, Vec<Arc<ThreadProgress>>) {
        if let Ok(mut started) = self.inner.started.lock() {
            *started = Some(at);
        }
        let counters: Vec<Arc<ThreadProgress>> = (0..parts)
            .map(|_| Arc::new(ThreadProgress::default()))
            .collect();
        if let Ok(mut progress) = self.inner.progress.lock() {
            progress.clear();
            progress.extend(counters.iter().cloned());
        }
        self.inner.external.store(true, Ordering::Release);
        (self.take_sink(), counters)
    }

    /// What feeding the sink of [`RunControl::begin_external`] came to; the part observers
    /// are let go.
    pub fn finish_external(&self, report: StreamReport) {
        self.set_stream_report(report);
        if let Ok(mut o) = self.inner.part_observers.lock() {
            o.clear();
        }
    }

    /// In the next run driven elsewhere, shows each part's own intervals to `observer` as
    /// the driver gets them ([`RunControl::part_interval`]); dropped when that run finishes.
    pub fn observe_parts(&self, observer: Box<dyn PartObserver>) {
        if let Ok(mut o) = self.inner.part_observers.lock() {
            o.push(PartSlot(observer));
        }
    }

    /// The driver of a run driven elsewhere hands part `part`'s interval to the observers.
    pub fn part_interval(&self, part: usize, interval: &loadlab_result::IntervalSummary) {
        if let Ok(mut observers) = self.inner.part_observers.lock() {
            for o in observers.iter_mut() {
                o.0.interval(part, interval);
            }
        }
    }

    /// Part `part`'s counters in a run driven elsewhere (a worker thread's in the engine's).
    pub fn progress_of(&self, part: usize) -> Option<ProgressSnapshot> {
        let t = self.inner.progress.lock().ok()?.get(part).cloned()?;
        Some(self.snapshot(std::slice::from_ref(&t)))
    }

    pub(super) fn take_sink(&self) -> Option<Box<dyn IntervalSink>> {
        self.inner
            .sink
            .lock()
            .ok()
            .and_then(|mut s| s.take())
            .map(|s| s.0)
    }

    pub(super) fn set_stream_report(&self, report: StreamReport) {
        if let Ok(mut r) = self.inner.stream_report.lock() {
            *r = Some(report);
        }
    }

    /// An HTTP/3 run's QUIC connections while they live: the path's figures over QUIC,
    /// where the kernel keeps none (docs/path.md).
    pub fn quic_paths(&self) -> &Arc<super::QuicPaths> {
        &self.inner.quic
    }

    pub fn is_stopped(&self) -> bool {
        self.inner.stop.load(Ordering::Acquire)
    }

    pub fn progress(&self) -> ProgressSnapshot {
        let threads = self
            .inner
            .progress
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default();
        self.snapshot(&threads)
    }

    fn snapshot(&self, threads: &[Arc<ThreadProgress>]) -> ProgressSnapshot {
        let elapsed = self
            .inner
            .started
            .lock()
            .ok()
            .and_then(|s| s.map(|s| s.elapsed()))
            .unwrap_or_default();
        let mut snap = ProgressSnapshot {
            elapsed,
            remote: self.inner.external.load(Ordering::Acquire),
            ..ProgressSnapshot::default()
        };
        for t in threads {
            snap.completed += t.completed.load(Ordering::Relaxed);
            snap.failed += t.failed.load(Ordering::Relaxed);
            snap.in_flight += t.in_flight.load(Ordering::Relaxed);
            snap.connections_open += t.connections_open.load(Ordering::Relaxed);
            for (sum, n) in snap.failed_by_class.iter_mut().zip(&t.failed_by_class) {
                *sum += n.load(Ordering::Relaxed);
            }
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
