//! HTTP/2 in the closed loop: each connection carries `--streams` concurrent streams, and each
//! stream sends its next request when the last one ends, so the concurrency is connections x
//! streams. Over TLS, h2 is agreed by ALPN; over plain TCP, by prior knowledge (h2c). The h2
//! crate does the framing; this module drives it and records each request like HTTP/1.1's.
//!
//! When a connection dies (GOAWAY, reset, I/O error), its streams stop, the failures are
//! counted, and the connection is opened again while the run goes on. A request the server
//! says it did not process (a stream above a graceful GOAWAY's last stream id, RFC 9113
//! 6.8, or refused with REFUSED_STREAM, 8.7) is not a failure: it is sent again on the next
//! connection (closed loop), as its own request, not counted as issued twice; at most five
//! times, then it is counted failed (`unprocessed`). Bytes counted for
//! HTTP/2 are payload (DATA frame) bytes, not header or framing bytes.

use super::exchange::{
    connect, note_detail, record, record_failure, record_sent, settled, Due, FieldSink, Sent,
    Traffic,
};
use super::unprocessed::{Outcome, Owed};
use super::ThreadCtx;
use crate::error::ErrorClass;
use crate::stats::Phase;
use bytes::Bytes;
use h2::client::SendRequest;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

mod counted;
pub(super) mod grpc;
mod grpc_stream;
mod handshake;
mod pool;
pub(crate) use counted::WireBytes;
pub(super) use handshake::{handshake, handshake_unspawned};
pub(crate) use pool::Pool;
pub(super) use pool::Slot;

/// The request, ready to be cloned per stream (h2 takes ownership of each one).
#[derive(Debug, Clone)]
pub(crate) struct H2Request {
    pub method: http::Method,
    /// One per path of the rotation, in order.
    pub uris: Vec<http::Uri>,
    /// The rotation's next request on this thread (streams share it).
    pub next: std::cell::Cell<usize>,
    pub headers: http::HeaderMap,
    pub body: Bytes,
    /// A gRPC run's call: each answer is judged by its gRPC status (see `grpc`).
    pub grpc: Option<std::sync::Arc<crate::grpc::Call>>,
}

impl H2Request {
    pub fn from_config(config: &crate::config::RunConfig) -> Option<H2Request> {
        if !config.http2 {
            return None;
        }
        let scheme = if config.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let mut authority = config.url.authority.clone();
        let mut headers = http::HeaderMap::new();
        for (name, value) in &config.headers {
            // HTTP/2 carries the host in :authority.
            if name.eq_ignore_ascii_case("host") {
                authority = value.clone();
                continue;
            }
            if is_connection_specific(name) {
                continue;
            }
            if let (Ok(n), Ok(v)) = (
                http::header::HeaderName::from_bytes(name.as_bytes()),
                http::header::HeaderValue::from_str(value),
            ) {
                headers.append(n, v);
            }
        }
        let uris = config
            .paths
            .iter()
            .map(|path| format!("{scheme}://{authority}{path}").parse().ok())
            .collect::<Option<Vec<http::Uri>>>()?;
        Some(H2Request {
            method: http::Method::from_bytes(config.method.as_bytes()).ok()?,
            uris,
            next: std::cell::Cell::new(0),
            headers,
            body: Bytes::from(config.body.clone()),
            grpc: config.grpc.clone(),
        })
    }

    pub(super) fn build(&self) -> http::Request<()> {
        let mut req = http::Request::new(());
        *req.method_mut() = self.method.clone();
        let i = self.next.get();
        self.next.set((i + 1) % self.uris.len());
        *req.uri_mut() = self.uris[i].clone();
        *req.headers_mut() = self.headers.clone();
        req
    }
}

/// Whether a header is HTTP/1.1's alone: connection-specific, which HTTP/2 and HTTP/3 forbid
/// (RFC 9113 8.2.2, RFC 9114 4.2); a request carrying one is malformed.
pub(super) fn is_connection_specific(name: &str) -> bool {
    [
        "connection",
        "keep-alive",
        "transfer-encoding",
        "upgrade",
        "proxy-connection",
    ]
    .iter()
    .any(|h| name.eq_ignore_ascii_case(h))
}

/// Drives one HTTP/2 connection slot until the run ends, reconnecting when it dies.
pub(super) async fn drive(ctx: Rc<ThreadCtx>) {
    // Connections that failed in a row, or died before answering anything (a server that
    // does not speak HTTP/2): each waits longer before the next, as a closed loop's
    // connects do, instead of reopening thousands of times a second.
    let mut failures: u32 = 0;
    // Requests the server did not process, to send again (their budget already taken).
    let owed = Rc::new(Owed::default());
    loop {
        let Some((phase, claimed)) = owed.next_turn(&ctx, failures).await else {
            break;
        };
        let send = match open_connection(&ctx, phase).await {
            Ok(send) => send,
            Err(class) => {
                failures = failures.saturating_add(1);
                owed.connect_failed(&ctx, phase, class, claimed);
                continue;
            }
        };
        if claimed && phase == Phase::Measured {
            // Not a retry: the request the connect was made for, its budget already taken.
            owed.claim();
        }
        let answered_before = ctx
            .progress
            .completed
            .load(std::sync::atomic::Ordering::Relaxed);
        // Streams start as the server's SETTINGS_MAX_CONCURRENT_STREAMS lets them open.
        let credit = Rc::new(super::streams::Credit::default());
        let held_at = || Some(send.current_max_send_streams());
        let stream = || stream_loop(ctx.clone(), send.clone(), owed.clone(), credit.clone());
        let connection_died = super::streams::run(&ctx, &credit, held_at, stream).await;
        drop(send);
        if !connection_died && owed.is_empty() {
            break;
        }
        let answered = ctx
            .progress
            .completed
            .load(std::sync::atomic::Ordering::Relaxed);
        failures = if answered > answered_before {
            0
        } else {
            failures.saturating_add(1)
        };
        owed.after_connection(&ctx, failures);
    }
    let live = ctx.live_connections.get() - 1;
    ctx.live_connections.set(live);
    if live == 0 {
        ctx.all_done.notify_one();
    }
}

/// One stream's closed loop. Returns true when the connection died under it. A request the
/// server did not process is owed (`owed`) and sent first on the next connection.
async fn stream_loop(
    ctx: Rc<ThreadCtx>,
    send: SendRequest<Bytes>,
    owed: Rc<Owed>,
    credit: Rc<super::streams::Credit>,
) -> bool {
    loop {
        let now = Instant::now();
        if ctx.over(now) {
            return false;
        }
        let phase = ctx.phase_at(now);
        let Some(refusals) = owed.next_request(&ctx, phase) else {
            return false;
        };
        let due = Due {
            phase,
            intended: None,
            noticed: now,
        };
        let outcome = plain_request(&ctx, &send, &due).await;
        // Owed: sent first on the next stream (issued once, by that send; counted as
        // retried each time it is put back), within `unprocessed`'s bounds.
        owed.put_back(&ctx, phase, refusals, outcome);
        credit.request_ended();
        if outcome.ends_connection() {
            return true;
        }
    }
}

/// A plain run's request (not a scenario's) on `send`'s connection, recorded: the run's
/// HTTP/2 request, or its gRPC call (judged by its status). The closed and the open loop's
/// one way to send.
pub(super) async fn plain_request(
    ctx: &ThreadCtx,
    send: &SendRequest<Bytes>,
    due: &Due,
) -> Outcome {
    let request = ctx.h2.as_ref().expect("HTTP/2 run");
    let (outcome, sent) = match &request.grpc {
        Some(call) => grpc::call(ctx, send, due.phase, call).await,
        None => {
            let (head, body) = (request.build(), request.body.clone());
            one_request(ctx, send, due.phase, head, body, &mut ()).await
        }
    };
    if let Some(sent) = sent {
        record(ctx, due, sent);
    }
    outcome
}

/// True when the server said it did not process the stream, so it may be sent again (RFC
/// 9113): a graceful GOAWAY (NO_ERROR) whose last stream id is below it (h2 fails only those
/// streams with the GOAWAY; those at or below it go on), or RST_STREAM with REFUSED_STREAM.
fn not_processed(e: &h2::Error) -> bool {
    e.is_remote()
        && ((e.is_go_away() && e.reason() == Some(h2::Reason::NO_ERROR))
            || (e.is_reset() && e.reason() == Some(h2::Reason::REFUSED_STREAM)))
}

/// A request's body as [`one_request`] sends it: all of it with the head (`Bytes`: every
/// plain request, a unary gRPC call), or a gRPC stream's first message with the head and
/// the rest while the response is read (`grpc_stream::Messages`).
pub(super) trait Outgoing {
    /// No body: the head ends the request.
    fn is_empty(&self) -> bool;
    /// Sends what goes with the head; true when the request is then complete.
    fn start(&mut self, tx: &mut h2::SendStream<Bytes>) -> Result<bool, h2::Error>;
    /// Sends the rest, beside the response's reading; called only when `start` said the
    /// request is not complete.
    fn rest(
        &mut self,
        tx: h2::SendStream<Bytes>,
    ) -> impl std::future::Future<Output = Result<(), h2::Error>>;
}

impl Outgoing for Bytes {
    #[inline]
    fn is_empty(&self) -> bool {
        Bytes::is_empty(self)
    }

    #[inline]
    fn start(&mut self, tx: &mut h2::SendStream<Bytes>) -> Result<bool, h2::Error> {
        tx.send_data(std::mem::take(self), true)?;
        Ok(true)
    }

    async fn rest(&mut self, _: h2::SendStream<Bytes>) -> Result<(), h2::Error> {
        Ok(())
    }
}

/// Sends one request on a stream of `send`'s connection: `request`'s head and `body`, its
/// response's header fields and body handed to `sink` (`()` for a plain run). It records the
/// send and takes back a request the server did not process (neither issued nor failed:
/// `None`, with [`Outcome::Refused`] or [`Outcome::NotProcessed`]); the caller records the
/// rest (`exchange::record`, or a scenario's judgement) from the [`Sent`] it gets.
pub(super) async fn one_request<S: FieldSink>(
    ctx: &ThreadCtx,
    send: &SendRequest<Bytes>,
    phase: Phase,
    request: http::Request<()>,
    mut body: impl Outgoing,
    sink: &mut S,
) -> (Outcome, Option<Sent>) {
    // Waits for a free stream under the server's SETTINGS_MAX_CONCURRENT_STREAMS.
    let mut ready = match send.clone().ready().await {
        Ok(s) => s,
        // The request never left, and the server is going away: send it on another.
        Err(e) if not_processed(&e) => return (Outcome::NotProcessed, None),
        Err(e) => {
            // The request never left: a connection-level failure.
            let class = classify(ctx, phase, &e);
            record_failure(ctx, phase, class, &Traffic::default(), false);
            return (Outcome::Died, Some(Sent::Unsent(class)));
        }
    };
    let sent_at = Instant::now();
    record_sent(ctx, phase);
    let mut traffic = Traffic::default();
    // Set when the server did not process the request: Some(true) when it refused only
    // the stream (the connection goes on), Some(false) when it is going away.
    let unprocessed = Cell::new(None);
    let classify = |ctx: &ThreadCtx, phase: Phase, e: &h2::Error| {
        if not_processed(e) {
            // Not a failure unless it came after the response began (said below), or is
            // given up (`unprocessed`): its code is not a failure's reason.
            unprocessed.set(Some(e.is_reset()));
            return ErrorClass::from_h2(e);
        }
        classify(ctx, phase, e)
    };
    let exchange = async {
        let end_of_stream = body.is_empty();
        let (response, mut body_tx) = ready
            .send_request(request, end_of_stream)
            .map_err(|e| classify(ctx, phase, &e))?;
        let complete = end_of_stream
            || body
                .start(&mut body_tx)
                .map_err(|e| classify(ctx, phase, &e))?;
        let receiving = async {
            let response = response.await.map_err(|e| classify(ctx, phase, &e))?;
            traffic.first_byte = Some(Instant::now());
            let status = response.status().as_u16();
            if let Some(w) = ctx.alt_svc.as_ref().filter(|w| w.take_turn()) {
                let fields = response.headers().get_all(http::header::ALT_SVC);
                if let Some(value) = crate::alt_svc::joined(fields.iter().map(|v| v.as_bytes())) {
                    w.seen(&value);
                }
            }
            let (head, mut body) = response.into_parts();
            sink.head(head.headers);
            while let Some(chunk) = body.data().await {
                let chunk = chunk.map_err(|e| classify(ctx, phase, &e))?;
                sink.data(&chunk);
                let _ = body.flow_control().release_capacity(chunk.len());
                if sink.enough() {
                    // The rest is not wanted (a capped gRPC stream): dropping the body resets
                    // the stream (RST_STREAM CANCEL).
                    return Ok(status);
                }
            }
            if S::TRAILERS {
                let trailers = body.trailers().await;
                if let Some(t) = trailers.map_err(|e| classify(ctx, phase, &e))? {
                    sink.trailers(t);
                }
            }
            Ok::<u16, ErrorClass>(status)
        };
        if complete {
            return receiving.await;
        }
        // A stream's messages go while its answers come; an answer that ends first (the
        // server's status before the last message) ends the call.
        let sending = body.rest(body_tx);
        tokio::pin!(sending, receiving);
        tokio::select! {
            biased;
            r = &mut receiving => r,
            s = &mut sending => {
                s.map_err(|e| classify(ctx, phase, &e))?;
                receiving.await
            }
        }
    };
    let outcome = match tokio::time::timeout(ctx.timeout, exchange).await {
        Ok(r) => r,
        Err(_) => Err(ErrorClass::RequestTimeout),
    };
    // What the thread's connections wrote and read since the last request ended (see
    // `counted`): frames and headers, not only bodies.
    let (written, read) = ctx.h2_wire.take();
    traffic.sent = written;
    traffic.received = read;
    traffic.unbooked = read;
    match outcome {
        Ok(status) => {
            let end = Instant::now();
            traffic.last_read = Some(end);
            let sent = Sent::Done {
                status,
                sent_at,
                end,
                traffic,
            };
            (Outcome::Done, Some(sent))
        }
        Err(_) if unprocessed.get().is_some() && traffic.first_byte.is_none() => {
            let mut rec = ctx.recorder.borrow_mut();
            settled(ctx, &mut rec);
            let stats = rec.phase(phase);
            stats.issued -= 1;
            stats.bytes_sent += traffic.sent - traffic.booked_sent;
            if unprocessed.get() == Some(true) {
                (Outcome::Refused, None)
            } else {
                (Outcome::NotProcessed, None)
            }
        }
        Err(class) => {
            if let Some(stream_only) = unprocessed.get() {
                let why = if stream_only {
                    "the server reset the stream with REFUSED_STREAM after answering"
                } else {
                    "the server went away (GOAWAY) after answering"
                };
                note_detail(ctx, phase, class, Some(why.into()));
            }
            let outcome = if matches!(
                class,
                ErrorClass::GoAway
                    | ErrorClass::ConnectionReset
                    | ErrorClass::ClosedBeforeResponse
                    | ErrorClass::ProtocolError
                    | ErrorClass::IoError
            ) {
                Outcome::Died
            } else {
                Outcome::Done
            };
            (outcome, Some(Sent::Failed { class, traffic }))
        }
    }
}

/// The class of an HTTP/2 failure, and the first of each class explained: a wrong preface
/// (a server that does not speak HTTP/2), a protocol violation, the code of the server's
/// GOAWAY or RST_STREAM.
fn classify(ctx: &ThreadCtx, phase: Phase, e: &h2::Error) -> ErrorClass {
    let class = ErrorClass::from_h2(e);
    // A wrong server preface, explained where it was seen (h2 keeps only the error's text).
    let preface = e
        .get_io()
        .map(|io| io.to_string())
        .and_then(|m| m.strip_prefix(super::h2_preface::MARK).map(String::from));
    let tls = e.get_io().and_then(crate::tls::describe_after_handshake);
    if let Some(why) = preface {
        note_detail(ctx, phase, class, Some(why));
    } else if let Some((_, why)) = tls {
        // A TLS 1.3 server refusing the client certificate, after the handshake.
        note_detail(ctx, phase, class, Some(why));
    } else if class == ErrorClass::ProtocolError {
        // A server that does not speak HTTP/2 at all was caught by the preface check; this
        // one does, and broke it (loadlab closed the connection with GOAWAY).
        let why = format!("the server's bytes are not valid HTTP/2 ({e})");
        note_detail(ctx, phase, class, Some(why));
    } else if let (true, Some(reason)) = (e.is_reset() && !e.is_remote(), e.reason()) {
        // No RST_STREAM came from the server: loadlab's HTTP/2 library reset the stream on
        // what the server sent (see `ErrorClass::from_h2`).
        let why = format!(
            "loadlab's HTTP/2 library reset the stream with {reason:?} on the server's \
             response: it breaks HTTP/2's rules for a response or a limit loadlab sets ({e})"
        );
        note_detail(ctx, phase, class, Some(why));
    }
    // The server's own GOAWAY or RST_STREAM carries an error code: the first one says why.
    if let (ErrorClass::GoAway | ErrorClass::StreamReset, Some(reason)) = (class, e.reason()) {
        let frame = if class == ErrorClass::GoAway {
            "GOAWAY"
        } else {
            "RST_STREAM"
        };
        note_detail(
            ctx,
            phase,
            class,
            Some(format!(
                "the server sent {frame} with {reason:?} ({})",
                reason.description()
            )),
        );
    }
    class
}

/// Opens an HTTP/2 connection and starts its driver. A failure is recorded as the failure of
/// a request of `phase`, and its class returned.
pub(super) async fn open_connection(
    ctx: &ThreadCtx,
    phase: Phase,
) -> Result<SendRequest<Bytes>, ErrorClass> {
    let io = match connect(ctx, phase).await {
        Ok(s) => s,
        Err((class, detail)) => {
            note_detail(ctx, phase, class, detail);
            record_failure(ctx, phase, class, &Traffic::default(), false);
            return Err(class);
        }
    };
    match handshake(io, ctx.tls.is_some(), ctx.h2_wire.clone()).await {
        Ok(send) => {
            if let Some(w) = &ctx.alt_svc {
                w.connection_opened();
            }
            Ok(send)
        }
        Err((class, detail)) => {
            note_detail(ctx, phase, class, Some(detail));
            record_failure(ctx, phase, class, &Traffic::default(), false);
            Err(class)
        }
    }
}
