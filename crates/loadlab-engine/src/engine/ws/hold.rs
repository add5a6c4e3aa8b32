//! Held connections (`--ws-mode hold`): each of `-c` connections is opened and held idle for
//! the run, reading whatever the server sends (pushes counted, its pings answered by
//! tungstenite) and pinging every `--ws-ping`; each pong is a completed exchange, timed from
//! its ping. Pings are spread over the interval by the connection's number, so that
//! thousands of connections do not ping at once. A connection the server closes or breaks is
//! a failure (its class and detail) and is opened again after the usual back-off.
//!
//! `--ws-held`'s connections, held beside an echo load, are held here too, but never pinged:
//! the echoes are what that load times. A refused or broken one still fails as an exchange.
//!
//! Both open at most `HANDSHAKES_AT_ONCE` at a time, as fast as that allows, or with
//! `--ws-connect-rate` each at its place in the run's schedule (`crate::ws::ramp`), its
//! handshake timed from then. The memory held connections take is read here: the process's
//! RSS before the first one opens and once all are open (see [`crate::ws::WsTotals`]).

use super::{close, open_socket, record_open_failure, rss_bytes, traffic};
use super::{Reads, Socket};
use crate::engine::exchange::{
    note_detail, record_failure, record_sent, record_success, Due, Traffic,
};
use crate::engine::ThreadCtx;
use crate::error::ErrorClass;
use crate::ws::ramp::due_after;
use crate::ws::{classify, closed, Failure};
use futures_util::{SinkExt as _, StreamExt as _};
use std::sync::atomic::Ordering;
use std::time::Instant;
use tokio_tungstenite::tungstenite::Message;

/// Far enough away to be never, near enough for a timer.
const NEVER: std::time::Duration = std::time::Duration::from_secs(7 * 86_400);

/// A ping waiting for its pong.
struct Owed {
    payload: [u8; 8],
    sent_at: Instant,
    due: Due,
}

/// Whose held connection this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// `--ws-mode hold`'s: pinged, each pong a timed exchange.
    Pinged,
    /// `--ws-held`'s, beside an echo load: idle, never pinged.
    Beside,
}

/// Holds connection number `index` (global) open until the run ends.
pub(super) async fn drive(ctx: &ThreadCtx, index: usize, role: Role) {
    let ws = ctx.ws.as_ref().expect("a WebSocket run");
    if let Some(rss) = rss_bytes() {
        // The first connection of the run to start reads the memory before any is open.
        let _ = ws
            .totals
            .rss_before
            .compare_exchange(0, rss, Ordering::Relaxed, Ordering::Relaxed);
    }
    ws.totals.ramp.opening_since.get_or_init(Instant::now);
    // `--ws-connect-rate`: the first opening is due at the connection's place in the whole
    // run's schedule (one never due within a run waits for its end); one after a failure
    // follows its back-off.
    let mut due = match ws.config.connect_rate {
        None => None,
        Some(rate) => match due_after(index, rate).and_then(|d| ctx.start.checked_add(d)) {
            Some(at) => Some(at),
            None => return,
        },
    };
    let mut failures = 0u32;
    let mut pings = 0u64;
    loop {
        if let Some(at) = due {
            if !wait_until(ctx, at).await {
                break;
            }
        }
        let now = Instant::now();
        if ctx.over(now) {
            break;
        }
        let phase = ctx.phase_at(now);
        let opened = {
            // Closed only when the run ends: then no connection opens any more.
            let Ok(_turn) = ws.handshakes.acquire().await else {
                break;
            };
            let started = Instant::now();
            if ctx.over(started) {
                break;
            }
            let opened = open_socket(ctx, phase, Reads::Idle).await;
            if opened.is_ok() {
                // Paced, from when it was due (the engine's rule): a wait for a turn among
                // the handshakes in flight, or a late thread, is in it.
                ws.totals.ramp.opened(due.unwrap_or(started).elapsed());
            }
            opened
        };
        due = None;
        let mut socket = match opened {
            Ok(s) => s,
            Err(failed) => {
                record_open_failure(ctx, phase, failed);
                failures += 1;
                super::after_failures(ctx, failures).await;
                continue;
            }
        };
        failures = 0;
        held(ctx, 1, role);
        let outcome = hold(ctx, &mut socket, index, role, &mut pings).await;
        held(ctx, -1, role);
        match outcome {
            Ok(()) => {
                super::load_over(ctx);
                close(socket).await;
                break;
            }
            Err((owed, (class, detail))) => {
                let phase = owed
                    .as_ref()
                    .map_or(ctx.phase_at(Instant::now()), |o| o.due.phase);
                // A broken connection with no ping owed fails as one exchange of its own.
                record_failure(ctx, phase, class, &Traffic::default(), owed.is_some());
                note_detail(ctx, phase, class, detail);
                failures += 1;
                super::after_failures(ctx, failures).await;
            }
        }
    }
}

/// Waits until `at`; false if the run ends first.
async fn wait_until(ctx: &ThreadCtx, at: Instant) -> bool {
    let wake = ctx.deadline.map_or(at, |end| end.min(at));
    tokio::select! {
        biased;
        _ = ctx.stop.stopped() => return false,
        _ = tokio::time::sleep_until(wake.into()) => {}
    }
    !ctx.over(Instant::now())
}

/// One more (or one fewer) connection held; with all of them open, the memory is read.
fn held(ctx: &ThreadCtx, change: i64, role: Role) {
    let ws = ctx.ws.as_ref().expect("a WebSocket run");
    let t = &ws.totals;
    if change < 0 {
        t.held.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    let now = t.held.fetch_add(1, Ordering::Relaxed) + 1;
    let peak = t.held_peak.fetch_max(now, Ordering::Relaxed).max(now);
    let all = match role {
        Role::Pinged => ws.connections,
        Role::Beside => ws.held_share,
    };
    if now == all as u64 && peak == now && t.rss_held.load(Ordering::Relaxed) == 0 {
        if let Some(rss) = rss_bytes() {
            t.rss_held.store(rss, Ordering::Relaxed);
        }
        if let Some(since) = t.ramp.opening_since.get() {
            let after = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
            t.ramp
                .all_open_after_ns
                .store(after.max(1), Ordering::Relaxed);
        }
    }
}

/// Holds `socket` until the run ends (`Ok`) or it fails (with the ping it owed, if any).
async fn hold(
    ctx: &ThreadCtx,
    socket: &mut Socket,
    index: usize,
    role: Role,
    pings: &mut u64,
) -> Result<(), (Option<Owed>, Failure)> {
    let ws = ctx.ws.as_ref().expect("a WebSocket run");
    let every = ws.config.ping;
    // The connection's place in the interval: 64 slots, by its number. A connection held
    // beside an echo load never pings: it wakes for the run's end (refused without one).
    let mut next_ping = match role {
        Role::Pinged => Instant::now() + every.mul_f64(((index % 64) + 1) as f64 / 64.0),
        Role::Beside => Instant::now() + NEVER,
    };
    let mut owed: Option<Owed> = None;
    let end = ctx.deadline;
    loop {
        let now = Instant::now();
        if ctx.over(now) {
            return Ok(());
        }
        if let Some(o) = &owed {
            if now >= o.sent_at + ctx.timeout {
                return Err((owed.take(), (ErrorClass::RequestTimeout, None)));
            }
        }
        let wake = match &owed {
            Some(o) => o.sent_at + ctx.timeout,
            None => next_ping,
        };
        let wake = end.map_or(wake, |d| wake.min(d));
        tokio::select! {
            biased;
            _ = ctx.stop.stopped() => return Ok(()),
            message = socket.next() => {
                let message = match message {
                    Some(Ok(m)) => m,
                    Some(Err(e)) => {
                        let (class, detail, _) = classify(&e);
                        return Err((owed.take(), (class, detail)));
                    }
                    None => {
                        let detail = "the server closed the connection without a close frame";
                        return Err((
                            owed.take(),
                            (ErrorClass::ClosedBeforeResponse, Some(detail.into())),
                        ));
                    }
                };
                match &message {
                    Message::Pong(p) => {
                        if let Some(o) = owed.take_if(|o| p[..] == o.payload[..]) {
                            let end = Instant::now();
                            record_success(ctx, &o.due, o.sent_at, socket.status, &traffic(8, 8, end));
                        }
                    }
                    Message::Ping(_) => {
                        ws.totals.server_pings.fetch_add(1, Ordering::Relaxed);
                    }
                    Message::Close(frame) => return Err((owed.take(), closed(frame.as_ref()))),
                    Message::Text(_) | Message::Binary(_) => socket.pushed(ctx, &message),
                    Message::Frame(_) => {}
                }
            }
            _ = tokio::time::sleep_until(wake.into()) => {
                if owed.is_none() && Instant::now() >= next_ping {
                    let now = Instant::now();
                    let phase = ctx.phase_at(now);
                    *pings += 1;
                    let payload = pings.to_be_bytes();
                    record_sent(ctx, phase);
                    owed = Some(Owed {
                        payload,
                        sent_at: now,
                        due: Due { phase, intended: None, noticed: now },
                    });
                    if let Err(e) = socket.send(Message::Ping(payload.to_vec().into())).await {
                        let (class, detail, _) = classify(&e);
                        return Err((owed.take(), (class, detail)));
                    }
                    next_ping = now + every;
                }
            }
        }
    }
}
