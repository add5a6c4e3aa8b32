//! A closed loop's pipelined connection: N places, each sending its next request as soon as
//! its last one ended (the next is due when a place frees), all on one connection. When the
//! connection ends, the requests the server did not process are owed (`unprocessed::Owed`)
//! and sent first on the next one, as over HTTP/2; the `-n` budget is taken once per request.

use super::Pipe;
use crate::engine::exchange::{connect, note_detail, record_failure};
use crate::engine::exchange::{Due, Traffic};
use crate::engine::unprocessed::Owed;
use crate::engine::ThreadCtx;
use crate::stats::Phase;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Drives one connection slot until the run ends, reconnecting when its connection ends.
pub(in crate::engine) async fn drive(ctx: Rc<ThreadCtx>) {
    // Connections that failed to open, or ended without answering anything, in a row: each
    // waits longer before the next (as a closed loop's connects do).
    let mut failures: u32 = 0;
    let owed = Owed::default();
    loop {
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
        let places = (0..ctx.pipeline).map(|_| place(&ctx, &pipe, &owed));
        futures_util::future::join_all(places).await;
        let died = pipe.dead();
        pipe.close();
        if !died && owed.is_empty() {
            break;
        }
        let answered = ctx.progress.completed.load(Ordering::Relaxed);
        failures = if answered > answered_before {
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
/// connection ends.
async fn place(ctx: &ThreadCtx, pipe: &Pipe, owed: &Owed) {
    loop {
        let now = Instant::now();
        if pipe.dead() || ctx.over(now) {
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
