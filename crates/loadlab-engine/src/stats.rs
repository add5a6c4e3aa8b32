//! Per-thread measurement state. Each worker thread owns one [`Recorder`] and nothing on the
//! hot path is shared between threads: recorders are merged once, after the run.

use crate::error::ErrorClass;
use hdrhistogram::Histogram;
use std::time::Duration;

pub use loadlab_result::histogram::{new_histogram, HIST_MAX_NS};

pub use crate::buckets::{
    add_classes, add_messages, Bucket, Busiest, ClassCounts, Timeline, BUCKET, BUCKETS_PER_SECOND,
};

/// Whether a request belongs to the warm-up or to the measured part of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Warmup = 0,
    Measured = 1,
}

/// Everything counted for one phase.
#[derive(Debug, Clone)]
pub struct PhaseStats {
    /// Response time: from the intended send time to the last byte read. In a closed loop a
    /// request is intended when it is sent; in an open loop, when the schedule says.
    pub latency: Histogram<u64>,
    /// Service time: from writing the first byte to reading the last (open loop only; in a
    /// closed loop it equals `latency`).
    pub service: Histogram<u64>,
    /// Time to first byte: from writing the first byte to reading the first.
    pub ttfb: Histogram<u64>,
    /// Open loop: actual send minus intended send, whatever the cause (the generator was
    /// late, every connection was busy, a connection had to be opened).
    pub send_lag: Histogram<u64>,
    /// Open loop: how late the generator itself noticed a request was due. Its own health.
    pub scheduler_lag: Histogram<u64>,
    /// TCP connection setup, apart from request latency.
    pub connect: Histogram<u64>,
    /// TLS handshakes, after the TCP connection was set up.
    pub tls_handshake: Histogram<u64>,
    /// Handshakes that resumed an earlier session, and full ones.
    pub tls_resumed: u64,
    pub tls_full: u64,
    /// The first message seen for each failure class (certificate reasons and the like).
    pub error_details: Vec<Option<String>>,
    pub issued: u64,
    pub completed: u64,
    pub failed: u64,
    /// Indexed by status code (httparse only yields three digits).
    pub status: Vec<u64>,
    pub errors: [u64; ErrorClass::COUNT],
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub connections_opened: u64,
    /// Open loop: requests due before the end that never got a connection.
    pub not_sent: u64,
    /// Time spent waiting for servers to close after announcing `Connection: close`, and
    /// the waits that ended with the server still not closed.
    pub close_wait: Duration,
    pub close_wait_timeouts: u64,
    /// Requests sent again because the server said it had not processed them (HTTP/2: a
    /// stream above a graceful GOAWAY's last stream id, or REFUSED_STREAM), each still
    /// issued once.
    pub retried: u64,
    /// HTTP/3 with `--http3-0rtt`: connections and requests that went as early data.
    pub early: EarlyStats,
    /// HTTP/3: the UDP bytes its connections sent and received (`bytes_*` are DATA payload
    /// there); None for the protocols whose `bytes_*` are already every byte.
    pub wire: Option<loadlab_result::WireBytes>,
}

/// `--http3-0rtt`'s figures: the result's counts (`EarlyData`: connections that resumed with
/// 0-RTT, their handshake's end seen, and the requests they sent before it ended), and the
/// handshakes' times.
#[derive(Debug, Clone, Default)]
pub struct EarlyStats {
    /// Its `handshake_us` is left out: the summary makes it from `handshake`.
    pub counts: loadlab_result::EarlyData,
    /// The 0-RTT connections' handshakes, first packet to the handshake's end. None until
    /// one is recorded: most runs have none, and a histogram is a quarter of a megabyte.
    pub handshake: Option<Histogram<u64>>,
}

impl EarlyStats {
    pub fn record_handshake(&mut self, ns: u64) {
        self.handshake
            .get_or_insert_with(new_histogram)
            .saturating_record(ns);
    }

    fn merge(&mut self, other: &EarlyStats) {
        self.counts.add_counts(&other.counts);
        if let Some(h) = &other.handshake {
            self.handshake
                .get_or_insert_with(new_histogram)
                .add(h)
                .expect("same histogram bounds");
        }
    }
}

impl Default for PhaseStats {
    fn default() -> Self {
        PhaseStats {
            latency: new_histogram(),
            service: new_histogram(),
            ttfb: new_histogram(),
            send_lag: new_histogram(),
            scheduler_lag: new_histogram(),
            connect: new_histogram(),
            tls_handshake: new_histogram(),
            tls_resumed: 0,
            tls_full: 0,
            error_details: vec![None; ErrorClass::COUNT],
            issued: 0,
            completed: 0,
            failed: 0,
            status: vec![0; 1000],
            errors: [0; ErrorClass::COUNT],
            bytes_sent: 0,
            bytes_received: 0,
            connections_opened: 0,
            not_sent: 0,
            close_wait: Duration::ZERO,
            close_wait_timeouts: 0,
            retried: 0,
            early: EarlyStats::default(),
            wire: None,
        }
    }
}

impl PhaseStats {
    pub fn merge(&mut self, other: &PhaseStats) {
        // Same bounds on both sides: `add` cannot fail.
        for (a, b) in [
            (&mut self.latency, &other.latency),
            (&mut self.service, &other.service),
            (&mut self.ttfb, &other.ttfb),
            (&mut self.send_lag, &other.send_lag),
            (&mut self.scheduler_lag, &other.scheduler_lag),
            (&mut self.connect, &other.connect),
            (&mut self.tls_handshake, &other.tls_handshake),
        ] {
            a.add(b).expect("same histogram bounds");
        }
        self.issued += other.issued;
        self.completed += other.completed;
        self.failed += other.failed;
        for (a, b) in self.status.iter_mut().zip(&other.status) {
            *a += b;
        }
        for (a, b) in self.errors.iter_mut().zip(&other.errors) {
            *a += b;
        }
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.connections_opened += other.connections_opened;
        self.not_sent += other.not_sent;
        self.close_wait += other.close_wait;
        self.close_wait_timeouts += other.close_wait_timeouts;
        self.retried += other.retried;
        self.early.merge(&other.early);
        if let Some(w) = &other.wire {
            self.wire.get_or_insert_with(Default::default).add(w);
        }
        self.tls_resumed += other.tls_resumed;
        self.tls_full += other.tls_full;
        for (a, b) in self.error_details.iter_mut().zip(&other.error_details) {
            if a.is_none() {
                a.clone_from(b);
            }
        }
    }
}

/// Response times per interval of the run (by completion time), for the timeline and the
/// HdrHistogram interval log. A worker keeps only the current interval's histogram in full;
/// finished ones are kept serialised (HdrHistogram V2, uncompressed: a few hundred bytes, and
/// fast enough to write once per interval on the worker thread).
#[derive(Debug, Clone)]
pub struct Intervals {
    pub length: Duration,
    current: usize,
    hist: Histogram<u64>,
    pub done: Vec<(usize, Vec<u8>)>,
    /// The first interval still open: those before it were handed to the interval collector,
    /// so a late record (a moment taken before the hand-over) lands in the open one.
    floor: usize,
}

impl Intervals {
    pub fn new(length: Duration) -> Intervals {
        Intervals {
            length,
            current: 0,
            hist: new_histogram(),
            done: Vec::new(),
            floor: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, since_start: Duration, value_ns: u64) {
        let index = ((since_start.as_nanos() / self.length.as_nanos()) as usize).max(self.floor);
        if index != self.current {
            self.close_current();
            self.current = index;
        }
        self.hist.saturating_record(value_ns);
    }

    fn close_current(&mut self) {
        use hdrhistogram::serialization::{Serializer, V2Serializer};
        if self.hist.is_empty() {
            return;
        }
        let mut bytes = Vec::new();
        V2Serializer::new()
            .serialize(&self.hist, &mut bytes)
            .expect("in-memory serialisation");
        self.done.push((self.current, bytes));
        self.hist.reset();
    }

    /// Closes the last interval; call once, when the worker ends.
    pub fn finish(&mut self) {
        self.close_current();
    }

    /// Closes every interval before `below` and takes the finished ones out (the collector's
    /// hand-over): after this, nothing more is recorded before `below`.
    pub fn take_below(&mut self, below: usize) -> Vec<(usize, Vec<u8>)> {
        if self.current < below {
            self.close_current();
            self.current = below;
        }
        self.floor = self.floor.max(below);
        std::mem::take(&mut self.done)
    }

    /// Merges every thread's intervals: one histogram per interval index, in order.
    pub fn merge_all<'a>(all: impl Iterator<Item = &'a Intervals>) -> Vec<(usize, Histogram<u64>)> {
        let mut merged: std::collections::BTreeMap<usize, Histogram<u64>> = Default::default();
        let mut de = hdrhistogram::serialization::Deserializer::new();
        for iv in all {
            for (index, bytes) in &iv.done {
                let h: Histogram<u64> = de
                    .deserialize(&mut &bytes[..])
                    .expect("we serialised it ourselves");
                merged
                    .entry(*index)
                    .or_insert_with(new_histogram)
                    .add(&h)
                    .expect("same bounds");
            }
        }
        merged.into_iter().collect()
    }
}

impl Default for Intervals {
    fn default() -> Self {
        Intervals::new(Duration::from_secs(1))
    }
}

/// One worker thread's measurements.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    pub phases: [PhaseStats; 2],
    pub timeline: Timeline,
    pub intervals: Intervals,
    /// Requests sent whose outcome is not yet known.
    pub in_flight: u64,
    /// The run's first [`FIRST_REQUESTS`] completed requests (counted across threads), apart.
    pub first: FirstRecorder,
    /// A scenario run: per-step figures (measured part only).
    pub scenario: Option<crate::steps::ScenarioStats>,
    /// A gRPC run: per-message figures (measured part only).
    pub grpc: Option<crate::grpc::stats::GrpcStats>,
    /// HTTP/2 and HTTP/3: the most streams a server allowed open at once on a connection
    /// while it held back one of the `--streams` asked (0: it never did; see
    /// `engine::streams`).
    pub streams_allowed: usize,
    /// When the thread's last request ended (answered, failed, or given up by an open loop's
    /// drain), from the start: an open loop's rates count the drain up to it (see
    /// `summary::drain`).
    pub last_end: Duration,
}

/// How many completed requests make up a run's "first requests", compared with the rest to
/// flag a cold start. A count, not a time window: a window's share of slow requests depends
/// on how fast the warm ones are, so a cold start covering most of a window could still leave
/// its median untouched.
pub const FIRST_REQUESTS: u64 = 100;

/// Response times of the run's first requests, and of those among them that were measured
/// (not warm-up), so that the rest can be had by subtraction from the measured histogram.
#[derive(Debug, Clone)]
pub struct FirstRecorder {
    pub all: Histogram<u64>,
    pub measured: Histogram<u64>,
    /// When the last of them completed, from the start of the run.
    pub last_end: Duration,
}

impl Default for FirstRecorder {
    fn default() -> Self {
        FirstRecorder {
            all: new_histogram(),
            measured: new_histogram(),
            last_end: Duration::ZERO,
        }
    }
}

impl FirstRecorder {
    pub fn merge(&mut self, other: &FirstRecorder) {
        self.all.add(&other.all).expect("same bounds");
        self.measured.add(&other.measured).expect("same bounds");
        self.last_end = self.last_end.max(other.last_end);
    }
}

impl Recorder {
    #[inline]
    pub fn phase(&mut self, phase: Phase) -> &mut PhaseStats {
        &mut self.phases[phase as usize]
    }

    pub fn merge(&mut self, other: &Recorder) {
        for (a, b) in self.phases.iter_mut().zip(&other.phases) {
            a.merge(b);
        }
        self.timeline.merge(&other.timeline);
        self.in_flight += other.in_flight;
        self.first.merge(&other.first);
        self.streams_allowed = self.streams_allowed.max(other.streams_allowed);
        self.last_end = self.last_end.max(other.last_end);
        match (&mut self.scenario, &other.scenario) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.scenario = Some(b.clone()),
            _ => {}
        }
        match (&mut self.grpc, &other.grpc) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.grpc = Some(b.clone()),
            _ => {}
        }
        // Intervals are merged separately (`Intervals::merge_all`): they need decoding.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_split_by_completion_time_and_merge() {
        let mut a = Intervals::new(Duration::from_secs(1));
        let mut b = Intervals::new(Duration::from_secs(1));
        a.record(Duration::from_millis(100), 1_000);
        a.record(Duration::from_millis(900), 2_000);
        a.record(Duration::from_millis(2_500), 9_000);
        b.record(Duration::from_millis(950), 4_000);
        a.finish();
        b.finish();
        let merged = Intervals::merge_all([&a, &b].into_iter());
        let summary: Vec<(usize, u64)> = merged.iter().map(|(i, h)| (*i, h.len())).collect();
        assert_eq!(summary, [(0, 3), (2, 1)]);
        assert_eq!(merged[0].1.max(), 4_000 + 1); // highest equivalent value at 3 digits
    }

    #[test]
    fn merge_adds_everything() {
        let mut a = Recorder::default();
        let mut b = Recorder::default();
        a.phase(Phase::Measured).latency.record(1_000).unwrap();
        b.phase(Phase::Measured).latency.record(3_000).unwrap();
        b.phase(Phase::Measured).service.record(2_000).unwrap();
        b.phase(Phase::Measured).scheduler_lag.record(10).unwrap();
        b.phase(Phase::Measured).status[200] = 2;
        b.phase(Phase::Warmup).errors[0] = 1;
        b.timeline.at(Duration::from_millis(250)).completed = 4;
        a.merge(&b);
        let m = &a.phases[Phase::Measured as usize];
        assert_eq!(m.latency.len(), 2);
        assert_eq!((m.service.len(), m.scheduler_lag.len()), (1, 1));
        assert_eq!(m.status[200], 2);
        assert_eq!(a.phases[Phase::Warmup as usize].errors[0], 1);
        assert_eq!(a.timeline.span(2, 3)[0].completed, 4);
    }
}
