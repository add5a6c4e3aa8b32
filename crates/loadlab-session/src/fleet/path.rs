//! The fleet's path check (issue 52): before a fleet's load, the path between the server's
//! host and each generator's is measured both ways by the two agents (a bounded bulk
//! transfer, `loadlab_agent::client::measure_path`), and what the load will ask of each path
//! is compared with what it carried. A generator whose path cannot carry its share, or
//! carries far less than the others', is named before any probe runs: otherwise the queue
//! that grows in its path reads as the server's.
//!
//! [`judge`] is the rule, pure and table-tested; [`Fleet::check_paths`] and [`first_answer`]
//! do the I/O, [`check`] all of it. It must not print: findings come back in words and as
//! data (`loadlab_result::path::PathCheck`, which results carry).

use super::Fleet;
use crate::{AgentEndpoint, SessionError};
use loadlab_agent::client::{measure_path, AgentClient};
use loadlab_agent::protocol::path::{PathGoodput, Transfer};
use loadlab_engine::config::{Model, Stop};
use loadlab_engine::RunConfig;
use std::time::Duration;

/// What one direction of a check moves at most, and for how long: 8 MiB in 1.5 s reads a
/// path of up to ~45 Mbit/s to its end and any faster one as faster than that, in at most
/// 3 s per generator.
pub const PATH_BYTES: u64 = 8 * 1024 * 1024;
pub const PATH_MS: u64 = 1_500;
/// A path carrying less than this share of the fastest other generator's, in either
/// direction, is named: equal shares mean the fleet's load is held to its slowest path.
pub const SLOW_SHARE: f64 = 0.25;
/// A share of the load above this fraction of what its path carries is named: the path's
/// queue would grow before the server's does.
pub const SHARE_OF_PATH: f64 = 0.8;

/// One generator's path, as measured (or why not).
#[derive(Debug, Clone, PartialEq)]
pub struct PathReading {
    pub generator: String,
    pub goodput: Result<PathGoodput, String>,
}

/// What the load asks of every path: bytes each way per request (headers included, as a
/// first answer measured them) and the whole fleet's rate when one is planned.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathDemand {
    pub request_bytes: f64,
    pub answer_bytes: f64,
    pub rate_per_s: Option<f64>,
}

pub use loadlab_result::path::check::{describe, mbit, PathCheck, PathFinding};

impl Fleet {
    /// Measures each generator's path to the server's agent at `server`, one at a time (two
    /// checks at once would share the server's link). A generator or agent that cannot
    /// check is a reading with its reason, not an error: the run goes on, the check said
    /// what it could not see.
    pub fn check_paths(&self, server: &AgentEndpoint) -> Result<Vec<PathReading>, SessionError> {
        let agent_error = |e: loadlab_agent::client::ClientError| {
            SessionError::Invalid(format!(
                "the path check cannot reach the server's agent: {e}"
            ))
        };
        let mut listener = AgentClient::new(server).map_err(agent_error)?;
        Ok(self
            .generators
            .iter()
            .map(|g| PathReading {
                generator: g.name.clone(),
                goodput: AgentClient::new(&g.endpoint)
                    .and_then(|mut checker| {
                        measure_path(&mut listener, &mut checker, PATH_BYTES, PATH_MS)
                    })
                    .map_err(|e| e.to_string()),
            })
            .collect())
    }
}

/// The whole check before a load of `config` over `fleet`: each path measured (see
/// [`Fleet::check_paths`]), a first answer's size taken from this machine, the rule applied.
/// A check that could not be made says why in [`PathCheck::error`]; the load goes on.
pub fn check(fleet: &Fleet, server: &AgentEndpoint, config: &RunConfig) -> PathCheck {
    let readings = match fleet.check_paths(server) {
        Ok(r) => r,
        Err(e) => {
            return PathCheck {
                error: Some(e.to_string()),
                ..PathCheck::default()
            }
        }
    };
    let size = first_answer(config);
    let planned_per_s = planned_rate(config);
    let demand = size.map(|(request_bytes, answer_bytes)| PathDemand {
        request_bytes,
        answer_bytes,
        rate_per_s: planned_per_s,
    });
    let generators = judge(&readings, demand);
    PathCheck {
        request_bytes: size.map(|s| s.0),
        answer_bytes: size.map(|s| s.1),
        planned_per_s,
        ceiling_per_s: fleet_ceiling(&generators),
        generators,
        error: None,
    }
}

/// The whole fleet's planned rate: an open loop's mean; none for a closed loop.
fn planned_rate(config: &RunConfig) -> Option<f64> {
    match &config.model {
        Model::Open { profile, .. } => {
            let secs = profile.duration().as_secs_f64();
            (secs > 0.0).then(|| profile.total_arrivals() / secs)
        }
        Model::Closed { .. } => None,
    }
}

/// Bytes each way of one request of `config`, sent from this machine: a first answer's
/// size, for [`PathDemand`]. `None` when this machine cannot reach the target (the
/// generators may; the check then compares the paths with each other only).
pub fn first_answer(config: &RunConfig) -> Option<(f64, f64)> {
    let mut one = config.clone();
    one.model = Model::Closed { stages: None };
    one.stop = Stop::Requests(3);
    one.connections = 1;
    one.threads = 1;
    one.warmup = Duration::ZERO;
    one.shard = None;
    one.generator_cpus = None;
    one.timeout = one.timeout.min(Duration::from_secs(5));
    let outcome = loadlab_engine::run(&one, &loadlab_engine::RunControl::new()).ok()?;
    let (mut done, mut sent, mut received) = (0u64, 0u64, 0u64);
    for phase in &outcome.recorder.phases {
        done += phase.completed;
        sent += phase.bytes_sent;
        received += phase.bytes_received;
    }
    (done > 0).then(|| (sent as f64 / done as f64, received as f64 / done as f64))
}

/// A path's goodput (bits per second) from the server and to it, when measured.
type Ways = (Option<f64>, Option<f64>);

/// A direction's goodput, kept for the comparison with the others only when the time bound
/// cut the transfer short: a path that moved all [`PATH_BYTES`] in time was faster than the
/// check can tell apart (over a veth, its figure is the CPU's, and varies tenfold on a busy
/// machine), so it is never named as the slow one.
fn cut_short(t: &Transfer) -> Option<f64> {
    (!t.complete).then(|| bits(t)).flatten()
}

fn bits(t: &Transfer) -> Option<f64> {
    t.bits_per_s()
}

/// The rule: a path is named when it carries less than [`SLOW_SHARE`] of the fastest other
/// path in either direction (its transfer cut short by the time bound: see [`cut_short`]), or when the planned share of the load needs more than
/// [`SHARE_OF_PATH`] of what it carries. Unmeasured paths are named as such.
pub fn judge(readings: &[PathReading], demand: Option<PathDemand>) -> Vec<PathFinding> {
    let measured: Vec<Ways> = readings
        .iter()
        .map(|r| match &r.goodput {
            Ok(g) => (bits(&g.down), bits(&g.up)),
            Err(_) => (None, None),
        })
        .collect();
    let n = readings.len().max(1) as f64;
    readings
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (down, up) = measured[i];
            let best_other = |pick: fn(&Ways) -> Option<f64>| {
                measured
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .filter_map(|(_, m)| pick(m))
                    .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))))
            };
            let ceiling = demand.and_then(|d| {
                let by_down = down.map(|b| b / 8.0 / d.answer_bytes.max(1.0));
                let by_up = up.map(|b| b / 8.0 / d.request_bytes.max(1.0));
                match (by_down, by_up) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            });
            let share = demand.and_then(|d| d.rate_per_s).map(|r| r / n);
            let mut named = None;
            if let Err(e) = &r.goodput {
                named = Some(format!(
                    "the path to generator {} was not checked: {}",
                    r.generator,
                    // A peer's words: escaped before they reach a terminal.
                    e.escape_debug()
                ));
            }
            let (down_cut, up_cut) = match &r.goodput {
                Ok(g) => (cut_short(&g.down), cut_short(&g.up)),
                Err(_) => (None, None),
            };
            for (way, mine, other) in [
                ("from the server", down_cut, best_other(|m| m.0)),
                ("to the server", up_cut, best_other(|m| m.1)),
            ] {
                if let (Some(mine), Some(other), true) = (mine, other, named.is_none()) {
                    if mine < SLOW_SHARE * other {
                        named = Some(format!(
                            "the path {way} to generator {} carried {}, {:.0}x less than another \
                             generator's {}: at an equal share, its queue grows first, on the \
                             path, not in the server",
                            r.generator,
                            mbit(mine),
                            other / mine,
                            mbit(other)
                        ));
                    }
                }
            }
            if let (Some(c), Some(s), true) = (ceiling, share, named.is_none()) {
                if s > SHARE_OF_PATH * c {
                    named = Some(format!(
                        "the path to generator {} carries at most {c:.0} requests/s of this \
                         load, and its share is {s:.0}/s: the path, not the server, would set \
                         what it measures",
                        r.generator
                    ));
                }
            }
            PathFinding {
                generator: r.generator.clone(),
                down_bits_per_s: down,
                up_bits_per_s: up,
                ceiling_per_s: ceiling,
                share_per_s: share,
                named,
            }
        })
        .collect()
}

/// What the fleet's paths carry together: each generator sends an equal share, so the
/// slowest path, times the generators. None without a known load.
pub fn fleet_ceiling(findings: &[PathFinding]) -> Option<f64> {
    let slowest = findings
        .iter()
        .map(|f| f.ceiling_per_s)
        .collect::<Option<Vec<f64>>>()?
        .into_iter()
        .fold(f64::INFINITY, f64::min);
    slowest
        .is_finite()
        .then_some(slowest * findings.len() as f64)
}

#[cfg(test)]
#[path = "path_tests.rs"]
mod tests;
