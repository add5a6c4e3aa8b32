//! The interval collector: each worker thread hands over its finished intervals (serialised
//! histograms and timeline buckets) at every interval boundary; the collector merges them across
//! threads and passes each whole interval, in order, to an [`IntervalSink`] (the CLI's spill
//! file), keeping only running [`Totals`] and the few intervals some thread has not yet
//! closed. Its memory is flat in the run's length.
//!
//! It must not keep emitted intervals, do I/O of its own (that is the sink's) or read a
//! clock: it moves when batches arrive, so tests drive it with as many intervals as they
//! like in no time.

use crate::stats::{add_classes, add_messages, Bucket, ClassCounts};
use crate::timeline::{IntervalCounts, TrafficLog};
use crate::totals::Totals;
use hdrhistogram::Histogram;
use loadlab_result::{new_histogram, IntervalHealth, IntervalSummary, RunResult};
use std::collections::BTreeMap;
use std::time::Duration;

/// Where finished intervals go as the run goes on. Defined here, supplied by the caller.
pub trait IntervalSink: Send {
    /// The run's header (its result as known at the start, timeline empty), before any
    /// interval.
    fn start(&mut self, header: &RunResult) -> Result<(), String>;
    /// One finished interval, merged over every thread; called in order.
    fn interval(&mut self, interval: &IntervalSummary) -> Result<(), String>;
    /// The run ended (well or stopped): make everything durable.
    fn finish(&mut self) -> Result<(), String>;
}

/// A sink with an observer beside it: the sink's answer is the one that counts (an
/// observer's failure never stops the timeline being written).
pub(crate) struct Observed {
    pub(crate) sink: Box<dyn IntervalSink>,
    pub(crate) observer: Box<dyn IntervalSink>,
}

impl IntervalSink for Observed {
    fn start(&mut self, header: &RunResult) -> Result<(), String> {
        let written = self.sink.start(header);
        let _ = self.observer.start(header);
        written
    }

    fn interval(&mut self, interval: &IntervalSummary) -> Result<(), String> {
        let written = self.sink.interval(interval);
        let _ = self.observer.interval(interval);
        written
    }

    fn finish(&mut self) -> Result<(), String> {
        let written = self.sink.finish();
        let _ = self.observer.finish();
        written
    }
}

/// What one worker thread hands over at an interval boundary.
#[derive(Debug, Default)]
pub struct Batch {
    pub thread: usize,
    /// Every interval of this thread before `below` is in this batch or an earlier one
    /// (`usize::MAX` in the thread's last batch).
    pub below: usize,
    /// Serialised (HdrHistogram V2) response times by interval index.
    pub histograms: Vec<(usize, Vec<u8>)>,
    /// Traffic by interval index: the interval's timeline buckets.
    pub buckets: Vec<(usize, Vec<Bucket>)>,
    /// Failures by class, by interval index (only intervals that had some).
    pub failures: Vec<(usize, ClassCounts)>,
    /// A gRPC run's stream messages `[sent, received]`, by interval index (only intervals
    /// that had some).
    pub messages: Vec<(usize, [u64; 2])>,
    /// The thread's CPU seconds by interval index (see `engine::feed`): the intervals this
    /// batch closes.
    pub cpu: Vec<(usize, f64)>,
    /// The thread's last batch: how long the run had lasted when it ended.
    pub ended: Option<Duration>,
}

/// How an interval of the timeline is built from its counts and merged histogram:
/// `(index, elapsed or Duration::MAX while the run goes on, counts, histogram)`.
pub type Build = Box<
    dyn FnMut(usize, Duration, IntervalCounts, Option<&Histogram<u64>>) -> IntervalSummary + Send,
>;

/// What streaming the intervals came to, for the caller once the run has ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamReport {
    pub intervals_written: u64,
    /// The most intervals held at once (waiting for a slower thread to close them).
    pub max_held_intervals: usize,
    /// The sink's first failure; intervals after it were not written.
    pub error: Option<String>,
}

#[derive(Default)]
struct Pending {
    hist: Option<Histogram<u64>>,
    /// Summed over the threads.
    buckets: Vec<Bucket>,
    failures: ClassCounts,
    messages: Option<[u64; 2]>,
    /// The threads' CPU seconds: summed, and the most of one thread.
    cpu: Option<(f64, f64)>,
}

pub struct Collector {
    watermarks: Vec<usize>,
    pending: BTreeMap<usize, Pending>,
    next: usize,
    ended: Option<Duration>,
    build: Build,
    sink: Box<dyn IntervalSink>,
    traffic: TrafficLog,
    pub totals: Totals,
    pub report: StreamReport,
}

impl Collector {
    /// A collector for `threads` workers, whose traffic goes to `traffic`; `header` goes to
    /// the sink first.
    pub fn new(
        threads: usize,
        traffic: TrafficLog,
        header: &RunResult,
        build: Build,
        mut sink: Box<dyn IntervalSink>,
    ) -> Collector {
        let error = sink.start(header).err();
        Collector {
            watermarks: vec![0; threads],
            pending: BTreeMap::new(),
            next: 0,
            ended: None,
            build,
            sink,
            traffic,
            totals: Totals::default(),
            report: StreamReport {
                error,
                ..StreamReport::default()
            },
        }
    }

    /// Takes one thread's batch and emits every interval all threads have closed.
    pub fn receive(&mut self, batch: Batch) {
        let mut de = hdrhistogram::serialization::Deserializer::new();
        for (index, bytes) in batch.histograms {
            // Bytes we serialised ourselves; one that does not decode is dropped, not fatal.
            let Ok(h) = de.deserialize::<u64, _>(&mut &bytes[..]) else {
                continue;
            };
            let slot = self.slot(index);
            let merged = slot.hist.get_or_insert_with(new_histogram);
            let _ = merged.add(&h);
        }
        for (index, buckets) in batch.buckets {
            let sum = &mut self.slot(index).buckets;
            if sum.len() < buckets.len() {
                sum.resize(buckets.len(), Bucket::default());
            }
            for (a, b) in sum.iter_mut().zip(&buckets) {
                a.add(b);
            }
        }
        for (index, failures) in batch.failures {
            add_classes(&mut self.slot(index).failures, &failures);
        }
        for (index, messages) in batch.messages {
            let slot = &mut self.slot(index).messages;
            add_messages(slot.get_or_insert([0, 0]), &messages);
        }
        for (index, cpu_s) in batch.cpu {
            let (sum, most) = self.slot(index).cpu.get_or_insert((0.0, 0.0));
            *sum += cpu_s;
            *most = most.max(cpu_s);
        }
        if let Some(ended) = batch.ended {
            self.ended = Some(self.ended.map_or(ended, |e| e.max(ended)));
        }
        if let Some(mark) = self.watermarks.get_mut(batch.thread) {
            *mark = (*mark).max(batch.below);
        }
        self.report.max_held_intervals = self.report.max_held_intervals.max(self.pending.len());
        let upto = self.watermarks.iter().copied().min().unwrap_or(0);
        if upto != usize::MAX {
            self.emit_below(upto);
        }
    }

    /// Every thread has ended: emits what is left, the timeline running to at least
    /// `intervals` (empty ones included), and finishes the sink; gives back the traffic log.
    pub fn finish(mut self, intervals: usize) -> (Totals, StreamReport, TrafficLog) {
        let last = self.pending.keys().next_back().map_or(0, |i| i + 1);
        self.emit_below(last.max(intervals));
        if let Err(e) = self.sink.finish() {
            self.report.error.get_or_insert(e);
        }
        (self.totals, self.report, self.traffic)
    }

    /// Bytes held for intervals not yet emitted: what grows if anything does.
    pub fn held_bytes(&self) -> usize {
        self.pending
            .values()
            .map(|p| {
                std::mem::size_of::<Pending>()
                    + p.buckets.len() * std::mem::size_of::<Bucket>()
                    + p.hist.as_ref().map_or(0, |h| h.distinct_values() * 8)
            })
            .sum()
    }

    fn slot(&mut self, index: usize) -> &mut Pending {
        // An interval already emitted cannot change: a late arrival joins the next one.
        self.pending.entry(index.max(self.next)).or_default()
    }

    fn emit_below(&mut self, upto: usize) {
        let elapsed = self.ended.unwrap_or(Duration::MAX);
        while self.next < upto {
            let i = self.next;
            let p = self.pending.remove(&i).unwrap_or_default();
            self.traffic.push(i, &p.buckets);
            let counts = self.traffic.intervals.last().copied().unwrap_or_default();
            let mut summary = (self.build)(i, elapsed, counts, p.hist.as_ref());
            summary.errors = crate::timeline::class_names(&p.failures);
            self.traffic.keep_failures(i, p.failures);
            if let Some(m) = p.messages {
                summary.messages = Some(crate::timeline::step_messages(m));
                self.traffic.keep_messages(i, m);
            }
            summary.generator = p.cpu.map(|cpu| health(&summary, cpu, &p.buckets));
            self.next += 1;
            if let Err(e) = self.totals.add(&summary) {
                self.report.error.get_or_insert(e);
            }
            if self.report.error.is_none() {
                match self.sink.interval(&summary) {
                    Ok(()) => self.report.intervals_written += 1,
                    Err(e) => self.report.error = Some(e),
                }
            }
        }
    }
}

/// Interval `summary`'s generator health: its threads' CPU `(summed, most of one)` and the
/// lateness its `buckets` counted (an open loop's: it has an offered rate).
fn health(
    summary: &IntervalSummary,
    (cpu_s, most): (f64, f64),
    buckets: &[Bucket],
) -> IntervalHealth {
    let (late, lag_max_us) = Bucket::lateness(buckets);
    let open = summary.offered_per_s.is_some() && summary.completed > 0;
    IntervalHealth {
        cpu_s,
        // A hand-over late by a bucket can bill a thread a little more than the interval.
        busiest_thread: (most / summary.duration_s.max(1e-6)).min(1.0),
        lag_max_us: open.then_some(f64::from(lag_max_us)),
        late,
    }
}

#[cfg(test)]
mod tests;
