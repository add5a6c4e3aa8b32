//! `lab serve NAME`: start a built target, read the `listening on ADDR` line it must print
//! first, and wait until `/healthz` answers 200. The [`ServedTarget`] owns the process and
//! kills it (by its PID) when dropped, so a failing test or a Ctrl-C never leaves a server
//! behind. This is synchronous on purpose: it is usable from any caller, with or without a
//! runtime.

use crate::lab::{BuildState, Lab};
use crate::LabError;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How to start a target.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// `PORT`; 0 lets the target pick a free one.
    pub port: u16,
    /// `HOST`; loopback unless a caller deliberately widens it.
    pub host: IpAddr,
    /// `WORKERS`; `None` leaves the target's default (the number of cores).
    pub workers: Option<usize>,
    /// `BACKLOG`; `None` leaves the target's default.
    pub backlog: Option<u32>,
    /// `UPSTREAM_URL`.
    pub upstream_url: Option<String>,
    /// How long to wait for the address line and then for `/healthz` (a JVM needs a while).
    pub ready_timeout: Duration,
    /// CPUs the target may run on (Linux). Set before the program starts, so every thread it
    /// ever creates inherits it; pinning a PID afterwards would miss the worker threads.
    pub cpus: Option<Vec<usize>>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            port: 0,
            host: IpAddr::from([127, 0, 0, 1]),
            workers: None,
            backlog: None,
            upstream_url: None,
            ready_timeout: Duration::from_secs(30),
            cpus: None,
        }
    }
}

/// A running target. Dropping it kills the process.
#[derive(Debug)]
pub struct ServedTarget {
    name: String,
    addr: SocketAddr,
    child: Child,
    /// The last lines the target wrote to stderr, for error messages.
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

const STDERR_LINES_KEPT: usize = 20;
const HEALTH_POLL: Duration = Duration::from_millis(25);

impl ServedTarget {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where to send requests (an unspecified bind address is reached over loopback).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The process id, for resource sampling or pinning.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The last lines of the target's stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        lock(&self.stderr_tail).iter().cloned().collect()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the process and reaps it (what drop does).
    pub fn stop(mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        // Kills this child by its PID only; an already-exited child makes this a no-op.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServedTarget {
    fn drop(&mut self) {
        self.kill();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Lab {
    /// The command that starts the built target `name` with `options` (environment, working
    /// directory), not yet spawned: `serve` runs it; `loadlab run --target` runs it under
    /// limits through the probe.
    pub fn command(&self, name: &str, options: &ServeOptions) -> Result<Command, LabError> {
        let target = self.target(name)?;
        match self.state(target)? {
            BuildState::Built => {}
            BuildState::Stale => return Err(LabError::Stale { name: name.into() }),
            BuildState::NotBuilt | BuildState::ToolchainMissing(_) => {
                return Err(LabError::NotBuilt { name: name.into() })
            }
        }
        let run = &target.manifest.run;
        let mut command = Command::new(target.run_program());
        command
            .args(&run.command[1..])
            .current_dir(&target.dir)
            .env("PORT", options.port.to_string())
            .env("HOST", options.host.to_string())
            .env("CONTENT_DIR", self.content_dir())
            .env_remove("UPSTREAM_URL")
            .env_remove("WORKERS")
            .env_remove("BACKLOG")
            .envs(&run.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(workers) = options.workers {
            command.env("WORKERS", workers.to_string());
        }
        if let Some(backlog) = options.backlog {
            command.env("BACKLOG", backlog.to_string());
        }
        if let Some(url) = &options.upstream_url {
            command.env("UPSTREAM_URL", url);
        }
        Ok(command)
    }

    /// Starts the built target `name` and waits until it is ready.
    pub fn serve(&self, name: &str, options: &ServeOptions) -> Result<ServedTarget, LabError> {
        let mut command = self.command(name, options)?;
        if let Some(cpus) = &options.cpus {
            pin_to(&mut command, cpus).map_err(|message| LabError::Startup {
                name: name.into(),
                message,
                stderr_tail: Vec::new(),
            })?;
        }
        let child = command.spawn().map_err(|source| LabError::Spawn {
            name: name.into(),
            command: self
                .target(name)
                .map(|t| t.manifest.run.command.join(" "))
                .unwrap_or_default(),
            source,
        })?;
        start(name, child, options.ready_timeout)
    }
}

/// Restricts the child to `cpus` between fork and exec.
#[cfg(target_os = "linux")]
fn pin_to(command: &mut Command, cpus: &[usize]) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    if cpus.is_empty() || cpus.iter().any(|&c| c >= max) {
        return Err(format!(
            "--cpus needs CPU numbers from 0 to {}, got {cpus:?}",
            max - 1
        ));
    }
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET only write inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: the closure runs in the forked child before exec and only makes one
    // async-signal-safe system call on a set prepared before the fork.
    unsafe {
        command.pre_exec(move || {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn pin_to(_: &mut Command, _: &[usize]) -> Result<(), String> {
    Err("pinning a target to CPUs (--cpus) needs Linux".into())
}

/// Takes ownership of a just-spawned target: reads its address line, drains its output, and
/// waits for `/healthz`. On any failure the child is killed (the half-built `ServedTarget`
/// is dropped).
fn start(name: &str, mut child: Child, timeout: Duration) -> Result<ServedTarget, LabError> {
    let deadline = Instant::now() + timeout;
    let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
    if let Some(stderr) = child.stderr.take() {
        let tail = stderr_tail.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut tail = lock(&tail);
                if tail.len() == STDERR_LINES_KEPT {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        });
    }
    let (first_line, first_line_rx) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let _ = first_line.send(reader.read_line(&mut line).map(|_| line));
            // Keep draining so the target never blocks on a full pipe.
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
        });
    }
    let mut served = ServedTarget {
        name: name.to_string(),
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        child,
        stderr_tail,
    };
    let fail = |served: &ServedTarget, message: String| LabError::Startup {
        name: served.name.clone(),
        message,
        stderr_tail: served.stderr_tail(),
    };
    let line = match first_line_rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
    {
        Ok(Ok(line)) if !line.is_empty() => line,
        Ok(_) | Err(mpsc::RecvTimeoutError::Disconnected) => {
            // Give the stderr reader a moment to collect the reason it exited.
            let status = served.child.wait().ok();
            std::thread::sleep(Duration::from_millis(50));
            return Err(fail(
                &served,
                format!(
                    "it exited ({}) before printing `listening on ADDR`",
                    status.map_or("unknown status".into(), |s| s.to_string())
                ),
            ));
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            return Err(fail(
                &served,
                format!("no `listening on ADDR` line on stdout within {timeout:?}"),
            ))
        }
    };
    served.addr = parse_address_line(&line).map_err(|m| fail(&served, m))?;
    loop {
        if healthz(served.addr) {
            return Ok(served);
        }
        if !served.is_running() {
            std::thread::sleep(Duration::from_millis(50));
            return Err(fail(&served, "it exited before /healthz answered".into()));
        }
        if Instant::now() >= deadline {
            return Err(fail(
                &served,
                format!("GET /healthz did not answer 200 within {timeout:?}"),
            ));
        }
        std::thread::sleep(HEALTH_POLL);
    }
}

pub use loadlab_probe::launch::parse_address_line;

/// One blocking `GET /healthz`; true on a 2xx.
fn healthz(addr: SocketAddr) -> bool {
    loadlab_probe::launch::healthz(addr, "/healthz")
}
