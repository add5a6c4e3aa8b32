//! The gRPC side of the mock upstream: the unary method the lab's targets call,
//! [`CALL_PATH`], and one streaming method of each kind for loadlab's own streaming runs
//! (`crate::grpc_streams`) (`proto/upstream.proto`), answered with tonic's server-side codec
//! and dispatch over
//! HTTP/2 connections that the accept loop ([`crate::run`]) hands over when a connection opens
//! with HTTP/2's prior-knowledge preface. Both protocols share one port, so whatever launches
//! the upstream for `/upstream` also serves `/upstream-grpc` with no second address to pass.
//!
//! The connection handling is ours, not tonic's transport, for the same reason as on the HTTP
//! side: each connection is counted once, on its first call, and every HTTP/2 stream is counted,
//! so a test can tell one channel (one connection, many streams) from a channel per call.
//! Other paths get `UNIMPLEMENTED`, and still count as streams.

use crate::{Counters, RESPONSE_BODY};
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::server::conn::http2;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tonic::server::{Grpc, UnaryService};
use tonic::{Request, Response, Status};
use tonic_prost::ProstCodec;

/// The one method: `loadlab.upstream.v1.Upstream/Call(google.protobuf.Empty)` returning
/// `google.protobuf.BytesValue{value: "ok"}`.
pub const CALL_PATH: &str = "/loadlab.upstream.v1.Upstream/Call";

/// What a client sends first on an HTTP/2 connection without TLS (RFC 9113, 3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// How many bytes decide: no HTTP/1.1 request line starts with `PRI ` (there is no such
/// method), and every HTTP/2 client sends at least this much of the preface in its first write.
const DECISIVE_BYTES: usize = 4;

/// Whether `stream` opens with the HTTP/2 preface, looked at without consuming anything, so
/// either server reads the connection from its first byte. A client that connects and sends
/// nothing keeps this waiting, as it would keep hyper waiting; a closed one is not HTTP/2.
pub(crate) async fn opens_with_h2_preface(stream: &TcpStream) -> bool {
    let mut buf = [0u8; DECISIVE_BYTES];
    loop {
        let seen = match stream.peek(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => &buf[..n],
        };
        if seen.len() >= DECISIVE_BYTES || !H2_PREFACE.starts_with(seen) {
            return H2_PREFACE.starts_with(seen);
        }
        // "P" or "PR" so far: `peek` would return the same bytes at once, so wait for the
        // rest of the client's first write instead of spinning.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Serves one HTTP/2 connection until the client closes it, counting into `counters`.
pub(crate) async fn serve_connection(stream: TcpStream, counters: Counters, delay: Duration) {
    // Set on the connection's first call, so the connection is counted once.
    let counted = Arc::new(AtomicBool::new(false));
    let service = service_fn(move |req: hyper::Request<Incoming>| {
        counters.add_grpc_stream();
        let call = Call {
            counters: counters.clone(),
            counted: counted.clone(),
            delay,
        };
        async move { Ok::<_, Infallible>(dispatch(req, call).await) }
    });
    // A client closing mid-call is its business, not an upstream failure.
    let _ = http2::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn dispatch(req: hyper::Request<Incoming>, call: Call) -> hyper::Response<tonic::body::Body> {
    let req = match crate::grpc_streams::dispatch(req, &call.counters, || call.arrived()).await {
        Ok(answer) => return answer,
        Err(req) => req,
    };
    if req.uri().path() != CALL_PATH {
        return Status::unimplemented(format!(
            "the mock upstream serves {CALL_PATH} and the streaming {:?}; got {}",
            crate::grpc_streams::PATHS,
            req.uri().path()
        ))
        .into_http();
    }
    // Encodes BytesValue (prost's `Bytes`), decodes Empty (prost's `()`).
    let mut grpc = Grpc::new(ProstCodec::<Bytes, ()>::default());
    grpc.unary(call, req).await
}

impl Call {
    /// A call of a method served here: counted, and its connection on its first.
    fn arrived(&self) {
        self.counters.add_grpc_request();
        if !self.counted.swap(true, Ordering::AcqRel) {
            self.counters.add_grpc_connection();
        }
    }
}

/// The handler of [`CALL_PATH`] for one stream.
struct Call {
    counters: Counters,
    /// The connection's "already counted" flag.
    counted: Arc<AtomicBool>,
    delay: Duration,
}

impl UnaryService<()> for Call {
    type Response = Bytes;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Bytes>, Status>> + Send>>;

    fn call(&mut self, _request: Request<()>) -> Self::Future {
        self.arrived();
        self.counters.add_grpc_message_received();
        self.counters.add_grpc_message_sent();
        let delay = self.delay;
        Box::pin(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Ok(Response::new(Bytes::from_static(RESPONSE_BODY.as_bytes())))
        })
    }
}
