//! Puts what loadlab saw of the server into a run's result: the report itself, its figures on
//! each timeline interval, and the verdicts and warnings they call for (the server died, was
//! CPU-bound on its quota, came close to its memory limit, limits that did not hold).

use crate::run::RunResult;
use crate::server::ServerReport;

/// Adds what loadlab saw of the server to a result: the report itself, its figures on each
/// timeline interval, and the verdicts they call for.
pub fn attach_server(result: &mut RunResult, report: ServerReport) {
    join_server(&mut result.timeline, &report.samples);
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
    if let Some(verdict) = lost_with_its_server(&report) {
        // Requests that failed because the server was gone say nothing of how it kept up.
        result
            .verdicts
            .retain(|v| !v.starts_with("the target could not keep up"));
        result.verdicts.push(verdict);
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

/// Each interval of `timeline` given the server's figures in it from `samples`; also what
/// a timeline merged past an hour's intervals gets its figures from, once read back
/// (`server::fold_by_spans` kept one window per merged interval for it).
pub fn join_server(
    timeline: &mut [crate::IntervalSummary],
    samples: &[crate::server::WindowSample],
) {
    // A sampler's windows come in time order: each interval's are then found by binary search
    // (a day's run has 86,400 intervals and 864,000 windows).
    let in_order = crate::server::in_order(samples);
    for interval in timeline {
        let (start, len) = (interval.start_s, interval.duration_s);
        interval.server = if in_order {
            crate::server::interval_in_order(samples, start, len)
        } else {
            crate::server::interval(samples, start, len)
        };
    }
}

/// The verdict for a run whose agent was lost while it held a server it had launched: that
/// server went with it (a launched server dies with its agent, or its lease stops it), so
/// what the load met after that moment was no server at all, not the server's answer.
fn lost_with_its_server(report: &ServerReport) -> Option<String> {
    let agent = report.agent.as_ref()?;
    let lost = agent.lost.as_ref()?;
    (report.source == "launched").then(|| {
        format!(
            "the agent on {} was lost {:.1} s into the run ({}), and the server it launched \
             ({}) went with it: what the load met after {:.1} s was no server, not the \
             server's answer; only the figures before then describe it (re-run with the agent \
             kept running)",
            agent.hostname, lost.at_s, lost.reason, report.description, lost.at_s
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{AgentLost, AgentReport};

    fn report(source: &str, lost: bool) -> ServerReport {
        ServerReport {
            source: source.into(),
            description: "rust-axum".into(),
            pid: None,
            limits: None,
            startup: None,
            sample_interval_s: 0.1,
            summary: None,
            exit: None,
            samples: Vec::new(),
            agent: Some(AgentReport {
                url: "https://10.0.0.5:7070".into(),
                hostname: "server-host".into(),
                protocol: 1,
                agent_version: "0.1.0".into(),
                clock_offset_s: 0.0,
                clock_uncertainty_s: 0.0,
                clock_estimates: Vec::new(),
                kernel: None,
                lost: lost.then(|| AgentLost {
                    at_s: 1.5,
                    reason: "connection refused".into(),
                }),
            }),
        }
    }

    #[test]
    fn a_lost_agent_takes_the_blame_for_the_server_it_launched() {
        let verdict = lost_with_its_server(&report("launched", true)).unwrap();
        assert!(
            verdict.contains("server-host")
                && verdict.contains("1.5 s")
                && verdict.contains("went with it")
                && verdict.contains("rust-axum"),
            "{verdict}"
        );
        // An attached server may still be running: the warning says the series ends.
        assert!(lost_with_its_server(&report("port", true)).is_none());
        assert!(lost_with_its_server(&report("launched", false)).is_none());
    }
}
