//! A WebSocket server over HTTP/2 (RFC 8441; h2c by prior knowledge, or h2 over TLS) for
//! tests: it offers extended CONNECT (SETTINGS_ENABLE_CONNECT_PROTOCOL), answers each
//! `CONNECT :protocol websocket` with 200 and echoes the WebSocket's messages over the
//! stream (tungstenite's server role), and counts what a client's figures are held to: TCP
//! connections, WebSockets (streams), messages, closes, the most streams one connection had
//! open. It can leave extended CONNECT out of its SETTINGS, refuse every CONNECT with a
//! status, allow few streams at once, or reset each stream (or go away from the connection)
//! at its first message. With an extension answer, it negotiates permessage-deflate as
//! RFC 8441 carries it (the CONNECT's `sec-websocket-extensions`, the answer's on the 200)
//! and serves the frames by `crate::ws_deflate`'s echo, counted in its counters.
//!
//! It must not listen anywhere but 127.0.0.1.

use crate::background::Background;
use crate::TestCa;
use bytes::Bytes;
use futures_util::{SinkExt as _, StreamExt as _};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

#[derive(Debug, Clone, Copy)]
pub struct WsH2Behavior {
    /// Offer extended CONNECT in the SETTINGS (false: a plain HTTP/2 server).
    pub connect_protocol: bool,
    /// Answer every CONNECT with this status instead of 200.
    pub refuse: Option<u16>,
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_concurrent_streams: Option<u32>,
    /// Reset each WebSocket's stream (RST_STREAM INTERNAL_ERROR) at its first bytes.
    pub reset_at_first: bool,
    /// Send GOAWAY (INTERNAL_ERROR) and close the connection at a WebSocket's first bytes.
    pub go_away_at_first: bool,
    /// The answer's `sec-websocket-extensions` to a permessage-deflate offer (e.g.
    /// `permessage-deflate`): WebSockets are then echoed by `crate::ws_deflate`, deflated
    /// when agreed, counted in [`WsH2Counters::deflate`] (not `messages`).
    pub deflate: Option<&'static str>,
}

impl Default for WsH2Behavior {
    fn default() -> Self {
        WsH2Behavior {
            connect_protocol: true,
            refuse: None,
            max_concurrent_streams: None,
            reset_at_first: false,
            go_away_at_first: false,
            deflate: None,
        }
    }
}

#[derive(Debug, Default)]
pub struct WsH2Counters {
    /// TCP connections accepted.
    pub connections: AtomicU64,
    /// CONNECTs answered 200: WebSockets opened.
    pub upgraded: AtomicU64,
    /// CONNECTs refused (with the behaviour's status).
    pub refused: AtomicU64,
    /// Text and binary messages read (each echoed).
    pub messages: AtomicU64,
    pub pings: AtomicU64,
    /// Close frames read.
    pub closes: AtomicU64,
    /// The most WebSockets one connection had open at once.
    pub max_streams_on_one_connection: AtomicU64,
    /// With [`WsH2Behavior::deflate`]: the WebSockets' offers, messages, compressed ones and
    /// their bytes on the wire.
    pub deflate: crate::DeflateCounters,
}

pub struct WsH2Server {
    counters: Arc<WsH2Counters>,
    /// Stops the server when dropped.
    background: Background,
}

impl WsH2Server {
    /// h2c: HTTP/2 over plain TCP, prior knowledge.
    pub fn start(behavior: WsH2Behavior) -> WsH2Server {
        Self::start_with(behavior, None)
    }

    /// h2 over TLS, agreed by ALPN, with a certificate from `ca`.
    pub fn start_tls(behavior: WsH2Behavior, ca: &TestCa) -> WsH2Server {
        let mut config = (*ca.server_config()).clone();
        config.alpn_protocols = vec![b"h2".to_vec()];
        Self::start_with(behavior, Some(Arc::new(config)))
    }

    fn start_with(behavior: WsH2Behavior, tls: Option<Arc<rustls::ServerConfig>>) -> WsH2Server {
        let counters = Arc::new(WsH2Counters::default());
        let c = counters.clone();
        let counted = counters.clone();
        let background = Background::serve_each_tls(
            tls,
            move || {
                counted.connections.fetch_add(1, Ordering::SeqCst);
            },
            move |io| serve(io, behavior, c.clone()),
        );
        WsH2Server {
            counters,
            background,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.background.addr
    }

    pub fn counters(&self) -> &WsH2Counters {
        &self.counters
    }
}

async fn serve<T>(io: T, behavior: WsH2Behavior, c: Arc<WsH2Counters>)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = h2::server::Builder::new();
    if behavior.connect_protocol {
        builder.enable_connect_protocol();
    }
    if let Some(n) = behavior.max_concurrent_streams {
        builder.max_concurrent_streams(n);
    }
    let Ok(mut conn) = builder.handshake::<_, Bytes>(io).await else {
        return;
    };
    let open = Arc::new(AtomicU64::new(0));
    let go_away = Arc::new(tokio::sync::Notify::new());
    loop {
        let next = tokio::select! {
            next = conn.accept() => next,
            _ = go_away.notified() => {
                conn.abrupt_shutdown(h2::Reason::INTERNAL_ERROR);
                // Driven until the GOAWAY is written, then held open a moment: closed at
                // once with the client's bytes unread, the kernel would reset it (RST)
                // before the client read the GOAWAY.
                while let Some(Ok(_)) = conn.accept().await {}
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                return;
            }
        };
        let Some(Ok((request, mut respond))) = next else {
            return;
        };
        let websocket = request.method() == http::Method::CONNECT
            && request
                .extensions()
                .get::<h2::ext::Protocol>()
                .is_some_and(|p| p.as_str() == "websocket");
        let status = match behavior.refuse {
            Some(status) => status,
            None if websocket => 200,
            None => 400,
        };
        let offer = request
            .headers()
            .get(http::header::SEC_WEBSOCKET_EXTENSIONS)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mut response = http::Response::builder().status(status);
        if let Some(answer) = behavior.deflate {
            if crate::ws_deflate::offered_and_answered(&offer, answer) {
                response = response.header(http::header::SEC_WEBSOCKET_EXTENSIONS, answer);
            }
        }
        let response = response.body(()).unwrap();
        if status != 200 {
            c.refused.fetch_add(1, Ordering::SeqCst);
            let _ = respond.send_response(response, true);
            continue;
        }
        let Ok(send) = respond.send_response(response, false) else {
            continue;
        };
        c.upgraded.fetch_add(1, Ordering::SeqCst);
        let now_open = open.fetch_add(1, Ordering::SeqCst) + 1;
        c.max_streams_on_one_connection
            .fetch_max(now_open, Ordering::SeqCst);
        let (c, open, go_away) = (c.clone(), open.clone(), go_away.clone());
        tokio::spawn(async move {
            let mut recv = request.into_body();
            if behavior.go_away_at_first {
                let _ = recv.data().await;
                go_away.notify_one();
                // The stream kept until the connection ends: dropped, it would be reset
                // (CANCEL) before the client read the GOAWAY.
                while let Some(Ok(_)) = recv.data().await {}
                drop(send);
            } else if behavior.reset_at_first {
                let mut send = send;
                let _ = recv.data().await;
                send.send_reset(h2::Reason::INTERNAL_ERROR);
            } else {
                let deflate = behavior.deflate.map(|answer| (offer.as_str(), answer));
                echo(send, recv, &c, deflate).await;
            }
            open.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// Serves one WebSocket over its stream: tungstenite's server role over a pipe whose other
/// end two pumps join to the stream's DATA frames; with `deflate` (the client's offer, the
/// server's answer), `crate::ws_deflate`'s frames instead.
async fn echo(
    mut send: h2::SendStream<Bytes>,
    mut recv: h2::RecvStream,
    c: &WsH2Counters,
    deflate: Option<(&str, &str)>,
) {
    let (ours, theirs) = tokio::io::duplex(64 << 10);
    let (mut from_pipe, mut to_pipe) = tokio::io::split(theirs);
    let inbound = async move {
        while let Some(Ok(data)) = recv.data().await {
            let _ = recv.flow_control().release_capacity(data.len());
            if to_pipe.write_all(&data).await.is_err() {
                break;
            }
        }
        let _ = to_pipe.shutdown().await;
    };
    let outbound = async move {
        let mut buf = vec![0; 16 << 10];
        loop {
            let n = match from_pipe.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut at = 0;
            while at < n {
                send.reserve_capacity(n - at);
                let granted = std::future::poll_fn(|cx| send.poll_capacity(cx)).await;
                let Some(Ok(granted)) = granted else {
                    return;
                };
                let granted = granted.min(n - at);
                let data = Bytes::copy_from_slice(&buf[at..at + granted]);
                if send.send_data(data, false).is_err() {
                    return;
                }
                at += granted;
            }
        }
        let _ = send.send_data(Bytes::new(), true);
    };
    let socket = async {
        if let Some((offer, answer)) = deflate {
            let echo = crate::DeflateBehavior::Echo;
            crate::ws_deflate::serve_frames(ours, offer, answer, &echo, &c.deflate).await;
            return;
        }
        let mut ws = WebSocketStream::from_raw_socket(ours, Role::Server, None).await;
        while let Some(Ok(message)) = ws.next().await {
            match message {
                Message::Text(_) | Message::Binary(_) => {
                    c.messages.fetch_add(1, Ordering::SeqCst);
                    if ws.send(message).await.is_err() {
                        break;
                    }
                }
                Message::Ping(_) => {
                    c.pings.fetch_add(1, Ordering::SeqCst);
                }
                Message::Close(_) => {
                    c.closes.fetch_add(1, Ordering::SeqCst);
                    // tungstenite queued the answering close as it read this one.
                    let _ = ws.flush().await;
                    break;
                }
                Message::Pong(_) | Message::Frame(_) => {}
            }
        }
        // The pipe's end: the outbound pump ends the stream.
        drop(ws);
    };
    tokio::join!(inbound, outbound, socket);
}
