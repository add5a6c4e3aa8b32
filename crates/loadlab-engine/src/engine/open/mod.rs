//! The open loop: requests go out on the schedule, whatever the server does.
//!
//! A dispatcher sleeps on a precise timer until the next request is due, then hands every due
//! request to an idle connection, or opens a new one while under the cap. A connection that
//! finishes a request takes the next due one itself, with no hand-off, so when the target
//! falls behind, requests wait for a connection and that wait counts in their response time.
//! The backlog is never stored: it is the part of the schedule that is due and not yet taken.
//! Requests still untaken when the schedule ends are reported as not sent.
//!
//! Over plain HTTP/1.1 the dispatcher sleeps the whole thread between due times instead of
//! waiting in the event loop, so responses do not wake it; they are read at the next wake-up
//! and timed by the kernel's receive stamps (see `stamped`).

mod carry;
pub(in crate::engine) mod dispatch;
mod growth;
mod idle;
mod preopen;

use carry::connection;
pub(crate) use carry::Carrier;
use growth::Growth;
use idle::{IdlePool, Slot};
pub(crate) use preopen::{preopen, Opened};

use super::exchange::{Dialed, Due};
pub(crate) use super::pacing::Pending;
use super::pacing::{Pacing, Wait};
use super::timer::PreciseTimer;
use super::ThreadCtx;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// New connections a thread may have connecting at once.
const MAX_CONNECTING: usize = 8;

/// Sleeping between due times with due requests and no connection to take them: how soon to
/// look again (at the cap with a tick: at the next tick boundary after that).
const AT_CAP_WAIT: Duration = Duration::from_micros(50);

/// How many times the thread polls for new connections to complete before it sleeps.
const CONNECT_POLLS: usize = 8;

/// The longest the thread sleeps without reading responses or looking for a stop.
const MAX_SLEEP_SLICE: Duration = Duration::from_millis(50);

/// Open-loop state shared by a thread's dispatcher and connections.
pub(crate) struct OpenState {
    pending: RefCell<Pending>,
    /// Connections waiting for work. Since when some has been idle: a request due before
    /// then waited for a connection, and only the time after it is the generator's.
    idle: IdlePool,
    open_connections: Cell<usize>,
    /// New connections still connecting. Bounded, so that a burst of due requests at the
    /// start (or after a stall) does not open hundreds of connections at once, each slowed
    /// by the others, when a few would soon carry them all.
    connecting: Cell<usize>,
    /// Connections holding a request (connecting, sending or waiting for the response).
    busy: Cell<usize>,
    /// Whether a due request with no idle connection opens another (see `growth`).
    growth: Growth,
    cap: usize,
    dispatcher_waiting: Cell<bool>,
    dispatcher_wake: Notify,
    /// `--tick`: wake at most once per tick (zero: at every due time).
    tick: Duration,
    /// How wake-ups batch sends and wait (see `pacing`).
    pacing: Pacing,
}

impl OpenState {
    pub fn new(pending: Pending, cap: usize, tick: Duration) -> OpenState {
        OpenState {
            pending: RefCell::new(pending),
            idle: IdlePool::default(),
            open_connections: Cell::new(0),
            connecting: Cell::new(0),
            busy: Cell::new(0),
            growth: Growth::default(),
            cap,
            dispatcher_waiting: Cell::new(false),
            dispatcher_wake: Notify::new(),
            tick,
            pacing: Pacing::for_tick(tick),
        }
    }

    /// When the generator, getting to a request due at `intended` at `now`, counts as having
    /// noticed it, for its own lateness (the scheduler lag): late by the time a connection
    /// was free while the request was due: one standing idle, or the one taking it, whose
    /// last response arrived (by the kernel's stamp, `free_at`) before loadlab read it. With
    /// no connection free, the request waited for one (every one busy: the target's doing),
    /// none of it the generator's: it counts as noticed on time, so the lag's percentiles
    /// stay over every request.
    fn noticed(&self, intended: Instant, now: Instant, free_at: Option<Instant>) -> Instant {
        let free = match (self.idle.since(), free_at) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => return intended,
            },
        };
        intended + now.saturating_duration_since(free.max(intended))
    }

    /// Takes the next request of the schedule (peeked as due).
    fn take(&self) {
        if let Some(t) = self.pending.borrow_mut().take() {
            self.growth.due(t);
        }
    }

    /// Takes the next request of the schedule if it is due by `now`.
    fn take_due(&self, now: Instant) -> Option<Instant> {
        let t = self.pending.borrow_mut().take_due(now)?;
        self.growth.due(t);
        Some(t)
    }

    /// A scenario's open loop ([`super::scenario::open`]) walks the same schedule, of
    /// iterations: the next one's due time.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.pending.borrow().peek()
    }

    /// Takes the next iteration of the schedule if it is due by `now`.
    pub(super) fn take_due_at(&self, now: Instant) -> Option<Instant> {
        self.pending.borrow_mut().take_due(now)
    }

    /// How many iterations may run at once (`--max-connections`).
    pub(super) fn cap(&self) -> usize {
        self.cap
    }

    /// Requests due by `until` (when the thread stopped) but never sent: still in the
    /// schedule, or taken by a connection that was still connecting. Requests not yet due
    /// when a run is stopped early are not failures of anyone, and are not counted (nor
    /// walked: a long schedule's rest could hold billions).
    pub fn unsent(&self, in_flight: u64, warmup_end: Instant, until: Instant) -> (u64, u64) {
        let mut counts = (0u64, 0u64);
        let mut pending = self.pending.borrow_mut();
        while let Some(t) = pending.take() {
            if t > until {
                break;
            }
            if t < warmup_end {
                counts.0 += 1;
            } else {
                counts.1 += 1;
            }
        }
        counts.1 += (self.busy.get() as u64).saturating_sub(in_flight);
        counts
    }
}

fn due(ctx: &ThreadCtx, intended: Instant, noticed: Instant) -> Due {
    Due {
        phase: ctx.phase_at(intended),
        intended: Some(intended),
        noticed,
    }
}

/// Hands out due requests until the schedule ends, then waits for requests in flight.
///
/// The dispatcher runs as a task of the thread's set, not as the set's own future, so that
/// the connections it hands requests to run in the same pass of the set as it, right after it
/// steps aside (see `run_woken_tasks`), with no poll of the kernel in between.
///
/// Connections opened before the start (`preopened`) wait in the pool for the first requests
/// (HTTP/2's in the thread's pool of connections, for the stream slots). `began`: when the
/// thread began opening them, for [`connects_end`].
pub(super) async fn run(ctx: Rc<ThreadCtx>, preopened: Vec<(Opened, Dialed)>, began: Instant) {
    let open = ctx.open.as_ref().expect("open-loop thread");
    if let Some((_, first)) = preopened.first() {
        // Until responses tell, a response takes about a connect's round trip.
        open.growth.guess_service(first.connect);
    }
    // Counted in the phase the run begins with (the warm-up, if there is one).
    let phase = ctx.phase_at(ctx.start);
    for (opened, dialed) in preopened {
        dialed.record(&ctx, phase);
        match opened {
            // Pipelined, a connection is shared by the places in its pipeline, as HTTP/2's by
            // its streams.
            Opened::Http1(stream) if ctx.pipeline > 1 => {
                ctx.pipe_pool
                    .add(super::pipeline::Pipe::start(&ctx, stream));
            }
            Opened::Http1(stream) => {
                open.open_connections.set(open.open_connections.get() + 1);
                // Spawned before the dispatcher, so they are in the pool when it first looks.
                super::spawn_guarded(&ctx, carry::opened(ctx.clone(), stream));
            }
            Opened::H2(send) => ctx.h2_pool.add(send),
        }
    }
    let done = Rc::new(Notify::new());
    let signal = done.clone();
    let task_ctx = ctx.clone();
    let connects_end = connects_end(&ctx, began);
    super::spawn_guarded(&ctx, async move {
        dispatch(task_ctx, connects_end).await;
        signal.notify_one();
    });
    // A panic in the dispatcher stops the run (spawn_guarded), which ends this wait's caller.
    done.notified().await;
}

/// The run's rule for its end: within its duration plus one --connect-timeout, whatever the
/// target does. Past the schedule's end the open loop waits for the requests it sent (each
/// bounded by --timeout), and for connections still opening until one --connect-timeout
/// after the thread began opening connections, less the time that took before the start
/// (`preopen` waits up to one itself): a connection still opening then is given up, its
/// request due and never sent (`OpenState::unsent`). Without it a run against a server that
/// never answers lasted a connect timeout before its start and another after its end.
fn connects_end(ctx: &ThreadCtx, began: Instant) -> Instant {
    let deadline = ctx.deadline.expect("open loops end by time");
    let before_start = ctx.start.saturating_duration_since(began);
    deadline + ctx.connect_timeout.saturating_sub(before_start)
}

async fn dispatch(ctx: Rc<ThreadCtx>, connects_end: Instant) {
    let open = ctx.open.as_ref().expect("open-loop thread");
    let deadline = ctx.deadline.expect("open loops end by time");
    // Over plain HTTP/1.1 the thread sleeps between due times (or ticks), not in the event
    // loop: see `sleep_thread_until`.
    let sleeping = ctx.stamp_clock.is_some();
    if sleeping {
        super::stamped::tighten_timer_slack();
    }
    // Otherwise it waits in the event loop on a timerfd; without one, on tokio's millisecond
    // timer.
    let mut timer = if sleeping {
        None
    } else {
        PreciseTimer::new().ok()
    };
    'run: loop {
        let now = Instant::now();
        if ctx.stop.is_stopped() {
            break;
        }
        let closed = open.idle.expire(now);
        open.open_connections
            .set(open.open_connections.get() - closed);
        // Past the deadline, requests that fell due before it still go out (with a tick, the
        // last ones wait for the deadline itself); only those due after it are not sent.
        // Without a tick, this wake-up also takes sends due within the pacing's slack (each
        // keeps its own intended time: see `pacing`).
        let batch_end = open.pacing.batch_end(now, deadline);
        let next = loop {
            let Some(t) = open.pending.borrow().peek() else {
                break 'run;
            };
            if t > batch_end {
                break t;
            }
            // Take the idle connection out first: a borrow held into the `else` branch
            // would still be alive across its await.
            let noticed = open.noticed(t, now, None);
            let idle = open.idle.take();
            // Whether another connection may be opened for it (under the cap, and worth it:
            // see `growth`).
            let may_open = || {
                open.open_connections.get() < open.cap
                    && open.connecting.get() < MAX_CONNECTING
                    && open.growth.may_open(now, open.open_connections.get())
            };
            if let Some(slot) = idle {
                open.take();
                open.busy.set(open.busy.get() + 1);
                slot.work.set(Some(due(&ctx, t, noticed)));
                slot.wake.notify_one();
            } else if may_open() {
                open.take();
                open.busy.set(open.busy.get() + 1);
                open.open_connections.set(open.open_connections.get() + 1);
                open.connecting.set(open.connecting.get() + 1);
                super::spawn_guarded(&ctx, connection(ctx.clone(), due(&ctx, t, now)));
            } else if now >= deadline {
                break 'run;
            } else if sleeping {
                // New connections finish connecting within microseconds on one machine:
                // with some on their way, look again soon, not at the next tick, or the
                // requests waiting for them would wait a tick more. Otherwise (at the cap, or
                // holding back) connections free up as responses arrive, which with a tick
                // are read at the tick anyway.
                let connecting = open.connecting.get() > 0;
                let tick = if connecting {
                    Duration::ZERO
                } else {
                    open.tick
                };
                let wake_at = open.pending.borrow().wake_for(now + AT_CAP_WAIT, tick);
                sleep_thread_until(&ctx, wake_at.min(deadline)).await;
                continue 'run;
            } else {
                // At the cap, or enough connections are on their way: busy connections take
                // due requests themselves as they finish. Look again when one goes idle (the
                // backlog is drained) or finishes connecting (another may be opened).
                // Holding back, look again when the oldest request in flight would be overdue.
                let again = open
                    .growth
                    .reconsider_at()
                    .map_or(deadline, |t| t.min(deadline));
                open.dispatcher_waiting.set(true);
                tokio::select! {
                    _ = open.dispatcher_wake.notified() => {}
                    _ = tokio::time::sleep_until(again.into()) => {}
                }
                continue 'run;
            }
        };
        if now >= deadline {
            break;
        }
        // With a tick, requests due before the next boundary wait for it; their send lag
        // (and response time, measured from when each was due) includes that wait.
        let wake_at = open
            .pending
            .borrow()
            .wake_for(next, open.tick)
            .min(deadline);
        if sleeping {
            sleep_thread_until(&ctx, wake_at).await;
            continue;
        }
        match timer.as_mut() {
            Some(timer) => {
                if timer.sleep_until(wake_at).await.is_err() {
                    tokio::time::sleep_until(wake_at.into()).await;
                }
            }
            None => tokio::time::sleep_until(wake_at.into()).await,
        }
    }
    // The schedule is over: let requests in flight finish (each is bounded by --timeout),
    // and connections still opening until `connects_end`.
    while open.busy.get() > 0 && !ctx.stop.is_stopped() {
        let now = Instant::now();
        if now >= connects_end && ctx.recorder.borrow().in_flight == 0 {
            // The connections still opening are given up here: the drain ended now, not
            // with the last answer (see `summary::drain`).
            let mut rec = ctx.recorder.borrow_mut();
            rec.last_end = rec.last_end.max(now - ctx.start);
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Sleeps the whole thread until `wake_at`, not in the event loop: responses that arrive
/// meanwhile do not wake it. On a virtual machine every wake-up of an idle CPU costs tens of
/// microseconds, more than a request, so a thread woken by each response spends most of its
/// CPU waking up. Here it wakes when the next request is due (or at the next tick), reads
/// every response that arrived (their times are the kernel's receive stamps, so the late
/// reading does not show in latency), and sends what fell due. A wait shorter than a
/// wake-up costs is spun instead (see `pacing`).
async fn sleep_thread_until(ctx: &ThreadCtx, wake_at: Instant) {
    // First let the connections just handed requests send them (no kernel poll needed: the
    // thread just woke from one), and those just opened connect and send: on one machine a
    // connect completes within a poll or two, and a request left waiting for the next
    // wake-up would be a tick late.
    run_woken_tasks().await;
    let open = ctx.open.as_ref().expect("open-loop thread");
    for _ in 0..CONNECT_POLLS {
        if open.connecting.get() == 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    // At low rates the next due time may be seconds away: sleep in slices, reading what
    // arrived after each, so that responses, timeouts and Ctrl-C are dealt with within one.
    loop {
        let now = Instant::now();
        let slice_end = wake_at.min(now + MAX_SLEEP_SLICE);
        match open.pacing.wait(now, slice_end) {
            Wait::Spin(at) => spin_until(at),
            Wait::Sleep(at) => super::stamped::sleep_blocking_until(at),
        }
        open.growth.rested(now, Instant::now());
        // A yield makes the runtime poll the kernel for ready sockets (without blocking) and
        // run their tasks before this one resumes (to hand out what is due).
        tokio::task::yield_now().await;
        if slice_end >= wake_at || ctx.stop.is_stopped() {
            break;
        }
    }
}

/// Steps aside once so that the tasks already woken (connections just handed a request) run
/// first, without polling the kernel: tokio's `yield_now` resumes only after the I/O driver's
/// next poll, an `epoll_wait` per wake-up that would find nothing new.
async fn run_woken_tasks() {
    let mut stepped_aside = false;
    std::future::poll_fn(|cx| {
        if stepped_aside {
            return std::task::Poll::Ready(());
        }
        stepped_aside = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await
}

/// Spins on the clock until `at`: for waits shorter than a sleep's wake-up.
fn spin_until(at: Instant) {
    while Instant::now() < at {
        std::hint::spin_loop();
    }
}
