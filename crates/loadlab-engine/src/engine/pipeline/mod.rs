//! HTTP/1.1 pipelining (`--pipeline N`, RFC 9112 9.3.2): up to N requests written on one
//! connection before the first answer is read, the answers matched to them in order.
//!
//! A [`Pipe`] is one such connection: requests are handed to it ([`Pipe::send`]) by the
//! places in its pipeline (a closed loop's N loops in `closed`, an open loop's slots in
//! `slot`), and one task per connection (`driver`) writes them, coalesced, and reads the
//! answers, recording each request's outcome as it ends. Each request is timed from when it
//! was handed over: in a closed loop, when a place in the pipeline freed; in an open loop,
//! from its due time (the wait for a free place is the target's, as a wait for a free
//! connection is).
//!
//! HTTP/1.1 answers carry nothing that names their request: a server answering out of order
//! is indistinguishable from one answering in order, and the answers are taken in the order
//! the requests went. A server that answers more than was asked fails the request whose
//! answer came with the extra bytes ([`ErrorClass::ExtraBytes`]), and the connection is
//! dropped. What a server closes on unanswered is the `unprocessed` rule's.

mod closed;
mod driver;
mod slot;

use super::exchange::{Due, Traffic};
use super::unprocessed::Outcome;
use super::ThreadCtx;
use crate::error::ErrorClass;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Instant;

pub(super) use closed::drive;
pub(super) use slot::{Pool, Slot};

/// One pipelined connection's side shared by its places and its driver.
pub(crate) struct Pipe {
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    /// Requests handed over and not yet written, coalesced into one write.
    out: Vec<u8>,
    /// Of `out`, the bytes written so far.
    written: usize,
    /// Requests handed over and not yet answered, in the order they went.
    queue: VecDeque<Entry>,
    /// The connection ended: nothing more is handed to it.
    dead: bool,
    /// Its owner needs it no more: the driver ends once nothing is in flight.
    closing: bool,
    /// The driver, waiting for requests or the socket.
    driver: Option<Waker>,
    /// The rotation's next request.
    next: usize,
}

/// One request in the pipeline.
struct Entry {
    due: Due,
    /// When it was handed over: its latency's origin in a closed loop.
    sent_at: Instant,
    ticket: Rc<Ticket>,
    traffic: Traffic,
}

/// How a place learns its request's outcome (recorded by the driver).
#[derive(Default)]
struct Ticket {
    outcome: Cell<Option<Outcome>>,
    waker: Cell<Option<Waker>>,
}

impl Ticket {
    fn finish(&self, outcome: Outcome) {
        self.outcome.set(Some(outcome));
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

impl Pipe {
    /// A pipelined connection over `stream`, its driver started on the thread's task set.
    pub(in crate::engine) fn start(
        ctx: &Rc<ThreadCtx>,
        stream: super::exchange::Stream,
    ) -> Rc<Pipe> {
        let pipe = Rc::new(Pipe {
            state: RefCell::new(State::default()),
        });
        super::spawn_guarded(ctx, driver::run(ctx.clone(), pipe.clone(), stream));
        pipe
    }

    /// The connection ended: hand it nothing more.
    pub(in crate::engine) fn dead(&self) -> bool {
        self.state.borrow().dead
    }

    /// Its owner is done with it: it closes once its requests are answered.
    pub(in crate::engine) fn close(&self) {
        let mut s = self.state.borrow_mut();
        s.closing = true;
        if let Some(w) = s.driver.take() {
            w.wake();
        }
    }

    /// Sends the rotation's next request (due as `due`) on this connection, behind those in
    /// flight, and waits for its outcome, which the driver has recorded (a request the
    /// server did not process is taken back: see `unprocessed`). Not on a dead connection.
    pub(in crate::engine) async fn send(&self, ctx: &ThreadCtx, due: Due) -> Outcome {
        let ticket = Rc::new(Ticket::default());
        {
            let mut s = self.state.borrow_mut();
            debug_assert!(!s.dead, "a dead pipe is handed nothing");
            let request = &ctx.requests[s.next];
            s.next = (s.next + 1) % ctx.requests.len();
            s.out.extend_from_slice(&request.bytes);
            super::exchange::record_sent(ctx, due.phase);
            s.queue.push_back(Entry {
                due,
                sent_at: Instant::now(),
                ticket: ticket.clone(),
                traffic: Traffic {
                    sent: request.bytes.len() as u64,
                    ..Traffic::default()
                },
            });
            if let Some(w) = s.driver.take() {
                w.wake();
            }
        }
        std::future::poll_fn(|cx| match ticket.outcome.get() {
            Some(outcome) => Poll::Ready(outcome),
            None => {
                ticket.waker.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        })
        .await
    }
}

/// A request whose answer began and did not end (or never came in time): failed with
/// `class`; its connection is gone.
fn fail(ctx: &ThreadCtx, entry: Entry, class: ErrorClass) {
    super::exchange::record_failure(ctx, entry.due.phase, class, &entry.traffic, true);
    entry.ticket.finish(Outcome::Died);
}

/// A request with no byte of its answer when its connection ended, taken back as the server's
/// not processing it (`how`: [`Outcome::NotProcessed`] behind an answer that announced the
/// close, [`Outcome::Unanswered`] otherwise): neither issued nor failed, its bytes counted as
/// sent, to go again by the `unprocessed` rule.
fn take_back(ctx: &ThreadCtx, entry: Entry, how: Outcome) {
    let mut rec = ctx.recorder.borrow_mut();
    super::exchange::settled(ctx, &mut rec);
    let stats = rec.phase(entry.due.phase);
    stats.issued -= 1;
    stats.bytes_sent += entry.traffic.sent;
    drop(rec);
    entry.ticket.finish(how);
}
