//! What the HTML report's charts plot, prepared in Rust: series per run, the percentile
//! curve decoded from the run's histogram, the server's samples thinned to a size a page can
//! carry. The page's script only draws these points.
//!
//! Numbers are rounded to what a chart can show (latencies to 4 significant digits, times to
//! the millisecond) so a long run's page stays small. This module must not write HTML or
//! escape anything: the page module serialises and escapes what this returns.

use crate::tables::Run;
use loadlab_result::server::WindowSample;
use loadlab_result::{decode_histogram, RunResult};
use serde::Serialize;

/// At most this many server points a run: one per 100 ms window up to 3 minutes, joined
/// windows beyond (a 10-minute run at 100 ms has 6,000 windows).
pub const MAX_SERVER_POINTS: usize = 1_800;

/// The percentile curve stops at 99.999% (1/(1-q) = 100,000), where the charts' axis ends.
const MAX_QUANTILE: f64 = 0.99999;

/// Steps per halving of the distance to 100%, as HdrHistogram's percentile output uses.
const QUANTILE_TICKS_PER_HALF: u32 = 5;

/// Everything the charts need, for every run.
#[derive(Debug, Serialize)]
pub struct ChartData {
    pub runs: Vec<RunSeries>,
    /// A capacity search's or sweep's probes against load, when the report is of one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub curve: Option<Curve>,
    /// The shared time axis of every time chart, seconds from the start of the runs.
    pub time_range_s: [f64; 2],
}

/// Throughput and response time against load: one point per probe, sorted by load.
#[derive(Debug, Clone, Serialize)]
pub struct Curve {
    /// What the x axis counts: "offered requests/s" or "connections".
    pub load_label: String,
    /// Open loop: the offered rate is drawn as the line achieved throughput should follow.
    pub open_loop: bool,
    pub load: Vec<f64>,
    pub achieved_per_s: Vec<f64>,
    pub p50_us: Vec<Option<f64>>,
    pub p99_us: Vec<Option<f64>>,
    /// The probe held its objectives.
    pub held: Vec<bool>,
    /// A vertical mark: ("capacity", rate) or ("knee", load).
    pub marker: Option<(String, f64)>,
}

#[derive(Debug, Serialize)]
pub struct RunSeries {
    pub label: String,
    pub open_loop: bool,
    /// Load before this time (from 0) was the warm-up, excluded from the summary.
    pub warmup_s: f64,
    pub cold_start: Option<ColdStart>,
    pub timeline: Timeline,
    pub server: Option<ServerSeries>,
    pub distribution: Option<Distribution>,
    /// The server's own metrics, a family per selector or query.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<super::series::MetricFamily>,
}

/// The first requests were much slower than the rest: the charts flag when they ended.
#[derive(Debug, Serialize)]
pub struct ColdStart {
    pub until_s: f64,
    pub requests: u64,
    pub p50_us: f64,
    pub rest_p50_us: f64,
}

/// The timeline, a point per interval at its middle.
#[derive(Debug, Default, Serialize)]
pub struct Timeline {
    pub t_s: Vec<f64>,
    /// Open loop: what the schedule asked for.
    pub offered_per_s: Option<Vec<Option<f64>>>,
    pub achieved_per_s: Vec<f64>,
    /// Null where nothing failed, so that failures show as marks.
    pub failed_per_s: Vec<Option<f64>>,
    /// The same by failure class, for the classes the intervals carry (the result's names
    /// only: a class is a label on the page). Empty for results made before intervals
    /// kept their classes.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub failed_by_class: std::collections::BTreeMap<String, Vec<Option<f64>>>,
    pub p50_us: Vec<Option<f64>>,
    pub p90_us: Vec<Option<f64>>,
    pub p99_us: Vec<Option<f64>>,
    pub max_us: Vec<Option<f64>>,
}

/// The server's CPU and memory, a point per sample window (or group of windows) at its middle.
#[derive(Debug, Default, Serialize)]
pub struct ServerSeries {
    pub t_s: Vec<f64>,
    pub cpu_cores: Vec<f64>,
    /// CFS periods throttled in the window; absent without a CPU quota.
    pub throttled_periods: Option<Vec<Option<u64>>>,
    /// The highest RSS in the window.
    pub rss_bytes: Vec<u64>,
    /// The cgroup's charged memory, when the server ran in a cgroup.
    pub memory_bytes: Option<Vec<Option<u64>>>,
    pub cpu_quota_cores: Option<f64>,
    pub memory_limit_bytes: Option<u64>,
    /// Sample windows joined per point (1 when every window is shown).
    pub windows_per_point: usize,
}

/// The latency distribution as HdrHistogram plots it: latency against `1/(1-q)`.
#[derive(Debug, Default, Serialize)]
pub struct Distribution {
    pub inverse_tail: Vec<f64>,
    pub latency_us: Vec<f64>,
}

/// Prepares the charts of several runs.
pub fn chart_data(runs: &[Run]) -> ChartData {
    let series: Vec<RunSeries> = runs.iter().map(|(l, r)| run_series(l, r)).collect();
    let (mut lo, mut hi) = (0.0_f64, 0.0_f64);
    for (_, r) in runs {
        if let Some(last) = r.timeline.last() {
            hi = hi.max(last.start_s + last.duration_s);
        }
        if let Some(s) = &r.server {
            for w in [s.samples.first(), s.samples.last()].into_iter().flatten() {
                lo = lo.min(w.t_s - w.dt_s);
                hi = hi.max(w.t_s);
            }
        }
    }
    if hi <= lo {
        hi = lo + 1.0;
    }
    ChartData {
        runs: series,
        curve: None,
        time_range_s: [millis(lo), millis(hi)],
    }
}

fn run_series(label: &str, r: &RunResult) -> RunSeries {
    RunSeries {
        label: label.to_string(),
        open_loop: r.load.model == "open_loop",
        warmup_s: if r.warmup.is_some() {
            r.load.warmup_s
        } else {
            0.0
        },
        cold_start: r
            .first_requests
            .as_ref()
            .filter(|f| f.cold_start)
            .map(|f| ColdStart {
                until_s: millis(f.window_s),
                requests: f.requests,
                p50_us: sig4(f.latency_us.p50),
                rest_p50_us: sig4(f.rest_us.p50),
            }),
        timeline: timeline(r),
        server: server(r),
        distribution: decode_histogram(&r.measured.histograms.latency)
            .ok()
            .and_then(|h| distribution(&h)),
        metrics: super::series::families(r),
    }
}

fn timeline(r: &RunResult) -> Timeline {
    let mut t = Timeline::default();
    let open = r.timeline.iter().any(|i| i.offered_per_s.is_some());
    let mut offered = Vec::new();
    for class in r.timeline.iter().flat_map(|i| i.errors.keys()) {
        if loadlab_result::failure::describe_failure(class).is_some() {
            t.failed_by_class.entry(class.clone()).or_default();
        }
    }
    for i in &r.timeline {
        // A last interval the run ended inside, under half an interval long: its rate would
        // be noise (or, per a whole interval, a drop that never happened); left out.
        if i.partial && i.duration_s < r.load.interval_s / 2.0 {
            continue;
        }
        let secs = i.duration_s.max(1e-9);
        t.t_s.push(millis(i.start_s + i.duration_s / 2.0));
        offered.push(i.offered_per_s.map(tenths));
        t.achieved_per_s.push(tenths(i.achieved_per_s));
        t.failed_per_s
            .push((i.failed > 0).then(|| tenths(i.failed as f64 / secs)));
        for (class, series) in &mut t.failed_by_class {
            let n = i.errors.get(class).copied().unwrap_or(0);
            series.push((n > 0).then(|| tenths(n as f64 / secs)));
        }
        t.p50_us.push(i.p50_us.map(sig4));
        t.p90_us.push(i.p90_us.map(sig4));
        t.p99_us.push(i.p99_us.map(sig4));
        t.max_us.push(i.max_us.map(sig4));
    }
    t.offered_per_s = open.then_some(offered);
    t
}

/// The server's samples, joined in groups when there are more than [`MAX_SERVER_POINTS`];
/// without samples, its per-interval figures from the timeline.
fn server(r: &RunResult) -> Option<ServerSeries> {
    let report = r.server.as_ref();
    let summary = report.and_then(|s| s.summary.as_ref());
    let mut out = ServerSeries {
        cpu_quota_cores: summary.and_then(|s| s.cpu_quota_cores),
        memory_limit_bytes: summary.and_then(|s| s.memory_limit_bytes),
        ..ServerSeries::default()
    };
    let samples = report.map_or(&[][..], |s| &s.samples[..]);
    let (mut throttled, mut memory) = (Vec::new(), Vec::new());
    if samples.is_empty() {
        for i in &r.timeline {
            let Some(s) = i.server else { continue };
            out.t_s.push(millis(i.start_s + i.duration_s / 2.0));
            out.cpu_cores.push(cores(s.cpu_cores));
            out.rss_bytes.push(s.rss_bytes);
            throttled.push(s.throttled_periods);
            memory.push(s.memory_bytes);
        }
        out.windows_per_point = 1;
    } else {
        let per_point = samples.len().div_ceil(MAX_SERVER_POINTS);
        for group in samples.chunks(per_point) {
            let joined = join(group);
            out.t_s.push(millis(joined.t_s - joined.dt_s / 2.0));
            out.cpu_cores.push(cores(joined.cpu_cores));
            out.rss_bytes.push(joined.rss_bytes);
            throttled.push(joined.throttled_periods);
            memory.push(joined.memory_bytes);
        }
        out.windows_per_point = per_point;
    }
    if out.t_s.is_empty() {
        return None;
    }
    out.throttled_periods = throttled.iter().any(Option::is_some).then_some(throttled);
    out.memory_bytes = memory.iter().any(Option::is_some).then_some(memory);
    Some(out)
}

/// Consecutive windows as one: CPU weighted by time, the highest memory, throttling summed.
fn join(group: &[WindowSample]) -> WindowSample {
    let first = group[0];
    let last = group[group.len() - 1];
    let time: f64 = group.iter().map(|w| w.dt_s).sum();
    let cpu = if time > 0.0 {
        group.iter().map(|w| w.cpu_cores * w.dt_s).sum::<f64>() / time
    } else {
        first.cpu_cores
    };
    WindowSample {
        t_s: last.t_s,
        dt_s: time,
        cpu_cores: cpu,
        throttled_periods: group.iter().map(|w| w.throttled_periods).sum(),
        rss_bytes: group.iter().map(|w| w.rss_bytes).max().unwrap_or(0),
        memory_bytes: group.iter().filter_map(|w| w.memory_bytes).max(),
        ..last
    }
}

/// Latency at each percentile, stepping as HdrHistogram's percentile output does, up to
/// 99.999%; `None` for an empty histogram.
pub fn distribution(h: &hdrhistogram::Histogram<u64>) -> Option<Distribution> {
    if h.is_empty() {
        return None;
    }
    let us = |ns: u64| sig4(ns as f64 / 1_000.0);
    let last_x = 1.0 / (1.0 - MAX_QUANTILE);
    let mut d = Distribution::default();
    for v in h.iter_quantiles(QUANTILE_TICKS_PER_HALF) {
        let q = v.quantile_iterated_to();
        if q >= MAX_QUANTILE {
            break;
        }
        let x = sig6(1.0 / (1.0 - q));
        // The axis needs strictly increasing x; equal steps after rounding add nothing.
        if d.inverse_tail.last().is_some_and(|&prev| x <= prev) {
            continue;
        }
        d.inverse_tail.push(x);
        d.latency_us
            .push(us(h.highest_equivalent(v.value_iterated_to())));
    }
    d.inverse_tail.push(sig6(last_x));
    d.latency_us.push(us(h.value_at_quantile(MAX_QUANTILE)));
    Some(d)
}

fn millis(s: f64) -> f64 {
    (s * 1_000.0).round() / 1_000.0
}

fn tenths(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn cores(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

fn sig4(v: f64) -> f64 {
    significant(v, 4)
}

fn sig6(v: f64) -> f64 {
    significant(v, 6)
}

/// `v` rounded to `digits` significant digits.
fn significant(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let scale = 10f64.powi(digits - 1 - v.abs().log10().floor() as i32);
    (v * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_result::new_histogram;

    #[test]
    fn the_percentile_curve_climbs_to_the_tail() {
        let mut h = new_histogram();
        for i in 1..=10_000u64 {
            h.record(i * 1_000).unwrap(); // 1 µs .. 10 ms
        }
        let d = distribution(&h).unwrap();
        assert!(d.inverse_tail.windows(2).all(|w| w[0] < w[1]));
        assert!(d.latency_us.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(*d.inverse_tail.last().unwrap(), 100_000.0);
        let median = d.inverse_tail.iter().position(|&x| x >= 2.0).unwrap();
        assert!((d.latency_us[median] - 5_000.0).abs() < 10.0, "{d:?}");
        assert!((d.latency_us.last().unwrap() - 10_000.0).abs() < 10.0);
        assert!(distribution(&new_histogram()).is_none());
    }

    #[test]
    fn rounding_keeps_significant_digits() {
        assert_eq!(significant(367.359, 4), 367.4);
        assert_eq!(significant(0.0123456, 4), 0.01235);
        assert_eq!(significant(123_456.0, 4), 123_500.0);
    }
}
