//! loadlab reference target: the workload contract (`targets/CONTRACT.md`) served with axum,
//! the way axum's documentation recommends: a `Router` with typed extractors and shared
//! state, served by `axum::serve` on a tokio multi-thread runtime. Over HTTPS (`TLS_CERT`,
//! `TLS_KEY`) the same `Router` is served by hyper-util over tokio-rustls, as axum's
//! `low-level-rustls` example does (`axum::serve` speaks plain TCP only), and over HTTP/3 on
//! the same port number over UDP (`lab_common::h3`: quinn and the h3 crates, the same
//! `Router` as a service). The contract's gRPC service (`lab_common::workload_grpc`) is two
//! more routes of the same `Router`.

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{middleware, Json, Router};
use hyper_util::service::TowerToHyperService;
use lab_common::{params, startup, workload, AppState, BadParam, UpstreamError};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

mod upstream_grpc;

type Shared = State<Arc<AppState>>;

fn main() -> ExitCode {
    startup::run_tokio("rust-axum", |listener, state, tls| async move {
        let app = app(state);
        match tls {
            None => axum::serve(listener, app).await?,
            // HTTPS, and HTTP/3 beside it on the same port number over UDP, serving the
            // same Router (capability `http3`).
            Some(tls) => {
                lab_common::h3::serve_with_tls(listener, tls, move || {
                    TowerToHyperService::new(app.clone())
                })
                .await?
            }
        }
        Ok(())
    })
}

fn app(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/plaintext", get(plaintext))
        .route("/json", get(json))
        .route("/delay", get(delay))
        .route("/block", get(block))
        .route("/compute", get(compute))
        .route("/bytes", get(bytes))
        .route("/echo", post(echo))
        .route("/upstream", get(upstream))
        .route("/upstream-grpc", get(upstream_grpc::upstream_grpc))
        // The contract's gRPC service (capability `grpc`), on the same port: over h2c
        // (axum::serve's hyper-util builder takes HTTP/2's prior-knowledge preface) or ALPN h2.
        .route("/loadlab.lab.v1.Workload/{method}", post(workload_grpc))
        .route("/healthz", get(healthz))
        .route("/", get(home))
        .route("/blogs", get(blogs))
        .route("/blogs/{id}", get(blog))
        .route("/version", get(version))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(params::MAX_ECHO_BYTES))
        .layer(middleware::map_response(server_header))
        .with_state(state)
}

async fn server_header(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::SERVER, HeaderValue::from_static("axum"));
    response
}

fn bad_request(err: BadParam) -> Response {
    (StatusCode::BAD_REQUEST, err.to_string()).into_response()
}

async fn plaintext() -> &'static str {
    workload::PLAINTEXT
}

async fn json() -> Json<workload::Message> {
    Json(workload::message())
}

async fn delay(RawQuery(query): RawQuery) -> Response {
    match params::delay_ms(query.as_deref()) {
        Ok(ms) => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            workload::DONE.into_response()
        }
        Err(err) => bad_request(err),
    }
}

async fn block(RawQuery(query): RawQuery) -> Response {
    match params::block_ms(query.as_deref()) {
        Ok(ms) => {
            // Deliberately blocks the worker thread: this is the mistake post 002 measured.
            std::thread::sleep(Duration::from_millis(ms));
            workload::DONE.into_response()
        }
        Err(err) => bad_request(err),
    }
}

async fn compute(RawQuery(query): RawQuery) -> Response {
    match params::compute_n(query.as_deref()) {
        Ok(n) => (
            [(header::CONTENT_TYPE, "application/json")],
            workload::compute_json(n),
        )
            .into_response(),
        Err(err) => bad_request(err),
    }
}

async fn bytes(RawQuery(query): RawQuery) -> Response {
    match params::bytes_n(query.as_deref()) {
        Ok(n) => workload::payload(n).into_response(),
        Err(err) => bad_request(err),
    }
}

async fn echo(body: Bytes) -> Bytes {
    body
}

async fn upstream(State(state): Shared, RawQuery(query): RawQuery) -> Response {
    let (calls, mode) = match params::upstream(query.as_deref()) {
        Ok(parsed) => parsed,
        Err(err) => return bad_request(err),
    };
    match state.upstream.call(calls, mode).await {
        Ok(bytes) => (
            [(header::CONTENT_TYPE, "application/json")],
            workload::upstream_json(calls, mode, bytes),
        )
            .into_response(),
        Err(err @ UpstreamError::NotConfigured) => {
            (StatusCode::SERVICE_UNAVAILABLE, err.to_string()).into_response()
        }
        Err(err) => (StatusCode::BAD_GATEWAY, err.to_string()).into_response(),
    }
}

async fn workload_grpc(req: axum::extract::Request) -> Response {
    lab_common::workload_grpc::serve(req).await.into_response()
}

async fn healthz() -> &'static str {
    workload::HEALTHZ
}

async fn home(State(state): Shared) -> Html<String> {
    Html(state.site.home())
}

async fn blogs(State(state): Shared) -> Html<String> {
    Html(state.site.blogs())
}

async fn blog(State(state): Shared, Path(id): Path<String>) -> Response {
    match state.site.blog(&id) {
        Some(page) => Html(page).into_response(),
        None => (StatusCode::NOT_FOUND, Html(state.site.not_found())).into_response(),
    }
}

async fn version(State(state): Shared) -> Html<String> {
    Html(state.site.version())
}

async fn not_found(State(state): Shared) -> (StatusCode, Html<String>) {
    (StatusCode::NOT_FOUND, Html(state.site.not_found()))
}
