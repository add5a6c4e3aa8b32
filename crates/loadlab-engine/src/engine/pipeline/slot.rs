//! An open loop's place in a pipelined connection's pipeline: one request at a time, on a
//! pooled connection with a free place (`engine::pool`, as HTTP/2's stream slots share
//! connections). A new connection opens only when every place is taken, one at a time. As
//! over HTTP/2, it never sends again what the server did not process: the open loop's
//! schedule moves on, and such a request is counted failed (`ClosedBeforeResponse`).

use super::Pipe;
use crate::engine::exchange::{connect, note_detail, record_failure, Due, Traffic};
use crate::engine::open::Carrier;
use crate::engine::pool::Attached;
use crate::engine::unprocessed::Outcome;
use crate::engine::ThreadCtx;
use crate::stats::Phase;
use std::rc::Rc;

/// An open-loop thread's pipelined connections, shared by the places in their pipelines.
pub(crate) type Pool = crate::engine::pool::Pool<Rc<Pipe>>;

/// An open loop's place in a pipeline. It holds the thread's context to start a connection's
/// driver on the thread's task set.
pub(in crate::engine) struct Slot {
    ctx: Rc<ThreadCtx>,
    on: Attached<Rc<Pipe>>,
}

impl Slot {
    pub fn new(ctx: Rc<ThreadCtx>) -> Slot {
        Slot {
            ctx,
            on: Attached::new(),
        }
    }
}

impl Carrier for Slot {
    async fn connect(&mut self, ctx: &ThreadCtx, phase: Phase) -> bool {
        let owner = &self.ctx;
        let open = || async move {
            match connect(owner, phase).await {
                Ok(stream) => Ok(Pipe::start(owner, stream)),
                Err((class, detail)) => {
                    note_detail(owner, phase, class, detail);
                    record_failure(owner, phase, class, &Traffic::default(), false);
                    Err(class)
                }
            }
        };
        self.on
            .connect(ctx, phase, &ctx.pipe_pool, ctx.pipeline, open)
            .await
    }

    async fn request(&mut self, ctx: &ThreadCtx, due: Due) {
        loop {
            if !self.connect(ctx, due.phase).await {
                return;
            }
            let Some(c) = self.on.connection() else {
                return;
            };
            if c.send.dead() {
                // It ended after this place's last answer (one announcing the close): leave
                // it (nothing is recorded for that) and take a place on another.
                self.on.settle(ctx, due.phase, &c, Outcome::Died);
                continue;
            }
            let outcome = c.send.send(ctx, due).await;
            self.on.settle(ctx, due.phase, &c, outcome);
            return;
        }
    }
}
