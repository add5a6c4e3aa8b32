//! The mock upstream's streaming gRPC methods (`proto/upstream.proto`), one of each kind, so
//! a streaming client's counts can be held to a server's exactly: every request message read
//! and every answer handed to HTTP/2 is counted (`grpc_messages_received`, `_sent`), beside
//! the calls and connections [`crate::grpc`] counts for every method.
//!
//! - `Stream(UInt32Value n)`: n answers `BytesValue{"ok"}` (0: until the client ends it);
//! - `Collect(stream Empty)`: when the client's stream ends, how many it sent (`UInt32Value`);
//! - `Chat(stream Empty)`: one answer `BytesValue{"ok"}` per message, as each arrives.
//!
//! The upstream's delay is for unary calls only: these answer at once.

use crate::{Counters, RESPONSE_BODY};
use bytes::Bytes;
use hyper::body::Incoming;
use std::future::{ready, Future, Ready};
use std::pin::Pin;
use tonic::codegen::tokio_stream::{self, Stream, StreamExt as _};
use tonic::server::{ClientStreamingService, Grpc, ServerStreamingService, StreamingService};
use tonic::{Request, Response, Status, Streaming};
use tonic_prost::ProstCodec;

pub const STREAM_PATH: &str = "/loadlab.upstream.v1.Upstream/Stream";
pub const COLLECT_PATH: &str = "/loadlab.upstream.v1.Upstream/Collect";
pub const CHAT_PATH: &str = "/loadlab.upstream.v1.Upstream/Chat";
pub const PATHS: [&str; 3] = [STREAM_PATH, COLLECT_PATH, CHAT_PATH];

type Answers = Pin<Box<dyn Stream<Item = Result<Bytes, Status>> + Send>>;

/// The answer to a call of one of these methods (`arrived` counts the call first), or the
/// request back for another path.
pub(crate) async fn dispatch(
    req: hyper::Request<Incoming>,
    counters: &Counters,
    arrived: impl FnOnce(),
) -> Result<hyper::Response<tonic::body::Body>, hyper::Request<Incoming>> {
    if !PATHS.contains(&req.uri().path()) {
        return Err(req);
    }
    arrived();
    let counters = counters.clone();
    Ok(match req.uri().path() {
        STREAM_PATH => {
            let mut grpc = Grpc::new(ProstCodec::<Bytes, u32>::default());
            grpc.server_streaming(Methods(counters), req).await
        }
        COLLECT_PATH => {
            let mut grpc = Grpc::new(ProstCodec::<u32, ()>::default());
            grpc.client_streaming(Methods(counters), req).await
        }
        CHAT_PATH => {
            let mut grpc = Grpc::new(ProstCodec::<Bytes, ()>::default());
            grpc.streaming(Methods(counters), req).await
        }
        _ => return Err(req),
    })
}

/// The three methods' handler for one call.
struct Methods(Counters);

fn ok(counters: &Counters) -> Bytes {
    counters.add_grpc_message_sent();
    Bytes::from_static(RESPONSE_BODY.as_bytes())
}

impl ServerStreamingService<u32> for Methods {
    type Response = Bytes;
    type ResponseStream = Answers;
    type Future = Ready<Result<Response<Answers>, Status>>;

    fn call(&mut self, request: Request<u32>) -> Self::Future {
        self.0.add_grpc_message_received();
        let n = match request.into_inner() {
            0 => usize::MAX,
            n => n as usize,
        };
        let counters = self.0.clone();
        let answers =
            tokio_stream::iter(std::iter::repeat_n((), n)).map(move |()| Ok(ok(&counters)));
        ready(Ok(Response::new(Box::pin(answers))))
    }
}

impl ClientStreamingService<()> for Methods {
    type Response = u32;
    type Future = Pin<Box<dyn Future<Output = Result<Response<u32>, Status>> + Send>>;

    fn call(&mut self, request: Request<Streaming<()>>) -> Self::Future {
        let counters = self.0.clone();
        Box::pin(async move {
            let mut messages = request.into_inner();
            let mut n = 0u32;
            while messages.message().await?.is_some() {
                counters.add_grpc_message_received();
                n = n.saturating_add(1);
            }
            ok(&counters);
            Ok(Response::new(n))
        })
    }
}

impl StreamingService<()> for Methods {
    type Response = Bytes;
    type ResponseStream = Answers;
    type Future = Ready<Result<Response<Answers>, Status>>;

    fn call(&mut self, request: Request<Streaming<()>>) -> Self::Future {
        let counters = self.0.clone();
        let answers = request.into_inner().map(move |message| {
            message.map(|()| {
                counters.add_grpc_message_received();
                ok(&counters)
            })
        });
        ready(Ok(Response::new(Box::pin(answers))))
    }
}
