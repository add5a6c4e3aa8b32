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
//!   cgroup), its sampling and its report.
//! - [`placement`]: where loadlab runs against the server, and busy-polling.
//!
//! The flow is one way: spec, session, engine, samples, result. This crate must not print,
//! read flags or write files: what a person should know comes back as [`Session::notes`],
//! and the result is returned, not written.

pub mod placement;
pub mod server;

pub use placement::BusyPoll;
pub use server::{Server, ServerKind, ServerSpec};

use loadlab_engine::{RunConfig, RunControl, RunSpec};
use loadlab_result::RunResult;
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

/// Descriptors each connection needs beyond the runtime's own.
const SPARE_DESCRIPTORS: u64 = 64;

/// Refuses a closed loop this machine cannot hold: more connections than open files (even at
/// the hard limit loadlab raises itself to) or than local ports. An open loop's cap is only
/// a cap, so it is left to the warnings.
fn check_machine(config: &RunConfig) -> Result<(), SessionError> {
    if config.is_open_loop() {
        return Ok(());
    }
    let connections = config.connections as u64;
    // Read, not raised: the engine raises the soft limit when the run starts, and reports
    // what it was before.
    if let Some(hard) = loadlab_engine::sys::nofile_hard() {
        if connections + SPARE_DESCRIPTORS > hard {
            return Err(SessionError::Invalid(format!(
                "-c {connections}: {} connections need {} open files, and this process may \
                 open at most {} (the hard limit); raise it (ulimit -Hn, or LimitNOFILE in \
                 systemd) or use fewer connections",
                connections,
                connections + SPARE_DESCRIPTORS,
                hard
            )));
        }
    }
    if let Some(ports) = loadlab_engine::sys::local_ports() {
        if connections > ports {
            return Err(SessionError::Invalid(format!(
                "-c {connections}: more connections than the {ports} local ports \
                 (net.ipv4.ip_local_port_range) allow to one address; widen the range, or \
                 split the load across shards"
            )));
        }
    }
    Ok(())
}

/// Validates a spec into the engine's config and checks the machine can hold it.
fn checked(run: &RunSpec) -> Result<RunConfig, SessionError> {
    let config = run.validate()?;
    check_machine(&config)?;
    Ok(config)
}

/// Applies the busy-poll policy once the server listens (automatic polling looks for its
/// CPUs by its port), with the note saying why when chosen automatically.
fn with_busy_poll(config: RunConfig, busy_poll: BusyPoll) -> (RunConfig, Option<String>) {
    if busy_poll == BusyPoll::Auto {
        if let Some(why) = placement::busy_poll_auto(&config) {
            let note = format!("busy-polling: {why} (--no-busy-poll to sleep instead)");
            return (config.with_busy_poll(why), Some(note));
        }
    }
    (config, None)
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
    server: Option<Server>,
    notes: Vec<String>,
}

/// A finished run.
#[derive(Debug)]
pub struct SessionOutcome {
    pub result: RunResult,
    /// The server died during the run (a crash or an OOM kill): the run stopped there.
    pub server_died: bool,
}

impl Session {
    /// Checks the spec (once), decides placement, and launches or attaches the server.
    pub fn prepare(spec: SessionSpec) -> Result<Session, SessionError> {
        let SessionSpec {
            mut run,
            server,
            busy_poll,
        } = spec;
        let mut notes = Vec::new();
        if let Some(server) = &server {
            server.check()?;
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
        if run.url.starts_with('/') {
            if !launches {
                return Err(SessionError::Invalid(format!(
                    "{0} is a path: give a full URL such as http://127.0.0.1:8080{0}, or let \
                     loadlab start the server with --target NAME or --exec CMD",
                    run.url
                )));
            }
            run.url = format!("http://127.0.0.1:{port}{}", run.url);
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
        let config = checked(&run)?;
        let server = match &server {
            Some(spec) => {
                let (server, note) = Server::start(spec, port)?;
                notes.push(note);
                Some(server)
            }
            None => None,
        };
        let (config, busy_note) = with_busy_poll(config, busy_poll);
        notes.extend(busy_note);
        Ok(Session {
            run,
            busy_poll,
            config,
            server,
            notes,
        })
    }

    /// Changes the load for the next [`Session::run`] (a probe's rate, a sweep's connection
    /// count), checked as [`Session::prepare`] checks it; the server stays up. On an error
    /// the session keeps its previous load.
    pub fn reconfigure(&mut self, edit: impl FnOnce(&mut RunSpec)) -> Result<(), SessionError> {
        let mut run = self.run.clone();
        edit(&mut run);
        let (config, _) = with_busy_poll(checked(&run)?, self.busy_poll);
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

    /// The server, when the session launched or watches one.
    pub fn server(&self) -> Option<&Server> {
        self.server.as_ref()
    }

    /// Runs the load until it ends, `control` stops it, or the server dies; returns the
    /// result with the server's side attached. The session's server keeps running (until the
    /// session is dropped), so one session can run again.
    pub fn run(&mut self, control: &RunControl) -> Result<SessionOutcome, SessionError> {
        let died = Arc::new(AtomicBool::new(false));
        if let Some(server) = self.server.as_mut() {
            let (control, died) = (control.clone(), died.clone());
            server.start_sampling(Box::new(move || {
                died.store(true, Ordering::Release);
                control.stop();
            }));
        }
        let outcome = loadlab_engine::run(&self.config, control);
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                // Stop sampling before reporting the failure.
                if let (Some(server), Some(origin)) = (self.server.as_mut(), control.started_at()) {
                    let _ = server.finish(origin, (0.0, 0.0));
                }
                return Err(e.into());
            }
        };
        let mut result = loadlab_engine::summarize(&self.config, &outcome);
        let mut server_died = false;
        if let (Some(server), Some(origin)) = (self.server.as_mut(), control.started_at()) {
            let from = outcome.warmup.min(outcome.elapsed).as_secs_f64();
            let report = server.finish(origin, (from, outcome.elapsed.as_secs_f64()));
            server_died = report.exit.is_some();
            // The run stopped because the server died, not because someone stopped it.
            if server_died && died.load(Ordering::Acquire) {
                result.interrupted = false;
            }
            loadlab_result::attach_server(&mut result, report);
        }
        Ok(SessionOutcome {
            result,
            server_died,
        })
    }
}
