//! A running server ([`Launched`]): where it listens, how long it took to be ready, how to
//! sample it and see it exit, and its stop (dropping it kills its process group by PID).

use super::{lock, Launched};
use crate::cgroup::{Cgroup, LimitsReport};
use crate::procfs;
use crate::sampler::{ExitProbe, Source};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
            std::thread::sleep(EXIT_POLL);
        }
    }

    /// `Some(status)` once the server has exited; a child that cannot be asked counts as
    /// exited ("unknown"), so that a launch or a stop waiting on it ends. The exited child is
    /// left unreaped (a zombie) until [`Launched`] is dropped: while it is, its PID and
    /// process group id cannot go to another process, so signalling them stays safe.
    pub fn exit_status(&self) -> Option<String> {
        exited(self.pid).unwrap_or_else(|e| Some(format!("unknown ({e})")))
    }

    /// An [`ExitProbe`] for the sampler. Unlike [`Launched::exit_status`], a child that cannot
    /// be asked counts as running: the sampler goes on, and the stop says how it ended.
    pub fn exit_probe(&self) -> ExitProbe {
        let pid = self.pid;
        Box::new(move || exited(pid).ok().flatten())
    }

    /// Signals the server's process group (the server made one with its PID as its id, and
    /// everything it starts is in it unless it left), then every process in its cgroup that
    /// left the group: each by identity. Safe after the server exited: it is not reaped
    /// before `self` is dropped, so its PID still names its group and nobody else.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) with a negative PID signals that process group only; the group's
        // id is the unreaped server's PID, which no other process can hold.
        unsafe { libc::kill(-(self.pid as i32), signal) };
        if let Some(group) = &self.group {
            group.signal_all(signal);
        }
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
        // The server's own process group (`sh -c CMD` and whatever it started, not only the
        // shell), then every process in its cgroup, then the child itself, reaped: only now
        // may its PID go to another process.
        self.signal(libc::SIGKILL);
        if let Some(group) = &self.group {
            group.kill_all();
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// How often [`Launched::wait_exit`] looks: an exit is noticed within this, which a stop's
/// grace period and a launch's failure message can spare. (The same value as the launcher's
/// `READY_POLL`, not the same reason: that one is start-up time's precision.)
const EXIT_POLL: Duration = Duration::from_millis(5);

/// How the child exited, once it has (`Ok(None)` while it runs), without reaping it:
/// `waitid(WNOWAIT)` looks and leaves the zombie, so the PID stays ours.
fn exited(pid: u32) -> std::io::Result<Option<String>> {
    use std::os::unix::process::ExitStatusExt;
    // SAFETY: siginfo_t is plain data, filled by waitid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid on our own child with a valid siginfo_t pointer.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: after a successful waitid, si_pid and si_status are the fields it filled
    // (si_pid is 0 when the child has not changed state).
    let (si_pid, status) = unsafe { (info.si_pid(), info.si_status()) };
    if si_pid == 0 {
        return Ok(None);
    }
    // Back to a wait(2) status word: an exit code in the high byte, or the signal (with
    // 0x80 when it dumped core).
    let raw = match info.si_code {
        libc::CLD_EXITED => (status & 0xff) << 8,
        libc::CLD_DUMPED => status | 0x80,
        _ => status,
    };
    Ok(Some(describe(std::process::ExitStatus::from_raw(raw))))
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
