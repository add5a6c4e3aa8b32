//! The timelines of a merge: intervals with the same start added (histograms, counts,
//! failures by class, gRPC messages, the generators' health by its own rules:
//! [`crate::IntervalHealth::merge`]), or, for repetitions that ran one after another, their
//! mean; and a fleet's concurrent intervals added as they come ([`merge_concurrent_intervals`]).

use super::{add_encoded, MergeError, Mode};
use crate::histogram::{encode_histogram, new_histogram};
use crate::run::{IntervalSummary, RunResult};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Intervals with the same start (to the millisecond) are added together.
pub(super) fn merge_timelines(
    parts: &[RunResult],
    mode: Mode,
) -> Result<Vec<IntervalSummary>, MergeError> {
    let key = |s: f64| (s * 1_000.0).round() as i64;
    let mut by_start: BTreeMap<i64, (IntervalSummary, Histogram<u64>, u32)> = BTreeMap::new();
    for (i, p) in parts.iter().enumerate() {
        for iv in &p.timeline {
            let entry = by_start
                .entry(key(iv.start_s))
                .or_insert_with(|| (empty_like(iv), new_histogram(), 0));
            accumulate(entry, iv, i)?;
        }
    }
    Ok(by_start
        .into_values()
        .map(|(mut m, h, n)| {
            if mode == Mode::Sequential && n > 1 {
                // The mean of the parts that reached this interval.
                let n64 = u64::from(n);
                let f = f64::from(n);
                m.offered_per_s = m.offered_per_s.map(|v| v / f);
                m.connections = m.connections.map(|v| v / f);
                m.achieved_per_s /= f;
                m.completed /= n64;
                m.failed /= n64;
                m.bytes_sent /= n64;
                m.bytes_received /= n64;
                if let Some(messages) = m.messages.as_mut() {
                    messages.sent /= n64;
                    messages.received /= n64;
                }
                // The mean of the sums; the busiest thread and the worst lag stay the worst.
                if let Some(health) = m.generator.as_mut() {
                    health.cpu_s /= f;
                    health.late /= n64;
                }
            }
            finish_interval(m, &h)
        })
        .collect())
}

/// One interval of concurrent parts (the shards of a fleet, each its own interval over the
/// same span), merged exactly: counts and rates added, histograms added, percentiles read
/// from the sum. `None` for no intervals. What a fleet's live view shows as the run goes.
pub fn merge_concurrent_intervals(
    intervals: &[&IntervalSummary],
) -> Result<Option<IntervalSummary>, MergeError> {
    let Some(first) = intervals.first() else {
        return Ok(None);
    };
    let mut entry = (empty_like(first), new_histogram(), 0);
    for (i, iv) in intervals.iter().enumerate() {
        accumulate(&mut entry, iv, i)?;
    }
    let (m, h, _) = entry;
    Ok(Some(finish_interval(m, &h)))
}

/// An interval like `iv` with nothing counted in it yet.
fn empty_like(iv: &IntervalSummary) -> IntervalSummary {
    let mut empty = iv.clone();
    empty.offered_per_s = iv.offered_per_s.map(|_| 0.0);
    empty.connections = iv.connections.map(|_| 0.0);
    empty.achieved_per_s = 0.0;
    empty.completed = 0;
    empty.failed = 0;
    empty.bytes_sent = 0;
    empty.bytes_received = 0;
    empty.steal = None;
    empty.server = None;
    empty.errors.clear();
    empty.messages = None;
    empty.generator = None;
    empty
}

/// Adds part `i`'s interval `iv` into `entry`.
fn accumulate(
    entry: &mut (IntervalSummary, Histogram<u64>, u32),
    iv: &IntervalSummary,
    i: usize,
) -> Result<(), MergeError> {
    let (m, h, n) = entry;
    *n += 1;
    m.warmup &= iv.warmup;
    m.offered_per_s = sum_opt(m.offered_per_s, iv.offered_per_s);
    m.connections = sum_opt(m.connections, iv.connections);
    m.achieved_per_s += iv.achieved_per_s;
    m.completed += iv.completed;
    m.failed += iv.failed;
    crate::failure::add_counts(&mut m.errors, &iv.errors);
    m.messages = crate::scenario::StepMessages::sum(m.messages, iv.messages);
    m.generator = crate::run::IntervalHealth::merge(m.generator, iv.generator);
    m.bytes_sent += iv.bytes_sent;
    m.bytes_received += iv.bytes_received;
    m.steal = max_opt(m.steal, iv.steal);
    add_encoded(h, iv.histogram.as_deref(), i, "timeline interval")
}

/// The merged interval's percentiles and histogram, from the summed histogram.
fn finish_interval(mut m: IntervalSummary, h: &Histogram<u64>) -> IntervalSummary {
    let q = |q: f64| (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1_000.0);
    m.p50_us = q(0.5);
    m.p90_us = q(0.9);
    m.p99_us = q(0.99);
    m.max_us = (!h.is_empty()).then(|| h.max() as f64 / 1_000.0);
    m.histogram = (!h.is_empty()).then(|| encode_histogram(h));
    m
}

fn sum_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}
