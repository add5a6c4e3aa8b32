//! The fleet's path check before a load (issue 52), in words: each generator's path to the
//! server's agent measured both ways, what the load asks of it, and the generators whose
//! path would set the figure named before any probe runs. The rule is
//! `loadlab_session::fleet::path::judge`; this file asks and prints.

use loadlab_engine::config::Model;
use loadlab_engine::RunConfig;
use loadlab_session::fleet::path::{describe, first_answer, fleet_ceiling, judge, PathDemand};
use loadlab_session::fleet::Fleet;
use loadlab_session::AgentEndpoint;

/// A figure at or above this share of what the paths carry is not claimed for the server.
pub const NEAR_CEILING: f64 = 0.85;

/// What the check found, for the verdicts after the load.
#[derive(Debug, Clone, Default)]
pub struct PathCheck {
    /// How many paths were named.
    pub named: usize,
    /// What the fleet's paths carry together of this load, requests/s (equal shares: the
    /// slowest path times the generators), when the load's size is known.
    pub ceiling_per_s: Option<f64>,
    /// The slowest path, in words.
    pub slowest: Option<String>,
}

/// Checks every path and prints what it found: notes unless `quiet`, a warning per path
/// named.
pub fn check(fleet: &Fleet, server: &AgentEndpoint, config: &RunConfig, quiet: bool) -> PathCheck {
    let readings = match fleet.check_paths(server) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("warning: the paths to the generators were not checked: {e}");
            return PathCheck::default();
        }
    };
    let demand = first_answer(config).map(|(request_bytes, answer_bytes)| PathDemand {
        request_bytes,
        answer_bytes,
        rate_per_s: planned_rate(config),
    });
    let findings = judge(&readings, demand);
    if !quiet {
        eprintln!("the paths from the server's host to the generators, measured both ways:");
        for f in &findings {
            eprintln!("  {}", describe(f));
        }
        if let (Some(total), Some(d)) = (fleet_ceiling(&findings), demand) {
            eprintln!(
                "  at equal shares, the fleet's paths carry at most {total:.0} requests/s of this \
                 load ({:.0} B answers): a figure near it would be the paths', not the server's",
                d.answer_bytes
            );
        }
    }
    let mut named = 0;
    for f in &findings {
        if let Some(why) = &f.named {
            eprintln!("warning: {why}");
            named += 1;
        }
    }
    let slowest = findings
        .iter()
        .filter(|f| f.ceiling_per_s.is_some())
        .min_by(|a, b| {
            a.ceiling_per_s
                .partial_cmp(&b.ceiling_per_s)
                .expect("finite")
        })
        .map(describe);
    PathCheck {
        named,
        ceiling_per_s: fleet_ceiling(&findings),
        slowest,
    }
}

/// A capacity found at or near what the paths carry is not claimed for the server: the
/// queue that failed the probes above it may have been on a path (the search cannot tell a
/// path's queue from the server's by response times alone). The finding becomes a limit of
/// the load's side and the verdict says whose.
pub fn claim(report: &mut loadlab_capacity::CapacityReport, check: &PathCheck) {
    let (Some(ceiling), Some(loadlab_capacity::Finding::Capacity { estimate, .. })) =
        (check.ceiling_per_s, &report.finding)
    else {
        return;
    };
    let estimate = *estimate;
    if estimate < NEAR_CEILING * ceiling {
        return;
    }
    report.verdict = format!(
        "no capacity found for the server: the search's answer, {estimate:.1}/s, is {:.0}% of \
         what the paths to the generators carry of this load ({ceiling:.0}/s, measured before \
         the search; the slowest: {}): the path's limit, or too near it to tell",
        100.0 * estimate / ceiling,
        check.slowest.as_deref().unwrap_or("unknown")
    );
    report.finding = Some(loadlab_capacity::Finding::GeneratorLimit {
        rate: estimate,
        passed: Some(estimate),
    });
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
