//! loadlab reference target: the workload contract (`targets/CONTRACT.md`) served with warp,
//! the way warp's documentation recommends: routes composed from filters with `or`, shared
//! state injected by a filter, rejections turned into responses by `recover`, on a tokio
//! multi-thread runtime. The filter is served as `warp::service` by hyper-util's `auto`
//! builder, exactly as `warp::serve` serves it (`lab_common::plain`: HTTP/1.1, or h2c), behind
//! the contract's gRPC service (`lab_common::workload_grpc::WithGrpc`, capability `grpc`): a
//! warp reply's body is data only, and a gRPC answer ends with trailers, so the service's
//! calls are taken before the filter. Over HTTPS (`TLS_CERT`, `TLS_KEY`; warp 0.4 has no TLS
//! of its own) the same service is served over tokio-rustls, and over HTTP/3 on the same port
//! number over UDP (`lab_common::h3`: quinn and the h3 crates).

use bytes::{Buf, BufMut, Bytes};
use futures_util::{Stream, StreamExt};
use hyper_util::service::TowerToHyperService;
use lab_common::workload_grpc::WithGrpc;
use lab_common::{params, startup, workload, AppState, BadParam, UpstreamError};
use std::convert::Infallible;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use warp::http::StatusCode;
use warp::reply::{self, Reply, Response};
use warp::{Filter, Rejection};

mod upstream_grpc;

type Shared = Arc<AppState>;

fn main() -> ExitCode {
    startup::run_tokio("rust-warp", |listener, state, tls| async move {
        let routes = routes(state);
        let service = move || WithGrpc(TowerToHyperService::new(warp::service(routes.clone())));
        match tls {
            None => lab_common::plain::serve(listener, service).await,
            // HTTPS, and HTTP/3 beside it on the same port number over UDP (capability
            // `http3`).
            Some(tls) => lab_common::h3::serve_with_tls(listener, tls, service).await,
        }
    })
}

fn with_state(state: Shared) -> impl Filter<Extract = (Shared,), Error = Infallible> + Clone {
    warp::any().map(move || state.clone())
}

/// The raw query string, or `None` when the request has none.
fn query() -> impl Filter<Extract = (Option<String>,), Error = Infallible> + Clone {
    warp::query::raw()
        .map(Some)
        .or(warp::any().map(|| None))
        .unify()
}

fn routes(state: Shared) -> impl Filter<Extract = (Response,), Error = Infallible> + Clone {
    // Path before method: a path no route has must end as "not found" (404 page), not as a
    // 405 from whichever method filter rejected last.
    let get = |name: &'static str| warp::path(name).and(warp::path::end()).and(warp::get());
    let plaintext = get("plaintext").map(|| workload::PLAINTEXT.into_response());
    let json = get("json").map(|| reply::json(&workload::message()).into_response());
    let delay = get("delay").and(query()).then(delay);
    let block = get("block").and(query()).map(block);
    let compute = get("compute").and(query()).map(compute);
    let bytes = get("bytes").and(query()).map(bytes);
    let echo = warp::path("echo")
        .and(warp::path::end())
        .and(warp::post())
        .and(warp::body::stream())
        .then(echo);
    let upstream = get("upstream")
        .and(with_state(state.clone()))
        .and(query())
        .then(upstream);
    let upstream_grpc = get("upstream-grpc")
        .and(with_state(state.clone()))
        .and(query())
        .then(upstream_grpc::upstream_grpc);
    let healthz = get("healthz").map(|| workload::HEALTHZ.into_response());
    let home = warp::path::end()
        .and(warp::get())
        .and(with_state(state.clone()))
        .map(|s: Shared| reply::html(s.site.home()).into_response());
    let blogs = get("blogs")
        .and(with_state(state.clone()))
        .map(|s: Shared| reply::html(s.site.blogs()).into_response());
    let blog = warp::path!("blogs" / String)
        .and(warp::get())
        .and(with_state(state.clone()))
        .map(|id: String, s: Shared| match s.site.blog(&id) {
            Some(page) => reply::html(page).into_response(),
            None => not_found(&s),
        });
    let version = get("version")
        .and(with_state(state.clone()))
        .map(|s: Shared| reply::html(s.site.version()).into_response());

    plaintext
        .or(json)
        .unify()
        .or(delay)
        .unify()
        .or(block)
        .unify()
        .or(compute)
        .unify()
        .or(bytes)
        .unify()
        .or(echo)
        .unify()
        .or(upstream)
        .unify()
        .or(upstream_grpc)
        .unify()
        .or(healthz)
        .unify()
        .or(home)
        .unify()
        .or(blogs)
        .unify()
        .or(blog)
        .unify()
        .or(version)
        .unify()
        .recover(move |rejection| recover(state.clone(), rejection))
        .unify()
        .with(reply::with::header("server", "warp"))
        .map(Reply::into_response)
}

fn text(status: StatusCode, body: String) -> Response {
    reply::with_status(body, status).into_response()
}

fn bad_request(err: BadParam) -> Response {
    text(StatusCode::BAD_REQUEST, err.to_string())
}

fn not_found(state: &AppState) -> Response {
    reply::with_status(reply::html(state.site.not_found()), StatusCode::NOT_FOUND).into_response()
}

async fn recover(state: Shared, rejection: Rejection) -> Result<Response, Infallible> {
    Ok(if rejection.is_not_found() {
        not_found(&state)
    } else if rejection.find::<warp::reject::MethodNotAllowed>().is_some() {
        text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed".into())
    } else {
        text(
            StatusCode::BAD_REQUEST,
            format!("bad request: {rejection:?}"),
        )
    })
}

async fn delay(query: Option<String>) -> Response {
    match params::delay_ms(query.as_deref()) {
        Ok(ms) => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            workload::DONE.into_response()
        }
        Err(err) => bad_request(err),
    }
}

fn block(query: Option<String>) -> Response {
    match params::block_ms(query.as_deref()) {
        Ok(ms) => {
            // Deliberately blocks the worker thread: the mistake post 002 measured.
            std::thread::sleep(Duration::from_millis(ms));
            workload::DONE.into_response()
        }
        Err(err) => bad_request(err),
    }
}

fn compute(query: Option<String>) -> Response {
    match params::compute_n(query.as_deref()) {
        Ok(n) => reply::with_header(
            workload::compute_json(n),
            "content-type",
            "application/json",
        )
        .into_response(),
        Err(err) => bad_request(err),
    }
}

fn bytes(query: Option<String>) -> Response {
    match params::bytes_n(query.as_deref()) {
        Ok(n) => reply::with_header(
            Response::new(workload::payload(n).into()),
            "content-type",
            "application/octet-stream",
        )
        .into_response(),
        Err(err) => bad_request(err),
    }
}

/// Collects the body (fixed length or chunked) up to the contract's limit.
async fn echo<S, B>(body: S) -> Response
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let mut body = std::pin::pin!(body);
    let mut collected = Vec::new();
    while let Some(chunk) = body.next().await {
        match chunk {
            Ok(chunk) if collected.len() + chunk.remaining() <= params::MAX_ECHO_BYTES => {
                collected.put(chunk)
            }
            Ok(_) => {
                return text(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("request body over {} bytes", params::MAX_ECHO_BYTES),
                )
            }
            Err(err) => return text(StatusCode::BAD_REQUEST, err.to_string()),
        }
    }
    reply::with_header(
        Response::new(Bytes::from(collected).into()),
        "content-type",
        "application/octet-stream",
    )
    .into_response()
}

async fn upstream(state: Shared, query: Option<String>) -> Response {
    let (calls, mode) = match params::upstream(query.as_deref()) {
        Ok(parsed) => parsed,
        Err(err) => return bad_request(err),
    };
    match state.upstream.call(calls, mode).await {
        Ok(bytes) => reply::with_header(
            workload::upstream_json(calls, mode, bytes),
            "content-type",
            "application/json",
        )
        .into_response(),
        Err(err @ UpstreamError::NotConfigured) => {
            text(StatusCode::SERVICE_UNAVAILABLE, err.to_string())
        }
        Err(err) => text(StatusCode::BAD_GATEWAY, err.to_string()),
    }
}
