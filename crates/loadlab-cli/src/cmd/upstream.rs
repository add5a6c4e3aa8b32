//! `loadlab upstream`: the mock upstream as a standalone server, for targets started by hand
//! or by a benchmark (`UPSTREAM_URL=http://127.0.0.1:9100/`). Every path answers `ok` after
//! `--delay`; `/__stats` serves `{"requests":R,"connections":C,"grpc_requests":..,...}`. The
//! same port serves the unary gRPC method `loadlab.upstream.v1.Upstream/Call` to HTTP/2
//! clients (`UPSTREAM_GRPC_URL=http://127.0.0.1:9100`). Ctrl-C stops it and prints the final
//! counters. Exit codes: 0 stopped by Ctrl-C; 2 could not start.

use anyhow::Context as _;
use clap::Args;
use loadlab_upstream::{run as serve_upstream, Counters, UpstreamConfig, UpstreamError};
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(
    about = "Run the mock upstream: answers `ok` after a delay (HTTP/1.1, and gRPC on the same port) and counts requests and connections",
    after_help = "Counters: GET /__stats. gRPC: loadlab.upstream.v1.Upstream/Call over HTTP/2 without TLS on the same port \
                  (crates/loadlab-upstream/proto/upstream.proto). Exit codes: 0 stopped by Ctrl-C; 2 could not start."
)]
pub struct UpstreamArgs {
    /// Port to listen on (0 picks a free one; the address is printed first).
    #[arg(long, default_value_t = 9100)]
    pub port: u16,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Wait before each answer, standing in for the remote service's work, e.g. 5ms.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "0ms")]
    pub delay: Duration,
    /// Worker threads [default: one per core]
    #[arg(long)]
    pub threads: Option<usize>,
}

pub fn run(args: UpstreamArgs) -> anyhow::Result<ExitCode> {
    let config = UpstreamConfig {
        addr: SocketAddr::from((args.host, args.port)),
        delay: args.delay,
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = args.threads {
        anyhow::ensure!(threads > 0, "--threads must be at least 1, got 0");
        runtime.worker_threads(threads);
    }
    let runtime = runtime
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let mut stop_tx = Some(stop_tx);
    ctrlc::set_handler(move || {
        if let Some(tx) = stop_tx.take() {
            let _ = tx.send(());
        }
    })
    .context("cannot install the Ctrl-C handler")?;
    let counters = Counters::default();
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(config.addr)
            .await
            .map_err(|source| UpstreamError::Bind {
                addr: config.addr,
                source,
            })?;
        let addr = listener.local_addr()?;
        println!("listening on {addr}");
        eprintln!(
            "mock upstream: every path answers `ok` after {}; gRPC {} on the same port \
             (UPSTREAM_GRPC_URL=http://{addr}); counters on http://{addr}/__stats; Ctrl-C stops it",
            humantime::format_duration(config.delay),
            loadlab_upstream::grpc::CALL_PATH,
        );
        serve_upstream(listener, config.clone(), counters.clone(), async {
            let _ = stop_rx.await;
        })
        .await
    })?;
    let stats = counters.snapshot();
    eprintln!(
        "stopped after {} requests over {} connections; gRPC: {} calls over {} connections ({} streams)",
        stats.requests,
        stats.connections,
        stats.grpc_requests,
        stats.grpc_connections,
        stats.grpc_streams
    );
    Ok(ExitCode::SUCCESS)
}
