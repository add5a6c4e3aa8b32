//! loadlab reference target: the workload contract (`targets/CONTRACT.md`) served with bare
//! hyper 1, the way hyper's server guide recommends: a tokio accept loop, one task per
//! connection, a `service_fn`, routing by `match`. Each connection is served by hyper-util's
//! `auto` builder (`lab_common::plain`), HTTP/1.1 or HTTP/2 by prior knowledge (h2c), so that
//! gRPC clients reach the contract's gRPC service, which `lab_common::workload_grpc::WithGrpc`
//! puts in front of the routes (capability `grpc`). Over HTTPS (`TLS_CERT`, `TLS_KEY`) the
//! same service is served over tokio-rustls by the same builder (HTTP/1.1 or HTTP/2, as ALPN
//! chose), and over HTTP/3 on the same port number over UDP (`lab_common::h3`: quinn and the
//! h3 crates), by one [`App`] service for either body.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Body;
use hyper::header::{self, HeaderValue};
use hyper::service::{service_fn, Service};
use hyper::{Method, Request, Response, StatusCode};
use lab_common::workload_grpc::WithGrpc;
use lab_common::{params, startup, workload, AppState, BadParam, UpstreamError};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

mod upstream_grpc;

fn main() -> ExitCode {
    startup::run_tokio("rust-hyper", serve)
}

/// Serves the listener forever, one task per connection (`lab_common::plain`, or its TLS
/// counterpart): the gRPC service's calls first, then the routes.
async fn serve(
    listener: TcpListener,
    state: Arc<AppState>,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> Result<(), startup::Error> {
    if let Some(tls) = tls {
        let app = WithGrpc(App(state));
        return lab_common::h3::serve_with_tls(listener, tls, move || app.clone()).await;
    }
    lab_common::plain::serve(listener, move || {
        let state = state.clone();
        WithGrpc(service_fn(move |req| handle(state.clone(), req)))
    })
    .await
}

type Reply = Response<Full<Bytes>>;

/// The service over HTTPS and HTTP/3: [`handle`] as a `Service` for a request of any body
/// (hyper's `Incoming` over TCP, h3's stream over QUIC), which one `service_fn` closure cannot
/// be. Plain HTTP/1.1 keeps the `service_fn` of hyper's guide.
#[derive(Clone)]
struct App(Arc<AppState>);

impl<B> Service<Request<B>> for App
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Reply;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Reply, Infallible>> + Send>>;

    fn call(&self, req: Request<B>) -> Self::Future {
        Box::pin(handle(self.0.clone(), req))
    }
}

fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Reply {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::SERVER, HeaderValue::from_static("hyper"));
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

const TEXT: &str = "text/plain; charset=utf-8";
const HTML: &str = "text/html; charset=utf-8";
const JSON: &str = "application/json";
const OCTETS: &str = "application/octet-stream";

fn ok(content_type: &'static str, body: impl Into<Bytes>) -> Reply {
    reply(StatusCode::OK, content_type, body)
}

fn bad_request(err: BadParam) -> Reply {
    reply(StatusCode::BAD_REQUEST, TEXT, err.to_string())
}

async fn handle<B>(state: Arc<AppState>, req: Request<B>) -> Result<Reply, Infallible>
where
    B: Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let query = req.uri().query().map(str::to_owned);
    let query = query.as_deref();
    let path = req.uri().path().to_owned();
    let response = match (req.method(), path.as_str()) {
        (&Method::GET, "/plaintext") => ok(TEXT, workload::PLAINTEXT),
        (&Method::GET, "/json") => match serde_json::to_vec(&workload::message()) {
            Ok(body) => ok(JSON, body),
            Err(err) => reply(StatusCode::INTERNAL_SERVER_ERROR, TEXT, err.to_string()),
        },
        (&Method::GET, "/delay") => match params::delay_ms(query) {
            Ok(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                ok(TEXT, workload::DONE)
            }
            Err(err) => bad_request(err),
        },
        (&Method::GET, "/block") => match params::block_ms(query) {
            Ok(ms) => {
                // Deliberately blocks the worker thread: the mistake post 002 measured.
                std::thread::sleep(Duration::from_millis(ms));
                ok(TEXT, workload::DONE)
            }
            Err(err) => bad_request(err),
        },
        (&Method::GET, "/compute") => match params::compute_n(query) {
            Ok(n) => ok(JSON, workload::compute_json(n)),
            Err(err) => bad_request(err),
        },
        (&Method::GET, "/bytes") => match params::bytes_n(query) {
            Ok(n) => ok(OCTETS, workload::payload(n)),
            Err(err) => bad_request(err),
        },
        (&Method::POST, "/echo") => {
            match Limited::new(req.into_body(), params::MAX_ECHO_BYTES)
                .collect()
                .await
            {
                Ok(body) => ok(OCTETS, body.to_bytes()),
                Err(err) if err.is::<http_body_util::LengthLimitError>() => reply(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    TEXT,
                    format!("request body over {} bytes", params::MAX_ECHO_BYTES),
                ),
                Err(err) => reply(StatusCode::BAD_REQUEST, TEXT, err.to_string()),
            }
        }
        (&Method::GET, "/upstream") => match params::upstream(query) {
            Ok((calls, mode)) => match state.upstream.call(calls, mode).await {
                Ok(bytes) => ok(JSON, workload::upstream_json(calls, mode, bytes)),
                Err(err @ UpstreamError::NotConfigured) => {
                    reply(StatusCode::SERVICE_UNAVAILABLE, TEXT, err.to_string())
                }
                Err(err) => reply(StatusCode::BAD_GATEWAY, TEXT, err.to_string()),
            },
            Err(err) => bad_request(err),
        },
        (&Method::GET, "/upstream-grpc") => upstream_grpc::upstream_grpc(&state, query).await,
        (&Method::GET, "/healthz") => ok(TEXT, workload::HEALTHZ),
        (&Method::GET, "/") => ok(HTML, state.site.home()),
        (&Method::GET, "/blogs") => ok(HTML, state.site.blogs()),
        (&Method::GET, "/version") => ok(HTML, state.site.version()),
        (&Method::GET, p) => match p.strip_prefix("/blogs/").and_then(|id| state.site.blog(id)) {
            Some(page) => ok(HTML, page),
            None => reply(StatusCode::NOT_FOUND, HTML, state.site.not_found()),
        },
        _ => reply(StatusCode::METHOD_NOT_ALLOWED, TEXT, "method not allowed"),
    };
    Ok(response)
}
