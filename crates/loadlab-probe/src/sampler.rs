//! A thread that samples the server (and loadlab itself) at a fixed period, on absolute
//! deadlines so the series does not drift, and notices when the server dies.

use crate::cgroup::{Cgroup, Throttling};
use crate::procfs;
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
    fn main_pid(&self) -> Option<u32> {
        match self {
            Source::Cgroup { pid, .. } | Source::Tree { pid } => Some(*pid),
            Source::Attached(_) => None,
        }
    }

    fn group(&self) -> Option<&Cgroup> {
        match self {
            Source::Cgroup { group, .. } | Source::Attached(group) => Some(group),
            Source::Tree { .. } => None,
        }
    }

    /// Takes one sample now.
    pub fn sample(&self) -> Sample {
        let at = Instant::now();
        let generator_cpu_ns = procfs::own_cpu_ns();
        let pids = match self {
            Source::Tree { pid } => procfs::tree(*pid),
            Source::Cgroup { group, .. } | Source::Attached(group) => group.pids(),
        };
        let procs = procfs::sum(&pids);
        let group = self.group();
        Sample {
            at,
            cpu_ns: group.and_then(Cgroup::cpu_usage_ns).unwrap_or(procs.cpu_ns),
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

/// Cumulative counters and levels at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub at: Instant,
    /// The server's CPU time so far, ns (for a process tree, only of processes still alive).
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

/// What a finished sampler hands back.
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
        mut exit_probe: Option<ExitProbe>,
        on_exit: Box<dyn FnOnce() + Send>,
    ) -> Sampler {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let thread = std::thread::Builder::new()
            .name("loadlab-probe".into())
            .spawn(move || {
                let mut out = Samples::default();
                let oom_before = source.group().and_then(Cgroup::oom_kills).unwrap_or(0);
                let mut on_exit = Some(on_exit);
                let mut next = Instant::now();
                loop {
                    let sample = source.sample();
                    out.samples.push(sample);
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
                        out.exit = Some(Exit {
                            at: sample.at,
                            status,
                            oom_killed: oom > oom_before,
                        });
                        if let Some(f) = on_exit.take() {
                            f();
                        }
                        return out;
                    }
                    if flag.load(Ordering::Acquire) {
                        return out;
                    }
                    next += every;
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
