//! A closed loop's pipelined connection: N places, each sending its next request as soon as
//! its last one ended (the next is due when a place frees), all on one connection. When the
//! connection ends, the requests the server did not process are owed (`unprocessed::Owed`)
//! and sent first on the next one, as over HTTP/2; the `-n` budget is taken once per request.
//!
//! With `--stages ... --closed` the slot is connection number `index` of the closed loop's
//! stages: while the level is at or below it, it rests as an unpipelined connection does
//! (`closed::resting`): its places stop taking new requests, the connection closes once
//! their answers are in, and it opens again when the level rises. What it owes is sent
//! before it rests: those requests were due while it worked.

use super::Pipe;
use crate::engine::closed::resting;
use crate::engine::exchange::{connect, note_detail, record_failure};
use crate::engine::exchange::{Due, Traffic};
use crate::engine::unprocessed::Owed;
use crate::engine::ThreadCtx;
use crate::stats::Phase;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Drives connection slot number `index` (global, across threads) until the run ends,
/// reconnecting when its connection ends.
pub(in crate::engine) async fn drive(ctx: Rc<ThreadCtx>, index: usize) {
    // Connections that failed to open, or ended without answering anything, in a row: each
    // waits longer before the next (as a closed loop's connects do).
    let mut failures: u32 = 0;
    let owed = Owed::default();
    loop {
        if owed.is_empty() {
            match resting(&ctx, index, Instant::now()) {
                None => {}
                Some(Some(at)) => {
                    tokio::time::sleep_until(at.into()).await;
                    continue;
                }
                Some(None) => break,
            }
        }
        let Some((phase, claimed)) = owed.next_turn(&ctx, failures).await else {
            break;
        };
        let stream = match connect(&ctx, phase).await {
            Ok(s) => s,
            Err((class, detail)) => {
                failures = failures.saturating_add(1);
                note_detail(&ctx, phase, class, detail);
                record_failure(&ctx, phase, class, &Traffic::default(), false);
                owed.connect_failed(&ctx, phase, class, claimed);
                continue;
            }
        };
        if claimed && phase == Phase::Measured {
            // Not a retry: the request the connect was made for, its budget already taken.
            owed.claim();
        }
        let answered_before = ctx.progress.completed.load(Ordering::Relaxed);
        let pipe = Pipe::start(&ctx, stream);
        let places = (0..ctx.pipeline).map(|_| place(&ctx, &pipe, &owed, index));
        futures_util::future::join_all(places).await;
        let died = pipe.dead();
        pipe.close();
        let now = Instant::now();
        let stepped_down = !ctx.over(now) && resting(&ctx, index, now).is_some();
        if !died && owed.is_empty() && !stepped_down {
            break;
        }
        let answered = ctx.progress.completed.load(Ordering::Relaxed);
        // A connection closed because its slot rests is no failure, answered or not.
        failures = if answered > answered_before || (stepped_down && !died) {
            0
        } else {
            failures.saturating_add(1)
        };
    }
    let live = ctx.live_connections.get() - 1;
    ctx.live_connections.set(live);
    if live == 0 {
        ctx.all_done.notify_one();
    }
}

/// One place in the pipeline: its requests one after another, until the run or the
/// connection ends, or the slot rests with nothing owed.
async fn place(ctx: &ThreadCtx, pipe: &Pipe, owed: &Owed, index: usize) {
    loop {
        let now = Instant::now();
        if pipe.dead() || ctx.over(now) {
            return;
        }
        if owed.is_empty() && resting(ctx, index, now).is_some() {
            return;
        }
        let phase = ctx.phase_at(now);
        let Some(sends) = owed.next_request(ctx, phase) else {
            return;
        };
        let due = Due {
            phase,
            intended: None,
            noticed: now,
        };
        let outcome = pipe.send(ctx, due).await;
        // Not processed: owed, and sent first on the next connection (issued once, by that
        // send), within `unprocessed`'s bounds.
        owed.put_back(ctx, phase, sends, outcome);
        if outcome.ends_connection() {
            return;
        }
    }
}
