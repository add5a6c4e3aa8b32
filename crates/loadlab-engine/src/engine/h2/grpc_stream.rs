//! A streaming gRPC call's two sides, beside `grpc`'s judging of the answer:
//!
//! - [`Messages`]: the request's messages, sent as `one_request`'s [`Outgoing`] body: the
//!   first with the head, the rest back to back (a client stream's default, or
//!   `--grpc-message-rate max`), at `--grpc-message-rate` (each due at the call's start plus
//!   n intervals, whenever the one before left), or ping-pong (each when the answer to the
//!   one before arrived);
//! - [`Watch`]: the answer's messages as they arrive: the first's time from the send, the
//!   gaps between them, a bidirectional stream's n-th answer from when its n-th message was
//!   due, and a server stream's cap (loadlab ends the call there).
//!
//! The two share a [`Progress`] (one task runs both: cells, no locks). Nothing of a message
//! is kept: a stream of any length costs a few counters.

use super::super::ThreadCtx;
use super::Outgoing;
use crate::grpc::{Call, CallKind};
use bytes::Bytes;
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// How far a call's two sides got.
#[derive(Default)]
pub(super) struct Progress {
    /// When the first message left: the schedule's origin.
    start: Cell<Option<Instant>>,
    pub sent: Cell<u64>,
    /// When the last message left (ping-pong: the one the next answer answers).
    last_sent: Cell<Option<Instant>>,
    received: Cell<u64>,
    /// Woken on each answer message (ping-pong's sender waits on it).
    answered: tokio::sync::Notify,
}

/// The request's messages: `count` copies of the call's framed message.
pub(super) struct Messages {
    message: Bytes,
    count: u64,
    interval: Option<Duration>,
    ping_pong: bool,
    progress: Rc<Progress>,
}

impl Messages {
    pub fn new(call: &Call, progress: Rc<Progress>) -> Messages {
        Messages {
            message: call.body.clone(),
            // A server stream's `messages` is its cap: it sends one.
            count: match call.kind.client_streams() {
                true => call.messages.unwrap_or(1).max(1),
                false => 1,
            },
            // Zero: back to back, no timer.
            interval: call.message_interval.filter(|i| !i.is_zero()),
            ping_pong: call.kind == CallKind::Bidi && call.message_interval.is_none(),
            progress,
        }
    }

    fn left(&self, n: u64) {
        self.progress.sent.set(n);
        self.progress.last_sent.set(Some(Instant::now()));
    }
}

impl Outgoing for Messages {
    fn is_empty(&self) -> bool {
        false
    }

    fn start(&mut self, tx: &mut h2::SendStream<Bytes>) -> Result<bool, h2::Error> {
        self.progress.start.set(Some(Instant::now()));
        let last = self.count == 1;
        tx.send_data(self.message.clone(), last)?;
        self.left(1);
        Ok(last)
    }

    async fn rest(&mut self, mut tx: h2::SendStream<Bytes>) -> Result<(), h2::Error> {
        let start = self.progress.start.get().unwrap_or_else(Instant::now);
        for n in 1..self.count {
            if let Some(interval) = self.interval {
                tokio::time::sleep_until(due(start, interval, n).into()).await;
            } else if self.ping_pong {
                while self.progress.received.get() < n {
                    self.progress.answered.notified().await;
                }
            }
            send_message(&mut tx, self.message.clone(), n + 1 == self.count).await?;
            self.left(n + 1);
        }
        Ok(())
    }
}

/// When message `n` (from 0) of a stream sent every `interval` is due.
fn due(start: Instant, interval: Duration, n: u64) -> Instant {
    let ns = (interval.as_nanos() as u64).saturating_mul(n);
    start + Duration::from_nanos(ns)
}

/// Sends one message as the server's flow-control window takes it: a message waits for
/// room, so a slow reader makes the messages late (and the lateness is measured), never
/// piles them up in loadlab's memory.
async fn send_message(
    tx: &mut h2::SendStream<Bytes>,
    mut message: Bytes,
    last: bool,
) -> Result<(), h2::Error> {
    while !message.is_empty() {
        tx.reserve_capacity(message.len());
        let mut room = tx.capacity();
        while room == 0 {
            room = match std::future::poll_fn(|cx| tx.poll_capacity(cx)).await {
                Some(r) => r?,
                // The stream can no longer send (the server ended or reset it): the
                // answer's reading says how.
                None => return Err(h2::Reason::CANCEL.into()),
            };
        }
        let piece = message.split_to(room.min(message.len()));
        tx.send_data(piece, last && message.is_empty())?;
    }
    Ok(())
}

/// The answer's messages as they arrive, recorded (measured part only) in the thread's
/// [`crate::grpc::stats::GrpcStats`].
pub(super) struct Watch<'a> {
    ctx: &'a ThreadCtx,
    measured: bool,
    progress: Rc<Progress>,
    /// A server stream's cap.
    pub cap: Option<u64>,
    /// Bidirectional: the answers are matched to messages, by the rate's schedule or
    /// ping-pong.
    bidi: Option<Option<Duration>>,
    last: Option<Instant>,
}

impl<'a> Watch<'a> {
    pub fn new(
        ctx: &'a ThreadCtx,
        measured: bool,
        call: &Call,
        progress: Rc<Progress>,
    ) -> Watch<'a> {
        Watch {
            ctx,
            measured,
            progress,
            cap: match call.kind {
                CallKind::ServerStreaming => call.messages,
                _ => None,
            },
            bidi: (call.kind == CallKind::Bidi).then_some(call.message_interval),
            last: None,
        }
    }

    /// Answer messages `from..to` (counted from 0) have just arrived.
    pub fn arrived(&mut self, from: u64, to: u64) {
        let now = Instant::now();
        if self.measured {
            let mut rec = self.ctx.recorder.borrow_mut();
            if let Some(g) = rec.grpc.as_mut() {
                let start = self.progress.start.get().unwrap_or(now);
                for n in from..to {
                    let ns =
                        |since: Instant| now.saturating_duration_since(since).as_nanos() as u64;
                    match self.last {
                        None => g.first_message.saturating_record(ns(start)),
                        Some(last) => g.gap.saturating_record(ns(last)),
                    }
                    self.last = Some(now);
                    let due = match self.bidi {
                        Some(Some(interval)) => Some(due(start, interval, n)),
                        // Ping-pong: answer n answers the message last sent.
                        Some(None) => self.progress.last_sent.get(),
                        None => None,
                    };
                    if let Some(due) = due {
                        g.message_latency.saturating_record(ns(due));
                    }
                }
            }
        }
        self.progress.received.set(to);
        self.progress.answered.notify_one();
    }

    /// A server stream reached its cap: the call ends here.
    pub fn capped(&self) -> bool {
        self.cap.is_some_and(|c| self.progress.received.get() >= c)
    }

    /// The call is over: its messages counted, each way.
    pub fn finish(&self, capped: bool) {
        if self.measured {
            let mut rec = self.ctx.recorder.borrow_mut();
            let (sent, received) = (self.progress.sent.get(), self.progress.received.get());
            if let Some(g) = rec.grpc.as_mut() {
                g.messages_sent += sent;
                g.messages_received += received;
                g.capped += u64::from(capped);
            }
            // The interval the call ended in counts them too (what `--metrics-out` sends).
            rec.timeline
                .messages(self.ctx.start.elapsed(), sent, received);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_due_by_the_schedule_from_the_first() {
        let t0 = Instant::now();
        let ms = Duration::from_millis(1);
        assert_eq!(due(t0, ms, 0), t0);
        assert_eq!(due(t0, ms, 250), t0 + Duration::from_millis(250));
    }
}
