//! One probe: what a run at one load measured ([`Measure`], taken from its result), and the
//! judgment on it ([`judge`]): did the service hold its objectives, keep up, and stay out of
//! a growing queue, and was loadlab itself the limit. Both are pure, so the rules are tested
//! on tables.

use crate::objective::{Metric, Objective};
use loadlab_engine::verdicts::{BUSY_THRESHOLD, LATE_SCHEDULER_P99_US, MIN_LATE_REQUESTS};
use loadlab_result::{decode_histogram, median, RunResult};
use serde::{Deserialize, Serialize};

pub use crate::path_evidence::PathEvidence;

/// The figures of one probe's measured phase that the judgment and the tables use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    /// Open loop: the requests/s asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offered_per_s: Option<f64>,
    /// Closed loop: concurrent connections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<usize>,
    pub duration_s: f64,
    /// Requests that fell due: sent, or left unsent because every connection was busy.
    pub due: u64,
    /// Responses received (any status).
    pub completed: u64,
    /// Responses per second, over the measured time and an open loop's drain beyond one
    /// typical response time (see `Measure::of`).
    pub achieved_per_s: f64,
    /// Failed requests, unsent ones, and 4xx/5xx responses, of those that fell due.
    pub errors: u64,
    pub error_share: f64,
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub max_us: Option<f64>,
    /// Each percentile an objective names, as (percentile, microseconds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub percentiles_us: Vec<(f64, f64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_us: Option<f64>,
    /// Median response time in the first and the last third of the measured intervals: a
    /// queue that grows during the probe shows as the second well above the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub early_p50_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_p50_us: Option<f64>,
    /// Kendall's tau of the measured intervals' p50s against time: near 1 when response
    /// times rise interval after interval (a queue growing), near 0 for noise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trend_tau: Option<f64>,
    /// The server's CPU as a share of its quota (or of its pinned CPUs, or of one core).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_share: Option<f64>,
    /// The server's CPU in cores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_cores: Option<f64>,
    /// The share of CPU periods in which the server ran out of its CPU quota (the kernel's
    /// throttling count): above 0, the quota itself held the server back in this probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_throttled_share: Option<f64>,
    /// The server's resident memory at its peak in the probe.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_rss_bytes: Option<u64>,
    /// loadlab's busiest worker thread: the share of the probe it spent working.
    pub generator_busy: f64,
    /// How late loadlab got to due requests (its own lateness, not waits for a busy
    /// connection): p99, and how many were later than 1 ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generator_lag_p99_us: Option<f64>,
    pub generator_late_requests: u64,
    /// A generator's link that was saturated (a fleet's, or this machine's), in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_link: Option<String>,
    /// A generator of the fleet lost during the probe (its shard missing), in words: the
    /// probe is partial, judged as interrupted, and the search stops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_generator: Option<String>,
    /// Each generator's path in this probe, judged by the path rule (docs/path.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<PathEvidence>,
    pub interrupted: bool,
    pub server_died: bool,
    /// A scenario's probe: `due`, `completed`, `achieved_per_s` and the errors count its
    /// iterations (an iteration with a failed step is an error), the response times its
    /// steps' requests (`probe/iterations.rs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub iterations: bool,
}

impl Measure {
    /// Takes the figures from a probe's result; `percentiles` are those the objectives name.
    pub fn of(result: &RunResult, percentiles: &[f64], server_died: bool) -> Measure {
        let m = &result.measured;
        let due = m.requests.issued + m.requests.not_sent;
        let http_errors: u64 = m
            .status_codes
            .iter()
            .filter(|(code, _)| code.parse::<u16>().is_ok_and(|c| c >= 400))
            .map(|(_, n)| n)
            .sum();
        let errors = m.requests.failed + m.requests.not_sent + http_errors;
        // An open loop's answers after the load's end count over the time they took (its
        // drain, `drain_s`): over the planned time alone, a target that could not keep up,
        // its backlog answered in the drain, looked as if it had (194/s of 200/s offered
        // where 98/s were carried). Less one typical response time (the median), which the
        // last answer takes even from a target that keeps up: a 1 s probe of an endpoint
        // that answers in 50 ms is not 5% short. A queue that grew through the probe leaves
        // a drain well past its median, and that part counts.
        let typical_s = m.latency_us.as_ref().map_or(0.0, |l| l.p50 / 1e6);
        let drain_s = (m.drain_s.unwrap_or(0.0) - typical_s).max(0.0);
        let mut span_s = (m.duration_s + drain_s).max(1e-9);
        let (mut due, mut completed, mut errors) = (due, m.requests.completed, errors);
        let counts = iterations::of(result);
        if let Some(c) = &counts {
            (due, completed, errors) = (c.due, c.completed, c.errors);
            span_s = c.span_s + drain_s;
        }
        let latency = m.latency_us.as_ref();
        let histogram = decode_histogram(&m.histograms.latency).ok();
        let percentiles_us = percentiles
            .iter()
            .filter_map(|&q| {
                let h = histogram.as_ref().filter(|h| !h.is_empty())?;
                Some((q, h.value_at_quantile(q / 100.0) as f64 / 1_000.0))
            })
            .collect();
        let (early_p50_us, late_p50_us, trend_tau) = trend(result);
        let server = result.server.as_ref().and_then(|s| s.summary.as_ref());
        let server_cpu_cores =
            server.map(|s| s.cpu_cores_per_s.as_ref().unwrap_or(&s.cpu_cores).mean);
        let server_cpu_share = server.map(|s| {
            if let Some(q) = &s.cpu_quota_share {
                return q.mean;
            }
            let cores = s.cpu_cores_per_s.as_ref().unwrap_or(&s.cpu_cores).mean;
            let pinned = result
                .server
                .as_ref()
                .and_then(|r| r.limits.as_ref())
                .and_then(|l| l.pin.as_ref())
                .filter(|p| p.applied)
                .and_then(|p| cpu_count(&p.requested));
            cores / pinned.unwrap_or(1) as f64
        });
        Measure {
            offered_per_s: (result.load.model == "open_loop")
                .then(|| offered(result))
                .flatten(),
            connections: (result.load.model != "open_loop").then_some(result.load.connections),
            duration_s: m.duration_s,
            due,
            completed,
            achieved_per_s: completed as f64 / span_s,
            errors,
            error_share: if due == 0 {
                0.0
            } else {
                errors as f64 / due as f64
            },
            p50_us: latency.map(|l| l.p50),
            p90_us: latency.map(|l| l.p90),
            p99_us: latency.map(|l| l.p99),
            max_us: latency.map(|l| l.max),
            percentiles_us,
            mean_us: latency.map(|l| l.mean),
            early_p50_us,
            late_p50_us,
            trend_tau,
            server_cpu_share,
            server_cpu_cores,
            server_throttled_share: server.and_then(|s| match (s.throttled_periods, s.periods) {
                (Some(throttled), Some(periods)) if periods > 0 => {
                    Some(throttled as f64 / periods as f64)
                }
                _ => None,
            }),
            server_rss_bytes: server.map(|s| s.rss_bytes.max as u64),
            generator_busy: result
                .generator
                .thread_busy
                .iter()
                .cloned()
                .fold(0.0, f64::max),
            generator_lag_p99_us: m.scheduler_lag_us.as_ref().map(|l| l.p99),
            generator_late_requests: m
                .histograms
                .scheduler_lag
                .as_deref()
                .and_then(|h| decode_histogram(h).ok())
                .map_or(0, |h| {
                    h.iter_recorded()
                        .filter(|v| v.value_iterated_to() as f64 > LATE_SCHEDULER_P99_US * 1_000.0)
                        .map(|v| v.count_at_value())
                        .sum()
                }),
            generator_link: result
                .generator
                .link
                .as_ref()
                .filter(|l| l.saturated)
                .map(|l| {
                    format!(
                        "its link was saturated ({}: {:.1} Mbit/s of {:.1}, {}{})",
                        l.interface,
                        l.received_bits_per_s.max(l.sent_bits_per_s) / 1e6,
                        l.limit_bits_per_s.unwrap_or(0.0) / 1e6,
                        l.limit_source.as_deref().unwrap_or("its limit"),
                        match l.dropped_packets {
                            0 => String::new(),
                            n => format!("; {n} packets dropped at its own qdisc"),
                        }
                    )
                }),
            lost_generator: result.partial(),
            path: PathEvidence::of(result),
            interrupted: result.interrupted || result.partial().is_some(),
            server_died,
            iterations: counts.is_some(),
        }
    }

    /// What `achieved_per_s` counts, for a line: "answered" or "iterations done".
    pub fn done(&self) -> &'static str {
        if self.iterations {
            "iterations done"
        } else {
            "answered"
        }
    }

    /// The value of an objective's metric in this probe (`None`: not measured).
    pub fn value(&self, metric: Metric) -> Option<f64> {
        match metric {
            Metric::Percentile(q) => self
                .percentiles_us
                .iter()
                .find(|(p, _)| (p - q).abs() < 1e-9)
                .map(|(_, v)| *v)
                .or(match q {
                    50.0 => self.p50_us,
                    90.0 => self.p90_us,
                    99.0 => self.p99_us,
                    _ => None,
                }),
            Metric::Mean => self.mean_us,
            Metric::Max => self.max_us,
            Metric::Errors => Some(self.error_share),
            Metric::ServerCpu => self.server_cpu_share,
        }
    }
}

/// The open loop's rate: its stages' mean rate, weighted by their durations (one stage at a
/// constant rate for a probe).
fn offered(result: &RunResult) -> Option<f64> {
    let stages = &result.load.stages;
    let total: f64 = stages.iter().map(|s| s.duration_s).sum();
    if total <= 0.0 {
        return None;
    }
    let area: f64 = stages
        .iter()
        .map(|s| (s.from + s.to) / 2.0 * s.duration_s)
        .sum();
    Some(area / total)
}

/// Medians of the interval p50s in the first and last third of the measured timeline, and
/// their trend (none with fewer than three intervals).
fn trend(result: &RunResult) -> (Option<f64>, Option<f64>, Option<f64>) {
    let p50s: Vec<f64> = result
        .timeline
        .iter()
        .filter(|i| !i.warmup)
        .filter_map(|i| i.p50_us)
        .collect();
    trend_of(&p50s)
}

/// The first and last thirds' medians and Kendall's tau of a probe's interval medians, or
/// nothing when there are too few to judge a trend from.
fn trend_of(p50s: &[f64]) -> (Option<f64>, Option<f64>, Option<f64>) {
    // A trend needs points: under no trend at all, Kendall's tau of 3 medians is 1 one time
    // in six (a probe of 3 s judged "a queue grew" at 9% of the server's CPU); of 5, tau is
    // at least 0.5 one time in 24 (P = 0.042), and the other two conditions make it rarer.
    if p50s.len() < MIN_TREND_POINTS {
        return (None, None, None);
    }
    let third = p50s.len() / 3;
    (
        median(&p50s[..third]),
        median(&p50s[p50s.len() - third..]),
        Some(kendall_tau(p50s)),
    )
}

/// The fewest measured intervals a queue's growth is judged from.
pub const MIN_TREND_POINTS: usize = 5;

/// Kendall's tau-a of a series against its order: (concordant - discordant) pairs over all
/// pairs.
pub fn kendall_tau(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 2 {
        return 0.0;
    }
    let mut s = 0i64;
    for i in 0..n {
        for j in i + 1..n {
            s += match values[j].partial_cmp(&values[i]) {
                Some(std::cmp::Ordering::Greater) => 1,
                Some(std::cmp::Ordering::Less) => -1,
                _ => 0,
            };
        }
    }
    s as f64 / (n * (n - 1) / 2) as f64
}

/// The count of CPUs in a pin such as "CPUs 0-1,3".
fn cpu_count(requested: &str) -> Option<usize> {
    let list = requested.trim().strip_prefix("CPUs")?.trim();
    let mut n = 0;
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                n += b.checked_sub(a)? + 1;
            }
            None => {
                part.trim().parse::<usize>().ok()?;
                n += 1;
            }
        }
    }
    (n > 0).then_some(n)
}

/// Whether loadlab's side can explain what a probe missed, and how: a queue on a
/// generator's path (the path rule, docs/path.md), a generator's saturated link, a worker thread
/// saturated explains anything; lateness (by the engine's own test: p99 over 1 ms, and at
/// least three requests that late) explains a miss only when it is a fair share of the
/// response times (a quarter of their p99): 1.4 ms late does not explain a 950 ms p99.
pub fn generator_limited(m: &Measure) -> Option<String> {
    let mut why = Vec::new();
    if let Some(link) = &m.generator_link {
        why.push(link.clone());
    }
    // A queue on a generator's path: the load did not reach the server as offered.
    why.extend(
        m.path
            .iter()
            .filter(|p| p.is_path())
            .map(|p| p.said.clone()),
    );
    if m.generator_busy >= BUSY_THRESHOLD {
        why.push(format!(
            "a worker thread was busy {:.0}% of the time",
            m.generator_busy * 100.0
        ));
    }
    if let Some(lag) = m.generator_lag_p99_us {
        let late = lag > LATE_SCHEDULER_P99_US && m.generator_late_requests >= MIN_LATE_REQUESTS;
        let share = m.p99_us.is_none_or(|p99| lag >= p99 * GENERATOR_LAG_SHARE);
        if late && share {
            why.push(format!(
                "it noticed due requests {:.1} ms late at p99",
                lag / 1_000.0
            ));
        }
    }
    (!why.is_empty()).then(|| why.join(", "))
}

/// The share of the response times' p99 that loadlab's own lateness must reach to be taken
/// for the cause of a miss.
pub const GENERATOR_LAG_SHARE: f64 = 0.25;

/// What a probe must do besides its objectives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Criteria {
    pub objectives: Vec<Objective>,
    /// Responses per second at least this share of the offered rate (open loop).
    pub keep_up_share: f64,
    /// A queue grows when the last third's median response time is at least this many
    /// times the first third's ...
    pub growth_factor: f64,
    /// ... and at least this much longer (microseconds), so microsecond jitter on a fast
    /// service is not taken for a queue ...
    pub growth_floor_us: f64,
    /// ... and the rise is steady: Kendall's tau of the intervals' p50s at least this (a
    /// spike in the last third is not a queue).
    pub growth_tau: f64,
}

impl Criteria {
    /// The objectives with an error budget added when they have none (errors < 1%), and the
    /// defaults for keeping up (98%) and queue growth (1.5x, 1 ms, tau 0.5).
    pub fn new(mut objectives: Vec<Objective>) -> Criteria {
        if !objectives.iter().any(|o| o.metric == Metric::Errors) {
            objectives.push(Objective {
                metric: Metric::Errors,
                limit: DEFAULT_ERROR_BUDGET,
                inclusive: false,
            });
        }
        Criteria {
            objectives,
            keep_up_share: 0.98,
            growth_factor: 1.5,
            growth_floor_us: 1_000.0,
            growth_tau: 0.5,
        }
    }

    /// The percentiles the objectives name, for [`Measure::of`].
    pub fn percentiles(&self) -> Vec<f64> {
        self.objectives
            .iter()
            .filter_map(|o| match o.metric {
                Metric::Percentile(q) => Some(q),
                _ => None,
            })
            .collect()
    }
}

/// The error budget a search holds a service to when `--slo` names none.
pub const DEFAULT_ERROR_BUDGET: f64 = 0.01;

/// The verdict on one probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgment {
    /// Held every objective, kept up, no growing queue, and loadlab was not the limit.
    pub pass: bool,
    /// What it missed, in plain words; empty when it passed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missed: Vec<String>,
    /// loadlab itself was the limit: the probe says nothing about the service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_limited: Option<String>,
    /// It missed only response-time objectives, while keeping up with no queue growing: a
    /// stall of the machine could do that once, so a search runs it again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub marginal: bool,
}

/// Judges a probe. A probe that missed only what a saturated or late loadlab can cause
/// (response times, keeping up, a growing queue) while it was so is put down to loadlab, not
/// the service (it neither passes nor fails); errors (unless the generator's link was
/// saturated), the server's CPU and its death are the service's whatever loadlab did; one
/// that held despite a
/// late loadlab passes (lateness only adds to response times, which are measured from when
/// each request was due). An interrupted probe neither passes nor fails.
pub fn judge(m: &Measure, c: &Criteria) -> Judgment {
    let mut missed = Vec::new();
    // Misses a late or saturated loadlab cannot have caused: errors the server answered
    // with, its CPU, its death.
    let mut the_service_s = false;
    // Misses other than a response-time objective (falling behind, a queue, errors).
    let mut beyond_latency = false;
    if m.server_died {
        missed.push("the server died".to_string());
        the_service_s = true;
    }
    if m.due == 0 {
        missed.push("no request fell due".to_string());
        beyond_latency = true;
    }
    for o in &c.objectives {
        match m.value(o.metric) {
            Some(v) if !o.holds(v) => {
                missed.push(format!("{} was {} (objective {o})", o.name(), o.show(v)));
                // Errors are the service's, unless the generator's own link was saturated:
                // requests stuck behind it time out whatever the server does.
                the_service_s |= o.metric == Metric::ServerCpu
                    || (o.metric == Metric::Errors
                        && m.generator_link.is_none()
                        && !m.path.iter().any(PathEvidence::is_path));
                beyond_latency |= matches!(o.metric, Metric::Errors | Metric::ServerCpu);
            }
            Some(_) => {}
            None if o.metric == Metric::ServerCpu => missed.push(
                "the server's CPU was not measured: --until server-cpu needs a server loadlab \
                 launches or watches (--target, --exec, --pid)"
                    .into(),
            ),
            None => {
                missed.push(format!("{} was not measured (no response)", o.name()));
                beyond_latency = true;
            }
        }
    }
    if let Some(offered) = m.offered_per_s.filter(|&o| o > 0.0) {
        if m.achieved_per_s < offered * c.keep_up_share {
            missed.push(format!(
                "it did not keep up: {:.0} {}/s of {:.0} offered ({:.1}%, needs {:.0}%)",
                m.achieved_per_s,
                if m.iterations {
                    "iterations"
                } else {
                    "responses"
                },
                offered,
                m.achieved_per_s * 100.0 / offered,
                c.keep_up_share * 100.0
            ));
            beyond_latency = true;
        }
    }
    if let (Some(early), Some(late), Some(tau)) = (m.early_p50_us, m.late_p50_us, m.trend_tau) {
        if late >= early * c.growth_factor
            && late - early >= c.growth_floor_us
            && tau >= c.growth_tau
        {
            missed.push(format!(
                "a queue grew during the probe: median response time went from {} to {}",
                show_ms(early),
                show_ms(late)
            ));
            beyond_latency = true;
        }
    }
    let generator_limited = generator_limited(m).filter(|_| !missed.is_empty() && !the_service_s);
    Judgment {
        pass: missed.is_empty() && !m.interrupted,
        marginal: !missed.is_empty() && !beyond_latency && !m.server_died,
        missed,
        generator_limited,
    }
}

fn show_ms(us: f64) -> String {
    if us >= 1_000.0 {
        format!("{:.1} ms", us / 1_000.0)
    } else {
        format!("{us:.0} us")
    }
}

mod iterations;

#[cfg(test)]
mod drain_tests;
#[cfg(test)]
pub(crate) mod tests;
