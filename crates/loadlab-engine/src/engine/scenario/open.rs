//! An open loop of scenario iterations: `--rate` (or `--stages`) counts iterations, and each
//! starts on the schedule whatever the server does. Each iteration is a new virtual user (its
//! own cookie jar, variables, feeder row and random stream) on a connection kept alive from
//! the thread's pool (`--new-connection-share` sets the policy, as in a closed loop). At most
//! `--max-connections` iterations run at once per thread; one that falls due while all are
//! running waits for the first to finish, which takes it at once (no hand-off), and the wait
//! counts in its first step's time.
//!
//! Every step is measured from when it was due: the first from the iteration's slot, each
//! later one from the end of the step before plus its think time. So a stall shows in every
//! step it delays, and neither think time nor an earlier step hides it, as it would in a
//! closed loop whose users simply wait.
//!
//! Iterations due by the end of the schedule but never started are counted as not sent.

use super::{run_iteration, Carrier, Slot, User};
use crate::config::ScenarioRun;
use crate::engine::open::dispatch::dispatch;
use crate::engine::ThreadCtx;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Notify;

/// What a thread's dispatcher and its running iterations share.
struct Pool {
    /// Connections of finished iterations, kept alive for the next ones.
    idle: RefCell<Vec<Carrier>>,
    running: Cell<usize>,
    /// Iterations this thread started: the next one is the run's iteration
    /// `first + started * step` (its user index, feeder row and random stream).
    started: Cell<usize>,
    numbering: (usize, usize),
    /// The dispatcher waits here while every iteration slot is taken.
    freed: Notify,
}

impl Pool {
    fn next_index(&self) -> usize {
        let n = self.started.get();
        self.started.set(n + 1);
        self.numbering.0 + n * self.numbering.1
    }
}

/// Starts this thread's share of the schedule's iterations until it ends, then waits for the
/// running ones. `numbering`: this thread's place among the run's (its schedule holds
/// iterations `first`, `first + step`, ...).
pub(in crate::engine) async fn run(
    ctx: Rc<ThreadCtx>,
    run: Arc<ScenarioRun>,
    numbering: (usize, usize),
) {
    let pool = Rc::new(Pool {
        idle: RefCell::new(Vec::new()),
        running: Cell::new(0),
        started: Cell::new(0),
        numbering,
        freed: Notify::new(),
    });
    dispatch(&ctx, &pool.running, &pool.freed, |at| {
        let slot = Slot { at, waited: false };
        super::super::spawn_guarded(&ctx, iterate(ctx.clone(), run.clone(), pool.clone(), slot));
    })
    .await;
}

/// Runs iterations, the first due at `slot`, then each one that fell due meanwhile
/// (work-conserving: when the target falls behind, due iterations wait for a running one to
/// end, and that wait is in their first step's time).
async fn iterate(ctx: Rc<ThreadCtx>, run: Arc<ScenarioRun>, pool: Rc<Pool>, mut slot: Slot) {
    let open = ctx.open.as_ref().expect("open-loop thread");
    let mut carrier = pool
        .idle
        .borrow_mut()
        .pop()
        .unwrap_or_else(|| Carrier::new(&ctx));
    // WebSocket steps' goodbyes, finished in the background while iterations go on.
    let mut closing = Vec::new();
    loop {
        let index = pool.next_index();
        let mut user = User::new(&ctx, &run, index, carrier);
        user.open = true;
        user.due = Some(slot);
        run.scenario.feed(index, 0, &mut user.rng, &mut user.values);
        let on = run_iteration(&ctx, &run, &mut user).await;
        closing.retain(|h: &tokio::task::JoinHandle<()>| !h.is_finished());
        closing.append(&mut user.closing);
        carrier = user.carrier;
        let now = Instant::now();
        if !on || ctx.over(now) {
            break;
        }
        match open.take_due_at(now) {
            Some(at) => slot = Slot { at, waited: true },
            None => break,
        }
    }
    for goodbye in closing {
        let _ = goodbye.await;
    }
    pool.idle.borrow_mut().push(carrier);
    pool.running.set(pool.running.get() - 1);
    pool.freed.notify_one();
}
