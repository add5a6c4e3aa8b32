//! The server's figures as a run result carries them: a series of windows between
//! consecutive samples, on the same clock as the latency timeline (seconds from the run's
//! start), and p50/p99/max summaries over the measured phase. Pure functions of the samples.

use crate::sampler::{Exit, Sample};
pub use loadlab_result::server::{
    interval, ExitReport, IntervalResources, ResourceSummary, ServerReport, Spread, Startup,
    WindowSample,
};
use std::time::Instant;

fn secs_between(origin: Instant, at: Instant) -> f64 {
    if at >= origin {
        (at - origin).as_secs_f64()
    } else {
        -(origin - at).as_secs_f64()
    }
}

/// Windows between consecutive samples, timed from `origin` (the run's start).
pub fn windows(samples: &[Sample], origin: Instant) -> Vec<WindowSample> {
    samples
        .windows(2)
        .filter_map(|pair| {
            let (a, b) = (&pair[0], &pair[1]);
            let dt = (b.at - a.at).as_secs_f64();
            (dt > 0.0).then(|| WindowSample {
                t_s: secs_between(origin, b.at),
                dt_s: dt,
                // A process that exits takes its CPU time with it (tree sampling): never
                // report a negative rate.
                cpu_cores: b.cpu_ns.saturating_sub(a.cpu_ns) as f64 / 1e9 / dt,
                throttled_periods: match (a.throttling, b.throttling) {
                    (Some(x), Some(y)) => Some(y.throttled.saturating_sub(x.throttled)),
                    _ => None,
                },
                rss_bytes: b.rss_bytes,
                memory_bytes: b.memory_bytes,
                threads: b.threads,
                fds: b.fds,
                generator_cpu_cores: b.generator_cpu_ns.saturating_sub(a.generator_cpu_ns) as f64
                    / 1e9
                    / dt,
                processes: b.processes,
                sent_bytes: match (a.sent_bytes, b.sent_bytes) {
                    (Some(x), Some(y)) => Some(y.saturating_sub(x)),
                    _ => None,
                },
            })
        })
        .collect()
}

/// Summary of the windows ending within `(from_s, to_s]`, plus the throttling counters
/// between the samples that bound that span.
pub fn summarize(
    samples: &[Sample],
    origin: Instant,
    from_s: f64,
    to_s: f64,
    quota_cores: Option<f64>,
    memory_limit: Option<u64>,
) -> Option<ResourceSummary> {
    // A small tolerance: the last sample is taken just after the run ends.
    let slack = 0.05;
    let at = |i: usize| secs_between(origin, samples[i].at);
    let mut inside: Vec<usize> = (1..samples.len())
        .filter(|&i| at(i) > from_s && at(i) <= to_s + slack)
        .collect();
    // The window the run ends in counts whole, even when the sample that closes it came late
    // (the caller busy at the run's end, a loaded machine): its counters hold the run's last
    // bytes and CPU, and after the end the load has stopped, so what it adds past the end is
    // next to nothing. Dropping it lost up to a whole sample interval of the run's tail.
    if inside.last().is_none_or(|&i| at(i) < to_s) {
        if let Some(closing) = (1..samples.len()).find(|&i| at(i) > to_s + slack) {
            inside.push(closing);
        }
    }
    let (&first, &last) = (inside.first()?, inside.last()?);
    let all = windows(samples, origin);
    // A window much shorter than the rest (the last sample, taken when the run ends) gives a
    // noisy rate; its counters still count in the totals.
    let mut lengths: Vec<f64> = all.iter().map(|w| w.dt_s).collect();
    lengths.sort_by(f64::total_cmp);
    let typical = lengths.get(lengths.len() / 2).copied().unwrap_or(0.0);
    let picked: Vec<&WindowSample> = all
        .iter()
        .filter(|w| w.t_s > from_s && w.t_s <= to_s + slack && w.dt_s >= typical * 0.5)
        .collect();
    let spread = |f: &dyn Fn(&WindowSample) -> f64| {
        Spread::of(&picked.iter().map(|w| f(w)).collect::<Vec<_>>()).unwrap_or_default()
    };
    let cpu = spread(&|w| w.cpu_cores);
    let mut seconds = Vec::new();
    let (mut busy, mut span) = (0.0, 0.0);
    for w in &picked {
        busy += w.cpu_cores * w.dt_s;
        span += w.dt_s;
        if span >= 1.0 - 1e-6 {
            seconds.push(busy / span);
            (busy, span) = (0.0, 0.0);
        }
    }
    let (start, end) = (&samples[first - 1], &samples[last]);
    let throttling = match (start.throttling, end.throttling) {
        (Some(a), Some(b)) => Some((
            b.throttled.saturating_sub(a.throttled),
            b.periods.saturating_sub(a.periods),
            b.throttled_ns.saturating_sub(a.throttled_ns) as f64 / 1e9,
        )),
        _ => None,
    };
    let has_memory = picked.iter().all(|w| w.memory_bytes.is_some());
    Some(ResourceSummary {
        windows: picked.len(),
        cpu_cores: cpu,
        cpu_cores_per_s: Spread::of(&seconds),
        cpu_quota_cores: quota_cores,
        // Against the quota, whole seconds: see `cpu_cores_per_s`.
        cpu_quota_share: quota_cores.map(|q| {
            if seconds.is_empty() {
                spread(&|w| w.cpu_cores / q)
            } else {
                Spread::of(&seconds.iter().map(|c| c / q).collect::<Vec<_>>()).unwrap_or_default()
            }
        }),
        throttled_periods: throttling.map(|t| t.0),
        periods: throttling.map(|t| t.1),
        throttled_s: throttling.map(|t| t.2),
        rss_bytes: spread(&|w| w.rss_bytes as f64),
        memory_bytes: has_memory.then(|| spread(&|w| w.memory_bytes.unwrap_or(0) as f64)),
        memory_limit_bytes: memory_limit,
        memory_limit_share: memory_limit
            .filter(|_| has_memory)
            .map(|limit| spread(&|w| w.memory_bytes.unwrap_or(0) as f64 / limit as f64)),
        threads_max: picked.iter().map(|w| w.threads).max().unwrap_or(0),
        fds_max: picked.iter().map(|w| w.fds).max().unwrap_or(0),
        processes_max: picked.iter().map(|w| w.processes).max().unwrap_or(0),
        sent_bytes: match (start.sent_bytes, end.sent_bytes) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        },
        sent_per_s: picked
            .iter()
            .map(|w| w.sent_bytes.map(|b| b as f64 / w.dt_s))
            .collect::<Option<Vec<f64>>>()
            .and_then(|v| Spread::of(&v)),
        generator_cpu_cores: spread(&|w| w.generator_cpu_cores),
        oom_kills: end.oom_kills,
    })
}

/// The exit as the result reports it.
pub fn exit_report(exit: &Exit, origin: Instant) -> ExitReport {
    ExitReport {
        at_s: secs_between(origin, exit.at),
        status: exit.status.clone(),
        oom_killed: exit.oom_killed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cgroup::Throttling;
    use std::time::Duration;

    /// A synthetic series on a controllable clock: `cpu_ms` per 100 ms window.
    fn series(origin: Instant, cpu_ms: &[u64], rss_mb: &[u64]) -> Vec<Sample> {
        let mut cpu = 0;
        let mut out = Vec::new();
        for i in 0..=cpu_ms.len() {
            if i > 0 {
                cpu += cpu_ms[i - 1] * 1_000_000;
            }
            out.push(Sample {
                at: origin + Duration::from_millis(100 * i as u64),
                cpu_ns: cpu,
                throttling: Some(Throttling {
                    periods: i as u64,
                    throttled: i as u64 / 2,
                    throttled_ns: i as u64 * 10_000_000,
                }),
                rss_bytes: rss_mb[i.min(rss_mb.len() - 1)] << 20,
                memory_bytes: Some((rss_mb[i.min(rss_mb.len() - 1)] + 1) << 20),
                threads: 4,
                fds: 10 + i as u64,
                generator_cpu_ns: 50_000_000 * i as u64,
                processes: 1,
                oom_kills: Some(0),
                sent_bytes: Some(1000 * i as u64),
            });
        }
        out
    }

    #[test]
    fn windows_are_rates_between_samples() {
        let origin = Instant::now();
        let s = series(origin, &[8, 8, 50], &[10]);
        let w = windows(&s, origin);
        assert_eq!(w.len(), 3);
        assert!((w[0].cpu_cores - 0.08).abs() < 1e-9);
        assert!((w[2].cpu_cores - 0.5).abs() < 1e-9);
        assert!((w[0].t_s - 0.1).abs() < 1e-9);
        assert!((w[1].generator_cpu_cores - 0.5).abs() < 1e-9);
        assert_eq!(w[1].sent_bytes, Some(1000));
    }

    #[test]
    fn summary_covers_only_the_measured_span() {
        let origin = Instant::now();
        // 5 warm-up windows at 90% of a core, then 10 at 8%.
        let mut cpu = vec![90; 5];
        cpu.extend([8; 10]);
        let rss: Vec<u64> = (0..=15).map(|i| 10 + i).collect();
        let s = series(origin, &cpu, &rss);
        let sum = summarize(&s, origin, 0.5, 1.5, Some(0.08), Some(64 << 20)).unwrap();
        assert_eq!(sum.windows, 10);
        assert!(
            (sum.cpu_cores.p99 - 0.08).abs() < 1e-9,
            "{:?}",
            sum.cpu_cores
        );
        let per_s = sum.cpu_cores_per_s.unwrap();
        assert!((per_s.max - 0.08).abs() < 1e-9, "{per_s:?}");
        assert!((sum.cpu_quota_share.unwrap().max - 1.0).abs() < 1e-9);
        assert!((sum.cpu_quota_share.unwrap().p50 - 1.0).abs() < 1e-9);
        assert_eq!(sum.rss_bytes.max as u64, 25 << 20);
        assert_eq!(sum.periods, Some(10));
        assert_eq!(sum.throttled_periods, Some(5));
        assert_eq!(sum.fds_max, 25);
        assert_eq!(sum.sent_bytes, Some(10_000));
        assert!((sum.sent_per_s.unwrap().p50 - 10_000.0).abs() < 1e-6);
        let share = sum.memory_limit_share.unwrap();
        assert!((share.max - 26.0 / 64.0).abs() < 1e-9);
    }

    /// The sample that closes the run's last window came 350 ms after the end (samples every
    /// 100 ms until 1.1 s, the run ending at 1.15 s, the next sample at 1.5 s): the bytes of
    /// that window are the run's and count.
    #[test]
    fn a_late_closing_sample_still_counts_the_runs_tail() {
        let origin = Instant::now();
        let mut s = series(origin, &[8; 11], &[10]);
        let mut closing = *s.last().unwrap();
        closing.at = origin + Duration::from_millis(1_500);
        closing.sent_bytes = Some(11_500);
        s.push(closing);
        let sum = summarize(&s, origin, 0.0, 1.15, None, None).unwrap();
        assert_eq!(sum.sent_bytes, Some(11_500));
        // On time, nothing changes: the samples up to the end, and no later one.
        let sum = summarize(&s, origin, 0.0, 1.1, None, None).unwrap();
        assert_eq!(sum.sent_bytes, Some(11_000));
    }

    #[test]
    fn whole_seconds_smooth_a_quota_carried_between_periods() {
        let origin = Instant::now();
        // A 0.08-core quota the kernel hands out as 12, 4, 8, 8, 8 ms per 100 ms period.
        let cpu: Vec<u64> = [12, 4, 8, 8, 8].iter().cycle().take(30).copied().collect();
        let s = series(origin, &cpu, &[10]);
        let sum = summarize(&s, origin, 0.0, 3.0, Some(0.08), None).unwrap();
        assert!(sum.cpu_cores.max > 0.1, "{:?}", sum.cpu_cores);
        let per_s = sum.cpu_cores_per_s.unwrap();
        assert_eq!(per_s.p50, per_s.max);
        assert!((per_s.max - 0.08).abs() < 1e-9, "{per_s:?}");
    }
}
