//! The engine: `threads` OS threads, each running one single-threaded tokio event loop that
//! drives its share of the load. Threads share nothing on the hot path; each records into its
//! own [`Recorder`], merged when the run ends.
//!
//! This module owns the run's lifetime (start, warm-up, stop by deadline, request count or
//! [`RunControl::stop`]). `closed` and `open` are the two load models; `exchange` is one
//! request on one connection, which both use; `pipeline` is `--pipeline`'s connection, N
//! requests in flight on it, for both loops; `timer` is the open loop's precise timer;
//! `scenario` runs a scenario's virtual users over the same connections.

pub(crate) mod advert;
mod backoff;
mod budget;
mod closed;
mod collecting;
mod control;
mod exchange;
mod feed;
mod gate;
mod gone;
mod h2;
mod h2_preface;
pub(crate) mod h3;
mod open;
mod pacing;
mod pipeline;
mod pool;
mod scenario;
mod stamped;
mod steal;
mod streams;
mod thread;
mod timer;
mod unprocessed;
mod worker;
mod ws;

use crate::config::{RunConfig, Stop};
use crate::http1::{self};
use crate::schedule::{Profile, Stage};
use crate::stats::Recorder;
use crate::sys;
pub use budget::Abandoned;
use budget::SharedBudget;
pub use control::{PartObserver, ProgressSnapshot, RunControl, ThreadProgress};
pub use h3::paths::{QuicConnection, QuicPaths, QuicTake};
pub use h3::send_body as h3_send_body;
/// The receive buffer an HTTP/3 run asks for each worker thread's UDP socket, in bytes (for
/// the machine's checks of `net.core.rmem_max`).
pub use h3::RCVBUF_BYTES as H3_UDP_RCVBUF_BYTES;
pub(crate) use scenario::pacer::offered_per_s;
use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use steal::StealSampler;
pub(crate) use thread::ThreadCtx;

/// Why a run could not start. Failures of single requests are not errors: they are counted.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    // The reason is text, not a `source`: printed once, in this sentence, not again as the
    // error's cause.
    #[error("cannot resolve `{host}`: {reason}; check the host name in the URL")]
    Resolve { host: String, reason: String },
    #[error("`{0}` resolved to no address; check the host name in the URL")]
    NoAddress(String),
    #[error("cannot start worker thread: {0}")]
    Thread(std::io::Error),
    #[error("a worker thread crashed (a bug in loadlab: please report it with the command line)")]
    WorkerCrashed,
    #[error("--start-at: {0}")]
    StartAt(String),
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
    /// From the start to the end: how long the thread was ready to run but waited for a CPU
    /// another task held (`None` where the kernel does not say).
    pub waited: Option<Duration>,
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
    /// A run bounded by `-n` whose target went away: the rest of its count given up (see
    /// `gone`).
    pub gave_up: Option<budget::Abandoned>,
    pub recorder: Recorder,
    /// The timeline's traffic, summed over the threads (the recorder's timeline buckets went
    /// to the interval collector as the run went on, when there was one).
    pub traffic: crate::timeline::TrafficLog,
    /// Response-time histograms per interval of `RunConfig::interval`, by interval index.
    pub intervals: Vec<(usize, hdrhistogram::Histogram<u64>)>,
    pub threads: Vec<ThreadReport>,
    pub nofile: Option<sys::NofileLimit>,
    /// `Ok` when the PM QoS CPU latency was held at 0, else why not.
    pub pm_qos: Result<(), String>,
    /// Share of all CPU time stolen by the hypervisor, per interval.
    pub steal: Vec<f64>,
    /// HTTP/3: the least receive buffer a worker's UDP socket got, in bytes (`None`: no
    /// socket was opened).
    pub udp_rcvbuf_bytes: Option<u64>,
    /// Over HTTPS: the server's `Alt-Svc` header, when it offered HTTP/3 (`h3`).
    pub alt_svc: Option<String>,
    /// A WebSocket run's own figures (pushes, held connections and their memory).
    pub ws: Option<crate::ws::WsReport>,
}

/// Spawns a task on the thread's set; a panic in it stops the run instead of vanishing with
/// the task (tokio would otherwise drop it silently, leaving counts that do not add up).
/// The task is polled in place (`catch_unwind` wraps it): pinning a moved copy inside an
/// `async` block kept both copies in the task, twice the memory of every connection's.
pub(crate) fn spawn_guarded(
    ctx: &Rc<ThreadCtx>,
    task: impl std::future::Future<Output = ()> + 'static,
) {
    use futures_util::FutureExt as _;
    let ctx = ctx.clone();
    let task = std::panic::AssertUnwindSafe(task).catch_unwind();
    tokio::task::spawn_local(task.map(move |outcome| {
        if outcome.is_err() {
            ctx.crashed.set(true);
            ctx.stop.stop();
        }
    }));
}

/// Runs the load described by `config` until it ends or `control` stops it.
pub fn run(config: &RunConfig, control: &RunControl) -> Result<RunOutcome, EngineError> {
    let nofile = sys::raise_nofile_limit();
    let address = resolve(&config.url.host, config.url.port)?;
    let requests = http1::encode_all(config);
    let shared_budget = match config.stop {
        Stop::Requests(n) => Some(Arc::new(SharedBudget::new(
            n,
            config.connections,
            config.give_up_after,
        ))),
        Stop::Duration(_) => None,
    };
    let budget_watch = shared_budget.clone();
    let start_at = config.shard.as_ref().and_then(|p| p.start_at);
    if let Some(at) = start_at {
        crate::shard::check_start_at(at, SystemTime::now()).map_err(EngineError::StartAt)?;
    }
    let pm_qos = if config.pm_qos {
        sys::PmQos::hold_zero()
    } else {
        Err("disabled with --no-pm-qos".to_string())
    };

    let shared = thread::Shared {
        requests,
        tls: config.tls.clone(),
        h2: h2::H2Request::from_config(config),
        h3: h3::H3Shared::from_config(config),
        // Over HTTP/3 already, or over cleartext (h3 is for https origins): nothing to watch.
        alt_svc: (config.url.https && !config.http3).then(advert::Found::default),
        streams: config.streams,
        pipeline: config.pipeline,
        address,
        keepalive: config.keepalive,
        busy_poll: config.busy_poll,
        timeout: config.timeout,
        connect_timeout: config.connect_timeout,
        interval: config.interval,
        tick: config.tick,
        stamped: config.sleeps_between_sends(),
        generator_cpus: config.generator_cpus.clone(),
        budget: shared_budget,
        first_slots: Arc::new(AtomicU64::new(crate::stats::FIRST_REQUESTS)),
        control: control.clone(),
        scenario: config.scenario.clone(),
        ws: ws::WsShared::from_config(config),
    };
    // The threads get ready (an open loop opens its first connections), then the clock
    // starts for all of them at once.
    let gate = Arc::new(gate::StartGate::default());
    let not_started = gate::OpenOnDrop(&gate);
    // With a sink, finished intervals leave the workers as they finish (see `crate::collector`).
    let sink = control.take_sink();
    let (batches, collected) = std::sync::mpsc::channel();
    let udp_rcvbuf = shared.h3.as_ref().map(|h| h.rcvbuf_bytes.clone());
    let alt_svc = shared.alt_svc.clone();
    let ws_totals = shared
        .ws
        .as_ref()
        .map(|w| (w.config.mode, w.totals.clone()));
    let mut handles = Vec::with_capacity(config.threads);
    for plan in thread::Plan::all(config) {
        let feed = sink.is_some().then(|| (plan.index, batches.clone()));
        let progress = Arc::new(ThreadProgress::default());
        control
            .inner
            .progress
            .lock()
            .expect("not poisoned")
            .push(progress.clone());
        let shared = shared.clone();
        let gate = gate.clone();
        let handle = std::thread::Builder::new()
            .name(format!("loadlab-worker-{}", plan.index))
            .spawn(move || {
                let feed = feed.map(|(thread, tx)| Rc::new(feed::Feed::new(thread, tx)));
                worker::thread(shared, plan, progress, &gate, feed)
            })
            .map_err(EngineError::Thread)?;
        handles.push(handle);
    }
    // The result's head, built while the threads get ready: its histograms cost a few
    // milliseconds of CPU to allocate, which at the start would delay the first requests
    // (on a generator pinned to one core). Its start time is set once known.
    let collecting = match sink {
        Some(sink) => Some(
            collecting::Collecting::spawn(
                config,
                collecting::Parts {
                    threads: handles.len(),
                    header: header(config, address, SystemTime::now(), &pm_qos, nofile),
                    traffic: crate::timeline::TrafficLog::new(config),
                    sink,
                    batches: collected,
                },
            )
            .map_err(EngineError::Thread)?,
        ),
        None => None,
    };
    gate.wait_ready(handles.len());
    if let Some(at) = start_at {
        // Everything that takes time (resolving, encoding, connecting) is done; now wait for
        // the others.
        crate::shard::wait_until(at, || control.is_stopped());
    }
    let started_at = SystemTime::now();
    let start = Instant::now();
    let duration = match config.stop {
        Stop::Duration(d) => Some(d),
        Stop::Requests(_) => None,
    };
    *control.inner.started.lock().expect("not poisoned") = Some(start);
    let steal_sampler = StealSampler::start(start, config.interval);
    gate.open(Some(gate::Times::from(start, config.warmup, duration)));
    drop(not_started);
    drop(batches);
    if let Some(c) = &collecting {
        c.started(started_at);
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
    let n = crate::timeline::interval_count(config, end - start, recorder.timeline.end());
    // Every worker has ended, so the collector's last batch is on its way.
    let traffic = match collecting.and_then(collecting::Collecting::finish) {
        Some(c) => {
            let (_, report, traffic) = c.finish(n);
            control.set_stream_report(report);
            traffic
        }
        None => crate::timeline::TrafficLog::of(config, &recorder.timeline, n),
    };
    Ok(RunOutcome {
        address,
        started_at,
        warmup: config.warmup,
        elapsed: end - start,
        interrupted: control.is_stopped(),
        gave_up: budget_watch.and_then(|b| b.abandoned()),
        recorder,
        traffic,
        intervals,
        threads,
        nofile,
        pm_qos,
        steal,
        udp_rcvbuf_bytes: udp_rcvbuf
            .map(|b| b.load(Ordering::Relaxed))
            .filter(|&b| b != u64::MAX),
        alt_svc: alt_svc.and_then(|found| found.get().cloned()),
        ws: ws_totals.map(|(mode, totals)| totals.report(mode)),
    })
}

/// The open loop's schedule of each worker thread a run of `config` would start (empty for a
/// closed loop): for tests that check how threads and shards split the arrivals.
pub fn thread_schedules(config: &RunConfig) -> Vec<crate::schedule::Schedule> {
    thread::Plan::all(config)
        .into_iter()
        .filter_map(|p| p.schedule)
        .collect()
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, EngineError> {
    let mut addrs = (host, port)
        .to_socket_addrs()
        .map_err(|e| EngineError::Resolve {
            host: host.to_string(),
            reason: e.to_string(),
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

/// The result as known at the start (its timeline empty): what a spill file opens with.
fn header(
    config: &RunConfig,
    address: SocketAddr,
    started_at: SystemTime,
    pm_qos: &Result<sys::PmQos, String>,
    nofile: Option<sys::NofileLimit>,
) -> loadlab_result::RunResult {
    let outcome = RunOutcome {
        address,
        started_at,
        warmup: config.warmup,
        elapsed: Duration::ZERO,
        interrupted: false,
        gave_up: None,
        recorder: Recorder::default(),
        traffic: crate::timeline::TrafficLog::new(config),
        intervals: Vec::new(),
        threads: Vec::new(),
        nofile,
        pm_qos: pm_qos.as_ref().map(drop).map_err(Clone::clone),
        steal: Vec::new(),
        udp_rcvbuf_bytes: None,
        alt_svc: None,
        ws: None,
    };
    let mut header = crate::summary::summarize(config, &outcome);
    header.timeline.clear();
    header.warnings.clear();
    header.verdicts.clear();
    header
}
