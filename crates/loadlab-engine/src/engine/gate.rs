//! The start line: the run's clock starts once every worker thread is ready, so that what a
//! thread does before it can send (opening an open loop's first connections, `open::preopen`)
//! happens before the schedule's first request is due, not while requests fall due.
//!
//! A thread that ends before it is ready (a panic) still counts as ready, and a run that fails
//! to start every thread lets the started ones go without a start, so nobody waits forever.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The run's moments, fixed when the gate opens.
#[derive(Debug, Clone, Copy)]
pub(super) struct Times {
    pub start: Instant,
    pub warmup_end: Instant,
    /// `None` when the run ends by request count.
    pub deadline: Option<Instant>,
}

impl Times {
    pub fn from(start: Instant, warmup: Duration, duration: Option<Duration>) -> Times {
        let warmup_end = start + warmup;
        Times {
            start,
            warmup_end,
            deadline: duration.map(|d| warmup_end + d),
        }
    }
}

#[derive(Default)]
struct State {
    ready: usize,
    /// `Some` once opened: with the run's times, or `None` when the run did not start.
    opened: Option<Option<Times>>,
}

#[derive(Default)]
pub(super) struct StartGate {
    state: Mutex<State>,
    changed: Condvar,
}

impl StartGate {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Nothing panics while holding the lock; a poisoned one still holds good counts.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until `threads` threads are ready.
    pub fn wait_ready(&self, threads: usize) {
        let mut state = self.lock();
        while state.ready < threads {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Starts the run at `times` (`None`: it does not start; the threads end at once).
    pub fn open(&self, times: Option<Times>) {
        let mut state = self.lock();
        if state.opened.is_none() {
            state.opened = Some(times);
        }
        self.changed.notify_all();
    }

    fn mark_ready(&self) {
        self.lock().ready += 1;
        self.changed.notify_all();
    }

    fn wait_open(&self) -> Option<Times> {
        let mut state = self.lock();
        loop {
            if let Some(times) = state.opened {
                return times;
            }
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// A worker thread's place at the gate: ready once, when it says so or when it ends.
pub(super) struct Place<'a> {
    gate: &'a StartGate,
    ready: bool,
}

impl<'a> Place<'a> {
    pub fn new(gate: &'a StartGate) -> Place<'a> {
        Place { gate, ready: false }
    }

    /// This thread is ready: waits for the start (`None`: the run does not start).
    pub fn ready_and_wait(mut self) -> Option<Times> {
        self.ready = true;
        self.gate.mark_ready();
        self.gate.wait_open()
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        if !self.ready {
            self.gate.mark_ready();
        }
    }
}

/// Opens the gate with no start when dropped unopened: the run's start failed part-way.
pub(super) struct OpenOnDrop<'a>(pub &'a StartGate);

impl Drop for OpenOnDrop<'_> {
    fn drop(&mut self) {
        self.0.open(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_start_waits_for_every_thread_and_a_thread_that_dies_counts_as_ready() {
        let gate = Arc::new(StartGate::default());
        let t0 = Instant::now();
        let times = Times::from(t0, Duration::from_secs(1), Some(Duration::from_secs(5)));
        assert_eq!(times.warmup_end, t0 + Duration::from_secs(1));
        assert_eq!(times.deadline, Some(t0 + Duration::from_secs(6)));
        let waiting: Vec<_> = (0..2)
            .map(|_| {
                let gate = gate.clone();
                std::thread::spawn(move || Place::new(&gate).ready_and_wait().map(|t| t.start))
            })
            .collect();
        // A third thread ends without saying it is ready (it panicked before).
        let g = gate.clone();
        std::thread::spawn(move || drop(Place::new(&g)))
            .join()
            .unwrap();
        gate.wait_ready(3);
        gate.open(Some(times));
        for w in waiting {
            assert_eq!(w.join().unwrap(), Some(t0));
        }
    }

    #[test]
    fn a_run_that_fails_to_start_lets_the_waiting_threads_go_without_a_start() {
        let gate = Arc::new(StartGate::default());
        let g = gate.clone();
        let waiting = std::thread::spawn(move || Place::new(&g).ready_and_wait().is_none());
        drop(OpenOnDrop(&gate));
        assert!(waiting.join().unwrap());
        // Opening again later changes nothing.
        gate.open(Some(Times::from(Instant::now(), Duration::ZERO, None)));
        assert!(Place::new(&gate).ready_and_wait().is_none());
    }
}
