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
//! - [`placement`]: where loadlab runs against the server, and busy-polling.
//! - [`machine`]: the machine checked against the run before it starts (`loadlab doctor`'s
//!   checks), the kernel's TCP counters over the measured time, and the shaped link
//!   (`--bandwidth`) the server may sit behind.
//! - [`metrics`]: the server's own Prometheus metrics scraped around each run, loadlab's
//!   figures sent live, queries asked after it (`--server-metrics`, `--metrics-out`,
//!   `--prometheus --query`), set once with [`Session::set_metrics`].
//! - [`spill`]: a run's timeline written as it goes (a spill file, or the results store) and
//!   a killed run's result rebuilt from it (issue 34).
//!
//! The flow is one way: spec, session, engine, samples, result. This crate must not print,
//! read flags or write files (save the timeline a caller asks [`spill`] to write as the run
//! goes): what a person should know comes back as [`Session::notes`], and the result is
//! returned, not written.

pub mod machine;
pub mod metrics;
pub mod placement;
pub mod remote;
pub mod remote_host;
pub mod server;
pub mod spill;

pub use loadlab_agent::client::AgentEndpoint;
pub use machine::MachineOptions;
pub use placement::BusyPoll;
pub use server::{AgentSpec, Server, ServerKind, ServerSpec};

use loadlab_engine::{RunConfig, RunControl, RunSpec};
use loadlab_machine::Link;
use loadlab_result::{Check, RunResult};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

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

/// With `--busy-poll auto`, polls when placement calls for it, and says why.
fn auto_busy_poll(config: RunConfig, busy_poll: BusyPoll, notes: &mut Vec<String>) -> RunConfig {
    if busy_poll == BusyPoll::Auto {
        if let Some(why) = placement::busy_poll_auto(&config) {
            notes.push(format!(
                "busy-polling: {why} (--no-busy-poll to sleep instead)"
            ));
            return config.with_busy_poll(why);
        }
    }
    config
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
    /// Checks the spec (once), checks the machine against it (warnings; a closed loop it
    /// cannot open is refused), decides placement, and launches or attaches the server.
    pub fn prepare(spec: SessionSpec) -> Result<Session, SessionError> {
        Session::prepare_with(spec, MachineOptions::default())
    }

    /// [`Session::prepare`], with the machine's checks as `options` say (`--strict`: a FAIL
    /// stops the run before anything starts).
    pub fn prepare_with(
        spec: SessionSpec,
        options: MachineOptions,
    ) -> Result<Session, SessionError> {
        let SessionSpec {
            mut run,
            server,
            busy_poll,
        } = spec;
        let mut notes = Vec::new();
        if let Some(server) = &server {
            server.check()?;
        }
        if let Some(spec) = server.as_ref().filter(|s| s.agent.is_some()) {
            return Session::prepare_remote(run, spec, busy_poll, options, notes);
        }
        let launches = server.as_ref().is_some_and(ServerSpec::launches);
        // A launched server gets a port chosen here, so the URL is whole before anything
        // starts and a bad flag fails before a JVM boots.
        let port = if launches {
            loadlab_probe::launch::free_port().map_err(|e| {
                SessionError::Invalid(format!("cannot find a free loopback port: {e}"))
            })?
        } else {
            0
        };
        // What killed runs left goes first, so that nothing below counts or collides with it.
        let swept = loadlab_machine::link::sweep_stale();
        if !swept.is_empty() {
            notes.push(format!(
                "removed what killed loadlab runs left behind: {}",
                swept.join(", ")
            ));
        }
        let mut link = match server.as_ref().and_then(|s| s.link) {
            Some(spec) => Some(Link::create(spec).map_err(|e| SessionError::Invalid(e.0))?),
            None => None,
        };
        let host = link
            .as_ref()
            .map_or("127.0.0.1".to_string(), |l| l.server_address().to_string());
        let tls = server.as_ref().is_some_and(|s| s.tls);
        let certs = if tls {
            if run.tls.ca_pem.is_some() || run.tls.insecure {
                return Err(SessionError::Invalid(
                    "--tls makes a CA for the run and trusts it: drop --cacert and --insecure"
                        .into(),
                ));
            }
            let server_ip: Option<std::net::IpAddr> =
                link.as_ref().map(|l| l.server_address().into());
            let certs = loadlab_certs::CertDir::create(server_ip.as_slice())
                .map_err(|e| SessionError::Invalid(format!("--tls: {e}")))?;
            run.tls.ca_pem = Some(certs.ca_pem().as_bytes().to_vec());
            notes.push(format!(
                "serving HTTPS with a throwaway CA and certificate in {} (removed after the run)",
                certs.path().display()
            ));
            Some(certs)
        } else {
            None
        };
        let scheme = if tls { "https" } else { "http" };
        if run.url.starts_with('/') {
            if !launches {
                return Err(SessionError::Invalid(format!(
                    "{0} is a path: give a full URL such as http://127.0.0.1:8080{0}, or let \
                     loadlab start the server with --target NAME or --exec CMD",
                    run.url
                )));
            }
            run.url = format!("{scheme}://{host}:{port}{}", run.url);
        } else if tls {
            return Err(SessionError::Invalid(format!(
                "{}: with --tls loadlab starts the server on a port it chooses and serves it over \
                 HTTPS; give the URL as a path, such as /plaintext",
                run.url
            )));
        } else if link.is_some() {
            return Err(SessionError::Invalid(format!(
                "{}: behind --bandwidth the server's address is one loadlab chooses inside its \
                 own network namespace; give the URL as a path, such as /plaintext",
                run.url
            )));
        }
        if let Some(free) = server.as_ref().and_then(ServerSpec::generator_cpus) {
            run.threads = run.threads.or(Some(free.len()));
            notes.push(format!(
                "loadlab runs on CPUs {} (the server has the others)",
                server::cpus(&free)
            ));
            run.generator_cpus = Some(free);
        }
        run.busy_poll = busy_poll == BusyPoll::On;
        let config = run.validate()?;
        let (plan, checks) = machine::preflight(
            &config,
            server.as_ref(),
            link.is_some(),
            options,
            &mut notes,
        )?;
        if let Some(link) = link.as_mut() {
            link.calibrate().map_err(|e| SessionError::Invalid(e.0))?;
            notes.push(link.describe());
        }
        let server = match &server {
            Some(spec) => {
                let (started, note) = Server::start(spec, port, link.as_ref(), certs.as_ref())?;
                notes.push(note);
                Some((ServerSide::Local(started), machine::backlog_env(spec)))
            }
            None => None,
        };
        let (server, backlog_env) = match server {
            Some((s, b)) => (Some(s), b),
            None => (None, None),
        };
        let config = auto_busy_poll(config, busy_poll, &mut notes);
        Ok(Session {
            run,
            busy_poll,
            config,
            server,
            notes,
            checks,
            backlog_env,
            target_local: plan.target.as_ref().is_some_and(|t| t.loopback),
            link,
            _certs: certs,
            metrics: None,
        })
    }

    /// Changes the load for the next [`Session::run`] (a probe's rate, a sweep's connection
    /// count), checked as [`Session::prepare`] checks it; the server stays up. On an error
    /// the session keeps its previous load.
    pub fn reconfigure(&mut self, edit: impl FnOnce(&mut RunSpec)) -> Result<(), SessionError> {
        let mut run = self.run.clone();
        edit(&mut run);
        let mut config = run.validate()?;
        // A closed loop beyond the open files or local ports is refused, as at preparation
        // (the rest of the machine was checked then; no sampling per probe).
        if !config.is_open_loop() {
            let quick = machine::MachineOptions {
                strict: false,
                sample: std::time::Duration::ZERO,
            };
            machine::preflight(&config, None, self.link.is_some(), quick, &mut Vec::new())?;
        }
        if self.busy_poll == BusyPoll::Auto {
            if let Some(why) = placement::busy_poll_auto(&config) {
                config = config.with_busy_poll(why);
            }
        }
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

    /// A server on another host, through its agent: asks the agent to launch or attach,
    /// then completes the URL with where the agent's server listens.
    fn prepare_remote(
        mut run: RunSpec,
        spec: &ServerSpec,
        busy_poll: BusyPoll,
        options: MachineOptions,
        mut notes: Vec<String>,
    ) -> Result<Session, SessionError> {
        spec.check()?;
        let agent = spec.agent.as_ref().expect("a remote spec has an agent");
        let request = remote::request(spec)?;
        let mut remote = remote::Remote::open(
            &agent.endpoint,
            request,
            remote::url_port(&run.url),
            spec.sample_every,
            &mut notes,
        )?;
        let opened = remote.opened();
        if run.url.starts_with('/') {
            let (Some(authority), Some(scheme)) = (remote.authority(), opened.scheme.as_deref())
            else {
                return Err(SessionError::Invalid(format!(
                    "{} is a path: give the server's full URL (the agent watches a server it did \
                     not start, and cannot say where it listens)",
                    run.url
                )));
            };
            run.url = format!("{scheme}://{authority}{}", run.url);
        } else if spec.launches() {
            return Err(SessionError::Invalid(format!(
                "{}: the agent starts the server on a port it chooses on its host; give the URL \
                 as a path, such as /plaintext",
                run.url
            )));
        }
        if let Some(ca) = &opened.ca_pem {
            if run.tls.ca_pem.is_some() || run.tls.insecure {
                return Err(SessionError::Invalid(
                    "--tls makes a CA for the run on the agent's host and trusts it: drop \
                     --cacert and --insecure"
                        .into(),
                ));
            }
            run.tls.ca_pem = Some(ca.as_bytes().to_vec());
        }
        run.busy_poll = busy_poll == BusyPoll::On;
        let config = run.validate()?;
        // The machine checked is this one, the generator's; the server's host is the agent's.
        let (_plan, mut checks) = machine::preflight(&config, None, false, options, &mut notes)?;
        let host = remote.host_checks(&config, &mut notes);
        for c in host
            .iter()
            .filter(|c| c.status != loadlab_result::CheckStatus::Pass)
        {
            notes.push(format!(
                "{} {}: {}; needs {}",
                c.status.label(),
                c.name,
                c.found,
                c.needs
            ));
        }
        if options.strict
            && host
                .iter()
                .any(|c| c.status == loadlab_result::CheckStatus::Fail)
        {
            return Err(SessionError::Invalid(
                "the server's host failed a check (see above); --strict stops here".into(),
            ));
        }
        checks.extend(host);
        let config = auto_busy_poll(config, busy_poll, &mut notes);
        Ok(Session {
            run,
            busy_poll,
            config,
            server: Some(ServerSide::Remote(Box::new(remote))),
            notes,
            checks,
            backlog_env: machine::backlog_env(spec),
            target_local: false,
            link: None,
            _certs: None,
            metrics: None,
        })
    }

    /// Scrapes, sends and asks `plan` around every later run (an empty plan: nothing). A
    /// caller running many runs changes the labels between them with
    /// [`Session::metrics_mut`].
    pub fn set_metrics(&mut self, plan: metrics::MetricsPlan) {
        self.metrics = (!plan.is_empty()).then_some(plan);
    }

    /// The metrics plan set, to relabel the next run's series.
    pub fn metrics_mut(&mut self) -> Option<&mut metrics::MetricsPlan> {
        self.metrics.as_mut()
    }

    /// `sink` (where the run's intervals are written as it goes), with the server's samples
    /// within each interval written beside it (CPU, memory, throttling), so that a killed
    /// run's recovered result keeps them. Only a server on this machine is sampled live.
    pub fn with_server_samples(
        &self,
        sink: Box<dyn loadlab_engine::collector::IntervalSink>,
        control: &RunControl,
    ) -> Box<dyn loadlab_engine::collector::IntervalSink> {
        match &self.server {
            Some(ServerSide::Local(s)) => Box::new(spill::server_samples::WithServer::new(
                sink,
                s.live_samples(),
                control.clone(),
            )),
            _ => sink,
        }
    }

    /// Runs the load until it ends, `control` stops it, or the server dies; returns the
    /// result with the server's side attached. The session's server keeps running (until the
    /// session is dropped), so one session can run again.
    pub fn run(&mut self, control: &RunControl) -> Result<SessionOutcome, SessionError> {
        let metrics_run = match self.metrics.as_ref() {
            Some(plan) => Some(
                metrics::MetricsRun::start(plan, control, self.config.interval)
                    .map_err(SessionError::Invalid)?,
            ),
            None => None,
        };
        let died = Arc::new(AtomicBool::new(false));
        if let Some(server) = self.server.as_mut() {
            let (control, died) = (control.clone(), died.clone());
            let on_exit: Box<dyn FnOnce() + Send> = Box::new(move || {
                died.store(true, Ordering::Release);
                control.stop();
            });
            match server {
                ServerSide::Local(s) => s.start_sampling(on_exit),
                ServerSide::Remote(r) => r.start_sampling(Some(self.config.url.port), on_exit),
            }
        }
        let window = machine::Window::open(&self.config, self.link.as_ref(), control);
        let outcome = loadlab_engine::run(&self.config, control);
        let measured = window.close(self.link.as_ref());
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                // Stop sampling before reporting the failure.
                if let (Some(server), Some(origin)) = (self.server.as_mut(), control.started_at()) {
                    match server {
                        ServerSide::Local(s) => {
                            let _ = s.finish(origin, (0.0, 0.0));
                        }
                        ServerSide::Remote(r) => {
                            let _ = r.finish(origin, (0.0, 0.0), 0, None);
                        }
                    }
                }
                return Err(e.into());
            }
        };
        let mut result = loadlab_engine::summarize(&self.config, &outcome);
        result.environment.checks = self.checks.clone();
        if let Some(measured) = measured {
            measured.attach(
                &mut result,
                self.link.as_ref(),
                self.backlog_env.clone(),
                self.target_local,
            );
        }
        let mut server_died = false;
        if let (Some(server), Some(origin)) = (self.server.as_mut(), control.started_at()) {
            let from = outcome.warmup.min(outcome.elapsed).as_secs_f64();
            let span = (from, outcome.elapsed.as_secs_f64());
            let report = match server {
                ServerSide::Local(s) => s.finish(origin, span),
                ServerSide::Remote(r) => {
                    let issued = result.measured.requests.issued;
                    let (report, verdicts, warnings) =
                        r.finish(origin, span, issued, self.backlog_env.clone());
                    result.verdicts.extend(verdicts);
                    result.warnings.extend(warnings);
                    report
                }
            };
            server_died = report.exit.is_some();
            // The run stopped because the server died, not because someone stopped it.
            if server_died && died.load(Ordering::Acquire) {
                result.interrupted = false;
            }
            loadlab_result::attach_server(&mut result, report);
        }
        let metrics_notes = metrics_run
            .map(|m| m.finish(control, &mut result))
            .unwrap_or_default();
        Ok(SessionOutcome {
            result,
            server_died,
            metrics_notes,
        })
    }
}
