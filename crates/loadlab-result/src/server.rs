//! What a result says about the server under test, when loadlab launched or watched it:
//! its limits and whether they held, its start-up, its CPU and memory per sample window and
//! per timeline interval, and how it died if it did. The probe measures; this is the data.

use serde::{Deserialize, Serialize};

/// Everything the result says about the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerReport {
    /// "launched", "pid", "cgroup", "port", "container", or "metrics" (read from the
    /// server's own Prometheus endpoint, `--server-metrics`).
    pub source: String,
    /// What ran: a lab target's name, a command, a PID or a cgroup path.
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<LimitsReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup: Option<Startup>,
    pub sample_interval_s: f64,
    /// Over the measured phase (after any warm-up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<ResourceSummary>,
    /// Set when the server died during the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<ExitReport>,
    pub samples: Vec<WindowSample>,
    /// The server's host, when it is another machine sampled through `loadlab agent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentReport>,
}

impl ServerReport {
    /// Forgets the bytes the server sent: they are counted over TCP only (the kernel keeps
    /// byte counters per TCP socket, not per UDP socket), so for a run over HTTP/3 they are
    /// not the load's (0, or the TCP of another client), and are better unknown.
    pub fn forget_sent_bytes(&mut self) {
        if let Some(summary) = self.summary.as_mut() {
            summary.sent_bytes = None;
            summary.sent_per_s = None;
        }
        for window in &mut self.samples {
            window.sent_bytes = None;
        }
    }
}

/// The server's host seen through its agent (`--agent`): who answered, how its clock was
/// placed on loadlab's timeline, its kernel's TCP counters, and whether the agent was lost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentReport {
    /// The agent's URL, as given.
    pub url: String,
    /// The server's host, as the agent names it.
    pub hostname: String,
    pub protocol: u32,
    pub agent_version: String,
    /// The agent's clock minus loadlab's, seconds, as first estimated (NTP's four
    /// timestamps, the lowest-delay exchange of a burst).
    pub clock_offset_s: f64,
    /// The largest error any estimate may have: half its round trip.
    pub clock_uncertainty_s: f64,
    /// Every estimate of the run, in order (long runs estimate again: clocks drift).
    pub clock_estimates: Vec<ClockEstimate>,
    /// The server host's TCP counters over the sampled span, read by the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<crate::machine::KernelCounters>,
    /// Set when the agent stopped answering during the run: the server's series ends there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<AgentLost>,
}

/// One clock estimate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClockEstimate {
    /// When it was made, seconds from the run's start (negative: before it).
    pub t_s: f64,
    pub offset_s: f64,
    pub uncertainty_s: f64,
}

/// When and why the agent was lost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentLost {
    /// Seconds from the run's start.
    pub at_s: f64,
    pub reason: String,
}

/// From spawn to the first good health check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Startup {
    pub ready_s: f64,
    pub health_url: String,
    /// Right after it became ready, before any load.
    pub idle_rss_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_memory_bytes: Option<u64>,
}

/// p50, p99, max and mean of a figure over the sample windows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl Spread {
    /// Nearest-rank percentiles; `None` for no values.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let rank =
            |q: f64| sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1];
        Some(Spread {
            p50: rank(0.50),
            p99: rank(0.99),
            max: sorted[sorted.len() - 1],
            mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceSummary {
    pub windows: usize,
    /// CPU in cores (1.0 = one core busy throughout the window), over the sample windows.
    pub cpu_cores: Spread,
    /// CPU in cores over whole seconds (consecutive windows joined). Under a quota this is
    /// the figure to hold against it: the kernel enforces a quota per 100 ms period but lets
    /// a CPU carry up to one bandwidth slice (5 ms by default) of unused runtime into the next
    /// period, so a single 100 ms window can show more than the quota while every second
    /// stays within it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_cores_per_s: Option<Spread>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_quota_cores: Option<f64>,
    /// CPU as a share of the quota (1.0 = the whole quota used), over whole seconds (over the
    /// sample windows when the run was shorter than a second).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_quota_share: Option<Spread>,
    /// CFS periods in which the group ran out of quota, of all periods, and the time its
    /// threads waited for the next period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttled_periods: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub periods: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttled_s: Option<f64>,
    pub rss_bytes: Spread,
    /// The cgroup's charged memory (what the limit is checked against).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<Spread>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_limit_share: Option<Spread>,
    pub threads_max: u64,
    pub fds_max: u64,
    pub processes_max: u64,
    /// Bytes the server sent to its clients (acknowledged by them), over the measured phase,
    /// and per second over each sample window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_per_s: Option<Spread>,
    /// loadlab's own CPU in cores, from the same sampler.
    pub generator_cpu_cores: Spread,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oom_kills: Option<u64>,
}

/// The window between two consecutive samples, ending at `t_s`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WindowSample {
    /// End of the window, seconds from the run's start (negative before load began).
    pub t_s: f64,
    pub dt_s: f64,
    pub cpu_cores: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttled_periods: Option<u64>,
    pub rss_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    pub threads: u64,
    pub fds: u64,
    pub generator_cpu_cores: f64,
    pub processes: u64,
    /// Bytes the server sent to its clients in this window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExitReport {
    /// Seconds from the run's start.
    pub at_s: f64,
    pub status: String,
    pub oom_killed: bool,
}

/// The server's figures within one interval of the latency timeline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IntervalResources {
    /// Mean CPU over the interval, in cores.
    pub cpu_cores: f64,
    /// Highest RSS sampled in the interval.
    pub rss_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttled_periods: Option<u64>,
    pub generator_cpu_cores: f64,
    /// Bytes the server sent to its clients in this interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_bytes: Option<u64>,
}

/// What the result says about the limits: for each one asked for, whether it held and how.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LimitsReport {
    /// "cgroup v1", "cgroup v2", or "none" when no cgroup could be made.
    pub mechanism: String,
    /// "strict" or "best-effort".
    pub mode: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<LimitHeld>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<LimitHeld>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pin: Option<LimitHeld>,
    /// The cgroup the server ran in (deleted afterwards).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitHeld {
    /// As asked, e.g. "0.08 cores", "128 MiB", "CPUs 1".
    pub requested: String,
    pub applied: bool,
    /// The setting written (e.g. "cpu.cfs_quota_us=8000 per cpu.cfs_period_us=100000"), or
    /// why it could not be.
    pub how: String,
}

impl LimitsReport {
    /// Each limit asked for, e.g. `cpus 0.08 cores` or `memory 128 MiB (NOT held)`.
    pub fn describe(&self) -> Vec<String> {
        [
            ("cpus", &self.cpus),
            ("memory", &self.memory),
            ("pin", &self.pin),
        ]
        .into_iter()
        .filter_map(|(name, l)| {
            l.as_ref().map(|l| {
                format!(
                    "{name} {}{}",
                    l.requested,
                    if l.applied { "" } else { " (NOT held)" }
                )
            })
        })
        .collect()
    }

    /// The limits that did not hold, for a warning.
    pub fn not_applied(&self) -> Vec<String> {
        [
            ("--cpus", &self.cpus),
            ("--memory", &self.memory),
            ("--pin", &self.pin),
        ]
        .into_iter()
        .filter_map(|(flag, l)| match l {
            Some(l) if !l.applied => Some(format!("{flag} {} ({})", l.requested, l.how)),
            _ => None,
        })
        .collect()
    }
}

/// The server's figures for the timeline interval `[start_s, start_s + duration_s)`:
/// windows ending inside it, CPU weighted by window length.
pub fn interval(
    windows: &[WindowSample],
    start_s: f64,
    duration_s: f64,
) -> Option<IntervalResources> {
    let end = start_s + duration_s;
    let inside: Vec<&WindowSample> = windows
        .iter()
        .filter(|w| w.t_s > start_s && w.t_s <= end + 1e-9)
        .collect();
    resources(&inside)
}

/// [`interval`] for windows in time order (as a sampler takes them): the interval's windows
/// are found by binary search instead of a look at every window, so joining a day's 86,400
/// intervals to its 864,000 windows does not go over every window for every interval. The
/// same windows in the same order as [`interval`]'s: the same figures, to the bit.
pub fn interval_in_order(
    windows: &[WindowSample],
    start_s: f64,
    duration_s: f64,
) -> Option<IntervalResources> {
    let end = start_s + duration_s;
    let from = windows.partition_point(|w| w.t_s <= start_s);
    let to = windows.partition_point(|w| w.t_s <= end + 1e-9);
    let inside: Vec<&WindowSample> = windows[from..to.max(from)].iter().collect();
    resources(&inside)
}

/// `windows` (consecutive) as one window ending at `t_s`: joined into an interval that holds
/// it, it gives what they give ([`interval`]: CPU weighted by time, sums summed, highest
/// highest); threads, open files and processes at their highest.
pub fn fold(windows: &[WindowSample], t_s: f64) -> WindowSample {
    let dt_s: f64 = windows.iter().map(|w| w.dt_s).sum();
    let weighted = |f: fn(&WindowSample) -> f64| {
        windows.iter().map(|w| f(w) * w.dt_s).sum::<f64>() / dt_s.max(f64::MIN_POSITIVE)
    };
    let max = |f: fn(&WindowSample) -> u64| windows.iter().map(f).max().unwrap_or(0);
    WindowSample {
        t_s,
        dt_s,
        cpu_cores: weighted(|w| w.cpu_cores),
        throttled_periods: windows.iter().map(|w| w.throttled_periods).sum(),
        rss_bytes: max(|w| w.rss_bytes),
        memory_bytes: windows.iter().filter_map(|w| w.memory_bytes).max(),
        threads: max(|w| w.threads),
        fds: max(|w| w.fds),
        generator_cpu_cores: weighted(|w| w.generator_cpu_cores),
        processes: max(|w| w.processes),
        sent_bytes: windows.iter().map(|w| w.sent_bytes).sum(),
    }
}

/// `windows` (in time order) with those ending in each span `(start_s, duration_s, _)` of a
/// merged timeline (`path::spans`, in order) folded into one ending at the span's end
/// ([`fold`]), so that a run past an hour's intervals keeps one window per interval of its
/// timeline, whose server figures stay what every window gives. Windows outside the spans
/// (before the load's start) are kept as they are; windows out of order are all kept.
pub fn fold_by_spans(windows: Vec<WindowSample>, spans: &[(f64, f64, bool)]) -> Vec<WindowSample> {
    if !in_order(&windows) {
        return windows;
    }
    let mut out = Vec::with_capacity(spans.len() + 16);
    let mut held: Vec<WindowSample> = Vec::new();
    let mut span = 0;
    let end = |k: usize| spans[k].0 + spans[k].1;
    let flush = |held: &mut Vec<WindowSample>, out: &mut Vec<WindowSample>, k: usize| {
        if !held.is_empty() {
            out.push(fold(held, end(k)));
            held.clear();
        }
    };
    for w in windows {
        while span < spans.len() && w.t_s > end(span) + 1e-9 {
            flush(&mut held, &mut out, span);
            span += 1;
        }
        if span < spans.len() && w.t_s > spans[span].0 {
            held.push(w);
        } else {
            out.push(w);
        }
    }
    if span < spans.len() {
        flush(&mut held, &mut out, span);
    }
    out
}

/// Whether `windows` are in time order, for [`interval_in_order`].
pub fn in_order(windows: &[WindowSample]) -> bool {
    windows.windows(2).all(|p| p[0].t_s <= p[1].t_s)
}

fn resources(inside: &[&WindowSample]) -> Option<IntervalResources> {
    if inside.is_empty() {
        return None;
    }
    let time: f64 = inside.iter().map(|w| w.dt_s).sum();
    let weighted =
        |f: &dyn Fn(&WindowSample) -> f64| inside.iter().map(|w| f(w) * w.dt_s).sum::<f64>() / time;
    Some(IntervalResources {
        cpu_cores: weighted(&|w| w.cpu_cores),
        rss_bytes: inside.iter().map(|w| w.rss_bytes).max().unwrap_or(0),
        memory_bytes: inside.iter().filter_map(|w| w.memory_bytes).max(),
        throttled_periods: inside
            .iter()
            .map(|w| w.throttled_periods)
            .sum::<Option<u64>>(),
        generator_cpu_cores: weighted(&|w| w.generator_cpu_cores),
        sent_bytes: inside.iter().map(|w| w.sent_bytes).sum::<Option<u64>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(t_s: f64, cpu_cores: f64, rss_mb: u64) -> WindowSample {
        WindowSample {
            t_s,
            dt_s: 0.1,
            cpu_cores,
            throttled_periods: None,
            rss_bytes: rss_mb << 20,
            memory_bytes: None,
            threads: 1,
            fds: 3,
            generator_cpu_cores: 0.0,
            processes: 1,
            sent_bytes: Some(100),
        }
    }

    #[test]
    fn intervals_weight_cpu_by_time() {
        let w = [
            window(0.1, 0.1, 6),
            window(0.2, 0.3, 9),
            window(0.3, 0.2, 7),
            window(0.4, 0.4, 8),
        ];
        let first = interval(&w, 0.0, 0.2).unwrap();
        assert!((first.cpu_cores - 0.2).abs() < 1e-9);
        assert_eq!(first.rss_bytes, 9 << 20);
        assert_eq!(first.sent_bytes, Some(200));
        let second = interval(&w, 0.2, 0.2).unwrap();
        assert!((second.cpu_cores - 0.3).abs() < 1e-9);
        assert!(interval(&w, 5.0, 1.0).is_none());
    }

    /// A run past an hour's intervals (3,700, shown two at a time, its last cut short): its
    /// windows folded one per merged interval give each merged interval the figures every
    /// window gives it, and the result keeps as many windows as an hour's run would.
    #[test]
    fn windows_folded_by_a_merged_timeline_keep_its_figures() {
        let raw: Vec<WindowSample> = (-3..=36_994)
            .map(|i: i32| {
                let mut x = window(f64::from(i) * 0.1, f64::from(i.rem_euclid(7)) / 10.0, 5);
                x.dt_s = 0.1 + f64::from(i.rem_euclid(3)) * 1e-3;
                x.rss_bytes += i.rem_euclid(11) as u64;
                x.memory_bytes = (i % 4 != 1).then_some(i.rem_euclid(13) as u64);
                x.throttled_periods = Some(i.rem_euclid(2) as u64);
                x.generator_cpu_cores = f64::from(i.rem_euclid(5)) / 8.0;
                x
            })
            .collect();
        let mut spans: Vec<(f64, f64, bool)> = (0..1_850)
            .map(|k| (2.0 * f64::from(k), 2.0, false))
            .collect();
        spans[1_849].1 = 1.5;
        let kept = fold_by_spans(raw.clone(), &spans);
        assert_eq!(
            kept.len(),
            3 + 1 + 1_850,
            "the windows before the start, then one a span"
        );
        for &(start, len, _) in &spans {
            let (got, want) = (
                interval_in_order(&kept, start, len).unwrap(),
                interval(&raw, start, len).unwrap(),
            );
            assert!(
                (got.cpu_cores - want.cpu_cores).abs() < 1e-9,
                "{got:?} {want:?}"
            );
            assert!((got.generator_cpu_cores - want.generator_cpu_cores).abs() < 1e-9);
            assert_eq!(
                (
                    got.rss_bytes,
                    got.memory_bytes,
                    got.throttled_periods,
                    got.sent_bytes
                ),
                (
                    want.rss_bytes,
                    want.memory_bytes,
                    want.throttled_periods,
                    want.sent_bytes
                )
            );
        }
    }

    /// Windows in time order (two at one instant, some on interval boundaries, a gap) joined
    /// to a timeline whose last interval is cut short: found by binary search, each interval
    /// gets exactly what a look at every window gives it.
    #[test]
    fn windows_in_order_join_intervals_as_every_window_does() {
        let mut w: Vec<WindowSample> = (1..=123)
            .filter(|i| !(41..=50).contains(i))
            .map(|i| {
                let mut x = window(
                    f64::from(i) * 0.1,
                    f64::from(i % 7) / 10.0,
                    5 + i as u64 % 4,
                );
                x.dt_s = 0.1 + f64::from(i % 3) * 1e-3;
                x.throttled_periods = (i % 5 != 0).then_some((i % 2) as u64);
                x
            })
            .collect();
        w.insert(30, w[30]);
        assert!(in_order(&w));
        let timeline: Vec<(f64, f64)> = (0..13)
            .map(|i| (f64::from(i), if i == 12 { 0.35 } else { 1.0 }))
            .collect();
        for (start, len) in timeline {
            assert_eq!(interval_in_order(&w, start, len), interval(&w, start, len));
        }
        assert!(interval_in_order(&w, 4.0, 1.0).is_none(), "the gap");
        w.swap(3, 4);
        assert!(!in_order(&w));
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = Spread::of(&values).unwrap();
        assert_eq!((s.p50, s.p99, s.max), (50.0, 99.0, 100.0));
        assert_eq!(Spread::of(&[3.0]).unwrap().p99, 3.0);
        assert!(Spread::of(&[]).is_none());
    }
}
