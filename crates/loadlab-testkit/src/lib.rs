//! Scriptable HTTP/1.1 servers on 127.0.0.1:0 for loadlab's tests.
//!
//! A [`TestServer`] runs on its own thread with its own runtime, so it never shares an event
//! loop with the engine under test. It counts what it sees (connections accepted, requests
//! read, responses written) and misbehaves on request: resets, stalls, garbage, bodies cut
//! short, responses trickled one byte per write. It parses requests only as far as a test
//! needs: the header block and a Content-Length body.
//!
//! For hostile servers written step by step, [`ScriptedServer`] plays a [`Script`] of
//! HTTP/1.1 bytes, waits and closes on every connection, and [`H2FrameServer`] an
//! [`H2Script`] of raw HTTP/2 frames. [`H3Server`] answers HTTP/3 over QUIC and counts.
//! [`WsServer`] is a WebSocket server that echoes (or misbehaves) and counts; [`WsH2Server`]
//! the same over HTTP/2 (RFC 8441).
//!
//! It must not be a dependency of anything but tests, nor listen anywhere but 127.0.0.1.

mod background;
pub mod grpc;
pub mod h2frames;
mod h2server;
mod h3server;
mod openssl;
mod routes;
mod scratch;
mod scripted;
mod timed;
mod tls;
mod ws;
mod ws_deflate;
mod ws_h2;
pub use grpc::{grpc_frame, GrpcAnswer, GrpcCounters, GrpcServer};
pub use h2frames::{H2FrameServer, H2Script, H2Step};
pub use h2server::{H2Behavior, H2Counters, H2Server};
pub use h3server::{H3Counters, H3Server, H3_BODY};
pub use openssl::OpensslCert;
pub use routes::{Answer, RouteCounters, RouteServer, Seen};
pub use scratch::ScratchDir;
pub use scripted::{closed_port, random_bytes, Script, ScriptCounters, ScriptedServer, Step};
pub use timed::{TimedServer, Timing};
pub use tls::{NoTickets, TestCa};
pub use ws::{WsBehavior, WsCounters, WsServer};
pub use ws_deflate::{DeflateBehavior, DeflateCounters, DeflateServer};
pub use ws_h2::{WsH2Behavior, WsH2Counters, WsH2Server};

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// What the server does with each request.
#[derive(Debug, Clone)]
pub enum Behavior {
    /// Answer every request with these bytes.
    Fixed(Vec<u8>),
    /// Answer request number i (counted across connections) with `responses[i % len]`.
    Cycle(Vec<Vec<u8>>),
    /// Reset the connection (RST) instead of answering.
    Reset,
    /// Read the request, never answer, keep the connection open.
    Stall,
    /// Answer with bytes that are not HTTP.
    Garbage,
    /// Promise a 100-byte body, send 10 bytes of it, close.
    CloseMidBody,
    /// Write the response one byte per write, flushing each.
    Trickle(Vec<u8>),
}

/// What the server has seen so far.
#[derive(Debug, Default)]
pub struct Counters {
    pub accepted: AtomicU64,
    pub requests: AtomicU64,
    pub answered: AtomicU64,
    /// TLS servers: handshakes that resumed a session, and full ones.
    pub tls_resumed: AtomicU64,
    pub tls_full: AtomicU64,
    /// The most requests read whole on a connection and not yet answered, at once: above 1,
    /// the client pipelined (wrote requests before reading the answers to earlier ones).
    pub most_ahead: AtomicU64,
}

impl Counters {
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
    pub fn answered(&self) -> u64 {
        self.answered.load(Ordering::SeqCst)
    }
    pub fn tls_resumed(&self) -> u64 {
        self.tls_resumed.load(Ordering::SeqCst)
    }
    pub fn tls_full(&self) -> u64 {
        self.tls_full.load(Ordering::SeqCst)
    }
    pub fn most_ahead(&self) -> u64 {
        self.most_ahead.load(Ordering::SeqCst)
    }
}

pub struct TestServer {
    counters: Arc<Counters>,
    /// Stops the server when dropped.
    background: background::Background,
}

/// A complete response with a Content-Length body.
pub fn response(status: u16, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} Test\r\nContent-Length: {}\r\nContent-Type: text/plain\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A chunked response carrying `body` in chunks of `chunk` bytes, with an extension and a
/// trailer so every part of the grammar is exercised.
pub fn chunked_response(body: &str, chunk: usize) -> Vec<u8> {
    let mut out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for (i, piece) in body.as_bytes().chunks(chunk).enumerate() {
        if i == 0 {
            out.extend_from_slice(format!("{:x};name=value\r\n", piece.len()).as_bytes());
        } else {
            out.extend_from_slice(format!("{:X}\r\n", piece.len()).as_bytes());
        }
        out.extend_from_slice(piece);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\nX-Trailer: done\r\n\r\n");
    out
}

impl TestServer {
    pub fn start(behavior: Behavior) -> TestServer {
        Self::start_with(behavior, None)
    }

    /// The same server over TLS, with a certificate for 127.0.0.1 and localhost signed by a
    /// CA made for this test (`ca.pem()` to trust it).
    pub fn start_tls(behavior: Behavior, ca: &TestCa) -> TestServer {
        Self::start_with(behavior, Some(ca.server_config()))
    }

    /// A TLS server that demands a client certificate signed by `ca`.
    pub fn start_mutual_tls(behavior: Behavior, ca: &TestCa) -> TestServer {
        Self::start_with(behavior, Some(ca.server_config_with_client_auth()))
    }

    /// The same server over TLS with a configuration the test made (for example
    /// [`OpensslCert::server_config`]).
    pub fn start_tls_with(behavior: Behavior, config: Arc<rustls::ServerConfig>) -> TestServer {
        Self::start_with(behavior, Some(config))
    }

    fn start_with(
        behavior: Behavior,
        tls: Option<std::sync::Arc<rustls::ServerConfig>>,
    ) -> TestServer {
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        let background = background::Background::start(move |listener| async move {
            let behavior = Arc::new(behavior);
            let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                c.accepted.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_nodelay(true);
                let (behavior, c) = (behavior.clone(), c.clone());
                match &acceptor {
                    None => {
                        tokio::spawn(serve(stream, behavior, c));
                    }
                    Some(acceptor) => {
                        let acceptor = acceptor.clone();
                        tokio::spawn(async move {
                            // A handshake the client aborts is the client's test.
                            let Ok(tls) = acceptor.accept(stream).await else {
                                return;
                            };
                            let resumed = tls.get_ref().1.handshake_kind()
                                == Some(rustls::HandshakeKind::Resumed);
                            if resumed {
                                c.tls_resumed.fetch_add(1, Ordering::SeqCst);
                            } else {
                                c.tls_full.fetch_add(1, Ordering::SeqCst);
                            }
                            serve(tls, behavior, c).await;
                        });
                    }
                }
            }
        });
        TestServer {
            counters,
            background,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.background.addr
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr(), path)
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }
}

/// Reads one request (head plus Content-Length body) from `buf`/`stream`; returns whether
/// it asked to close, or `None` at EOF.
/// A server-side connection: plain TCP or TLS, and how to reset it.
trait ServerConn: AsyncRead + AsyncWrite + Unpin {
    /// Makes the next close send RST.
    fn reset_on_close(&self);
}

impl ServerConn for TcpStream {
    fn reset_on_close(&self) {
        // Linger 0 makes close send RST; blocking on drop is moot with nothing unsent.
        #[allow(deprecated)]
        let _ = self.set_linger(Some(Duration::ZERO));
    }
}

impl ServerConn for tokio_rustls::server::TlsStream<TcpStream> {
    fn reset_on_close(&self) {
        self.get_ref().0.reset_on_close();
    }
}

async fn read_request(stream: &mut impl ServerConn, buf: &mut Vec<u8>) -> Option<bool> {
    loop {
        if let Some(end) = find(buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let body_len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            let total = end + 4 + body_len;
            if buf.len() >= total {
                let close = head
                    .lines()
                    .any(|l| l.starts_with("connection:") && l.contains("close"));
                buf.drain(..total);
                return Some(close);
            }
        }
        let mut chunk = [0u8; 8192];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Whether the response just sent said `Connection: close` (then the server closes, as RFC
/// 9112 requires).
fn announces_close(behavior: &Behavior, n: u64) -> bool {
    let sent = match behavior {
        Behavior::Fixed(b) | Behavior::Trickle(b) => b,
        Behavior::Cycle(all) => &all[n as usize % all.len()],
        _ => return false,
    };
    let head_end = find(sent, b"\r\n\r\n").unwrap_or(sent.len());
    String::from_utf8_lossy(&sent[..head_end])
        .to_ascii_lowercase()
        .contains("\r\nconnection: close")
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn serve(mut stream: impl ServerConn, behavior: Arc<Behavior>, counters: Arc<Counters>) {
    let mut buf = Vec::new();
    while let Some(close) = read_request(&mut stream, &mut buf).await {
        let n = counters.requests.fetch_add(1, Ordering::SeqCst);
        // This request and the whole ones read behind it (bodiless: a pipelining test's).
        let ahead = 1 + buf.windows(4).filter(|w| *w == b"\r\n\r\n").count() as u64;
        counters.most_ahead.fetch_max(ahead, Ordering::SeqCst);
        let wrote = match &*behavior {
            Behavior::Fixed(bytes) => stream.write_all(bytes).await.is_ok(),
            Behavior::Cycle(all) => stream.write_all(&all[n as usize % all.len()]).await.is_ok(),
            Behavior::Reset => {
                stream.reset_on_close();
                return; // dropped with linger 0: the peer sees RST
            }
            Behavior::Stall => {
                std::future::pending::<()>().await;
                false
            }
            Behavior::Garbage => {
                let _ = stream.write_all(b"this is not HTTP at all\r\n\r\n").await;
                return;
            }
            Behavior::CloseMidBody => {
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
                    .await;
                let _ = stream.shutdown().await;
                return;
            }
            Behavior::Trickle(bytes) => {
                let mut ok = true;
                for b in bytes {
                    if stream.write_all(std::slice::from_ref(b)).await.is_err() {
                        ok = false;
                        break;
                    }
                    let _ = stream.flush().await;
                    tokio::task::yield_now().await;
                }
                ok
            }
        };
        if !wrote {
            return;
        }
        counters.answered.fetch_add(1, Ordering::SeqCst);
        if close || announces_close(&behavior, n) {
            let _ = stream.shutdown().await;
            return;
        }
    }
}
