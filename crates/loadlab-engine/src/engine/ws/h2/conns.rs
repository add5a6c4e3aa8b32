//! A thread's HTTP/2 connections for WebSockets over HTTP/2 (RFC 8441): each carries up to
//! `--streams` WebSockets, a new one opened (one at a time, by `engine::pool`'s [`Opener`])
//! only when all are full, so a closed loop of `-c` x `--streams` WebSockets has `-c`
//! connections. A WebSocket above the server's SETTINGS_MAX_CONCURRENT_STREAMS on its
//! connection waits for a stream to free, counted (`WsTotals::h2_waits`), never failed: the
//! server's limit is no failure of the WebSocket's.
//!
//! Each connection waits for the server's SETTINGS (by a ping: the server's SETTINGS come
//! before its PONG) before its first WebSocket, so that whether it offers extended CONNECT
//! (SETTINGS_ENABLE_CONNECT_PROTOCOL) and how many streams it takes are known. It must not
//! record anything but the connect's figures: the caller records each WebSocket's outcome.

use super::super::OpenFailed;
use crate::engine::exchange::{dial, Dialer};
use crate::engine::pool::{Opener, Opening};
use crate::engine::ThreadCtx;
use crate::error::ErrorClass;
use crate::stats::Phase;
use bytes::Bytes;
use h2::client::SendRequest;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A thread's HTTP/2 connections carrying WebSockets.
#[derive(Default)]
pub(crate) struct Conns {
    live: RefCell<Vec<Rc<Conn>>>,
    opener: Opener,
    /// Why the last opening failed, for the WebSockets that waited for it.
    failed: RefCell<Option<(ErrorClass, Option<String>)>>,
}

/// One HTTP/2 connection and the WebSockets on it.
struct Conn {
    send: SendRequest<Bytes>,
    /// WebSockets placed on it, at most `--streams`.
    placed: Cell<usize>,
    /// The streams the server lets it have at once (SETTINGS_MAX_CONCURRENT_STREAMS, at most
    /// `--streams`): a permit a WebSocket. Closed when the connection ends, so that none
    /// waits on it for ever.
    streams: Arc<Semaphore>,
    /// Its driver ended (GOAWAY, reset, end of file): no WebSocket is placed on it any more.
    dead: Rc<Cell<bool>>,
}

/// A WebSocket's place on a connection and its stream there: freed when dropped.
pub(in crate::engine) struct Held {
    conn: Rc<Conn>,
    _stream: OwnedSemaphorePermit,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.conn.placed.set(self.conn.placed.get() - 1);
    }
}

/// A place on a connection, its stream not yet granted.
struct Placed(Option<Rc<Conn>>);

impl Drop for Placed {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.placed.set(c.placed.get() - 1);
        }
    }
}

impl Conns {
    /// A stream for one WebSocket on a connection with room (opened if none has), and the
    /// handle to send its CONNECT with.
    pub(in crate::engine) async fn stream(
        &self,
        ctx: &ThreadCtx,
        phase: Phase,
    ) -> Result<(SendRequest<Bytes>, Held), OpenFailed> {
        let mut placed = self.place(ctx, phase).await?;
        let conn = placed.0.clone().expect("placed");
        // A scenario's WebSocket steps (no `--ws-mode` run, so no totals) wait uncounted.
        if let (0, Some(ws)) = (conn.streams.available_permits(), ctx.ws.as_ref()) {
            ws.totals.h2_waits.fetch_add(1, Ordering::Relaxed);
        }
        // Placed before the wait (and left if the wait ends), so that later WebSockets go
        // to connections with room.
        let Ok(permit) = conn.streams.clone().acquire_owned().await else {
            return Err(failed(
                ErrorClass::ClosedBeforeResponse,
                "the HTTP/2 connection ended while this WebSocket waited for a free stream",
            ));
        };
        placed.0 = None;
        Ok((
            conn.send.clone(),
            Held {
                conn,
                _stream: permit,
            },
        ))
    }

    async fn place(&self, ctx: &ThreadCtx, phase: Phase) -> Result<Placed, OpenFailed> {
        loop {
            let room = self
                .live
                .borrow()
                .iter()
                .find(|c| !c.dead.get() && c.placed.get() < ctx.streams.max(1))
                .cloned();
            if let Some(c) = room {
                c.placed.set(c.placed.get() + 1);
                return Ok(Placed(Some(c)));
            }
            match self.opener.open_or_wait(self.open(ctx, phase)).await {
                Opening::Here(Ok(c)) => {
                    let mut live = self.live.borrow_mut();
                    live.retain(|c| !c.dead.get() || c.placed.get() > 0);
                    c.placed.set(1);
                    live.push(c.clone());
                    return Ok(Placed(Some(c)));
                }
                Opening::Here(Err(class)) | Opening::FailedThere(class) => {
                    let detail = self.failed.borrow().as_ref().and_then(|f| f.1.clone());
                    return Err(OpenFailed {
                        class,
                        detail,
                        status: None,
                    });
                }
                Opening::LookAgain => continue,
            }
        }
    }

    /// Opens a connection: TCP (and TLS), the HTTP/2 handshake, and the server's SETTINGS,
    /// within `--connect-timeout`; a failure's detail is kept for those waiting for it.
    async fn open(&self, ctx: &ThreadCtx, phase: Phase) -> Result<Rc<Conn>, ErrorClass> {
        let opened = open_conn(ctx, phase).await;
        let outcome = opened.map_err(|(class, detail)| {
            *self.failed.borrow_mut() = Some((class, detail));
            class
        });
        if outcome.is_ok() {
            *self.failed.borrow_mut() = None;
        }
        outcome
    }
}

fn failed(class: ErrorClass, detail: &str) -> OpenFailed {
    OpenFailed {
        class,
        detail: Some(detail.into()),
        status: None,
    }
}

async fn open_conn(
    ctx: &ThreadCtx,
    phase: Phase,
) -> Result<Rc<Conn>, (ErrorClass, Option<String>)> {
    let started = Instant::now();
    let (dialed, stream) = dial(&Dialer::of(ctx)).await;
    if let Some(d) = dialed {
        d.record(ctx, phase);
    }
    let stream = stream?;
    let budget = ctx.connect_timeout.saturating_sub(started.elapsed());
    let tls = ctx.tls.is_some();
    let handshake = async {
        let (send, mut driver) =
            crate::engine::h2::handshake_unspawned(stream, tls, ctx.h2_wire.clone())
                .await
                .map_err(|(class, detail)| (class, Some(detail)))?;
        let mut ping = driver.ping_pong().expect("a new connection's ping handle");
        let dead = Rc::new(Cell::new(false));
        let streams = Arc::new(Semaphore::new(0));
        let (d, s) = (dead.clone(), streams.clone());
        tokio::task::spawn_local(async move {
            let _ = driver.await;
            d.set(true);
            s.close();
        });
        // The server's SETTINGS come first on its side of the connection (RFC 9113 3.4),
        // so they are applied by the time its answer to this ping is read.
        ping.ping(h2::Ping::opaque()).await.map_err(|e| {
            let class = ErrorClass::from_h2(&e);
            (class, Some(format!("HTTP/2 connection: {e}")))
        })?;
        Ok::<_, (ErrorClass, Option<String>)>((send, dead, streams))
    };
    let (send, dead, streams) = match tokio::time::timeout(budget, handshake).await {
        Ok(opened) => opened?,
        Err(_) => {
            return Err((
                ErrorClass::ConnectTimeout,
                Some(
                    "the server did not finish the HTTP/2 handshake within --connect-timeout"
                        .into(),
                ),
            ))
        }
    };
    if !send.is_extended_connect_protocol_enabled() {
        return Err((
            ErrorClass::WsRefused,
            Some(
                "the server does not offer WebSockets over HTTP/2 (RFC 8441: its SETTINGS \
                 have no ENABLE_CONNECT_PROTOCOL); drop --http2 to open them by HTTP/1.1 \
                 upgrades"
                    .into(),
            ),
        ));
    }
    let limit = send.current_max_send_streams().min(ctx.streams.max(1));
    streams.add_permits(limit.clamp(1, Semaphore::MAX_PERMITS));
    if let (true, Some(ws)) = (limit < ctx.streams, ctx.ws.as_ref()) {
        ws.totals.h2_limited(limit);
    }
    Ok(Rc::new(Conn {
        send,
        placed: Cell::new(0),
        streams,
        dead,
    }))
}
