//! One request on one connection, shared by the closed and the open loop: connect if needed,
//! send the request, read the response, record the outcome. The pieces live beside it:
//! `stream` (the socket and how it is opened), `wire` (the bytes of one request and its
//! response: the hot path), `record` (the outcome in the totals). This file holds the
//! connection slot ([`Conn`]) that strings them together; it parses nothing itself.

mod record;
mod stream;
mod wire;

use super::ThreadCtx;
use crate::error::ErrorClass;
use crate::http1::ResponseParser;
use crate::stats::Phase;
use std::pin::Pin;
use std::time::{Duration, Instant};
use tokio::time::Sleep;

pub(super) use record::{
    note_detail, record_failure, record_sent, record_success, settled, unsent_if_abandoned,
};
pub(super) use stream::{connect, dial, Dialed, Dialer, Io, Stream};
use wire::exchange;
pub(super) use wire::{await_close, io_failure, poll_deadline};

/// The outcome of one request on an open connection.
#[derive(Clone, Copy)]
struct Exchange {
    status: u16,
    /// The connection cannot carry another request.
    close: bool,
    /// The server already closed its side (the body ran until close).
    eof: bool,
    /// The connection is dropped at once, not waited on to close: the request's body was
    /// held back for `Expect: 100-continue` and never sent (the server answered first and
    /// said it closes, or the body could not follow its answer), or the response came with
    /// both Content-Length and Transfer-Encoding (RFC 9112 6.3: not reused; the server
    /// announced no close).
    drop_at_once: bool,
}

/// Bytes and moments of one request, whatever its outcome.
#[derive(Default)]
pub(super) struct Traffic {
    pub sent: u64,
    /// Of `sent`, what is already on the timeline and in the phase's count: a request's bytes
    /// are booked once written, so one still in flight when the run ends counts as sent.
    pub booked_sent: u64,
    pub received: u64,
    /// Received bytes not yet put on the timeline.
    pub unbooked: u64,
    pub first_byte: Option<Instant>,
    /// When the last bytes arrived, by the kernel's stamp (stamped connections only).
    pub last_rx: Option<Instant>,
    /// When the last read returned (its bytes' stamp where there is one), or when the peer's
    /// close was read: the response's end. One clock read per read, where the end was read
    /// again after parsing (and the first byte's moment on the first read): a read ends
    /// most responses, so that is one clock read fewer per request.
    pub last_read: Option<Instant>,
}

/// What a caller wants of a response's bytes beyond where it ends: nothing for a plain run
/// (`()`, compiled away), the head and perhaps the body for a scenario step (see
/// `scenario::wire`). Fed every read as it arrives, before the parser sees it.
pub(super) trait Sink {
    fn bytes(&mut self, data: &[u8]);
}

impl Sink for () {
    #[inline(always)]
    fn bytes(&mut self, _: &[u8]) {}
}

/// What a caller wants of an HTTP/2 or HTTP/3 response beyond its status: nothing for a
/// plain run (`()`), its header fields and perhaps its body for a scenario step (see
/// `scenario::mux`). The protocol's library has parsed the response: there are no bytes of
/// a head to keep, as over HTTP/1.1.
pub(super) trait FieldSink {
    /// The response's header fields (pseudo-headers removed), once they arrive.
    fn head(&mut self, headers: http::HeaderMap);
    /// A piece of the body, as it arrives (DATA payload).
    fn data(&mut self, chunk: &[u8]);
    /// Whether the response's trailers are read (gRPC's status is in them); a plain run
    /// does not wait on them.
    const TRAILERS: bool = false;
    /// The response's trailers, when [`FieldSink::TRAILERS`] and it had some.
    fn trailers(&mut self, _trailers: http::HeaderMap) {}
    /// After each piece of the body: true when no more of it is wanted (a gRPC server
    /// stream at its cap); the stream is then ended by the client. HTTP/2 only.
    #[inline(always)]
    fn enough(&self) -> bool {
        false
    }
}

impl FieldSink for () {
    #[inline(always)]
    fn head(&mut self, _: http::HeaderMap) {}
    #[inline(always)]
    fn data(&mut self, _: &[u8]) {}
}

/// How a request went, for a caller that records it itself: a scenario's (see
/// [`Conn::send`] and `scenario::mux`), which judges the response first, and HTTP/2's and
/// HTTP/3's, which share one exchange with the scenarios (recorded by [`record`]).
pub(super) enum Sent {
    /// A full response. `end` is when it ended (before any wait for the server to close).
    Done {
        status: u16,
        sent_at: Instant,
        end: Instant,
        traffic: Traffic,
    },
    /// Sent, and failed: the caller records the failure (`record_failure(.., true)`).
    Failed { class: ErrorClass, traffic: Traffic },
    /// Never sent, and already recorded as a failed request: the connection could not be
    /// opened, or (HTTP/2, HTTP/3) a scenario's request is not one the protocol can carry.
    Unsent(ErrorClass),
}

/// Records a request's outcome as a plain run does: an answer is a success whatever its
/// status (a scenario judges it first instead).
pub(super) fn record(ctx: &ThreadCtx, due: &Due, sent: Sent) {
    match sent {
        Sent::Done {
            status,
            sent_at,
            traffic,
            ..
        } => {
            record_success(ctx, due, sent_at, status, &traffic);
        }
        Sent::Failed { class, traffic } => record_failure(ctx, due.phase, class, &traffic, true),
        Sent::Unsent(_) => {}
    }
}

/// When a request was meant to go, and when the generator got to it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Due {
    pub phase: Phase,
    /// The intended send time; `None` in a closed loop, where a request is intended when it
    /// is sent.
    pub intended: Option<Instant>,
    /// When the generator noticed the request was due (open loop's own lateness; a wait for
    /// a busy connection is the target's, not counted: see `open::OpenState::noticed`).
    pub noticed: Instant,
}

/// How long to wait for a server to close a connection it said it would close.
pub(super) const MAX_CLOSE_WAIT: Duration = Duration::from_millis(250);

/// A connection slot: the socket (when open), its parser and its timeout timer.
pub(super) struct Conn {
    stream: Option<Stream>,
    parser: ResponseParser,
    timer: Pin<Box<Sleep>>,
    /// The rotation's next request on this connection.
    next: usize,
    /// Connects that failed in a row (reset by one that works).
    failed_connects: u32,
    /// When the last response finished arriving, by the kernel's stamp (stamped connections
    /// after a success): from then on the connection was free, whenever loadlab read it.
    free_since: Option<Instant>,
}

pub(super) use super::backoff::{back_off, backoff_after};

impl Conn {
    pub fn new(ctx: &ThreadCtx) -> Conn {
        Conn {
            stream: None,
            parser: ResponseParser::new(ctx.requests[0].is_head),
            // Armed with the first request's deadline on first use; see `poll_deadline`.
            timer: Box::pin(tokio::time::sleep(Duration::from_secs(86_400))),
            next: 0,
            failed_connects: 0,
            free_since: None,
        }
    }

    /// A connection slot over a connection already open (an open loop's, opened before the
    /// start: see `open::preopen`).
    pub fn with_stream(ctx: &ThreadCtx, stream: Stream) -> Conn {
        let mut conn = Conn::new(ctx);
        conn.opened(ctx, stream);
        conn
    }

    /// A new connection in this slot: its first response's `Alt-Svc` is read while the run
    /// still looks for one.
    fn opened(&mut self, ctx: &ThreadCtx, stream: Stream) {
        self.stream = Some(stream);
        self.failed_connects = 0;
        if ctx.alt_svc.as_ref().is_some_and(|w| w.wanted()) {
            self.parser.watch_alt_svc();
        }
    }

    /// After a response: hands on what the parser's watch read (one check when it read
    /// nothing, as on every response but a watched one).
    #[inline]
    fn alt_svc_seen(&mut self, ctx: &ThreadCtx) {
        if let Some(value) = self.parser.take_alt_svc() {
            if let Some(w) = &ctx.alt_svc {
                w.seen(&value);
            }
        }
    }

    /// How long to wait before trying this connection again, after connects that failed in
    /// a row: 10 ms, doubling, at most 100 ms; `None` when the last connect worked.
    pub fn backoff(&self) -> Option<Duration> {
        backoff_after(self.failed_connects)
    }

    /// Closes the socket, if open (a closed loop whose stage dropped this connection).
    pub fn close(&mut self) {
        self.stream = None;
    }

    /// Opens the connection unless it is open. A failure is recorded as the failure of the
    /// request it was opened for, and returns false.
    pub async fn connect(&mut self, ctx: &ThreadCtx, phase: Phase) -> bool {
        if self.stream.is_some() {
            return true;
        }
        match connect(ctx, phase).await {
            Ok(s) => {
                self.opened(ctx, s);
                true
            }
            Err((class, detail)) => {
                self.failed_connects = self.failed_connects.saturating_add(1);
                note_detail(ctx, phase, class, detail);
                record_failure(ctx, phase, class, &Traffic::default(), false);
                false
            }
        }
    }

    /// When this connection's last response finished arriving, where the kernel stamped it.
    pub fn free_since(&self) -> Option<Instant> {
        self.free_since
    }

    /// Sends one request (opening the connection first if needed) and records the outcome.
    pub async fn request(&mut self, ctx: &ThreadCtx, due: Due) {
        if !self.connect(ctx, due.phase).await {
            return;
        }
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        let sent_at = Instant::now();
        record_sent(ctx, due.phase);
        let mut traffic = Traffic::default();
        let deadline = sent_at + ctx.timeout;
        let request = &ctx.requests[self.next];
        self.next = (self.next + 1) % ctx.requests.len();
        let outcome = exchange(
            ctx,
            sent_at,
            &request.bytes,
            request.body_at,
            stream,
            &mut self.parser,
            &mut self.timer,
            deadline,
            &mut traffic,
            &mut (),
        )
        .await;
        self.free_since = None;
        match outcome {
            Ok(done) => {
                record_success(ctx, &due, sent_at, done.status, &traffic);
                self.alt_svc_seen(ctx);
                self.free_since = traffic.last_rx;
                if done.close || !ctx.keepalive {
                    self.finish_close(ctx, due.phase, &done).await;
                }
            }
            Err(class) => {
                record_failure(ctx, due.phase, class, &traffic, true);
                self.stream = None;
                self.parser.reset();
            }
        }
    }
}

impl Conn {
    /// Drops the connection after a response that ends it; when the server announced the
    /// close, lets it close first so TIME_WAIT stays on its side. A server that announced
    /// close but does not close is not waited for long: the slot is needed for the next
    /// request.
    async fn finish_close(&mut self, ctx: &ThreadCtx, phase: Phase, done: &Exchange) {
        if let Some(mut s) = self.stream.take() {
            if done.close && !done.eof && !done.drop_at_once {
                let wait = ctx.timeout.min(MAX_CLOSE_WAIT);
                let began = Instant::now();
                let closed = await_close(&mut s, &mut self.timer, began + wait).await;
                let mut rec = ctx.recorder.borrow_mut();
                let stats = rec.phase(phase);
                stats.close_wait += began.elapsed();
                if !closed {
                    stats.close_wait_timeouts += 1;
                }
            }
        }
    }

    /// A scenario's request: `request` bytes on this connection (opened first if needed),
    /// its response's bytes fed to `sink`. Unlike [`Conn::request`] it records only the
    /// connection and the send; the caller judges the response and records the outcome.
    /// `close_after`: the request asked for `Connection: close` (a new connection per
    /// request), so the connection is not reused.
    pub async fn send<S: Sink>(
        &mut self,
        ctx: &ThreadCtx,
        phase: Phase,
        request: &[u8],
        is_head: bool,
        close_after: bool,
        sink: &mut S,
    ) -> Sent {
        if self.stream.is_none() {
            match connect(ctx, phase).await {
                Ok(s) => self.opened(ctx, s),
                Err((class, detail)) => {
                    self.failed_connects = self.failed_connects.saturating_add(1);
                    note_detail(ctx, phase, class, detail);
                    record_failure(ctx, phase, class, &Traffic::default(), false);
                    return Sent::Unsent(class);
                }
            }
        }
        let Some(stream) = self.stream.as_mut() else {
            unreachable!("opened above");
        };
        self.parser.set_request_is_head(is_head);
        let sent_at = Instant::now();
        record_sent(ctx, phase);
        let mut traffic = Traffic::default();
        let deadline = sent_at + ctx.timeout;
        let outcome = exchange(
            ctx,
            sent_at,
            request,
            crate::http1::request::expect_continue_at(request),
            stream,
            &mut self.parser,
            &mut self.timer,
            deadline,
            &mut traffic,
            sink,
        )
        .await;
        match outcome {
            Ok(done) => {
                self.alt_svc_seen(ctx);
                let end = traffic
                    .last_rx
                    .or(traffic.last_read)
                    .map_or_else(Instant::now, |rx| rx.max(sent_at));
                if done.close || close_after || !ctx.keepalive {
                    self.finish_close(ctx, phase, &done).await;
                }
                Sent::Done {
                    status: done.status,
                    sent_at,
                    end,
                    traffic,
                }
            }
            Err(class) => {
                self.stream = None;
                self.parser.reset();
                Sent::Failed { class, traffic }
            }
        }
    }
}
