//! Turns a run's raw outcome into its result document ([`loadlab_result::RunResult`]): phase
//! summaries from the merged histograms, the timeline, the generator's health and the plan in
//! words. The verdicts and warnings are in [`crate::verdicts`]. The document itself is the
//! result crate's; this module only fills it in.

use crate::config::{Model, RunConfig, Stop};
use crate::engine::RunOutcome;
use crate::error::ErrorClass;
use crate::stats::PhaseStats;
use crate::verdicts::{verdicts, warnings};
use hdrhistogram::Histogram;
use loadlab_result::{
    encode_histogram, Bytes, EncodedHistograms, GeneratorHealth, IntervalSummary, LatencySummary,
    PhaseSummary, Requests, RunResult, TargetInfo, TlsInfo, SCHEMA_VERSION,
};
use std::time::{Duration, SystemTime};

mod plan;
use plan::load_model;
pub use plan::plan;

fn encode_nonempty(h: &Histogram<u64>) -> Option<String> {
    (!h.is_empty()).then(|| encode_histogram(h))
}

/// A phase's figures; its rates are per second of `duration` plus an open loop's `drain`.
fn summarize_phase(
    stats: &PhaseStats,
    duration: Duration,
    drain: Option<Duration>,
    max_window: (u64, u64),
) -> PhaseSummary {
    let secs = duration.as_secs_f64();
    let span = (duration + drain.unwrap_or_default()).as_secs_f64();
    let rate = |n: u64| if span > 0.0 { n as f64 / span } else { 0.0 };
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
        drain_s: drain.map(|d| d.as_secs_f64()),
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
            service_time: encode_nonempty(&stats.service),
            ttfb: encode_nonempty(&stats.ttfb),
            send_lag: encode_nonempty(&stats.send_lag),
            scheduler_lag: encode_nonempty(&stats.scheduler_lag),
            tls_handshake: encode_nonempty(&stats.tls_handshake),
            early_handshake: stats.early.handshake.as_ref().and_then(encode_nonempty),
        },
        close_wait_s: stats.close_wait.as_secs_f64(),
        close_wait_timeouts: stats.close_wait_timeouts,
        retried: stats.retried,
        cliffs: loadlab_result::cliff::cliffs(&stats.latency),
        early_data: early_data(&stats.early),
        wire_bytes: stats.wire.clone(),
    }
}

/// `--http3-0rtt`'s figures, when a request went early or a 0-RTT handshake ended.
fn early_data(e: &crate::stats::EarlyStats) -> Option<loadlab_result::EarlyData> {
    (e.counts.requests > 0 || e.counts.connections > 0).then(|| loadlab_result::EarlyData {
        handshake_us: e
            .handshake
            .as_ref()
            .and_then(LatencySummary::from_histogram),
        ..e.counts.clone()
    })
}

/// Sets when the run started in a result built before it did (see `engine::run`): the same
/// fields, made the same way, as [`summarize`] fills from the outcome.
pub(crate) fn stamp_start(result: &mut RunResult, config: &RunConfig, started_at: SystemTime) {
    result.started_at = humantime::format_rfc3339_millis(started_at).to_string();
    result.shard = config
        .shard
        .as_ref()
        .map(|plan| crate::shard::shard_info(plan, load_model(&config.whole()).plan, started_at));
}

/// Turns a run's raw outcome into its result, with warnings a careful reader needs.
pub fn summarize(config: &RunConfig, outcome: &RunOutcome) -> RunResult {
    let warmup_len = outcome.warmup.min(outcome.elapsed);
    // A closed loop's rates are per planned second: its stop abandons the requests in flight
    // (it has no backlog), and its threads' instant to stop does not stretch the time. An
    // open loop's count its drain too (see `drain`).
    let measured_len = match config.stop {
        Stop::Duration(d) if !outcome.interrupted => d,
        _ => outcome.elapsed.saturating_sub(outcome.warmup),
    };
    let drain = drain(config, outcome);
    let [warm, measured] = &outcome.recorder.phases;
    let [warm_busiest, busiest] = outcome.traffic.busiest();
    let measured_summary = summarize_phase(measured, measured_len, drain, busiest);
    let warmup =
        (!outcome.warmup.is_zero()).then(|| summarize_phase(warm, warmup_len, None, warm_busiest));

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
        thread_waited_s: outcome
            .threads
            .iter()
            .filter_map(|t| t.waited)
            .map(|w| w.as_secs_f64())
            .collect(),
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
        link: None,
    };
    let warnings = warnings(config, outcome, &measured_summary, &generator);
    let mut verdicts = verdicts(config, &measured_summary, &generator, outcome);
    let first = crate::cold_start::first_requests(outcome);
    if let Some(verdict) = first
        .as_ref()
        .and_then(|(f, in_warmup)| crate::cold_start::cold_start_verdict(f, *in_warmup))
    {
        verdicts.push(verdict);
    }
    let first_requests = first.map(|(f, _)| f);
    let alt_svc = outcome
        .alt_svc
        .as_deref()
        .and_then(|header| crate::alt_svc::offer(&config.url, header));
    let mut result = RunResult {
        schema_version: SCHEMA_VERSION,
        loadlab_version: env!("CARGO_PKG_VERSION").to_string(),
        // Set by `stamp_start`, as in a result built before the run.
        started_at: String::new(),
        interrupted: outcome.interrupted,
        command: Vec::new(),
        target: TargetInfo {
            url: config.url.original.clone(),
            method: config.method.clone(),
            paths: if config.paths.len() > 1 {
                config.paths.clone()
            } else {
                Vec::new()
            },
            address: outcome.address.to_string(),
            tls: config.tls.as_ref().map(|t| TlsInfo {
                versions: match t.version {
                    // QUIC carries only TLS 1.3.
                    None if config.http3 => "1.3",
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
            alt_svc: alt_svc.as_ref().map(|(offer, _)| offer.clone()),
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
        notes: alt_svc
            .map(|(_, note)| note)
            .into_iter()
            .chain(ws_notes(config, outcome))
            .collect(),
        first_requests,
        server: None,
        parts: Vec::new(),
        kernel: None,
        link: None,
        shard: None,
        shards: None,
        scenario: crate::steps::summarize(
            config,
            outcome.recorder.scenario.as_ref(),
            measured_len + drain.unwrap_or_default(),
        ),
        grpc: crate::grpc::stats::summarize(config, outcome.recorder.grpc.as_ref()),
        websocket: outcome.ws.as_ref().map(|w| {
            let planned = match config.stop {
                Stop::Duration(d) if !outcome.interrupted => {
                    Some(outcome.warmup + d + drain.unwrap_or_default())
                }
                _ => None,
            };
            w.summary(planned, outcome.elapsed)
        }),
        server_metrics: None,
        path: Vec::new(),
        path_check: None,
    };
    stamp_start(&mut result, config, outcome.started_at);
    result
}

/// An open loop's drain: from the planned end of its load to when its last request ended
/// (answered, failed, or given up: `Recorder::last_end`). Its rates count it, as vegeta's
/// throughput does: over the planned seconds alone, a backlog answered after the end made a
/// target that carried 98/s read 194/s of 200/s offered. `None` for a run stopped early and
/// for a closed loop (see `summarize`).
fn drain(config: &RunConfig, outcome: &RunOutcome) -> Option<Duration> {
    match (&config.model, config.stop) {
        (Model::Open { .. }, Stop::Duration(d)) if !outcome.interrupted => {
            Some(outcome.recorder.last_end.saturating_sub(outcome.warmup + d))
        }
        _ => None,
    }
}

/// What is about to run, in words: printed before the run starts.
/// A WebSocket run's notes. A shard's figures (held connections, pushes, memory) are its
/// own, so they say whose: merged with the other shards' notes (a union), two shards that
/// held 50 each would otherwise read as one "50 connections held open".
fn ws_notes(config: &RunConfig, outcome: &RunOutcome) -> Vec<String> {
    let notes = outcome.ws.iter().flat_map(|w| w.notes());
    match &config.shard {
        Some(plan) => notes
            .map(|n| format!("shard {}: {n}", plan.shard))
            .collect(),
        None => notes.collect(),
    }
}

fn timeline_summary(config: &RunConfig, outcome: &RunOutcome) -> Vec<IntervalSummary> {
    let counts = &outcome.traffic.intervals;
    let n = counts
        .len()
        .max(outcome.intervals.last().map_or(0, |(i, _)| i + 1));
    let mut hists = outcome.intervals.iter().peekable();
    (0..n)
        .map(|i| {
            let hist = match hists.peek() {
                Some((index, _)) if *index == i => hists.next().map(|(_, h)| h),
                _ => None,
            };
            let mut iv = crate::timeline::interval_summary(
                config,
                i,
                outcome.elapsed,
                counts.get(i).copied().unwrap_or_default(),
                hist,
                outcome.steal.get(i).copied(),
            );
            if let Some(classes) = outcome.traffic.failures.get(&i) {
                iv.errors = crate::timeline::class_names(classes);
            }
            iv.messages = outcome
                .traffic
                .messages
                .get(&i)
                .copied()
                .map(crate::timeline::step_messages);
            iv
        })
        .collect()
}
