//! One interval of the result's timeline, built from its counts and its merged histogram:
//! shared by the end-of-run summary (every interval at once) and the interval collector
//! (each interval as it finishes), so the two cannot disagree. It does no I/O and keeps
//! nothing.

use crate::config::{Model, RunConfig};
use crate::error::ErrorClass;
use crate::stats::{add_classes, add_messages, Bucket, Busiest, ClassCounts, Timeline, BUCKET};
use hdrhistogram::Histogram;
use loadlab_result::scenario::StepMessages;
use loadlab_result::{encode_histogram, IntervalSummary};
use std::collections::BTreeMap;
use std::time::Duration;

/// One interval's traffic, summed over the timeline's buckets (and threads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntervalCounts {
    pub completed: u64,
    pub failed: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

impl IntervalCounts {
    pub fn of(buckets: &[Bucket]) -> IntervalCounts {
        let sum = |f: fn(&Bucket) -> u64| buckets.iter().map(f).sum::<u64>();
        IntervalCounts {
            completed: sum(|b| b.completed),
            failed: sum(|b| b.failed),
            bytes_sent: sum(|b| b.bytes_sent),
            bytes_received: sum(|b| b.bytes_received),
        }
    }

    pub fn add(&mut self, other: &IntervalCounts) {
        self.completed += other.completed;
        self.failed += other.failed;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
    }
}

/// Failures by class index as the result names them (only the classes that occurred).
pub fn class_names(classes: &[(u8, u64)]) -> BTreeMap<String, u64> {
    classes
        .iter()
        .filter(|(_, n)| *n > 0)
        .filter_map(|&(c, n)| {
            let class = ErrorClass::ALL.get(usize::from(c))?;
            Some((class.key().to_string(), n))
        })
        .collect()
}

/// Messages `[sent, received]` as the result names them.
pub fn step_messages([sent, received]: [u64; 2]) -> StepMessages {
    StepMessages { sent, received }
}

/// How many of the timeline's buckets make one interval of `length`.
pub fn buckets_per_interval(length: Duration) -> usize {
    (length.as_millis() / BUCKET.as_millis()).max(1) as usize
}

/// How many intervals a run's timeline has: its planned length (not the elapsed time,
/// which runs a hair over), unless data arrived later (requests drained after the
/// schedule ended).
pub fn interval_count(config: &RunConfig, elapsed: Duration, buckets: usize) -> usize {
    let planned = match config.stop {
        crate::config::Stop::Duration(d) => (config.warmup + d).min(elapsed),
        crate::config::Stop::Requests(_) => elapsed,
    };
    let n = planned.as_nanos().div_ceil(config.interval.as_nanos()) as usize;
    n.max(buckets.div_ceil(buckets_per_interval(config.interval)))
}

/// Interval `i` of a run that lasted `elapsed` (`Duration::MAX` while it goes on).
pub fn interval_summary(
    config: &RunConfig,
    i: usize,
    elapsed: Duration,
    counts: IntervalCounts,
    hist: Option<&Histogram<u64>>,
    steal: Option<f64>,
) -> IntervalSummary {
    // A shard sends its share of the schedule and runs its share of a staged loop's
    // connections; the intervals say so, and the merged timeline adds them up.
    let shard = config.shard.as_ref().map(|p| p.shard);
    let offered_share = shard.map_or(1.0, |s| f64::from(s.count));
    let len = config.interval;
    let warmup = config.warmup;
    let start = len * i as u32;
    // The run's last interval may be cut short by its end (or hold only requests drained
    // after it): its rates are per second of what it really lasted, known to the timeline's
    // resolution (a bucket), which is what the counts are kept in.
    let real = elapsed.saturating_sub(start).min(len);
    let partial = real < len;
    let real = real.max(BUCKET.min(len));
    let end = start + real;
    let q = |q: f64| hist.map(|h| h.value_at_quantile(q) as f64 / 1_000.0);
    let secs = real.as_secs_f64().max(1e-6);
    let (offered_per_s, connections) = match &config.model {
        Model::Open { profile, .. } => {
            // The schedule runs from the start, warm-up (at the first rate) included.
            let first = profile.stages.first().map_or(0.0, |s| s.from);
            let arrivals = |t: Duration| {
                if t <= warmup {
                    first * t.as_secs_f64()
                } else {
                    first * warmup.as_secs_f64() + profile.cumulative(t - warmup)
                }
            };
            (
                Some((arrivals(end) - arrivals(start)) / secs / offered_share),
                None,
            )
        }
        Model::Closed { stages: Some(p) } => {
            let mid = (start + len / 2).saturating_sub(warmup);
            let level = p.level_at(mid).floor();
            let level = shard.map_or(level, |s| s.share(level as u64) as f64);
            (None, Some(level))
        }
        Model::Closed { stages: None } => (None, None),
    };
    IntervalSummary {
        start_s: start.as_secs_f64(),
        duration_s: secs,
        partial,
        warmup: start < warmup,
        offered_per_s,
        connections,
        achieved_per_s: counts.completed as f64 / secs,
        completed: counts.completed,
        failed: counts.failed,
        p50_us: q(0.5),
        p90_us: q(0.9),
        p99_us: q(0.99),
        max_us: hist.map(|h| h.max() as f64 / 1_000.0),
        bytes_sent: counts.bytes_sent,
        bytes_received: counts.bytes_received,
        steal,
        histogram: hist.map(encode_histogram),
        server: None,
        errors: BTreeMap::new(),
        messages: None,
        generator: None,
    }
}

/// What the result needs of a run's timeline buckets, kept as they pass by in order (summed
/// over the threads) so that the buckets themselves can go: each interval's counts (32 bytes
/// an interval: 2.7 MB for a day of 1-second intervals), the busiest second of the warm-up
/// and of the measured part, and the completions between the end of the warm-up and the
/// planned end of the schedule (the "could not keep up" verdict's count).
#[derive(Debug, Clone)]
pub struct TrafficLog {
    per: usize,
    from: usize,
    /// The planned end, rounded down and up to a bucket, with the completions before it.
    ends: [(usize, u64); 2],
    since_warmup: u64,
    busiest: [Busiest; 2],
    pub intervals: Vec<IntervalCounts>,
    /// Failures by class of the intervals that had some, by interval index (kept apart from
    /// `intervals`: a class array in each would make them ten times bigger).
    pub failures: BTreeMap<usize, ClassCounts>,
    /// A gRPC run's stream messages `[sent, received]` of the intervals that had some.
    pub messages: BTreeMap<usize, [u64; 2]>,
}

impl TrafficLog {
    pub fn new(config: &RunConfig) -> TrafficLog {
        let end = match &config.model {
            Model::Open { profile, .. } => Some(config.warmup + profile.duration()),
            Model::Closed { .. } => None,
        };
        TrafficLog::with(config.interval, config.warmup, end)
    }

    /// For intervals of `interval`, after a warm-up of `warmup`, with a schedule planned to
    /// end at `schedule_end` from the start (none: the completions run to the last bucket).
    pub fn with(
        interval: Duration,
        warmup: Duration,
        schedule_end: Option<Duration>,
    ) -> TrafficLog {
        let bucket = BUCKET.as_nanos();
        let from = (warmup.as_nanos() / bucket) as usize;
        let ends = schedule_end.map_or([usize::MAX; 2], |end| {
            let end = end.as_nanos();
            [end / bucket, end.div_ceil(bucket)].map(|e| e.min(usize::MAX as u128) as usize)
        });
        TrafficLog {
            per: buckets_per_interval(interval),
            from,
            ends: ends.map(|e| (e, 0)),
            since_warmup: 0,
            busiest: [Busiest::new(0, from), Busiest::new(from, usize::MAX)],
            intervals: Vec::new(),
            failures: BTreeMap::new(),
            messages: BTreeMap::new(),
        }
    }

    /// The log of a whole timeline at once (a run without an interval collector).
    pub fn of(config: &RunConfig, timeline: &Timeline, intervals: usize) -> TrafficLog {
        let mut log = TrafficLog::new(config);
        for i in 0..intervals {
            log.push(i, &timeline.span(i * log.per, (i + 1) * log.per));
        }
        for (i, classes) in timeline.failures_by_interval(log.per, 0, intervals) {
            log.keep_failures(i, classes);
        }
        for (i, messages) in timeline.messages_by_interval(log.per, 0, intervals) {
            log.keep_messages(i, messages);
        }
        log
    }

    /// Interval `i`'s buckets (fewer than an interval's at the end of the timeline), in order
    /// of `i`; a skipped interval had no traffic.
    pub fn push(&mut self, i: usize, buckets: &[Bucket]) {
        while self.intervals.len() < i {
            self.intervals.push(IntervalCounts::default());
        }
        for (k, b) in buckets.iter().enumerate() {
            let index = i * self.per + k;
            for busiest in &mut self.busiest {
                busiest.push(index, b);
            }
            if index >= self.from {
                self.since_warmup += b.completed;
                for (end, count) in &mut self.ends {
                    if index < *end {
                        *count += b.completed;
                    }
                }
            }
        }
        self.intervals.push(IntervalCounts::of(buckets));
    }

    /// Interval `i`'s failures by class (nothing is kept for none).
    pub fn keep_failures(&mut self, i: usize, classes: ClassCounts) {
        if !classes.is_empty() {
            add_classes(self.failures.entry(i).or_default(), &classes);
        }
    }

    /// Interval `i`'s gRPC messages `[sent, received]`.
    pub fn keep_messages(&mut self, i: usize, messages: [u64; 2]) {
        add_messages(self.messages.entry(i).or_default(), &messages);
    }

    /// The most bytes sent and received in one second: of the warm-up, of the measured part.
    pub fn busiest(&self) -> [(u64, u64); 2] {
        self.busiest.each_ref().map(Busiest::result)
    }

    /// Completions from the end of the warm-up to the planned end of an open loop's schedule
    /// (`rounded_up`: to the bucket that holds it) or, with no such end, to the last one.
    pub fn completed_in_schedule(&self, rounded_up: bool) -> u64 {
        self.ends[usize::from(rounded_up)].1
    }

    /// Completions since the end of the warm-up.
    pub fn completed_since_warmup(&self) -> u64 {
        self.since_warmup
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of 2 s warm-up and a schedule planned to end at 7.25 s, with traffic in 100 ms
    /// buckets: the log kept interval by interval gives the figures counted by hand.
    #[test]
    fn the_log_kept_as_intervals_pass_gives_the_figures_of_the_whole_timeline() {
        let mut t = Timeline::default();
        // 10 completions and 100 bytes sent in each bucket for 8 s, and a burst of 5,000
        // bytes straddling 4.9-5.1 s (no window aligned to whole seconds sees it whole).
        for i in 0..80 {
            let b = t.at(BUCKET * i);
            b.completed += 10;
            b.bytes_sent += 100;
        }
        t.at(Duration::from_millis(4_950)).bytes_sent += 5_000;
        t.at(Duration::from_millis(5_050)).bytes_sent += 5_000;
        // The warm-up's busiest second is smaller, and ends before the burst.
        t.at(Duration::from_millis(500)).bytes_received += 700;
        // Failures of two classes, one of them in two intervals and twice in one bucket.
        for (ms, class) in [(250, 0), (250, 0), (260, 3), (1_950, 3), (2_000, 3)] {
            t.fail(Duration::from_millis(ms), class);
        }
        let log = |t: &Timeline| {
            let mut log = TrafficLog::with(
                Duration::from_secs(1),
                Duration::from_secs(2),
                Some(Duration::from_millis(7_250)),
            );
            // Interval 3 had nothing handed over (a skipped interval reads as empty).
            for i in (0..8).filter(|i| *i != 3) {
                log.push(i, &t.span(i * 10, (i + 1) * 10));
            }
            log
        };
        let log = log(&t);
        assert_eq!(log.busiest(), [(1_000, 700), (1_000 + 10_000, 0)]);
        assert_eq!(log.intervals.len(), 8);
        assert_eq!(log.intervals[3], IntervalCounts::default());
        assert_eq!(log.intervals[4].completed, 100);
        assert_eq!(log.intervals[4].bytes_sent, 1_000 + 5_000);
        assert_eq!(
            t.failures_by_interval(10, 0, 8),
            [
                (0, vec![(0, 2), (3, 1)]),
                (1, vec![(3, 1)]),
                (2, vec![(3, 1)])
            ]
        );
        assert_eq!(t.failures_by_interval(10, 1, 2), [(1, vec![(3, 1)])]);
        assert_eq!((log.intervals[0].failed, log.intervals[1].failed), (3, 1));
        // From 2.0 s: 3.0-4.0 s was never handed over, so 2.0-3.0 and 4.0-7.2 (or 7.3) s.
        assert_eq!(log.completed_in_schedule(false), 10 * (10 + 32));
        assert_eq!(log.completed_in_schedule(true), 10 * (10 + 33));
        assert_eq!(log.completed_since_warmup(), 10 * (10 + 40));
        // Drained as a collector drains it, the timeline keeps its length and nothing else.
        let mut drained = t.clone();
        drained.drain_below(60);
        assert_eq!(
            (drained.end(), drained.span(0, 60)),
            (80, vec![Bucket::default(); 60])
        );
        drained.at(Duration::from_millis(100)).completed += 1;
        // A late failure lands in the open bucket too, its class with it.
        drained.fail(Duration::from_millis(100), 4);
        assert_eq!(drained.failures_by_interval(10, 0, 8), [(6, vec![(4, 1)])]);
        assert_eq!(
            drained.span(60, 61)[0].completed,
            11,
            "a late write lands in the open bucket"
        );
    }

    /// gRPC messages by the interval their call ended in: two threads' merged exactly, a
    /// late one (after its interval was handed over) in the open bucket, and an interval
    /// with none has no entry.
    #[test]
    fn grpc_messages_are_counted_in_the_interval_their_call_ended() {
        let mut a = Timeline::default();
        let mut b = Timeline::default();
        for (ms, sent, received) in [(100, 3, 5), (150, 1, 1), (2_300, 10, 0)] {
            a.messages(Duration::from_millis(ms), sent, received);
        }
        b.messages(Duration::from_millis(900), 2, 2);
        b.messages(Duration::from_millis(2_950), 4, 40);
        assert_eq!(
            a.end(),
            24,
            "its bucket exists, so the last hand-over covers it"
        );
        a.merge(&b);
        let each = [(0, [6, 8]), (2, [14, 40])];
        assert_eq!(a.messages_by_interval(10, 0, 3), each);
        assert_eq!(a.messages_by_interval(10, 1, 3), each[1..]);
        let mut log = TrafficLog::with(Duration::from_secs(1), Duration::ZERO, None);
        for (i, m) in a.messages_by_interval(10, 0, 3).into_iter().chain(each) {
            log.keep_messages(i, m);
        }
        assert_eq!(log.messages, BTreeMap::from([(0, [12, 16]), (2, [28, 80])]));
        a.drain_below(10);
        a.messages(Duration::from_millis(500), 1, 0);
        assert_eq!(
            a.messages_by_interval(10, 0, 3),
            [(1, [1, 0]), (2, [14, 40])]
        );
    }
}
