//! The open loop of a WebSocket run (`--rate`, `--stages`): messages (echo) or handshakes
//! (connect) go out on the schedule whatever the server does, each timed from when it was
//! due. As a scenario's open loop does (`scenario::open`), a dispatcher sleeps on the precise
//! timer until the next is due and starts a worker for it while fewer than
//! `--max-connections` run; a worker that finishes takes the next due one itself (no
//! hand-off), so when the server falls behind the wait for a connection counts in the
//! latency. Echo workers keep their connections open for the next worker (one message at a
//! time on each: an echo is matched to the one message owed).

use super::{close, echo, open_socket, record_open_failure, storm, Reads, Socket, CLOSE_GRACE};
use crate::engine::exchange::Due;
use crate::engine::open::dispatch::dispatch;
use crate::engine::ThreadCtx;
use crate::ws::WsMode;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;
use tokio::sync::Notify;

/// What the dispatcher and its workers share.
#[derive(Default)]
struct Pool {
    /// Echo: connections of finished workers, kept open for the next ones.
    idle: RefCell<Vec<Socket>>,
    running: Cell<usize>,
    /// The dispatcher waits here while every worker slot is taken.
    freed: Notify,
}

/// Starts this thread's share of the schedule until it ends, then waits for the running
/// workers (bounded by `--timeout`), then closes the connections, together.
pub(in crate::engine) async fn run(ctx: Rc<ThreadCtx>) {
    let pool = Rc::new(Pool::default());
    dispatch(&ctx, &pool.running, &pool.freed, |at| {
        super::super::spawn_guarded(&ctx, work(ctx.clone(), pool.clone(), at));
    })
    .await;
    super::load_over(&ctx);
    let idle = std::mem::take(&mut *pool.idle.borrow_mut());
    say_goodbyes(idle).await;
}

/// The most goodbyes of one thread awaited at once: each is a read of a connection already
/// open, but a pool of thousands is not given thousands of futures at once.
const GOODBYES_AT_ONCE: usize = 256;

/// Says goodbye on the idle connections together, within [`CLOSE_GRACE`] in all (as a closed
/// loop's connections do, each in its own task): each goodbye waits up to 200 ms for the
/// server's answer, so said one after another they held a run's end 200 ms a connection (2 s
/// for ten idle ones against a server slow to answer). Past the grace, the connections left
/// are dropped (their TCP connections end with a FIN).
async fn say_goodbyes(idle: Vec<Socket>) {
    use futures_util::StreamExt as _;
    let all = futures_util::stream::iter(idle).for_each_concurrent(GOODBYES_AT_ONCE, close);
    let _ = tokio::time::timeout(CLOSE_GRACE, all).await;
}

/// Carries the exchange due at `at`, then each one that fell due meanwhile.
async fn work(ctx: Rc<ThreadCtx>, pool: Rc<Pool>, mut at: Instant) {
    let open = ctx.open.as_ref().expect("open-loop thread");
    let mode = ctx.ws.as_ref().expect("a WebSocket run").config.mode;
    let mut socket = pool.idle.borrow_mut().pop();
    loop {
        let now = Instant::now();
        let due = Due {
            phase: ctx.phase_at(at),
            intended: Some(at),
            noticed: now,
        };
        match mode {
            WsMode::Connect => {
                storm::handshake(&ctx, &due).await;
            }
            // Refused when the config was checked: hold mode runs a closed loop.
            WsMode::Hold => {}
            WsMode::Echo => {
                if socket.is_none() {
                    match open_socket(&ctx, due.phase, Reads::Echoes).await {
                        Ok(s) => socket = Some(s),
                        Err(failed) => record_open_failure(&ctx, due.phase, failed),
                    }
                }
                if let Some(s) = socket.as_mut() {
                    if !echo::round_trip(&ctx, s, &due).await {
                        socket = None;
                    }
                }
            }
        }
        let now = Instant::now();
        if ctx.over(now) {
            break;
        }
        match open.take_due_at(now) {
            Some(next) => at = next,
            None => break,
        }
    }
    if let Some(s) = socket {
        pool.idle.borrow_mut().push(s);
    }
    pool.running.set(pool.running.get() - 1);
    pool.freed.notify_one();
}
