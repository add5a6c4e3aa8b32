//! Signalling processes by identity, not by number. A PID names whichever process holds it
//! now: once a process has exited and been reaped, its number can go to an unrelated one
//! (`pid_max` is 32,768 on many hosts), and `kill(pid)` then hits that one. A pidfd
//! (`pidfd_open(2)`, Linux 5.3) stays bound to the process it was opened for: signalling it
//! after that process is gone fails with ESRCH instead of reaching a stranger.
//!
//! So a group of processes is signalled in two steps: a pidfd is opened for each listed
//! PID, then the list is read again, and only a pidfd whose PID is still listed is
//! signalled. A number that changed hands between the first reading and the open names a
//! stranger, which the second reading does not list; a member that exits after the open
//! makes the signal reach nobody.
//!
//! It must not decide what to signal: callers name the processes (a cgroup's members, the
//! carriers of a session's marker).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A process, pinned.
#[derive(Debug)]
pub struct PidFd {
    fd: OwnedFd,
    pid: u32,
}

impl PidFd {
    /// Opens a pidfd for `pid`; `None` when no such process exists (or the kernel has no
    /// pidfds).
    pub fn open(pid: u32) -> Option<PidFd> {
        let pid_t = libc::pid_t::try_from(pid).ok().filter(|p| *p > 0)?;
        // SAFETY: pidfd_open takes a PID and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid_t, 0) };
        if fd < 0 {
            return None;
        }
        // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        Some(PidFd { fd, pid })
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Sends `signal` to this process (never to another that took its number); false when
    /// it has exited.
    pub fn signal(&self, signal: i32) -> bool {
        // SAFETY: pidfd_send_signal(fd, sig, NULL, 0) on a descriptor we own.
        let r = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.fd.as_raw_fd(),
                signal,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        r == 0
    }
}

/// Signals every process `list` names that is still named by a second call of `list` after
/// a pidfd was opened for it; returns how many were signalled.
pub fn signal_listed(list: impl Fn() -> Vec<u32>, signal: i32) -> usize {
    let pinned: Vec<PidFd> = list().into_iter().filter_map(PidFd::open).collect();
    if pinned.is_empty() {
        return 0;
    }
    let still = list();
    pinned
        .iter()
        .filter(|p| still.contains(&p.pid) && p.signal(signal))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pidfd_signals_its_process_and_not_a_later_one() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pinned = PidFd::open(child.id()).unwrap();
        assert!(pinned.signal(0));
        assert!(pinned.signal(libc::SIGKILL));
        child.wait().unwrap();
        // Reaped: the number is free for anyone, and the pidfd reaches nobody.
        assert!(!pinned.signal(0));
        assert!(!pinned.signal(libc::SIGKILL));
    }

    #[test]
    fn only_processes_still_listed_are_signalled() {
        let mut a = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let mut b = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let (pa, pb) = (a.id(), b.id());
        let calls = std::cell::Cell::new(0);
        // The second reading no longer lists b (it left the group): b is spared.
        let list = || {
            calls.set(calls.get() + 1);
            if calls.get() == 1 {
                vec![pa, pb]
            } else {
                vec![pa]
            }
        };
        assert_eq!(signal_listed(list, libc::SIGKILL), 1);
        assert!(a.wait().unwrap().code().is_none());
        assert!(b.try_wait().unwrap().is_none(), "b was spared");
        b.kill().unwrap();
        b.wait().unwrap();
    }
}
