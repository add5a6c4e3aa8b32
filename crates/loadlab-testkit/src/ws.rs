//! A WebSocket server for tests (tungstenite's server side, over TCP or TLS) that counts what
//! it sees, the count a client's is held to: upgrades, messages read, pings. It echoes, or
//! pushes besides, or stays silent, or misbehaves: after the first message it writes raw
//! bytes a test scripts (a frame announcing 2^63 bytes, text that is not UTF-8, an invalid
//! close code), or closes with a given code and reason; or pushes on a cadence of its own. Upgrades a server refuses, or
//! answers wrongly, are [`crate::ScriptedServer`]'s: they are bytes before any WebSocket.
//!
//! It must not listen anywhere but 127.0.0.1.

use crate::background::Background;
use futures_util::{SinkExt as _, StreamExt as _};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::AsyncWriteExt as _;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

/// What the server does on each connection once upgraded.
#[derive(Debug, Clone)]
pub enum WsBehavior {
    /// Echo every text and binary message.
    Echo,
    /// Echo every message, and before every `every`-th echo push a message of its own
    /// (`"pushed"`, text), counted in [`WsCounters::pushed`].
    EchoAndPush { every: u64 },
    /// Read and count, never send a message (pings are answered: tungstenite does).
    Silent,
    /// After the first message, write these bytes as they are, then read until the client
    /// goes.
    RawAfterFirst(Vec<u8>),
    /// On the first message, close with this code and reason.
    CloseOnFirst(u16, String),
    /// Echo, with at most this many connections open at once: an upgrade beyond them is
    /// refused with 503, counted in [`WsCounters::refused`].
    EchoAtMost(u64),
    /// Echo, and push `count` messages of its own (`"tick"`, text) on each connection, one
    /// every `every` from the upgrade, counted in [`WsCounters::pushed`].
    Push {
        count: u64,
        every: std::time::Duration,
    },
    /// Echo each message `echo_after` it was read, and answer a client's close frame only
    /// `goodbye_after` it arrived: a slow server, whose goodbyes a client must not await
    /// one after another.
    Slow {
        echo_after: std::time::Duration,
        goodbye_after: std::time::Duration,
    },
}

/// What the server saw, counted as it happens.
#[derive(Debug, Default)]
pub struct WsCounters {
    pub accepted: AtomicU64,
    pub upgraded: AtomicU64,
    /// Text and binary messages read.
    pub messages: AtomicU64,
    pub pushed: AtomicU64,
    /// Pings read (each answered by tungstenite).
    pub pings: AtomicU64,
    /// Connections open now (from before their upgrade).
    pub open: AtomicU64,
    /// Close frames from clients (a clean goodbye, not a dropped connection).
    pub closes: AtomicU64,
    /// [`WsBehavior::EchoAtMost`]: upgrades refused for want of room.
    pub refused: AtomicU64,
}

impl WsCounters {
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::SeqCst)
    }
}

pub struct WsServer {
    background: Background,
    counters: Arc<WsCounters>,
}

impl WsServer {
    pub fn start(behavior: WsBehavior) -> WsServer {
        let counters = Arc::new(WsCounters::default());
        let c = counters.clone();
        let background =
            Background::serve_each(move |stream| serve(stream, behavior.clone(), c.clone()));
        WsServer {
            background,
            counters,
        }
    }

    /// [`WsServer::start`] with a listen backlog of `backlog` and an accept loop that takes
    /// at most `per_second` connections a second (in batches every 10 ms): a server slower
    /// to accept than clients are to connect, whose backlog overflows (the kernel then drops
    /// the SYNs; the client retries a second later) if more arrive at once.
    pub fn start_slow_accept(behavior: WsBehavior, backlog: i32, per_second: u32) -> WsServer {
        use std::os::fd::AsRawFd as _;
        let counters = Arc::new(WsCounters::default());
        let c = counters.clone();
        let (ready, listening) = std::sync::mpsc::channel();
        let batch = (per_second / 100).max(1);
        let background = Background::start(move |listener| async move {
            // SAFETY: listen(2) on the socket this listener owns; calling it again on a
            // listening socket only sets its backlog.
            let set = unsafe { libc::listen(listener.as_raw_fd(), backlog) };
            let _ = ready.send(set == 0);
            let mut tick = tokio::time::interval(std::time::Duration::from_millis(10));
            // A wait for the next connection is not a reason to take the next ones faster.
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                for _ in 0..batch {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(serve(stream, behavior.clone(), c.clone()));
                }
            }
        });
        assert_eq!(listening.recv().ok(), Some(true), "listen({backlog})");
        WsServer {
            background,
            counters,
        }
    }

    /// [`WsServer::start`] over TLS (`wss://`), presenting `tls`'s certificate (e.g.
    /// [`crate::TestCa::server_config`]).
    pub fn start_tls(behavior: WsBehavior, tls: Arc<rustls::ServerConfig>) -> WsServer {
        let counters = Arc::new(WsCounters::default());
        let c = counters.clone();
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let background = Background::serve_each(move |stream| {
            let (acceptor, behavior, c) = (acceptor.clone(), behavior.clone(), c.clone());
            async move {
                if let Ok(stream) = acceptor.accept(stream).await {
                    serve(stream, behavior, c).await;
                }
            }
        });
        WsServer {
            background,
            counters,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.background.addr
    }

    /// A `ws://` URL for `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("ws://{}{}", self.background.addr, path)
    }

    pub fn counters(&self) -> &WsCounters {
        &self.counters
    }
}

/// Decrements the open count however a connection ends.
struct Open(Arc<WsCounters>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn serve<S>(stream: S, behavior: WsBehavior, c: Arc<WsCounters>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    c.accepted.fetch_add(1, Ordering::SeqCst);
    // The connection's place among those open is taken before its upgrade, so that
    // upgrades at once cannot overrun `EchoAtMost`'s limit.
    let taken = c.open.fetch_add(1, Ordering::SeqCst) + 1;
    let _open = Open(c.clone());
    if matches!(behavior, WsBehavior::EchoAtMost(max) if taken > max) {
        c.refused.fetch_add(1, Ordering::SeqCst);
        // The error type is tungstenite's `Callback` signature, not ours to shrink.
        #[allow(clippy::result_large_err)]
        let refuse = |_: &Request, _: Response| {
            let mut full = ErrorResponse::new(Some("full".into()));
            *full.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
            Err(full)
        };
        let _ = tokio_tungstenite::accept_hdr_async(stream, refuse).await;
        return;
    }
    let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    c.upgraded.fetch_add(1, Ordering::SeqCst);
    if let WsBehavior::Push { count, every } = behavior {
        return push(ws, count, every, &c).await;
    }
    while let Some(Ok(message)) = ws.next().await {
        match &message {
            Message::Text(_) | Message::Binary(_) => {}
            Message::Ping(_) => {
                c.pings.fetch_add(1, Ordering::SeqCst);
                continue;
            }
            Message::Close(_) => {
                c.closes.fetch_add(1, Ordering::SeqCst);
                if let WsBehavior::Slow { goodbye_after, .. } = behavior {
                    // tungstenite queued the answering close as it read this one: it leaves
                    // with the flush.
                    tokio::time::sleep(goodbye_after).await;
                    let _ = ws.flush().await;
                }
                break;
            }
            Message::Pong(_) | Message::Frame(_) => continue,
        }
        let n = c.messages.fetch_add(1, Ordering::SeqCst) + 1;
        let sent = match &behavior {
            // Push is served by `push` (above).
            WsBehavior::Echo | WsBehavior::EchoAtMost(_) | WsBehavior::Push { .. } => {
                ws.send(message).await
            }
            WsBehavior::Slow { echo_after, .. } => {
                tokio::time::sleep(*echo_after).await;
                ws.send(message).await
            }
            WsBehavior::EchoAndPush { every } => {
                if n.is_multiple_of(*every) {
                    c.pushed.fetch_add(1, Ordering::SeqCst);
                    if ws.send(Message::text("pushed")).await.is_err() {
                        break;
                    }
                }
                ws.send(message).await
            }
            WsBehavior::Silent => Ok(()),
            WsBehavior::RawAfterFirst(bytes) => {
                let _ = ws.get_mut().write_all(bytes).await;
                let _ = ws.get_mut().flush().await;
                // Read until the client goes (its close, or its connection's end).
                while let Some(Ok(_)) = ws.next().await {}
                return;
            }
            WsBehavior::CloseOnFirst(code, reason) => {
                let frame = CloseFrame {
                    code: CloseCode::from(*code),
                    reason: reason.clone().into(),
                };
                let _ = ws.close(Some(frame)).await;
                while let Some(Ok(_)) = ws.next().await {}
                return;
            }
        };
        if sent.is_err() {
            break;
        }
    }
}

/// [`WsBehavior::Push`]: `count` pushes `every` apart, echoing meanwhile, then echoes until
/// the client goes.
async fn push<S>(
    mut ws: tokio_tungstenite::WebSocketStream<S>,
    count: u64,
    every: std::time::Duration,
    c: &WsCounters,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let mut pushed = 0;
    loop {
        tokio::select! {
            message = ws.next() => match message {
                Some(Ok(m @ (Message::Text(_) | Message::Binary(_)))) => {
                    c.messages.fetch_add(1, Ordering::SeqCst);
                    if ws.send(m).await.is_err() {
                        return;
                    }
                }
                Some(Ok(Message::Close(_))) => {
                    c.closes.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                Some(Ok(_)) => {}
                _ => return,
            },
            _ = tick.tick(), if pushed < count => {
                pushed += 1;
                c.pushed.fetch_add(1, Ordering::SeqCst);
                if ws.send(Message::text("tick")).await.is_err() {
                    return;
                }
            }
        }
    }
}
