//! Runs an experiment's plan: first checks every server (builds and verifies lab targets
//! against the contract, health-checks URLs; one failure stops the experiment before its first
//! run), then runs each planned run through a fresh session (a launched server starts anew
//! for every run, so every repetition measures its own start-up and cold start), stores each
//! result as it ends, and cools down between runs. Resumable: runs already stored for the
//! same plan are skipped. Stoppable: [`Control::stop`] ends the current run, which is stored
//! marked interrupted, and the experiment stops there.

use crate::file::{Experiment, Protocol, Source};
use crate::plan::{Arm, Plan, PlannedRun};
use loadlab_engine::collector::IntervalSink;
use loadlab_engine::{RunControl, RunSpec};
use loadlab_lab::verify::{verify_target, VerifyOptions};
use loadlab_lab::{Lab, ServeOptions};
use loadlab_probe::{Limits, LimitsMode};
use loadlab_result::RunResult;
use loadlab_session::metrics::MetricsPlan;
use loadlab_session::{
    AgentEndpoint, AgentSpec, BusyPoll, MachineOptions, ServerKind, ServerSpec, Session,
    SessionSpec,
};
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
}

pub fn run(
    experiment: &Experiment,
    plan: &Plan,
    sink: &mut dyn RunSink,
    options: &Options,
    control: &Control,
    on_event: &mut dyn FnMut(Event),
) -> Result<Ending, RunError> {
    let lab = preflight(experiment, plan, options, on_event)?;
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

/// Builds what is not built, verifies every lab target against the contract and
/// health-checks every URL, before anything is measured.
fn preflight(
    experiment: &Experiment,
    plan: &Plan,
    options: &Options,
    on_event: &mut dyn FnMut(Event),
) -> Result<Option<Lab>, RunError> {
    let err = RunError::Preflight;
    let targets: Vec<&str> = experiment
        .variants
        .iter()
        // A target on an agent's host is built and verified there (`loadlab lab verify` on
        // that host); this machine's lab may not even have it.
        .filter(|v| v.agent.is_none())
        .filter_map(|v| match &v.source {
            Source::Target(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    for arm in &plan.arms {
        let launched = !matches!(experiment.variants[arm.variant].source, Source::Url(_));
        if launched && arm.settings.protocol == Protocol::Https {
            return Err(err(format!(
                "{}: protocol https needs a server that serves TLS; lab targets and exec \
                 commands are loaded over plain HTTP here (use a url = \"https://...\" variant)",
                arm.label
            )));
        }
    }
    let lab = if targets.is_empty() {
        None
    } else {
        let lab = open_lab(options.targets.as_deref()).map_err(|e| err(e.to_string()))?;
        Some(lab)
    };
    if let Some(lab) = &lab {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| err(format!("cannot start the async runtime: {e}")))?;
        for name in &targets {
            on_event(Event::Building(name.to_string()));
            lab.build_named(name, false)
                .map_err(|e| err(format!("{name}: {e}")))?;
            if options.skip_verify {
                continue;
            }
            on_event(Event::Verifying(name.to_string()));
            let verify = VerifyOptions {
                content_dir: Some(lab.content_dir()),
                ..VerifyOptions::default()
            };
            let report = runtime
                .block_on(verify_target(lab, name, &ServeOptions::default(), &verify))
                .map_err(|e| err(format!("{name}: {e}")))?;
            let (pass, fail, skip) = report.counts();
            if !report.passed() {
                return Err(err(format!(
                    "{name} failed verification ({fail} of {} checks: {}); it answers wrongly, \
                     so it is not benchmarked: see `loadlab lab verify {name}`",
                    pass + fail + skip,
                    report.failed_endpoints().join(", ")
                )));
            }
            on_event(Event::Verified {
                name: name.to_string(),
                summary: format!("{pass} checks passed, {skip} skipped"),
            });
        }
    }
    for v in &experiment.variants {
        if let Source::Url(url) = &v.source {
            let path = v
                .healthz
                .clone()
                .unwrap_or_else(|| experiment.base.paths[0].clone());
            on_event(Event::Verifying(url.clone()));
            if !url_answers(url, &path) {
                return Err(err(format!(
                    "{}: GET {url}{path} did not answer 2xx; start the server, or set the \
                     variant's healthz to a path it answers",
                    v.name
                )));
            }
            on_event(Event::Verified {
                name: url.clone(),
                summary: format!("GET {path} answered 2xx"),
            });
        }
    }
    Ok(lab)
}

fn url_answers(url: &str, path: &str) -> bool {
    use std::net::ToSocketAddrs;
    let rest = url.split("://").nth(1).unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or(rest);
    let with_port = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    if url.starts_with("https://") {
        // A TLS health check needs the engine's TLS stack; the first run will tell.
        return with_port.to_socket_addrs().is_ok();
    }
    with_port
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .is_some_and(|addr| loadlab_probe::launch::healthz(addr, path))
}

/// One run's metrics plan: the experiment's (unless given), the arm as the variant, and a
/// run id of its own so each run's counters stay apart.
fn run_metrics(
    plan: &MetricsPlan,
    experiment: &Experiment,
    arm: &str,
    run: &PlannedRun,
) -> MetricsPlan {
    let mut plan = plan.clone();
    if plan.labels.experiment.is_empty() {
        plan.labels.experiment = experiment.name.clone();
    }
    plan.labels.variant = arm.to_string();
    plan.labels.run_id = if plan.labels.run_id.is_empty() {
        format!("{}-run{}", experiment.name, run.index + 1)
    } else {
        format!("{}-run{}", plan.labels.run_id, run.index + 1)
    };
    plan
}

/// The session for one run of an arm.
fn session_spec(
    experiment: &Experiment,
    arm: &Arm,
    lab: Option<&Lab>,
    upstream: Option<&MockUpstream>,
    mode: LimitsMode,
) -> Result<SessionSpec, String> {
    let s = &arm.settings;
    let variant = &experiment.variants[arm.variant];
    // A scenario's requests go to the variant's server: its URL, or the launched one.
    let first_path = if s.scenario.is_some() {
        "/"
    } else {
        s.paths[0].as_str()
    };
    let url = match &variant.source {
        Source::Url(base) => format!("{base}{first_path}"),
        _ => first_path.to_string(),
    };
    let scenario = match &s.scenario {
        Some(path) => Some(std::sync::Arc::new(
            loadlab_engine::scenario::Scenario::load(Path::new(path), &[])
                .map_err(|e| e.to_string())?,
        )),
        None => None,
    };
    let run = RunSpec {
        url,
        scenario,
        paths: if s.paths.len() > 1 {
            s.paths.clone()
        } else {
            Vec::new()
        },
        method: s.method.clone(),
        headers: s.headers.clone(),
        body: s.body.clone().into_bytes(),
        connections: s.connections,
        rate: s.rate,
        stages: s.stages.clone(),
        threads: s.threads,
        duration: Some(Duration::from_secs_f64(s.duration_s)),
        warmup: Duration::from_secs_f64(s.warmup_s),
        timeout: Duration::from_secs_f64(s.timeout_s),
        keepalive: s.keepalive,
        http2: s.protocol == Protocol::Http2,
        ..RunSpec::default()
    };
    let kind = match &variant.source {
        Source::Target(name) => Some(ServerKind::Target {
            name: name.clone(),
            dir: lab.map(|l| l.root().to_path_buf()),
            upstream: upstream.map(|u| u.url.clone()),
        }),
        Source::Exec(cmd) => Some(ServerKind::Exec(cmd.clone())),
        // Through an agent, a running server is watched on its host (the URL's port there).
        Source::Url(_) if variant.agent.is_some() => Some(ServerKind::AgentDefault),
        Source::Url(_) => None,
    };
    let server = kind.map(|kind| {
        let mut spec = ServerSpec::new(kind);
        spec.mode = mode;
        spec.env = s.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        spec.healthz = s.healthz.clone();
        match &variant.agent {
            Some(a) => {
                // Limits are parsed on the agent's host, against its CPUs.
                spec.agent = Some(AgentSpec {
                    endpoint: AgentEndpoint {
                        url: a.url.clone(),
                        token_file: a.token_file.clone().into(),
                        fingerprint: a.fingerprint.clone(),
                        cacert: a.cacert.clone().map(Into::into),
                    },
                    cpus: s.cpus.map(|c| c.to_string()),
                    memory: s.memory.clone(),
                    pin: s.pin.clone(),
                });
                if let ServerKind::Target { dir, .. } = &mut spec.kind {
                    *dir = None;
                }
            }
            None => {
                spec.limits = limits(s);
                spec.link = link(s);
            }
        }
        spec
    });
    Ok(SessionSpec {
        run,
        server,
        busy_poll: BusyPoll::Auto,
    })
}

/// The arm's limits; values were checked when the file was read, except these parses, which
/// the session repeats and reports.
fn limits(s: &crate::file::Settings) -> Limits {
    let online = loadlab_probe::limits::online_cpus();
    Limits {
        cpus: s.cpus,
        memory: s
            .memory
            .as_deref()
            .and_then(|m| loadlab_probe::limits::parse_memory(m).ok()),
        pin: s
            .pin
            .as_deref()
            .and_then(|p| loadlab_probe::limits::parse_cpu_list(p, online).ok()),
    }
}

/// The arm's capped link; rates were checked when the file was read.
fn link(s: &crate::file::Settings) -> Option<loadlab_machine::LinkSpec> {
    let b = &s.bandwidth;
    let rate = |v: &Option<String>| {
        v.as_deref()
            .and_then(|r| loadlab_machine::Rate::parse(r).ok())
    };
    let link = loadlab_machine::LinkSpec {
        up: rate(&b.up).or(rate(&b.both)),
        down: rate(&b.down).or(rate(&b.both)),
        ..loadlab_machine::LinkSpec::default()
    };
    (!link.is_empty()).then_some(link)
}

/// A mock upstream on a thread of its own, for targets' `/upstream` endpoint.
struct MockUpstream {
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MockUpstream {
    fn start() -> Result<MockUpstream, String> {
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                match loadlab_upstream::Upstream::start(Default::default()).await {
                    Ok(up) => {
                        let _ = url_tx.send(Ok(up.url()));
                        let _ = stopped.await;
                        let _ = up.shutdown().await;
                    }
                    Err(e) => {
                        let _ = url_tx.send(Err(e.to_string()));
                    }
                }
            });
        });
        let url = url_rx
            .recv()
            .map_err(|_| "the mock upstream did not start".to_string())??;
        Ok(MockUpstream {
            url,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for MockUpstream {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
