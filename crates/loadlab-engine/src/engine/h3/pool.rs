//! An open loop's HTTP/3 connections: stream slots share a thread's pooled connections
//! (`engine::pool`, as HTTP/2's), each carrying up to `--streams` of them; this module sends
//! the request. It must not send again what the server did not process: the open loop's
//! schedule moves on.

use super::super::exchange::{record, Due};
use super::super::pool::Attached;
use super::super::ThreadCtx;
use super::{one_request, open_connection, Handle};
use crate::stats::Phase;

/// An open-loop thread's HTTP/3 connections, shared by its stream slots.
pub(in crate::engine) type Pool = super::super::pool::Pool<Handle>;

/// An open loop's stream slot: one request at a time, on a pooled connection with a free
/// stream.
pub(crate) struct Slot(Attached<Handle>);

impl Slot {
    pub fn new() -> Slot {
        Slot(Attached::new())
    }
}

impl super::super::open::Carrier for Slot {
    async fn connect(&mut self, ctx: &ThreadCtx, phase: Phase) -> bool {
        let pool = &ctx.h3.as_ref().expect("HTTP/3 run").pool;
        let open = || open_connection(ctx, phase);
        self.0.connect(ctx, phase, pool, ctx.streams, open).await
    }

    async fn request(&mut self, ctx: &ThreadCtx, due: Due) {
        if !self.connect(ctx, due.phase).await {
            return;
        }
        let Some(c) = self.0.connection() else {
            return;
        };
        let mut send = c.send.clone();
        let h3 = &ctx.h3.as_ref().expect("HTTP/3 run").shared;
        let (outcome, sent) = one_request(
            ctx,
            &mut send,
            due.phase,
            || h3.build(),
            h3.request.body.clone(),
            &mut (),
        )
        .await;
        if let Some(sent) = sent {
            record(ctx, &due, sent);
        }
        self.0.settle(ctx, due.phase, &c, outcome);
    }
}
