//! Scenario runs: a closed loop of virtual users, each with its own connection(s), cookie
//! jar, variables and random stream, running the scenario over and over: every step in
//! order (or, in a mix, one step per iteration), captures feeding later steps, think time
//! after each step. With `--pace` a user's requests go on its own schedule instead (one per
//! period, measured from the slot); with `--new-connection-share` that share of requests
//! asks for `Connection: close` and the next one opens a new connection.
//!
//! Every request is counted twice: in the run's own figures, as any request is (so the
//! run's latency, timeline and verdicts hold for scenarios too), and in its step's
//! ([`crate::steps`]). A constant request is written from bytes encoded at load; only a
//! request with variables set during the run, or a user holding cookies, is encoded per send,
//! into the user's buffer. Nothing here does arithmetic on time a test would need a clock for:
//! think times come from the scenario crate, pacing from [`pacer`].
//!
//! - `wire`: a step's response kept and judged; `page`: a page's requests over up to six
//!   connections at once; `pacer`: `--pace`'s slots.

pub(crate) mod pacer;
mod page;
mod wire;

use super::exchange::{back_off, record_failure, record_success, Conn, Due, Sent};
use super::ThreadCtx;
use crate::config::ScenarioRun;
use crate::error::ErrorClass;
use crate::stats::Phase;
use loadlab_scenario::{CookieJar, Mode, Request, Rng, Step, Verdict};
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

/// A virtual user.
struct User {
    index: usize,
    /// `lanes[0]` carries every step; a page opens up to six.
    lanes: Vec<Lane>,
    jar: CookieJar,
    values: Vec<String>,
    rng: Rng,
    pacer: Option<Pacer>,
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
    let scenario = &run.scenario;
    let mut user = User {
        index,
        lanes: vec![Lane::new(&ctx)],
        jar: CookieJar::default(),
        values: scenario.new_values(),
        rng: Rng::for_user(run.seed, index),
        pacer: run
            .pace
            .map(|every| Pacer::new(ctx.start, every, index, run.users)),
    };
    let mut iteration: u64 = 0;
    'run: loop {
        let began = Instant::now();
        if ended(&ctx, began) {
            break;
        }
        scenario.feed(user.index, iteration, &mut user.rng, &mut user.values);
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
            match run_step(&ctx, &run, &mut user, i).await {
                StepEnd::Stop => break 'run,
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
                think(&ctx, &mut user, &scenario.steps[i]).await;
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
        think(&ctx, &mut user, &scenario.steps[last]).await;
        iteration += 1;
    }
    let live = ctx.live_connections.get() - 1;
    ctx.live_connections.set(live);
    if live == 0 {
        ctx.all_done.notify_one();
    }
}

fn ended(ctx: &ThreadCtx, now: Instant) -> bool {
    ctx.stop.is_stopped() || ctx.deadline.is_some_and(|d| now >= d)
}

fn phase_at(ctx: &ThreadCtx, now: Instant) -> Phase {
    if now < ctx.warmup_end {
        Phase::Warmup
    } else {
        Phase::Measured
    }
}

/// The think time after a step (none when paced: the pace says when requests go).
async fn think(ctx: &ThreadCtx, user: &mut User, step: &Step) {
    if user.pacer.is_some() || step.think.is_zero() {
        return;
    }
    let until = Instant::now() + step.think.sample(&mut user.rng);
    // Never past the end of the run: the loop then sees the deadline and stops.
    let until = ctx.deadline.map_or(until, |d| until.min(d));
    tokio::time::sleep_until(until.into()).await;
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
    if step.page {
        return page::run(ctx, run, user, i).await;
    }
    let intended = match &mut user.pacer {
        Some(p) => {
            let due = p.next_due();
            if due > Instant::now() {
                tokio::time::sleep_until(due.into()).await;
            }
            Some(due)
        }
        None => None,
    };
    let now = Instant::now();
    if ended(ctx, now) {
        return StepEnd::Stop;
    }
    let phase = phase_at(ctx, now);
    if phase == Phase::Measured && !ctx.budget.take() {
        return StepEnd::Stop;
    }
    let close = new_connection(run, &mut user.rng);
    let User {
        lanes, jar, values, ..
    } = user;
    let Lane { conn, wire, buf } = &mut lanes[0];
    let request = &step.requests[0];
    wire.reset(step.needs_body());
    let bytes = request_bytes(request, values, jar, close, buf);
    let due = Due {
        phase,
        intended,
        noticed: now,
    };
    let sent = conn
        .send(ctx, phase, bytes, request.is_head(), close, wire)
        .await;
    let (passed, end) = finish(ctx, step, i, &due, sent, wire, values, jar);
    if !passed {
        if let Some(wait) = conn.backoff() {
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
    wire: &mut Wire,
    values: &mut [String],
    jar: &mut CookieJar,
) -> (bool, Instant) {
    let measured = due.phase == Phase::Measured;
    match sent {
        Sent::NotConnected(class) => {
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
            let read = wire.read(step, status, traffic.received, values, jar);
            let passed = read.verdict == Verdict::Pass;
            if passed {
                record_success(ctx, due, sent_at, status, &traffic);
            } else {
                let class = match read.verdict {
                    Verdict::BadStatus(_) => ErrorClass::Status,
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
