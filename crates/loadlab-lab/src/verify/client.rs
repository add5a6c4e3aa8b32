//! The verifier's HTTP/1.1 client: hyper's connection-level API over one kept-alive
//! connection (TCP, or TLS through rustls when given a [`TlsClient`]), reconnecting when the
//! server closed it. Small on purpose: it sends exactly
//! what a check asks (fixed-length or chunked bodies), keeps every response header, and
//! turns every failure into a message instead of an error type, because a failed request is
//! a finding to report, not a reason to stop.

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{HeaderMap, HOST};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// How every connection failure message starts, so callers can tell "nothing listens" from a
/// bad response.
pub const CONNECT_FAILED: &str = "cannot connect to";

/// A request body as the check wants it on the wire.
#[derive(Debug, Clone)]
pub enum SendBody {
    /// No body.
    Empty,
    /// Sent with `Content-Length`.
    Fixed(Bytes),
    /// Sent with `Transfer-Encoding: chunked`, one chunk per element.
    Chunked(Vec<Bytes>),
}

/// What came back.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// From sending the request to the end of the body.
    pub elapsed: Duration,
}

/// How to speak TLS to one server: the client configuration and the name its certificate
/// must carry (the server's IP address: the lab serves loopback).
#[derive(Clone)]
pub struct TlsClient {
    pub connector: tokio_rustls::TlsConnector,
    pub server_name: rustls::pki_types::ServerName<'static>,
}

impl TlsClient {
    /// Connects to `addr` with `config`, checking the certificate against `addr`'s IP.
    pub fn new(config: Arc<rustls::ClientConfig>, addr: SocketAddr) -> TlsClient {
        TlsClient {
            connector: tokio_rustls::TlsConnector::from(config),
            server_name: rustls::pki_types::ServerName::IpAddress(addr.ip().into()),
        }
    }

    /// TCP connect and TLS handshake; errors start with [`CONNECT_FAILED`].
    pub async fn connect(
        &self,
        addr: SocketAddr,
    ) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("{CONNECT_FAILED} {addr}: {e}"))?;
        let _ = stream.set_nodelay(true);
        self.connector
            .connect(self.server_name.clone(), stream)
            .await
            .map_err(|e| format!("{CONNECT_FAILED} {addr} over TLS: the handshake failed: {e}"))
    }
}

/// One server, one connection at a time.
pub struct Probe {
    addr: SocketAddr,
    timeout: Duration,
    tls: Option<TlsClient>,
    sender: Option<SendRequest<WireBody>>,
    /// How many TCP connections this probe opened (the keep-alive check reads it).
    pub connections_opened: u32,
}

impl Probe {
    pub fn new(addr: SocketAddr, timeout: Duration) -> Self {
        Probe::with_tls(addr, timeout, None)
    }

    /// A probe that speaks TLS when `tls` is given.
    pub fn with_tls(addr: SocketAddr, timeout: Duration, tls: Option<TlsClient>) -> Self {
        Probe {
            addr,
            timeout,
            tls,
            sender: None,
            connections_opened: 0,
        }
    }

    /// Sends one request and reads the whole response, within the probe's timeout.
    pub async fn send(
        &mut self,
        method: Method,
        path: &str,
        body: SendBody,
    ) -> Result<Reply, String> {
        let started = Instant::now();
        match tokio::time::timeout(self.timeout, self.exchange(method, path, body)).await {
            Ok(Ok((status, headers, body))) => Ok(Reply {
                status,
                headers,
                body,
                elapsed: started.elapsed(),
            }),
            Ok(Err(message)) => {
                self.sender = None;
                Err(message)
            }
            Err(_) => {
                self.sender = None;
                Err(format!("no complete response within {:?}", self.timeout))
            }
        }
    }

    async fn exchange(
        &mut self,
        method: Method,
        path: &str,
        body: SendBody,
    ) -> Result<(u16, HeaderMap, Bytes), String> {
        let host = self.addr.to_string();
        let sender = self.ready_sender().await?;
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, host)
            .body(WireBody::from(body))
            .map_err(|e| format!("cannot build request: {e}"))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("request failed: {}", describe(&e)))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("reading the response body failed: {}", describe(&e)))?
            .to_bytes();
        Ok((status, headers, body))
    }

    async fn ready_sender(&mut self) -> Result<&mut SendRequest<WireBody>, String> {
        if let Some(sender) = &mut self.sender {
            if sender.ready().await.is_err() {
                self.sender = None;
            }
        }
        if self.sender.is_none() {
            let addr = self.addr;
            let handshake_failed =
                move |e: hyper::Error| format!("HTTP handshake with {addr} failed: {e}");
            let sender = match &self.tls {
                None => {
                    let stream = TcpStream::connect(self.addr)
                        .await
                        .map_err(|e| format!("{CONNECT_FAILED} {}: {e}", self.addr))?;
                    let _ = stream.set_nodelay(true);
                    let (sender, connection) = http1::handshake(TokioIo::new(stream))
                        .await
                        .map_err(handshake_failed)?;
                    tokio::spawn(connection);
                    sender
                }
                Some(tls) => {
                    let stream = tls.connect(self.addr).await?;
                    let (sender, connection) = http1::handshake(TokioIo::new(stream))
                        .await
                        .map_err(handshake_failed)?;
                    tokio::spawn(connection);
                    sender
                }
            };
            self.connections_opened += 1;
            self.sender = Some(sender);
        }
        self.sender
            .as_mut()
            .ok_or_else(|| "no connection".to_string())
    }
}

/// hyper's errors keep their cause in `source()`; the report wants all of it on one line.
fn describe(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The body hyper sends: an exact size hint gives `Content-Length`, an unknown one chunked.
pub struct WireBody {
    chunks: VecDeque<Bytes>,
    exact: Option<u64>,
}

impl From<SendBody> for WireBody {
    fn from(body: SendBody) -> Self {
        match body {
            SendBody::Empty => WireBody {
                chunks: VecDeque::new(),
                exact: Some(0),
            },
            SendBody::Fixed(bytes) => WireBody {
                exact: Some(bytes.len() as u64),
                chunks: VecDeque::from([bytes]),
            },
            SendBody::Chunked(chunks) => WireBody {
                chunks: chunks.into(),
                exact: None,
            },
        }
    }
}

impl Body for WireBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.chunks.pop_front().map(|c| Ok(Frame::data(c))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        match self.exact {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}
