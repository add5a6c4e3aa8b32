//! The collector driven by hand: many intervals from several threads, in no time.

use super::*;
use loadlab_result::encode_histogram;
use std::sync::{Arc, Mutex};

/// What the sink saw, shared with the test.
#[derive(Default)]
struct Seen {
    header: bool,
    starts_s: Vec<f64>,
    completed: u64,
    histograms: u64,
    finished: bool,
    /// Each interval's failures by class, as written.
    errors: Vec<std::collections::BTreeMap<String, u64>>,
    /// Each interval's gRPC messages, as written.
    messages: Vec<Option<loadlab_result::scenario::StepMessages>>,
    /// Each interval's generator health, as written.
    health: Vec<Option<IntervalHealth>>,
}

struct TestSink {
    seen: Arc<Mutex<Seen>>,
    fail_after: Option<usize>,
}

impl IntervalSink for TestSink {
    fn start(&mut self, _header: &RunResult) -> Result<(), String> {
        self.seen.lock().unwrap().header = true;
        Ok(())
    }
    fn interval(&mut self, iv: &IntervalSummary) -> Result<(), String> {
        let mut seen = self.seen.lock().unwrap();
        if self.fail_after == Some(seen.starts_s.len()) {
            return Err("disk full".into());
        }
        seen.starts_s.push(iv.start_s);
        seen.completed += iv.completed;
        seen.histograms += u64::from(iv.histogram.is_some());
        seen.errors.push(iv.errors.clone());
        seen.messages.push(iv.messages);
        seen.health.push(iv.generator);
        Ok(())
    }
    fn finish(&mut self) -> Result<(), String> {
        self.seen.lock().unwrap().finished = true;
        Ok(())
    }
}

fn build() -> Build {
    Box::new(|i, _elapsed, counts, hist| IntervalSummary {
        start_s: i as f64,
        duration_s: 1.0,
        partial: false,
        warmup: false,
        offered_per_s: None,
        connections: None,
        achieved_per_s: counts.completed as f64,
        completed: counts.completed,
        failed: counts.failed,
        p50_us: None,
        p90_us: None,
        p99_us: None,
        max_us: None,
        bytes_sent: counts.bytes_sent,
        bytes_received: counts.bytes_received,
        steal: None,
        histogram: hist.map(encode_histogram),
        server: None,
        errors: Default::default(),
        messages: None,
        generator: None,
    })
}

fn header() -> RunResult {
    let text = include_str!("../../../loadlab-report/tests/fixtures/open.json");
    serde_json::from_str(text).expect("the fixture is a result")
}

fn collector(threads: usize, fail_after: Option<usize>) -> (Collector, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let sink = TestSink {
        seen: seen.clone(),
        fail_after,
    };
    (
        Collector::new(
            threads,
            TrafficLog::with(Duration::from_secs(1), Duration::ZERO, None),
            &header(),
            build(),
            Box::new(sink),
        ),
        seen,
    )
}

/// One thread's batch for interval `index`: `n` responses of a latency that varies with the
/// thread and the interval (so every interval's histogram differs).
fn batch(thread: usize, index: usize, n: u64, all: &mut Histogram<u64>) -> Batch {
    use hdrhistogram::serialization::{Serializer, V2Serializer};
    let mut h = new_histogram();
    for k in 0..n {
        let v = 1_000 + (index as u64 * 7_919 + thread as u64 * 104_729 + k * 31) % 5_000_000;
        h.record(v).unwrap();
        all.record(v).unwrap();
    }
    let mut bytes = Vec::new();
    V2Serializer::new().serialize(&h, &mut bytes).unwrap();
    let bucket = Bucket {
        completed: n,
        failed: 0,
        bytes_sent: 100 * n,
        bytes_received: 1_000 * n,
        ..Bucket::default()
    };
    Batch {
        thread,
        below: index + 1,
        histograms: vec![(index, bytes)],
        buckets: vec![(index, vec![bucket])],
        failures: Vec::new(),
        messages: Vec::new(),
        cpu: Vec::new(),
        ended: None,
    }
}

#[test]
fn five_thousand_intervals_in_flat_memory_with_exact_totals() {
    const THREADS: usize = 4;
    const INTERVALS: usize = 5_000;
    let (mut c, seen) = collector(THREADS, None);
    let mut all = new_histogram();
    let mut held_after_warmup = 0;
    let mut held_max = 0;
    for i in 0..INTERVALS {
        for t in 0..THREADS {
            c.receive(batch(t, i, 3, &mut all));
        }
        held_max = held_max.max(c.held_bytes());
        if i == 100 {
            held_after_warmup = held_max;
        }
    }
    // Whatever the run's length, the collector holds at most the intervals some thread has
    // not closed: nothing here, since each thread closes each one.
    assert_eq!(held_max, held_after_warmup);
    assert!(held_max < 64 << 10, "{held_max} bytes held");
    for t in 0..THREADS {
        c.receive(Batch {
            thread: t,
            below: usize::MAX,
            ended: Some(Duration::from_secs(INTERVALS as u64)),
            ..Batch::default()
        });
    }
    let (totals, report, _) = c.finish(INTERVALS);
    assert_eq!(report.intervals_written, INTERVALS as u64);
    assert_eq!(report.error, None);
    let seen = seen.lock().unwrap();
    assert!(seen.header && seen.finished);
    assert_eq!(seen.starts_s.len(), INTERVALS);
    assert!(seen.starts_s.windows(2).all(|w| w[1] == w[0] + 1.0));
    let expected = (THREADS * INTERVALS * 3) as u64;
    assert_eq!(totals.measured.completed, expected);
    assert_eq!(seen.completed, expected);
    // The merge over the intervals is the merge of every response, exactly.
    assert_eq!(totals.measured.latency, all);
    assert_eq!(seen.histograms, INTERVALS as u64);
}

#[test]
fn a_slow_thread_holds_back_only_its_own_lag_and_late_data_joins_the_next_interval() {
    let (mut c, seen) = collector(2, None);
    let mut all = new_histogram();
    // Thread 1 hands over three intervals late.
    for i in 0..10 {
        c.receive(batch(0, i, 2, &mut all));
        if i >= 3 {
            c.receive(batch(1, i - 3, 2, &mut all));
        }
    }
    assert_eq!(seen.lock().unwrap().starts_s.len(), 7);
    assert!(c.report.max_held_intervals <= 4, "{:?}", c.report);
    // A record of thread 0 for interval 2, already written: it lands in interval 7.
    let mut late = batch(0, 2, 1, &mut all);
    late.below = 10;
    c.receive(late);
    for t in 0..2 {
        c.receive(Batch {
            thread: t,
            below: usize::MAX,
            ended: Some(Duration::from_millis(9_500)),
            ..Batch::default()
        });
    }
    let (totals, report, _) = c.finish(10);
    // Thread 1's last three intervals were never handed over: 10 intervals, not 13.
    assert_eq!(report.intervals_written, 10);
    assert_eq!(totals.measured.completed, 10 * 2 + 7 * 2 + 1);
    assert_eq!(totals.measured.latency, all);
}

#[test]
fn empty_intervals_are_written_and_a_failing_sink_stops_being_written() {
    let (mut c, seen) = collector(1, Some(3));
    let mut all = new_histogram();
    c.receive(batch(0, 0, 1, &mut all));
    // Nothing finished in intervals 1 to 4.
    c.receive(batch(0, 5, 1, &mut all));
    let (totals, report, _) = c.finish(8);
    assert_eq!(seen.lock().unwrap().starts_s, [0.0, 1.0, 2.0]);
    assert_eq!(report.intervals_written, 3);
    assert_eq!(report.error.as_deref(), Some("disk full"));
    // The totals still count every interval: only the sink failed.
    assert_eq!(totals.measured.intervals, 8);
    assert_eq!(totals.measured.completed, 2);
}

/// Two threads' failures by class (connection refused is class 0, a timeout 3): each
/// interval is written with the sum of both threads' classes for it, a late one joining the
/// next interval as its counts do.
#[test]
fn each_interval_carries_its_failures_by_class_summed_over_threads() {
    let (mut c, seen) = collector(2, None);
    // The buckets count the same failures (the totals refuse classes beyond them).
    let with = |thread: usize, index: usize, failures: Vec<(usize, ClassCounts)>| Batch {
        thread,
        below: index + 1,
        buckets: failures
            .iter()
            .map(|(i, classes)| {
                let failed = classes.iter().map(|(_, n)| n).sum();
                (
                    *i,
                    vec![Bucket {
                        failed,
                        ..Bucket::default()
                    }],
                )
            })
            .collect(),
        failures,
        ..Batch::default()
    };
    c.receive(with(0, 0, vec![(0, vec![(0, 2), (3, 1)])]));
    c.receive(with(1, 0, vec![(0, vec![(3, 4)])]));
    c.receive(with(0, 1, vec![(1, vec![(0, 1)])]));
    // Thread 1's record for interval 0, handed over after it was written: it joins 1.
    c.receive(with(1, 1, vec![(0, vec![(0, 5)])]));
    let (_, report, traffic) = c.finish(3);
    assert_eq!(report.intervals_written, 3);
    let names = |pairs: &[(&str, u64)]| -> std::collections::BTreeMap<String, u64> {
        pairs.iter().map(|(k, n)| (k.to_string(), *n)).collect()
    };
    assert_eq!(
        seen.lock().unwrap().errors,
        [
            names(&[("connect_refused", 2), ("request_timeout", 5)]),
            names(&[("connect_refused", 6)]),
            names(&[]),
        ]
    );
    // The traffic log keeps the same, for the end-of-run summary.
    assert_eq!(traffic.failures.get(&1), Some(&vec![(0, 6)]));
    assert_eq!(traffic.failures.get(&2), None);
}

/// Two threads' gRPC messages: each interval is written with both threads' sum, a late
/// record joins the next interval, and one with none has none; the traffic log keeps the same.
#[test]
fn each_interval_carries_its_grpc_messages_summed_over_threads() {
    let (mut c, seen) = collector(2, None);
    let with = |thread: usize, index: usize, messages: Vec<(usize, [u64; 2])>| Batch {
        thread,
        below: index + 1,
        messages,
        ..Batch::default()
    };
    c.receive(with(0, 0, vec![(0, [3, 30])]));
    c.receive(with(1, 0, vec![(0, [4, 40])]));
    c.receive(with(0, 1, vec![]));
    // Thread 1's record for interval 0, handed over after it was written: it joins 1.
    c.receive(with(1, 1, vec![(0, [1, 0])]));
    let (_, _, traffic) = c.finish(3);
    let m = |sent, received| Some(loadlab_result::scenario::StepMessages { sent, received });
    assert_eq!(seen.lock().unwrap().messages, [m(7, 70), m(1, 0), None]);
    assert_eq!(traffic.messages, [(0, [7, 70]), (1, [1, 0])].into());
}

/// An open loop's two threads: each interval's health is their CPU summed, the busier
/// thread's share, the late requests summed and the worst lag (never a mean); a thread's
/// record handed over late joins the next interval; an interval no thread billed has none.
#[test]
fn each_interval_carries_its_generators_health_merged_over_threads() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let sink = TestSink {
        seen: seen.clone(),
        fail_after: None,
    };
    let mut inner = build();
    let open: Build = Box::new(move |i, elapsed, counts, hist| {
        let mut iv = inner(i, elapsed, counts, hist);
        iv.offered_per_s = Some(100.0);
        iv
    });
    let log = TrafficLog::with(Duration::from_secs(1), Duration::ZERO, None);
    let mut c = Collector::new(2, log, &header(), open, Box::new(sink));
    let bucket = |completed, late, lag_max_us| Bucket {
        completed,
        late,
        lag_max_us,
        ..Bucket::default()
    };
    let with = |thread, index: usize, b: Bucket, cpu_s: f64| Batch {
        thread,
        below: index + 1,
        buckets: vec![(index, vec![b])],
        cpu: vec![(index, cpu_s)],
        ..Batch::default()
    };
    c.receive(with(0, 0, bucket(50, 2, 4_000), 0.25));
    c.receive(with(1, 0, bucket(50, 0, 300), 0.75));
    c.receive(with(0, 1, bucket(10, 0, 20), 0.5));
    // Thread 1's interval 0 again, handed over after it was written: it joins interval 1.
    c.receive(with(1, 0, bucket(10, 1, 9_000), 0.125));
    c.receive(Batch {
        thread: 0,
        below: usize::MAX,
        ended: Some(Duration::from_millis(2_500)),
        ..Batch::default()
    });
    c.receive(Batch {
        thread: 1,
        below: usize::MAX,
        ..Batch::default()
    });
    c.finish(3);
    let health = |cpu_s, busiest_thread, lag_max_us, late| {
        Some(IntervalHealth {
            cpu_s,
            busiest_thread,
            lag_max_us: Some(lag_max_us),
            late,
        })
    };
    assert_eq!(
        seen.lock().unwrap().health,
        [
            health(1.0, 0.75, 4_000.0, 2),
            health(0.625, 0.5, 9_000.0, 1),
            None
        ]
    );
}
