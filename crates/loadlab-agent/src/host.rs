//! Facts about the agent's host: its name, CPUs, kernel, cgroups, and the limits `doctor`
//! checks (`GET /v1/host`).
//!
//! Reads `/proc` and `/sys` only; it must not change anything.

use crate::protocol::HostInfo;

pub(crate) fn hostname() -> String {
    read_trimmed("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into())
}

pub(crate) fn kernel() -> String {
    read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into())
}

pub(crate) fn cpus() -> usize {
    loadlab_probe::limits::online_cpus()
}

/// `"v2"`, `"v1"`, or none when no usable hierarchy is mounted.
pub(crate) fn cgroup_version() -> Option<String> {
    if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        Some("v2".into())
    } else if std::path::Path::new("/sys/fs/cgroup/cpu").exists()
        || std::path::Path::new("/sys/fs/cgroup/memory").exists()
    {
        Some("v1".into())
    } else {
        None
    }
}

/// The host's limits; `nofile` of `server_pid` when there is one, else the agent's.
pub(crate) fn info(port: Option<u16>, server_pid: Option<u32>) -> HostInfo {
    let number = |path: &str| read_trimmed(path).and_then(|s| s.parse::<u64>().ok());
    let port_range = read_trimmed("/proc/sys/net/ipv4/ip_local_port_range").and_then(|s| {
        let mut parts = s.split_whitespace().map(|p| p.parse::<u16>().ok());
        Some((parts.next()??, parts.next()??))
    });
    let (nofile_soft, nofile_hard) = match server_pid {
        Some(pid) => nofile_of(pid),
        None => own_nofile(),
    };
    HostInfo {
        hostname: hostname(),
        cpus: cpus(),
        memory_bytes: mem_total_bytes(),
        somaxconn: number("/proc/sys/net/core/somaxconn"),
        tcp_max_syn_backlog: number("/proc/sys/net/ipv4/tcp_max_syn_backlog"),
        syncookies: number("/proc/sys/net/ipv4/tcp_syncookies"),
        nofile_soft,
        nofile_hard,
        port_range,
        listen_backlog: port.and_then(|p| {
            loadlab_probe::sockets::listen_queue(p)
                .ok()
                .flatten()
                .map(|q| q.backlog)
        }),
        time_wait_on_port: port.and_then(|p| loadlab_probe::sockets::time_wait(p).ok()),
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn mem_total_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `Max open files` of `/proc/PID/limits`.
fn nofile_of(pid: u32) -> (Option<u64>, Option<u64>) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap_or_default();
    parse_nofile(&text)
}

pub(crate) fn parse_nofile(limits: &str) -> (Option<u64>, Option<u64>) {
    let Some(line) = limits.lines().find(|l| l.starts_with("Max open files")) else {
        return (None, None);
    };
    let mut values = line["Max open files".len()..].split_whitespace();
    let value = |v: Option<&str>| v.and_then(|v| v.parse::<u64>().ok());
    (value(values.next()), value(values.next()))
}

fn own_nofile() -> (Option<u64>, Option<u64>) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return (None, None);
    }
    // rlim_t is u64 here, but not on every target.
    #[allow(clippy::unnecessary_cast)]
    let value = |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then_some(v as u64);
    (value(limit.rlim_cur), value(limit.rlim_max))
}

#[cfg(test)]
mod tests {
    #[test]
    fn nofile_from_proc_limits() {
        let text = "Limit                     Soft Limit           Hard Limit           Units\n\
                    Max open files            1024                 524288               files\n";
        assert_eq!(super::parse_nofile(text), (Some(1024), Some(524288)));
        assert_eq!(super::parse_nofile(""), (None, None));
    }
}
