//! One measured run as a library.
//!
//! A session is what `loadlab run` does, without a terminal: [`Session::prepare`] checks the
//! spec once, decides placement (which CPUs loadlab may use when the server is pinned) and
//! launches or attaches the server; [`Session::run`] samples the server while the engine
//! drives the load, and returns the result with the server's side attached. Experiments,
//! capacity searches and shards run sessions many times in one process: dropping a session
//! stops its server and deletes its cgroup, and nothing else is left behind.
//!
//! # Layout
//!
//! - [`server`]: the server to launch (a lab target, any command) or watch (a PID, a
//!   cgroup, a port), its sampling and its report.
//! - [`remote`]: the same on another host, through `loadlab agent` there (`--agent`).
//! - [`fleet`]: where the load comes from when it is not this machine: generators, each a
//!   `loadlab agent --generator` on a host of its own, sending one load split into shards
//!   from one instant, read live and merged exactly (`--generators FILE`).
//! - [`placement`]: where loadlab runs against the server, and busy-polling.
//! - [`machine`]: the machine checked against the run before it starts (`loadlab doctor`'s
//!   checks), the kernel's TCP counters over the measured time, and the shaped link
//!   (`--bandwidth`) the server may sit behind.
//! - [`metrics`]: the server's own Prometheus metrics scraped around each run, loadlab's
//!   figures sent live, queries asked after it (`--server-metrics`, `--metrics-out`,
//!   `--prometheus --query`), set once with [`Session::set_metrics`].
//! - [`spill`]: a run's timeline written as it goes (a spill file, or the results store) and
//!   a killed run's result rebuilt from it (issue 34).
//! - `prepare` and `run`: a [`Session`]'s two steps, [`Session::prepare`] (checks, placement,
//!   the link, certificates, the server launched or attached, here or through an agent) and
//!   [`Session::run`] (sampling, the engine, the result with the server's side attached).
//!
//! The flow is one way: spec, session, engine, samples, result. This crate must not print,
//! read flags or write files (save the timeline a caller asks [`spill`] to write as the run
//! goes): what a person should know comes back as [`Session::notes`], and the result is
//! returned, not written.

pub mod fleet;
pub mod machine;
pub mod metrics;
pub mod placement;
mod prepare;
pub mod remote;
pub mod remote_host;
mod run;
pub mod server;
pub mod spill;

pub use loadlab_agent::client::AgentEndpoint;
pub use machine::MachineOptions;
pub use placement::BusyPoll;
pub use server::{AgentSpec, Server, ServerKind, ServerSpec};

use loadlab_engine::{RunConfig, RunSpec};
use loadlab_machine::Link;
use loadlab_result::{Check, RunResult};

/// Everything that stops a session from preparing or running. Each message names the fix.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Config(#[from] loadlab_engine::config::ConfigError),
    #[error(transparent)]
    Engine(#[from] loadlab_engine::EngineError),
    #[error(transparent)]
    Probe(#[from] loadlab_probe::ProbeError),
    #[error(transparent)]
    Lab(#[from] loadlab_lab::LabError),
}

/// The server of a session: on this machine, or on another through its agent. One per
/// session: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum ServerSide {
    Local(Server),
    Remote(Box<remote::Remote>),
}

/// What a session measures: the load, the server (if any), and the busy-poll policy.
#[derive(Debug, Clone)]
pub struct SessionSpec {
    /// The load. With a launched server, `url` may be a bare path (`/plaintext`).
    pub run: RunSpec,
    pub server: Option<ServerSpec>,
    pub busy_poll: BusyPoll,
}

/// A prepared run: the checked config and, when asked for, the server, up and ready.
pub struct Session {
    /// The spec as prepared (URL whole, generator CPUs chosen), kept so a capacity search
    /// or a sweep can change the load between runs ([`Session::reconfigure`]).
    run: RunSpec,
    busy_poll: BusyPoll,
    config: RunConfig,
    server: Option<ServerSide>,
    notes: Vec<String>,
    /// The machine checked against this run, kept with the result's environment.
    checks: Vec<Check>,
    /// `BACKLOG` given to a launched server, for the counters' findings.
    backlog_env: Option<String>,
    /// The target is on this machine's loopback.
    target_local: bool,
    // Declared after the server: dropped after it, so the namespace outlives its processes.
    link: Option<Link>,
    /// The throwaway CA and certificate of a server launched with `--tls`: held only to be
    /// dropped, after the server (declared after it), which removes the files.
    _certs: Option<loadlab_certs::CertDir>,
    /// Scraped, sent and asked around every run ([`Session::set_metrics`]).
    metrics: Option<metrics::MetricsPlan>,
    /// Where the load comes from when not from this machine ([`Session::set_fleet`]).
    fleet: Option<fleet::Fleet>,
    /// What the fleet's path check found before the load ([`Session::check_paths`]), put
    /// on every later run's result.
    path_check: Option<loadlab_result::path::PathCheck>,
}

/// A finished run.
#[derive(Debug)]
pub struct SessionOutcome {
    pub result: RunResult,
    /// The server died during the run (a crash or an OOM kill): the run stopped there.
    pub server_died: bool,
    /// What the metrics senders did (one line each), for a person to read.
    pub metrics_notes: Vec<String>,
}

impl Session {
    /// Changes the load for the next [`Session::run`] (a probe's rate, a sweep's connection
    /// count), checked as [`Session::prepare`] checks it; the server stays up. On an error
    /// the session keeps its previous load.
    pub fn reconfigure(&mut self, edit: impl FnOnce(&mut RunSpec)) -> Result<(), SessionError> {
        let mut run = self.run.clone();
        edit(&mut run);
        let config = run.validate()?;
        // A closed loop beyond the open files or local ports is refused, as at preparation
        // (the rest of the machine was checked then; no sampling per probe).
        if !config.is_open_loop() {
            let quick = machine::MachineOptions {
                strict: false,
                sample: std::time::Duration::ZERO,
            };
            machine::preflight(&config, None, self.link.is_some(), quick, &mut Vec::new())?;
        }
        // As at preparation, but the reason is said once, then: no note per probe.
        let config = prepare::auto_busy_poll(config, self.busy_poll, &mut Vec::new());
        self.run = run;
        self.config = config;
        Ok(())
    }

    /// The checked config the engine will run.
    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    /// What a person should know about the preparation, in order.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The server, when the session launched or watches one on this machine.
    pub fn server(&self) -> Option<&Server> {
        match &self.server {
            Some(ServerSide::Local(s)) => Some(s),
            _ => None,
        }
    }

    /// The server's agent, when the server is on another host (`--agent`): the end of
    /// every generator's path that the fleet's path check measures.
    pub fn server_agent(&self) -> Option<&AgentEndpoint> {
        match &self.server {
            Some(ServerSide::Remote(r)) => Some(r.endpoint()),
            _ => None,
        }
    }

    /// Scrapes, sends and asks `plan` around every later run (an empty plan: nothing). A
    /// caller running many runs changes the labels between them with
    /// [`Session::metrics_mut`].
    pub fn set_metrics(&mut self, plan: metrics::MetricsPlan) {
        self.metrics = (!plan.is_empty()).then_some(plan);
    }

    /// Sends every later run's load from `fleet` (each generator its shard, started
    /// together, read live and merged exactly) instead of from this machine.
    pub fn set_fleet(&mut self, fleet: fleet::Fleet) {
        self.fleet = Some(fleet);
    }

    /// Measures each of `fleet`'s generators' paths to the server's agent both ways against
    /// this session's load (`fleet::path::check`), and keeps what it found for every later
    /// run's result (`path_check`, and a verdict per path named). `None` when the server has
    /// no agent: then there is no far end to measure to.
    pub fn check_paths(
        &mut self,
        fleet: &fleet::Fleet,
    ) -> Option<&loadlab_result::path::PathCheck> {
        let server = self.server_agent()?;
        let check = fleet::path::check(fleet, server, &self.config);
        self.path_check = Some(check);
        self.path_check.as_ref()
    }

    /// Puts an earlier check's findings on every later run's result (an experiment checks
    /// once, before its first run, and each run has a session of its own).
    pub fn set_path_check(&mut self, check: loadlab_result::path::PathCheck) {
        self.path_check = Some(check);
    }

    /// The metrics plan set, to relabel the next run's series.
    pub fn metrics_mut(&mut self) -> Option<&mut metrics::MetricsPlan> {
        self.metrics.as_mut()
    }
}
