//! A connection's side of the open loop: it takes the request handed to it, then, while the
//! run goes on, the next due one itself (work-conserving); idle, it waits in the pool for the
//! dispatcher, and ends when the pool lets it go (idle too long) or the run ends.

use super::{due, Slot};
use crate::engine::exchange::{Conn, Due, Stream};
use crate::engine::ThreadCtx;
use crate::stats::Phase;
use std::rc::Rc;
use std::time::Instant;

/// What carries an open loop's requests: an HTTP/1.1 connection, or an HTTP/2 stream slot on
/// a shared connection.
pub(crate) trait Carrier {
    /// Gets ready to send (opens the connection if needed); false when that failed, in
    /// which case the failure was recorded as the request's.
    async fn connect(&mut self, ctx: &ThreadCtx, phase: Phase) -> bool;
    async fn request(&mut self, ctx: &ThreadCtx, due: Due);
    /// When the last response finished arriving, where the kernel stamped it.
    fn free_since(&self) -> Option<Instant> {
        None
    }
}

impl Carrier for Conn {
    async fn connect(&mut self, ctx: &ThreadCtx, phase: Phase) -> bool {
        Conn::connect(self, ctx, phase).await
    }
    async fn request(&mut self, ctx: &ThreadCtx, due: Due) {
        Conn::request(self, ctx, due).await
    }
    fn free_since(&self) -> Option<Instant> {
        Conn::free_since(self)
    }
}

pub(super) async fn connection(ctx: Rc<ThreadCtx>, first: Due) {
    if ctx.h3.is_some() {
        let carrier = crate::engine::h3::Slot::new();
        carry(ctx, Some(first), carrier).await
    } else if ctx.h2.is_some() {
        let carrier = crate::engine::h2::Slot::new();
        carry(ctx, Some(first), carrier).await
    } else if ctx.pipeline > 1 {
        let carrier = crate::engine::pipeline::Slot::new(ctx.clone());
        carry(ctx, Some(first), carrier).await
    } else {
        let carrier = Conn::new(&ctx);
        carry(ctx, Some(first), carrier).await
    }
}

/// A connection opened before the start (see `preopen`): it waits in the pool for its first
/// request.
pub(super) async fn opened(ctx: Rc<ThreadCtx>, stream: Stream) {
    let carrier = Conn::with_stream(&ctx, stream);
    carry(ctx, None, carrier).await
}

/// Carries requests, the first one `first` (opening the connection for it), or with none,
/// over a connection already open, from the pool.
async fn carry(ctx: Rc<ThreadCtx>, first: Option<Due>, mut conn: impl Carrier) {
    let open = ctx.open.as_ref().expect("open-loop thread");
    let deadline = ctx.deadline.expect("open loops end by time");
    let slot = Rc::new(Slot::new());
    let mut next = None;
    let mut now = Instant::now();
    if let Some(first) = first {
        let connected = conn.connect(&ctx, first.phase).await;
        open.connecting.set(open.connecting.get() - 1);
        if open.dispatcher_waiting.replace(false) {
            open.dispatcher_wake.notify_one();
        }
        // A failed connect was recorded as the first request's failure; the slot then takes
        // the next due request and tries again, while the run is on: past its end a connect
        // tried again for a request due before it made a run against a server that never
        // answers last a --connect-timeout more per try (15.6 s for -d 2s).
        now = Instant::now();
        next = if connected {
            Some(first)
        } else {
            let next = (now < deadline && !ctx.stop.is_stopped())
                .then(|| open.take_due(now))
                .flatten()
                .map(|t| due(&ctx, t, open.noticed(t, now, None)));
            if next.is_none() {
                open.busy.set(open.busy.get() - 1);
            }
            next
        };
    }
    loop {
        // When the request reached this connection: `now` when it took it itself.
        let (work, handed) = match next.take() {
            Some(w) => (w, now),
            None => {
                open.idle.put(slot.clone(), now);
                if open.dispatcher_waiting.replace(false) {
                    open.dispatcher_wake.notify_one();
                }
                loop {
                    slot.wake.notified().await;
                    // Idle too long: the pool let it go, and counted it out (dropping `conn`
                    // closes the connection).
                    if slot.closed() {
                        return;
                    }
                    if let Some(w) = slot.work.take() {
                        break (w, Instant::now());
                    }
                }
            }
        };
        let n = open.growth.sent(handed);
        conn.request(&ctx, work).await;
        // Work-conserving: take the next due request at once, if the run is still on.
        now = Instant::now();
        // The time the connection was busy, to its response's reading: what decides how many
        // connections the load needs (with a tick, responses wait for it to be read).
        open.growth.ended(n, handed, now);
        let free_at = conn.free_since();
        next = if now < deadline && !ctx.stop.is_stopped() {
            open.take_due(now)
                .map(|t| due(&ctx, t, open.noticed(t, now, free_at)))
        } else {
            None
        };
        if next.is_none() {
            open.busy.set(open.busy.get() - 1);
        }
    }
}
