//! Echo round trips: a message sent, its echo awaited (the same bytes, of the same kind),
//! timed from when it was due. Messages that are not the echo are the server's pushes,
//! counted apart; the server's pings are answered by tungstenite. A failure (a close frame,
//! a protocol error, no echo within `--timeout`) fails the message and drops the connection,
//! so that a late echo is never taken for the next message's.

use super::{close, open_socket, record_open_failure, traffic, Reads, Socket};
use crate::engine::exchange::{
    note_detail, record_failure, record_sent, record_success, Due, Traffic,
};
use crate::engine::ThreadCtx;
use crate::error::ErrorClass;
use crate::stats::Phase;
use crate::ws::{closed, failure, next_message, Failure};
use futures_util::SinkExt as _;
use std::sync::atomic::Ordering;
use std::time::Instant;
use tokio_tungstenite::tungstenite::Message;

/// The closed loop: each connection sends its next message when the last one's echo came.
pub(super) async fn drive(ctx: &ThreadCtx) {
    let mut socket: Option<Socket> = None;
    let mut failures = 0u32;
    loop {
        let now = Instant::now();
        if ctx.over(now) {
            break;
        }
        let Some(due) = ctx.due_now(now) else {
            break;
        };
        let phase = due.phase;
        if socket.is_none() {
            // At most `HANDSHAKES_AT_ONCE` at a time, as held connections open (see
            // `WsShared::handshakes`): `-c` thousands at once would overflow a backlog.
            let opened = match ctx
                .ws
                .as_ref()
                .expect("a WebSocket run")
                .handshakes
                .acquire()
                .await
            {
                Ok(_turn) => open_socket(ctx, phase, Reads::Echoes).await,
                Err(_) => break,
            };
            match opened {
                Ok(s) => {
                    failures = 0;
                    socket = Some(s);
                }
                Err(failed) => {
                    record_open_failure(ctx, phase, failed);
                    failures += 1;
                    super::after_failures(ctx, failures).await;
                    continue;
                }
            }
        }
        let s = socket.as_mut().expect("opened above");
        if !round_trip(ctx, s, &due).await {
            socket = None;
        }
    }
    super::load_over(ctx);
    if let Some(s) = socket {
        close(s).await;
    }
}

/// One message and its echo on `socket`, recorded; false when the connection cannot carry
/// another.
pub(super) async fn round_trip(ctx: &ThreadCtx, socket: &mut Socket, due: &Due) -> bool {
    let ws = ctx.ws.as_ref().expect("a WebSocket run");
    let size = ws.config.payload.len();
    let sent_at = Instant::now();
    record_sent(ctx, due.phase);
    let answer = tokio::time::timeout(ctx.timeout, async {
        socket
            .send(ws.config.message())
            .await
            .map_err(|e| failure(&e))?;
        await_echo(ctx, socket).await
    })
    .await;
    match answer {
        Ok(Ok(end)) => {
            record_success(ctx, due, sent_at, socket.status, &traffic(size, size, end));
            true
        }
        Ok(Err((class, detail))) => {
            fail(ctx, due.phase, class, detail, size);
            false
        }
        Err(_) => {
            fail(ctx, due.phase, ErrorClass::RequestTimeout, None, size);
            false
        }
    }
}

fn fail(ctx: &ThreadCtx, phase: Phase, class: ErrorClass, detail: Option<String>, size: usize) {
    let sent = Traffic {
        sent: size as u64,
        ..Traffic::default()
    };
    record_failure(ctx, phase, class, &sent, true);
    note_detail(ctx, phase, class, detail);
}

/// Reads until the echo of the message sent arrives (when it ends), counting pushes.
async fn await_echo(ctx: &ThreadCtx, socket: &mut Socket) -> Result<Instant, Failure> {
    let ws = ctx.ws.as_ref().expect("a WebSocket run");
    let payload = &ws.config.payload;
    loop {
        let message = next_message(&mut **socket).await?;
        let echoed = match &message {
            Message::Text(t) => !ws.config.binary && t.as_bytes() == &payload[..],
            Message::Binary(b) => ws.config.binary && b == payload,
            Message::Close(frame) => return Err(closed(frame.as_ref())),
            Message::Ping(_) => {
                ws.totals.server_pings.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            Message::Pong(_) | Message::Frame(_) => continue,
        };
        if echoed {
            return Ok(Instant::now());
        }
        socket.pushed(ctx, &message);
    }
}
