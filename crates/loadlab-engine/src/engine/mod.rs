//! The engine: `threads` OS threads, each running one single-threaded tokio event loop that
//! drives its share of the load. Threads share nothing on the hot path; each records into its
//! own [`Recorder`], merged when the run ends.
//!
//! This module owns the run's lifetime (start, warm-up, stop by deadline, request count or
//! [`RunControl::stop`]). `closed` and `open` are the two load models; `exchange` is one
//! request on one connection, which both use; `timer` is the open loop's precise timer.

mod budget;
mod closed;
mod exchange;
mod h2;
mod open;
mod stamped;
mod timer;

use crate::config::{Model, RunConfig, Stop};
use crate::http1::{self, EncodedRequest};
use crate::schedule::{Profile, Schedule, Stage};
use crate::stats::Recorder;
use crate::sys;
use budget::{Budget, SharedBudget};
use std::cell::{Cell, RefCell};
use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Why a run could not start. Failures of single requests are not errors: they are counted.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot resolve `{host}`: {source}; check the host name in the URL")]
    Resolve {
        host: String,
        source: std::io::Error,
    },
    #[error("`{0}` resolved to no address; check the host name in the URL")]
    NoAddress(String),
    #[error("cannot start worker thread: {0}")]
    Thread(std::io::Error),
    #[error("a worker thread crashed (a bug in loadlab: please report it with the command line)")]
    WorkerCrashed,
}

/// Live counters of one worker thread, written by it alone, read by progress displays.
#[derive(Debug, Default)]
pub struct ThreadProgress {
    pub completed: AtomicU64,
    pub failed: AtomicU64,
}

/// Lets another thread stop a run (Ctrl-C) and watch its progress.
#[derive(Debug, Clone, Default)]
pub struct RunControl {
    inner: Arc<ControlInner>,
}

#[derive(Debug, Default)]
struct ControlInner {
    stop: AtomicBool,
    notify: tokio::sync::Notify,
    /// Set when the run starts.
    started: Mutex<Option<Instant>>,
    progress: Mutex<Vec<Arc<ThreadProgress>>>,
}

/// A snapshot for progress bars.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProgressSnapshot {
    pub elapsed: Duration,
    pub completed: u64,
    pub failed: u64,
}

impl RunControl {
    pub fn new() -> Self {
        Self::default()
    }

    /// Ends the run as soon as possible; requests in flight are abandoned and reported so.
    pub fn stop(&self) {
        self.inner.stop.store(true, Ordering::Release);
        self.inner.notify.notify_waiters();
    }

    /// When the run started (the origin of its timeline), once it has.
    pub fn started_at(&self) -> Option<Instant> {
        self.inner.started.lock().ok().and_then(|s| *s)
    }

    pub fn is_stopped(&self) -> bool {
        self.inner.stop.load(Ordering::Acquire)
    }

    pub fn progress(&self) -> ProgressSnapshot {
        let elapsed = self
            .inner
            .started
            .lock()
            .ok()
            .and_then(|s| s.map(|s| s.elapsed()))
            .unwrap_or_default();
        let threads = self
            .inner
            .progress
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default();
        let mut snap = ProgressSnapshot {
            elapsed,
            ..ProgressSnapshot::default()
        };
        for t in threads {
            snap.completed += t.completed.load(Ordering::Relaxed);
            snap.failed += t.failed.load(Ordering::Relaxed);
        }
        snap
    }

    async fn stopped(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }
}

/// What one worker thread hands back.
#[derive(Debug)]
pub struct ThreadReport {
    pub recorder: Recorder,
    /// A task of this thread panicked.
    pub crashed: bool,
    pub cpu: sys::CpuTime,
    pub wall: Duration,
    /// With `--busy-poll`: CPU time spent polling with nothing to do (not busy).
    pub spin_idle: Duration,
}

/// The raw outcome of a run, before summarising.
#[derive(Debug)]
pub struct RunOutcome {
    pub address: SocketAddr,
    pub started_at: SystemTime,
    /// When the warm-up ended and measurement began, from the start.
    pub warmup: Duration,
    /// From the start to the end of the run.
    pub elapsed: Duration,
    pub interrupted: bool,
    pub recorder: Recorder,
    /// Response-time histograms per interval of `RunConfig::interval`, by interval index.
    pub intervals: Vec<(usize, hdrhistogram::Histogram<u64>)>,
    pub threads: Vec<ThreadReport>,
    pub nofile: Option<sys::NofileLimit>,
    /// `Ok` when the PM QoS CPU latency was held at 0, else why not.
    pub pm_qos: Result<(), String>,
    /// Share of all CPU time stolen by the hypervisor, per interval.
    pub steal: Vec<f64>,
}

/// Timing and limits every connection of a thread consults.
pub(crate) struct ThreadCtx {
    /// The requests of the rotation, encoded once (at least one).
    pub requests: Rc<[EncodedRequest]>,
    /// For https: the TLS client configuration.
    pub tls: Option<crate::tls::TlsSettings>,
    /// HTTP/2 only: the request, and streams per connection.
    pub h2: Option<h2::H2Request>,
    pub streams: usize,
    /// HTTP/2: the `-n` budget ran out (no reconnecting then).
    pub budget_spent: Cell<bool>,
    /// Open loop over HTTP/2: the thread's connections, shared by stream slots.
    pub h2_pool: h2::Pool,
    pub address: SocketAddr,
    pub keepalive: bool,
    /// `--busy-poll`: a task keeps the event loop polling instead of sleeping.
    pub busy_poll: bool,
    /// With `--busy-poll`: time spent polling with nothing to do.
    pub spin_idle: Cell<Duration>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub start: Instant,
    pub warmup_end: Instant,
    /// `None` when the run ends by request count.
    pub deadline: Option<Instant>,
    pub budget: Budget,
    pub stop: RunControl,
    pub recorder: RefCell<Recorder>,
    pub progress: Arc<ThreadProgress>,
    /// One read buffer for all the thread's connections: reads happen one at a time.
    pub read_buf: RefCell<Box<[u8]>>,
    pub live_connections: Cell<usize>,
    pub all_done: tokio::sync::Notify,
    /// Closed loop with `--stages --closed`: the connection-count profile.
    pub closed_stages: Option<Profile>,
    /// Open loop only.
    pub open: Option<open::OpenState>,
    /// Open loop over plain HTTP/1.1: the thread sleeps from one due time (or tick) to the
    /// next and times responses by the kernel's receive stamps (see [`stamped`]).
    pub stamp_clock: Option<stamped::StampClock>,
    /// A task of this thread panicked (a bug): the run stops and reports it.
    pub crashed: Cell<bool>,
    /// Slots left among the run's first requests, shared by every thread.
    pub first_slots: Arc<AtomicU64>,
    /// False once this thread saw the slots run out: no atomic on the hot path after that.
    pub first_left: Cell<bool>,
}

impl ThreadCtx {
    /// Claims one of the run's first-request slots; false (for good) once they are gone.
    pub(crate) fn take_first_slot(&self) -> bool {
        let took = self
            .first_slots
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok();
        if !took {
            self.first_left.set(false);
        }
        took
    }
}

/// Spawns a task on the thread's set; a panic in it stops the run instead of vanishing with
/// the task (tokio would otherwise drop it silently, leaving counts that do not add up).
pub(crate) fn spawn_guarded(
    ctx: &Rc<ThreadCtx>,
    task: impl std::future::Future<Output = ()> + 'static,
) {
    let ctx = ctx.clone();
    tokio::task::spawn_local(async move {
        let mut task = std::pin::pin!(task);
        let outcome = std::future::poll_fn(|cx| {
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task.as_mut().poll(cx)))
            {
                Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
                Ok(std::task::Poll::Ready(())) => std::task::Poll::Ready(Ok(())),
                Err(_) => std::task::Poll::Ready(Err(())),
            }
        })
        .await;
        if outcome.is_err() {
            ctx.crashed.set(true);
            ctx.stop.stop();
        }
    });
}

const READ_BUF_BYTES: usize = 64 * 1024;

/// Runs the load described by `config` until it ends or `control` stops it.
pub fn run(config: &RunConfig, control: &RunControl) -> Result<RunOutcome, EngineError> {
    let nofile = sys::raise_nofile_limit();
    let address = resolve(&config.url.host, config.url.port)?;
    let requests = http1::encode_all(config);
    let started_at = SystemTime::now();
    let start = Instant::now();
    let warmup_end = start + config.warmup;
    let deadline = match config.stop {
        Stop::Duration(d) => Some(warmup_end + d),
        Stop::Requests(_) => None,
    };
    let shared_budget = match config.stop {
        Stop::Requests(n) => Some(Arc::new(SharedBudget::new(n, config.connections))),
        Stop::Duration(_) => None,
    };
    *control.inner.started.lock().expect("not poisoned") = Some(start);
    let pm_qos = if config.pm_qos {
        sys::PmQos::hold_zero()
    } else {
        Err("disabled with --no-pm-qos".to_string())
    };
    let steal_sampler = StealSampler::start(start, config.interval);
    let first_slots = Arc::new(AtomicU64::new(crate::stats::FIRST_REQUESTS));

    let mut handles = Vec::with_capacity(config.threads);
    for t in 0..config.threads {
        let connections = config.connections / config.threads
            + usize::from(t < config.connections % config.threads);
        let progress = Arc::new(ThreadProgress::default());
        control
            .inner
            .progress
            .lock()
            .expect("not poisoned")
            .push(progress.clone());
        let requests = requests.clone();
        let tls = config.tls.clone();
        let h2_request = h2::H2Request::from_config(config);
        let streams = config.streams;
        let control = control.clone();
        let shared_budget = shared_budget.clone();
        let (keepalive, timeout, connect_timeout) =
            (config.keepalive, config.timeout, config.connect_timeout);
        let threads = config.threads;
        let interval = config.interval;
        let tick = config.tick;
        let stamped = config.sleeps_between_sends();
        let busy_poll = config.busy_poll;
        let first_slots = first_slots.clone();
        let generator_cpus = config.generator_cpus.clone();
        let (closed_stages, open_plan) = match &config.model {
            Model::Closed { stages } => (stages.clone(), None),
            Model::Open { profile, arrival } => {
                let profile = with_warmup(profile, config.warmup);
                (
                    None,
                    Some((
                        Schedule::new(&profile, *arrival, t, threads),
                        // Over HTTP/2 the open loop's slots are streams.
                        (config.connections / threads
                            + usize::from(t < config.connections % threads))
                            * config.streams,
                    )),
                )
            }
        };
        let handle = std::thread::Builder::new()
            .name(format!("loadlab-worker-{t}"))
            .spawn(move || {
                if let Some(cpus) = &generator_cpus {
                    // Placement was checked when it was decided; a failure here leaves the
                    // thread where it was rather than failing the run.
                    let _ = sys::pin_current_thread(cpus);
                }
                let recorder = Recorder {
                    intervals: crate::stats::Intervals::new(interval),
                    ..Recorder::default()
                };
                let ctx = Rc::new(ThreadCtx {
                    requests: requests.into(),
                    tls,
                    h2: h2_request,
                    streams,
                    budget_spent: Cell::new(false),
                    h2_pool: h2::Pool::default(),
                    address,
                    keepalive,
                    busy_poll,
                    spin_idle: Cell::new(Duration::ZERO),
                    timeout,
                    connect_timeout,
                    start,
                    warmup_end,
                    deadline,
                    budget: Budget::new(shared_budget),
                    stop: control,
                    recorder: RefCell::new(recorder),
                    progress,
                    read_buf: RefCell::new(vec![0; READ_BUF_BYTES].into_boxed_slice()),
                    live_connections: Cell::new(connections),
                    all_done: tokio::sync::Notify::new(),
                    closed_stages,
                    crashed: Cell::new(false),
                    first_slots,
                    first_left: Cell::new(true),
                    stamp_clock: stamped.then(stamped::StampClock::new),
                    open: open_plan.map(|(schedule, cap)| {
                        open::OpenState::new(open::Pending::new(schedule, start), cap.max(1), tick)
                    }),
                });
                worker(ctx, t, threads, connections)
            })
            .map_err(EngineError::Thread)?;
        handles.push(handle);
    }

    let mut threads = Vec::with_capacity(handles.len());
    let mut crashed = false;
    for h in handles {
        // A worker only panics on a bug. The other threads' measurements are still good,
        // but a result missing a thread's share would mislead: report the bug instead.
        match h.join() {
            Ok(report) => {
                crashed |= report.crashed;
                threads.push(report);
            }
            Err(_) => crashed = true,
        }
    }
    if crashed {
        return Err(EngineError::WorkerCrashed);
    }
    let end = Instant::now();
    let steal = steal_sampler.finish();
    let pm_qos = pm_qos.map(drop);
    let mut recorder = Recorder::default();
    for t in &threads {
        recorder.merge(&t.recorder);
    }
    let intervals =
        crate::stats::Intervals::merge_all(threads.iter().map(|t| &t.recorder.intervals));
    Ok(RunOutcome {
        address,
        started_at,
        warmup: config.warmup,
        elapsed: end - start,
        interrupted: control.is_stopped(),
        recorder,
        intervals,
        threads,
        nofile,
        pm_qos,
        steal,
    })
}

/// Samples hypervisor steal at each interval boundary on a thread of its own.
struct StealSampler {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Vec<f64>>>,
}

impl StealSampler {
    fn start(start: Instant, interval: Duration) -> StealSampler {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let thread = std::thread::Builder::new()
            .name("loadlab-steal".into())
            .spawn(move || {
                let mut out = Vec::new();
                let mut last = sys::cpu_steal_ticks();
                let mut next = start + interval;
                loop {
                    // Short naps so the run's end is noticed quickly.
                    while Instant::now() < next && !flag.load(Ordering::Acquire) {
                        std::thread::sleep(Duration::from_millis(10).min(next - Instant::now()));
                    }
                    let now = sys::cpu_steal_ticks();
                    if let (Some((s0, t0)), Some((s1, t1))) = (last, now) {
                        let dt = t1.saturating_sub(t0);
                        out.push(if dt > 0 {
                            s1.saturating_sub(s0) as f64 / dt as f64
                        } else {
                            0.0
                        });
                    }
                    last = now;
                    next += interval;
                    if flag.load(Ordering::Acquire) {
                        return out;
                    }
                }
            })
            .ok();
        StealSampler { done, thread }
    }

    fn finish(self) -> Vec<f64> {
        self.done.store(true, Ordering::Release);
        self.thread.and_then(|t| t.join().ok()).unwrap_or_default()
    }
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, EngineError> {
    let mut addrs = (host, port)
        .to_socket_addrs()
        .map_err(|source| EngineError::Resolve {
            host: host.to_string(),
            source,
        })?;
    addrs
        .next()
        .ok_or_else(|| EngineError::NoAddress(host.to_string()))
}

/// The open loop's schedule includes the warm-up, run at the first stage's starting rate.
fn with_warmup(profile: &Profile, warmup: Duration) -> Profile {
    let mut stages = profile.stages.clone();
    if !warmup.is_zero() {
        let rate = stages.first().map_or(0.0, |s| s.from);
        stages.insert(
            0,
            Stage {
                duration: warmup,
                from: rate,
                to: rate,
            },
        );
    }
    Profile { stages }
}

/// `--busy-poll`: keeps the thread's event loop polling the kernel for ready sockets
/// (`epoll_wait` with a zero timeout) instead of sleeping in it. On one machine, a client that
/// sleeps makes the server wake it for every response: a wake-up of a sleeping thread on
/// another CPU is an inter-processor interrupt, paid on the server's CPU (in a VM, a VM exit).
/// Over TLS that cost nginx about 7% of its CPU against loadlab and almost nothing against
/// wrk, whose thread never slept. A remote client never costs a server that, so polling
/// removes an artefact of sharing the machine; it needs a core of loadlab's own.
///
/// Polling keeps the thread's CPU at 100%, so spins in which no request finished are counted
/// as idle, and the "generator saturated" verdict looks at the rest.
async fn busy_poll(ctx: Rc<ThreadCtx>) {
    let finished = || {
        ctx.progress.completed.load(Ordering::Relaxed) + ctx.progress.failed.load(Ordering::Relaxed)
    };
    let (mut last_count, mut last) = (finished(), Instant::now());
    loop {
        // A deferred yield: the runtime polls its I/O driver without blocking, then runs
        // whatever became ready, then this task again.
        tokio::task::yield_now().await;
        let (count, now) = (finished(), Instant::now());
        if count == last_count {
            ctx.spin_idle.set(ctx.spin_idle.get() + (now - last));
        }
        (last_count, last) = (count, now);
    }
}

fn worker(ctx: Rc<ThreadCtx>, thread: usize, threads: usize, connections: usize) -> ThreadReport {
    let cpu_start = sys::thread_cpu_time();
    let wall_start = Instant::now();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .expect("a current-thread runtime only fails without an OS event queue");
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        if ctx.open.is_some() {
            tokio::select! {
                biased;
                _ = ctx.stop.stopped() => {}
                _ = open::run(ctx.clone()) => {}
            }
            return;
        }
        if ctx.busy_poll {
            spawn_guarded(&ctx, busy_poll(ctx.clone()));
        }
        // Closed loop: connection k of this thread is number thread + k * threads overall,
        // so that stages activate connections evenly across threads.
        for k in 0..connections {
            if ctx.h2.is_some() {
                spawn_guarded(&ctx, h2::drive(ctx.clone()));
            } else {
                spawn_guarded(&ctx, closed::drive(ctx.clone(), thread + k * threads));
            }
        }
        let deadline = async {
            match ctx.deadline {
                Some(d) => tokio::time::sleep_until(d.into()).await,
                None => std::future::pending().await,
            }
        };
        let all_done = async {
            if ctx.live_connections.get() > 0 {
                ctx.all_done.notified().await;
            }
        };
        tokio::select! {
            biased;
            _ = ctx.stop.stopped() => {}
            _ = deadline => {}
            _ = all_done => {}
        }
    });
    // Dropping the set abandons requests still in flight; the recorder counts them.
    drop(local);
    drop(runtime);
    let mut recorder = ctx.recorder.take();
    if let Some(open) = &ctx.open {
        let (warm, measured) = open.unsent(recorder.in_flight, ctx.warmup_end);
        recorder.phase(crate::stats::Phase::Warmup).not_sent += warm;
        recorder.phase(crate::stats::Phase::Measured).not_sent += measured;
    }
    recorder.intervals.finish();
    ThreadReport {
        recorder,
        crashed: ctx.crashed.get(),
        cpu: sys::thread_cpu_time() - cpu_start,
        wall: wall_start.elapsed(),
        spin_idle: ctx.spin_idle.get(),
    }
}
