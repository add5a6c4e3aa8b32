//! What `loadlab experiment` says before and during its runs, on stderr: the plan (arms,
//! order, expected duration, whether the repetitions can decide anything) and a line per
//! event of the runner. Decides nothing.

use super::comparisons::control_arm;
use loadlab_experiment::file::{Protocol, Source};
use loadlab_experiment::runner::Event;
use loadlab_experiment::{Experiment, Plan};

pub(super) fn print_plan(experiment: &Experiment, plan: &Plan) {
    let launched = experiment
        .variants
        .iter()
        .any(|v| !matches!(v.source, Source::Url(_)));
    let expected = plan.expected_s(experiment, if launched { 1.0 } else { 0.0 });
    eprintln!(
        "{}: {} arms x {} repetitions = {} runs in randomized blocks (seed {}), about {:.0} min{}",
        experiment.name,
        plan.arms.len(),
        experiment.repetitions,
        plan.runs.len(),
        experiment.seed,
        (expected / 60.0).max(1.0),
        if experiment.description.is_empty() {
            String::new()
        } else {
            format!("\n  {}", experiment.description)
        }
    );
    for arm in &plan.arms {
        let s = &arm.settings;
        let mut load = match (s.rate, s.connections) {
            (Some(r), _) => format!("{r} requests/s"),
            (None, c) => format!("{} connections", c.unwrap_or(50)),
        };
        // The protocol, unless plain HTTP/1.1: a launched server is served over TLS for it.
        if s.protocol != Protocol::Http1 {
            load.push_str(&format!(" over {}", s.protocol.name()));
            if let Some(streams) = s.streams.filter(|_| s.protocol.multiplexed()) {
                load.push_str(&format!(" ({streams} streams a connection)"));
            }
        }
        if let Some(depth) = s.pipeline.filter(|&d| d > 1 && !s.protocol.multiplexed()) {
            load.push_str(&format!(", {depth} pipelined a connection"));
        }
        let limits: Vec<String> = [
            s.cpus.map(|c| format!("cpus {c}")),
            s.memory.as_ref().map(|m| format!("memory {m}")),
            s.pin.as_ref().map(|p| format!("pin {p}")),
            s.bandwidth.both.as_ref().map(|b| format!("bandwidth {b}")),
            s.bandwidth.up.as_ref().map(|b| format!("bandwidth up {b}")),
            s.bandwidth
                .down
                .as_ref()
                .map(|b| format!("bandwidth down {b}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        eprintln!(
            "  {:<28} {}, {} for {} s after {} s warm-up{}{}",
            arm.label,
            load,
            s.paths.join(" "),
            s.duration_s,
            s.warmup_s,
            if limits.is_empty() {
                String::new()
            } else {
                format!(", {}", limits.join(", "))
            },
            if s.keepalive {
                ""
            } else {
                ", new connection per request"
            }
        );
    }
    // Whether these repetitions can decide anything: each Holm family holds four metrics
    // for every arm compared with its control.
    let compared = (0..plan.arms.len())
        .filter(|&i| control_arm(experiment, plan, i).is_some())
        .count();
    if compared > 0 {
        let family = 4 * compared;
        let n = experiment.repetitions;
        let min_p = loadlab_compare::min_attainable_p(n, n);
        let floor = family as f64 * min_p;
        if floor >= 0.05 {
            eprintln!(
                "  note: with {n} runs per arm and {compared} comparison{} of 4 metrics each, no \
                 verdict can reach 95% confidence (the smallest p {n} runs allow is {min_p:.2}, \
                 and Holm's correction for {family} tests takes it to {}); run at least {} per \
                 arm (--repetitions)",
                if compared == 1 { "" } else { "s" },
                if floor >= 1.0 {
                    "1".to_string()
                } else {
                    format!("{floor:.2}")
                },
                loadlab_compare::runs_needed(0.05, family).map_or("more".into(), |r| r.to_string())
            );
        }
    }
    let order: Vec<String> = plan
        .runs
        .iter()
        .take(plan.arms.len() * 2)
        .map(|r| plan.arms[r.arm].label.clone())
        .collect();
    eprintln!(
        "  order: {}{}  (plan {})",
        order.join(", "),
        if plan.runs.len() > order.len() {
            ", ..."
        } else {
            ""
        },
        plan.hash
    );
}

pub(super) fn show(e: &Event) {
    match e {
        Event::Building(name) => eprintln!("building {name} (cached when up to date)"),
        Event::Verifying(name) => eprintln!("verifying {name} against the contract"),
        Event::Verified { name, summary } => eprintln!("verified {name}: {summary}"),
        Event::Resumed { done, of } => eprintln!("resuming: {done} of {of} runs already kept"),
        Event::Starting { run, of, label } => eprint!(
            "run {:>2}/{of}  block {}  {label:<28}",
            run.index + 1,
            run.block + 1
        ),
        Event::Note(n) => {
            if n.starts_with("started ") || n.starts_with("busy-polling") {
                return;
            }
            // The machine's checks and the placement come before every run: say each finding
            // once, and each placement once (arms with other quotas may be placed otherwise).
            let placement = n.starts_with("placement: ");
            if placement || n.starts_with("WARN ") || n.starts_with("FAIL ") {
                thread_local! {
                    static SAID: std::cell::RefCell<std::collections::HashSet<String>> =
                        Default::default();
                }
                let key = if placement {
                    n.clone()
                } else {
                    n.split(':').next().unwrap_or(n).to_string()
                };
                if !SAID.with(|s| s.borrow_mut().insert(key)) {
                    return;
                }
            }
            eprintln!("  {n}")
        }
        Event::Finished { result, .. } => {
            let m = &result.measured;
            // One percentile of the run's latency, or "-" when it measured none.
            let percentile = |pick: fn(&loadlab_result::LatencySummary) -> f64| {
                m.latency_us.as_ref().map_or("-".into(), |l| {
                    loadlab_experiment::metrics::duration_us(pick(l))
                })
            };
            let ready = result
                .server
                .as_ref()
                .and_then(|s| s.startup.as_ref())
                .map_or(String::new(), |s| {
                    format!("  ready {:.0} ms", s.ready_s * 1e3)
                });
            eprintln!(
                "  {:>9.0} req/s  p50 {:>9}  p99 {:>9}{}{}{}",
                m.requests.per_second,
                percentile(|l| l.p50),
                percentile(|l| l.p99),
                ready,
                if result.first_requests.as_ref().is_some_and(|f| f.cold_start) {
                    "  cold start"
                } else {
                    ""
                },
                if result.interrupted {
                    "  (interrupted)"
                } else {
                    ""
                }
            );
        }
    }
}
