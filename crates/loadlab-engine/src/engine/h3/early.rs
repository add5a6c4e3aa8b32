//! 0-RTT (`--http3-0rtt`): a connection that resumes a session sends its first requests
//! before its handshake ends, as early data, and the server takes them or discards them
//! (quinn says which when the handshake ends). This module tells which requests went early:
//! the QUIC connection h3 drives is wrapped (`Conn`, `Opener`) so that each bidirectional
//! stream opened while the handshake was under way is noted by its id, which the request
//! then looks up. The handshake's end is read, not awaited, at the instant a stream opens
//! (one thread: quinn cannot end the handshake between the open and the look), so a stream
//! is early exactly when quinn sent it with the 0-RTT keys.
//!
//! It records nothing itself (the request's code does) and must not decide anything about a
//! connection without 0-RTT: there `Conn` only forwards.

use bytes::Bytes;
use futures_util::future::{FutureExt, Shared};
use h3::quic::{self, ConnectionErrorIncoming, StreamErrorIncoming, StreamId};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// One 0-RTT connection's state, shared by its streams' requests.
pub(crate) struct Early {
    /// Resolves when the handshake ends: whether the server took the early data (false too
    /// when the connection failed first: see [`Early::outcome`]).
    accepted: Shared<quinn::ZeroRttAccepted>,
    connection: quinn::Connection,
    /// Bidirectional streams opened before the handshake ended, by id, until their request
    /// looks them up.
    early_streams: RefCell<Vec<u64>>,
    /// Early streams whose request has not ended (its stream still held), and a wake for
    /// when none is left.
    early_live: Cell<usize>,
    none_live: tokio::sync::Notify,
    started: Instant,
    /// When the handshake ended, as the connection's driver saw it (for the figure).
    ended: Cell<Option<Instant>>,
    /// The connection's handshake is in the figures (once).
    pub recorded: Cell<bool>,
    /// The handshake did not end within `--connect-timeout` (the connection was closed).
    timed_out: Cell<bool>,
}

/// How a 0-RTT connection's handshake ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Not yet.
    Underway,
    /// The server took the early data.
    Accepted,
    /// The server discarded it: what went early is to be sent again on this connection,
    /// which goes on as a 1-RTT one.
    Rejected,
    /// The connection failed before the handshake ended.
    Failed,
}

impl Early {
    pub fn new(
        connection: quinn::Connection,
        accepted: quinn::ZeroRttAccepted,
        started: Instant,
    ) -> Rc<Early> {
        Rc::new(Early {
            accepted: accepted.shared(),
            connection,
            early_streams: RefCell::new(Vec::new()),
            early_live: Cell::new(0),
            none_live: tokio::sync::Notify::new(),
            started,
            ended: Cell::new(None),
            recorded: Cell::new(false),
            timed_out: Cell::new(false),
        })
    }

    /// Waits for the handshake's end and notes when it came (the connection's driver task
    /// runs this beside h3's). A handshake that has not ended within `limit`
    /// (`--connect-timeout`) ends the connection: its early requests fail as the connect
    /// timeout they are, not after the request's own timeout.
    pub async fn watch(self: Rc<Self>, limit: Duration) {
        let ended = tokio::time::timeout(limit, self.accepted.clone()).await;
        if ended.is_err() {
            self.timed_out.set(true);
            self.connection.close(0u32.into(), b"handshake timed out");
            return;
        }
        if self.ended.get().is_none() {
            self.ended.set(Some(Instant::now()));
        }
    }

    /// The handshake did not end within `--connect-timeout`.
    pub fn timed_out(&self) -> bool {
        self.timed_out.get()
    }

    /// The handshake's outcome now, without waiting.
    pub fn outcome(&self) -> Outcome {
        match self.accepted.clone().now_or_never() {
            None => Outcome::Underway,
            Some(true) => Outcome::Accepted,
            Some(false) if self.connection.close_reason().is_some() => Outcome::Failed,
            Some(false) => Outcome::Rejected,
        }
    }

    /// How long the handshake took, once it has ended (now, if its watch has not noted it).
    pub fn handshake(&self) -> Duration {
        let ended = self.ended.get().unwrap_or_else(Instant::now);
        self.ended.set(Some(ended));
        ended - self.started
    }

    fn opened(&self, id: StreamId) {
        let id = id.into_inner();
        let mut early = self.early_streams.borrow_mut();
        if self.outcome() == Outcome::Underway {
            early.push(id);
            self.early_live.set(self.early_live.get() + 1);
        } else {
            // A rejected handshake gives stream ids out again from the start: an id noted
            // early is now a 1-RTT stream's.
            early.retain(|&e| e != id);
        }
    }

    /// An early request ended, its stream dropped.
    pub fn early_ended(&self) {
        let live = self.early_live.get().saturating_sub(1);
        self.early_live.set(live);
        if live == 0 {
            self.none_live.notify_waiters();
        }
    }

    /// Waits until every early request has ended, before one is sent again. A rejected
    /// handshake gives the stream ids out again from 0, and quinn ends a stream when its
    /// handle is dropped, by id: a rejected stream dropped after its id went to a new one
    /// would stop the new one (its response then waited for the request's timeout).
    pub async fn early_all_ended(&self) {
        while self.early_live.get() > 0 {
            let notified = self.none_live.notified();
            if self.early_live.get() == 0 {
                break;
            }
            notified.await;
        }
    }

    /// Whether the request on stream `id` went as early data (asked once per request).
    pub fn take_early(&self, id: StreamId) -> bool {
        let id = id.into_inner();
        let mut early = self.early_streams.borrow_mut();
        match early.iter().position(|&e| e == id) {
            Some(i) => {
                early.swap_remove(i);
                true
            }
            None => false,
        }
    }
}

/// h3-quinn's connection, noting the streams opened early when `early` is set.
pub(crate) struct Conn {
    inner: h3_quinn::Connection,
    early: Option<Rc<Early>>,
}

impl Conn {
    pub fn new(connection: quinn::Connection, early: Option<Rc<Early>>) -> Conn {
        Conn {
            inner: h3_quinn::Connection::new(connection),
            early,
        }
    }
}

/// h3-quinn's stream opener, as [`Conn`].
pub(crate) struct Opener {
    inner: h3_quinn::OpenStreams,
    early: Option<Rc<Early>>,
}

impl Clone for Opener {
    fn clone(&self) -> Opener {
        Opener {
            inner: self.inner.clone(),
            early: self.early.clone(),
        }
    }
}

type Bidi = h3_quinn::BidiStream<Bytes>;
type Send = h3_quinn::SendStream<Bytes>;

fn noted(
    early: &Option<Rc<Early>>,
    opened: Poll<Result<Bidi, StreamErrorIncoming>>,
) -> Poll<Result<Bidi, StreamErrorIncoming>> {
    if let (Some(early), Poll::Ready(Ok(stream))) = (early, &opened) {
        early.opened(quic::SendStream::<Bytes>::send_id(stream));
    }
    opened
}

/// `OpenStreams` for a wrapper with `inner` (h3-quinn's) and `early`: opens through `inner`,
/// noting the bidirectional streams opened early.
macro_rules! opens_noting_early {
    ($wrapper:ty) => {
        impl quic::OpenStreams<Bytes> for $wrapper {
            type BidiStream = Bidi;
            type SendStream = Send;

            fn poll_open_bidi(
                &mut self,
                cx: &mut Context<'_>,
            ) -> Poll<Result<Bidi, StreamErrorIncoming>> {
                noted(&self.early, self.inner.poll_open_bidi(cx))
            }

            fn poll_open_send(
                &mut self,
                cx: &mut Context<'_>,
            ) -> Poll<Result<Send, StreamErrorIncoming>> {
                self.inner.poll_open_send(cx)
            }

            fn close(&mut self, code: h3::error::Code, reason: &[u8]) {
                quic::OpenStreams::<Bytes>::close(&mut self.inner, code, reason)
            }
        }
    };
}

opens_noting_early!(Opener);
opens_noting_early!(Conn);

impl quic::Connection<Bytes> for Conn {
    type RecvStream = h3_quinn::RecvStream;
    type OpenStreams = Opener;

    fn poll_accept_recv(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::RecvStream, ConnectionErrorIncoming>> {
        quic::Connection::<Bytes>::poll_accept_recv(&mut self.inner, cx)
    }

    fn poll_accept_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Bidi, ConnectionErrorIncoming>> {
        quic::Connection::<Bytes>::poll_accept_bidi(&mut self.inner, cx)
    }

    fn opener(&self) -> Opener {
        Opener {
            inner: quic::Connection::<Bytes>::opener(&self.inner),
            early: self.early.clone(),
        }
    }
}
