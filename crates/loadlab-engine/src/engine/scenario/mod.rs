//! Scenario runs: a closed loop of virtual users, each with its own connection(s), cookie
//! jar, variables and random stream, running the scenario over and over: every step in
//! order (or, in a mix, one step per iteration), captures feeding later steps, think time
//! after each step. With `--pace` a user's requests go on its own schedule instead (one per
//! period, measured from the slot); with `--new-connection-share` that share of requests
//! asks for `Connection: close` and the next one opens a new connection.
//!
//! Over HTTP/1.1 a user holds up to six connections (`Lane`s: one for its steps, more for a
//! page); over HTTP/2 and HTTP/3 one connection, a stream per request (`mux`). Everything
//! else, judging a response included (`judge`), is the same for the three protocols.
//!
//! Every request is counted twice: in the run's own figures, as any request is (so the
//! run's latency, timeline and verdicts hold for scenarios too), and in its step's
//! ([`crate::steps`]). A constant request is written from bytes encoded at load; only a
//! request with variables set during the run, or a user holding cookies, is encoded per send,
//! into the user's buffer. Nothing here does arithmetic on time a test would need a clock for:
//! think times come from the scenario crate, pacing from [`pacer`].
//!
//! - `grpc`: a gRPC step, a unary call on the user's HTTP/2 connection;
//! - `ws`: a WebSocket step, a WebSocket opened, its messages answered, then closed;
//! - `judge`: a step's response judged (cookies, decompression, captures, checks), for
//!   every protocol; `wire`: an HTTP/1.1 response kept for it; `mux`: a user's HTTP/2 or
//!   HTTP/3 connection and its responses; `page`: a page's requests at once (over up to six
//!   connections, or as streams); `pacer`: `--pace`'s slots; `open`: an open loop of
//!   iterations (`--rate`), each a new user whose steps are measured from when they were due.

mod grpc;
mod judge;
mod mux;
pub(in crate::engine) mod open;
pub(crate) mod pacer;
mod page;
mod wire;
mod ws;

use super::exchange::{back_off, record_failure, record_success, Conn, Due, Sent};
use super::ThreadCtx;
use crate::config::ScenarioRun;
use crate::error::ErrorClass;
use crate::stats::Phase;
use judge::Kept;
use loadlab_scenario::{CookieJar, Mode, Request, Rng, Step, Verdict};
use mux::MuxLane;
use pacer::Pacer;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;
use wire::Wire;

/// One connection of a virtual user, with what a request on it needs.
struct Lane {
    conn: Conn,
    wire: Wire,
    /// The request encoded for this send, when it is not a constant one.
    buf: Vec<u8>,
}

impl Lane {
    fn new(ctx: &ThreadCtx) -> Lane {
        Lane {
            conn: Conn::new(ctx),
            wire: Wire::default(),
            buf: Vec::new(),
        }
    }
}

/// How a virtual user reaches the server: kept from one iteration to the next (an open
/// loop's finished iterations hand theirs on).
enum Carrier {
    /// HTTP/1.1: `lanes[0]` carries every step; a page opens up to six.
    Lanes(Vec<Lane>),
    /// HTTP/2 or HTTP/3: one connection, a stream per request.
    Mux(Box<MuxLane>),
}

impl Carrier {
    fn new(ctx: &ThreadCtx) -> Carrier {
        if ctx.h2.is_some() || ctx.h3.is_some() {
            Carrier::Mux(Box::default())
        } else {
            Carrier::Lanes(vec![Lane::new(ctx)])
        }
    }
}

/// A virtual user.
struct User {
    index: usize,
    carrier: Carrier,
    jar: CookieJar,
    values: Vec<String>,
    rng: Rng,
    pacer: Option<Pacer>,
    /// Open loop: when the next step is due (the iteration's slot, then each step's end
    /// plus its think time), and whether it was already waiting for a free iteration slot
    /// when the dispatcher got to it. `None` in a closed loop.
    due: Option<Slot>,
    /// Open loop: the user lives for one iteration, and think time moves `due` on instead
    /// of being slept through.
    open: bool,
    /// WebSocket steps' goodbyes still under way (see `ws`): awaited when the user ends.
    closing: Vec<tokio::task::JoinHandle<()>>,
}

/// When an open loop's step is due.
#[derive(Debug, Clone, Copy)]
struct Slot {
    at: Instant,
    /// Every iteration slot was busy when it fell due: the wait is the target's doing, not
    /// the generator's lateness.
    waited: bool,
}

impl User {
    fn new(ctx: &ThreadCtx, run: &ScenarioRun, index: usize, carrier: Carrier) -> User {
        User {
            index,
            carrier,
            jar: CookieJar::default(),
            values: run.scenario.new_values(),
            rng: Rng::for_user(run.seed, index),
            pacer: run
                .pace
                .map(|every| Pacer::new(ctx.start, every, index, run.users)),
            due: None,
            open: false,
            closing: Vec::new(),
        }
    }
}

/// How a step ended.
enum StepEnd {
    /// The run is over (deadline, stop, or the request budget spent).
    Stop,
    /// `start`: when the step was due (or first sent); `end`: its last response.
    Done {
        passed: bool,
        start: Instant,
        end: Instant,
    },
}

/// Runs virtual user number `index` (across threads) until the run ends.
pub(super) async fn drive(ctx: Rc<ThreadCtx>, run: Arc<ScenarioRun>, index: usize) {
    let mut user = User::new(&ctx, &run, index, Carrier::new(&ctx));
    let mut iteration: u64 = 0;
    while !ctx.over(Instant::now()) {
        run.scenario
            .feed(user.index, iteration, &mut user.rng, &mut user.values);
        if !run_iteration(&ctx, &run, &mut user).await {
            break;
        }
        iteration += 1;
    }
    for goodbye in user.closing {
        let _ = goodbye.await;
    }
    let live = ctx.live_connections.get() - 1;
    ctx.live_connections.set(live);
    if live == 0 {
        ctx.all_done.notify_one();
    }
}

/// One pass through the scenario (every step in order, or one step of a mix), with its
/// iteration time recorded; false when the run ended during it.
async fn run_iteration(ctx: &ThreadCtx, run: &ScenarioRun, user: &mut User) -> bool {
    let scenario = &run.scenario;
    let began = user.due.map_or_else(Instant::now, |d| d.at);
    let steps = match scenario.mode {
        Mode::Sequence => 0..scenario.steps.len(),
        Mode::Mix => {
            let i = scenario.pick(&mut user.rng);
            i..i + 1
        }
    };
    let last = steps.end - 1;
    let (mut passed, mut first_start, mut last_end) = (true, None, began);
    for i in steps {
        match run_step(ctx, run, user, i).await {
            StepEnd::Stop => return false,
            StepEnd::Done {
                passed: p,
                start,
                end,
            } => {
                passed &= p;
                first_start.get_or_insert(start);
                last_end = end;
            }
        }
        if i != last {
            think(ctx, user, &scenario.steps[i], last_end).await;
        }
    }
    if began >= ctx.warmup_end {
        let mut rec = ctx.recorder.borrow_mut();
        if let Some(stats) = rec.scenario.as_mut() {
            let start = first_start.unwrap_or(began);
            stats
                .iteration
                .saturating_record(last_end.saturating_duration_since(start).as_nanos() as u64);
            stats.iterations += 1;
            stats.iterations_failed += u64::from(!passed);
        }
    }
    // A closed loop's user thinks before its next iteration; an open loop's iteration ends
    // with its last response (the next one is another user, due on the schedule).
    if !user.open {
        think(ctx, user, &scenario.steps[last], last_end).await;
    }
    true
}

/// The think time after a step that ended at `end` (none when paced: the pace says when
/// requests go). In an open loop the next step is then due, and measured from that moment;
/// in a closed loop the user sleeps through it.
async fn think(ctx: &ThreadCtx, user: &mut User, step: &Step, end: Instant) {
    if user.pacer.is_some() {
        return;
    }
    let pause = if step.think.is_zero() {
        std::time::Duration::ZERO
    } else {
        step.think.sample(&mut user.rng)
    };
    if user.open {
        user.due = Some(Slot {
            at: end + pause,
            waited: false,
        });
        return;
    }
    if pause.is_zero() {
        return;
    }
    // Never past the end of the run: the loop then sees the deadline and stops.
    let until = Instant::now() + pause;
    let until = ctx.deadline.map_or(until, |d| until.min(d));
    tokio::time::sleep_until(until.into()).await;
}

/// When the step about to go was due, after waiting for that moment: its pace slot, or in
/// an open loop its slot in the iteration. Returns the due time and when the generator got
/// to it (for its scheduler lag), or `None` with no schedule (a closed loop's step is
/// measured from its send).
async fn wait_until_due(ctx: &ThreadCtx, user: &mut User) -> Option<(Instant, Instant)> {
    let slot = match &mut user.pacer {
        Some(p) => Slot {
            at: p.next_due(),
            waited: false,
        },
        None => user.due.take()?,
    };
    if slot.at > Instant::now() {
        let until = ctx.deadline.map_or(slot.at, |d| slot.at.min(d));
        tokio::time::sleep_until(until.into()).await;
    }
    let noticed = if slot.waited {
        slot.at
    } else {
        Instant::now().max(slot.at)
    };
    Some((slot.at, noticed))
}

/// Whether this request goes on a connection of its own (`Connection: close`).
fn new_connection(run: &ScenarioRun, rng: &mut Rng) -> bool {
    let share = run.new_connection_share;
    share >= 1.0 || (share > 0.0 && rng.unit() < share)
}

/// The bytes to send: encoded at load when the request is constant and the user holds no
/// cookie, else encoded now into `buf`.
fn request_bytes<'a>(
    request: &'a Request,
    values: &[String],
    jar: &CookieJar,
    close: bool,
    buf: &'a mut Vec<u8>,
) -> &'a [u8] {
    match (request.constant_bytes(close), jar.header()) {
        (Some(bytes), None) => bytes,
        (_, cookie) => {
            request.encode(values, cookie, close, buf);
            buf
        }
    }
}

async fn run_step(ctx: &ThreadCtx, run: &ScenarioRun, user: &mut User, i: usize) -> StepEnd {
    let step = &run.scenario.steps[i];
    if step.ws.is_some() {
        return ws::run(ctx, run, user, i).await;
    }
    if step.page {
        return page::run(ctx, run, user, i).await;
    }
    let scheduled = wait_until_due(ctx, user).await;
    let intended = scheduled.map(|(at, _)| at);
    let now = Instant::now();
    if ctx.over(now) {
        return StepEnd::Stop;
    }
    let phase = ctx.phase_at(now);
    if phase == Phase::Measured && !ctx.budget.take() {
        return StepEnd::Stop;
    }
    let close = new_connection(run, &mut user.rng);
    let User {
        carrier,
        jar,
        values,
        ..
    } = user;
    let request = &step.requests[0];
    let due = Due {
        phase,
        intended,
        noticed: scheduled.map_or(now, |(_, noticed)| noticed),
    };
    let (passed, end, backoff) = match carrier {
        Carrier::Lanes(lanes) => {
            let Lane { conn, wire, buf } = &mut lanes[0];
            wire.reset(step.needs_body());
            let bytes = request_bytes(request, values, jar, close, buf);
            let sent = conn
                .send(ctx, phase, bytes, request.is_head(), close, wire)
                .await;
            let (passed, end) = finish(ctx, step, i, &due, sent, wire, values, jar);
            (passed, end, conn.backoff())
        }
        Carrier::Mux(lane) if step.grpc.is_some() => {
            let call = run
                .grpc_call(i)
                .expect("a gRPC step's call is prepared with the run");
            let Some((sent, mut read)) =
                grpc::call(ctx, phase, step, i, call, lane, values, close).await
            else {
                return StepEnd::Stop;
            };
            let (passed, end) = finish(ctx, step, i, &due, sent, &mut read, values, jar);
            lane.mux.step_ended();
            (passed, end, lane.mux.backoff())
        }
        Carrier::Mux(lane) => {
            let MuxLane { mux, fields, buf } = &mut **lane;
            fields.reset(step.needs_body());
            let sent = match mux::prepare(ctx, phase, request, values, jar, buf) {
                Ok(out) => match mux.send(ctx, phase, &out, close, fields).await {
                    Some(sent) => sent,
                    None => return StepEnd::Stop,
                },
                Err(not_sent) => not_sent,
            };
            let (passed, end) = finish(ctx, step, i, &due, sent, fields, values, jar);
            mux.step_ended();
            (passed, end, mux.backoff())
        }
    };
    if !passed {
        if let Some(wait) = backoff {
            back_off(ctx, wait).await;
        }
    }
    StepEnd::Done {
        passed,
        start: intended.unwrap_or(now),
        end,
    }
}

/// Records a sent request in the run's figures and its step's; true when it passed. Shared
/// by single steps and pages (`per_request`: a page's requests also go in its request
/// histogram, and its own latency is the group's).
#[allow(clippy::too_many_arguments)]
fn finish(
    ctx: &ThreadCtx,
    step: &Step,
    i: usize,
    due: &Due,
    sent: Sent,
    kept: &mut impl Kept,
    values: &mut [String],
    jar: &mut CookieJar,
) -> (bool, Instant) {
    let measured = due.phase == Phase::Measured;
    match sent {
        Sent::Unsent(class) => {
            if measured {
                with_step(ctx, i, |s| {
                    s.issued += 1;
                    s.fail(class);
                });
            }
            (false, Instant::now())
        }
        Sent::Failed { class, traffic } => {
            record_failure(ctx, due.phase, class, &traffic, true);
            if measured {
                with_step(ctx, i, |s| {
                    s.issued += 1;
                    s.fail(class);
                    s.bytes_sent += traffic.sent;
                    s.bytes_received += traffic.received;
                    s.bytes_decoded += traffic.received;
                });
            }
            (false, Instant::now())
        }
        Sent::Done {
            status,
            sent_at,
            end,
            traffic,
        } => {
            let read = kept.read(step, status, traffic.received, values, jar);
            let passed = read.verdict == Verdict::Pass;
            if passed {
                record_success(ctx, due, sent_at, status, &traffic);
            } else {
                let class = match read.verdict {
                    Verdict::BadStatus(_) => ErrorClass::Status,
                    Verdict::BadGrpcStatus(code) => crate::grpc::steps::class_of(code),
                    _ => ErrorClass::CheckFailed,
                };
                record_failure(ctx, due.phase, class, &traffic, true);
                ctx.recorder.borrow_mut().phase(due.phase).status[status as usize % 1000] += 1;
            }
            if measured {
                let start = due.intended.unwrap_or(sent_at);
                let latency_ns = end.saturating_duration_since(start).as_nanos() as u64;
                with_step(ctx, i, |s| {
                    s.issued += 1;
                    s.response(status, read.encoding);
                    s.bytes_sent += traffic.sent;
                    s.bytes_received += traffic.received;
                    s.bytes_decoded += read.decoded_bytes;
                    if step.page {
                        s.requests.saturating_record(latency_ns);
                    }
                    match read.verdict {
                        Verdict::Pass => {
                            s.completed += 1;
                            if !step.page {
                                s.latency.saturating_record(latency_ns);
                            }
                        }
                        Verdict::BadStatus(_) => s.fail(ErrorClass::Status),
                        Verdict::BadGrpcStatus(code) => s.fail(crate::grpc::steps::class_of(code)),
                        Verdict::CheckFailed { index, message } => s.check_failed(index, message),
                    }
                });
            }
            (passed, end)
        }
    }
}

fn with_step(ctx: &ThreadCtx, i: usize, f: impl FnOnce(&mut crate::steps::StepStats)) {
    let mut rec = ctx.recorder.borrow_mut();
    if let Some(stats) = rec.scenario.as_mut() {
        f(&mut stats.steps[i]);
    }
}
