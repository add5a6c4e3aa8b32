//! The few operating-system facts and knobs the engine needs: the open-files limit, CPU time,
//! and a description of the machine for the result. Linux first; elsewhere these degrade to
//! "unknown" rather than failing a run.

use std::time::Duration;

pub use loadlab_result::{Environment, NofileLimit};

/// The hard `nofile` limit: the most descriptors this process could ever open (loadlab
/// raises its soft limit to it when a run starts). Read only: nothing is raised here.
#[allow(clippy::unnecessary_cast)]
pub fn nofile_hard() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct we pass.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0).then_some(lim.rlim_max as u64)
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

/// How many local ports the kernel hands out for outgoing connections
/// (`net.ipv4.ip_local_port_range`).
pub fn local_ports() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text.split_whitespace().map(|n| n.parse::<u64>().ok());
    let (lo, hi) = (it.next()??, it.next()??);
    Some(hi.saturating_sub(lo) + 1)
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

/// How long the calling thread has waited so far, ready to run, for a CPU that another task
/// held: the kernel's run-queue wait (the second field of `/proc/thread-self/schedstat`).
/// `None` where the kernel keeps no such count.
pub fn run_queue_wait() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    parse_schedstat_wait(&text)
}

fn parse_schedstat_wait(text: &str) -> Option<Duration> {
    let ns = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(ns))
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

/// Holds the kernel's PM QoS CPU latency request at 0 while alive: idle CPUs then poll
/// instead of halting, so waking one costs microseconds rather than a trip through the
/// hypervisor. On virtual machines that trip is what makes open-loop tails of every tool
/// 10x worse. Needs write access to `/dev/cpu_dma_latency` (root); the request ends when the
/// file is closed, so a crash cannot leave it behind.
#[derive(Debug)]
pub struct PmQos(#[allow(dead_code)] std::fs::File);

impl PmQos {
    pub fn hold_zero() -> Result<PmQos, String> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/cpu_dma_latency")
            .map_err(|e| {
                format!("cannot open /dev/cpu_dma_latency ({e}); run as root to hold it")
            })?;
        f.write_all(&0i32.to_ne_bytes())
            .map_err(|e| format!("cannot write /dev/cpu_dma_latency ({e})"))?;
        Ok(PmQos(f))
    }
}

/// Cumulative CPU time stolen by the hypervisor and total CPU time, over all CPUs, in clock
/// ticks (the first line of /proc/stat).
pub fn cpu_steal_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal [guest guest_nice: already in user]
    let total: u64 = fields.iter().take(8).sum();
    Some((*fields.get(7)?, total))
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
        checks: Vec::new(),
    }
}

/// Lets the calling thread run only when its core has nothing else to run (`SCHED_IDLE`): for
/// loadlab's own bookkeeping threads (merging and writing intervals: `collecting`), so that
/// on a generator pinned to a core or two they never take it from a worker. Measured on the
/// 2-core VM (docs/open-loop.md): at the default priority, merging and writing each interval
/// took a pinned open loop's core for about 1 ms, sending the requests due meanwhile late.
/// A thread at this policy still runs at once on a core with room, and gets a sliver of a busy
/// one (about 0.3%, by its weight), so its work is delayed, never lost. Unprivileged threads
/// may always lower themselves, never raise themselves back: only threads made for the
/// purpose call this. False if the kernel refused.
pub fn yield_to_workers() -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: a plain system call on the calling thread (0) with a valid parameter.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) == 0 }
}

/// Restricts the calling thread to `cpus` (threads it creates afterwards inherit it).
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET ignores numbers beyond the set's size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: sched_setaffinity reads the set we pass; 0 is the calling thread.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn nofile_is_raised_to_the_hard_limit() {
        let lim = raise_nofile_limit().expect("getrlimit works on Linux");
        assert_eq!(lim.soft, lim.hard);
        assert!(lim.soft >= lim.soft_before);
    }

    #[test]
    fn a_bookkeeping_thread_yields_to_the_workers() {
        let policy = std::thread::spawn(|| {
            let yielded = yield_to_workers();
            // SAFETY: reads the calling thread's policy.
            (yielded, unsafe { libc::sched_getscheduler(0) })
        })
        .join()
        .unwrap();
        assert_eq!(policy, (true, libc::SCHED_IDLE));
        // SAFETY: as above; the test's own thread is untouched.
        assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER);
    }

    #[test]
    fn the_run_queue_wait_is_the_second_field() {
        assert_eq!(
            parse_schedstat_wait("373872 142727 1\n"),
            Some(Duration::from_nanos(142_727))
        );
        assert_eq!(parse_schedstat_wait("373872\n"), None);
        assert_eq!(parse_schedstat_wait(""), None);
    }

    /// Two threads spinning on one core, one of them at `SCHED_IDLE`: the other keeps the core,
    /// and the one that yields waits for it the whole time, where it waits at all.
    #[test]
    fn a_thread_that_yields_its_core_waits_for_it() {
        // SAFETY: cpu_set_t is plain data, filled by the kernel for the calling thread.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        assert_eq!(unsafe { libc::sched_getaffinity(0, size, &mut set) }, 0);
        let cpu = (0..libc::CPU_SETSIZE as usize)
            .find(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .unwrap();
        let both = Arc::new(std::sync::Barrier::new(2));
        // Both spin to the same moment, so the time one of them is kept off the core counts
        // whenever it falls.
        let until = std::time::Instant::now() + Duration::from_millis(400);
        let spin = move |yields: bool, both: Arc<std::sync::Barrier>| {
            pin_current_thread(&[cpu]).unwrap();
            if yields {
                assert!(yield_to_workers());
            }
            let before = run_queue_wait().expect("this kernel keeps schedstat");
            both.wait();
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
            run_queue_wait().unwrap() - before
        };
        let b = both.clone();
        let yielding = std::thread::spawn(move || spin(true, b));
        let kept = std::thread::spawn(move || spin(false, both))
            .join()
            .unwrap();
        let yielded = yielding.join().unwrap();
        assert!(
            yielded >= Duration::from_millis(150) && yielded > kept,
            "the yielding thread waited {yielded:?}, the other {kept:?}"
        );
    }

    #[test]
    fn steal_ticks_are_read() {
        let (steal, total) = cpu_steal_ticks().expect("/proc/stat on Linux");
        assert!(total > 0 && steal <= total);
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
