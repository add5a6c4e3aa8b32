//! One worker thread's world: its share of the load ([`Plan`], computed once per run), what
//! every thread shares ([`Shared`]), and the context its connections consult ([`ThreadCtx`]),
//! built from the two.

use super::budget::{Budget, SharedBudget};
use super::gate::Times;
use super::{advert, h2, h3, open, stamped, with_warmup, RunControl, ThreadProgress};
use crate::config::{Model, RunConfig};
use crate::http1::EncodedRequest;
use crate::schedule::{Profile, Schedule};
use crate::stats::Recorder;
use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const READ_BUF_BYTES: usize = 64 * 1024;

/// What every worker thread of a run is given alike (cloned into each thread).
#[derive(Clone)]
pub(super) struct Shared {
    pub requests: Vec<EncodedRequest>,
    pub tls: Option<crate::tls::TlsSettings>,
    pub h2: Option<h2::H2Request>,
    pub h3: Option<h3::H3Shared>,
    pub streams: usize,
    /// `--pipeline`: HTTP/1.1 requests in flight on a connection at once.
    pub pipeline: usize,
    pub address: SocketAddr,
    pub keepalive: bool,
    pub busy_poll: bool,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub interval: Duration,
    pub tick: Duration,
    pub stamped: bool,
    pub generator_cpus: Option<Vec<usize>>,
    pub budget: Option<Arc<SharedBudget>>,
    pub first_slots: Arc<AtomicU64>,
    pub control: RunControl,
    pub scenario: Option<Arc<crate::config::ScenarioRun>>,
    /// Over HTTPS on HTTP/1.1 or HTTP/2: where the server's HTTP/3 advertisement goes.
    pub alt_svc: Option<advert::Found>,
    /// A WebSocket run (a `ws://` or `wss://` URL): its settings and shared counts.
    pub ws: Option<super::ws::WsShared>,
}

/// One thread's share of the load.
pub(super) struct Plan {
    pub index: usize,
    /// This thread's share of the connections (closed loop), or of the cap (open loop).
    pub connections: usize,
    /// Open loop: the most requests in flight at once (connections, or streams over HTTP/2).
    pub open_cap: usize,
    pub closed_stages: Option<Profile>,
    /// Open loop: this thread's share of the schedule.
    pub schedule: Option<Schedule>,
    /// Closed loop: the run-wide number of this thread's first connection, and the step to
    /// its next (across threads, and across shards of a sharded run).
    pub numbering: (usize, usize),
}

impl Plan {
    /// Every thread's share: connections dealt as evenly as they go, the schedule split so
    /// that the threads' arrivals together are the run's (a shard's threads take the shard's
    /// slots of the whole run's schedule).
    pub fn all(config: &RunConfig) -> Vec<Plan> {
        let threads = config.threads;
        let shard = config.shard.as_ref().map(|p| p.shard);
        (0..threads)
            .map(|index| {
                let connections = config.connections / threads
                    + usize::from(index < config.connections % threads);
                let (slot, slots) = shard.map_or((index, threads), |s| s.slot(index, threads));
                let (closed_stages, schedule) = match &config.model {
                    Model::Closed { stages } => (stages.clone(), None),
                    Model::Open { profile, arrival } => {
                        let profile = with_warmup(profile, config.warmup);
                        (None, Some(Schedule::new(&profile, *arrival, slot, slots)))
                    }
                };
                Plan {
                    index,
                    connections,
                    // Over HTTP/2 the open loop's slots are streams; pipelined, the places
                    // in connections' pipelines.
                    open_cap: connections * config.streams * config.pipeline,
                    closed_stages,
                    schedule,
                    numbering: (slot, slots),
                }
            })
            .collect()
    }
}

/// Timing and limits every connection of a thread consults.
pub(crate) struct ThreadCtx {
    /// The requests of the rotation, encoded once (at least one).
    pub requests: Rc<[EncodedRequest]>,
    /// For https: the TLS client configuration.
    pub tls: Option<crate::tls::TlsSettings>,
    /// HTTP/2 only: the request, and streams per connection.
    pub h2: Option<h2::H2Request>,
    /// HTTP/3 only: the thread's QUIC endpoint, the request, and the open loop's pool.
    pub h3: Option<h3::H3Thread>,
    pub streams: usize,
    /// HTTP/1.1 requests in flight on a connection at once (1: no pipelining).
    pub pipeline: usize,
    /// Open loop, pipelined: the thread's connections, shared by the places in their
    /// pipelines.
    pub pipe_pool: super::pipeline::Pool,
    /// HTTP/2 (and pipelined HTTP/1.1): the `-n` budget ran out (no reconnecting then).
    pub budget_spent: Cell<bool>,
    /// Open loop over HTTP/2: the thread's connections, shared by stream slots.
    pub h2_pool: h2::Pool,
    /// HTTP/2: what the thread's connections wrote and read, not yet booked by a request.
    pub h2_wire: Rc<h2::WireBytes>,
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
    /// A scenario run: what every virtual user of the thread runs.
    pub scenario: Option<Arc<crate::config::ScenarioRun>>,
    /// Over HTTPS on HTTP/1.1 or HTTP/2: the watch for the server's `Alt-Svc` (see
    /// [`advert`]).
    pub alt_svc: Option<advert::Watch>,
    /// A WebSocket run: what its connections do, and the counts its threads share.
    pub ws: Option<super::ws::WsShared>,
    /// WebSockets over HTTP/2: the thread's connections, each carrying `--streams` of them.
    pub ws_h2: super::ws::h2::Conns,
}

impl ThreadCtx {
    /// Whether the run is over for this thread at `now`: stopped, or past its deadline.
    #[inline]
    pub(super) fn over(&self, now: Instant) -> bool {
        self.stop.is_stopped() || self.deadline.is_some_and(|d| now >= d)
    }

    /// A closed loop's request, due `now` (when its connection is free): in the phase of
    /// `now`, a measured one's place taken from the budget (`-n`); `None` when that is spent.
    pub(super) fn due_now(&self, now: Instant) -> Option<super::exchange::Due> {
        let phase = self.phase_at(now);
        if phase == crate::stats::Phase::Measured && !self.budget.take() {
            return None;
        }
        Some(super::exchange::Due {
            phase,
            intended: None,
            noticed: now,
        })
    }

    /// The phase a moment belongs to: warm-up before `warmup_end`, measured from it on.
    #[inline]
    pub(super) fn phase_at(&self, at: Instant) -> crate::stats::Phase {
        if at < self.warmup_end {
            crate::stats::Phase::Warmup
        } else {
            crate::stats::Phase::Measured
        }
    }

    pub(super) fn new(
        shared: Shared,
        times: Times,
        plan: Plan,
        progress: Arc<ThreadProgress>,
        stamp_clock: Option<stamped::StampClock>,
        recorder: Recorder,
        h2_wire: Rc<h2::WireBytes>,
    ) -> Rc<ThreadCtx> {
        let (start, tick) = (times.start, shared.tick);
        Rc::new(ThreadCtx {
            requests: shared.requests.into(),
            tls: shared.tls,
            h2: shared.h2,
            h3: shared.h3.map(h3::H3Thread::new),
            streams: shared.streams,
            pipeline: shared.pipeline,
            pipe_pool: Default::default(),
            budget_spent: Cell::new(false),
            h2_pool: h2::Pool::default(),
            h2_wire,
            address: shared.address,
            keepalive: shared.keepalive,
            busy_poll: shared.busy_poll,
            spin_idle: Cell::new(Duration::ZERO),
            timeout: shared.timeout,
            connect_timeout: shared.connect_timeout,
            start,
            warmup_end: times.warmup_end,
            deadline: times.deadline,
            budget: Budget::new(shared.budget),
            stop: shared.control,
            recorder: RefCell::new(recorder),
            progress,
            read_buf: RefCell::new(vec![0; READ_BUF_BYTES].into_boxed_slice()),
            live_connections: Cell::new(plan.connections),
            all_done: tokio::sync::Notify::new(),
            closed_stages: plan.closed_stages,
            crashed: Cell::new(false),
            first_slots: shared.first_slots,
            first_left: Cell::new(true),
            scenario: shared.scenario,
            ws: shared.ws,
            ws_h2: Default::default(),
            alt_svc: shared
                .alt_svc
                .map(|found| advert::Watch::new(found, plan.connections)),
            stamp_clock,
            open: plan.schedule.map(|schedule| {
                open::OpenState::new(
                    open::Pending::new(schedule, start),
                    plan.open_cap.max(1),
                    tick,
                )
            }),
        })
    }

    /// A thread's recorder, made before the start: its histograms cost milliseconds of CPU to
    /// allocate, which at the start would delay the first requests.
    pub(super) fn recorder(shared: &Shared) -> Recorder {
        Recorder {
            intervals: crate::stats::Intervals::new(shared.interval),
            scenario: shared
                .scenario
                .as_ref()
                .map(|s| crate::steps::ScenarioStats::new(&s.scenario)),
            grpc: shared
                .h2
                .as_ref()
                .and_then(|h| h.grpc.as_ref())
                // A unary call's one message each way is the call itself.
                .filter(|c| c.kind != crate::grpc::CallKind::Unary)
                .map(|_| Default::default()),
            ..Recorder::default()
        }
    }

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
