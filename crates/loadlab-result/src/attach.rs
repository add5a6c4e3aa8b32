//! Puts what loadlab saw of the server into a run's result: the report itself, its figures on
//! each timeline interval, and the verdicts and warnings they call for (the server died, was
//! CPU-bound on its quota, came close to its memory limit, limits that did not hold).

use crate::run::RunResult;
use crate::server::ServerReport;

/// Adds what loadlab saw of the server to a result: the report itself, its figures on each
/// timeline interval, and the verdicts they call for.
pub fn attach_server(result: &mut RunResult, report: ServerReport) {
    for interval in &mut result.timeline {
        interval.server =
            crate::server::interval(&report.samples, interval.start_s, interval.duration_s);
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
