//! An open loop's place in a pipelined connection's pipeline: one request at a time, on a
//! pooled connection with a free place (`engine::pool`, as HTTP/2's stream slots share
//! connections). A new connection opens only when every place is taken, one at a time.
//!
//! Unlike HTTP/2's, a request the server did not process is sent again, on another
//! connection, keeping its due time (the wait counts in its latency, as a wait for a free
//! connection does): over HTTP/1.1 a server that ends a connection after so many requests
//! (nginx's keepalive_requests) closes on the ones pipelined behind the last answer, which a
//! healthy server does every thousand requests, and no failure of it. The bounds are the
//! `unprocessed` rule's.

use super::Pipe;
use crate::engine::exchange::{connect, note_detail, record_failure, Due, Traffic};
use crate::engine::open::Carrier;
use crate::engine::pool::Attached;
use crate::engine::unprocessed::{send_again, Outcome, Unprocessed};
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
        // Times sent unanswered (a close before any byte of its answer).
        let mut sends = 0;
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
            match outcome {
                // Behind an answer that announced the close: the connection answered, so
                // this cannot go on without end.
                Outcome::NotProcessed => {
                    ctx.recorder.borrow_mut().phase(due.phase).retried += 1;
                }
                Outcome::Unanswered => {
                    sends += 1;
                    let again = send_again(ctx, due.phase, sends, Unprocessed::Unanswered);
                    if again.is_err() {
                        self.on.settle(ctx, due.phase, &c, Outcome::Died);
                        return;
                    }
                }
                _ => {
                    self.on.settle(ctx, due.phase, &c, outcome);
                    return;
                }
            }
            // Left (it is gone), and recorded nothing: the request goes again.
            self.on.settle(ctx, due.phase, &c, Outcome::Died);
        }
    }
}
