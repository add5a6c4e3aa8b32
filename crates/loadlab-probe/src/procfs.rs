//! Per-process figures from `/proc`, for servers with no cgroup of loadlab's (`--pid`) and for
//! the figures a cgroup does not keep (RSS, threads, descriptors).

use std::collections::HashMap;

/// One process's figures at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessFigures {
    pub rss_bytes: u64,
    pub threads: u64,
    pub fds: u64,
}

impl std::ops::AddAssign for ProcessFigures {
    fn add_assign(&mut self, o: ProcessFigures) {
        self.rss_bytes += o.rss_bytes;
        self.threads += o.threads;
        self.fds += o.fds;
    }
}

/// Reads a process's figures; `None` once it has gone.
pub fn figures(pid: u32) -> Option<ProcessFigures> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields = stat_fields(&stat)?;
    if fields.first() == Some(&"Z") {
        return None;
    }
    let threads = fields.get(17).and_then(|t| t.parse().ok()).unwrap_or(0);
    Some(ProcessFigures {
        rss_bytes: rss_bytes(pid).unwrap_or(0),
        threads,
        fds: std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|d| d.count() as u64)
            .unwrap_or(0),
    })
}

/// Resident memory from `/proc/PID/statm` (pages).
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size())
}

/// The fields of `/proc/PID/stat` after the command name (which may hold spaces and
/// parentheses), so index 0 is the state (field 3 in proc(5)).
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let after = &stat[stat.rfind(')')? + 1..];
    Some(after.split_whitespace().collect())
}

/// Whether `pid` runs (a zombie does not).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| stat_fields(&s).map(|f| f.first() != Some(&"Z")))
        .unwrap_or(false)
}

/// The parent of `pid`, from `/proc/PID/stat`.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat_fields(&stat)?.get(1)?.parse().ok()
}

/// `pid` and all its descendants, found by walking every process's parent.
pub fn tree(pid: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(child) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(parent) = parent_of(child) {
                children.entry(parent).or_default().push(child);
            }
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        if let Some(kids) = children.get(&out[i]) {
            out.extend(
                kids.iter()
                    .copied()
                    .filter(|k| !out.contains(k))
                    .collect::<Vec<_>>(),
            );
        }
        i += 1;
    }
    out
}

/// Sum of [`figures`] over `pids` (those gone are skipped).
pub fn sum(pids: &[u32]) -> ProcessFigures {
    let mut total = ProcessFigures::default();
    for &pid in pids {
        if let Some(f) = figures(pid) {
            total += f;
        }
    }
    total
}

/// A process's CPU time (every thread, ns), or `None` once it has gone.
/// (The sampler reads this apart from [`figures`], right next to its timestamp.)
pub fn cpu_ns(pid: u32) -> Option<u64> {
    process_cpu_ns(pid).or_else(|| {
        // Without the CPU clock: clock ticks are coarse (10 ms) but better than nothing.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let fields = stat_fields(&stat)?;
        let ticks: u64 = [11, 12]
            .iter()
            .filter_map(|&i| fields.get(i).and_then(|t| t.parse::<u64>().ok()))
            .sum();
        Some(ticks * 1_000_000_000 / clock_ticks_per_second())
    })
}

/// A process's CPU time through its CPU-time clock: nanosecond resolution, every thread.
fn process_cpu_ns(pid: u32) -> Option<u64> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: both calls only write the values we pass them.
    unsafe {
        if libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) != 0 {
            return None;
        }
        let mut ts: libc::timespec = std::mem::zeroed();
        if libc::clock_gettime(clock, &mut ts) != 0 {
            return None;
        }
        Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }
}

/// This process's own CPU time (every thread), ns: the generator's share of the machine.
pub fn own_cpu_ns() -> u64 {
    // SAFETY: clock_gettime only writes the timespec.
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        if libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) != 0 {
            return 0;
        }
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as u64
    } else {
        4096
    }
}

fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as u64
    } else {
        100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_awkward_command_names() {
        let stat = "123 (a) b (c)) S 1 123 123 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 5 0";
        let f = stat_fields(stat).unwrap();
        assert_eq!(f[0], "S");
        assert_eq!(f[1], "1");
        assert_eq!(f[11], "7");
        assert_eq!(f[17], "5");
    }

    #[test]
    fn own_process_figures() {
        let me = std::process::id();
        let f = figures(me).unwrap();
        assert!(
            f.threads >= 1 && f.fds >= 3 && f.rss_bytes > 1 << 20,
            "{f:?}"
        );
        assert!(alive(me));
        assert!(tree(me).contains(&me));
        assert!(own_cpu_ns() > 0);
    }
}
