//! A thread that samples the server (and loadlab itself) at a fixed period, on absolute
//! deadlines so the series does not drift, and notices when the server dies.

use crate::cgroup::{Cgroup, Throttling};
use crate::procfs;
use crate::sample_log::SampleLog;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What to sample.
#[derive(Debug, Clone)]
pub enum Source {
    /// A launched server in a cgroup of loadlab's: CPU and memory from the group, the rest
    /// from its processes.
    Cgroup { group: Arc<Cgroup>, pid: u32 },
    /// A process and its descendants (`--pid`, or a launch without a cgroup).
    Tree { pid: u32 },
    /// Every process in an existing group (`--cgroup`).
    Attached(Arc<Cgroup>),
}

impl Source {
    /// The process whose death ends the run, if there is one.
    pub fn main_pid(&self) -> Option<u32> {
        match self {
            Source::Cgroup { pid, .. } | Source::Tree { pid } => Some(*pid),
            Source::Attached(_) => None,
        }
    }

    pub fn group(&self) -> Option<&Cgroup> {
        match self {
            Source::Cgroup { group, .. } | Source::Attached(group) => Some(group),
            Source::Tree { .. } => None,
        }
    }

    /// Takes one sample now.
    pub fn sample(&self) -> Sample {
        self.sample_tracked(&mut CpuTracker::default(), None)
    }

    /// Takes one sample now, counting the CPU of processes that exited since `tracker` last
    /// saw them.
    pub fn sample_tracked(
        &self,
        tracker: &mut CpuTracker,
        sent: Option<&mut crate::sockets::SentBytes>,
    ) -> Sample {
        let pids = match self {
            Source::Tree { pid } => procfs::tree(*pid),
            Source::Cgroup { group, .. } | Source::Attached(group) => group.pids(),
        };
        let group = self.group();
        let (at, cpu_ns, generator_cpu_ns) = timed_cpu(&pids, tracker);
        let procs = procfs::sum(&pids);
        let sent_bytes = sent.and_then(|s| s.update(&pids));
        Sample {
            sent_bytes,
            at,
            cpu_ns,
            throttling: group.and_then(Cgroup::throttling),
            rss_bytes: procs.rss_bytes,
            memory_bytes: group.and_then(Cgroup::memory_bytes),
            threads: procs.threads,
            fds: procs.fds,
            generator_cpu_ns,
            processes: pids.len() as u64,
            oom_kills: group.and_then(Cgroup::oom_kills),
        }
    }
}

/// The most time reading the CPU counters may take for their timestamp to count as exact;
/// longer means the sampler was preempted in between (likely when the generator keeps every
/// core busy), and the reading is taken again.
const CPU_READ_SLACK: Duration = Duration::from_micros(200);

/// The server's and loadlab's CPU time, with the instant they were read. A rate computed from
/// counters whose timestamp is a few milliseconds off would be off by a few percent of a core.
///
/// The server's CPU is the sum of its processes' CPU clocks, exact to the nanosecond, rather
/// than the cgroup's `cpuacct.usage`, which the kernel (with tick-based accounting) updates
/// for a running task only at scheduler ticks: 4 ms at 250 Hz, 4% of a core in a 100 ms
/// window. Processes that exit keep the CPU last seen for them (see [`CpuTracker`]).
fn timed_cpu(pids: &[u32], tracker: &mut CpuTracker) -> (Instant, u64, u64) {
    let mut reading = (Instant::now(), Vec::new(), 0);
    for _ in 0..3 {
        let before = Instant::now();
        let clocks: Vec<(u32, u64)> = pids
            .iter()
            .filter_map(|&p| procfs::cpu_ns(p).map(|ns| (p, ns)))
            .collect();
        let generator = procfs::own_cpu_ns();
        let after = Instant::now();
        reading = (before + (after - before) / 2, clocks, generator);
        if after - before <= CPU_READ_SLACK {
            break;
        }
    }
    let (at, clocks, generator) = reading;
    (at, tracker.total(&clocks), generator)
}

/// Keeps a process tree's CPU total monotonic as processes come and go: a process that
/// disappears leaves the CPU last seen for it (only what it used since the previous sample
/// is lost).
#[derive(Debug, Default)]
pub struct CpuTracker {
    last: std::collections::HashMap<u32, u64>,
    departed_ns: u64,
}

impl CpuTracker {
    fn total(&mut self, clocks: &[(u32, u64)]) -> u64 {
        let now: std::collections::HashMap<u32, u64> = clocks.iter().copied().collect();
        for (pid, ns) in &self.last {
            match now.get(pid) {
                // A reused PID shows less CPU than before: the old process is gone.
                Some(&n) if n >= *ns => {}
                _ => self.departed_ns += ns,
            }
        }
        self.last = now;
        self.departed_ns + self.last.values().sum::<u64>()
    }
}

/// Cumulative counters and levels at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub at: Instant,
    /// The server's CPU time so far, ns.
    pub cpu_ns: u64,
    pub throttling: Option<Throttling>,
    pub rss_bytes: u64,
    /// The cgroup's charged memory.
    pub memory_bytes: Option<u64>,
    pub threads: u64,
    pub fds: u64,
    /// loadlab's own CPU time so far, ns.
    pub generator_cpu_ns: u64,
    pub processes: u64,
    /// Bytes the server's clients acknowledged so far (from the first sample on).
    pub sent_bytes: Option<u64>,
    pub oom_kills: Option<u64>,
}

/// How the server ended during the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Exit {
    pub at: Instant,
    /// e.g. "killed by signal 9", "exit status 1".
    pub status: String,
    pub oom_killed: bool,
}

/// Tells whether the launched process has exited, and how (for a child of loadlab's).
pub type ExitProbe = Box<dyn FnMut() -> Option<String> + Send>;

/// Receives each sample as it is taken, and the exit with the sample that saw it.
pub type SampleSink = Box<dyn FnMut(&Sample, Option<&Exit>) + Send>;

/// What a finished sampler hands back: every sample it took (kept in a [`SampleLog`] while
/// it ran, not in memory), and how the server ended.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    pub samples: Vec<Sample>,
    pub exit: Option<Exit>,
}

pub struct Sampler {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<Samples>>,
}

impl Sampler {
    /// Starts sampling `source` every `every`, the first sample at once. When the server
    /// dies, `on_exit` runs once (the caller stops the run) and sampling ends.
    pub fn start(
        source: Source,
        every: Duration,
        exit_probe: Option<ExitProbe>,
        on_exit: Box<dyn FnOnce() + Send>,
    ) -> Sampler {
        Sampler::start_in(None, source, every, exit_probe, on_exit)
    }

    /// [`Sampler::start`] for a server in another network namespace (`netns`, a file naming
    /// it): the sampling thread enters it first, so the sockets it counts are the server's.
    pub fn start_in(
        netns: Option<std::fs::File>,
        source: Source,
        every: Duration,
        exit_probe: Option<ExitProbe>,
        on_exit: Box<dyn FnOnce() + Send>,
    ) -> Sampler {
        Sampler::start_streaming(
            netns,
            source,
            every,
            exit_probe,
            on_exit,
            Box::new(|_, _| {}),
            true,
        )
    }

    /// [`Sampler::start_in`] that also hands each sample to `sink` as it is taken (with the
    /// exit, on the sample that saw the server gone), for a consumer that reads the series
    /// while it grows (the agent). `keep`: whether [`Sampler::finish`] hands the samples back
    /// (a consumer that only streams them keeps none: a day of samples is 864,000).
    pub fn start_streaming(
        netns: Option<std::fs::File>,
        source: Source,
        every: Duration,
        mut exit_probe: Option<ExitProbe>,
        on_exit: Box<dyn FnOnce() + Send>,
        mut sink: SampleSink,
        keep: bool,
    ) -> Sampler {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let thread = std::thread::Builder::new()
            .name("loadlab-probe".into())
            .spawn(move || {
                if let Some(ns) = netns {
                    // This thread only: the rest of loadlab stays where it is. On failure
                    // the byte counts read 0 rather than the run failing.
                    // SAFETY: setns(2) on a descriptor this thread owns.
                    unsafe {
                        libc::setns(std::os::fd::AsRawFd::as_raw_fd(&ns), libc::CLONE_NEWNET)
                    };
                }
                // Kept out of memory as they come: see `SampleLog`.
                let mut log = if keep {
                    SampleLog::new()
                } else {
                    SampleLog::off()
                };
                let oom_before = source.group().and_then(Cgroup::oom_kills).unwrap_or(0);
                let mut on_exit = Some(on_exit);
                let mut next = Instant::now();
                let mut phase = PhaseLock::new(source.group(), every);
                let mut tracker = CpuTracker::default();
                let mut sent = crate::sockets::SentBytes::default();
                loop {
                    let sample = source.sample_tracked(&mut tracker, Some(&mut sent));
                    log.push(&sample);
                    let status = match (&mut exit_probe, source.main_pid()) {
                        (Some(probe), _) => probe(),
                        (None, Some(pid)) if !procfs::alive(pid) => {
                            Some("exited (status unknown: not started by loadlab)".into())
                        }
                        _ => None,
                    };
                    if let Some(status) = status {
                        // The kernel counts the kill before the parent can see the exit.
                        let oom = source.group().and_then(Cgroup::oom_kills).unwrap_or(0);
                        let exit = Exit {
                            at: sample.at,
                            status,
                            oom_killed: oom > oom_before,
                        };
                        sink(&sample, Some(&exit));
                        if let Some(f) = on_exit.take() {
                            f();
                        }
                        return Samples {
                            samples: log.samples(),
                            exit: Some(exit),
                        };
                    }
                    sink(&sample, None);
                    if flag.load(Ordering::Acquire) {
                        return Samples {
                            samples: log.samples(),
                            exit: None,
                        };
                    }
                    next += every;
                    if let Some(group) = source.group() {
                        if let Some(aligned) = phase.after(group, &sample, &flag) {
                            next = aligned;
                        }
                    }
                    let now = Instant::now();
                    if next <= now {
                        // Fell behind (a stalled machine): skip ahead rather than burst.
                        next = now + every;
                    }
                    std::thread::park_timeout(next - now);
                    while Instant::now() < next && !flag.load(Ordering::Acquire) {
                        std::thread::park_timeout(next.saturating_duration_since(Instant::now()));
                    }
                }
            })
            .ok();
        Sampler { done, thread }
    }

    /// Takes a last sample and returns them all.
    pub fn finish(mut self) -> Samples {
        self.stop()
    }

    fn stop(&mut self) -> Samples {
        self.done.store(true, Ordering::Release);
        match self.thread.take() {
            Some(t) => {
                t.thread().unpark();
                t.join().unwrap_or_default()
            }
            None => Samples::default(),
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Keeps sampling windows in phase with the CFS bandwidth period of a group with a CPU quota.
///
/// A throttled group runs in bursts: its quota at the start of each period, then nothing until
/// the next. A 100 ms window that is not aligned with the 100 ms period can catch the tail of
/// one burst and the whole of the next, and report up to twice the quota for a group that
/// never exceeded it over any period. So when the group is being throttled, the sampler finds
/// a period boundary (the moment `nr_periods` steps) and from then on samples half a period
/// after each boundary, while the group is throttled and idle: every window then holds
/// exactly one period's CPU.
struct PhaseLock {
    period: Option<Duration>,
    /// Periods per sampling window when aligned (the window is a whole number of periods).
    per_window: u64,
    last: Option<Throttling>,
    locked: bool,
    /// No new search before this (a failed search is not retried at once).
    quiet_until: Option<Instant>,
}

impl PhaseLock {
    fn new(group: Option<&Cgroup>, every: Duration) -> PhaseLock {
        let period = group
            .and_then(Cgroup::cpu_period)
            .filter(|p| !p.is_zero() && every.as_nanos().is_multiple_of(p.as_nanos()));
        PhaseLock {
            per_window: period.map_or(0, |p| (every.as_nanos() / p.as_nanos()) as u64),
            period,
            last: None,
            locked: false,
            quiet_until: None,
        }
    }

    /// After a sample: `Some(instant)` for the next sample when a new phase was found.
    fn after(&mut self, group: &Cgroup, sample: &Sample, stop: &AtomicBool) -> Option<Instant> {
        let period = self.period?;
        let now_t = sample.throttling?;
        let prev = self.last.replace(now_t)?;
        let periods = now_t.periods.saturating_sub(prev.periods);
        let throttled = now_t.throttled > prev.throttled;
        // In phase: one window, the expected number of periods. Idle or unthrottled groups
        // have no bursts to split, so there is nothing to align.
        if !throttled || (self.locked && periods == self.per_window) {
            return None;
        }
        if self.quiet_until.is_some_and(|t| Instant::now() < t) {
            return None;
        }
        // Watch for the next boundary, at most one period and a little.
        let start = now_t.periods;
        let give_up = Instant::now() + period + Duration::from_millis(10);
        while Instant::now() < give_up && !stop.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
            match group.throttling() {
                Some(t) if t.periods != start => {
                    self.locked = true;
                    self.last = None;
                    return Some(Instant::now() + period / 2);
                }
                _ => {}
            }
        }
        self.locked = false;
        self.quiet_until = Some(Instant::now() + Duration::from_secs(1));
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_of_exited_processes_stays_counted() {
        let mut t = CpuTracker::default();
        assert_eq!(t.total(&[(1, 100), (2, 50)]), 150);
        assert_eq!(t.total(&[(1, 120), (2, 70)]), 190);
        // 2 exits; 3 starts.
        assert_eq!(t.total(&[(1, 130), (3, 5)]), 205);
        // PID 3 reused by a new process with less CPU: the old one's 5 ns stay.
        assert_eq!(t.total(&[(1, 130), (3, 1)]), 206);
    }
}
