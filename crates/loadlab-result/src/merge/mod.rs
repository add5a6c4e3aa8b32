//! An exact merge of run results: several shards that ran together against one service, or
//! the repetitions of one experiment arm. Histograms are added (never percentiles averaged:
//! a p99 of p99s is no percentile of anything), counts summed, timelines aligned by interval
//! start, and each part's own figures kept in [`RunResult::parts`].
//!
//! What a merge cannot know exactly is said so: the busiest second of bytes is the busiest of
//! the parts' own and of the merged timeline's intervals, a lower bound of the true busiest
//! 1-second window across parts (their sliding windows are not kept).
//!
//! This module must not decide anything about the parts (they are taken as given); a part
//! whose shape differs (another interval width, another schema, another scenario) is refused
//! with the reason. `scenario` merges the parts' per-step figures.

use crate::histogram::{decode_histogram, encode_histogram, new_histogram};
use crate::latency::LatencySummary;
use crate::run::{
    Bytes, EarlyData, EncodedHistograms, IntervalSummary, PartSummary, PhaseSummary, Requests,
    RunResult, WireBytes, SCHEMA_VERSION,
};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

pub use intervals::merge_concurrent_intervals;
use intervals::merge_timelines;

mod generator;
mod intervals;
mod scenario;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeError {
    Empty,
    Schema {
        part: usize,
        version: u32,
    },
    Interval {
        part: usize,
        interval_s: String,
    },
    Histogram {
        part: usize,
        what: String,
    },
    Scenario {
        part: usize,
        why: String,
    },
    /// The parts' gRPC sections (`crate::grpc::merge`) do not add up: why.
    Grpc(String),
    /// The parts' WebSocket sections (`crate::ws::merge`) do not add up: why.
    WebSocket(String),
}

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MergeError::Empty => write!(f, "nothing to merge: give at least one result"),
            MergeError::Schema { part, version } => write!(
                f,
                "result {} has schema version {version}; this loadlab reads version \
                 {SCHEMA_VERSION}: merge results made by the same loadlab version",
                part + 1
            ),
            MergeError::Interval { part, interval_s } => write!(
                f,
                "result {} has a {interval_s} s timeline interval, unlike the first: run every \
                 part with the same --interval",
                part + 1
            ),
            MergeError::Scenario { part, why } => write!(
                f,
                "result {} {why}: merge runs of the same scenario",
                part + 1
            ),
            MergeError::Grpc(why) => write!(f, "{why}: merge runs of the same gRPC method"),
            MergeError::WebSocket(why) => {
                write!(f, "{why}: merge runs of the same --ws-mode")
            }
            MergeError::Histogram { part, what } => {
                write!(
                    f,
                    "result {}: its {what} histogram does not decode",
                    part + 1
                )
            }
        }
    }
}

impl std::error::Error for MergeError {}

/// How the parts ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Side by side against one service (shards): rates add up, the timeline is summed.
    Concurrent,
    /// One after another (an arm's repetitions): the measured time adds up, so the rate is
    /// all completions over all that time; the timeline is each interval's mean over the
    /// parts that reached it, with their histograms added; the load model is the first
    /// part's; verdicts that recur are said once, with how many parts they held for.
    Sequential,
}

/// Merges results of shards that ran together into one ([`Mode::Concurrent`]).
pub fn merge(parts: &[RunResult]) -> Result<RunResult, MergeError> {
    merge_with(parts, Mode::Concurrent)
}

/// Merges an arm's repetitions into one ([`Mode::Sequential`]).
pub fn merge_repetitions(parts: &[RunResult]) -> Result<RunResult, MergeError> {
    merge_with(parts, Mode::Sequential)
}

/// Merges results into one. One part gives it back with its part summary added.
pub fn merge_with(parts: &[RunResult], mode: Mode) -> Result<RunResult, MergeError> {
    let first = parts.first().ok_or(MergeError::Empty)?;
    for (i, p) in parts.iter().enumerate() {
        if p.schema_version != SCHEMA_VERSION {
            return Err(MergeError::Schema {
                part: i,
                version: p.schema_version,
            });
        }
        if (p.load.interval_s - first.load.interval_s).abs() > 1e-9 {
            return Err(MergeError::Interval {
                part: i,
                interval_s: p.load.interval_s.to_string(),
            });
        }
    }
    let measured = merge_phases(parts.iter().map(|p| Some(&p.measured)).collect(), mode)?
        .expect("every part has a measured phase");
    let warmup = merge_phases(parts.iter().map(|p| p.warmup.as_ref()).collect(), mode)?;
    let timeline = merge_timelines(parts, mode)?;
    let mut merged = first.clone();
    merged.interrupted = parts.iter().any(|p| p.interrupted);
    merged.measured = measured;
    merged.warmup = warmup;
    merged.in_flight_at_end = parts.iter().map(|p| p.in_flight_at_end).sum();
    let busiest_interval = timeline
        .iter()
        .filter_map(IntervalSummary::measured_sent_per_s)
        .max()
        .unwrap_or(0);
    merged.measured.bytes.max_sent_per_s =
        merged.measured.bytes.max_sent_per_s.max(busiest_interval);
    merged.timeline = timeline;
    merged.scenario = scenario::merge_scenarios(parts, mode, merged.measured.rate_span_s())?;
    let grpc: Vec<_> = parts.iter().filter_map(|p| p.grpc.as_ref()).collect();
    merged.grpc = crate::grpc::merge(&grpc).map_err(MergeError::Grpc)?;
    let ws: Vec<_> = parts.iter().filter_map(|p| p.websocket.as_ref()).collect();
    merged.websocket =
        crate::ws::merge(&ws, matches!(mode, Mode::Concurrent)).map_err(MergeError::WebSocket)?;
    merged.generator = generator::merge(parts, merged.measured.requests.completed);
    match mode {
        Mode::Concurrent => {
            merged.load.connections = parts.iter().map(|p| p.load.connections).sum();
            merged.load.threads = parts.iter().map(|p| p.load.threads).sum();
            // A count-bound run dealt its count out: the parts' shares add up to it (of the
            // parts merged: a missing shard's share is not in it, nor in the figures).
            merged.load.requests = parts.iter().map(|p| p.load.requests).sum();
            merged.verdicts = union(parts.iter().map(|p| &p.verdicts));
            merged.warnings = union(parts.iter().map(|p| &p.warnings));
            merged.notes = union(parts.iter().map(|p| &p.notes));
        }
        Mode::Sequential => {
            merged.verdicts = recurring(parts.iter().map(|p| &p.verdicts), parts.len());
            merged.warnings = recurring(parts.iter().map(|p| &p.warnings), parts.len());
            merged.notes = union(parts.iter().map(|p| &p.notes));
        }
    }
    // Each part's first requests and server were its own; a merge has no single one.
    merged.first_requests = None;
    // Shards through an agent: one shard (the first) watched the server for them all.
    let watched: Vec<&RunResult> = parts
        .iter()
        .filter(|p| p.server.as_ref().is_some_and(|s| s.agent.is_some()))
        .collect();
    merged.server = if parts.len() == 1 {
        first.server.clone()
    } else if mode == Mode::Concurrent && watched.len() == 1 {
        watched[0].server.clone()
    } else {
        None
    };
    // So were the kernel's counters (one namespace's, over one run's time) and the link.
    merged.kernel = (parts.len() == 1).then(|| first.kernel.clone()).flatten();
    merged.link = (parts.len() == 1).then(|| first.link.clone()).flatten();
    merged.parts = parts.iter().flat_map(part_summaries).collect();
    merged.shard = None;
    Ok(merged)
}

/// A part's own summary; an already-merged part contributes the parts it was made of.
fn part_summaries(p: &RunResult) -> Vec<PartSummary> {
    if !p.parts.is_empty() {
        return p.parts.clone();
    }
    let m = &p.measured;
    let offered: f64 = p
        .timeline
        .iter()
        .filter(|i| !i.warmup)
        .filter_map(|i| i.offered_per_s.map(|r| r * i.duration_s))
        .sum();
    vec![PartSummary {
        started_at: p.started_at.clone(),
        hostname: p.environment.hostname.clone(),
        interrupted: p.interrupted,
        duration_s: m.duration_s,
        issued: m.requests.issued,
        completed: m.requests.completed,
        failed: m.requests.failed,
        per_second: m.requests.per_second,
        offered_per_s: (offered > 0.0 && m.duration_s > 0.0).then(|| offered / m.duration_s),
        p50_us: m.latency_us.as_ref().map(|l| l.p50),
        p99_us: m.latency_us.as_ref().map(|l| l.p99),
        thread_busy_max: p.generator.thread_busy.iter().copied().reduce(f64::max),
        scheduler_lag_p99_us: m.scheduler_lag_us.as_ref().map(|l| l.p99),
        verdicts: p.verdicts.clone(),
        shard: p.shard.clone(),
    }]
}

fn union<'a>(lists: impl Iterator<Item = &'a Vec<String>>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in lists.flatten() {
        if !out.contains(line) {
            out.push(line.clone());
        }
    }
    out
}

/// Lines that recur across parts (the same up to their first `:`, where figures follow),
/// said once: the first part's wording, and in how many parts it held.
fn recurring<'a>(lists: impl Iterator<Item = &'a Vec<String>>, parts: usize) -> Vec<String> {
    let mut out: Vec<(String, String, usize)> = Vec::new();
    for line in lists.flatten() {
        let key = line.split(':').next().unwrap_or(line).to_string();
        match out.iter_mut().find(|(k, _, _)| *k == key) {
            Some(entry) => entry.2 += 1,
            None => out.push((key, line.clone(), 1)),
        }
    }
    out.into_iter()
        .map(|(_, line, n)| {
            if parts > 1 {
                format!("{line} (in {n} of {parts} runs; figures of the first)")
            } else {
                line
            }
        })
        .collect()
}

/// Adds an optional encoded histogram into `into`; absent or empty ones add nothing.
fn add_encoded(
    into: &mut Histogram<u64>,
    text: Option<&str>,
    part: usize,
    what: &str,
) -> Result<(), MergeError> {
    let Some(text) = text.filter(|t| !t.is_empty()) else {
        return Ok(());
    };
    let h = decode_histogram(text).map_err(|_| MergeError::Histogram {
        part,
        what: what.to_string(),
    })?;
    into.add(&h).map_err(|_| MergeError::Histogram {
        part,
        what: what.to_string(),
    })
}

/// The phases of the parts that have one, merged; `None` when no part has it.
fn merge_phases(
    phases: Vec<Option<&PhaseSummary>>,
    mode: Mode,
) -> Result<Option<PhaseSummary>, MergeError> {
    let present: Vec<(usize, &PhaseSummary)> = phases
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.map(|p| (i, p)))
        .collect();
    let Some((_, first)) = present.first() else {
        return Ok(None);
    };
    // Parts ran side by side (shards) or one after another (repetitions); either way the
    // merged rate is all completions over the longest part's time only for shards, so the
    // duration kept is the longest, and per-part rates stay in `parts`.
    let duration_s = match mode {
        Mode::Concurrent => present
            .iter()
            .map(|(_, p)| p.duration_s)
            .fold(0.0, f64::max),
        Mode::Sequential => present.iter().map(|(_, p)| p.duration_s).sum(),
    };
    // Rates count an open loop's drain (`drain_s`): shards end with the latest one's,
    // repetitions each after its own; all completions over that span, as in each part.
    let span_s = match mode {
        Mode::Concurrent => present
            .iter()
            .map(|(_, p)| p.rate_span_s())
            .fold(0.0, f64::max),
        Mode::Sequential => present.iter().map(|(_, p)| p.rate_span_s()).sum(),
    };
    let drain_s = present
        .iter()
        .any(|(_, p)| p.drain_s.is_some())
        .then(|| (span_s - duration_s).max(0.0));
    let mut hists: BTreeMap<&str, Histogram<u64>> = BTreeMap::new();
    let names = [
        "latency",
        "connect",
        "service_time",
        "ttfb",
        "send_lag",
        "scheduler_lag",
        "tls_handshake",
        "early_handshake",
    ];
    for name in names {
        hists.insert(name, new_histogram());
    }
    let mut status_codes: BTreeMap<String, u64> = BTreeMap::new();
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let mut error_details: BTreeMap<String, String> = BTreeMap::new();
    let mut requests = Requests {
        issued: 0,
        completed: 0,
        failed: 0,
        not_sent: 0,
        per_second: 0.0,
    };
    let mut bytes = Bytes {
        sent: 0,
        received: 0,
        sent_per_s: 0.0,
        received_per_s: 0.0,
        max_sent_per_s: 0,
        max_received_per_s: 0,
    };
    let (mut tls_resumed, mut tls_full, mut opened, mut failed_connects) = (0, 0, 0, 0);
    let (mut close_wait_s, mut close_wait_timeouts, mut retried) = (0.0, 0, 0);
    let mut early: Option<EarlyData> = None;
    let mut wire: Option<WireBytes> = None;
    for (i, p) in &present {
        let h = &p.histograms;
        let encoded = [
            Some(h.latency.as_str()),
            Some(h.connect.as_str()),
            h.service_time.as_deref(),
            h.ttfb.as_deref(),
            h.send_lag.as_deref(),
            h.scheduler_lag.as_deref(),
            h.tls_handshake.as_deref(),
            h.early_handshake.as_deref(),
        ];
        for (name, text) in names.iter().zip(encoded) {
            add_encoded(hists.get_mut(name).expect("inserted"), text, *i, name)?;
        }
        requests.issued += p.requests.issued;
        requests.completed += p.requests.completed;
        requests.failed += p.requests.failed;
        requests.not_sent += p.requests.not_sent;
        crate::failure::add_counts(&mut status_codes, &p.status_codes);
        crate::failure::add_counts(&mut errors, &p.errors);
        for (k, v) in &p.error_details {
            error_details.entry(k.clone()).or_insert_with(|| v.clone());
        }
        bytes.sent += p.bytes.sent;
        bytes.received += p.bytes.received;
        bytes.max_sent_per_s = bytes.max_sent_per_s.max(p.bytes.max_sent_per_s);
        bytes.max_received_per_s = bytes.max_received_per_s.max(p.bytes.max_received_per_s);
        tls_resumed += p.tls_resumed;
        tls_full += p.tls_full;
        opened += p.connections_opened;
        failed_connects += p.connections_failed;
        close_wait_s += p.close_wait_s;
        close_wait_timeouts += p.close_wait_timeouts;
        retried += p.retried;
        if let Some(e) = &p.early_data {
            early.get_or_insert_with(EarlyData::default).add_counts(e);
        }
        if let Some(w) = &p.wire_bytes {
            wire.get_or_insert_with(WireBytes::default).add(w);
        }
    }
    let rate = |n: u64| if span_s > 0.0 { n as f64 / span_s } else { 0.0 };
    requests.per_second = rate(requests.completed);
    bytes.sent_per_s = rate(bytes.sent);
    bytes.received_per_s = rate(bytes.received);
    let summary = |name: &str| LatencySummary::from_histogram(&hists[name]);
    // Older parts without the extra histograms: keep the first part's summaries rather
    // than claim a merged one.
    let exact_or_first = |name: &str, first: &Option<LatencySummary>| {
        if hists[name].is_empty() {
            first.clone().filter(|_| present.len() == 1)
        } else {
            summary(name)
        }
    };
    let encode_opt = |name: &str| (!hists[name].is_empty()).then(|| encode_histogram(&hists[name]));
    Ok(Some(PhaseSummary {
        duration_s,
        drain_s,
        requests,
        latency_us: summary("latency"),
        service_time_us: exact_or_first("service_time", &first.service_time_us),
        ttfb_us: exact_or_first("ttfb", &first.ttfb_us),
        send_lag_us: exact_or_first("send_lag", &first.send_lag_us),
        scheduler_lag_us: exact_or_first("scheduler_lag", &first.scheduler_lag_us),
        connect_us: summary("connect"),
        tls_handshake_us: exact_or_first("tls_handshake", &first.tls_handshake_us),
        tls_resumed,
        tls_full,
        connections_opened: opened,
        connections_failed: failed_connects,
        status_codes,
        errors,
        error_details,
        bytes,
        histograms: EncodedHistograms {
            latency: encode_histogram(&hists["latency"]),
            connect: encode_histogram(&hists["connect"]),
            service_time: encode_opt("service_time"),
            ttfb: encode_opt("ttfb"),
            send_lag: encode_opt("send_lag"),
            scheduler_lag: encode_opt("scheduler_lag"),
            tls_handshake: encode_opt("tls_handshake"),
            early_handshake: encode_opt("early_handshake"),
        },
        close_wait_s,
        close_wait_timeouts,
        retried,
        cliffs: crate::cliff::cliffs(&hists["latency"]),
        early_data: early.map(|e| EarlyData {
            handshake_us: summary("early_handshake"),
            ..e
        }),
        wire_bytes: wire,
    }))
}
