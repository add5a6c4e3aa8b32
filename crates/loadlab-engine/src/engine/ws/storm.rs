//! Connection storms (`--ws-mode connect`): each exchange is a new connection's TCP connect,
//! TLS handshake and upgrade, timed from when it was due (in an open loop, `--rate`
//! connections per second), then closed with code 1000, counted under its upgrade's status
//! (101, or over HTTP/2 its CONNECT's 2xx). A refused upgrade is a failure
//! (`ws_refused`) with its HTTP status counted.

use super::{close, open_socket, record_open_failure, traffic, Reads};
use crate::engine::exchange::{record_sent, record_success, Due};
use crate::engine::ThreadCtx;
use std::time::Instant;

/// The closed loop: each connection slot opens, upgrades and closes, again and again.
pub(super) async fn drive(ctx: &ThreadCtx) {
    let mut failures = 0u32;
    loop {
        let now = Instant::now();
        if ctx.over(now) {
            break;
        }
        let Some(due) = ctx.due_now(now) else {
            break;
        };
        if handshake(ctx, &due).await {
            failures = 0;
        } else {
            failures += 1;
            super::after_failures(ctx, failures).await;
        }
    }
}

/// One handshake, recorded; whether it worked.
pub(super) async fn handshake(ctx: &ThreadCtx, due: &Due) -> bool {
    let started = Instant::now();
    match open_socket(ctx, due.phase, Reads::Idle).await {
        Ok(socket) => {
            let end = Instant::now();
            // Counted as sent once it worked (a failed one is counted by its failure).
            record_sent(ctx, due.phase);
            record_success(ctx, due, started, socket.status, &traffic(0, 0, end));
            close(socket).await;
            true
        }
        Err(failed) => {
            record_open_failure(ctx, due.phase, failed);
            false
        }
    }
}
