//! A virtual user's HTTP/2 or HTTP/3 connection (`--http2`, `--http3`): every request of the
//! user is a stream on it, and a page's requests go as concurrent streams on it, as a
//! browser's do over these protocols (instead of HTTP/1.1's six connections). The connection
//! is opened on the user's first request and kept (keep-alive) from one step and iteration
//! to the next; an open loop's finished iterations hand it on to the next ones.
//!
//! Each request goes through the protocol's own exchange (`h2::one_request`,
//! `h3::one_request`), the plain runs' code, so it is counted, timed and its failures
//! classified as theirs are; only the recording is the scenario's (`scenario::finish`). A
//! request the server did not process (REFUSED_STREAM, H3_REQUEST_REJECTED, a GOAWAY before
//! it) is sent again, on the same connection when only the stream was refused, else on a new
//! one, counted in `retried` and not as issued twice, as HTTP/2's closed loop does. A
//! connection that dies under a request fails that request; the next one opens another.
//!
//! `--new-connection-share` (`Connection: close` over HTTP/1.1, which HTTP/2 and HTTP/3 do
//! not have): a request drawn for a new connection ends the user's connection once its step
//! is over (a page's other streams are let finish), and the next request opens a new one.
//! So the same share of requests is followed by a connection's set-up.
//!
//! - `request`: a step's request as pseudo-headers and fields; `fields`: its response kept.

mod fields;
mod request;

use super::super::exchange::{
    backoff_after, note_detail, record_failure, FieldSink, Sent, Traffic,
};
use super::super::pool::{Opener, Opening};
use super::super::unprocessed::send_again;
use super::super::{h2, h3, ThreadCtx};
use crate::error::ErrorClass;
use crate::stats::Phase;
use bytes::Bytes;
use loadlab_scenario::{CookieJar, Request};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

pub(super) use fields::Fields;

/// One open connection of a user's.
struct Open {
    handle: Handle,
    /// A request on it failed with the connection: the next opens another.
    dead: Cell<bool>,
}

enum Handle {
    H2(::h2::client::SendRequest<Bytes>),
    H3(h3::Handle),
}

/// A virtual user's connection, shared by reference by the streams of a page (one thread: no
/// locks; nothing is borrowed across an await).
#[derive(Default)]
pub(super) struct Mux {
    current: RefCell<Option<Rc<Open>>>,
    /// One connection opened at a time: a page's other streams wait for it rather than
    /// open their own.
    opener: Opener,
    /// Connects that failed in a row (reset by one that works), for the back-off.
    failed_connects: Cell<u32>,
    /// A request drawn for a new connection was answered: the connection ends with the step.
    retiring: Cell<bool>,
}

/// What a single step's request needs beside the connection, kept by the user so that a
/// steady user reuses its buffers.
#[derive(Default)]
pub(super) struct MuxLane {
    pub mux: Mux,
    pub fields: Fields,
    pub buf: Vec<u8>,
}

/// A step's request, ready to go on a stream.
pub(super) struct Outgoing {
    head: http::Request<()>,
    body: Bytes,
}

impl Outgoing {
    /// A request built elsewhere (a gRPC step's call).
    pub fn new(head: http::Request<()>, body: Bytes) -> Outgoing {
        Outgoing { head, body }
    }
}

/// Builds a step's request for one send (see `request`). A request the protocol cannot carry
/// is recorded as a failed request of `phase` (a protocol error, with why) and comes back as
/// the [`Sent`] the step records.
pub(super) fn prepare(
    ctx: &ThreadCtx,
    phase: Phase,
    request: &Request,
    values: &[String],
    jar: &CookieJar,
    buf: &mut Vec<u8>,
) -> Result<Outgoing, Sent> {
    let https = ctx.tls.is_some();
    match request::build(request, values, jar.header(), https, buf) {
        Ok((head, body)) => Ok(Outgoing { head, body }),
        Err(why) => {
            let class = ErrorClass::ProtocolError;
            let protocol = if ctx.h3.is_some() { "HTTP/3" } else { "HTTP/2" };
            let why = format!("a scenario's request cannot go over {protocol}: {why}");
            note_detail(ctx, phase, class, Some(why));
            record_failure(ctx, phase, class, &Traffic::default(), false);
            Err(Sent::Unsent(class))
        }
    }
}

impl Mux {
    /// How long to wait before the next request, after connects that failed in a row (as
    /// HTTP/1.1's `Conn::backoff`); `None` when the last connect worked.
    pub fn backoff(&self) -> Option<Duration> {
        backoff_after(self.failed_connects.get())
    }

    /// Sends `out` on a stream of the user's connection (opened first if needed), its
    /// response to `fields` (a gRPC step's answer goes to its own sink). `close`: the request was drawn for a new connection, so this
    /// one ends with the step ([`Mux::step_ended`]). `None`: the run ended while a request
    /// the server did not process waited to go again (taken back, counted nowhere).
    pub async fn send(
        &self,
        ctx: &ThreadCtx,
        phase: Phase,
        out: &Outgoing,
        close: bool,
        fields: &mut impl FieldSink,
    ) -> Option<Sent> {
        // Times the request was sent and not processed by the server.
        let mut sends = 0;
        loop {
            let open = match self.connection(ctx, phase).await {
                Ok(open) => open,
                Err(class) => return Some(Sent::Unsent(class)),
            };
            let (outcome, sent) = match &open.handle {
                Handle::H2(send) => {
                    let head = request::copy(&out.head);
                    h2::one_request(ctx, send, phase, head, out.body.clone(), fields).await
                }
                Handle::H3(handle) => {
                    let mut handle = handle.clone();
                    let build = || request::copy(&out.head);
                    h3::one_request(ctx, &mut handle, phase, build, out.body.clone(), fields).await
                }
            };
            if outcome.ends_connection() {
                open.dead.set(true);
            }
            if let Some(how) = outcome.unprocessed() {
                // Not processed: taken back by the exchange, sent again (its budget taken),
                // at most `MAX_SENDS` times.
                sends += 1;
                if let Err(class) = send_again(ctx, phase, sends, how) {
                    return Some(Sent::Unsent(class));
                }
                if ctx.over(std::time::Instant::now()) {
                    return None;
                }
                continue;
            }
            if close {
                self.retiring.set(true);
            }
            return sent;
        }
    }

    /// At a step's end: a connection a request was drawn to end is dropped (the protocol's
    /// library then closes it: GOAWAY over HTTP/2, CONNECTION_CLOSE with H3_NO_ERROR over
    /// HTTP/3), so that the next request opens a new one.
    pub fn step_ended(&self) {
        if self.retiring.replace(false) {
            self.current.borrow_mut().take();
        }
    }

    /// The user's open connection, or a new one. A failed open was recorded as the failure
    /// of a request of `phase`; its class comes back.
    async fn connection(&self, ctx: &ThreadCtx, phase: Phase) -> Result<Rc<Open>, ErrorClass> {
        loop {
            if let Some(open) = self.current.borrow().as_ref().filter(|o| !o.dead.get()) {
                return Ok(open.clone());
            }
            let open = async {
                if ctx.h3.is_some() {
                    h3::open_connection(ctx, phase).await.map(Handle::H3)
                } else {
                    h2::open_connection(ctx, phase).await.map(Handle::H2)
                }
            };
            let handle = match self.opener.open_or_wait(open).await {
                Opening::Here(Ok(handle)) => handle,
                Opening::LookAgain => continue,
                Opening::FailedThere(class) => {
                    // The opening this stream waited for failed: its request fails with it,
                    // as the opener's did.
                    record_failure(ctx, phase, class, &Traffic::default(), false);
                    self.failed_connects
                        .set(self.failed_connects.get().saturating_add(1));
                    return Err(class);
                }
                Opening::Here(Err(class)) => {
                    self.failed_connects
                        .set(self.failed_connects.get().saturating_add(1));
                    return Err(class);
                }
            };
            self.failed_connects.set(0);
            let open = Rc::new(Open {
                handle,
                dead: Cell::new(false),
            });
            *self.current.borrow_mut() = Some(open.clone());
            return Ok(open);
        }
    }
}
