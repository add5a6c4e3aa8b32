//! The open loop of a WebSocket run (`--rate`, `--stages`): messages (echo) or handshakes
//! (connect) go out on the schedule whatever the server does, each timed from when it was
//! due. As a scenario's open loop does (`scenario::open`), a dispatcher sleeps on the precise
//! timer until the next is due and starts a worker for it while fewer than
//! `--max-connections` run; a worker that finishes takes the next due one itself (no
//! hand-off), so when the server falls behind the wait for a connection counts in the
//! latency. Echo workers keep their connections open for the next worker (one message at a
//! time on each: an echo is matched to the one message owed).

use super::{close, echo, open_socket, record_open_failure, storm, Reads, Socket};
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
/// workers (bounded by `--timeout`), then closes the connections.
pub(in crate::engine) async fn run(ctx: Rc<ThreadCtx>) {
    let pool = Rc::new(Pool::default());
    dispatch(&ctx, &pool.running, &pool.freed, |at| {
        super::super::spawn_guarded(&ctx, work(ctx.clone(), pool.clone(), at));
    })
    .await;
    super::load_over(&ctx);
    let idle = std::mem::take(&mut *pool.idle.borrow_mut());
    for socket in idle {
        close(socket).await;
    }
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
