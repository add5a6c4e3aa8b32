//! The result of a run as data: the JSON contract that reports, stored results and outside
//! scripts read (`schema/run-result.schema.json` describes it; a test checks real output
//! against it). Field names carry their units. Summaries come from full HDR histograms, which
//! are also kept, compressed, so results from several runs can be merged exactly.

use crate::config::{Model, RunConfig, Stop};
use crate::engine::RunOutcome;
use crate::error::ErrorClass;
use crate::schedule::Arrival;
use crate::stats::{PhaseStats, BUCKET};
use crate::sys::{Environment, NofileLimit};
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

pub use loadlab_probe::ServerReport;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema_version: u32,
    pub loadlab_version: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// The run was stopped early (Ctrl-C): what is here is what was measured until then.
    pub interrupted: bool,
    /// The command line that produced this result, when run from the CLI.
    pub command: Vec<String>,
    pub target: TargetInfo,
    pub load: LoadModel,
    /// The measured part of the run, warm-up excluded.
    pub measured: PhaseSummary,
    /// The warm-up, reported apart; absent when there was none.
    pub warmup: Option<PhaseSummary>,
    /// Requests sent but neither answered nor failed when the run ended (abandoned).
    pub in_flight_at_end: u64,
    /// The run interval by interval (warm-up included), for charts and for spotting drift.
    pub timeline: Vec<IntervalSummary>,
    /// One-line conclusions a reader should not miss: who was the bottleneck.
    pub verdicts: Vec<String>,
    pub generator: GeneratorHealth,
    pub environment: Environment,
    /// Things a careful reader must know about this run, in plain words.
    pub warnings: Vec<String>,
    /// The first interval's response times against the measured rest: a cold start shows
    /// here. Absent when the run had fewer than two intervals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_requests: Option<FirstRequests>,
    /// The server's side, when loadlab launched it (`--target`, `--exec`) or watched it
    /// (`--pid`, `--cgroup`): limits, start-up, CPU and memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<loadlab_probe::ServerReport>,
}

/// The first requests of a run, reported apart from the steady state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirstRequests {
    /// How many: the run's first completed requests (warm-up or not), across threads.
    pub requests: u64,
    /// When the last of them completed, from the start of the run.
    pub window_s: f64,
    pub latency_us: LatencySummary,
    /// The measured requests after them.
    pub rest_us: LatencySummary,
    /// The first requests were much slower than the rest: p50 at least twice, or p90 at
    /// least three times the rest's, and at least 1 ms more.
    pub cold_start: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    pub url: String,
    pub method: String,
    /// The socket address the host name resolved to.
    pub address: String,
    /// For https: how the connection was secured.
    pub tls: Option<TlsInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TlsInfo {
    /// `1.2`, `1.3`, or `1.2 or 1.3`.
    pub versions: String,
    /// How the server's certificate was checked.
    pub trust: String,
    /// `--insecure`: certificates were not verified.
    pub insecure: bool,
    pub resumption: bool,
    pub client_certificate: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadModel {
    /// `closed_loop`: each connection sends its next request when the last one ends.
    /// `open_loop`: requests go out on a schedule (an arrival rate), whatever the server does.
    pub model: String,
    /// Closed loop: the connections (the most any stage uses). Open loop: the cap.
    pub connections: usize,
    pub threads: usize,
    pub keepalive: bool,
    /// Set when the run was bounded by time.
    pub duration_s: Option<f64>,
    /// Set when the run was bounded by a request count.
    pub requests: Option<u64>,
    pub warmup_s: f64,
    pub timeout_s: f64,
    pub connect_timeout_s: f64,
    pub body_bytes: u64,
    /// Open loop: `uniform` (evenly spaced) or `poisson`.
    pub arrival: Option<String>,
    /// The Poisson seed, to reproduce the schedule.
    pub seed: Option<u64>,
    /// Stages of the profile: requests/s in an open loop, connections in a staged closed loop.
    pub stages: Vec<StageSpec>,
    /// The plan in words, as printed before the run.
    pub plan: String,
    pub interval_s: f64,
    /// Open loop with `--tick`: the sender wakes at most once per tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_s: Option<f64>,
    /// `--busy-poll`: worker threads polled for responses instead of sleeping.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub busy_poll: bool,
    /// Why loadlab chose to busy-poll (no `--busy-poll` given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_poll_why: Option<String>,
    /// Open loop over plain HTTP/1.1: threads slept from one due time (or tick) to the next,
    /// not woken by each response, and responses were timed by the kernel's receive stamps.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rx_stamps: bool,
    /// `http/1.1` or `h2`.
    pub protocol: String,
    /// HTTP/2 streams per connection (1 for HTTP/1.1).
    pub streams: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageSpec {
    pub duration_s: f64,
    pub from: f64,
    pub to: f64,
}

/// One interval of the timeline. Latencies are response times (from the intended send time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalSummary {
    pub start_s: f64,
    pub duration_s: f64,
    pub warmup: bool,
    /// Open loop: requests/s the schedule asked for.
    pub offered_per_s: Option<f64>,
    /// Closed loop: active connections (the stage level).
    pub connections: Option<f64>,
    /// Completed requests/s.
    pub achieved_per_s: f64,
    pub completed: u64,
    pub failed: u64,
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub max_us: Option<f64>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Share of all CPU time the hypervisor stole during this interval.
    pub steal: Option<f64>,
    /// This interval's response-time histogram (nanoseconds, compressed V2, base64).
    pub histogram: Option<String>,
    /// The server's CPU and memory in this interval, when loadlab sampled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<loadlab_probe::report::IntervalResources>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseSummary {
    pub duration_s: f64,
    pub requests: Requests,
    /// Absent when no request completed.
    pub latency_us: Option<LatencySummary>,
    /// Open loop: from the actual send to the last byte (the server's share of `latency_us`).
    pub service_time_us: Option<LatencySummary>,
    /// From the actual send to the first byte of the response.
    pub ttfb_us: Option<LatencySummary>,
    /// Open loop: actual send minus intended send, whatever the cause.
    pub send_lag_us: Option<LatencySummary>,
    /// Open loop: how late loadlab itself noticed requests were due (its own health).
    pub scheduler_lag_us: Option<LatencySummary>,
    /// TCP connection setup, apart from request latency. Absent when none was opened.
    pub connect_us: Option<LatencySummary>,
    /// TLS handshakes, after TCP setup (https only).
    pub tls_handshake_us: Option<LatencySummary>,
    /// TLS handshakes that resumed an earlier session, and full ones.
    pub tls_resumed: u64,
    pub tls_full: u64,
    pub connections_opened: u64,
    /// Connections loadlab tried and failed to open (refused, timed out, out of descriptors
    /// or ports): each is also a failed request in `errors`.
    pub connections_failed: u64,
    /// Responses by status code.
    pub status_codes: BTreeMap<String, u64>,
    /// Failed requests by class (only classes that occurred).
    pub errors: BTreeMap<String, u64>,
    /// For some classes, the first message seen (a certificate's problem, with the fix).
    pub error_details: BTreeMap<String, String>,
    pub bytes: Bytes,
    /// HdrHistograms (nanoseconds) in HdrHistogram's compressed V2 form, base64.
    pub histograms: EncodedHistograms,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Requests {
    /// Sent, or attempted: a request whose connection could not be opened counts as issued and failed.
    pub issued: u64,
    /// A full response arrived, whatever its status.
    pub completed: u64,
    /// No full response: see `errors`.
    pub failed: u64,
    /// Open loop: due before the end of the run but never sent (every connection was busy).
    pub not_sent: u64,
    /// Completed requests per second.
    pub per_second: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub p99_99: f64,
    pub max: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bytes {
    pub sent: u64,
    pub received: u64,
    pub sent_per_s: f64,
    pub received_per_s: f64,
    /// The most bytes sent in any 1-second window (Cloud Run's "max send bytes").
    pub max_sent_per_s: u64,
    pub max_received_per_s: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncodedHistograms {
    pub latency: String,
    pub connect: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratorHealth {
    /// CPU time of loadlab's worker threads (not the whole process: a server embedded in the
    /// same process is not billed to the generator).
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// Generator CPU seconds (user + system) per 100,000 completed requests.
    pub cpu_s_per_100k_requests: Option<f64>,
    /// Per worker thread: CPU time over wall time. Near 1.0, the generator was the limit.
    pub thread_busy: Vec<f64>,
    pub nofile: Option<NofileLimit>,
    /// Whether the PM QoS CPU latency was held at 0 during the run ("held"), or why not.
    pub pm_qos: String,
    /// Share of all CPU time the hypervisor stole, worst interval.
    pub max_steal: Option<f64>,
    /// Busy-polling: CPU seconds the worker threads spent polling with nothing to do (not
    /// counted in `thread_busy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_poll_idle_s: Option<f64>,
}

impl LatencySummary {
    pub fn from_histogram(h: &Histogram<u64>) -> Option<LatencySummary> {
        if h.is_empty() {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1_000.0;
        let q = |q: f64| us(h.value_at_quantile(q));
        Some(LatencySummary {
            count: h.len(),
            min: us(h.min()),
            mean: h.mean() / 1_000.0,
            stdev: h.stdev() / 1_000.0,
            p50: q(0.50),
            p75: q(0.75),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
            max: us(h.max()),
        })
    }
}

/// Encodes a histogram in the compressed V2 format, base64 (as HdrHistogram's tools print it).
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    use base64::Engine as _;
    let mut bytes = Vec::new();
    // Serialising into a Vec cannot fail for a valid histogram.
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("in-memory serialisation");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes what [`encode_histogram`] produced.
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("histogram is not base64: {e}"))?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| format!("histogram does not decode: {e:?}"))
}

fn summarize_phase(stats: &PhaseStats, duration: Duration, max_window: (u64, u64)) -> PhaseSummary {
    let secs = duration.as_secs_f64();
    let rate = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let status_codes = stats
        .status
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(code, &n)| (code.to_string(), n))
        .collect();
    let errors = ErrorClass::ALL
        .iter()
        .filter(|c| stats.errors[**c as usize] > 0)
        .map(|c| (c.key().to_string(), stats.errors[*c as usize]))
        .collect();
    PhaseSummary {
        duration_s: secs,
        requests: Requests {
            issued: stats.issued,
            completed: stats.completed,
            failed: stats.failed,
            not_sent: stats.not_sent,
            per_second: rate(stats.completed),
        },
        latency_us: LatencySummary::from_histogram(&stats.latency),
        service_time_us: LatencySummary::from_histogram(&stats.service),
        ttfb_us: LatencySummary::from_histogram(&stats.ttfb),
        send_lag_us: LatencySummary::from_histogram(&stats.send_lag),
        scheduler_lag_us: LatencySummary::from_histogram(&stats.scheduler_lag),
        connect_us: LatencySummary::from_histogram(&stats.connect),
        tls_handshake_us: LatencySummary::from_histogram(&stats.tls_handshake),
        tls_resumed: stats.tls_resumed,
        tls_full: stats.tls_full,
        error_details: ErrorClass::ALL
            .iter()
            .filter_map(|c| {
                stats.error_details[*c as usize]
                    .as_ref()
                    .map(|d| (c.key().to_string(), d.clone()))
            })
            .collect(),
        connections_opened: stats.connections_opened,
        connections_failed: ErrorClass::ALL
            .iter()
            .filter(|c| c.is_connect_failure())
            .map(|c| stats.errors[*c as usize])
            .sum(),
        status_codes,
        errors,
        bytes: Bytes {
            sent: stats.bytes_sent,
            received: stats.bytes_received,
            sent_per_s: rate(stats.bytes_sent),
            received_per_s: rate(stats.bytes_received),
            max_sent_per_s: max_window.0,
            max_received_per_s: max_window.1,
        },
        histograms: EncodedHistograms {
            latency: encode_histogram(&stats.latency),
            connect: encode_histogram(&stats.connect),
        },
    }
}

/// Turns a run's raw outcome into its result, with warnings a careful reader needs.
pub fn summarize(config: &RunConfig, outcome: &RunOutcome) -> RunResult {
    let warmup_len = outcome.warmup.min(outcome.elapsed);
    // Rates are per planned second: an open loop's drain of the last responses, or the
    // instant it takes threads to stop, does not stretch the measured time.
    let measured_len = match config.stop {
        Stop::Duration(d) if !outcome.interrupted => d,
        _ => outcome.elapsed.saturating_sub(outcome.warmup),
    };
    let warmup_buckets = (warmup_len.as_nanos() / BUCKET.as_nanos()) as usize;
    let timeline = &outcome.recorder.timeline;
    let [warm, measured] = &outcome.recorder.phases;
    let measured_summary = summarize_phase(
        measured,
        measured_len,
        timeline.max_window_per_s(warmup_buckets),
    );
    let warmup = (!outcome.warmup.is_zero()).then(|| {
        let mut head = timeline.clone();
        head.buckets.truncate(warmup_buckets);
        summarize_phase(warm, warmup_len, head.max_window_per_s(0))
    });

    let (user, system) = outcome
        .threads
        .iter()
        .fold((Duration::ZERO, Duration::ZERO), |(u, s), t| {
            (u + t.cpu.user, s + t.cpu.system)
        });
    let completed_all = warm.completed + measured.completed;
    let thread_busy: Vec<f64> = outcome
        .threads
        .iter()
        .map(|t| {
            t.cpu.total().saturating_sub(t.spin_idle).as_secs_f64() / t.wall.as_secs_f64().max(1e-9)
        })
        .collect();
    let generator = GeneratorHealth {
        cpu_user_s: user.as_secs_f64(),
        cpu_system_s: system.as_secs_f64(),
        cpu_s_per_100k_requests: (completed_all > 0)
            .then(|| (user + system).as_secs_f64() * 100_000.0 / completed_all as f64),
        thread_busy,
        nofile: outcome.nofile,
        pm_qos: match &outcome.pm_qos {
            Ok(()) => "held".to_string(),
            Err(why) => format!("not held: {why}"),
        },
        max_steal: outcome.steal.iter().cloned().reduce(f64::max),
        busy_poll_idle_s: config.busy_poll.then(|| {
            outcome
                .threads
                .iter()
                .map(|t| t.spin_idle.as_secs_f64())
                .sum()
        }),
    };
    let warnings = warnings(config, outcome, &measured_summary, &generator);
    let mut verdicts = verdicts(config, &measured_summary, &generator, outcome);
    let first_requests = first_requests(outcome);
    if let Some(first) = first_requests.as_ref().filter(|f| f.cold_start) {
        verdicts.push(format!(
            "cold start: the first {} requests (in {:.1} s) took p50 {:.2} ms, p99 {:.2} ms, against \
             p50 {:.2} ms, p99 {:.2} ms afterwards; keep it out of the figures with --warmup, or \
             study it on its own",
            first.requests,
            first.window_s,
            first.latency_us.p50 / 1e3,
            first.latency_us.p99 / 1e3,
            first.rest_us.p50 / 1e3,
            first.rest_us.p99 / 1e3
        ));
    }
    RunResult {
        schema_version: SCHEMA_VERSION,
        loadlab_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: humantime::format_rfc3339_millis(outcome.started_at).to_string(),
        interrupted: outcome.interrupted,
        command: Vec::new(),
        target: TargetInfo {
            url: config.url.original.clone(),
            method: config.method.clone(),
            address: outcome.address.to_string(),
            tls: config.tls.as_ref().map(|t| TlsInfo {
                versions: match t.version {
                    None => "1.2 or 1.3",
                    Some(crate::tls::TlsVersion::V1_2) => "1.2",
                    Some(crate::tls::TlsVersion::V1_3) => "1.3",
                }
                .to_string(),
                trust: t.trust.clone(),
                insecure: t.insecure,
                resumption: t.resume,
                client_certificate: t.client_certificate,
            }),
        },
        load: load_model(config),
        measured: measured_summary,
        warmup,
        in_flight_at_end: outcome.recorder.in_flight,
        timeline: timeline_summary(config, outcome),
        verdicts,
        generator,
        environment: crate::sys::environment(),
        warnings,
        first_requests,
        server: None,
    }
}

/// How much slower the first requests must be to count as a cold start.
const COLD_P50_FACTOR: f64 = 2.0;
/// p90, not p99: of 100 first requests, p99 is one or two requests, a hiccup rather than a
/// cold start.
const COLD_P90_FACTOR: f64 = 3.0;
const COLD_MIN_EXTRA_US: f64 = 1_000.0;

/// The run's first requests against the measured requests after them.
fn first_requests(outcome: &RunOutcome) -> Option<FirstRequests> {
    let first = &outcome.recorder.first;
    let measured = &outcome.recorder.phases[crate::stats::Phase::Measured as usize].latency;
    let mut rest = measured.clone();
    // The first requests that were measured are in the measured histogram too.
    rest.subtract(&first.measured).ok()?;
    if first.all.len() < crate::stats::FIRST_REQUESTS || rest.is_empty() {
        return None;
    }
    let latency = LatencySummary::from_histogram(&first.all)?;
    let rest = LatencySummary::from_histogram(&rest)?;
    let slower = |a: f64, b: f64, factor: f64| a >= b * factor && a - b >= COLD_MIN_EXTRA_US;
    Some(FirstRequests {
        requests: first.all.len(),
        window_s: first.last_end.as_secs_f64(),
        cold_start: slower(latency.p50, rest.p50, COLD_P50_FACTOR)
            || slower(latency.p90, rest.p90, COLD_P90_FACTOR),
        latency_us: latency,
        rest_us: rest,
    })
}

/// Adds what loadlab saw of the server to a result: the report itself, its figures on each
/// timeline interval, and the verdicts they call for.
pub fn attach_server(result: &mut RunResult, report: loadlab_probe::ServerReport) {
    for interval in &mut result.timeline {
        interval.server =
            loadlab_probe::report::interval(&report.samples, interval.start_s, interval.duration_s);
    }
    if let Some(exit) = &report.exit {
        // The run ended because the server did, not because someone stopped it.
        if !result.interrupted {
            result
                .warnings
                .retain(|w| !w.starts_with("the run was interrupted"));
        }
        result.verdicts.push(if exit.oom_killed {
            format!(
                "the server was OOM-killed {:.1} s into the run ({}): it needed more than its \
                 memory limit; the run stopped there and these results cover the time before",
                exit.at_s, exit.status
            )
        } else {
            format!(
                "the server exited {:.1} s into the run ({}): the run stopped there and these \
                 results cover the time before",
                exit.at_s, exit.status
            )
        });
    }
    if let Some(sum) = &report.summary {
        if let (Some(share), Some(throttled), Some(periods)) =
            (&sum.cpu_quota_share, sum.throttled_periods, sum.periods)
        {
            if periods > 0 && throttled as f64 >= periods as f64 * 0.5 && share.p50 >= 0.9 {
                result.verdicts.push(format!(
                    "the server was CPU-bound on its quota: it used {:.0}% of its {} cores at p50 \
                     and was throttled in {:.0}% of CPU periods ({:.2} s waiting); latency includes \
                     those waits",
                    share.p50 * 100.0,
                    sum.cpu_quota_cores.unwrap_or(0.0),
                    throttled as f64 * 100.0 / periods as f64,
                    sum.throttled_s.unwrap_or(0.0)
                ));
            }
        }
        if let Some(share) = &sum.memory_limit_share {
            if share.max >= 0.9 {
                result.verdicts.push(format!(
                    "the server came within {:.0}% of its memory limit: close to being OOM-killed",
                    (1.0 - share.max).max(0.0) * 100.0
                ));
            }
        }
    }
    if let Some(limits) = &report.limits {
        let missing = limits.not_applied();
        if !missing.is_empty() {
            result.warnings.push(format!(
                "these limits did not hold (--limits best-effort): {}",
                missing.join("; ")
            ));
        }
    }
    result.server = Some(report);
}

/// What is about to run, in words: printed before the run starts.
pub fn plan(config: &RunConfig) -> String {
    format!(
        "{} {}: {}, {} thread{}{}{}",
        config.method,
        config.url.original,
        load_model(config).plan,
        config.threads,
        if config.threads == 1 { "" } else { "s" },
        if config.busy_poll {
            " (busy-polling)"
        } else {
            ""
        },
        if config.warmup.is_zero() {
            String::new()
        } else {
            format!(
                ", after a {} warm-up",
                humantime::format_duration(config.warmup)
            )
        }
    )
}

fn load_model(config: &RunConfig) -> LoadModel {
    let (model, arrival, seed, profile, plan) = match &config.model {
        Model::Open { profile, arrival } => {
            let (name, seed) = match arrival {
                Arrival::Uniform => ("uniform", None),
                Arrival::Poisson { seed } => ("poisson", Some(*seed)),
            };
            let plan = format!(
                "open loop, {} arrivals{}: {}; up to {} connections",
                name,
                if config.tick.is_zero() {
                    String::new()
                } else {
                    format!(
                        " sent on a {} tick",
                        humantime::format_duration(config.tick)
                    )
                },
                profile.describe("requests/s"),
                config.connections
            );
            (
                "open_loop",
                Some(name.to_string()),
                seed,
                Some(profile),
                plan,
            )
        }
        Model::Closed {
            stages: Some(profile),
        } => {
            let plan = format!("closed loop: {}", profile.describe("connections"));
            ("closed_loop", None, None, Some(profile), plan)
        }
        Model::Closed { stages: None } => {
            let length = match config.stop {
                Stop::Duration(d) => humantime::format_duration(d).to_string(),
                Stop::Requests(n) => format!("{n} requests"),
            };
            let plan = if config.http2 {
                format!(
                    "closed loop over HTTP/2: {} connections x {} streams for {length}",
                    config.connections, config.streams
                )
            } else {
                format!(
                    "closed loop: {} connections for {length}",
                    config.connections
                )
            };
            ("closed_loop", None, None, None, plan)
        }
    };
    LoadModel {
        model: model.into(),
        connections: config.connections,
        threads: config.threads,
        keepalive: config.keepalive,
        duration_s: match config.stop {
            Stop::Duration(d) => Some(d.as_secs_f64()),
            Stop::Requests(_) => None,
        },
        requests: match config.stop {
            Stop::Requests(n) => Some(n),
            Stop::Duration(_) => None,
        },
        warmup_s: config.warmup.as_secs_f64(),
        timeout_s: config.timeout.as_secs_f64(),
        connect_timeout_s: config.connect_timeout.as_secs_f64(),
        body_bytes: config.body.len() as u64,
        arrival,
        seed,
        stages: profile.map_or_else(Vec::new, |p| {
            p.stages
                .iter()
                .map(|s| StageSpec {
                    duration_s: s.duration.as_secs_f64(),
                    from: s.from,
                    to: s.to,
                })
                .collect()
        }),
        plan,
        interval_s: config.interval.as_secs_f64(),
        tick_s: (!config.tick.is_zero()).then_some(config.tick.as_secs_f64()),
        busy_poll: config.busy_poll,
        busy_poll_why: config.busy_poll_why.clone(),
        rx_stamps: config.sleeps_between_sends(),
        protocol: if config.http2 { "h2" } else { "http/1.1" }.to_string(),
        streams: config.streams,
    }
}

fn timeline_summary(config: &RunConfig, outcome: &RunOutcome) -> Vec<IntervalSummary> {
    let len = config.interval;
    let buckets_per_interval = (len.as_millis() / BUCKET.as_millis()).max(1) as usize;
    let buckets = &outcome.recorder.timeline.buckets;
    // The planned length (not the elapsed time, which runs a hair over) decides the count,
    // unless data arrived later (requests drained after the schedule ended).
    let planned = match config.stop {
        Stop::Duration(d) => (config.warmup + d).min(outcome.elapsed),
        Stop::Requests(_) => outcome.elapsed,
    };
    let n = planned.as_nanos().div_ceil(len.as_nanos()) as usize;
    let n = n
        .max(buckets.len().div_ceil(buckets_per_interval))
        .max(outcome.intervals.last().map_or(0, |(i, _)| i + 1));
    let warmup = config.warmup;
    let mut hists = outcome.intervals.iter().peekable();
    (0..n)
        .map(|i| {
            let start = len * i as u32;
            let end = start + len;
            let span = &buckets[(i * buckets_per_interval).min(buckets.len())
                ..((i + 1) * buckets_per_interval).min(buckets.len())];
            let sum = |f: fn(&crate::stats::Bucket) -> u64| span.iter().map(f).sum::<u64>();
            let hist = match hists.peek() {
                Some((index, _)) if *index == i => hists.next().map(|(_, h)| h),
                _ => None,
            };
            let q = |q: f64| hist.map(|h| h.value_at_quantile(q) as f64 / 1_000.0);
            let completed = sum(|b| b.completed);
            let secs = len.as_secs_f64();
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
                    (Some((arrivals(end) - arrivals(start)) / secs), None)
                }
                Model::Closed { stages: Some(p) } => {
                    let mid = (start + len / 2).saturating_sub(warmup);
                    (None, Some(p.level_at(mid).floor()))
                }
                Model::Closed { stages: None } => (None, None),
            };
            IntervalSummary {
                start_s: start.as_secs_f64(),
                duration_s: secs,
                warmup: start < warmup,
                offered_per_s,
                connections,
                achieved_per_s: completed as f64 / secs,
                completed,
                failed: sum(|b| b.failed),
                p50_us: q(0.5),
                p90_us: q(0.9),
                p99_us: q(0.99),
                max_us: hist.map(|h| h.max() as f64 / 1_000.0),
                bytes_sent: sum(|b| b.bytes_sent),
                bytes_received: sum(|b| b.bytes_received),
                steal: outcome.steal.get(i).copied(),
                histogram: hist.map(encode_histogram),
                server: None,
            }
        })
        .collect()
}

/// The most scheduler lag at p99 before the generator counts as late (the 1 ms).
pub const LATE_SCHEDULER_P99_US: f64 = 1_000.0;

fn verdicts(
    config: &RunConfig,
    measured: &PhaseSummary,
    generator: &GeneratorHealth,
    outcome: &RunOutcome,
) -> Vec<String> {
    let mut out = Vec::new();
    let busiest = generator.thread_busy.iter().cloned().fold(0.0, f64::max);
    let busy = busiest >= BUSY_THRESHOLD && outcome.elapsed >= Duration::from_secs(1);
    let late = measured
        .scheduler_lag_us
        .as_ref()
        .filter(|l| l.p99 > LATE_SCHEDULER_P99_US);
    if busy || late.is_some() {
        let mut why = Vec::new();
        if let Some(l) = late {
            why.push(format!(
                "it noticed due requests {:.2} ms late at p99",
                l.p99 / 1_000.0
            ));
        }
        if busy {
            why.push(format!(
                "a worker thread was busy {:.0}% of the time",
                busiest * 100.0
            ));
        }
        out.push(format!(
            "the generator was saturated ({}): the target may be faster than these numbers say; \
             give loadlab more threads (-t) or cores",
            why.join(", ")
        ));
    }
    if let Model::Open { profile, .. } = &config.model {
        // Compare what completed while the schedule ran with what fell due in that time (not
        // with the nominal rate: Poisson arrivals vary by themselves).
        let due = measured.requests.issued + measured.requests.not_sent;
        let from = (config.warmup.as_nanos() / BUCKET.as_nanos()) as usize;
        let to = ((config.warmup + profile.duration()).as_nanos() / BUCKET.as_nanos()) as usize;
        let buckets = &outcome.recorder.timeline.buckets;
        let in_time: u64 = buckets
            .get(from.min(buckets.len())..to.min(buckets.len()))
            .map_or(0, |b| b.iter().map(|b| b.completed).sum());
        let unsent = measured.requests.not_sent;
        if due > 0 && (unsent > 0 || (in_time as f64) < due as f64 * KEEP_UP_SHARE) {
            let secs = profile.duration().as_secs_f64();
            let mut line = format!(
                "the target could not keep up: {:.1} requests/s completed while {:.1}/s fell due",
                in_time as f64 / secs,
                due as f64 / secs
            );
            if unsent > 0 {
                line.push_str(&format!(
                    "; {unsent} requests were never sent because every connection was busy (cap {})",
                    config.connections
                ));
            }
            out.push(line);
        }
    }
    out
}

/// An open loop "kept up" when at least this share of the requests that fell due during the
/// schedule also completed during it.
pub const KEEP_UP_SHARE: f64 = 0.97;

/// Steal above this share of CPU time in an interval earns a warning.
pub const STEAL_WARNING: f64 = 0.05;

/// Threshold above which a worker thread counts as saturated.
pub const BUSY_THRESHOLD: f64 = 0.9;

fn warnings(
    config: &RunConfig,
    outcome: &RunOutcome,
    measured: &PhaseSummary,
    _generator: &GeneratorHealth,
) -> Vec<String> {
    let mut out = Vec::new();
    if outcome.interrupted {
        out.push("the run was interrupted: these figures cover only the time until then".into());
    }
    if let Some(lim) = outcome.nofile {
        // Each connection needs a descriptor; leave room for the runtime's own.
        let needed = config.connections as u64 + 64;
        if lim.soft < needed {
            out.push(format!(
                "the open-files limit ({}) is below the {needed} descriptors {} connections need: \
                 raise the hard limit (ulimit -Hn, or LimitNOFILE in systemd) or use fewer connections",
                lim.soft, config.connections
            ));
        }
    }
    if let Some(steal) = outcome.steal.iter().cloned().reduce(f64::max) {
        if steal >= STEAL_WARNING {
            out.push(format!(
                "the hypervisor stole up to {:.0}% of CPU time in an interval: another tenant or \
                 this VM's host was busy; expect noisy figures and repeat the run",
                steal * 100.0
            ));
        }
    }
    let r = &measured.requests;
    if r.issued > 0 && r.completed == 0 {
        out.push("every measured request failed: see the errors".into());
    } else if r.failed * 100 > r.issued {
        out.push(format!(
            "{:.1}% of measured requests failed: see the errors",
            r.failed as f64 * 100.0 / r.issued as f64
        ));
    }
    if measured.requests.completed > 0 && measured.requests.completed < 1_000 {
        out.push(format!(
            "only {} requests were measured: high percentiles rest on very few samples",
            measured.requests.completed
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::new_histogram;

    #[test]
    fn histograms_round_trip_exactly() {
        let mut h = new_histogram();
        for v in [1_000u64, 25_000, 25_001, 3_000_000, 59_000_000_000] {
            h.record(v).unwrap();
        }
        let back = decode_histogram(&encode_histogram(&h)).unwrap();
        assert_eq!(back, h);
        assert!(decode_histogram("not base64!").is_err());
    }

    #[test]
    fn summary_is_in_microseconds() {
        let mut h = new_histogram();
        for _ in 0..99 {
            h.record(100_000).unwrap(); // 100 us
        }
        h.record(10_000_000).unwrap(); // 10 ms
        let s = LatencySummary::from_histogram(&h).unwrap();
        assert_eq!(s.count, 100);
        assert!((s.p50 - 100.0).abs() < 0.1, "{s:?}");
        assert!((s.max - 10_000.0).abs() < 10.0, "{s:?}");
        assert!(LatencySummary::from_histogram(&new_histogram()).is_none());
    }
}
