//! The accept loop and the one service. It must not interpret requests beyond `/__stats`: a
//! mock that did would start to be a second target. Over HTTPS each connection's handshake
//! runs in that connection's task (a slow or failed handshake never holds up the accept
//! loop), and how it went (full or resumed) is counted with the connection. Without TLS, a
//! connection that opens with HTTP/2's preface goes to the gRPC side ([`crate::grpc`]);
//! everything else is HTTP/1.1 (gRPC is not served over TLS).

use crate::stats::Handshake;
use crate::{grpc, Counters, UpstreamConfig, UpstreamError, RESPONSE_BODY, STATS_PATH};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, SERVER};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rustls::HandshakeKind;
use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// Serves `listener` until `shutdown` completes, counting into `counters`. Open connections
/// are dropped when it returns (a keep-alive client would otherwise hold it open forever).
pub async fn run(
    listener: TcpListener,
    config: UpstreamConfig,
    counters: Counters,
    shutdown: impl Future<Output = ()>,
) -> Result<(), UpstreamError> {
    let mut shutdown = std::pin::pin!(shutdown);
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => return Ok(()),
            accepted = listener.accept() => accepted,
        };
        // Reap finished connection tasks so the set does not grow with every connection.
        while connections.try_join_next().is_some() {}
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            // Running out of file descriptors is not fatal: back off briefly, keep serving.
            Err(err) if is_transient(&err) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            Err(err) => return Err(UpstreamError::Io(err)),
        };
        let _ = stream.set_nodelay(true);
        let counters = counters.clone();
        let delay = config.delay;
        let tls = config.tls.clone();
        connections.spawn(async move {
            match tls {
                None => {
                    if grpc::opens_with_h2_preface(&stream).await {
                        return grpc::serve_connection(stream, counters, delay).await;
                    }
                    serve_connection(stream, None, counters, delay).await
                }
                Some(tls) => {
                    // A failed handshake is the client's business: it carried no request, so
                    // it is not counted.
                    let Ok(stream) = tokio_rustls::TlsAcceptor::from(tls).accept(stream).await
                    else {
                        return;
                    };
                    let handshake = match stream.get_ref().1.handshake_kind() {
                        Some(HandshakeKind::Resumed) => Handshake::Resumed,
                        _ => Handshake::Full,
                    };
                    serve_connection(stream, Some(handshake), counters, delay).await
                }
            }
        });
    }
}

/// Serves one connection (plain or already through its TLS handshake) until the client closes.
async fn serve_connection<IO>(
    io: IO,
    handshake: Option<Handshake>,
    counters: Counters,
    delay: Duration,
) where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    // Set on the connection's first counted request, so the connection is counted once.
    let counted = Arc::new(AtomicBool::new(false));
    let service =
        service_fn(move |req| answer(req, counters.clone(), counted.clone(), handshake, delay));
    // A client closing mid-request is its business, not an upstream failure.
    let _ = http1::Builder::new()
        .serve_connection(TokioIo::new(io), service)
        .await;
}

fn is_transient(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        err.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    ) || err
        .raw_os_error()
        .is_some_and(|code| code == 23 || code == 24) // ENFILE, EMFILE
}

async fn answer(
    req: Request<Incoming>,
    counters: Counters,
    counted: Arc<AtomicBool>,
    handshake: Option<Handshake>,
    delay: Duration,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.uri().path() == STATS_PATH {
        let body = serde_json::to_vec(&counters.snapshot()).unwrap_or_default();
        return Ok(response(body, "application/json"));
    }
    counters.add_request();
    if !counted.swap(true, Ordering::AcqRel) {
        counters.add_connection(handshake);
    }
    // Read the request's body to its end before answering (a frame at a time, nothing kept):
    // answered early, a client still sending a large POST had its connection reset, and
    // `Expect: 100-continue` is answered only when the body is read.
    let mut body = req.into_body();
    while let Some(frame) = body.frame().await {
        if frame.is_err() {
            break;
        }
    }
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    Ok(response(RESPONSE_BODY, "text/plain; charset=utf-8"))
}

fn response(body: impl Into<Bytes>, content_type: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    let headers = response.headers_mut();
    headers.insert(SERVER, HeaderValue::from_static("loadlab-upstream"));
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
