//! Start-up shared by the Rust targets, so each `main.rs` holds only its framework's wiring:
//! the state every handler shares, the exit rule for errors (`NAME: error` on stderr, status
//! 2, no panic), the tokio runtime with `WORKERS` threads, and binding with `BACKLOG` followed
//! by the contract's `listening on ADDR` first line.
//!
//! A target on tokio calls [`run_tokio`] with the function that serves a bound listener (over
//! HTTPS when it is given a TLS configuration, see [`crate::tls::serve`]); a framework that
//! runs its own runtime and binds itself (actix-web) uses [`run`], [`AppState::load`],
//! [`tls_config`] and [`announce`].

use crate::{Config, GrpcUpstreamClient, Site, UpstreamClient};
use std::future::Future;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Anything that stops a target: a bad variable, unreadable content, a failed bind or serve.
pub type Error = Box<dyn std::error::Error>;

/// What every handler shares, built once at start-up.
pub struct AppState {
    /// The portfolio, rendered from `CONTENT_DIR`.
    pub site: Site,
    /// The pooled client behind `/upstream` (and the upstream's address).
    pub upstream: UpstreamClient,
    /// The gRPC channel behind `/upstream-grpc` (made on its first call).
    pub upstream_grpc: GrpcUpstreamClient,
}

impl AppState {
    /// Loads the portfolio from `CONTENT_DIR` and creates the process-wide upstream client.
    pub fn load(config: &Config) -> Result<Self, Error> {
        Ok(AppState {
            site: Site::load(&config.content_dir)?,
            upstream: UpstreamClient::new(
                config.upstream_url.as_deref(),
                config.upstream_ca.as_deref(),
            )?,
            upstream_grpc: GrpcUpstreamClient::new(config.upstream_grpc_url.as_deref()),
        })
    }
}

/// A target's `main`: runs `run` and turns an error into the contract's exit, `NAME: error`
/// on stderr and status 2.
pub fn run(name: &str, run: impl FnOnce() -> Result<(), Error>) -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{name}: {err}");
            ExitCode::from(2)
        }
    }
}

/// The HTTPS server configuration when `TLS_CERT` and `TLS_KEY` are set (ALPN `alpn`), read
/// before binding so a bad file is a start-up error, not a failed first handshake.
pub fn tls_config(
    config: &Config,
    alpn: &[&[u8]],
) -> Result<Option<Arc<rustls::ServerConfig>>, Error> {
    config
        .tls
        .as_ref()
        .map(|files| crate::tls::server_config(files, alpn).map(Arc::new))
        .transpose()
}

/// [`run`] for a target served from a tokio listener: reads the environment, loads the
/// [`AppState`] and the TLS configuration (ALPN `h2`, `http/1.1`), builds the [`runtime`],
/// binds with [`listener`] inside it, and then awaits `serve(listener, state, tls)` on it;
/// `tls` is `Some` when the target must serve HTTPS only.
pub fn run_tokio<F, Fut>(name: &str, serve: F) -> ExitCode
where
    F: FnOnce(TcpListener, Arc<AppState>, Option<Arc<rustls::ServerConfig>>) -> Fut,
    Fut: Future<Output = Result<(), Error>>,
{
    run(name, || {
        let config = Config::from_env()?;
        let tls = tls_config(&config, &[b"h2", b"http/1.1"])?;
        let state = Arc::new(AppState::load(&config)?);
        runtime(&config)?.block_on(async move { serve(listener(&config)?, state, tls).await })
    })
}

/// A tokio multi-thread runtime with `WORKERS` worker threads, timers and I/O enabled.
pub fn runtime(config: &Config) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.workers)
        .enable_all()
        .build()
}

/// Binds `HOST:PORT` with `BACKLOG` and [`announce`]s the bound address. Call it inside the
/// tokio runtime that will serve the listener.
pub fn listener(config: &Config) -> std::io::Result<TcpListener> {
    let socket = match config.host {
        std::net::IpAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        std::net::IpAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(config.bind_addr())?;
    let listener = socket.listen(config.backlog)?;
    announce(listener.local_addr()?);
    Ok(listener)
}

/// The contract's first line on stdout, `listening on ADDR:PORT`, printed once the socket is
/// bound (stdout is line-buffered, so the line is flushed).
pub fn announce(addr: SocketAddr) {
    println!("listening on {addr}");
}
