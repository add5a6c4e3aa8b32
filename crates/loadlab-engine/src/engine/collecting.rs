//! The interval collector's own thread: it merges the workers' finished intervals and hands
//! them to the sink (the CLI's spill file: JSON, compressed histograms, a write and an fsync
//! per interval) while the run goes on.
//!
//! An open loop's runs at `SCHED_IDLE` ([`sys::yield_to_workers`]): on a generator pinned to
//! one core it did this work on the worker's core at the worker's priority, about 1 ms per
//! interval on the 2-core VM, and each time the requests due meanwhile went out late
//! (docs/open-loop.md). Now it runs when the workers leave the core idle, and under full load
//! falls behind, never loses an interval: batches wait in the channel, and everything is
//! merged by the end. What reads intervals as the run goes (the spill file, `--metrics-out`,
//! the live page, a fleet's coordinator) then lags with it: on a machine whose every core
//! other work keeps busy, by as long as that lasts (a sliver of a busy core, by its weight).
//!
//! A closed loop's stays at the default policy: it has no due times to be late for, and a
//! saturated closed loop (its workers busy on every core: the usual case on loopback, and a
//! fleet's generators at full speed) starved it until the load ended, so that a fleet's page
//! got every merged interval at the end (a generator's stream waits for its collector, the
//! coordinator's merge for the slowest generator). At the default weight it takes its
//! millisecond an interval like any other thread.
//!
//! It is started before the clock starts, so that the run's first moments spend nothing on
//! starting a thread; it learns the start time through [`Collecting::started`].

use super::sys;
use crate::collector::{Batch, Build, Collector, IntervalSink};
use crate::config::RunConfig;
use crate::timeline::TrafficLog;
use loadlab_result::RunResult;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::SystemTime;

pub(super) struct Collecting {
    start: SyncSender<SystemTime>,
    thread: JoinHandle<Option<Collector>>,
}

/// What the collector needs from the run.
pub(super) struct Parts {
    pub threads: usize,
    pub header: RunResult,
    pub traffic: TrafficLog,
    pub sink: Box<dyn IntervalSink>,
    pub batches: Receiver<Batch>,
}

impl Collecting {
    /// Starts the thread; it waits for the start time, then for batches until every worker
    /// has dropped its sender.
    pub fn spawn(config: &RunConfig, parts: Parts) -> std::io::Result<Collecting> {
        let (start, started) = sync_channel::<SystemTime>(1);
        let config = config.clone();
        let thread = std::thread::Builder::new()
            .name("loadlab-collector".into())
            .spawn(move || {
                if matches!(config.model, crate::config::Model::Open { .. }) {
                    sys::yield_to_workers();
                }
                // No start time: the run did not start, and nothing goes to the sink.
                let started_at = started.recv().ok()?;
                let Parts {
                    threads,
                    mut header,
                    traffic,
                    sink,
                    batches,
                } = parts;
                crate::summary::stamp_start(&mut header, &config, started_at);
                let build: Build = Box::new(move |i, elapsed, counts, hist| {
                    crate::timeline::interval_summary(&config, i, elapsed, counts, hist, None)
                });
                let mut collector = Collector::new(threads, traffic, &header, build, sink);
                while let Ok(batch) = batches.recv() {
                    collector.receive(batch);
                }
                Some(collector)
            })?;
        Ok(Collecting { start, thread })
    }

    /// The run's clock started at `at`.
    pub fn started(&self, at: SystemTime) {
        // The thread waits for exactly this one message; it cannot be full.
        let _ = self.start.try_send(at);
    }

    /// Waits for the last batch to be merged (every worker has ended) and hands back the
    /// collector (`None` if it never learnt the start time). A panic in the sink is a bug,
    /// raised here as it would have been inline.
    pub fn finish(self) -> Option<Collector> {
        self.thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}
