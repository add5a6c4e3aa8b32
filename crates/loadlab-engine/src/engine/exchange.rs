//! One request on one connection, shared by the closed and the open loop: connect if needed,
//! write the request, read the response, record the outcome. This is the hot path. Per
//! request it does one write, usually one read, three clock reads and no allocation: the
//! request bytes are shared, the read buffer is the thread's, and the timeout timer is armed
//! lazily (see [`poll_deadline`]), so steady state touches no timer.
//!
//! Reads go through `AsyncRead::poll_read` on purpose: on epoll, tokio treats a short read as
//! proof the socket is drained and skips the `EAGAIN` read a `readable()`/`try_read` loop
//! would make on every request.

use super::ThreadCtx;
use crate::error::ErrorClass;
use crate::http1::{Progress, ResponseParser};
use crate::stats::Phase;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// The outcome of one request on an open connection.
struct Exchange {
    status: u16,
    /// The connection cannot carry another request.
    close: bool,
    /// The server already closed its side (the body ran until close).
    eof: bool,
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

/// How a scenario's request went (see [`Conn::send`]); the caller records it.
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
    /// The connection could not be opened: already recorded as a failed request.
    NotConnected(ErrorClass),
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
const MAX_CLOSE_WAIT: Duration = Duration::from_millis(250);

/// An open connection: plain TCP, or TLS over TCP.
pub(super) enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
    /// Plain TCP whose reads carry the kernel's receive time (an open loop on a tick).
    Stamped(super::stamped::StampedTcp),
}

impl Stream {
    /// When the bytes of the last read arrived, where the kernel stamped them.
    #[inline]
    fn last_rx(&self) -> Option<Instant> {
        match self {
            Stream::Stamped(s) => s.last_rx(),
            _ => None,
        }
    }
}

impl AsyncRead for Stream {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Stream::Stamped(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Stream::Stamped(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    #[inline]
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(_) | Stream::Stamped(_) => Poll::Ready(Ok(())),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Stream::Stamped(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

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
                self.stream = Some(s);
                self.failed_connects = 0;
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
        {
            let mut rec = ctx.recorder.borrow_mut();
            rec.in_flight += 1;
            rec.phase(due.phase).issued += 1;
        }
        let mut traffic = Traffic::default();
        let deadline = sent_at + ctx.timeout;
        let request = &ctx.requests[self.next];
        self.next = (self.next + 1) % ctx.requests.len();
        let outcome = exchange(
            ctx,
            &request.bytes,
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
            if done.close && !done.eof {
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
                Ok(s) => {
                    self.stream = Some(s);
                    self.failed_connects = 0;
                }
                Err((class, detail)) => {
                    self.failed_connects = self.failed_connects.saturating_add(1);
                    note_detail(ctx, phase, class, detail);
                    record_failure(ctx, phase, class, &Traffic::default(), false);
                    return Sent::NotConnected(class);
                }
            }
        }
        let Some(stream) = self.stream.as_mut() else {
            unreachable!("opened above");
        };
        self.parser.set_request_is_head(is_head);
        let sent_at = Instant::now();
        {
            let mut rec = ctx.recorder.borrow_mut();
            rec.in_flight += 1;
            rec.phase(phase).issued += 1;
        }
        let mut traffic = Traffic::default();
        let deadline = sent_at + ctx.timeout;
        let outcome = exchange(
            ctx,
            request,
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
                let end = traffic
                    .last_rx
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

/// Opens a connection: TCP, then TLS for https. The failure carries a detail worth showing
/// (a certificate's problem) when there is one.
pub(super) async fn connect(
    ctx: &ThreadCtx,
    phase: Phase,
) -> Result<Stream, (ErrorClass, Option<String>)> {
    let started = Instant::now();
    let tcp = match tokio::time::timeout(ctx.connect_timeout, TcpStream::connect(ctx.address)).await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err((ErrorClass::from_connect(&e), None)),
        Err(_) => return Err((ErrorClass::ConnectTimeout, None)),
    };
    // Requests are written whole; Nagle would only delay them.
    let _ = tcp.set_nodelay(true);
    let connected = Instant::now();
    {
        let mut rec = ctx.recorder.borrow_mut();
        let stats = rec.phase(phase);
        stats.connections_opened += 1;
        stats
            .connect
            .saturating_record((connected - started).as_nanos() as u64);
    }
    let Some(tls) = &ctx.tls else {
        if let Some(clock) = ctx.stamp_clock {
            if super::stamped::StampedTcp::enable_stamps(&tcp) {
                return super::stamped::StampedTcp::new(tcp, clock)
                    .map(Stream::Stamped)
                    .map_err(|e| (ErrorClass::from_io(&e), None));
            }
        }
        return Ok(Stream::Plain(tcp));
    };
    let budget = ctx.connect_timeout.saturating_sub(connected - started);
    let handshake = tls.connector.connect(tls.server_name.clone(), tcp);
    let stream = match tokio::time::timeout(budget, handshake).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let (class, detail) = crate::tls::classify_handshake_error(&e);
            return Err((class, Some(detail)));
        }
        Err(_) => {
            return Err((
                ErrorClass::ConnectTimeout,
                Some("the TLS handshake did not finish within --connect-timeout".into()),
            ))
        }
    };
    let resumed = stream.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    let mut rec = ctx.recorder.borrow_mut();
    let stats = rec.phase(phase);
    stats
        .tls_handshake
        .saturating_record(connected.elapsed().as_nanos() as u64);
    if resumed {
        stats.tls_resumed += 1;
    } else {
        stats.tls_full += 1;
    }
    Ok(Stream::Tls(Box::new(stream)))
}

/// Writes the request and reads one full response, or fails with a class.
#[allow(clippy::too_many_arguments)]
async fn exchange<S: Sink>(
    ctx: &ThreadCtx,
    request: &[u8],
    stream: &mut Stream,
    parser: &mut ResponseParser,
    timer: &mut Pin<Box<Sleep>>,
    deadline: Instant,
    traffic: &mut Traffic,
    sink: &mut S,
) -> Result<Exchange, ErrorClass> {
    let mut written = 0;
    let mut flushed = false;
    poll_fn(|cx| {
        while written < request.len() {
            match Pin::new(&mut *stream).poll_write(cx, &request[written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(ErrorClass::ConnectionReset)),
                Poll::Ready(Ok(n)) => {
                    written += n;
                    traffic.sent += n as u64;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(ErrorClass::from_io(&e))),
                Poll::Pending => return timed_out(ctx, timer, deadline, traffic, cx),
            }
        }
        if !flushed {
            // A no-op for plain TCP; TLS may hold the last record until flushed.
            match Pin::new(&mut *stream).poll_flush(cx) {
                Poll::Ready(Ok(())) => {
                    flushed = true;
                    book_sent(ctx, traffic);
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(ErrorClass::from_io(&e))),
                Poll::Pending => return timed_out(ctx, timer, deadline, traffic, cx),
            }
        }
        loop {
            let mut buf = ctx.read_buf.borrow_mut();
            let mut read = ReadBuf::new(&mut buf[..]);
            match Pin::new(&mut *stream).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) => {
                    let n = read.filled().len();
                    if n == 0 {
                        return Poll::Ready(match parser.eof() {
                            Some(r) => Ok(Exchange {
                                status: r.status,
                                close: true,
                                eof: true,
                            }),
                            None => Err(ErrorClass::ClosedBeforeResponse),
                        });
                    }
                    let arrived = stream.last_rx();
                    if traffic.first_byte.is_none() {
                        traffic.first_byte = Some(arrived.unwrap_or_else(Instant::now));
                    }
                    traffic.last_rx = arrived;
                    traffic.received += n as u64;
                    traffic.unbooked += n as u64;
                    sink.bytes(&buf[..n]);
                    match parser.feed(&buf[..n]) {
                        Ok(Progress::NeedMore) => continue,
                        // Bytes beyond the response were never asked for (loadlab does not
                        // pipeline): the server's framing is wrong.
                        Ok(Progress::Complete(r)) if r.consumed < n => {
                            return Poll::Ready(Err(ErrorClass::ExtraBytes));
                        }
                        Ok(Progress::Complete(r)) => {
                            return Poll::Ready(Ok(Exchange {
                                status: r.status,
                                close: r.close,
                                eof: false,
                            }));
                        }
                        Err(_) => return Poll::Ready(Err(ErrorClass::MalformedResponse)),
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(ErrorClass::from_io(&e))),
                Poll::Pending => return timed_out(ctx, timer, deadline, traffic, cx),
            }
        }
    })
    .await
}

/// Books the request's written bytes (not yet booked) on the timeline and in the phase they
/// were written in.
fn book_sent(ctx: &ThreadCtx, traffic: &mut Traffic) {
    let unbooked = traffic.sent - traffic.booked_sent;
    if unbooked == 0 {
        return;
    }
    let now = Instant::now();
    let phase = if now < ctx.warmup_end {
        Phase::Warmup
    } else {
        Phase::Measured
    };
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
        let phase = if now < ctx.warmup_end {
            Phase::Warmup
        } else {
            Phase::Measured
        };
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
fn poll_deadline(timer: &mut Pin<Box<Sleep>>, deadline: Instant, cx: &mut Context<'_>) -> Poll<()> {
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
async fn await_close(stream: &mut Stream, timer: &mut Pin<Box<Sleep>>, deadline: Instant) -> bool {
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

pub(super) fn record_success(
    ctx: &ThreadCtx,
    due: &Due,
    sent_at: Instant,
    status: u16,
    t: &Traffic,
) -> Instant {
    // A stamped connection's response ended when its last bytes arrived; it may have been
    // read up to a tick later. Never before the request was sent, whatever the clocks did.
    let end = t.last_rx.map_or_else(Instant::now, |rx| rx.max(sent_at));
    let since_start = end - ctx.start;
    let mut rec = ctx.recorder.borrow_mut();
    rec.in_flight -= 1;
    let intended = due.intended.unwrap_or(sent_at);
    // A send a batch took early counts from when it left (see `pacing`).
    let response_ns = (end - super::pacing::latency_origin(intended, sent_at)).as_nanos() as u64;
    rec.intervals.record(since_start, response_ns);
    if ctx.first_left.get() && ctx.take_first_slot() {
        rec.first.all.saturating_record(response_ns);
        if due.phase == crate::stats::Phase::Measured {
            rec.first.measured.saturating_record(response_ns);
        }
        rec.first.last_end = rec.first.last_end.max(since_start);
    }
    let bucket = rec.timeline.at(since_start);
    bucket.completed += 1;
    bucket.bytes_sent += t.sent - t.booked_sent;
    bucket.bytes_received += t.unbooked;
    let open_loop = due.intended.is_some();
    let stats = rec.phase(due.phase);
    stats.completed += 1;
    stats.status[status as usize % 1000] += 1;
    stats.latency.saturating_record(response_ns);
    if let Some(first) = t.first_byte {
        stats
            .ttfb
            .saturating_record((first - sent_at).as_nanos() as u64);
    }
    if open_loop {
        stats
            .service
            .saturating_record((end - sent_at).as_nanos() as u64);
        stats
            .send_lag
            .saturating_record(sent_at.saturating_duration_since(intended).as_nanos() as u64);
        stats
            .scheduler_lag
            .saturating_record(due.noticed.saturating_duration_since(intended).as_nanos() as u64);
    }
    stats.bytes_sent += t.sent - t.booked_sent;
    // What was not booked as it arrived (see `timed_out`).
    stats.bytes_received += t.unbooked;
    // Single writer: a plain store, no locked read-modify-write.
    let p = &ctx.progress.completed;
    p.store(p.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    end
}

/// Keeps the first message seen for a failure class.
pub(super) fn note_detail(
    ctx: &ThreadCtx,
    phase: Phase,
    class: ErrorClass,
    detail: Option<String>,
) {
    if let Some(detail) = detail {
        let mut rec = ctx.recorder.borrow_mut();
        let slot = &mut rec.phase(phase).error_details[class as usize];
        if slot.is_none() {
            *slot = Some(detail);
        }
    }
}

/// `was_in_flight`: the request had been sent (a failed connect never was).
pub(super) fn record_failure(
    ctx: &ThreadCtx,
    phase: Phase,
    class: ErrorClass,
    t: &Traffic,
    was_in_flight: bool,
) {
    let mut rec = ctx.recorder.borrow_mut();
    if was_in_flight {
        rec.in_flight -= 1;
    } else {
        rec.phase(phase).issued += 1;
    }
    let bucket = rec.timeline.at(ctx.start.elapsed());
    bucket.failed += 1;
    bucket.bytes_sent += t.sent - t.booked_sent;
    bucket.bytes_received += t.unbooked;
    let stats = rec.phase(phase);
    stats.failed += 1;
    stats.errors[class as usize] += 1;
    stats.bytes_sent += t.sent - t.booked_sent;
    // What was not booked as it arrived (see `timed_out`).
    stats.bytes_received += t.unbooked;
    let p = &ctx.progress.failed;
    p.store(p.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}
