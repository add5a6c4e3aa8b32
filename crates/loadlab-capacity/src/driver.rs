//! Probes run through one session: the server stays up between them (started once, warmed
//! by each probe's own warm-up), the load changes with [`Session::reconfigure`]. A search
//! asks the policy what to probe until it is done, the budget would be overrun, or it is
//! stopped; a sweep runs its list. Every probe's full result goes to the caller through
//! [`Events`] as it ends, so a stopped search has lost nothing.

use crate::probe::{judge, Criteria, Measure};
use crate::report::{CapacityReport, ProbeRecord, CAPACITY_SCHEMA_VERSION};
use crate::search::{self, Finding, Outcome, Policy, Step};
use crate::sweep::{knee, Knee};
use loadlab_engine::collector::IntervalSink;
use loadlab_engine::{RunControl, RunResult};
use loadlab_session::{Session, SessionError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a caller hears as probes run.
pub trait Events {
    /// A probe is about to run at `load` (requests/s, or connections in a closed sweep).
    fn starting(&mut self, index: usize, load: f64, round: Option<usize>);
    /// A probe ended; `result` is its whole run. Returns the run's id if the caller kept it.
    fn finished(&mut self, record: &ProbeRecord, result: &RunResult) -> Option<i64>;
    /// Where the probe about to run writes each finished interval as it goes (the results
    /// store's row for it), so that a search killed mid-probe keeps them; `None`: nowhere.
    fn stream(&mut self, _index: usize) -> Option<Box<dyn IntervalSink>> {
        None
    }
    /// The probe ended: its timeline read back from where [`Events::stream`] wrote it (the
    /// engine keeps only running totals then), before the probe is judged.
    fn read_back(&mut self, _result: &mut RunResult) {}
}

/// Stops a search or sweep from another thread (Ctrl-C): the probe running ends early (its
/// figures are kept, judged as interrupted) and no further probe starts.
#[derive(Default)]
pub struct Stop {
    stopped: AtomicBool,
    current: Mutex<Option<RunControl>>,
}

impl Stop {
    pub fn new() -> Stop {
        Stop::default()
    }

    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        if let Some(control) = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            control.stop();
        }
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// The probe's run going on (set before [`Events::stream`] is asked): for an observer of
    /// its fleet's generators (the live page).
    pub fn current(&self) -> Option<RunControl> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn begin(&self) -> RunControl {
        let control = RunControl::new();
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(control.clone());
        if self.is_stopped() {
            control.stop();
        }
        control
    }
}

/// How each probe runs.
#[derive(Debug, Clone)]
pub struct ProbeShape {
    /// Load before measuring, reported apart (a JIT compiles, caches fill, a queue left by
    /// the last probe drains).
    pub warmup: Duration,
    /// How long each probe measures.
    pub duration: Duration,
    /// A pause after a probe that failed, so the queue it built drains before the next.
    pub cooldown: Duration,
    /// The first probe's warm-up, when the server needs longer once (a JVM's JIT).
    pub first_warmup: Duration,
}

impl ProbeShape {
    /// The timeline's interval: a tenth of the probe (100 ms at least), so the queue-growth
    /// test has intervals enough to compare its first third with its last.
    fn interval(&self) -> Duration {
        let tenth = self.duration.as_millis() as u64 / 10;
        Duration::from_millis((tenth / 100).max(1) * 100)
    }

    /// Sets a probe's shape on the session's load: measured for `duration` after its
    /// warm-up, no stages or request count, intervals a tenth of the probe.
    fn apply(&self, run: &mut loadlab_engine::RunSpec, index: usize) {
        run.stages = None;
        run.requests = None;
        run.duration = Some(self.duration);
        run.warmup = self.warmup_of(index);
        run.interval = self.interval();
    }

    fn cost(&self, index: usize) -> Duration {
        self.warmup_of(index) + self.duration
    }

    fn warmup_of(&self, index: usize) -> Duration {
        if index == 1 {
            self.first_warmup.max(self.warmup)
        } else {
            self.warmup
        }
    }
}

/// A capacity search.
#[derive(Debug, Clone)]
pub struct SearchSpec {
    pub policy: Policy,
    /// What each probe's load varies (its unit is the policy's).
    pub variable: crate::Variable,
    pub criteria: Criteria,
    pub shape: ProbeShape,
    /// The search does not start a probe that would end after this much time.
    pub budget: Option<Duration>,
}

/// Whether a probe costing `cost` still fits in the budget after `elapsed`.
pub fn fits(elapsed: Duration, cost: Duration, budget: Option<Duration>) -> bool {
    budget.is_none_or(|b| elapsed + cost <= b)
}

/// The loads of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub enum Loads {
    /// Open loop: requests/s.
    Rates(Vec<f64>),
    /// Closed loop: connections.
    Connections(Vec<usize>),
}

/// A sweep: every load in order, the knee marked.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    pub loads: Loads,
    pub criteria: Criteria,
    pub shape: ProbeShape,
    /// The knee is where p99 first reaches this many times its value at the lowest load.
    pub knee_factor: f64,
}

/// Runs a capacity search on a prepared session (its load is the template: URL, paths,
/// headers, protocol; the rate, duration and warm-up are the search's).
pub fn run_search(
    session: &mut Session,
    spec: &SearchSpec,
    stop: &Stop,
    events: &mut dyn Events,
) -> Result<CapacityReport, SessionError> {
    let began = Instant::now();
    let mut records = Vec::new();
    let mut outcomes: Vec<Outcome> = Vec::new();
    let mut about: Option<About> = None;
    let mut stopped_by = None;
    let finding = loop {
        let (rate, round) = match search::next(&spec.policy, &outcomes) {
            Step::Done(finding) => break finding,
            Step::Probe { rate, round } => (rate, round),
        };
        if stop.is_stopped() {
            stopped_by = Some("interrupted".to_string());
            break search::stopped(&spec.policy, &outcomes);
        }
        let index = records.len() + 1;
        if !fits(began.elapsed(), spec.shape.cost(index), spec.budget) {
            stopped_by = Some("budget".to_string());
            break search::stopped(&spec.policy, &outcomes);
        }
        events.starting(index, rate, Some(round));
        let shape = &spec.shape;
        session.reconfigure(|run| {
            spec.variable.apply(run, rate);
            shape.apply(run, index);
        })?;
        let (mut record, result, died) =
            probe(session, index, Some(round), &spec.criteria, stop, events)?;
        record.ws_held = spec.variable.held(rate);
        about.get_or_insert_with(|| About::of(&result));
        // A partial probe (a generator of the fleet lost) is no answer: the search stops
        // and says why, rather than take a smaller load for the server's.
        if let Some(lost) = &record.measure.lost_generator {
            stopped_by = Some(format!("a generator was lost ({lost})"));
            records.push(keep(events, record, &result));
            break search::stopped(&spec.policy, &outcomes);
        }
        outcomes.push(Outcome {
            rate,
            round,
            verdict: record.search_verdict(),
        });
        let record = keep(events, record, &result);
        let failed = !record.judgment.pass;
        records.push(record);
        if died {
            stopped_by = Some("server died".to_string());
            break search::stopped(&spec.policy, &outcomes);
        }
        if failed && !stop.is_stopped() {
            std::thread::sleep(spec.shape.cooldown);
        }
    };
    // A rate at which a queue on a generator's path held the load back says the path's
    // figure: what the search found below it is no capacity of the server's.
    let finding = crate::path::overrule(finding, &records);
    let about = about.unwrap_or_default();
    let said = about.said(finding.text(spec.policy.unit));
    let mut verdict = match &stopped_by {
        Some(why) => format!("{said} (stopped: {why})"),
        None => said,
    };
    if matches!(finding, Finding::Capacity { .. }) {
        if let Some(why) = crate::report::limit_elsewhere(&records, &spec.criteria) {
            verdict = format!("{verdict}; {why}");
        }
        if let Some(why) = crate::path::doubt(&records) {
            verdict = format!("{verdict}; {why}");
        }
    }
    // What held the load back, in the last probe it did: a thread, lateness, or a
    // generator's link ("eth0 of generator gen2 ... saturated").
    // A queue on a generator's path is named for what it is: no capacity for the server.
    let on_path = matches!(finding, Finding::GeneratorLimit { .. })
        .then(|| crate::path::no_capacity(&records))
        .flatten();
    if let Some(said) = on_path {
        verdict = match &stopped_by {
            Some(why) => format!("{said} (stopped: {why})"),
            None => said,
        };
    } else if matches!(finding, Finding::GeneratorLimit { .. }) {
        if let Some(why) = records
            .iter()
            .rev()
            .find_map(|r| r.judgment.generator_limited.as_ref())
        {
            verdict = format!("{verdict}; what held the load back: {why}");
        }
    }
    Ok(CapacityReport {
        schema_version: CAPACITY_SCHEMA_VERSION,
        kind: "capacity".into(),
        loadlab_version: env!("CARGO_PKG_VERSION").into(),
        started_at: about.started_at,
        url: about.url,
        server: about.server,
        scenario: about.scenario,
        objectives: spec
            .criteria
            .objectives
            .iter()
            .map(|o| o.to_string())
            .collect(),
        criteria: spec.criteria.clone(),
        policy: Some(spec.policy.clone()),
        warmup_s: spec.shape.warmup.as_secs_f64(),
        probe_s: spec.shape.duration.as_secs_f64(),
        probes: records,
        finding: Some(finding),
        knee: None,
        verdict,
        stopped_by,
        path_check: None,
        elapsed_s: began.elapsed().as_secs_f64(),
    })
}

/// Runs a sweep on a prepared session.
pub fn run_sweep(
    session: &mut Session,
    spec: &SweepSpec,
    stop: &Stop,
    events: &mut dyn Events,
) -> Result<CapacityReport, SessionError> {
    let began = Instant::now();
    let loads: Vec<f64> = match &spec.loads {
        Loads::Rates(r) => r.clone(),
        Loads::Connections(c) => c.iter().map(|&c| c as f64).collect(),
    };
    let mut records: Vec<ProbeRecord> = Vec::new();
    let mut about: Option<About> = None;
    let mut stopped_by = None;
    for (i, &load) in loads.iter().enumerate() {
        if stop.is_stopped() {
            stopped_by = Some("interrupted".to_string());
            break;
        }
        events.starting(i + 1, load, None);
        let shape = &spec.shape;
        session.reconfigure(|run| {
            match &spec.loads {
                Loads::Rates(_) => {
                    run.rate = Some(load);
                    run.connections = None;
                }
                Loads::Connections(_) => {
                    run.rate = None;
                    run.connections = Some(load as usize);
                }
            }
            shape.apply(run, i + 1);
        })?;
        let (record, result, died) = probe(session, i + 1, None, &spec.criteria, stop, events)?;
        about.get_or_insert_with(|| About::of(&result));
        let record = keep(events, record, &result);
        let failed = !record.judgment.pass;
        records.push(record);
        if died {
            stopped_by = Some("server died".to_string());
            break;
        }
        if failed && !stop.is_stopped() && i + 1 < loads.len() {
            std::thread::sleep(spec.shape.cooldown);
        }
    }
    let about = about.unwrap_or_default();
    let mut report = sweep_report(records, &spec.criteria, spec.knee_factor, stopped_by);
    report.verdict = about.said(report.verdict);
    report.started_at = about.started_at;
    report.url = about.url;
    report.server = about.server;
    report.scenario = about.scenario;
    report.warmup_s = spec.shape.warmup.as_secs_f64();
    report.probe_s = spec.shape.duration.as_secs_f64();
    report.elapsed_s = began.elapsed().as_secs_f64();
    Ok(report)
}

/// A sweep's document from its probes (in the order run): the knee found and the verdict.
/// Experiments with a `rate` or `connections` axis build theirs with it too.
pub fn sweep_report(
    records: Vec<ProbeRecord>,
    criteria: &Criteria,
    knee_factor: f64,
    stopped_by: Option<String>,
) -> CapacityReport {
    let points: Vec<(f64, Option<f64>)> = records
        .iter()
        .map(|r| (r.load(), r.measure.p99_us))
        .collect();
    let knee = knee(&points, knee_factor);
    let verdict = sweep_verdict(&records, knee.as_ref(), knee_factor, stopped_by.as_deref());
    CapacityReport {
        schema_version: CAPACITY_SCHEMA_VERSION,
        kind: "sweep".into(),
        loadlab_version: env!("CARGO_PKG_VERSION").into(),
        started_at: String::new(),
        url: String::new(),
        server: None,
        scenario: None,
        objectives: criteria.objectives.iter().map(|o| o.to_string()).collect(),
        criteria: criteria.clone(),
        policy: None,
        warmup_s: 0.0,
        probe_s: 0.0,
        probes: records,
        finding: None,
        knee,
        verdict,
        stopped_by,
        path_check: None,
        elapsed_s: 0.0,
    }
}

/// A probe's record from a finished run (an experiment's arm, its repetitions merged).
pub fn record_of(index: usize, result: &RunResult, criteria: &Criteria) -> ProbeRecord {
    let measure = Measure::of(result, &criteria.percentiles(), false);
    let judgment = judge(&measure, criteria);
    ProbeRecord {
        index,
        round: None,
        measure,
        judgment,
        run_id: None,
        ws_held: None,
    }
}

/// The sweep's conclusion: the highest load that held its objectives, and the knee.
fn sweep_verdict(
    records: &[ProbeRecord],
    knee: Option<&Knee>,
    factor: f64,
    stopped: Option<&str>,
) -> String {
    let closed = records
        .first()
        .is_some_and(|r| r.measure.connections.is_some());
    let show = |load: f64| {
        if closed {
            format!("{load} connections")
        } else {
            format!("{}/s", search::rate(load))
        }
    };
    let held = records
        .iter()
        .filter(|r| r.judgment.pass)
        .map(|r| r.load())
        .fold(None, |a: Option<f64>, l| Some(a.map_or(l, |a| a.max(l))));
    let mut parts = vec![match held {
        Some(l) => format!("held its objectives up to {}", show(l)),
        None => "held its objectives at no load measured".to_string(),
    }];
    parts.push(match knee {
        Some(k) => format!("knee at {}", show(k.load)),
        None => format!("no knee (p99 stayed under {factor}x its value at the lowest load)"),
    });
    if let Some(limited) = records
        .iter()
        .find(|r| r.judgment.generator_limited.is_some())
    {
        parts.push(format!(
            "loadlab itself was the limit at {}: the loads above say nothing about the service",
            show(limited.load())
        ));
    }
    let mut out = format!("sweep: {}", parts.join("; "));
    if let Some(why) = stopped {
        out.push_str(&format!(" (stopped: {why})"));
    }
    out
}

/// What the report says about the runs, from the first one.
#[derive(Debug, Clone, Default)]
struct About {
    started_at: String,
    url: String,
    server: Option<String>,
    /// The scenario's name, when the probes ran one.
    scenario: Option<String>,
}

impl About {
    fn of(result: &RunResult) -> About {
        About {
            started_at: result.started_at.clone(),
            url: result.target.url.clone(),
            server: result.server.as_ref().map(|s| s.description.clone()),
            scenario: result.scenario.as_ref().map(|s| s.name.clone()),
        }
    }

    /// The verdict, naming the scenario whose iterations the loads are.
    fn said(&self, verdict: String) -> String {
        match &self.scenario {
            Some(name) => format!(
                "scenario {}, in iterations/s: {verdict}",
                loadlab_result::format::shown(name)
            ),
            None => verdict,
        }
    }
}

/// Runs the session once and judges it.
fn probe(
    session: &mut Session,
    index: usize,
    round: Option<usize>,
    criteria: &Criteria,
    stop: &Stop,
    events: &mut dyn Events,
) -> Result<(ProbeRecord, RunResult, bool), SessionError> {
    let control = stop.begin();
    if let Some(stream) = events.stream(index) {
        control.stream_intervals_to(session.with_server_samples(stream, &control));
    }
    // Each probe's series sent under a run id of its own (the plan's, with the probe's number).
    let base_run_id = session.metrics_mut().map(|m| {
        let base = m.labels.run_id.clone();
        m.labels.run_id = format!("{base}-probe{index}");
        base
    });
    let outcome = session.run(&control);
    if let (Some(m), Some(base)) = (session.metrics_mut(), base_run_id) {
        m.labels.run_id = base;
    }
    let mut outcome = outcome?;
    events.read_back(&mut outcome.result);
    let measure = Measure::of(
        &outcome.result,
        &criteria.percentiles(),
        outcome.server_died,
    );
    let judgment = judge(&measure, criteria);
    Ok((
        ProbeRecord {
            index,
            round,
            measure,
            judgment,
            run_id: None,
            ws_held: None,
        },
        outcome.result,
        outcome.server_died,
    ))
}

fn keep(events: &mut dyn Events, mut record: ProbeRecord, result: &RunResult) -> ProbeRecord {
    record.run_id = events.finished(&record, result);
    record
}

/// The finding, for callers that only need the capacity (tests, gates).
pub fn estimate(report: &CapacityReport) -> Option<f64> {
    match report.finding.as_ref()? {
        Finding::Capacity { estimate, .. } => Some(*estimate),
        _ => None,
    }
}

#[cfg(test)]
mod grpc_tests;
#[cfg(test)]
mod tests;
