//! The fleet's path check before a load (issue 52), in words: each generator's path to the
//! server's agent measured both ways, what the load asks of it, and the generators whose
//! path would set the figure named before any probe runs. The check and its rule are
//! `loadlab_session::fleet::path` (the session keeps what it found for every run's result);
//! this file prints it, and keeps a capacity search from claiming a figure near it.

use loadlab_result::path::check::describe;
use loadlab_result::path::PathCheck;

/// A figure at or above this share of what the paths carry is not claimed for the server.
pub const NEAR_CEILING: f64 = 0.85;

/// Prints what the check found: notes unless `quiet`, a warning per path named.
pub fn print(check: &PathCheck, quiet: bool) {
    if let Some(e) = &check.error {
        eprintln!("warning: the paths to the generators were not checked: {e}");
        return;
    }
    if !quiet {
        eprintln!("the paths from the server's host to the generators, measured both ways:");
        for f in &check.generators {
            eprintln!("  {}", describe(f));
        }
        if let (Some(total), Some(answer)) = (check.ceiling_per_s, check.answer_bytes) {
            eprintln!(
                "  at equal shares, the fleet's paths carry at most {total:.0} requests/s of this \
                 load ({answer:.0} B answers): a figure near it would be the paths', not the \
                 server's"
            );
        }
    }
    for why in check.named() {
        eprintln!("warning: {why}");
    }
}

/// A capacity found at or near what the paths carry is not claimed for the server: the
/// queue that failed the probes above it may have been on a path (the search cannot tell a
/// path's queue from the server's by response times alone). The finding becomes a limit of
/// the load's side and the verdict says whose. The check goes into the document either way.
pub fn claim(report: &mut loadlab_capacity::CapacityReport, check: Option<&PathCheck>) {
    let Some(check) = check else {
        return;
    };
    report.path_check = Some(check.clone());
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
        check.slowest().as_deref().unwrap_or("unknown")
    );
    report.finding = Some(loadlab_capacity::Finding::GeneratorLimit {
        rate: estimate,
        passed: Some(estimate),
    });
}
