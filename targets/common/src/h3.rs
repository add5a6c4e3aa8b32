//! HTTP/3 for the Rust targets (capability `http3`, `../../CONTRACT.md`): over HTTPS, a QUIC
//! listener (quinn) on the TCP listener's port number, over UDP, that serves the same service
//! as TCP does, through the h3 crates. The certificate is the HTTPS one, offered by ALPN
//! `h3` over TLS 1.3 (QUIC carries no other).
//!
//! The service is the framework's own (any hyper-style `Service` over `http` types: axum's
//! `Router` through `TowerToHyperService`, as over TCP), so every route and handler is the
//! one TCP serves. What hyper adds to every response over HTTP/1.1 and HTTP/2 is added here
//! the same way: `Date`, and `Content-Length` when the body's size is known. It must not
//! answer anything itself.

use crate::startup::Error;
use bytes::{Buf, Bytes};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame};
use hyper::header::{HeaderValue, CONTENT_LENGTH, DATE};
use hyper::service::Service;
use hyper::{Request, Response};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// A request's body as the service reads it: the h3 stream's DATA frames. The stream sits in
/// a `Mutex` only to make the body `Sync` (warp takes no other): it is reached through
/// `get_mut`, which never locks.
pub struct H3Body {
    recv: std::sync::Mutex<h3::server::RequestStream<h3_quinn::RecvStream, Bytes>>,
    done: bool,
}

impl Body for H3Body {
    type Data = Bytes;
    type Error = h3::error::StreamError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let recv = match self.recv.get_mut() {
            Ok(recv) => recv,
            Err(poisoned) => poisoned.into_inner(),
        };
        match recv.poll_recv_data(cx) {
            Poll::Ready(Ok(Some(mut data))) => {
                let n = data.remaining();
                Poll::Ready(Some(Ok(Frame::data(data.copy_to_bytes(n)))))
            }
            Poll::Ready(Ok(None)) => {
                self.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// A body the service did not read to its end (a handler that answers without it): the
/// client is asked to stop sending with H3_NO_ERROR, as RFC 9114 4.1 says, rather than with
/// the code 0 quinn sends for a stream dropped unread (not an HTTP/3 code at all).
impl Drop for H3Body {
    fn drop(&mut self) {
        if !self.done {
            let recv = match self.recv.get_mut() {
                Ok(recv) => recv,
                Err(poisoned) => poisoned.into_inner(),
            };
            recv.stop_sending(h3::error::Code::H3_NO_ERROR);
        }
    }
}

/// The QUIC endpoint for HTTPS served with `tls` (its certificate and key), bound to `addr`
/// over UDP: the TCP listener's address, so HTTP/3 is on the same port number. Call it
/// inside the tokio runtime that will serve it.
pub fn endpoint(addr: SocketAddr, tls: &rustls::ServerConfig) -> Result<quinn::Endpoint, Error> {
    let mut tls = tls.clone();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .map_err(|e| format!("the TLS configuration cannot carry QUIC: {e}"))?;
    let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    quinn::Endpoint::server(config, addr).map_err(|e| {
        format!("cannot bind UDP {addr} for HTTP/3 (the TCP port's number): {e}").into()
    })
}

/// Serves HTTPS on `listener` (HTTP/1.1 and HTTP/2, [`crate::tls::serve`]) and HTTP/3 on its
/// port number over UDP, each connection answered by a service from `make_service()`: the
/// same routes whichever the protocol. A UDP port that cannot be bound fails start-up.
pub async fn serve_with_tls<M, S, B>(
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    make_service: M,
) -> Result<(), Error>
where
    M: Fn() -> S + Clone + Send + 'static,
    S: Service<Request<H3Body>, Response = Response<B>>
        + Service<Request<hyper::body::Incoming>, Response = Response<B>>
        + Send
        + Sync
        + 'static,
    <S as Service<Request<H3Body>>>::Future: Send + 'static,
    <S as Service<Request<H3Body>>>::Error: std::fmt::Display,
    <S as Service<Request<hyper::body::Incoming>>>::Future: Send + 'static,
    <S as Service<Request<hyper::body::Incoming>>>::Error:
        Into<Box<dyn std::error::Error + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send,
{
    let quic = endpoint(listener.local_addr()?, &tls)?;
    tokio::spawn(serve(quic, make_service.clone()));
    crate::tls::serve(listener, tls, make_service).await
}

/// Serves HTTP/3 on `endpoint` until it closes: each connection in a task of its own, each
/// request in a task of its own, answered by `make_service()`'s service (one per connection,
/// as over TCP).
pub async fn serve<M, S, B>(endpoint: quinn::Endpoint, make_service: M)
where
    M: Fn() -> S,
    S: Service<Request<H3Body>, Response = Response<B>> + Send + Sync + 'static,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Send,
{
    while let Some(incoming) = endpoint.accept().await {
        let service = Arc::new(make_service());
        tokio::spawn(async move {
            // A handshake that fails, or a client that leaves, is the client's business.
            let Ok(connection) = incoming.await else {
                return;
            };
            let Ok(mut h3) =
                h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(connection))
                    .await
            else {
                return;
            };
            while let Ok(Some(resolver)) = h3.accept().await {
                let service = service.clone();
                tokio::spawn(async move {
                    let Ok((request, stream)) = resolver.resolve_request().await else {
                        return;
                    };
                    let (send, recv) = stream.split();
                    let request = request.map(|()| H3Body {
                        recv: std::sync::Mutex::new(recv),
                        done: false,
                    });
                    let _ = answer(send, service.call(request)).await;
                });
            }
        });
    }
}

/// Sends the service's response: its head (with `Date`, and `Content-Length` when the body's
/// size is exact), then its body's data frames.
async fn answer<F, B, E>(
    mut send: h3::server::RequestStream<h3_quinn::SendStream<Bytes>, Bytes>,
    response: F,
) -> Result<(), h3::error::StreamError>
where
    F: std::future::Future<Output = Result<Response<B>, E>>,
    E: std::fmt::Display,
    B: Body,
{
    let response = match response.await {
        Ok(response) => response,
        Err(e) => {
            eprintln!("HTTP/3: the service failed: {e}");
            send.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
            return Ok(());
        }
    };
    let (mut head, body) = response.into_parts();
    add_date(&mut head.headers);
    if let Some(len) = body.size_hint().exact() {
        head.headers.entry(CONTENT_LENGTH).or_insert(len.into());
    }
    send.send_response(Response::from_parts(head, ())).await?;
    let mut body = std::pin::pin!(body);
    while let Some(frame) = body.frame().await {
        // A body that fails mid-way: the stream ends short, and the client sees it.
        let Ok(frame) = frame else { break };
        if let Ok(mut data) = frame.into_data() {
            let n = data.remaining();
            if n > 0 {
                send.send_data(data.copy_to_bytes(n)).await?;
            }
        }
    }
    send.finish().await
}

/// Adds `Date` (now) unless the service set one, as hyper does over HTTP/1.1 and HTTP/2.
pub fn add_date(headers: &mut hyper::HeaderMap) {
    if !headers.contains_key(DATE) {
        let now = httpdate::fmt_http_date(std::time::SystemTime::now());
        if let Ok(value) = HeaderValue::from_str(&now) {
            headers.insert(DATE, value);
        }
    }
}
