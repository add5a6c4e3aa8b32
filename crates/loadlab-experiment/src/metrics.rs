//! The figures an experiment compares, read from one run's result: one value per run and
//! metric, so that the unit of comparison is the run, not the request (requests within a run
//! are not independent; pooling them would overstate certainty). Pure reads of the result.

use loadlab_result::RunResult;

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sense {
    HigherIsBetter,
    LowerIsBetter,
}

/// A metric compared across arms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// The key in tables, gates and JSON (`rps`, `p99`, `server.cpu.p99`).
    pub key: &'static str,
    pub label: &'static str,
    pub sense: Sense,
    pub unit: Unit,
    /// Words for a better and a worse change ("faster"/"slower").
    pub better: &'static str,
    pub worse: &'static str,
    /// The Holm family the metric is tested in.
    pub family: Family,
}

/// Metrics are tested in families of at most four, each Holm-adjusted across its metrics
/// and every arm compared at once. One family of eleven would make 5 runs per arm useless:
/// the smallest exact p for 5 against 5 is 2/252 = 0.0079, and Holm's first step multiplies
/// it by the family's size (11 x 0.0079 = 0.087, never significant at 95%); with four, 0.032.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// What the user sees: throughput and latency.
    Service,
    /// What the server spends: CPU, memory, bytes.
    Server,
    /// The tail's far end, errors, and loadlab's own CPU.
    Health,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    PerSecond,
    Micros,
    Fraction,
    Cores,
    Bytes,
    BytesPerSecond,
    CpuMicrosPerRequest,
}

const fn m(
    key: &'static str,
    label: &'static str,
    sense: Sense,
    unit: Unit,
    words: (&'static str, &'static str),
    family: Family,
) -> Metric {
    Metric {
        key,
        label,
        sense,
        unit,
        better: words.0,
        worse: words.1,
        family,
    }
}

use serde::Serialize;
use Family::*;
use Sense::*;
use Unit::*;

const FASTER: (&str, &str) = ("faster", "slower");
const LESS: (&str, &str) = ("less", "more");

/// The key of the share of requests beyond a cliff: no run has a value for it; comparisons
/// add it when a percentile sits on a cliff.
pub const CLIFF_SHARE: &str = "beyond_cliff";

/// Every metric a comparison reports, in table order.
pub const METRICS: &[Metric] = &[
    m(
        "rps",
        "requests/s",
        HigherIsBetter,
        PerSecond,
        ("higher", "lower"),
        Service,
    ),
    m("p50", "p50", LowerIsBetter, Micros, FASTER, Service),
    m("p90", "p90", LowerIsBetter, Micros, FASTER, Service),
    m("p99", "p99", LowerIsBetter, Micros, FASTER, Service),
    // Only when a percentile sits on a cliff (see `cliff_rows`): each run's share of requests
    // beyond it, in place of that percentile's test. In the service family: it is what the
    // users saw, and it takes the family place of the percentile it replaces (p99 on a cliff
    // leaves the family as this joins it: still four).
    m(
        CLIFF_SHARE,
        "beyond the cliff",
        LowerIsBetter,
        Fraction,
        ("fewer", "more"),
        Service,
    ),
    m(
        "server.cpu_per_request",
        "server CPU per request",
        LowerIsBetter,
        CpuMicrosPerRequest,
        LESS,
        Server,
    ),
    m(
        "server.cpu.p99",
        "server CPU p99",
        LowerIsBetter,
        Cores,
        LESS,
        Server,
    ),
    m(
        "server.memory.p99",
        "server memory p99",
        LowerIsBetter,
        Bytes,
        LESS,
        Server,
    ),
    m(
        "sent.busiest_s",
        "busiest-second sent bytes",
        LowerIsBetter,
        BytesPerSecond,
        ("fewer", "more"),
        Server,
    ),
    m("p99.9", "p99.9", LowerIsBetter, Micros, FASTER, Health),
    m(
        "errors",
        "error rate",
        LowerIsBetter,
        Fraction,
        ("fewer", "more"),
        Health,
    ),
    m(
        "generator.cpu_per_request",
        "loadlab CPU per request",
        LowerIsBetter,
        CpuMicrosPerRequest,
        LESS,
        Health,
    ),
];

/// Every key [`value`] answers, for gates and their error messages.
pub fn value_keys() -> &'static [&'static str] {
    &[
        "rps",
        "p50",
        "p75",
        "p90",
        "p95",
        "p99",
        "p99.9",
        "p99.99",
        "max",
        "mean",
        "errors",
        "server.cpu_per_request",
        "server.cpu.p50",
        "server.cpu.p99",
        "server.memory.p99",
        "sent.busiest_s",
        "generator.cpu_per_request",
    ]
}

pub fn metric(key: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.key == key)
}

/// Failed requests and 5xx responses over all requests issued: what a user would count as
/// an error (a 404 from a path in the rotation is the server's answer, not an error).
pub fn error_rate(r: &RunResult) -> Option<f64> {
    let m = &r.measured;
    let issued = m.requests.issued;
    if issued == 0 {
        return None;
    }
    let server_errors: u64 = m
        .status_codes
        .iter()
        .filter(|(code, _)| code.starts_with('5'))
        .map(|(_, n)| n)
        .sum();
    Some((m.requests.failed + server_errors) as f64 / issued as f64)
}

/// The value of `key` for one run, when the run has it.
pub fn value(r: &RunResult, key: &str) -> Option<f64> {
    let m = &r.measured;
    let lat = m.latency_us.as_ref();
    let server = r.server.as_ref().and_then(|s| s.summary.as_ref());
    match key {
        "rps" => Some(m.requests.per_second),
        "p50" => lat.map(|l| l.p50),
        "p75" => lat.map(|l| l.p75),
        "p90" => lat.map(|l| l.p90),
        "p95" => lat.map(|l| l.p95),
        "p99" => lat.map(|l| l.p99),
        "p99.9" => lat.map(|l| l.p99_9),
        "p99.99" => lat.map(|l| l.p99_99),
        "max" => lat.map(|l| l.max),
        "mean" => lat.map(|l| l.mean),
        "errors" => error_rate(r),
        // The server is sampled to the run's end, an open loop's drain included, and the
        // requests counted are all those answered: both over `rate_span_s`.
        "server.cpu_per_request" => server.and_then(|s| {
            let completed = m.requests.completed;
            (completed > 0).then(|| s.cpu_cores.mean * m.rate_span_s() * 1e6 / completed as f64)
        }),
        // Under a quota, whole seconds are what the quota is held to (see the server report).
        "server.cpu.p99" => server.map(|s| s.cpu_cores_per_s.unwrap_or(s.cpu_cores).p99),
        "server.cpu.p50" => server.map(|s| s.cpu_cores_per_s.unwrap_or(s.cpu_cores).p50),
        "server.memory.p99" => {
            server.map(|s| s.memory_bytes.map_or(s.rss_bytes.p99, |mem| mem.p99))
        }
        "sent.busiest_s" => Some(
            server
                .and_then(|s| s.sent_per_s)
                .map_or(m.bytes.max_received_per_s as f64, |s| s.max),
        ),
        "generator.cpu_per_request" => r.generator.cpu_s_per_100k_requests.map(|c| c * 10.0),
        _ => None,
    }
}

/// A value in its metric's unit, for people.
pub fn format(unit: Unit, v: f64) -> String {
    match unit {
        PerSecond => format!("{}/s", group(v)),
        Micros => duration_us(v),
        Fraction => format!("{:.2}%", v * 100.0),
        Cores => format!("{v:.2} cores"),
        Bytes => bytes(v),
        BytesPerSecond => format!("{}/s", bytes(v)),
        CpuMicrosPerRequest => format!("{} CPU", duration_us(v)),
    }
}

/// A value without its unit's suffix, for ranges after a full value ("6,322/s (6,210–6,401)").
pub fn bare(unit: Unit, v: f64) -> String {
    match unit {
        PerSecond => group(v),
        Cores => format!("{v:.2}"),
        BytesPerSecond => bytes(v),
        CpuMicrosPerRequest => duration_us(v),
        _ => format(unit, v),
    }
}

/// Latencies, byte counts and counts are written as the text report writes them.
pub use loadlab_report::{bytes, duration_us};

/// A rate: whole and grouped from 100 up (`6,322`), one decimal below (`12.5`).
fn group(v: f64) -> String {
    if v >= 100.0 {
        loadlab_report::count(v.round() as u64)
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_in_their_units() {
        assert_eq!(format(PerSecond, 6322.4), "6,322/s");
        assert_eq!(format(Micros, 94_400.0), "94.4 ms");
        assert_eq!(format(Micros, 700.0), "700 µs");
        assert_eq!(format(Fraction, 0.0125), "1.25%");
        assert_eq!(format(Bytes, 2.3 * 1024.0 * 1024.0), "2.3 MiB");
        assert_eq!(format(Cores, 0.084), "0.08 cores");
        assert!(METRICS.iter().all(|m| metric(m.key) == Some(m)));
    }

    /// An open loop's server CPU per request counts the drain's CPU and the drain's answers
    /// alike: 0.5 cores over 2 s planned and 2 s of drain for 400 answers is 5 ms each (over
    /// the planned 2 s alone it read half that).
    #[test]
    fn server_cpu_per_request_is_over_the_drain_too() {
        let path = format!(
            "{}/../loadlab-report/tests/fixtures/server.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut r: RunResult =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let m = &mut r.measured;
        (m.duration_s, m.drain_s, m.requests.completed) = (2.0, Some(2.0), 400);
        let server = r.server.as_mut().and_then(|s| s.summary.as_mut()).unwrap();
        server.cpu_cores.mean = 0.5;
        let cpu_us = value(&r, "server.cpu_per_request").unwrap();
        assert!((cpu_us - 5_000.0).abs() < 1e-6, "{cpu_us}");
        // A closed loop (no drain): over its duration, as before.
        r.measured.drain_s = None;
        let cpu_us = value(&r, "server.cpu_per_request").unwrap();
        assert!((cpu_us - 2_500.0).abs() < 1e-6, "{cpu_us}");
    }
}
