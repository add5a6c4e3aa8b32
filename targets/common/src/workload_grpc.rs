//! The workload contract's gRPC service, `loadlab.lab.v1.Workload` (`../proto/workload.proto`,
//! capability `grpc`): `Compute`, `/compute` as a unary call, and `Echo`, a bidirectional
//! stream answering each message with itself. Answered with tonic's server-side codec and
//! dispatch (`tonic::server::Grpc`, what tonic's generated servers call), framework-neutral:
//! a target routes the service's paths to [`serve`] inside its own HTTP/2 server, so the
//! calls share the port, the connections and the TLS of its HTTP endpoints.
//!
//! The messages are protobuf's well-known `UInt32Value`, `StringValue` and `BytesValue`,
//! which prost implements as `u32`, `String` and `Bytes`: no code generation.

use crate::{params, workload};
use bytes::Bytes;
use std::future::{ready, Ready};
use std::pin::Pin;
use tonic::codegen::tokio_stream::Stream;
use tonic::codegen::{http, Body};
use tonic::server::{Grpc, StreamingService, UnaryService};
use tonic::{Request, Response, Status, Streaming};
use tonic_prost::ProstCodec;

/// The service's path prefix: a target routes every path under it here.
pub const SERVICE_PREFIX: &str = "/loadlab.lab.v1.Workload/";
pub const COMPUTE_PATH: &str = "/loadlab.lab.v1.Workload/Compute";
pub const ECHO_PATH: &str = "/loadlab.lab.v1.Workload/Echo";

/// The answer to one call of the service; another method under its prefix is
/// `UNIMPLEMENTED`, as a generated server answers.
pub async fn serve<B>(req: http::Request<B>) -> http::Response<tonic::body::Body>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send,
{
    match req.uri().path() {
        COMPUTE_PATH => {
            // Encodes StringValue (prost's `String`), decodes UInt32Value (`u32`).
            let mut grpc = Grpc::new(ProstCodec::<String, u32>::default());
            grpc.unary(Compute, req).await
        }
        ECHO_PATH => {
            let mut grpc = Grpc::new(ProstCodec::<Bytes, Bytes>::default());
            grpc.streaming(Echo, req).await
        }
        other => Status::unimplemented(format!(
            "loadlab.lab.v1.Workload serves Compute and Echo; got {other}"
        ))
        .into_http(),
    }
}

struct Compute;

impl UnaryService<u32> for Compute {
    type Response = String;
    type Future = Ready<Result<Response<String>, Status>>;

    fn call(&mut self, request: Request<u32>) -> Self::Future {
        let n = request.into_inner();
        if u64::from(n) > params::MAX_COMPUTE_N {
            return ready(Err(Status::invalid_argument(format!(
                "n must be a whole number from 0 to {}, got {n}",
                params::MAX_COMPUTE_N
            ))));
        }
        // compute_json's bytes are JSON, so UTF-8.
        let json = String::from_utf8(workload::compute_json(n as usize)).unwrap_or_default();
        ready(Ok(Response::new(json)))
    }
}

struct Echo;

type Answers = Pin<Box<dyn Stream<Item = Result<Bytes, Status>> + Send>>;

impl StreamingService<Bytes> for Echo {
    type Response = Bytes;
    type ResponseStream = Answers;
    type Future = Ready<Result<Response<Answers>, Status>>;

    fn call(&mut self, request: Request<Streaming<Bytes>>) -> Self::Future {
        // Each message back as it arrives: the stream ends when the client's side does.
        ready(Ok(Response::new(Box::pin(request.into_inner()))))
    }
}
