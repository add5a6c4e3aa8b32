//! One interval of the result's timeline, built from its counts and its merged histogram:
//! shared by the end-of-run summary (every interval at once) and the interval collector
//! (each interval as it finishes), so the two cannot disagree. It does no I/O and keeps
//! nothing.

use crate::config::{Model, RunConfig};
use crate::stats::{Bucket, BUCKET};
use hdrhistogram::Histogram;
use loadlab_result::{encode_histogram, IntervalSummary};
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
    }
}
