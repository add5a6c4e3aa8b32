//! The result's timeline read back from the spill file the run wrote as it went, one record
//! at a time. A run longer than [`MAX_TIMELINE_INTERVALS`] intervals gets a coarser timeline
//! (consecutive intervals merged exactly, histograms included) so that its result and report
//! stay small; the result says so, and the totals never come from here.
//!
//! It holds at most one group of intervals besides the timeline it returns.

use super::SpillReader;
use loadlab_result::scenario::StepMessages;
use loadlab_result::{
    decode_histogram, encode_histogram, new_histogram, IntervalHealth, IntervalSummary,
};
use std::path::Path;

/// The most intervals a result's timeline carries (an hour of 1 s intervals).
pub const MAX_TIMELINE_INTERVALS: u64 = 3_600;

/// How many of `written` intervals make one of a timeline of `at_most`: what the result's
/// timeline is merged by, and the path's intervals with it (`loadlab_result::path::spans`).
pub fn group_for(written: u64, at_most: u64) -> u64 {
    written.div_ceil(at_most.max(1)).max(1)
}

pub struct Rebuilt {
    pub timeline: Vec<IntervalSummary>,
    /// How many written intervals make one of the timeline's (1: none merged).
    pub group: u64,
    pub read: u64,
}

/// A timeline built one written interval at a time, consecutive intervals merged `group`
/// at a time so that `written` of them make at most `at_most`.
pub struct TimelineBuilder {
    group: u64,
    timeline: Vec<IntervalSummary>,
    pending: Vec<IntervalSummary>,
    read: u64,
}

impl TimelineBuilder {
    pub fn new(written: u64, at_most: u64) -> TimelineBuilder {
        let group = group_for(written, at_most);
        TimelineBuilder {
            group,
            timeline: Vec::with_capacity(written.div_ceil(group).min(at_most) as usize),
            pending: Vec::with_capacity(group.min(1 << 16) as usize),
            read: 0,
        }
    }

    pub fn group(&self) -> u64 {
        self.group
    }

    pub fn push(&mut self, iv: IntervalSummary) -> anyhow::Result<()> {
        self.read += 1;
        self.pending.push(iv);
        if self.pending.len() as u64 == self.group {
            self.timeline.push(merge(&mut self.pending)?);
        }
        Ok(())
    }

    pub fn finish(mut self) -> anyhow::Result<Rebuilt> {
        if !self.pending.is_empty() {
            self.timeline.push(merge(&mut self.pending)?);
        }
        Ok(Rebuilt {
            timeline: self.timeline,
            group: self.group,
            read: self.read,
        })
    }
}

/// Reads the `written` intervals of `path`. `summary` is the timeline the engine summarised
/// (counts only): its steal and server samples, which are not written, are carried over.
pub fn rebuild(path: &Path, written: u64, summary: &[IntervalSummary]) -> anyhow::Result<Rebuilt> {
    rebuild_at_most(path, written, summary, MAX_TIMELINE_INTERVALS)
}

fn rebuild_at_most(
    path: &Path,
    written: u64,
    summary: &[IntervalSummary],
    at_most: u64,
) -> anyhow::Result<Rebuilt> {
    let mut reader = SpillReader::open(path)?;
    reader.header()?;
    let mut builder = TimelineBuilder::new(written, at_most);
    let mut i = 0;
    while let Some(iv) = reader.next_interval()? {
        builder.push(with_summary(iv, summary.get(i), builder.group()))?;
        i += 1;
    }
    builder.finish()
}

/// A written interval with what only the engine's summary knows (steal; the server's
/// samples when it has them, the timeline is not coarsened, and the interval has none).
pub fn with_summary(
    mut iv: IntervalSummary,
    known: Option<&IntervalSummary>,
    group: u64,
) -> IntervalSummary {
    if let Some(known) = known {
        iv.steal = known.steal;
        if group == 1 && known.server.is_some() {
            iv.server = known.server;
        }
    }
    iv
}

/// One interval of the merge of `group` (consecutive), which it empties: counts summed,
/// histograms added (exact), rates weighted by time. Also the live page's downsampling.
pub fn merge(group: &mut Vec<IntervalSummary>) -> anyhow::Result<IntervalSummary> {
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
        errors: group.iter().fold(Default::default(), |mut all, i| {
            loadlab_result::failure::add_counts(&mut all, &i.errors);
            all
        }),
        messages: group
            .iter()
            .fold(None, |all, i| StepMessages::sum(all, i.messages)),
        generator: group
            .iter()
            .fold(None, |all, i| IntervalHealth::merge(all, i.generator)),
    };
    group.clear();
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spill::SpillWriter;
    use std::time::Instant;

    fn interval(i: u64, values_ns: &[u64]) -> IntervalSummary {
        let mut h = new_histogram();
        for v in values_ns {
            h.record(*v).unwrap();
        }
        let mut iv: IntervalSummary = serde_json::from_value(serde_json::json!({
            "start_s": i as f64, "duration_s": 1.0, "warmup": false, "offered_per_s": 10.0,
            "connections": null, "achieved_per_s": values_ns.len() as f64,
            "completed": values_ns.len(), "failed": i % 2, "p50_us": null, "p90_us": null,
            "p99_us": null, "max_us": null, "bytes_sent": 80, "bytes_received": 120 + i,
            "steal": null, "histogram": encode_histogram(&h),
        }))
        .unwrap();
        // gRPC messages in intervals 1 to 5 only.
        iv.messages = (1..6).contains(&i).then_some(StepMessages {
            sent: i,
            received: 10 * i,
        });
        iv
    }

    #[test]
    fn a_long_timeline_is_merged_exactly_in_groups() {
        let dir = std::env::temp_dir().join(format!("loadlab-spill-group-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("run.spill");
        let header: loadlab_result::RunResult = serde_json::from_str(include_str!(
            "../../../loadlab-report/tests/fixtures/open.json"
        ))
        .unwrap();
        let mut w = SpillWriter::create(&path, &header, Instant::now()).unwrap();
        let mut all = new_histogram();
        for i in 0..25u64 {
            let values: Vec<u64> = (0..i % 4 + 1).map(|k| 1_000 * (i + 1) + k).collect();
            values.iter().for_each(|v| all.record(*v).unwrap());
            w.append(&interval(i, &values), Instant::now()).unwrap();
        }
        w.finish(Instant::now()).unwrap();
        let rebuilt = rebuild_at_most(&path, 25, &[], 10).unwrap();
        // 25 intervals, at most 10 shown: groups of 3, the last of one.
        assert_eq!(
            (rebuilt.group, rebuilt.read, rebuilt.timeline.len()),
            (3, 25, 9)
        );
        let t = &rebuilt.timeline;
        assert_eq!((t[1].start_s, t[1].duration_s), (3.0, 3.0));
        assert_eq!(t[8].start_s, 24.0);
        assert_eq!(t[0].failed, 1);
        assert_eq!(t[0].bytes_received, 3 * 120 + 3);
        // gRPC messages summed exactly; a group that counted none has none.
        let m = |sent, received| Some(StepMessages { sent, received });
        assert_eq!((t[0].messages, t[1].messages), (m(3, 30), m(12, 120)));
        assert_eq!(t[2].messages, None);
        let completed: u64 = t.iter().map(|i| i.completed).sum();
        assert_eq!(completed, all.len());
        let mut merged = new_histogram();
        for iv in t {
            let h = decode_histogram(iv.histogram.as_ref().unwrap()).unwrap();
            merged.add(h).unwrap();
        }
        assert_eq!(merged, all);
        let first = decode_histogram(t[0].histogram.as_ref().unwrap()).unwrap();
        assert_eq!(first.len(), 1 + 2 + 3);
        assert_eq!(
            t[0].p50_us,
            Some(first.value_at_quantile(0.5) as f64 / 1_000.0)
        );
        assert_eq!(t[0].max_us, Some(first.max() as f64 / 1_000.0));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
