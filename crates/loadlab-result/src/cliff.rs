//! Percentiles on a cliff: finds, in an exact latency histogram, a gap between a fast mode and
//! a slow mode, and says which reported percentiles sit on its edge.
//!
//! Why: under a CPU quota (or GC pauses, retries, timeouts) a share of requests waits a long,
//! nearly fixed time, and the distribution splits in two with nothing between. A percentile
//! whose tail share is close to the slow mode's share lands on one side in one run and on the
//! other in the next: with 0.9% slow, p99 is 0.5 ms; with 1.1%, 90 ms. Its change between two
//! arms measures which side of 1% each arm fell on, not how much slower it is. The share of
//! requests beyond the gap is the number that moves smoothly; this module finds the gap and
//! that share.
//!
//! # The rules
//!
//! - **A gap** is a range of latency at least [`GAP_FACTOR`] wide on a log scale (its top at
//!   least 4x its bottom), with at least [`MIN_SIDE_REQUESTS`] requests on each side, holding
//!   at most [`STRAY_FRACTION`] of the smaller side's count (a few stragglers do not fill a gap).
//!   4x: far wider than the spread of a single mode at the histogram's 3 significant digits, so
//!   that no smooth distribution (lognormal, uniform, a long power-law tail, two overlapping
//!   modes) shows one; narrow enough that a throttled server (0.5 ms against 90 ms), a GC pause
//!   or a retry after a timeout does. 10 requests beyond it: a power-law tail's extreme
//!   samples can stand apart by chance (a factor 4 beyond its k-th largest sample with
//!   probability about 4^-k), and 10 makes that about one in a million. Of several candidate
//!   windows over the same gap, the one with the fewest requests inside wins, then the widest:
//!   its edges are then the modes' own edges.
//! - **On the cliff**: a reported percentile q (p50, p90, p99, p99.9) sits on a gap's cliff
//!   when the share of requests beyond the gap is within a factor [`NEAR_FACTOR`] (2) of the
//!   percentile's tail share 1-q, and the share below it within that factor of q, both ends
//!   included (the second only bites for p50: with 99.96% of requests slow, p50 is deep in
//!   the slow mode). Inside that band a plausible difference
//!   between two arms, or between two machines' speeds (the slow share moves with the quota's
//!   headroom: 0.9% to 1.1% between arms, more across machines), can move the percentile from
//!   one mode to the other; outside it, every run's percentile sits firmly in one mode and its
//!   value is a fair figure of that mode. Near several gaps (a busy machine's stalls can make a
//!   second, narrower one), the percentile is on the widest: the largest jump it can make.
//!
//! The threshold between the modes is the gap's geometric middle: [`share_beyond`] of it is
//! the share compared between arms. Pure functions of the histogram: no I/O, no printing.

pub use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The least ratio between a gap's top and its bottom.
pub const GAP_FACTOR: f64 = 4.0;
/// The most requests a gap may hold, as a fraction of the smaller side's.
pub const STRAY_FRACTION: f64 = 0.02;
/// The fewest requests on each side of a gap.
pub const MIN_SIDE_REQUESTS: u64 = 10;
/// How far (as a factor either way) the slow share may be from a percentile's tail share for
/// the percentile to be on the cliff.
pub const NEAR_FACTOR: f64 = 2.0;
/// The percentiles a result reports and compares, with their quantiles.
pub const REPORTED_PERCENTILES: [(&str, f64); 4] = [
    ("p50", 0.50),
    ("p90", 0.90),
    ("p99", 0.99),
    ("p99.9", 0.999),
];

/// A gap between a fast mode and a slow mode, in nanoseconds (the histogram's unit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gap {
    /// The top of the fast mode (the highest value of its highest recorded bucket).
    pub from_ns: u64,
    /// The bottom of the slow mode (the lowest value of its lowest recorded bucket).
    pub to_ns: u64,
    /// The split between the modes: the gap's geometric middle.
    pub threshold_ns: u64,
    /// Requests at or below `from_ns`, inside the gap, at or above `to_ns`.
    pub fast_count: u64,
    pub inside_count: u64,
    pub slow_count: u64,
    /// Each side's median.
    pub fast_median_ns: u64,
    pub slow_median_ns: u64,
}

impl Gap {
    /// Its top over its bottom.
    pub fn width(&self) -> f64 {
        self.to_ns as f64 / self.from_ns.max(1) as f64
    }
}

/// A reported percentile on a cliff, as the result carries it (microseconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cliff {
    /// `p50`, `p90`, `p99` or `p99.9`.
    pub percentile: String,
    /// The median of the requests below the gap, and of those above it.
    pub fast_mode_us: f64,
    pub slow_mode_us: f64,
    /// The gap: the top of the fast mode and the bottom of the slow one.
    pub gap_from_us: f64,
    pub gap_to_us: f64,
    /// The split between the modes (the gap's geometric middle): compare the share beyond it.
    pub threshold_us: f64,
    /// Requests beyond the threshold, over all requests.
    pub slow_share: f64,
    /// Requests inside the gap (stragglers), over all requests.
    pub gap_share: f64,
}

/// One recorded bucket: its lowest and highest value, and its count.
struct Bucket {
    lo: u64,
    hi: u64,
    count: u64,
}

fn buckets(h: &Histogram<u64>) -> Vec<Bucket> {
    h.iter_recorded()
        .map(|v| {
            let hi = v.value_iterated_to();
            Bucket {
                lo: h.lowest_equivalent(hi),
                hi,
                count: v.count_at_value(),
            }
        })
        .collect()
}

/// The value of the request of rank `rank` (from 0) in `buckets`: their median when rank is
/// half their count.
fn value_at_rank(buckets: &[Bucket], rank: u64) -> u64 {
    let mut seen = 0;
    for b in buckets {
        seen += b.count;
        if seen > rank {
            return b.hi;
        }
    }
    buckets.last().map_or(0, |b| b.hi)
}

/// Every gap in the histogram, lowest first (usually none, or one).
pub fn find_gaps(h: &Histogram<u64>) -> Vec<Gap> {
    let b = buckets(h);
    let k = b.len();
    let total: u64 = b.iter().map(|b| b.count).sum();
    // cum[i]: requests in buckets 0..=i.
    let cum: Vec<u64> = b
        .iter()
        .scan(0, |s, b| {
            *s += b.count;
            Some(*s)
        })
        .collect();
    // For each fast top `a`, the first bucket at least GAP_FACTOR above it (monotone in a).
    struct Window {
        a: usize,
        b: usize,
        inside: u64,
    }
    let mut windows: Vec<Window> = Vec::new();
    let mut j = 0;
    for a in 0..k {
        j = j.max(a + 1);
        while j < k && (b[j].lo as f64) < GAP_FACTOR * b[a].hi as f64 {
            j += 1;
        }
        if j >= k {
            break;
        }
        let inside = cum[j - 1] - cum[a];
        let slow = total - cum[j - 1];
        let valid = cum[a] >= MIN_SIDE_REQUESTS
            && slow >= MIN_SIDE_REQUESTS
            && inside as f64 <= STRAY_FRACTION * cum[a].min(slow) as f64;
        if valid {
            windows.push(Window { a, b: j, inside });
        }
    }
    // Overlapping windows are one gap: keep the one with the fewest requests inside, then
    // the widest.
    let mut groups: Vec<Vec<Window>> = Vec::new();
    for w in windows {
        match groups.last_mut() {
            Some(g) if b[w.a].hi < b[g.iter().map(|w| w.b).max().unwrap_or(0)].lo => g.push(w),
            _ => groups.push(vec![w]),
        }
    }
    groups
        .into_iter()
        .filter_map(|g| {
            g.into_iter().min_by(|x, y| {
                let width = |w: &Window| b[w.b].lo as f64 / b[w.a].hi as f64;
                x.inside.cmp(&y.inside).then(width(y).total_cmp(&width(x)))
            })
        })
        .map(|w| {
            let (from_ns, to_ns) = (b[w.a].hi, b[w.b].lo);
            let fast_count = cum[w.a];
            let slow_count = total - cum[w.b - 1];
            Gap {
                from_ns,
                to_ns,
                threshold_ns: ((from_ns as f64) * (to_ns as f64)).sqrt().round() as u64,
                fast_count,
                inside_count: w.inside,
                slow_count,
                fast_median_ns: value_at_rank(&b[..=w.a], fast_count / 2),
                slow_median_ns: value_at_rank(&b[w.b..], slow_count / 2),
            }
        })
        .collect()
}

/// The share of the histogram's requests above `threshold_ns`; 0 for an empty histogram.
pub fn share_beyond(h: &Histogram<u64>, threshold_ns: u64) -> f64 {
    if h.is_empty() {
        return 0.0;
    }
    let beyond: u64 = h
        .iter_recorded()
        .filter(|v| h.lowest_equivalent(v.value_iterated_to()) > threshold_ns)
        .map(|v| v.count_at_value())
        .sum();
    beyond as f64 / h.len() as f64
}

/// Whether a percentile with tail share `tail` (1 - q) is on the cliff of a gap beyond which
/// lies `slow_share` of the requests: the share beyond within a factor of the tail share, and
/// the share below within a factor of q. The second matters only for low percentiles: p50
/// with 99.96% of requests slow is firmly in the slow mode, though 99.96% is within a factor
/// 2 of its tail share 50%.
pub fn near(slow_share: f64, tail: f64) -> bool {
    let within =
        |share: f64, of: f64| of > 0.0 && share >= of / NEAR_FACTOR && share <= of * NEAR_FACTOR;
    within(slow_share, tail) && within(1.0 - slow_share, 1.0 - tail)
}

/// The reported percentiles on a cliff, lowest first.
pub fn cliffs(h: &Histogram<u64>) -> Vec<Cliff> {
    let gaps = find_gaps(h);
    let total = h.len().max(1) as f64;
    let us = |ns: u64| ns as f64 / 1_000.0;
    let mut out = Vec::new();
    for (name, q) in REPORTED_PERCENTILES {
        // Of several gaps near this percentile, the widest: the jump it can make.
        let widest = gaps
            .iter()
            .map(|g| (g, share_beyond(h, g.threshold_ns)))
            .filter(|(_, share)| near(*share, 1.0 - q))
            .max_by(|x, y| x.0.width().total_cmp(&y.0.width()));
        if let Some((g, share)) = widest {
            out.push(Cliff {
                percentile: name.to_string(),
                fast_mode_us: us(g.fast_median_ns),
                slow_mode_us: us(g.slow_median_ns),
                gap_from_us: us(g.from_ns),
                gap_to_us: us(g.to_ns),
                threshold_us: us(g.threshold_ns),
                slow_share: share,
                gap_share: g.inside_count as f64 / total,
            });
        }
    }
    out
}

#[cfg(test)]
#[path = "cliff_tests.rs"]
mod tests;
