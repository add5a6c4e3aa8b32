//! The fleet's path check before a load (issue 52), in words: each generator's path to the
//! server's agent measured both ways, what the load asks of it, and the generators whose
//! path would set the figure named before any probe runs. The rule is
//! `loadlab_session::fleet::path::judge`; this file asks and prints.

use loadlab_engine::config::Model;
use loadlab_engine::RunConfig;
use loadlab_session::fleet::path::{describe, first_answer, fleet_ceiling, judge, PathDemand};
use loadlab_session::fleet::Fleet;
use loadlab_session::AgentEndpoint;

/// Checks every path and prints what it found: notes unless `quiet`, a warning per path
/// named. Returns how many paths were named.
pub fn check(fleet: &Fleet, server: &AgentEndpoint, config: &RunConfig, quiet: bool) -> usize {
    let readings = match fleet.check_paths(server) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("warning: the paths to the generators were not checked: {e}");
            return 0;
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
                "  together, at equal shares, they carry at most {total:.0} requests/s of this \
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
    named
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
