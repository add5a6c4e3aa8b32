//! loadlab reference target: the workload contract (`targets/CONTRACT.md`) served with
//! actix-web, the way its documentation recommends: `HttpServer` with one worker per core
//! (or `WORKERS`), an `App` with shared `web::Data`, `route` registration
//! and `DefaultHeaders` middleware for `Server`. Over HTTPS (`TLS_CERT`, `TLS_KEY`) it binds
//! with `bind_rustls_0_23`, actix-web's own rustls listener, which offers `h2` and `http/1.1`
//! by ALPN, and serves HTTP/3 on the same port number over UDP ([`h3`]: actix-web has none).

use actix_web::http::header::{self, ContentType};
use actix_web::http::StatusCode;
use actix_web::{middleware, web, App, HttpRequest, HttpResponse, HttpServer};
use lab_common::{params, startup, workload, AppState, BadParam, Config, UpstreamError};
use std::process::ExitCode;
use std::time::Duration;

mod h3;
mod upstream_grpc;

type Shared = web::Data<AppState>;

fn main() -> ExitCode {
    startup::run("rust-actix-web", run)
}

/// actix-web runs its own runtimes (one per worker) and binds itself, so it takes only the
/// state, the exit rule and the `listening on` line from `lab_common::startup`.
/// actix-server's limit on `workers` (it panics above it).
const MAX_WORKERS: usize = 512;

fn run() -> Result<(), startup::Error> {
    let config = Config::from_env()?;
    if config.workers > MAX_WORKERS {
        return Err(format!(
            "WORKERS={}: actix-web runs at most {MAX_WORKERS} workers; use {MAX_WORKERS} or fewer",
            config.workers
        )
        .into());
    }
    // No ALPN of ours: actix-web puts `h2` and `http/1.1` in front of whatever it is given.
    let tls = startup::tls_config(&config, &[])?;
    let state = web::Data::new(AppState::load(&config)?);
    actix_web::rt::System::new().block_on(async move {
        let make_app = move || {
            App::new()
                .app_data(state.clone())
                .app_data(web::PayloadConfig::new(params::MAX_ECHO_BYTES))
                .wrap(middleware::DefaultHeaders::new().add((header::SERVER, "actix-web")))
                .route("/plaintext", web::get().to(plaintext))
                .route("/json", web::get().to(json))
                .route("/delay", web::get().to(delay))
                .route("/block", web::get().to(block))
                .route("/compute", web::get().to(compute))
                .route("/bytes", web::get().to(bytes))
                .route("/echo", web::post().to(echo))
                .route("/upstream", web::get().to(upstream))
                .route(
                    "/upstream-grpc",
                    web::get().to(upstream_grpc::upstream_grpc),
                )
                .route("/healthz", web::get().to(healthz))
                .route("/", web::get().to(home))
                .route("/blogs", web::get().to(blogs))
                .route("/blogs/{id}", web::get().to(blog))
                .route("/version", web::get().to(version))
                .default_service(web::to(not_found))
        };
        let server = HttpServer::new(make_app.clone())
            .workers(config.workers)
            .backlog(config.backlog);
        let server = match tls {
            None => server.bind(config.bind_addr())?,
            Some(tls) => {
                let server = server.bind_rustls_0_23(config.bind_addr(), (*tls).clone())?;
                // HTTP/3 beside HTTPS, on the same port number over UDP, answered by the
                // same App on as many arbiters as there are workers (capability `http3`).
                if let Some(addr) = server.addrs().first() {
                    h3::spawn(*addr, &tls, config.workers, make_app)?;
                }
                server
            }
        };
        for addr in server.addrs() {
            startup::announce(addr);
        }
        server.run().await?;
        Ok(())
    })
}

fn text(status: StatusCode, body: impl Into<String>) -> HttpResponse {
    HttpResponse::build(status)
        .content_type(ContentType::plaintext())
        .body(body.into())
}

fn html(status: StatusCode, body: String) -> HttpResponse {
    HttpResponse::build(status)
        .content_type(ContentType::html())
        .body(body)
}

fn bad_request(err: BadParam) -> HttpResponse {
    text(StatusCode::BAD_REQUEST, err.to_string())
}

async fn plaintext() -> HttpResponse {
    text(StatusCode::OK, workload::PLAINTEXT)
}

async fn json() -> HttpResponse {
    HttpResponse::Ok().json(workload::message())
}

async fn delay(req: HttpRequest) -> HttpResponse {
    match params::delay_ms(Some(req.query_string())) {
        Ok(ms) => {
            actix_web::rt::time::sleep(Duration::from_millis(ms)).await;
            text(StatusCode::OK, workload::DONE)
        }
        Err(err) => bad_request(err),
    }
}

async fn block(req: HttpRequest) -> HttpResponse {
    match params::block_ms(Some(req.query_string())) {
        Ok(ms) => {
            // Deliberately blocks the worker thread: the mistake post 002 measured.
            std::thread::sleep(Duration::from_millis(ms));
            text(StatusCode::OK, workload::DONE)
        }
        Err(err) => bad_request(err),
    }
}

async fn compute(req: HttpRequest) -> HttpResponse {
    match params::compute_n(Some(req.query_string())) {
        Ok(n) => HttpResponse::Ok()
            .content_type(ContentType::json())
            .body(workload::compute_json(n)),
        Err(err) => bad_request(err),
    }
}

async fn bytes(req: HttpRequest) -> HttpResponse {
    match params::bytes_n(Some(req.query_string())) {
        Ok(n) => HttpResponse::Ok()
            .content_type(ContentType::octet_stream())
            .body(workload::payload(n)),
        Err(err) => bad_request(err),
    }
}

async fn echo(body: web::Bytes) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(ContentType::octet_stream())
        .body(body)
}

async fn upstream(state: Shared, req: HttpRequest) -> HttpResponse {
    let (calls, mode) = match params::upstream(Some(req.query_string())) {
        Ok(parsed) => parsed,
        Err(err) => return bad_request(err),
    };
    match state.upstream.call(calls, mode).await {
        Ok(bytes) => HttpResponse::Ok()
            .content_type(ContentType::json())
            .body(workload::upstream_json(calls, mode, bytes)),
        Err(err @ UpstreamError::NotConfigured) => {
            text(StatusCode::SERVICE_UNAVAILABLE, err.to_string())
        }
        Err(err) => text(StatusCode::BAD_GATEWAY, err.to_string()),
    }
}

async fn healthz() -> HttpResponse {
    text(StatusCode::OK, workload::HEALTHZ)
}

async fn home(state: Shared) -> HttpResponse {
    html(StatusCode::OK, state.site.home())
}

async fn blogs(state: Shared) -> HttpResponse {
    html(StatusCode::OK, state.site.blogs())
}

async fn blog(state: Shared, id: web::Path<String>) -> HttpResponse {
    match state.site.blog(&id) {
        Some(page) => html(StatusCode::OK, page),
        None => html(StatusCode::NOT_FOUND, state.site.not_found()),
    }
}

async fn version(state: Shared) -> HttpResponse {
    html(StatusCode::OK, state.site.version())
}

async fn not_found(state: Shared) -> HttpResponse {
    html(StatusCode::NOT_FOUND, state.site.not_found())
}
