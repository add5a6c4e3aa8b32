//! Requests a server said it did not process, sent again by a closed loop over HTTP/2
//! (REFUSED_STREAM, or a graceful GOAWAY below them: RFC 9113 8.7 and 6.8) or HTTP/3
//! (H3_REQUEST_REJECTED, or a GOAWAY before them: RFC 9114 4.1.1 and 5.2). Such a request may
//! be sent again, and a closed loop does so: the refusal is neither a failure nor a second
//! request (it is counted in `retried`). But not without end: a server that refused every
//! stream kept a count-bounded run (`-n`) going for as long as it lived. So a request whose
//! stream is refused is sent at most [`MAX_SENDS`] times, and the requests owed to a
//! connection slot whose last [`MAX_SENDS`] connections went away without answering anything
//! are given up; either way they are counted as failed, with the reason. (A GOAWAY is counted
//! by connection, not by request: the streams of a connection going away meet it before
//! their requests leave, and one request may meet it on several of them.)
//!
//! Pipelined HTTP/1.1 (`pipeline`) follows the same rule: the requests behind an answer that
//! announced the connection's close were not processed (RFC 9112 9.6), and those a
//! connection closed or broke on before any byte of their answer came are sent again (RFC
//! 9112 9.3.2), each at most [`MAX_SENDS`] times, as a refused stream is.

use super::exchange::{note_detail, record_failure, Traffic};
use super::ThreadCtx;
use crate::error::ErrorClass;
use crate::stats::Phase;
use std::cell::RefCell;

/// The most times one request is sent when the server does not process it. Enough for the
/// refusals a healthy server makes (streams opened before its SETTINGS arrived, or in flight
/// across a graceful GOAWAY, refused once each); a request refused this many times in a row
/// is refused for good.
pub(super) const MAX_SENDS: u8 = 5;

/// How one request on a stream (HTTP/2 or HTTP/3) ended, for the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Answered, or failed on a connection still usable.
    Done,
    /// Failed with the connection (counted as failed): the stream needs another connection.
    Died,
    /// The server refused the stream (REFUSED_STREAM, H3_REQUEST_REJECTED; not counted):
    /// send it again on this connection.
    Refused,
    /// The server is going away without processing it (not counted): send it on another.
    NotProcessed,
    /// Pipelined HTTP/1.1: the connection closed or broke before any byte of its answer
    /// (not counted): send it on another, as a refused stream is sent again.
    Unanswered,
}

impl Outcome {
    /// How the server did not process the request, if it did not.
    pub fn unprocessed(self) -> Option<Unprocessed> {
        match self {
            Outcome::Refused => Some(Unprocessed::Stream),
            Outcome::NotProcessed => Some(Unprocessed::Connection),
            Outcome::Unanswered => Some(Unprocessed::Unanswered),
            Outcome::Done | Outcome::Died => None,
        }
    }

    /// The connection cannot carry the stream's next request: it died, or is going away.
    pub fn ends_connection(self) -> bool {
        matches!(
            self,
            Outcome::Died | Outcome::NotProcessed | Outcome::Unanswered
        )
    }
}

/// How the server did not process a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unprocessed {
    /// It refused the stream; the connection goes on (REFUSED_STREAM, H3_REQUEST_REJECTED).
    Stream,
    /// It is going away without processing it (a GOAWAY below its stream).
    Connection,
    /// Pipelined HTTP/1.1: its connection closed or broke before any byte of its answer.
    Unanswered,
}

impl Unprocessed {
    /// The class of such a request counted failed (given up, or never sent again).
    pub fn class(self) -> ErrorClass {
        match self {
            Unprocessed::Stream => ErrorClass::StreamReset,
            Unprocessed::Connection => ErrorClass::GoAway,
            Unprocessed::Unanswered => ErrorClass::ClosedBeforeResponse,
        }
    }
}

/// After the `sends`-th send of a request the server did not process (`how`): `Ok` when it
/// goes again (counted as retried); else it was counted failed, as the open loop counts a
/// refusal it never sends again (its class comes back), with the reason.
pub(super) fn send_again(
    ctx: &ThreadCtx,
    phase: Phase,
    sends: u8,
    how: Unprocessed,
) -> Result<(), ErrorClass> {
    if sends < MAX_SENDS {
        ctx.recorder.borrow_mut().phase(phase).retried += 1;
        return Ok(());
    }
    let class = how.class();
    let code = match (how, ctx.h3.is_some()) {
        (Unprocessed::Stream, false) => "REFUSED_STREAM",
        (Unprocessed::Stream, true) => "H3_REQUEST_REJECTED",
        (Unprocessed::Connection, _) => "GOAWAY before its stream",
        (Unprocessed::Unanswered, _) => "HTTP/1.1: its pipelined connection closed unanswered",
    };
    let why = format!(
        "the server did not process the same request {MAX_SENDS} times in a row ({code}): \
         counted as failed instead of sent again"
    );
    note_detail(ctx, phase, class, Some(why));
    record_failure(ctx, phase, class, &Traffic::default(), false);
    Err(class)
}

/// The owed requests of one connection slot, shared by its streams: for each, the times its
/// stream was refused. Their budget (`-n`) is already taken.
#[derive(Default)]
pub(super) struct Owed(RefCell<Vec<u8>>);

impl Owed {
    pub fn is_empty(&self) -> bool {
        self.0.borrow().is_empty()
    }

    /// A connection slot's next turn (HTTP/2, HTTP/3, pipelined HTTP/1.1), after the back-off
    /// its `failures` in a row earned: the phase its connection opens in, and whether that
    /// connection claimed a request from the budget (`-n`; with none owed). A connection is
    /// opened for a request, as HTTP/1.1's is: failed with the connect if that fails, else
    /// sent first on it. Without this a refused connect cost nothing, and a count-bounded run
    /// against a port nothing listens on never ended. `None` when the slot is done: the run
    /// is over, or the budget is spent with nothing owed.
    pub async fn next_turn(&self, ctx: &ThreadCtx, failures: u32) -> Option<(Phase, bool)> {
        if let Some(wait) = super::backoff::backoff_after(failures) {
            super::backoff::back_off(ctx, wait).await;
        }
        let now = std::time::Instant::now();
        if ctx.over(now) || (ctx.budget_spent.get() && self.is_empty()) {
            return None;
        }
        let phase = ctx.phase_at(now);
        let claimed = self.is_empty();
        if claimed && phase == Phase::Measured && !ctx.budget.take() {
            ctx.budget_spent.set(true);
            return None;
        }
        Some((phase, claimed))
    }

    /// A request not sent yet, whose budget is taken (a connection was opened for it).
    pub fn claim(&self) {
        self.0.borrow_mut().push(0);
    }

    /// A stream's next request: one owed (the times its stream was refused so far), else
    /// one taken from the budget (`-n`; none refused yet). `None` when the budget is spent
    /// (and the thread told so). The one refused most goes first: a pipeline's server that
    /// answers the first few requests of each connection then closes answers it, where the
    /// last one owed, sent last, could be left unanswered until its sends ran out.
    pub fn next_request(&self, ctx: &ThreadCtx, phase: Phase) -> Option<u8> {
        let mut owed = self.0.borrow_mut();
        let most = (0..owed.len()).max_by_key(|&i| owed[i]);
        if let Some(i) = most {
            return Some(owed.swap_remove(i));
        }
        drop(owed);
        if phase == Phase::Measured && !ctx.budget.take() {
            ctx.budget_spent.set(true);
            return None;
        }
        Some(0)
    }

    /// Empties the slot's debt: how many were owed.
    fn clear(&self) -> usize {
        std::mem::take(&mut *self.0.borrow_mut()).len()
    }

    /// The connection opened for the slot's next request failed, counted by the connect as
    /// that request's failure (the one `claimed` from the budget, or one owed: not counted
    /// twice): the others owed fail with it, so that a server that is gone does not keep the
    /// slot's loop alive.
    pub fn connect_failed(&self, ctx: &ThreadCtx, phase: Phase, class: ErrorClass, claimed: bool) {
        let rest = self.clear().saturating_sub(usize::from(!claimed));
        for _ in 0..rest {
            record_failure(ctx, phase, class, &Traffic::default(), false);
        }
    }

    /// After a request (refused `refusals` times before) ended with `outcome`: one the
    /// server did not process is owed again, or counted failed (see [`send_again`]).
    pub fn put_back(&self, ctx: &ThreadCtx, phase: Phase, refusals: u8, outcome: Outcome) {
        match outcome {
            Outcome::Refused | Outcome::Unanswered => {
                let how = outcome.unprocessed().expect("not processed");
                if send_again(ctx, phase, refusals + 1, how).is_ok() {
                    self.0.borrow_mut().push(refusals + 1);
                }
            }
            Outcome::NotProcessed => {
                ctx.recorder.borrow_mut().phase(phase).retried += 1;
                self.0.borrow_mut().push(refusals);
            }
            Outcome::Done | Outcome::Died => {}
        }
    }

    /// After a connection of the slot ended, `silent` being how many in a row answered
    /// nothing: at [`MAX_SENDS`], what is owed is counted failed (a server that goes away
    /// before every request would otherwise be asked again without end).
    ///
    /// Nothing once the run has ended: a stream that started just past the deadline (before
    /// the thread's timer fired, which is up to a millisecond late, or more on a loaded
    /// machine) took no request, so the one its connection was opened for is still owed,
    /// never sent and never to be. Counted, it was an issued `goaway` that no server sent.
    pub fn after_connection(&self, ctx: &ThreadCtx, silent: u32) {
        let now = std::time::Instant::now();
        let ended = ctx.over(now);
        if silent < u32::from(MAX_SENDS) || ended {
            return;
        }
        let owed = self.clear();
        if owed == 0 {
            return;
        }
        let (phase, class) = (ctx.phase_at(now), ErrorClass::GoAway);
        let why = format!(
            "the server went away {MAX_SENDS} connections in a row without answering a \
             request (GOAWAY before its stream): the requests owed counted as failed instead \
             of sent again"
        );
        note_detail(ctx, phase, class, Some(why));
        for _ in 0..owed {
            record_failure(ctx, phase, class, &Traffic::default(), false);
        }
    }
}
