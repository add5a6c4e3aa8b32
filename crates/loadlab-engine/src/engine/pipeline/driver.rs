//! One pipelined connection's task: writes what its places handed over (coalesced: sixteen
//! requests in one write), reads the answers, and ends each request as its answer ends, in
//! order. It owns the socket and the response parser; the places only wait on their tickets.
//!
//! How a connection ends decides what becomes of the requests still in it:
//! - an answer announcing `Connection: close` (or one framed two ways, RFC 9112 6.3, or one
//!   whose body ran until the close): the requests behind it were not processed (RFC 9112
//!   9.6) and go again, after the server's close is waited for, as without pipelining;
//! - a close or a reset: the request whose answer had begun fails with the class; every one
//!   with no byte of its answer goes again (RFC 9112 9.3.2), at most `unprocessed::MAX_SENDS`
//!   times (a failed write ends nothing by itself: the answers already sent are read first);
//! - a timeout (the oldest request's): it fails, the ones behind it go again;
//! - a malformed answer, or bytes beyond the last answer asked for: that request fails, the
//!   ones behind it go again.

use super::{fail, take_back, Pipe};
use crate::engine::exchange::{
    await_close, io_failure, note_detail, poll_deadline, record_success, Stream, MAX_CLOSE_WAIT,
};
use crate::engine::unprocessed::Outcome;
use crate::engine::ThreadCtx;
use crate::error::ErrorClass;
use crate::http1::{Progress, ResponseParser};
use std::future::poll_fn;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// How the connection ended.
enum Ended {
    /// Its owner closed it with nothing in flight.
    Idle,
    /// An answer said the server closes: wait (bounded) for it to, unless it already did.
    Announced { eof: bool },
    /// It broke: dropped at once.
    Broken,
}

/// The connection's socket side, for its driver's polls.
struct Wire {
    stream: Stream,
    parser: ResponseParser,
    timer: Pin<Box<Sleep>>,
    /// Bytes written and not yet flushed (TLS may hold the last record until flushed).
    unflushed: bool,
    /// A write failed: nothing more is written, but the answers already on their way are
    /// still read (a server that closed after answering resets the writes that follow its
    /// close, while its answers wait to be read).
    write_failed: bool,
}

pub(super) async fn run(ctx: Rc<ThreadCtx>, pipe: Rc<Pipe>, stream: Stream) {
    let mut wire = Wire {
        stream,
        parser: ResponseParser::new(ctx.requests[0].is_head),
        // Armed with the oldest request's deadline on first use (see `poll_deadline`).
        timer: Box::pin(tokio::time::sleep(Duration::from_secs(86_400))),
        unflushed: false,
        write_failed: false,
    };
    if ctx.alt_svc.as_ref().is_some_and(|w| w.wanted()) {
        wire.parser.watch_alt_svc();
    }
    let ended = poll_fn(|cx| pipe.poll_drive(&ctx, &mut wire, cx)).await;
    if let Ended::Announced { eof: false } = ended {
        // TIME_WAIT on the server's side, as without pipelining.
        let wait = ctx.timeout.min(MAX_CLOSE_WAIT);
        await_close(&mut wire.stream, &mut wire.timer, Instant::now() + wait).await;
    }
}

impl Pipe {
    fn poll_drive(&self, ctx: &ThreadCtx, wire: &mut Wire, cx: &mut Context<'_>) -> Poll<Ended> {
        loop {
            if !wire.write_failed && self.poll_write(wire, ctx, cx).is_some() {
                wire.write_failed = true;
            }
            let front_sent_at = {
                let mut s = self.state.borrow_mut();
                match s.queue.front() {
                    Some(front) => front.sent_at,
                    None if s.closing => {
                        s.dead = true;
                        return Poll::Ready(Ended::Idle);
                    }
                    None => {
                        s.driver = Some(cx.waker().clone());
                        return Poll::Pending;
                    }
                }
            };
            let mut buf = ctx.read_buf.borrow_mut();
            let mut read = ReadBuf::new(&mut buf[..]);
            match Pin::new(&mut wire.stream).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) if read.filled().is_empty() => {
                    drop(buf);
                    return Poll::Ready(self.eof(ctx, &mut wire.parser));
                }
                Poll::Ready(Ok(())) => {
                    let n = read.filled().len();
                    let arrived = wire.stream.last_rx();
                    let read_at = arrived.unwrap_or_else(Instant::now);
                    let ended = self.answers(ctx, &mut wire.parser, &buf[..n], read_at, arrived);
                    if let Some(ended) = ended {
                        return Poll::Ready(ended);
                    }
                }
                Poll::Ready(Err(e)) => {
                    drop(buf);
                    self.broke(ctx, &wire.parser, io_failure(ctx, &e));
                    return Poll::Ready(Ended::Broken);
                }
                Poll::Pending => {
                    drop(buf);
                    let deadline = front_sent_at + ctx.timeout;
                    if poll_deadline(&mut wire.timer, deadline, cx).is_ready() {
                        // The oldest request's time is up, whatever its answer's state; the
                        // others go again.
                        let oldest = self.state.borrow_mut().queue.pop_front();
                        if let Some(entry) = oldest {
                            fail(ctx, entry, ErrorClass::RequestTimeout);
                        }
                        self.end(ctx, Outcome::Unanswered);
                        return Poll::Ready(Ended::Broken);
                    }
                    self.state.borrow_mut().driver = Some(cx.waker().clone());
                    return Poll::Pending;
                }
            }
        }
    }

    /// Writes what was handed over; the class of a failed write.
    fn poll_write(
        &self,
        wire: &mut Wire,
        ctx: &ThreadCtx,
        cx: &mut Context<'_>,
    ) -> Option<ErrorClass> {
        let mut s = self.state.borrow_mut();
        while s.written < s.out.len() {
            let s = &mut *s;
            match Pin::new(&mut wire.stream).poll_write(cx, &s.out[s.written..]) {
                Poll::Ready(Ok(0)) => return Some(ErrorClass::ConnectionReset),
                Poll::Ready(Ok(n)) => {
                    s.written += n;
                    wire.unflushed = true;
                }
                Poll::Ready(Err(e)) => return Some(io_failure(ctx, &e)),
                Poll::Pending => return None,
            }
        }
        if s.written > 0 {
            s.out.clear();
            s.written = 0;
        }
        if wire.unflushed {
            match Pin::new(&mut wire.stream).poll_flush(cx) {
                Poll::Ready(Ok(())) => wire.unflushed = false,
                Poll::Ready(Err(e)) => return Some(io_failure(ctx, &e)),
                Poll::Pending => {}
            }
        }
        None
    }

    /// Feeds one read's bytes to the parser, ending each request whose answer ends in them.
    /// `Some` when the connection ended.
    fn answers(
        &self,
        ctx: &ThreadCtx,
        parser: &mut ResponseParser,
        data: &[u8],
        read_at: Instant,
        arrived: Option<Instant>,
    ) -> Option<Ended> {
        let mut pos = 0;
        while pos < data.len() {
            let mut s = self.state.borrow_mut();
            let Some(front) = s.queue.front_mut() else {
                unreachable!("bytes past the last answer end the connection below");
            };
            let t = &mut front.traffic;
            t.first_byte.get_or_insert(read_at);
            (t.last_rx, t.last_read) = (arrived, Some(read_at));
            match parser.feed(&data[pos..]) {
                Ok(Progress::NeedMore) => {
                    let n = (data.len() - pos) as u64;
                    (t.received, t.unbooked) = (t.received + n, t.unbooked + n);
                    return None;
                }
                Ok(Progress::Complete(r)) => {
                    let n = r.consumed as u64;
                    (t.received, t.unbooked) = (t.received + n, t.unbooked + n);
                    pos += r.consumed;
                    let entry = s.queue.pop_front().expect("the front");
                    let beyond = pos < data.len() && s.queue.is_empty();
                    drop(s);
                    if beyond {
                        // More answered than asked: the server's framing is wrong, or it
                        // answered a request twice; which request an answer is for cannot be
                        // told in HTTP/1.1.
                        let why = "the server sent bytes beyond the answers to the requests \
                                   pipelined on the connection (answers are matched to \
                                   requests in order)";
                        note_detail(
                            ctx,
                            entry.due.phase,
                            ErrorClass::ExtraBytes,
                            Some(why.into()),
                        );
                        fail(ctx, entry, ErrorClass::ExtraBytes);
                        self.end(ctx, Outcome::Unanswered);
                        return Some(Ended::Broken);
                    }
                    record_success(ctx, &entry.due, entry.sent_at, r.status, &entry.traffic);
                    entry.ticket.finish(Outcome::Done);
                    if let Some(value) = parser.take_alt_svc() {
                        if let Some(w) = &ctx.alt_svc {
                            w.seen(&value);
                        }
                    }
                    if r.close || r.ambiguous_framing {
                        // The server processes nothing after it (RFC 9112 9.6); a response
                        // framed two ways leaves the connection unusable (RFC 9112 6.3).
                        self.end(ctx, Outcome::NotProcessed);
                        return Some(if r.ambiguous_framing {
                            Ended::Broken
                        } else {
                            Ended::Announced { eof: false }
                        });
                    }
                }
                Err(_) => {
                    drop(s);
                    self.broke(ctx, parser, ErrorClass::MalformedResponse);
                    return Some(Ended::Broken);
                }
            }
        }
        None
    }

    /// The server closed: a body that ran until the close ends the oldest request (those
    /// behind it were not processed); otherwise the connection broke.
    fn eof(&self, ctx: &ThreadCtx, parser: &mut ResponseParser) -> Ended {
        let Some(r) = parser.eof() else {
            self.broke(ctx, parser, ErrorClass::ClosedBeforeResponse);
            return Ended::Broken;
        };
        let entry = self.state.borrow_mut().queue.pop_front();
        if let Some(mut entry) = entry {
            entry.traffic.last_read = Some(Instant::now());
            record_success(ctx, &entry.due, entry.sent_at, r.status, &entry.traffic);
            entry.ticket.finish(Outcome::Done);
        }
        self.end(ctx, Outcome::NotProcessed);
        Ended::Announced { eof: true }
    }

    /// The connection broke (`class`): the oldest request fails with it if its answer had
    /// begun, every request with no byte of its answer goes again.
    fn broke(&self, ctx: &ThreadCtx, parser: &ResponseParser, class: ErrorClass) {
        if parser.started() {
            let oldest = self.state.borrow_mut().queue.pop_front();
            if let Some(entry) = oldest {
                fail(ctx, entry, class);
            }
        }
        self.end(ctx, Outcome::Unanswered);
    }

    /// The connection ends: every request still in it is taken back as `how`.
    fn end(&self, ctx: &ThreadCtx, how: Outcome) {
        let queue = {
            let mut s = self.state.borrow_mut();
            s.dead = true;
            s.out.clear();
            s.written = 0;
            std::mem::take(&mut s.queue)
        };
        for entry in queue {
            take_back(ctx, entry, how);
        }
    }
}
