//! A page: a step's requests fetched at once, as a browser does (post 004's page of 19
//! requests): over HTTP/1.1 on at most six connections to the host, each taking the next
//! request not yet taken until none is left; over HTTP/2 and HTTP/3 all of them as concurrent
//! streams on the user's one connection. The page's time, from its start to its last
//! response, is the step's latency, and each request's own time goes in the step's request
//! histogram. The user's connections are kept from one page to the next (keep-alive), like a
//! browser's.

use super::super::exchange::Due;
use super::super::ThreadCtx;
use super::mux::{self, Fields, Mux};
use super::{
    finish, new_connection, request_bytes, wait_until_due, with_step, Carrier, Lane, StepEnd, User,
};
use crate::config::ScenarioRun;
use crate::stats::Phase;
use loadlab_scenario::{CookieJar, Rng, Step, PAGE_CONNECTIONS_PER_HOST};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;

/// What the page's connections share: the next request to take, and the user's state.
struct Shared<'a> {
    next: Cell<usize>,
    failed: Cell<bool>,
    stopped: Cell<bool>,
    /// Borrowed only between awaits, never across one.
    user: RefCell<(&'a mut Vec<String>, &'a mut CookieJar, &'a mut Rng)>,
}

pub(super) async fn run(ctx: &ThreadCtx, run: &ScenarioRun, user: &mut User, i: usize) -> StepEnd {
    let step = &run.scenario.steps[i];
    // A paced or open-loop page is measured from when it was due.
    let scheduled = wait_until_due(ctx, user).await;
    let now = Instant::now();
    if ctx.over(now) {
        return StepEnd::Stop;
    }
    let start = scheduled.map_or(now, |(at, _)| at);
    let phase = ctx.phase_at(now);
    let User {
        carrier,
        jar,
        values,
        rng,
        ..
    } = user;
    let shared = Shared {
        next: Cell::new(0),
        failed: Cell::new(false),
        stopped: Cell::new(false),
        user: RefCell::new((values, jar, rng)),
    };
    match carrier {
        Carrier::Lanes(lanes) => {
            let width = step.requests.len().min(PAGE_CONNECTIONS_PER_HOST);
            while lanes.len() < width {
                lanes.push(Lane::new(ctx));
            }
            let fetches: Vec<_> = lanes[..width]
                .iter_mut()
                .map(|lane| fetch(ctx, run, step, i, phase, lane, &shared))
                .collect();
            join_all(fetches).await;
        }
        Carrier::Mux(lane) => {
            let streams: Vec<_> = step
                .requests
                .iter()
                .map(|_| stream(ctx, run, step, i, phase, &lane.mux, &shared))
                .collect();
            join_all(streams).await;
            lane.mux.step_ended();
        }
    }
    let end = Instant::now();
    if shared.stopped.get() {
        return StepEnd::Stop;
    }
    let passed = !shared.failed.get();
    if phase == Phase::Measured && passed {
        with_step(ctx, i, |s| {
            s.latency
                .saturating_record(end.saturating_duration_since(start).as_nanos() as u64)
        });
    }
    StepEnd::Done { passed, start, end }
}

/// The page's next request not yet taken, its budget taken; `None` when none is left or the
/// run is over.
fn take(ctx: &ThreadCtx, step: &Step, phase: Phase, shared: &Shared<'_>) -> Option<usize> {
    let k = shared.next.get();
    if k >= step.requests.len() {
        return None;
    }
    shared.next.set(k + 1);
    if ctx.over(Instant::now()) || (phase == Phase::Measured && !ctx.budget.take()) {
        shared.stopped.set(true);
        return None;
    }
    Some(k)
}

/// One stream of the page (HTTP/2, HTTP/3): its request on the user's connection.
async fn stream(
    ctx: &ThreadCtx,
    run: &ScenarioRun,
    step: &Step,
    i: usize,
    phase: Phase,
    mux: &Mux,
    shared: &Shared<'_>,
) {
    let Some(k) = take(ctx, step, phase, shared) else {
        return;
    };
    let due = Due {
        phase,
        intended: None,
        noticed: Instant::now(),
    };
    let mut fields = Fields::default();
    fields.reset(step.needs_body());
    let prepared = {
        let mut user = shared.user.borrow_mut();
        let (values, jar, rng) = &mut *user;
        let close = new_connection(run, rng);
        let mut buf = Vec::new();
        mux::prepare(ctx, phase, &step.requests[k], values, jar, &mut buf).map(|out| (out, close))
    };
    let sent = match prepared {
        Ok((out, close)) => match mux.send(ctx, phase, &out, close, &mut fields).await {
            Some(sent) => sent,
            None => {
                shared.stopped.set(true);
                return;
            }
        },
        Err(not_sent) => not_sent,
    };
    let mut user = shared.user.borrow_mut();
    let (values, jar, _) = &mut *user;
    let (passed, _) = finish(ctx, step, i, &due, sent, &mut fields, &mut values[..], jar);
    if !passed {
        shared.failed.set(true);
    }
}

/// One connection of the page: takes requests until none is left.
async fn fetch(
    ctx: &ThreadCtx,
    run: &ScenarioRun,
    step: &Step,
    i: usize,
    phase: Phase,
    lane: &mut Lane,
    shared: &Shared<'_>,
) {
    while let Some(k) = take(ctx, step, phase, shared) {
        let now = Instant::now();
        let request = &step.requests[k];
        let Lane { conn, wire, buf } = &mut *lane;
        let bytes = {
            let mut user = shared.user.borrow_mut();
            let (values, jar, rng) = &mut *user;
            let close = new_connection(run, rng);
            (request_bytes(request, values, jar, close, buf), close)
        };
        wire.reset(step.needs_body());
        let due = Due {
            phase,
            intended: None,
            noticed: now,
        };
        let sent = conn
            .send(ctx, phase, bytes.0, request.is_head(), bytes.1, wire)
            .await;
        let mut user = shared.user.borrow_mut();
        let (values, jar, _) = &mut *user;
        let (passed, _) = finish(ctx, step, i, &due, sent, wire, &mut values[..], jar);
        if !passed {
            shared.failed.set(true);
        }
    }
}

/// Polls every future until all are done (six connections, or a page's streams: a few
/// dozen at most, for which polling them all on each wake-up costs less than tracking which
/// woke).
async fn join_all<F: Future<Output = ()>>(futures: Vec<F>) {
    let mut futures: Vec<Option<Pin<Box<F>>>> =
        futures.into_iter().map(|f| Some(Box::pin(f))).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for slot in futures.iter_mut() {
            if let Some(f) = slot {
                if f.as_mut().poll(cx).is_ready() {
                    *slot = None;
                } else {
                    pending = true;
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await
}
