//! Starting a server for a run: inside its own cgroup (limits applied before its first
//! instruction), in its own process group (a terminal's Ctrl-C goes to loadlab alone, which
//! then saves its results and stops the server), with start-up timed from spawn to the
//! first 2xx health check.
//!
//! This file holds what to start ([`Launch`]) and the start-up itself; the child process's
//! set-up between fork and exec and its output are in `child`, a running server
//! ([`Launched`]: its state, its samples, its stop) in `running`, and readiness (the address
//! line, health checks, a free port) in `ready`. Nothing here measures load.

mod child;
mod ready;
mod running;

use crate::cgroup::{Cgroup, LimitsReport};
use crate::limits::{format_cpu_list, Limits, LimitsMode};
use crate::ProbeError;
use child::{cpu_set, drain_output, prepare_child, spawn_from_spawner};
pub use ready::{free_port, healthz, healthz_tls, parse_address_line};
use ready::{in_netns, parse_bound};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How loadlab learns where the server listens.
#[derive(Debug, Clone)]
pub enum Readiness {
    /// The first stdout line is `listening on ADDR` (the lab's contract).
    AddressLine,
    /// It listens on this address (loadlab chose the port and passed it in `PORT`).
    Address(SocketAddr),
}

/// A server to start.
#[derive(Debug)]
pub struct Launch {
    pub command: Command,
    /// For messages and the result: a target's name or the command line.
    pub description: String,
    pub limits: Limits,
    pub mode: LimitsMode,
    pub readiness: Readiness,
    /// Ready means a 2xx answer to `GET health_path`.
    pub health_path: String,
    /// Ask for `health_path` over TLS with this client configuration (a server started to
    /// serve HTTPS, `TLS_CERT`/`TLS_KEY`); `None`: plain HTTP.
    pub health_tls: Option<Arc<rustls::ClientConfig>>,
    pub timeout: Duration,
    /// Start the server in this network namespace (behind a shaped link) instead of
    /// loadlab's own.
    pub netns: Option<NetnsEntry>,
}

/// A network namespace for the server, and where it is reached from loadlab.
#[derive(Debug, Clone)]
pub struct NetnsEntry {
    /// A file that names the namespace (`/run/netns/NAME`, as `ip netns add` makes it).
    pub path: std::path::PathBuf,
    /// The server's address inside: a server that binds `0.0.0.0` is reached here.
    pub address: std::net::IpAddr,
}

/// How often readiness is polled: start-up time is known to this precision.
const READY_POLL: Duration = Duration::from_millis(5);
const OUTPUT_LINES_KEPT: usize = 20;

/// A running server. Dropping it kills it (by PID) and deletes its cgroup.
#[derive(Debug)]
pub struct Launched {
    child: Arc<Mutex<Child>>,
    pid: u32,
    addr: SocketAddr,
    ready_after: Duration,
    health_path: String,
    /// Health checked over TLS: the server speaks HTTPS.
    https: bool,
    description: String,
    limits: LimitsReport,
    output_tail: Arc<Mutex<VecDeque<String>>>,
    // Declared last: dropped after the child has been killed and reaped.
    group: Option<Arc<Cgroup>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Launch {
    /// Creates the cgroup, spawns the server inside it and waits until it is healthy.
    pub fn start(mut self) -> Result<Launched, ProbeError> {
        let (group, mut limits) = Cgroup::create(&self.limits, self.mode)?;
        let join = group.as_ref().map(Cgroup::join_files).unwrap_or_default();
        // Pinning without a cpuset (best-effort): the affinity mask still pins, though the
        // server could widen it again.
        let mut affinity = None;
        if let (Some(cpus), Some(pin)) = (&self.limits.pin, limits.pin.as_mut()) {
            if !pin.applied {
                affinity = Some(cpu_set(cpus));
                pin.applied = true;
                pin.how = format!(
                    "sched_setaffinity({}) (no cpuset: {})",
                    format_cpu_list(cpus),
                    pin.how
                );
            }
        }
        self.command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Opened before the fork: the child only calls setns(2) on it.
        let netns = match &self.netns {
            Some(entry) => Some(std::fs::File::open(&entry.path).map_err(|e| {
                ProbeError::Invalid(format!(
                    "cannot open the network namespace {}: {e}",
                    entry.path.display()
                ))
            })?),
            None => None,
        };
        prepare_child(
            &mut self.command,
            join,
            affinity,
            netns.as_ref().map(std::os::fd::AsRawFd::as_raw_fd),
        );
        let spawned_at = Instant::now();
        let mut child = spawn_from_spawner(self.command).map_err(|source| ProbeError::Spawn {
            command: self.description.clone(),
            source,
        })?;
        let output_tail = Arc::new(Mutex::new(VecDeque::new()));
        let (first_line, stderr_done) = drain_output(&mut child, &output_tail, &self.readiness);
        let pid = child.id();
        let mut launched = Launched {
            child: Arc::new(Mutex::new(child)),
            pid,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            ready_after: Duration::ZERO,
            health_path: self.health_path.clone(),
            https: self.health_tls.is_some(),
            description: self.description.clone(),
            limits,
            output_tail,
            group: group.map(Arc::new),
        };
        let deadline = spawned_at + self.timeout;
        let fail = |l: &Launched, message: String| {
            // The reason it exited is in its last stderr lines: wait (bounded) until the
            // reader has read them all, which it has when the pipe closes.
            if let Some(done) = &stderr_done {
                let _ = done.recv_timeout(Duration::from_secs(2));
            }
            ProbeError::Startup {
                command: l.description.clone(),
                message,
                stderr_tail: l.output_tail(),
            }
        };
        launched.addr = match &self.readiness {
            Readiness::Address(addr) => *addr,
            Readiness::AddressLine => {
                let rx = first_line.expect("AddressLine readiness reads stdout");
                match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                    Ok(line) => match &self.netns {
                        None => parse_address_line(&line),
                        Some(entry) => parse_bound(&line).and_then(|a| in_netns(a, entry)),
                    }
                    .map_err(|m| fail(&launched, m))?,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        return Err(fail(
                            &launched,
                            format!(
                                "no `listening on ADDR` line on stdout within {:?}",
                                self.timeout
                            ),
                        ))
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        // Stdout closed: the server is exiting; wait (bounded) to say how.
                        let status = launched
                            .wait_exit(Duration::from_secs(2))
                            .unwrap_or_else(|| "closed stdout".into());
                        return Err(fail(
                            &launched,
                            format!("it exited ({status}) before printing `listening on ADDR`"),
                        ));
                    }
                }
            }
        };
        loop {
            let healthy = match &self.health_tls {
                None => healthz(launched.addr, &self.health_path),
                Some(tls) => healthz_tls(launched.addr, &self.health_path, tls.clone()),
            };
            if healthy {
                launched.ready_after = spawned_at.elapsed();
                return Ok(launched);
            }
            if let Some(status) = launched.exit_status() {
                return Err(fail(
                    &launched,
                    format!(
                        "it exited ({status}) before GET {} answered 2xx",
                        self.health_path
                    ),
                ));
            }
            if Instant::now() >= deadline {
                return Err(fail(
                    &launched,
                    format!(
                        "GET {} did not answer 2xx within {:?}; if the server has no \
                         such path, pass --healthz PATH (one it answers 200 on), or allow more \
                         time with --startup-timeout",
                        launched.health_url(),
                        self.timeout
                    ),
                ));
            }
            std::thread::sleep(READY_POLL);
        }
    }
}
