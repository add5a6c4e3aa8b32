//! HTTP/3 over QUIC (`--http3`), driven as HTTP/2 is: in the closed loop each connection
//! carries `--streams` concurrent streams, each sending its next request when the last one
//! ends; in the open loop stream slots share a thread's pooled connections (`pool`). quinn
//! does QUIC (`quic`: one UDP endpoint per worker thread, its receive buffer sized), the h3
//! crates do HTTP/3; this module drives them and records each request as HTTP/2's are:
//! latency from the send, status, payload (DATA) bytes, and beside them the UDP bytes its
//! connection carried (`wire`); each connection is registered for the path's sampler while it
//! lives (`paths`). Failures are classified by `classify`. Version Negotiation
//! packets listing v1 are dropped as they arrive (`bogus_vn`).
//!
//! When a connection dies (idle timeout, stateless reset, CONNECTION_CLOSE) its streams stop,
//! their failures are counted, and the connection is opened again while the run goes on. A
//! request the server says it did not process (a stream reset with H3_REQUEST_REJECTED, RFC
//! 9114 4.1.1, or a GOAWAY received before it was sent) is sent again on the next stream
//! (closed loop), counted as `retried`, not as issued twice; at most five times, then it is
//! counted failed (`unprocessed`).
//!
//! With `--http3-0rtt` a connection that resumes a session sends its first requests as early
//! data (`early`); they are counted apart, and one the server discarded (0-RTT rejected) is
//! sent again on the same connection once its handshake is over, timed from its first send.
//! Without keep-alive (a closed loop only) each stream sends one request and the connection
//! closes when they end, a new one taking its place.
//!
//! It must not time a request from before its stream was asked for (a wait for the server's
//! stream credit is the server's, and counts).

mod bogus_vn;
mod classify;
mod early;
pub(crate) mod paths;
mod pool;
mod quic;
mod wire;

use super::exchange::{
    note_detail, record, record_failure, record_sent, settled, unsent_if_abandoned, Due, FieldSink,
    Sent, Traffic,
};
use super::h2::H2Request;
use super::unprocessed::{Outcome, Owed};
use super::ThreadCtx;
use crate::error::ErrorClass;
use crate::stats::Phase;
use bytes::{Buf, Bytes};
use classify::StreamFailure;
use std::cell::OnceCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use pool::Pool;
pub(crate) use pool::Slot;
pub(crate) use quic::client_config;
pub use quic::RCVBUF_BYTES;

/// A handle that opens streams on one HTTP/3 connection.
pub(super) type SendRequest = ::h3::client::SendRequest<early::Opener, Bytes>;

/// One HTTP/3 connection as its streams hold it (cloned per stream).
#[derive(Clone)]
pub(super) struct Handle {
    send: SendRequest,
    /// A 0-RTT connection's handshake, whose first requests went early.
    early: Option<Rc<early::Early>>,
    /// The connection's UDP bytes, booked as its requests end.
    wire: Rc<wire::Wire>,
    /// Its streams waiting for QUIC's stream credit, and open (see `streams`).
    credit: Rc<super::streams::Credit>,
}

/// What every worker thread of an HTTP/3 run is given alike.
#[derive(Clone)]
pub(crate) struct H3Shared {
    /// QUIC's client configuration (the run's TLS settings, ALPN h3).
    pub client: quinn::ClientConfig,
    /// The name the server's certificate is checked against (SNI).
    pub server_name: String,
    /// The request (HTTP/2's: the same pseudo-headers and rules on headers).
    pub request: H2Request,
    /// `--http3-0rtt`: a connection holding a session ticket starts as a 0-RTT one.
    pub zero_rtt: bool,
    /// The least receive buffer any thread's UDP socket got, in bytes (`u64::MAX`: no socket
    /// yet), for the result's warning.
    pub rcvbuf_bytes: Arc<AtomicU64>,
}

impl H3Shared {
    pub fn from_config(config: &crate::config::RunConfig) -> Option<H3Shared> {
        if !config.http3 {
            return None;
        }
        let tls = config.tls.as_ref()?;
        // Validation built it once already: an https URL and TLS 1.3 are checked there.
        let client = client_config(tls, config.http3_0rtt).ok()?;
        let as_h2 = crate::config::RunConfig {
            http2: true,
            ..config.clone()
        };
        Some(H3Shared {
            client,
            server_name: config.url.host.clone(),
            request: H2Request::from_config(&as_h2)?,
            zero_rtt: config.http3_0rtt,
            rcvbuf_bytes: Arc::new(AtomicU64::new(u64::MAX)),
        })
    }

    fn build(&self) -> http::Request<()> {
        let r = &self.request;
        let mut req = http::Request::new(());
        *req.method_mut() = r.method.clone();
        let i = r.next.get();
        r.next.set((i + 1) % r.uris.len());
        *req.uri_mut() = r.uris[i].clone();
        *req.headers_mut() = r.headers.clone();
        req
    }
}

/// One worker thread's HTTP/3 state: its endpoint (bound on first use, inside the thread's
/// event loop) and, in an open loop, its pooled connections.
pub(crate) struct H3Thread {
    shared: H3Shared,
    endpoint: OnceCell<Result<quinn::Endpoint, quic::OpenError>>,
    pub(super) pool: Pool,
}

impl H3Thread {
    pub fn new(shared: H3Shared) -> H3Thread {
        H3Thread {
            shared,
            endpoint: OnceCell::new(),
            pool: Pool::default(),
        }
    }

    fn endpoint(&self, target: SocketAddr) -> Result<quinn::Endpoint, quic::OpenError> {
        self.endpoint
            .get_or_init(|| {
                quic::bind(target, &self.shared.client, &self.shared.rcvbuf_bytes).map_err(|e| {
                    (
                        ErrorClass::from_connect(&e),
                        format!("cannot open a UDP socket for QUIC: {e}"),
                    )
                })
            })
            .clone()
    }

    /// At the run's end, once its tasks are gone: closes every connection at once
    /// (CONNECTION_CLOSE), so the server frees them now, not after its idle timeout.
    pub fn close(&self, runtime: &tokio::runtime::Runtime) {
        if let Some(Ok(endpoint)) = self.endpoint.get() {
            endpoint.close(0u32.into(), b"run over");
            // The endpoint's driver sends the frames: give it a few turns, no more (the
            // thread's end is the run's).
            runtime.block_on(async {
                for _ in 0..4 {
                    tokio::task::yield_now().await;
                }
            });
        }
    }
}

/// Opens a connection for a request of `phase`; a failure is recorded as that request's, and
/// an opening the run's end abandoned leaves it due and never sent, as over TCP.
pub(super) async fn open_connection(ctx: &ThreadCtx, phase: Phase) -> Result<Handle, ErrorClass> {
    match unsent_if_abandoned(ctx, phase, quic::open(ctx, phase)).await {
        Ok(send) => Ok(send),
        Err((class, why)) => {
            note_detail(ctx, phase, class, Some(why));
            record_failure(ctx, phase, class, &Traffic::default(), false);
            Err(class)
        }
    }
}

/// Drives one HTTP/3 connection slot of the closed loop until the run ends, reconnecting
/// when its connection dies (as HTTP/2's `drive`, whose comments apply).
pub(super) async fn drive(ctx: Rc<ThreadCtx>) {
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
            // The request the connection was opened for: its budget is taken.
            owed.claim();
        }
        let answered_before = ctx
            .progress
            .completed
            .load(std::sync::atomic::Ordering::Relaxed);
        // Streams start as the server's stream credit lets them open.
        let credit = send.credit.clone();
        let held_at = || credit.held_at();
        let stream = || stream_loop(ctx.clone(), send.clone(), owed.clone());
        let connection_died = super::streams::run(&ctx, &credit, held_at, stream).await;
        drop(send);
        // Without keep-alive the connection ends with its streams' requests: the loop opens
        // the next one.
        if !connection_died && owed.is_empty() && ctx.keepalive {
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

/// One stream's closed loop. Returns true when the connection died under it.
async fn stream_loop(ctx: Rc<ThreadCtx>, mut send: Handle, owed: Rc<Owed>) -> bool {
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
        let h3 = &ctx.h3.as_ref().expect("HTTP/3 run").shared;
        let (outcome, sent) = one_request(
            &ctx,
            &mut send,
            phase,
            || h3.build(),
            h3.request.body.clone(),
            &mut (),
        )
        .await;
        if let Some(sent) = sent {
            record(&ctx, &due, sent);
        }
        owed.put_back(&ctx, phase, refusals, outcome);
        send.credit.request_ended();
        if outcome.ends_connection() {
            return true;
        }
        if outcome == Outcome::Done && !ctx.keepalive {
            return false;
        }
    }
}

/// One request's exchange on a new stream of `conn`: its status, or how it failed; the
/// response's header fields and body go to `sink`. `went_early`: its stream opened before
/// the 0-RTT handshake ended.
async fn exchange<S: FieldSink>(
    conn: &mut Handle,
    request: http::Request<()>,
    body: Bytes,
    sink: &mut S,
    traffic: &mut Traffic,
    went_early: &mut bool,
) -> Result<u16, ::h3::error::StreamError> {
    // Until the stream opens it waits for QUIC's stream credit: the server's limit.
    let mut asking = conn.credit.asking();
    let mut stream = conn.send.send_request(request).await?;
    asking.opened();
    let early = conn.early.as_deref();
    *went_early = early.is_some_and(|e| e.take_early(stream.id()));
    traffic.sent += send_body(&mut stream, body).await?;
    let response = stream.recv_response().await?;
    traffic.first_byte = Some(Instant::now());
    let status = response.status().as_u16();
    sink.head(response.into_parts().0.headers);
    while let Some(mut chunk) = stream.recv_data().await? {
        let n = chunk.remaining();
        // Most DATA frames arrive in one piece (`chunk()` is then all of it).
        while chunk.has_remaining() {
            let piece = chunk.chunk();
            sink.data(piece);
            let len = piece.len();
            chunk.advance(len);
        }
        traffic.received += n as u64;
        traffic.unbooked += n as u64;
    }
    Ok(status)
}

/// Sends a request's `body` (none if empty) and ends the request; the body's bytes sent (none
/// if the server stopped them). A server may answer before it has read the whole request and stop the client's
/// sending (RFC 9114 4.1: STOP_SENDING with H3_NO_ERROR; a quinn server that drops a stream
/// it has not read to the end sends code 0): that ends the sending, not the request, and a
/// client must not discard the response. So a stop is not an error here: the response, read
/// next, says how the request went (a server that refused it also reset the stream, and
/// that reset is met there).
pub async fn send_body<S>(
    stream: &mut ::h3::client::RequestStream<S, Bytes>,
    body: Bytes,
) -> Result<u64, ::h3::error::StreamError>
where
    S: ::h3::quic::SendStream<Bytes>,
{
    let stopped = |sent: Result<(), ::h3::error::StreamError>| match sent {
        Ok(()) => Ok(false),
        Err(::h3::error::StreamError::RemoteTerminate { .. }) => Ok(true),
        Err(e) => Err(e),
    };
    let len = body.len() as u64;
    if len > 0 && stopped(stream.send_data(body).await)? {
        return Ok(0);
    }
    stopped(stream.finish().await)?;
    Ok(len)
}

/// Sends one request on a new stream of `conn`, as HTTP/2's `one_request` does (the request
/// `build` makes and `body`, the response's fields and body to `sink`; the caller records
/// the [`Sent`], a request the server did not process is taken back: `None`). A request
/// that went as 0-RTT early data and was discarded by the server is sent again at once on
/// the same connection, its handshake now over (counted in `retried`, timed from its first
/// send).
pub(super) async fn one_request<S: FieldSink>(
    ctx: &ThreadCtx,
    conn: &mut Handle,
    phase: Phase,
    build: impl Fn() -> http::Request<()>,
    body: Bytes,
    sink: &mut S,
) -> (Outcome, Option<Sent>) {
    let sent_at = Instant::now();
    let deadline = tokio::time::Instant::from_std(sent_at + ctx.timeout);
    record_sent(ctx, phase);
    let mut traffic = Traffic::default();
    let exchange = async {
        loop {
            let mut went_early = false;
            let outcome = exchange(
                conn,
                build(),
                body.clone(),
                sink,
                &mut traffic,
                &mut went_early,
            )
            .await;
            let Some(early) = conn.early.as_deref() else {
                return outcome;
            };
            quic::record_early_handshake(ctx, phase, early);
            if !went_early {
                return outcome;
            }
            early.early_ended();
            let send_again = {
                let mut rec = ctx.recorder.borrow_mut();
                let stats = rec.phase(phase);
                stats.early.counts.requests += 1;
                match early.outcome() {
                    early::Outcome::Accepted => {
                        stats.early.counts.requests_accepted += 1;
                        false
                    }
                    // Discarded unread: the server never saw it.
                    early::Outcome::Rejected
                        if outcome.is_err() && traffic.first_byte.is_none() =>
                    {
                        stats.early.counts.requests_rejected += 1;
                        stats.retried += 1;
                        true
                    }
                    _ => false,
                }
            };
            if !send_again {
                return outcome;
            }
            early.early_all_ended().await;
        }
    };
    let outcome = tokio::time::timeout_at(deadline, exchange).await;
    conn.wire.book(ctx, phase);
    let failure = match outcome {
        Ok(Ok(status)) => {
            let end = Instant::now();
            traffic.last_read = Some(end);
            let sent = Sent::Done {
                status,
                sent_at,
                end,
                traffic,
            };
            return (Outcome::Done, Some(sent));
        }
        // A 0-RTT connection whose handshake never ended: its requests went nowhere.
        _ if conn.early.as_ref().is_some_and(|e| e.timed_out()) => {
            let (class, why) = classify::no_handshake_reply(ctx.address);
            StreamFailure::Connection(class, why)
        }
        Ok(Err(e)) => classify::stream(&e),
        Err(_) => StreamFailure::Stream(ErrorClass::RequestTimeout, String::new()),
    };
    match failure {
        StreamFailure::NotProcessed { stream_only } if traffic.first_byte.is_none() => {
            let mut rec = ctx.recorder.borrow_mut();
            settled(ctx, &mut rec);
            let stats = rec.phase(phase);
            stats.issued -= 1;
            stats.bytes_sent += traffic.sent - traffic.booked_sent;
            if stream_only {
                (Outcome::Refused, None)
            } else {
                (Outcome::NotProcessed, None)
            }
        }
        StreamFailure::NotProcessed { stream_only } => {
            let (class, why) = if stream_only {
                (
                    ErrorClass::StreamReset,
                    "the server reset the stream with H3_REQUEST_REJECTED after answering",
                )
            } else {
                (ErrorClass::GoAway, "the server went away (GOAWAY)")
            };
            note_detail(ctx, phase, class, Some(why.into()));
            let outcome = if stream_only {
                Outcome::Done
            } else {
                Outcome::Died
            };
            (outcome, Some(Sent::Failed { class, traffic }))
        }
        StreamFailure::Connection(class, why) => {
            note_detail(ctx, phase, class, Some(why));
            (Outcome::Died, Some(Sent::Failed { class, traffic }))
        }
        StreamFailure::Stream(class, why) => {
            if !why.is_empty() {
                note_detail(ctx, phase, class, Some(why));
            }
            (Outcome::Done, Some(Sent::Failed { class, traffic }))
        }
    }
}
