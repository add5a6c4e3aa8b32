//! The workload contract's gRPC service, `loadlab.lab.v1.Workload` (`../proto/workload.proto`,
//! capability `grpc`): `Compute`, `/compute` as a unary call, and `Echo`, a bidirectional
//! stream answering each message with itself. Answered with tonic's server-side codec and
//! dispatch (`tonic::server::Grpc`, what tonic's generated servers call), framework-neutral:
//! a target routes the service's paths to [`serve`] inside its own HTTP/2 server, so the
//! calls share the port, the connections and the TLS of its HTTP endpoints.
//!
//! The messages are protobuf's well-known `UInt32Value`, `StringValue` and `BytesValue`,
//! which prost implements as `u32`, `String` and `Bytes`: no code generation.
//!
//! A framework whose routes can answer with a streaming body and trailers routes the paths
//! itself (axum: two `Router` routes). One whose replies cannot carry trailers (warp's reply
//! body is data only; `grpc-status` is a trailer) is wrapped in [`WithGrpc`], which takes the
//! service's calls before the framework's routes see them: the same server, port and
//! connections.

use crate::{params, workload};
use bytes::Bytes;
use http_body_util::Either;
use hyper::service::Service;
use std::future::{ready, Future, Ready};
use std::pin::Pin;
use std::task::{Context, Poll};
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
    B::Error: Into<BoxError> + Send,
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

/// Whether `req` is a call of the service: a `POST` under its prefix (other methods there go
/// to the framework, which answers them as any unknown route).
pub fn is_call<B>(req: &http::Request<B>) -> bool {
    req.method() == http::Method::POST && req.uri().path().starts_with(SERVICE_PREFIX)
}

/// A target's HTTP service `S` with the contract's gRPC service in front of it: calls of the
/// service ([`is_call`]) are answered by [`serve`], everything else by `S`, unchanged (its
/// body on the left of the answer's [`Either`]).
#[derive(Clone)]
pub struct WithGrpc<S>(pub S);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<S, B, R> Service<http::Request<B>> for WithGrpc<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError> + Send,
{
    type Response = http::Response<Either<R, tonic::body::Body>>;
    type Error = S::Error;
    type Future = Answer<S::Future>;

    fn call(&self, req: http::Request<B>) -> Self::Future {
        if is_call(&req) {
            return Answer::Grpc {
                call: Box::pin(serve(req)),
            };
        }
        Answer::Routes {
            answer: self.0.call(req),
        }
    }
}

type Call = Pin<Box<dyn Future<Output = http::Response<tonic::body::Body>> + Send>>;

pin_project_lite::pin_project! {
    /// [`WithGrpc`]'s answer: the routes' own future as it is (no box on their path), or a
    /// call of the service.
    #[project = AnswerProj]
    pub enum Answer<F> {
        Routes { #[pin] answer: F },
        Grpc { call: Call },
    }
}

impl<F, R, E> Future for Answer<F>
where
    F: Future<Output = Result<http::Response<R>, E>>,
{
    type Output = Result<http::Response<Either<R, tonic::body::Body>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            AnswerProj::Routes { answer } => answer.poll(cx).map_ok(|r| r.map(Either::Left)),
            AnswerProj::Grpc { call } => call.as_mut().poll(cx).map(|r| Ok(r.map(Either::Right))),
        }
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
