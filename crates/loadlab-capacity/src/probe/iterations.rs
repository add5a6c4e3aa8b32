//! A scenario's probe counted in iterations, the unit its load is in (`--rate R` starts R
//! iterations a second): a search over a journey asks "how many iterations a second before
//! the objectives break", and counting its requests instead (two, five, twenty an
//! iteration) would compare them with iterations offered and never find the service behind.

use loadlab_result::RunResult;

/// What fell due, what was done and what failed, in iterations.
pub(super) struct Counts {
    /// Iterations that ran every step, plus those due but never started (every slot taken).
    pub due: u64,
    /// Iterations that ran every step, passed or not.
    pub completed: u64,
    /// Iterations with a failed step (a transport failure, a status of 400 or above without
    /// a status check, a check or capture that failed), plus those never started.
    pub errors: u64,
    /// The time over which the completed iterations count: the measured time less one
    /// typical iteration (its median), since the iterations that began in the probe's last
    /// moments were still running when it ended and are counted nowhere; a journey with
    /// think times would otherwise look short of its rate however fast the service.
    pub span_s: f64,
}

/// A scenario run's counts (`None` for any other run).
pub(super) fn of(result: &RunResult) -> Option<Counts> {
    let s = result.scenario.as_ref()?;
    let m = &result.measured;
    // An open loop's iterations that never started count as its requests not sent.
    let never = m.requests.not_sent;
    let typical_s = s.iteration_us.as_ref().map_or(0.0, |l| l.p50 / 1e6);
    Some(Counts {
        due: s.iterations + never,
        completed: s.iterations,
        errors: s.iterations_failed + never,
        // At most half the probe is taken off: an iteration as long as the probe is one the
        // probe cannot measure (its docs ask for probes many iterations long).
        span_s: (m.duration_s - typical_s).max(m.duration_s / 2.0),
    })
}
