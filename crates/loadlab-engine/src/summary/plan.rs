//! The plan in words: what a run will do (`GET URL: closed loop: 20 connections for 10s, 1
//! thread`), and the load model the result records. Made before the run (the progress line,
//! a fleet's shards) and kept in the result.

use crate::config::{Model, RunConfig, Stop};
use crate::schedule::Arrival;
use loadlab_result::{LoadModel, StageSpec};

pub fn plan(config: &RunConfig) -> String {
    let target = if config.paths.len() > 1 {
        format!(
            "{} {} in rotation",
            config.url.origin(),
            config.paths.join(", ")
        )
    } else {
        config.url.original.clone()
    };
    // A scenario's steps carry their own methods and paths: its plan names the host only.
    let method_and_target = match (&config.scenario, &config.grpc) {
        (Some(run), _) if !run.implicit => config.url.original.trim_end_matches('/').to_string(),
        // A gRPC call is named by its method, on the server's origin.
        (_, Some(call)) => format!(
            "gRPC {} {} on {}",
            call.kind.describe(),
            call.path.trim_start_matches('/'),
            config.url.origin()
        ),
        _ => format!("{} {target}", config.method),
    };
    format!(
        "{}: {}, {} thread{}{}{}",
        method_and_target,
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

pub(super) fn load_model(config: &RunConfig) -> LoadModel {
    let (model, arrival, seed, profile, plan) = match &config.model {
        Model::Open { profile, arrival } => {
            let (name, seed) = match arrival {
                Arrival::Uniform => ("uniform", None),
                Arrival::Poisson { seed } => ("poisson", Some(*seed)),
            };
            // A scenario's open loop schedules iterations, each a new user.
            let (what, unit, cap) = match &config.scenario {
                Some(run) if !run.implicit => (
                    "open loop of scenario iterations",
                    "iterations/s",
                    "iterations at once",
                ),
                _ => ("open loop", "requests/s", "connections"),
            };
            let cap = match config.pipeline {
                1 => cap.to_string(),
                depth => format!("{cap} x {depth} pipelined"),
            };
            let plan = format!(
                "{what}, {} arrivals{}: {}; up to {} {cap}",
                name,
                if config.tick.is_zero() {
                    String::new()
                } else {
                    format!(
                        " sent on a {} tick",
                        humantime::format_duration(config.tick)
                    )
                },
                profile.describe(unit),
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
            let plan = if config.pipeline > 1 {
                format!(
                    "closed loop over HTTP/1.1 (each connection x {} pipelined): {}",
                    config.pipeline,
                    profile.describe("connections")
                )
            } else {
                format!("closed loop: {}", profile.describe("connections"))
            };
            ("closed_loop", None, None, Some(profile), plan)
        }
        Model::Closed { stages: None } => {
            let length = match config.stop {
                Stop::Duration(d) => humantime::format_duration(d).to_string(),
                Stop::Requests(n) => format!("{n} requests"),
            };
            let plan = if let Some(run) = &config.scenario {
                scenario_plan(config, run, &length)
            } else if config.http2 || config.http3 {
                format!(
                    "closed loop over HTTP/{}: {} connections x {} streams for {length}",
                    if config.http3 { 3 } else { 2 },
                    config.connections,
                    config.streams
                )
            } else if config.pipeline > 1 {
                format!(
                    "closed loop over HTTP/1.1: {} connections x {} pipelined for {length}",
                    config.connections, config.pipeline
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
    let plan = match &config.shard {
        None => plan,
        Some(p) => {
            let share = match &config.model {
                Model::Open { .. } => match p.shard.count {
                    1 => "every arrival".to_string(),
                    n => format!("every {} arrival", ordinal(n)),
                },
                Model::Closed { stages: Some(_) } => "its share of each stage's connections".into(),
                Model::Closed { stages: None } => format!(
                    "{} of the {} connections",
                    config.connections, p.whole_connections
                ),
            };
            format!("{plan}; shard {} ({share})", p.shard)
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
        protocol: if config.http3 {
            "h3"
        } else if config.grpc.is_some() {
            "grpc"
        } else if config.http2 {
            "h2"
        } else {
            "http/1.1"
        }
        .to_string(),
        streams: config.streams,
    }
}

/// A closed loop of a scenario's virtual users (or a paced run) in words.
fn scenario_plan(config: &RunConfig, run: &crate::ScenarioRun, length: &str) -> String {
    let who = if run.implicit {
        format!("{} connections", config.connections)
    } else {
        let s = &run.scenario;
        format!(
            "{} virtual users of scenario `{}` ({} step{}{})",
            config.connections,
            s.name,
            s.steps.len(),
            if s.steps.len() == 1 { "" } else { "s" },
            if s.mode == loadlab_scenario::Mode::Mix {
                ", one per iteration by weight"
            } else {
                ""
            }
        )
    };
    let mut plan = format!("closed loop: {who} for {length}");
    if let Some(pace) = run.pace {
        plan.push_str(&format!(
            ", each sending one request per {} ({:.1} requests/s offered)",
            humantime::format_duration(pace),
            crate::engine::offered_per_s(config.connections, pace)
        ));
    }
    if run.new_connection_share > 0.0 {
        plan.push_str(&format!(
            ", {:.0}% of requests on a new connection",
            run.new_connection_share * 100.0
        ));
    }
    plan
}

/// "2nd", "3rd", "11th", "21st".
fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}
