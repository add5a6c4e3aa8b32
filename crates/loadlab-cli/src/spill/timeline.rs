//! The result's timeline read back from the spill file the run wrote as it went, one record
//! at a time. A run longer than [`MAX_TIMELINE_INTERVALS`] intervals gets a coarser timeline
//! (consecutive intervals merged exactly, histograms included) so that its result and report
//! stay small; the result says so, and the totals never come from here.
//!
//! It holds at most one group of intervals besides the timeline it returns.

use super::SpillReader;
use loadlab_result::{decode_histogram, encode_histogram, new_histogram, IntervalSummary};
use std::path::Path;

/// The most intervals a result's timeline carries (an hour of 1 s intervals).
pub const MAX_TIMELINE_INTERVALS: u64 = 3_600;

pub struct Rebuilt {
    pub timeline: Vec<IntervalSummary>,
    /// How many written intervals make one of the timeline's (1: none merged).
    pub group: u64,
    pub read: u64,
}

/// Reads the `written` intervals of `path`. `summary` is the timeline the engine summarised
/// (counts only): its steal and server samples, which are not written, are carried over.
pub fn rebuild(path: &Path, written: u64, summary: &[IntervalSummary]) -> anyhow::Result<Rebuilt> {
    let mut reader = SpillReader::open(path)?;
    reader.header()?;
    let group = written.div_ceil(MAX_TIMELINE_INTERVALS).max(1);
    let mut timeline = Vec::with_capacity(written.div_ceil(group) as usize);
    let mut pending = Vec::with_capacity(group as usize);
    let mut read = 0u64;
    while let Some(mut iv) = reader.next_interval()? {
        let i = read as usize;
        read += 1;
        if let Some(known) = summary.get(i) {
            iv.steal = known.steal;
            iv.server = if group == 1 { known.server } else { None };
        }
        pending.push(iv);
        if pending.len() as u64 == group {
            timeline.push(merge(&mut pending)?);
        }
    }
    if !pending.is_empty() {
        timeline.push(merge(&mut pending)?);
    }
    Ok(Rebuilt {
        timeline,
        group,
        read,
    })
}

/// One interval of the merge of `group` (consecutive), which it empties.
fn merge(group: &mut Vec<IntervalSummary>) -> anyhow::Result<IntervalSummary> {
    if group.len() == 1 {
        return Ok(group.pop().expect("one"));
    }
    let mut hist = new_histogram();
    let mut any_hist = false;
    for iv in group.iter() {
        if let Some(text) = &iv.histogram {
            let h = decode_histogram(text).map_err(|e| {
                anyhow::anyhow!(
                    "the spill file's interval at {} s does not decode: {e}",
                    iv.start_s
                )
            })?;
            hist.add(&h).map_err(|e| {
                anyhow::anyhow!("the interval at {} s does not merge: {e:?}", iv.start_s)
            })?;
            any_hist = true;
        }
    }
    let first = &group[0];
    let last = &group[group.len() - 1];
    let duration_s: f64 = group.iter().map(|i| i.duration_s).sum();
    let secs = duration_s.max(1e-6);
    let sum = |f: fn(&IntervalSummary) -> u64| group.iter().map(f).sum::<u64>();
    let completed = sum(|i| i.completed);
    let weighted = |f: fn(&IntervalSummary) -> Option<f64>| {
        let parts: Vec<(f64, f64)> = group
            .iter()
            .filter_map(|i| f(i).map(|v| (v, i.duration_s)))
            .collect();
        (!parts.is_empty()).then(|| parts.iter().map(|(v, d)| v * d).sum::<f64>() / secs)
    };
    let q = |q: f64| any_hist.then(|| hist.value_at_quantile(q) as f64 / 1_000.0);
    let merged = IntervalSummary {
        start_s: first.start_s,
        duration_s,
        partial: last.partial,
        warmup: first.warmup && last.warmup,
        offered_per_s: weighted(|i| i.offered_per_s),
        connections: weighted(|i| i.connections),
        achieved_per_s: completed as f64 / secs,
        completed,
        failed: sum(|i| i.failed),
        p50_us: q(0.5),
        p90_us: q(0.9),
        p99_us: q(0.99),
        max_us: any_hist.then(|| hist.max() as f64 / 1_000.0),
        bytes_sent: sum(|i| i.bytes_sent),
        bytes_received: sum(|i| i.bytes_received),
        steal: group.iter().filter_map(|i| i.steal).reduce(f64::max),
        histogram: any_hist.then(|| encode_histogram(&hist)),
        server: None,
    };
    group.clear();
    Ok(merged)
}
