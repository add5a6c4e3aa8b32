//! Fills [`Readings`] from `/proc` and `/sys`: read-only, nothing on the machine changes.
//! Whatever cannot be read stays `None` (or empty), and the checks treat it as unknown.
//! The only slow part is sampling CPU use (busy processes, steal) over a short interval.

use crate::plan::PlannedRun;
use crate::readings::{BusyProcess, CgroupReading, Conntrack, IdleState, Listener, Readings};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn number<T: std::str::FromStr>(path: &str) -> Option<T> {
    read(path)?.split_whitespace().next()?.parse().ok()
}

/// Reads the machine for `plan`, sampling CPU use for `sample` (processes in `exclude`, and
/// loadlab itself, are not counted as busy).
pub fn read_machine(plan: &PlannedRun, sample: Duration, exclude: &[u32]) -> Readings {
    let before = (
        cpu_times(),
        Instant::now(),
        loadlab_engine::sys::cpu_steal_ticks(),
    );
    std::thread::sleep(sample);
    let after = (
        cpu_times(),
        Instant::now(),
        loadlab_engine::sys::cpu_steal_ticks(),
    );
    let elapsed = after.1 - before.1;
    let mut busy = busy(&before.0, &after.0, elapsed, exclude);
    busy.sort_by(|a, b| b.cores.total_cmp(&a.cores));
    let steal = match (before.2, after.2) {
        (Some((s0, t0)), Some((s1, t1))) if t1 > t0 => {
            Some(s1.saturating_sub(s0) as f64 / (t1 - t0) as f64)
        }
        _ => None,
    };
    Readings {
        nofile: nofile(),
        port_range: read("/proc/sys/net/ipv4/ip_local_port_range").and_then(|t| {
            let mut it = t.split_whitespace().map(|n| n.parse::<u32>().ok());
            Some((it.next()??, it.next()??))
        }),
        tcp_tw_reuse: number("/proc/sys/net/ipv4/tcp_tw_reuse"),
        somaxconn: number("/proc/sys/net/core/somaxconn"),
        tcp_max_syn_backlog: number("/proc/sys/net/ipv4/tcp_max_syn_backlog"),
        tcp_syncookies: number("/proc/sys/net/ipv4/tcp_syncookies"),
        conntrack: conntrack(),
        cgroup: cgroup(),
        // SAFETY: geteuid has no preconditions.
        root: unsafe { libc::geteuid() } == 0,
        governors: governors(),
        idle_states: idle_states(),
        pm_qos_device: Path::new("/dev/cpu_dma_latency").exists(),
        steal,
        sampled_s: elapsed.as_secs_f64(),
        busy,
        listener: plan
            .target
            .as_ref()
            .filter(|t| t.loopback && t.port != 0)
            .and_then(|t| listener(t.port)),
        stale_links: crate::link::stale(),
        iproute2: crate::link::has_iproute2(),
        rmem_max: number("/proc/sys/net/core/rmem_max"),
        wmem_max: number("/proc/sys/net/core/wmem_max"),
    }
}

#[allow(clippy::unnecessary_cast)]
fn nofile() -> Option<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct we pass.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0)
        .then_some((lim.rlim_cur as u64, lim.rlim_max as u64))
}

fn conntrack() -> Option<Conntrack> {
    Some(Conntrack {
        max: number("/proc/sys/net/netfilter/nf_conntrack_max")?,
        count: number("/proc/sys/net/netfilter/nf_conntrack_count")?,
        time_wait_s: number("/proc/sys/net/netfilter/nf_conntrack_tcp_timeout_time_wait")
            .unwrap_or(120),
    })
}

fn cgroup() -> CgroupReading {
    let mounts = read("/proc/self/mounts").unwrap_or_default();
    let mut reading = CgroupReading::default();
    for line in mounts.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some(point), Some(kind), Some(options)) =
            (fields.get(1), fields.get(2), fields.get(3))
        else {
            continue;
        };
        match *kind {
            "cgroup2" if reading.v2.is_none() => {
                reading.v2 = Some(
                    read(format!("{point}/cgroup.controllers"))
                        .unwrap_or_default()
                        .split_whitespace()
                        .map(String::from)
                        .collect(),
                );
            }
            "cgroup" => {
                for option in options.split(',') {
                    if matches!(
                        option,
                        "cpu" | "cpuacct" | "cpuset" | "memory" | "pids" | "blkio" | "io"
                    ) && !reading.v1.iter().any(|c| c == option)
                    {
                        reading.v1.push(option.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    reading
}

fn cpu_dirs() -> Vec<(usize, std::path::PathBuf)> {
    let mut out: Vec<(usize, std::path::PathBuf)> = std::fs::read_dir("/sys/devices/system/cpu")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let n = name.to_str()?.strip_prefix("cpu")?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    out.sort();
    out
}

fn governors() -> Vec<(usize, String)> {
    cpu_dirs()
        .into_iter()
        .filter_map(|(n, dir)| Some((n, read(dir.join("cpufreq/scaling_governor"))?)))
        .collect()
}

fn idle_states() -> Vec<IdleState> {
    let dir = Path::new("/sys/devices/system/cpu/cpu0/cpuidle");
    let mut states: Vec<(usize, IdleState)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let index: usize = name.to_str()?.strip_prefix("state")?.parse().ok()?;
            let path = e.path();
            Some((
                index,
                IdleState {
                    name: read(path.join("name"))?,
                    latency_us: read(path.join("latency"))?.parse().ok()?,
                    disabled: read(path.join("disable")).is_some_and(|d| d == "1"),
                },
            ))
        })
        .collect();
    states.sort_by_key(|(i, _)| *i);
    states.into_iter().map(|(_, s)| s).collect()
}

/// What one sample keeps of a process: CPU ticks (user + system), its name, and whether it
/// is a kernel thread.
type ProcessTicks = (u64, String, bool);

/// [`ProcessTicks`] per process.
fn cpu_times() -> HashMap<u32, ProcessTicks> {
    let mut out = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(stat) = read(format!("/proc/{pid}/stat")) {
            if let Some(parsed) = parse_stat(&stat) {
                out.insert(pid, parsed);
            }
        }
    }
    out
}

/// `PF_KTHREAD` in `include/linux/sched.h`: the task is a kernel thread.
const PF_KTHREAD: u64 = 0x0020_0000;

/// `(utime + stime, comm, kernel thread)` from a `/proc/PID/stat` line; the name may hold
/// spaces and parentheses, so the fields are counted from the last `)`.
fn parse_stat(stat: &str) -> Option<ProcessTicks> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = stat.get(close + 2..)?.split_whitespace().collect();
    // After the name: state(3) ... flags(9) ... utime(14) stime(15), 1-based in proc(5).
    let flags: u64 = rest.get(6)?.parse().ok()?;
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((utime + stime, name, flags & PF_KTHREAD != 0))
}

fn busy(
    before: &HashMap<u32, ProcessTicks>,
    after: &HashMap<u32, ProcessTicks>,
    elapsed: Duration,
    exclude: &[u32],
) -> Vec<BusyProcess> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let me = std::process::id();
    let secs = elapsed.as_secs_f64().max(1e-3);
    after
        .iter()
        .filter(|(pid, _)| **pid != me && !exclude.contains(pid))
        .filter_map(|(pid, (ticks, name, kernel_thread))| {
            let (was, _, _) = before.get(pid)?;
            let used = ticks.saturating_sub(*was);
            (used > 0).then(|| BusyProcess {
                pid: *pid,
                name: name.clone(),
                cores: used as f64 / hz / secs,
                kernel_thread: *kernel_thread,
            })
        })
        .collect()
}

fn listener(port: u16) -> Option<Listener> {
    let queue = loadlab_probe::sockets::listen_queue(port).ok()??;
    let pids = loadlab_probe::affinity::listeners(port);
    let mut cpus = BTreeSet::new();
    for &pid in &pids {
        cpus.extend(loadlab_probe::affinity::of_process(pid).unwrap_or_default());
    }
    Some(Listener {
        backlog: queue.backlog,
        pids,
        cpus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names() {
        let line = "42 (tmux: server) S 1 42 42 0 -1 4194560 1 0 0 0 7 3 0 0 20 0 1 0 9 0 0";
        assert_eq!(parse_stat(line), Some((10, "tmux: server".into(), false)));
        let line = "7 (a) b) R 1 7 7 0 -1 0 0 0 0 0 100 50 0 0 20 0 1 0 9 0 0";
        assert_eq!(parse_stat(line), Some((150, "a) b".into(), false)));
        assert_eq!(parse_stat("garbage"), None);
        // A kworker as /proc shows it: flags 0x04208060 carry PF_KTHREAD.
        let line = "9 (kworker/0:0-events) I 2 0 0 0 -1 69238880 0 0 0 0 0 12 0 0 20 0 1 0 3 0 0";
        assert_eq!(
            parse_stat(line),
            Some((12, "kworker/0:0-events".into(), true))
        );
    }

    #[test]
    fn this_machine_reads() {
        let plan = PlannedRun {
            connections: 10,
            keepalive: true,
            ..PlannedRun::default()
        };
        let r = read_machine(&plan, Duration::from_millis(20), &[]);
        assert!(r.nofile.is_some());
        assert!(r.port_range.is_some());
        assert!(r.somaxconn.is_some());
        assert!(r.rmem_max.is_some_and(|m| m > 0));
        assert!(r.wmem_max.is_some_and(|m| m > 0));
        assert!(r.sampled_s >= 0.019);
        assert!(r.busy.iter().all(|b| b.pid != std::process::id()));
    }

    #[test]
    fn kernel_threads_are_told_apart_on_this_machine() {
        // kthreadd (pid 2) is the kernel threads' parent on every Linux; this process is not
        // one. (Inside a PID namespace pid 2 may be anything, so only a kthreadd is asserted.)
        let times = cpu_times();
        let (_, _, me) = &times[&std::process::id()];
        assert!(!me, "this test is not a kernel thread");
        if let Some((_, name, kernel)) = times.get(&2) {
            if name == "kthreadd" {
                assert!(kernel, "kthreadd is a kernel thread");
            }
        }
    }
}
