//! Runs an experiment's plan: first checks every server (builds and verifies lab targets
//! against the contract, health-checks URLs; one failure stops the experiment before its first
//! run), then runs each planned run through a fresh session (a launched server starts anew
//! for every run, so every repetition measures its own start-up and cold start), stores each
//! result as it ends, and cools down between runs. Resumable: runs already stored for the
//! same plan are skipped. Stoppable: [`Control::stop`] ends the current run, which is stored
//! marked interrupted, and the experiment stops there. Over a fleet with the server's agent,
//! the paths to the generators are checked once, before the first run (`paths`).

mod paths;
mod preflight;
mod spec;

use preflight::{preflight, MockUpstream};
use spec::{run_metrics, session_spec};

use crate::file::Experiment;
use crate::plan::{Arm, Plan, PlannedRun};
use loadlab_engine::collector::IntervalSink;
use loadlab_engine::RunControl;
use loadlab_lab::Lab;
use loadlab_probe::LimitsMode;
use loadlab_result::RunResult;
use loadlab_session::metrics::MetricsPlan;
use loadlab_session::{MachineOptions, Session};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where runs go. The store implements it; tests may keep runs in memory.
pub trait RunSink {
    /// Starts (or, with `resume`, continues) the experiment; returns the `(arm label,
    /// block)` pairs already done for this plan.
    fn begin(
        &mut self,
        experiment: &Experiment,
        plan: &Plan,
        resume: bool,
    ) -> Result<Vec<(String, usize)>, String>;
    /// Where the run about to start writes each finished interval as it goes, so that a
    /// run killed mid-way keeps them (the store's row for it); `None`: the timeline stays in
    /// the result alone. [`RunSink::save`] then gets that run's result.
    fn stream(&mut self, _arm: &Arm, _run: &PlannedRun) -> Option<Box<dyn IntervalSink>> {
        None
    }
    fn save(&mut self, arm: &Arm, run: &PlannedRun, result: &RunResult) -> Result<(), String>;
    /// `complete` or `interrupted`.
    fn finish(&mut self, status: &str) -> Result<(), String>;
}

/// What a person watching the experiment should see, as it happens.
#[derive(Debug, Clone)]
pub enum Event {
    Building(String),
    Verifying(String),
    Verified {
        name: String,
        summary: String,
    },
    Resumed {
        done: usize,
        of: usize,
    },
    Starting {
        run: PlannedRun,
        of: usize,
        label: String,
    },
    Note(String),
    Finished {
        run: PlannedRun,
        label: String,
        result: Box<RunResult>,
    },
}

/// Stops an experiment from another thread (Ctrl-C): the current run ends and is kept.
#[derive(Clone, Default)]
pub struct Control {
    stopped: Arc<AtomicBool>,
    current: Arc<Mutex<Option<RunControl>>>,
}

impl Control {
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        if let Some(c) = self
            .current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            c.stop();
        }
    }

    /// The run going on (set before [`RunSink::stream`] is asked): for an observer of its
    /// fleet's generators (the live page).
    pub fn current(&self) -> Option<RunControl> {
        self.current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    fn begin_run(&self) -> RunControl {
        let control = RunControl::new();
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Some(control.clone());
        if self.is_stopped() {
            control.stop();
        }
        control
    }

    /// Sleeps up to `d`, waking early when stopped.
    fn pause(&self, d: Duration) {
        let end = std::time::Instant::now() + d;
        while !self.is_stopped() && std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20).min(end - std::time::Instant::now()));
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Preflight(String),
    #[error("run {index} ({label}): {message}")]
    Run {
        index: usize,
        label: String,
        message: String,
    },
    #[error("the results store: {0}")]
    Store(String),
}

/// How an experiment ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Complete,
    Interrupted,
}

/// Options that are not part of the plan (they do not change what is measured).
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub resume: bool,
    /// The targets directory; `None`: the nearest `targets/` above the working directory.
    pub targets: Option<std::path::PathBuf>,
    /// Skip `lab verify` (for tests of the runner with servers that are not lab targets).
    pub skip_verify: bool,
    /// Limits that cannot be applied (not root) stop the run, unless best-effort.
    pub limits: LimitsMode,
    /// A machine check that FAILs stops the run (`--strict`); otherwise checks only warn.
    pub strict: bool,
    /// The server's metrics scraped and loadlab's sent around every run (`--server-metrics`,
    /// `--metrics-out`): each run's series labelled with the experiment, its arm (`variant`)
    /// and its own `run_id` (the plan's, with the run's number).
    pub metrics: MetricsPlan,
    /// Where every run's load comes from when not this machine (`--generators`): each run
    /// split across the fleet, a lost generator's run partial.
    pub fleet: Option<loadlab_session::fleet::Fleet>,
}

pub fn run(
    experiment: &Experiment,
    plan: &Plan,
    sink: &mut dyn RunSink,
    options: &Options,
    control: &Control,
    on_event: &mut dyn FnMut(Event),
) -> Result<Ending, RunError> {
    let lab = preflight(experiment, options, on_event)?;
    let upstream = if experiment.upstream {
        Some(MockUpstream::start().map_err(RunError::Preflight)?)
    } else {
        None
    };
    let done = sink
        .begin(experiment, plan, options.resume)
        .map_err(RunError::Store)?;
    if !done.is_empty() {
        on_event(Event::Resumed {
            done: done.len(),
            of: plan.runs.len(),
        });
    }
    let mut paths = paths::Once::default();
    for run in &plan.runs {
        let arm = &plan.arms[run.arm];
        if done.iter().any(|(l, b)| *l == arm.label && *b == run.block) {
            continue;
        }
        if control.is_stopped() {
            break;
        }
        on_event(Event::Starting {
            run: *run,
            of: plan.runs.len(),
            label: arm.label.clone(),
        });
        let fail = |message: String| RunError::Run {
            index: run.index + 1,
            label: arm.label.clone(),
            message,
        };
        let spec = session_spec(
            experiment,
            arm,
            lab.as_ref(),
            upstream.as_ref(),
            options.limits,
        )
        .map_err(fail)?;
        let machine = MachineOptions {
            strict: options.strict,
            ..MachineOptions::default()
        };
        let mut session = Session::prepare_with(spec, machine).map_err(|e| fail(e.to_string()))?;
        for note in session.notes() {
            on_event(Event::Note(note.clone()));
        }
        session.set_metrics(run_metrics(&options.metrics, experiment, &arm.label, run));
        if let Some(fleet) = &options.fleet {
            paths.apply(&mut session, fleet, on_event);
            session.set_fleet(fleet.clone());
        }
        let rc = control.begin_run();
        if let Some(stream) = sink.stream(arm, run) {
            rc.stream_intervals_to(session.with_server_samples(stream, &rc));
        }
        let outcome = session.run(&rc).map_err(|e| fail(e.to_string()))?;
        drop(session);
        for note in &outcome.metrics_notes {
            on_event(Event::Note(format!("{}: {note}", arm.label)));
        }
        let mut result = outcome.result;
        // The stated rule for a run a generator of the fleet was lost from: it is not kept
        // (a smaller load is not the server's answer) and the experiment stops; `--resume`
        // runs it again once the fleet is whole.
        if let Some(lost) = result.partial() {
            return Err(fail(format!(
                "{lost}; the run is not kept and the experiment stops: restore the generator, \
                 then run again with --resume"
            )));
        }
        result.command = vec![
            "loadlab".into(),
            "experiment".into(),
            format!("{}:{}", experiment.name, arm.label),
            format!("block {}", run.block + 1),
        ];
        sink.save(arm, run, &result).map_err(RunError::Store)?;
        let interrupted = result.interrupted;
        on_event(Event::Finished {
            run: *run,
            label: arm.label.clone(),
            result: Box::new(result),
        });
        if outcome.server_died {
            on_event(Event::Note(format!(
                "{}: the server died during run {}; the run is kept and the experiment goes on",
                arm.label,
                run.index + 1
            )));
        }
        if interrupted || control.is_stopped() {
            break;
        }
        control.pause(Duration::from_secs_f64(experiment.cooldown_s));
    }
    let ending = if control.is_stopped() {
        Ending::Interrupted
    } else {
        Ending::Complete
    };
    sink.finish(match ending {
        Ending::Complete => "complete",
        Ending::Interrupted => "interrupted",
    })
    .map_err(RunError::Store)?;
    Ok(ending)
}

/// The lab at `targets`, or the nearest `targets/` above the working directory.
pub fn open_lab(targets: Option<&Path>) -> Result<Lab, loadlab_lab::LabError> {
    match targets {
        Some(dir) => Lab::open(dir),
        None => std::env::current_dir()
            .map_err(|e| loadlab_lab::LabError::Startup {
                name: "lab".into(),
                message: e.to_string(),
                stderr_tail: Vec::new(),
            })
            .and_then(|d| Lab::discover(&d)),
    }
}
