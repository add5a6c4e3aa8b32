//! The conclusions a result draws in plain words: verdicts (who was the bottleneck: the
//! generator, the target) and warnings (what a careful reader must know: an interrupted run,
//! steal, failures, too few samples). Pure functions of the config, the outcome and the
//! summaries; each threshold is a named constant.

use crate::config::{Model, RunConfig};
use crate::engine::RunOutcome;
use crate::stats::Phase;
use loadlab_result::{GeneratorHealth, PhaseSummary};
use std::time::Duration;

/// The most scheduler lag at p99 before the generator counts as late (the 1 ms).
pub const LATE_SCHEDULER_P99_US: f64 = 1_000.0;

pub(crate) fn verdicts(
    config: &RunConfig,
    measured: &PhaseSummary,
    generator: &GeneratorHealth,
    outcome: &RunOutcome,
) -> Vec<String> {
    let mut out = Vec::new();
    let busiest = generator.thread_busy.iter().cloned().fold(0.0, f64::max);
    let busy = busiest >= BUSY_THRESHOLD && outcome.elapsed >= Duration::from_secs(1);
    // p99 over a handful of requests is the worst one: a single hiccup (the first request
    // while the threads start) is not a late generator.
    let lag = &outcome.recorder.phases[Phase::Measured as usize].scheduler_lag;
    let late_ns = (LATE_SCHEDULER_P99_US * 1_000.0) as u64;
    let late_requests: u64 = lag
        .iter_recorded()
        .filter(|v| v.value_iterated_to() > late_ns)
        .map(|v| v.count_at_value())
        .sum();
    let late = measured
        .scheduler_lag_us
        .as_ref()
        .filter(|l| l.p99 > LATE_SCHEDULER_P99_US && late_requests >= MIN_LATE_REQUESTS);
    // Time the workers were ready to run and other tasks held their cores.
    let waited: f64 = generator.thread_waited_s.iter().sum();
    let lived: f64 = outcome.threads.iter().map(|t| t.wall.as_secs_f64()).sum();
    let crowded = waited >= CROWDED_WAIT_S.max(lived * CROWDED_WAIT_SHARE);
    let behind = busy || late.is_some();
    // An open loop that fell behind is judged first: whether the generator's lateness
    // explains it decides what the generator's own verdict says.
    let schedule = match &config.model {
        Model::Open { profile, .. } => {
            fell_behind(config, measured, outcome, profile.duration(), busy, behind)
        }
        Model::Closed { .. } => None,
    };
    if behind {
        let mut why = Vec::new();
        if let Some(l) = late {
            why.push(format!(
                "it noticed due requests {:.2} ms late at p99",
                l.p99 / 1_000.0
            ));
        }
        if busy {
            why.push(format!(
                "a worker thread was busy {:.0}% of the time",
                busiest * 100.0
            ));
        }
        if crowded {
            why.push(format!(
                "its worker threads were ready but waited {} in all for a CPU that other tasks \
                 or a CPU quota held",
                seconds_or_ms(waited)
            ));
        }
        let said = if let Some(excused) = schedule.as_ref().and_then(|s| s.excused) {
            // Late, with CPU to spare, into a target that set the pace: the lateness is a
            // fact about the latencies, not the reason for the shortfall.
            format!(
                "the generator noticed some requests late ({}), but that accounts for at most \
                 {:.0} of the {} requests that fell behind the schedule (below): the target \
                 set this pace, not the generator; its response times include the \
                 generator's lateness (cores of its own for loadlab make them cleaner)",
                why.join(", "),
                excused.own,
                excused.shortfall
            )
        } else if busy || !crowded {
            format!(
                "the generator was saturated ({}): the target may be faster than these numbers \
                 say; give loadlab more threads (-t) or cores",
                why.join(", ")
            )
        } else {
            // Not busy, but kept off its cores: more threads would only crowd them more.
            format!(
                "the generator was late ({}): the target may be faster than these numbers say; \
                 run loadlab on cores of its own, without a CPU quota (taskset -c; a server \
                 loadlab launches goes elsewhere with --pin; `perf sched timehist` shows what \
                 else ran there)",
                why.join(", ")
            )
        };
        out.push(said);
    }
    if let Some(g) = &outcome.gave_up {
        out.push(format!(
            "the target went away: nothing was answered after {:.1} s into the run and every \
             connection tried since failed to open; after {:.0} s of that the run gave up the \
             rest of its -n count ({} requests never sent)",
            g.last_seen.as_secs_f64(),
            config.give_up_after.as_secs_f64(),
            g.unsent
        ));
    }
    if measured.requests.nothing_succeeded() && !outcome.interrupted {
        out.push(if measured.requests.issued == 0 {
            "nothing succeeded: no measured request could be sent, every connection was still \
             opening when the run ended; see the warnings (loadlab exits with code 2)"
                .into()
        } else {
            "nothing succeeded: no measured request got a response; see the errors (loadlab \
             exits with code 2)"
                .into()
        });
    }
    let server_errors = server_errors(measured);
    let answered = measured.requests.completed;
    if answered > 0 && server_errors * 2 > answered {
        out.push(format!(
            "most responses were server errors: {:.0}% of {} responses had a 5xx status, so \
             these figures measure the server's failure path, not its work",
            server_errors as f64 * 100.0 / answered as f64,
            answered
        ));
    }
    if let Some(s) = schedule {
        out.push(s.line);
    }
    out
}

/// An open loop that fell behind its schedule: the verdict that says so, and whether the
/// generator's lateness was too little to explain it.
struct FellBehind {
    line: String,
    excused: Option<Excused>,
}

/// A late generator's part in a shortfall it did not cause.
#[derive(Clone, Copy)]
struct Excused {
    /// The most requests its own lateness could have kept from completing in time.
    own: f64,
    /// Requests that fell due in the schedule and did not complete in it.
    shortfall: u64,
}

/// Whether an open loop fell behind its schedule (fewer completed in it than fell due), and
/// whose doing that was. The generator's own lateness (`behind`: late or `busy`) explains
/// a shortfall only as far as it goes: noticed at most the scheduler lag's max late, it kept
/// at most the requests due in that last stretch of the schedule from going out in it, plus
/// those it never sent while connections were to spare. A shortfall beyond that went out on
/// time and was not answered in time, or waited for connections all busy with the target:
/// the target's limit, not the generator's, however late the generator was besides (a
/// 200/s loop into a server of 95/s on a busy machine was blamed on the generator).
fn fell_behind(
    config: &RunConfig,
    measured: &PhaseSummary,
    outcome: &RunOutcome,
    planned: Duration,
    busy: bool,
    behind: bool,
) -> Option<FellBehind> {
    // Compare what completed while the schedule ran with what fell due in that time (not
    // with the nominal rate: Poisson arrivals vary by themselves).
    // A run stopped early is judged on the time that ran; the requests it abandoned in
    // flight were sent on time and are no evidence either way.
    let ran = if outcome.interrupted {
        planned.min(outcome.elapsed.saturating_sub(config.warmup))
    } else {
        planned
    };
    let abandoned = if outcome.interrupted {
        outcome.recorder.in_flight
    } else {
        0
    };
    // Stopped early, a request that fell due but was still waiting to be sent when the stop
    // came is the stop's doing too (on a busy machine the thread notices it late).
    let unsent_due = if outcome.interrupted {
        0
    } else {
        measured.requests.not_sent
    };
    let due = (measured.requests.issued + unsent_due).saturating_sub(abandoned);
    // A run stopped part-way through a bucket keeps that bucket: its completions all came
    // before the stop.
    let in_time = if !outcome.interrupted {
        outcome.traffic.completed_in_schedule(false)
    } else if ran < planned {
        outcome.traffic.completed_since_warmup()
    } else {
        outcome.traffic.completed_in_schedule(true)
    };
    let unsent = measured.requests.not_sent;
    // Stopped early, a request left waiting for its connection is the stop's doing.
    let unsent_blames = unsent > 0 && !outcome.interrupted;
    // Fewer connections ever opened than the cap: a request never sent had one to spare.
    let opened: u64 = outcome
        .recorder
        .phases
        .iter()
        .map(|p| p.connections_opened)
        .sum();
    let spare = config.scenario.is_none() && opened < config.connections as u64;
    let secs = ran.as_secs_f64().max(1e-9);
    let shortfall = due.saturating_sub(in_time);
    let lag_max_s = measured
        .scheduler_lag_us
        .as_ref()
        .map_or(0.0, |l| l.max / 1e6)
        .min(secs);
    // Requests never sent with connections to spare are the generator's when the target
    // answered sooner than the generator was late (a starved thread's unread answers kept
    // its connections busy); when the target held each request longer than that, they
    // waited for connections busy with the target, which the open loop opens only as fast
    // as its answers say it needs (`growth`), not for the generator.
    let target_held = measured
        .service_time_us
        .as_ref()
        .is_some_and(|s| s.p50 / 1e6 > lag_max_s);
    let unsent_own = if spare && unsent_blames && !target_held {
        unsent
    } else {
        0
    };
    let own = due as f64 / secs * lag_max_s + unsent_own as f64;
    // A busy generator could not keep up at all (its lag only shows the requests it got to).
    let generators = behind && (busy || own >= shortfall as f64 * OWN_LATENESS_SHARE);
    let held_back = generators && spare;
    // No connection ever opened (a port nothing answers on, a handshake never finished):
    // every request sent failed to connect, and what fell due waited for connects, not
    // for busy connections.
    let r = &measured.requests;
    let unreachable =
        r.completed == 0 && r.failed == r.issued && r.failed == measured.connections_failed;
    if due > 0 && unreachable {
        let mut line = format!(
            "no connection to the target opened: of {due} requests that fell due none was \
             answered"
        );
        if unsent > 0 && config.scenario.is_some() {
            line.push_str(&format!("; {unsent} iterations were never started"));
        } else if unsent > 0 {
            line.push_str(&format!(
                "; {unsent} were never sent because they waited for a connection that \
                 failed to open or was still opening when the run ended, not for a busy one"
            ));
        }
        line.push_str(" (see the errors and warnings: is the target reachable?)");
        return Some(FellBehind {
            line,
            excused: None,
        });
    }
    if due == 0 || !(unsent_blames || (in_time as f64) < due as f64 * KEEP_UP_SHARE) {
        return None;
    }
    let (completed_per_s, due_per_s) = (in_time as f64 / secs, due as f64 / secs);
    let mut line = if held_back {
        format!(
            "the load fell behind its schedule: {completed_per_s:.1} requests/s completed \
             while {due_per_s:.1}/s fell due, with the generator behind (above) and \
             connections to spare: the generator's doing, not the target's"
        )
    } else {
        format!(
            "{TARGET_BEHIND}: {completed_per_s:.1} requests/s completed while \
             {due_per_s:.1}/s fell due"
        )
    };
    if unsent > 0 && config.scenario.is_some() {
        line.push_str(&format!(
            "; {unsent} iterations were never started because every iteration slot was \
             busy (cap {}: raise --max-connections)",
            config.connections
        ));
    } else if unsent > 0 && held_back {
        line.push_str(&format!("; {unsent} requests were never sent"));
    } else if unsent > 0 && measured.connections_failed > 0 {
        line.push_str(&format!(
            "; {unsent} requests were never sent because every connection was busy (cap \
             {}) or failed to open ({} connects failed: see the errors)",
            config.connections, measured.connections_failed
        ));
    } else if unsent > 0 && spare {
        line.push_str(&format!(
            "; {unsent} requests were never sent because every connection open was busy \
             waiting for the target ({opened} opened, under the cap of {})",
            config.connections
        ));
    } else if unsent > 0 {
        line.push_str(&format!(
            "; {unsent} requests were never sent because every connection was busy (cap {})",
            config.connections
        ));
    } else if behind && !generators {
        line.push_str(
            "; the requests went out, their answers did not come in time: the target's \
             limit, not the generator's (above)",
        );
    }
    Some(FellBehind {
        line,
        excused: (behind && !generators).then_some(Excused { own, shortfall }),
    })
}

/// The share of an open loop's shortfall the generator's own lateness must be able to
/// explain for the shortfall to count as its doing (see [`fell_behind`]).
pub const OWN_LATENESS_SHARE: f64 = 0.5;

/// How the verdict that blames the target for an open loop falling behind begins.
pub const TARGET_BEHIND: &str = "the target could not keep up";

/// Takes the blame off the target when the machine is known to have lost the run's traffic
/// (`cause`, in words: "the kernel dropped 1,234 datagrams for a full receive buffer"),
/// which only the session learns after the run: the verdict that the target could not keep
/// up says instead that the load fell behind, and why that is not evidence against the
/// target. Returns whether there was such a verdict.
pub fn spare_the_target(verdicts: &mut [String], cause: &str) -> bool {
    let Some(v) = verdicts.iter_mut().find(|v| v.starts_with(TARGET_BEHIND)) else {
        return false;
    };
    *v = format!(
        "the load fell behind its schedule{}; meanwhile {cause}, so this is the machine's doing \
         as much as the target's: not evidence against the target (see the warnings)",
        &v[TARGET_BEHIND.len()..]
    );
    true
}

/// Run-queue wait of the workers, in all, from which a late generator is blamed on what kept
/// it off its cores (other tasks, a CPU quota's throttling) rather than on its own load: at
/// least this long, and at least [`CROWDED_WAIT_SHARE`] of the threads' time. A VM's kernel
/// thread taking a core 1.5 ms every 0.5 s (0.3%) is enough to make the send lag's p99 at
/// 40,000/s (docs/open-loop.md); a few milliseconds over an hour are not.
pub const CROWDED_WAIT_S: f64 = 0.005;
/// See [`CROWDED_WAIT_S`].
pub const CROWDED_WAIT_SHARE: f64 = 0.001;

fn seconds_or_ms(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.1} s")
    } else {
        format!("{:.0} ms", s * 1_000.0)
    }
}

/// The fewest requests noticed late before the generator counts as late.
pub const MIN_LATE_REQUESTS: u64 = 3;

/// An open loop "kept up" when at least this share of the requests that fell due during the
/// schedule also completed during it.
pub const KEEP_UP_SHARE: f64 = 0.97;

/// Steal above this share of CPU time in an interval earns a warning.
pub const STEAL_WARNING: f64 = 0.05;

/// Threshold above which a worker thread counts as saturated.
pub const BUSY_THRESHOLD: f64 = 0.9;

pub(crate) fn warnings(
    config: &RunConfig,
    outcome: &RunOutcome,
    measured: &PhaseSummary,
    _generator: &GeneratorHealth,
) -> Vec<String> {
    let mut out = Vec::new();
    if outcome.interrupted {
        out.push("the run was interrupted: these figures cover only the time until then".into());
    }
    if let Some(lim) = outcome.nofile {
        // Each connection needs a descriptor; leave room for the runtime's own.
        let needed = config.connections as u64 + 64;
        if lim.soft < needed {
            out.push(format!(
                "the open-files limit ({}) is below the {needed} descriptors {} connections need: \
                 raise the hard limit (ulimit -Hn, or LimitNOFILE in systemd) or use fewer connections",
                lim.soft, config.connections
            ));
        }
    }
    if let Some(got) = outcome.udp_rcvbuf_bytes {
        let asked = crate::engine::h3::RCVBUF_BYTES;
        if got < asked {
            out.push(format!(
                "the UDP receive buffer of loadlab's QUIC sockets is {}, not the {} \
                 asked: net.core.rmem_max caps it, and responses arriving faster than loadlab \
                 reads them beyond it are dropped by the kernel (QUIC resends them, late); \
                 raise it (sysctl -w net.core.rmem_max={}) or run as root",
                loadlab_result::format::bytes(got as f64),
                loadlab_result::format::bytes(asked as f64),
                asked * 2
            ));
        }
    }
    let allowed = outcome.recorder.streams_allowed;
    if allowed > 0 && allowed < config.streams {
        out.push(format!(
            "--streams asked for {} concurrent streams on each connection; the server allowed \
             at most {allowed} at once (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS, QUIC's stream \
             limit), so no connection carried more: for more concurrency give more connections \
             (-c)",
            config.streams
        ));
    }
    if let Some(steal) = outcome.steal.iter().cloned().reduce(f64::max) {
        if steal >= STEAL_WARNING {
            out.push(format!(
                "the hypervisor stole up to {:.0}% of CPU time in an interval: another tenant or \
                 this VM's host was busy; expect noisy figures and repeat the run",
                steal * 100.0
            ));
        }
    }
    let r = &measured.requests;
    if r.issued == 0 && r.not_sent > 0 {
        out.push(format!(
            "no measured request was sent: {} due waited for a connection still opening when \
             the run ended (a TCP connect never answered: SYNs dropped by a firewall or a full \
             accept queue; over TLS, a handshake the server never answered; over QUIC, no \
             handshake reply on the UDP port: nothing listening there, or a server that ignores \
             it or answers garbage); loadlab waits up to --connect-timeout ({}) for each",
            r.not_sent,
            seconds_or_ms(config.connect_timeout.as_secs_f64())
        ));
    } else if r.issued > 0 && r.completed == 0 && r.failed == 0 {
        out.push(
            "no measured request completed and none failed: every one was still waiting for \
             its response when the run ended (a stalled or very slow server; see --timeout)"
                .into(),
        );
    } else if r.issued > 0 && r.completed == 0 {
        out.push("every measured request failed: see the errors".into());
    } else if r.failed * 100 > r.issued {
        out.push(format!(
            "{:.1}% of measured requests failed: see the errors",
            r.failed as f64 * 100.0 / r.issued as f64
        ));
    }
    let server_errors = server_errors(measured);
    let answered = measured.requests.completed;
    if answered > 0 && server_errors * 100 > answered && server_errors * 2 <= answered {
        out.push(format!(
            "{:.1}% of responses had a 5xx status: the server failed them, though they count \
             as completed",
            server_errors as f64 * 100.0 / answered as f64
        ));
    }
    if measured.close_wait_timeouts > 0 {
        out.push(format!(
            "the server announced Connection: close {} times without closing: loadlab waited \
             {:.2} s in all (at most 250 ms each) before closing those connections itself, \
             time no latency figure shows",
            measured.close_wait_timeouts, measured.close_wait_s
        ));
    }
    if measured.requests.completed > 0 && measured.requests.completed < 1_000 {
        out.push(format!(
            "only {} requests were measured: high percentiles rest on very few samples",
            measured.requests.completed
        ));
    }
    out
}

/// Responses with a 5xx status: the server answered, and failed.
fn server_errors(measured: &PhaseSummary) -> u64 {
    measured
        .status_codes
        .iter()
        .filter(|(code, _)| code.starts_with('5'))
        .map(|(_, n)| n)
        .sum()
}

#[cfg(test)]
#[path = "verdicts_tests.rs"]
mod tests;
