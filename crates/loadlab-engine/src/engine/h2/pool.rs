//! An open loop's HTTP/2 connections: stream slots share a thread's pooled connections
//! (`engine::pool`, as HTTP/3's), each carrying up to `--streams` of them; this module sends
//! the request. It must not send again what the server did not process: the open loop's
//! schedule moves on.

use super::super::exchange::Due;
use super::super::pool::Attached;
use super::super::ThreadCtx;
use super::{open_connection, plain_request};
use crate::stats::Phase;
use bytes::Bytes;
use h2::client::SendRequest;

/// An open-loop thread's HTTP/2 connections, shared by its stream slots.
pub(crate) type Pool = super::super::pool::Pool<SendRequest<Bytes>>;

/// An open loop's stream slot: one request at a time, on a pooled HTTP/2 connection with a
/// free stream.
pub(crate) struct Slot(Attached<SendRequest<Bytes>>);

impl Slot {
    pub fn new() -> Slot {
        Slot(Attached::new())
    }
}

impl super::super::open::Carrier for Slot {
    async fn connect(&mut self, ctx: &ThreadCtx, phase: Phase) -> bool {
        let open = || open_connection(ctx, phase);
        self.0
            .connect(ctx, phase, &ctx.h2_pool, ctx.streams, open)
            .await
    }

    async fn request(&mut self, ctx: &ThreadCtx, due: Due) {
        if !self.connect(ctx, due.phase).await {
            return;
        }
        let Some(c) = self.0.connection() else {
            return;
        };
        let outcome = plain_request(ctx, &c.send, &due).await;
        self.0.settle(ctx, due.phase, &c, outcome);
    }
}
