//! Starting a server for a run: inside its own cgroup (limits applied before its first
//! instruction), in its own process group (a terminal's Ctrl-C goes to loadlab alone, which
//! then saves its results and stops the server), with start-up timed from spawn to the
//! first 2xx health check.

use crate::cgroup::{Cgroup, LimitsReport};
use crate::limits::{format_cpu_list, Limits, LimitsMode};
use crate::sampler::{ExitProbe, Source};
use crate::{procfs, ProbeError};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
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

impl Launched {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// From spawn to the first 2xx health check.
    pub fn ready_after(&self) -> Duration {
        self.ready_after
    }

    pub fn health_url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}{}", self.addr, self.health_path)
    }

    pub fn description(&self) -> &str {
        &self.description
    }

    pub fn limits(&self) -> &LimitsReport {
        &self.limits
    }

    pub fn cgroup(&self) -> Option<&Arc<Cgroup>> {
        self.group.as_ref()
    }

    /// The last lines the server wrote (stderr, and stdout after the address line).
    pub fn output_tail(&self) -> Vec<String> {
        lock(&self.output_tail).iter().cloned().collect()
    }

    /// How to sample it.
    pub fn source(&self) -> Source {
        match &self.group {
            Some(group) => Source::Cgroup {
                group: group.clone(),
                pid: self.pid,
            },
            None => Source::Tree { pid: self.pid },
        }
    }

    /// `Some(status)` once the server has exited.
    /// Waits up to `limit` for the server to exit; how it did, or `None` if it still runs.
    pub fn wait_exit(&self, limit: Duration) -> Option<String> {
        let end = Instant::now() + limit;
        loop {
            if let Some(status) = self.exit_status() {
                return Some(status);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn exit_status(&self) -> Option<String> {
        let mut child = lock(&self.child);
        match child.try_wait() {
            Ok(Some(status)) => Some(describe(status)),
            Ok(None) => None,
            Err(e) => Some(format!("unknown ({e})")),
        }
    }

    /// An [`ExitProbe`] for the sampler.
    pub fn exit_probe(&self) -> ExitProbe {
        let child = self.child.clone();
        Box::new(move || match lock(&child).try_wait() {
            Ok(Some(status)) => Some(describe(status)),
            _ => None,
        })
    }

    /// Resident and cgroup memory now (idle, right after start-up).
    pub fn memory_now(&self) -> (u64, Option<u64>) {
        let pids = match &self.group {
            Some(g) => g.pids(),
            None => procfs::tree(self.pid),
        };
        (
            procfs::sum(&pids).rss_bytes,
            self.group.as_ref().and_then(|g| g.memory_bytes()),
        )
    }

    /// Stops the server now (what dropping does).
    pub fn stop(self) {}
}

impl Drop for Launched {
    fn drop(&mut self) {
        let mut child = lock(&self.child);
        // The server's own process group (it made one between fork and exec, with its PID
        // as the group's id): `sh -c CMD` and whatever it started, not only the shell. Then
        // the child itself, reaped; the cgroup's drop kills anything that left the group.
        if child.try_wait().ok().flatten().is_none() {
            // SAFETY: kill(2) with a negative PID signals that process group only.
            unsafe { libc::kill(-(self.pid as i32), libc::SIGKILL) };
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Spawns `command` from one long-lived thread. A launched server gets `PR_SET_PDEATHSIG`,
/// which fires when the *thread* that forked it ends, not the process: spawned from a
/// short-lived thread (a runtime's blocking pool, a test's helper), the server would be
/// killed when that thread exits. This thread lives as long as loadlab does.
fn spawn_from_spawner(command: Command) -> std::io::Result<Child> {
    type Job = (Command, mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: std::sync::OnceLock<Mutex<mpsc::Sender<Job>>> = std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("loadlab-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("a thread can be started at launch time");
        Mutex::new(tx)
    });
    let (reply, answer) = mpsc::channel();
    lock(spawner)
        .send((command, reply))
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?
}

fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        // A shell (`--exec`) reports its child's death by signal N as 128+N.
        (Some(code), _) if (129..160).contains(&code) => format!(
            "exit status {code} (a shell's report of signal {}{})",
            code - 128,
            if code == 137 { ", SIGKILL" } else { "" }
        ),
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(9)) => "killed by signal 9 (SIGKILL)".into(),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => status.to_string(),
    }
}

fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it for CPUs parse_cpu_list
    // bounded by the machine's count.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    set
}

/// Between fork and exec: join the cgroup (so every thread the server ever starts is inside),
/// leave loadlab's process group (a terminal's Ctrl-C must reach loadlab only), die with
/// loadlab (a `kill -9` of loadlab must not leave a server behind), and pin if asked.
fn prepare_child(
    command: &mut Command,
    join: Vec<std::ffi::CString>,
    affinity: Option<libc::cpu_set_t>,
    netns: Option<std::os::fd::RawFd>,
) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child and makes only async-signal-safe system
    // calls (open, write, close, setpgid, prctl, sched_setaffinity, setns) on data prepared
    // before the fork; it allocates nothing. The namespace's descriptor stays open in the
    // parent until the spawn returns.
    unsafe {
        command.pre_exec(move || {
            for file in &join {
                let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let wrote = libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
                if wrote != 1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            libc::setpgid(0, 0);
            // The signal follows the death of the thread that forked: loadlab launches from
            // its main thread.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if let Some(set) = &affinity {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // After the cgroup is joined (its files are named in loadlab's mounts, which a
            // network namespace does not change).
            if let Some(fd) = netns {
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// Keeps the last lines of the server's stdout and stderr (for error messages) and never
/// lets a full pipe block it. With [`Readiness::AddressLine`], the first stdout line is
/// handed over on the returned channel.
/// Returns the first stdout line's channel (with [`Readiness::AddressLine`]) and a channel
/// that closes when stderr has been read to its end.
#[allow(clippy::type_complexity)]
fn drain_output(
    child: &mut Child,
    tail: &Arc<Mutex<VecDeque<String>>>,
    readiness: &Readiness,
) -> (Option<mpsc::Receiver<String>>, Option<mpsc::Receiver<()>>) {
    let keep = |tail: &Arc<Mutex<VecDeque<String>>>, line: String| {
        let mut tail = lock(tail);
        if tail.len() == OUTPUT_LINES_KEPT {
            tail.pop_front();
        }
        tail.push_back(line);
    };
    let mut stderr_done = None;
    if let Some(stderr) = child.stderr.take() {
        let tail = tail.clone();
        let (done, done_rx) = mpsc::channel::<()>();
        stderr_done = Some(done_rx);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                keep(&tail, line);
            }
            // Dropping `done` tells a waiter the tail is complete.
            drop(done);
        });
    }
    let Some(stdout) = child.stdout.take() else {
        return (None, stderr_done);
    };
    let (tx, rx) = mpsc::channel();
    let wants_line = matches!(readiness, Readiness::AddressLine);
    let tail = tail.clone();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut first = true;
        let mut line = String::new();
        while matches!(reader.read_line(&mut line), Ok(n) if n > 0) {
            if first && wants_line {
                let _ = tx.send(line.clone());
            } else {
                keep(&tail, line.trim_end().to_string());
            }
            first = false;
            line.clear();
        }
        // Anything unreadable as text: drain it anyway.
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    (wants_line.then_some(rx), stderr_done)
}

/// Parses `listening on 127.0.0.1:43121`; an unspecified IP becomes loopback.
pub fn parse_address_line(line: &str) -> Result<SocketAddr, String> {
    let addr = parse_bound(line)?;
    Ok(match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => {
            SocketAddr::from(([127, 0, 0, 1], addr.port()))
        }
        ip if ip.is_unspecified() => SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, addr.port())),
        _ => addr,
    })
}

/// Where loadlab reaches a server that announced `addr` inside `netns`: its loopback is the
/// namespace's own, out of loadlab's reach.
fn in_netns(addr: SocketAddr, netns: &NetnsEntry) -> Result<SocketAddr, String> {
    if addr.ip().is_unspecified() {
        Ok(SocketAddr::new(netns.address, addr.port()))
    } else if addr.ip().is_loopback() {
        Err(format!(
            "it listens on {addr}, the loopback of its own network namespace, which loadlab \
             cannot reach; behind a shaped link the server must bind $HOST ({}) or 0.0.0.0",
            netns.address
        ))
    } else {
        Ok(addr)
    }
}

/// The address in `listening on ADDR`, as the server bound it.
fn parse_bound(line: &str) -> Result<SocketAddr, String> {
    let line = line.trim();
    let addr = line
        .strip_prefix("listening on ")
        .and_then(|rest| {
            rest.trim()
                .trim_start_matches("http://")
                .parse::<SocketAddr>()
                .ok()
        })
        .ok_or_else(|| {
            format!("its first stdout line should be `listening on ADDR:PORT`, got {line:?}")
        })?;
    Ok(addr)
}

/// One blocking `GET path`; true on a 2xx.
pub fn healthz(addr: SocketAddr, path: &str) -> bool {
    let attempt = || -> std::io::Result<bool> {
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )?;
        let mut head = [0u8; 10];
        stream.read_exact(&mut head)?;
        Ok(head.starts_with(b"HTTP/1.") && head[9] == b'2')
    };
    attempt().unwrap_or(false)
}

/// [`healthz`] over TLS: the server's certificate must be valid for its IP address under
/// `config`'s roots, so a server presenting the wrong certificate never counts as ready.
pub fn healthz_tls(addr: SocketAddr, path: &str, config: Arc<rustls::ClientConfig>) -> bool {
    let attempt = || -> std::io::Result<bool> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        stream.set_write_timeout(Some(Duration::from_secs(2)))?;
        let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
        let connection =
            rustls::ClientConnection::new(config, name).map_err(std::io::Error::other)?;
        let mut tls = rustls::StreamOwned::new(connection, stream);
        write!(
            tls,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )?;
        tls.flush()?;
        let mut head = [0u8; 10];
        tls.read_exact(&mut head)?;
        Ok(head.starts_with(b"HTTP/1.") && head[9] == b'2')
    };
    attempt().unwrap_or(false)
}

/// A free loopback port for a server loadlab starts with `PORT` set. (Another process could
/// take it before the server binds; the start-up then fails with the server's own message.)
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?
        .local_addr()?
        .port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_lines() {
        assert_eq!(
            parse_address_line("listening on 127.0.0.1:43121\n").unwrap(),
            "127.0.0.1:43121".parse().unwrap()
        );
        assert_eq!(
            parse_address_line("listening on 0.0.0.0:80").unwrap(),
            "127.0.0.1:80".parse().unwrap()
        );
        assert_eq!(
            parse_address_line("listening on [::1]:8080").unwrap(),
            "[::1]:8080".parse().unwrap()
        );
        assert!(parse_address_line("Server started").is_err());
    }
}
