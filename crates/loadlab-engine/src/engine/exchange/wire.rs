//! One request's bytes on an open connection: write the request, read one full response,
//! with the request's deadline. This is the hot path. Per request it does one write, usually
//! one read, three clock reads (the loop's, the send's, the read's: callgrind counts 3.1) and
//! no allocation: the request bytes are shared, the read buffer is the thread's, and the
//! timeout timer is armed lazily (see [`poll_deadline`]), so steady state touches no timer.
//! It records only bytes; the outcome is the caller's.
//!
//! Reads go through `AsyncRead::poll_read` on purpose: on epoll, tokio treats a short read as
//! proof the socket is drained and skips the `EAGAIN` read a `readable()`/`try_read` loop
//! would make on every request.

use super::super::ThreadCtx;
use super::{Exchange, Sink, Stream, Traffic};
use crate::error::ErrorClass;
use crate::http1::{Progress, ResponseParser};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// How long a request with `Expect: 100-continue` waits for the server's `100 Continue` (or
/// its final answer) before it sends the body anyway: curl's default, 1 s (RFC 9110 10.1.1
/// lets a client stop waiting; a server that ignores the header never sends a 100). The wait
/// is part of the request's latency: the user's request took that long.
pub(in crate::engine) const EXPECT_CONTINUE_WAIT: Duration = Duration::from_secs(1);

/// Writes the request and reads one full response, or fails with a class. `body_at`: the
/// request asks `Expect: 100-continue`, and its body starts there: the head goes first, the
/// body after the server's `100 Continue` or [`EXPECT_CONTINUE_WAIT`].
///
/// When the server gives its final answer while the body waits (with or without a 100
/// before it: nginx sends both in one write), RFC 9110 10.1.1 has it say whether it will
/// close the connection or go on reading the request's content. So: an answer that closes
/// gets no body, and the connection is dropped; any other answer gets the body, which the
/// server reads (nginx discards it), and the connection stays in sync for the next request
/// (RFC 9112 9.3 has a client stop sending a body only to a server that is closing). The
/// answer is the request's outcome either way; a body that then cannot be written only
/// costs the connection.
#[allow(clippy::too_many_arguments)]
pub(super) async fn exchange<S: Sink>(
    ctx: &ThreadCtx,
    sent_at: Instant,
    request: &[u8],
    body_at: Option<usize>,
    stream: &mut Stream,
    parser: &mut ResponseParser,
    timer: &mut Pin<Box<Sleep>>,
    deadline: Instant,
    traffic: &mut Traffic,
    sink: &mut S,
) -> Result<Exchange, ErrorClass> {
    let mut written = 0;
    // What to write before reading: the whole request, or its head alone.
    let mut upto = body_at.unwrap_or(request.len());
    let mut flushed = false;
    // Until when the body waits for a 100, while it does.
    let mut holding: Option<Instant> = None;
    // The final answer, when it came while the body waited: the body goes, then this.
    let mut answered: Option<Exchange> = None;
    // A held body that could not follow its answer costs the connection, not the answer.
    let cut = |answered: Exchange| Exchange {
        close: true,
        drop_at_once: true,
        ..answered
    };
    // Polls so far: bytes written in the first are booked at `sent_at` (see `book_sent`).
    let mut polls = 0u32;
    poll_fn(|cx| {
        polls += 1;
        'send: loop {
            while written < upto {
                let failed = match Pin::new(&mut *stream).poll_write(cx, &request[written..upto]) {
                    Poll::Ready(Ok(0)) => Poll::Ready(Err(ErrorClass::ConnectionReset)),
                    Poll::Ready(Ok(n)) => {
                        written += n;
                        traffic.sent += n as u64;
                        continue;
                    }
                    Poll::Ready(Err(e)) => Poll::Ready(Err(io_failure(ctx, &e))),
                    Poll::Pending => timed_out(ctx, timer, deadline, traffic, cx),
                };
                return match (failed, answered) {
                    (Poll::Ready(Err(_)), Some(answer)) => Poll::Ready(Ok(cut(answer))),
                    (failed, _) => failed,
                };
            }
            if !flushed {
                // A no-op for plain TCP; TLS may hold the last record until flushed.
                let failed = match Pin::new(&mut *stream).poll_flush(cx) {
                    Poll::Ready(Ok(())) => {
                        flushed = true;
                        book_sent(ctx, traffic, (polls == 1).then_some(sent_at));
                        if let Some(answer) = answered {
                            return Poll::Ready(Ok(answer));
                        }
                        if upto < request.len() {
                            holding = Some(Instant::now() + EXPECT_CONTINUE_WAIT);
                        }
                        None
                    }
                    Poll::Ready(Err(e)) => Some(Poll::Ready(Err(io_failure(ctx, &e)))),
                    Poll::Pending => Some(timed_out(ctx, timer, deadline, traffic, cx)),
                };
                if let Some(failed) = failed {
                    return match (failed, answered) {
                        (Poll::Ready(Err(_)), Some(answer)) => Poll::Ready(Ok(cut(answer))),
                        (failed, _) => failed,
                    };
                }
            }
            loop {
                let mut buf = ctx.read_buf.borrow_mut();
                let mut read = ReadBuf::new(&mut buf[..]);
                match Pin::new(&mut *stream).poll_read(cx, &mut read) {
                    Poll::Ready(Ok(())) => {
                        let n = read.filled().len();
                        if n == 0 {
                            if traffic.last_rx.is_none() {
                                // A body that ran until close ended with the close.
                                traffic.last_read = Some(Instant::now());
                            }
                            return Poll::Ready(match parser.eof() {
                                Some(r) => Ok(Exchange {
                                    status: r.status,
                                    close: true,
                                    eof: true,
                                    drop_at_once: holding.is_some(),
                                }),
                                None => Err(ErrorClass::ClosedBeforeResponse),
                            });
                        }
                        let arrived = stream.last_rx();
                        let read_at = arrived.unwrap_or_else(Instant::now);
                        traffic.first_byte.get_or_insert(read_at);
                        traffic.last_rx = arrived;
                        traffic.last_read = Some(read_at);
                        traffic.received += n as u64;
                        traffic.unbooked += n as u64;
                        sink.bytes(&buf[..n]);
                        match parser.feed(&buf[..n]) {
                            Ok(Progress::NeedMore) if holding.is_some() && parser.continued() => {
                                // 100 Continue: the body goes now.
                                holding = None;
                                (upto, flushed) = (request.len(), false);
                                continue 'send;
                            }
                            Ok(Progress::NeedMore) => continue,
                            // Bytes beyond the response were never asked for (this connection
                            // does not pipeline: see `engine::pipeline`): the server's framing
                            // is wrong.
                            Ok(Progress::Complete(r)) if r.consumed < n => {
                                return Poll::Ready(Err(ErrorClass::ExtraBytes));
                            }
                            Ok(Progress::Complete(r))
                                if holding.is_some() && !r.close && !r.ambiguous_framing =>
                            {
                                // A final answer while the body waits, and the server goes on
                                // reading: the body goes, then the answer is the outcome.
                                holding = None;
                                answered = Some(Exchange {
                                    status: r.status,
                                    close: false,
                                    eof: false,
                                    drop_at_once: false,
                                });
                                (upto, flushed) = (request.len(), false);
                                continue 'send;
                            }
                            Ok(Progress::Complete(r)) => {
                                // A final answer that closes while the body waits: the body is
                                // never sent, and the connection is dropped at once (the server
                                // may wait for a body it will never get); so is one whose
                                // response was framed two ways.
                                let drop_at_once = holding.is_some() || r.ambiguous_framing;
                                return Poll::Ready(Ok(Exchange {
                                    status: r.status,
                                    close: r.close || drop_at_once,
                                    eof: false,
                                    drop_at_once,
                                }));
                            }
                            Err(_) => return Poll::Ready(Err(ErrorClass::MalformedResponse)),
                        }
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(io_failure(ctx, &e))),
                    Poll::Pending => {
                        let Some(until) = holding else {
                            return timed_out(ctx, timer, deadline, traffic, cx);
                        };
                        if until >= deadline {
                            return timed_out(ctx, timer, deadline, traffic, cx);
                        }
                        match timed_out(ctx, timer, until, traffic, cx) {
                            Poll::Pending => return Poll::Pending,
                            // No 100 in time: the body goes anyway.
                            Poll::Ready(_) => {
                                holding = None;
                                (upto, flushed) = (request.len(), false);
                                continue 'send;
                            }
                        }
                    }
                }
            }
        }
    })
    .await
}

/// The class of a failed read or write; a TLS alert after the handshake (a TLS 1.3 server
/// refusing the client certificate) has its words and fix kept as the class's detail.
pub(in crate::engine) fn io_failure(ctx: &ThreadCtx, e: &std::io::Error) -> ErrorClass {
    let class = ErrorClass::from_io(e);
    if let Some((_, detail)) = crate::tls::describe_after_handshake(e) {
        let phase = ctx.phase_at(Instant::now());
        super::note_detail(ctx, phase, class, Some(detail));
    }
    class
}

/// Books the request's written bytes (not yet booked) on the timeline and in the phase they
/// were written in. `at`: when, if known without reading the clock: bytes written in the
/// exchange's first poll left at its send time (the write's own microseconds apart), so the
/// usual request reads the clock once fewer.
fn book_sent(ctx: &ThreadCtx, traffic: &mut Traffic, at: Option<Instant>) {
    let unbooked = traffic.sent - traffic.booked_sent;
    if unbooked == 0 {
        return;
    }
    let now = at.unwrap_or_else(Instant::now);
    let phase = ctx.phase_at(now);
    let mut rec = ctx.recorder.borrow_mut();
    rec.timeline.at(now - ctx.start).bytes_sent += unbooked;
    rec.phase(phase).bytes_sent += unbooked;
    traffic.booked_sent = traffic.sent;
}

/// Called when the socket is not ready: books a long response's bytes on the timeline where
/// they arrived, then reports a timeout if the deadline has passed.
fn timed_out(
    ctx: &ThreadCtx,
    timer: &mut Pin<Box<Sleep>>,
    deadline: Instant,
    traffic: &mut Traffic,
    cx: &mut Context<'_>,
) -> Poll<Result<Exchange, ErrorClass>> {
    if traffic.unbooked > 0 {
        // Bytes are counted as they arrive, in the phase they arrive in: a response still
        // arriving when the run ends (a huge or dripping body) is abandoned, but its bytes
        // were received.
        let now = Instant::now();
        let phase = ctx.phase_at(now);
        let mut rec = ctx.recorder.borrow_mut();
        rec.timeline.at(now - ctx.start).bytes_received += traffic.unbooked;
        rec.phase(phase).bytes_received += traffic.unbooked;
        traffic.unbooked = 0;
    }
    match poll_deadline(timer, deadline, cx) {
        Poll::Ready(()) => Poll::Ready(Err(ErrorClass::RequestTimeout)),
        Poll::Pending => Poll::Pending,
    }
}

/// Ready once `deadline` has passed. The timer is moved only when it fires: it is never later
/// than the current deadline (deadlines only grow), so when it fires early we re-arm it for
/// the current request. A connection whose requests finish in time re-arms it once per
/// timeout period instead of once per request.
pub(in crate::engine) fn poll_deadline(
    timer: &mut Pin<Box<Sleep>>,
    deadline: Instant,
    cx: &mut Context<'_>,
) -> Poll<()> {
    let deadline = tokio::time::Instant::from_std(deadline);
    if timer.deadline() > deadline {
        timer.as_mut().reset(deadline);
    }
    loop {
        match timer.as_mut().poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(()) if tokio::time::Instant::now() >= deadline => return Poll::Ready(()),
            Poll::Ready(()) => timer.as_mut().reset(deadline),
        }
    }
}

/// Waits (bounded) for the server to close after a response that announced it would; true
/// when it did.
pub(in crate::engine) async fn await_close(
    stream: &mut Stream,
    timer: &mut Pin<Box<Sleep>>,
    deadline: Instant,
) -> bool {
    let mut scratch = [0u8; 512];
    poll_fn(|cx| loop {
        let mut read = ReadBuf::new(&mut scratch);
        match Pin::new(&mut *stream).poll_read(cx, &mut read) {
            Poll::Ready(Ok(())) if !read.filled().is_empty() => continue,
            Poll::Ready(_) => return Poll::Ready(true),
            Poll::Pending => return poll_deadline(timer, deadline, cx).map(|()| false),
        }
    })
    .await
}
