//! The few operating-system facts and knobs the engine needs: the open-files limit, CPU time,
//! and a description of the machine for the result. Linux first; elsewhere these degrade to
//! "unknown" rather than failing a run.

use std::time::Duration;

/// The `nofile` limit before and after loadlab raised its soft limit to the hard one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NofileLimit {
    pub soft_before: u64,
    pub soft: u64,
    pub hard: u64,
}

/// Raises this process's soft `nofile` limit to its hard limit, as wrk users do by hand.
// `rlim_t` is u64 on 64-bit Linux only; the casts keep other targets compiling.
#[allow(clippy::unnecessary_cast)]
pub fn raise_nofile_limit() -> Option<NofileLimit> {
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        let before = lim.rlim_cur as u64;
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
        Some(NofileLimit {
            soft_before: before,
            soft: lim.rlim_cur as u64,
            hard: lim.rlim_max as u64,
        })
    }
}

/// User and system CPU time consumed by the calling thread so far. Per thread, so that a
/// server embedded in the same process (`loadlab demo`, tests) is not billed to the generator.
pub fn thread_cpu_time() -> CpuTime {
    // SAFETY: getrusage writes only the struct we pass; zeroed is a valid rusage.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut usage) != 0 {
            return CpuTime::default();
        }
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
        CpuTime {
            user: tv(usage.ru_utime),
            system: tv(usage.ru_stime),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTime {
    pub user: Duration,
    pub system: Duration,
}

impl CpuTime {
    pub fn total(self) -> Duration {
        self.user + self.system
    }
}

impl std::ops::Sub for CpuTime {
    type Output = CpuTime;
    fn sub(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

/// Where the run happened, for the result.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Environment {
    pub hostname: String,
    pub os: String,
    pub kernel: String,
    pub arch: String,
    pub cpus: usize,
}

pub fn environment() -> Environment {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    Environment {
        hostname: read("/proc/sys/kernel/hostname"),
        os: std::env::consts::OS.to_string(),
        kernel: read("/proc/sys/kernel/osrelease"),
        arch: std::env::consts::ARCH.to_string(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nofile_is_raised_to_the_hard_limit() {
        let lim = raise_nofile_limit().expect("getrlimit works on Linux");
        assert_eq!(lim.soft, lim.hard);
        assert!(lim.soft >= lim.soft_before);
    }

    #[test]
    fn cpu_time_advances_with_work() {
        let before = thread_cpu_time();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
        assert!(thread_cpu_time().total() > before.total());
    }
}
