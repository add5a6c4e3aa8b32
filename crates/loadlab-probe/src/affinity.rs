//! Which CPUs a process may run on, and which processes serve a local TCP port: enough to
//! tell whether loadlab and the server it measures share a CPU.

use std::collections::BTreeSet;

/// The CPUs thread (or process) `tid` may run on (0: the calling thread), or `None` if the
/// kernel would not say (the thread is gone, or this is not Linux).
pub fn of(tid: u32) -> Option<BTreeSet<usize>> {
    // SAFETY: cpu_set_t is plain data, and sched_getaffinity writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::sched_getaffinity(
            tid as libc::pid_t,
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set,
        )
    };
    if rc != 0 {
        return None;
    }
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: CPU_ISSET reads the set within its bounds.
    Some(
        (0..max)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect(),
    )
}

/// Every CPU any thread of process `pid` may run on.
pub fn of_process(pid: u32) -> Option<BTreeSet<usize>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut all = BTreeSet::new();
    for tid in tasks.flatten() {
        if let Some(set) = tid
            .file_name()
            .to_str()
            .and_then(|t| t.parse().ok())
            .and_then(of)
        {
            all.extend(set);
        }
    }
    (!all.is_empty()).then_some(all)
}

/// The processes holding a listening TCP socket on local `port` in this network namespace
/// (those loadlab may read: all of them as root). Empty when none is found.
pub fn listeners(port: u16) -> Vec<u32> {
    let Ok(sockets) = crate::sockets::tcp_sockets(Some(port)) else {
        return Vec::new();
    };
    let inodes: BTreeSet<u32> = sockets
        .iter()
        .filter(|s| s.listening && s.inode != 0)
        .map(|s| s.inode)
        .collect();
    if inodes.is_empty() {
        return Vec::new();
    }
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = std::process::id();
    let own_exe = std::fs::read_link("/proc/self/exe").ok();
    // A child of loadlab between fork and exec holds loadlab's descriptors for a moment (a
    // server being launched, a command run): it is loadlab still, not the listener.
    let own_fork = |pid: u32| {
        own_exe.is_some()
            && std::fs::read_link(format!("/proc/{pid}/exe")).ok() == own_exe
            && crate::procfs::parent_of(pid) == Some(own)
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own && !own_fork(pid))
        // One descriptor at a time, stopping at the listener: the machine checks run before
        // every run, and a busy host's processes hold tens of thousands of sockets.
        .filter(|&pid| crate::sockets::socket_inodes_iter(pid).any(|i| inodes.contains(&i)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_is_found_with_its_cpus() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // This process holds the socket, and `listeners` leaves loadlab itself out.
        assert!(listeners(port).is_empty());
        let mine = of(0).expect("own affinity");
        assert!(!mine.is_empty());
        assert_eq!(of_process(std::process::id()).as_ref(), Some(&mine));
        // A child that inherits the listening socket is found.
        let fd = std::os::fd::AsRawFd::as_raw_fd(&listener);
        // Close-on-exec, so that only the child it is given to holds it (a plain dup is
        // inherited by every process another test starts meanwhile).
        // SAFETY: fcntl(F_DUPFD_CLOEXEC) returns a new descriptor, which the OwnedFd owns.
        let dup = unsafe {
            <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(libc::fcntl(
                fd,
                libc::F_DUPFD_CLOEXEC,
                0,
            ))
        };
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .stdin(std::process::Stdio::from(dup))
            .spawn()
            .unwrap();
        let found = listeners(port);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(found, vec![child.id()]);
    }
}
