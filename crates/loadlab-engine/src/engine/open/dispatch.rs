//! The open loop's dispatcher for loads whose workers take the next due item themselves: a
//! scenario's iterations and a WebSocket run's messages or handshakes. It sleeps on the
//! precise timer until the next item is due and starts a worker for it while fewer than
//! `--max-connections` run; with every slot taken it waits for one to free (a finishing worker
//! takes what is due itself, with no hand-off, so when the server falls behind the wait for
//! a slot counts in the latency). Plain HTTP has a dispatcher of its own (`open::run`):
//! idle connections, pre-opening and whole-thread sleeps.

use crate::engine::timer::PreciseTimer;
use crate::engine::ThreadCtx;
use std::cell::Cell;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Runs the schedule until it ends (its deadline, a stop, nothing more due), calling
/// `start(at)` for each item due at `at` that gets a slot, `running` counting the workers
/// started and not finished (the caller's workers take one off and notify `freed`); then
/// waits for the running workers, which end at the deadline or with their request (bounded
/// by `--timeout`).
pub(in crate::engine) async fn dispatch(
    ctx: &ThreadCtx,
    running: &Cell<usize>,
    freed: &Notify,
    mut start: impl FnMut(Instant),
) {
    let open = ctx.open.as_ref().expect("open-loop thread");
    let deadline = ctx.deadline.expect("open loops end by time");
    // A timerfd wakes within microseconds of a due time; tokio's timer within a millisecond.
    let mut timer = PreciseTimer::new().ok();
    loop {
        let now = Instant::now();
        if ctx.over(now) {
            break;
        }
        let Some(next) = open.next_due() else {
            break;
        };
        if next > now {
            let wake_at = next.min(deadline);
            let precise = match timer.as_mut() {
                Some(t) => t.sleep_until(wake_at).await.is_ok(),
                None => false,
            };
            if !precise {
                tokio::time::sleep_until(wake_at.into()).await;
            }
            continue;
        }
        if running.get() < open.cap() {
            let Some(at) = open.take_due_at(now) else {
                continue;
            };
            running.set(running.get() + 1);
            start(at);
        } else {
            // Every slot is taken: a finishing worker takes what is due itself; look again
            // when one ends with nothing due (or at the deadline).
            tokio::select! {
                _ = freed.notified() => {}
                _ = tokio::time::sleep_until(deadline.into()) => {}
            }
        }
    }
    while running.get() > 0 && !ctx.stop.is_stopped() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
