//! Percentiles on a cliff, across the runs of two arms: which reported percentiles of a
//! comparison sit on the edge of a gap between a fast and a slow mode, and each run's share of
//! requests beyond that gap, the figure to compare in their place.
//!
//! The gap is found in the pooled histogram of both arms' runs (exact: histograms add), so
//! both arms are measured against one threshold, the pooled gap's geometric middle. A
//! percentile is on the cliff when, against that gap, any run with both modes (requests on
//! both sides) has its share beyond within a factor 2 of the percentile's tail share (the rule
//! of [`loadlab_result::cliff`]), or when such runs' values of the percentile fall on both
//! sides of it (on several gaps, the widest). A run entirely on one side has no cliff: two
//! arms a gap apart are a true shift and keep their verdict. Its
//! ratio between arms then measures which side each arm fell on, so it gets no verdict; the
//! share beyond the cliff is tested instead. Pure: results in, findings out.

use loadlab_result::cliff::{
    find_gaps, near, share_beyond, Gap, Histogram, MIN_SIDE_REQUESTS, REPORTED_PERCENTILES,
};
use loadlab_result::{decode_histogram, new_histogram, RunResult};
use serde::Serialize;

/// One cliff that some reported percentile of a comparison sits on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CliffFinding {
    /// The percentiles on it (`p99`, ...), lowest first.
    pub percentiles: Vec<&'static str>,
    /// The pooled gap: the top of the fast mode and the bottom of the slow one.
    pub gap_from_us: f64,
    pub gap_to_us: f64,
    /// The common threshold: each run's share beyond it is compared.
    pub threshold_us: f64,
    /// Each run's share of requests beyond the threshold, per arm, in run order.
    #[serde(skip)]
    pub control_shares: Vec<f64>,
    #[serde(skip)]
    pub test_shares: Vec<f64>,
}

/// The cliffs under a comparison's percentiles, lowest gap first; empty when a run's latency
/// histogram is missing or does not decode (the percentiles are then compared as they are).
pub fn find(control: &[RunResult], test: &[RunResult]) -> Vec<CliffFinding> {
    let decode = |runs: &[RunResult]| -> Option<Vec<_>> {
        runs.iter()
            .map(|r| decode_histogram(&r.measured.histograms.latency).ok())
            .collect()
    };
    let (Some(c), Some(t)) = (decode(control), decode(test)) else {
        return Vec::new();
    };
    let mut pooled = new_histogram();
    for h in c.iter().chain(&t) {
        if pooled.add(h).is_err() {
            return Vec::new();
        }
    }
    let gaps = find_gaps(&pooled);
    // Each percentile on at most one gap: of those it is on, the widest (the largest jump).
    let home = |q: f64| -> Option<usize> {
        (0..gaps.len())
            .filter(|&i| on_cliff(&gaps[i], q, c.iter().chain(&t)))
            .max_by(|&x, &y| gaps[x].width().total_cmp(&gaps[y].width()))
    };
    let homes: Vec<(&'static str, usize)> = REPORTED_PERCENTILES
        .iter()
        .filter_map(|&(name, q)| home(q).map(|i| (name, i)))
        .collect();
    gaps.iter()
        .enumerate()
        .filter_map(|(i, gap)| {
            let percentiles: Vec<&'static str> = homes
                .iter()
                .filter(|(_, home)| *home == i)
                .map(|(name, _)| *name)
                .collect();
            let shares = |hs: &[Histogram<u64>]| {
                hs.iter()
                    .map(|h| share_beyond(h, gap.threshold_ns))
                    .collect()
            };
            (!percentiles.is_empty()).then(|| CliffFinding {
                percentiles,
                gap_from_us: gap.from_ns as f64 / 1e3,
                gap_to_us: gap.to_ns as f64 / 1e3,
                threshold_us: gap.threshold_ns as f64 / 1e3,
                control_shares: shares(&c),
                test_shares: shares(&t),
            })
        })
        .collect()
}

/// Whether quantile `q` sits on `gap`'s cliff in these runs. Only a run with requests on both
/// sides of the pooled gap (at least [`MIN_SIDE_REQUESTS`] each) has a cliff: an arm whose
/// runs all sit on one side of it (a slow arm against a fast one, a true shift) is compared
/// as it is.
fn on_cliff<'a>(gap: &Gap, q: f64, runs: impl Iterator<Item = &'a Histogram<u64>>) -> bool {
    let (mut below, mut above, mut near_any) = (false, false, false);
    let bimodal = |h: &&Histogram<u64>| {
        let n = h.len() as f64;
        let beyond = (share_beyond(h, gap.threshold_ns) * n).round();
        beyond >= MIN_SIDE_REQUESTS as f64 && n - beyond >= MIN_SIDE_REQUESTS as f64
    };
    for h in runs.filter(|h| !h.is_empty()).filter(bimodal) {
        near_any |= near(share_beyond(h, gap.threshold_ns), 1.0 - q);
        let v = h.value_at_quantile(q);
        below |= v <= gap.threshold_ns;
        above |= v > gap.threshold_ns;
    }
    near_any || (below && above)
}

/// The note on a percentile's row when it sits on a cliff.
pub fn percentile_note(f: &CliffFinding) -> String {
    format!(
        "on a cliff (a gap from {} to {}): no verdict; compare the share beyond {} below",
        loadlab_report::duration_us(f.gap_from_us),
        loadlab_report::duration_us(f.gap_to_us),
        loadlab_report::duration_us(f.threshold_us),
    )
}
