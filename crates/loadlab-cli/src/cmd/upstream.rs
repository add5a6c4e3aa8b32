//! `loadlab upstream`: the mock upstream as a standalone server, for targets started by hand
//! or by a benchmark (`UPSTREAM_URL=http://127.0.0.1:9100/`). Every path answers `ok` after
//! `--delay`; `/__stats` serves `{"requests":R,"connections":C,"tls_full":F,"tls_resumed":S,
//! "grpc_requests":..,...}`. Without `--tls`, the same port serves the unary gRPC method
//! `loadlab.upstream.v1.Upstream/Call` to HTTP/2 clients
//! (`UPSTREAM_GRPC_URL=http://127.0.0.1:9100`). With `--tls` it serves HTTPS: with a throwaway
//! CA and certificate for the loopback names (written to `--tls-dir`, or a temporary directory
//! removed at exit, so targets can be given `UPSTREAM_CA`), or with `--tls-cert`/`--tls-key`
//! (and no gRPC). Ctrl-C stops it and prints the final
//! counters. Exit codes: 0 stopped by Ctrl-C; 2 could not start.

use anyhow::{bail, Context as _};
use clap::Args;
use loadlab_certs::CertDir;
use loadlab_upstream::{run as serve_upstream, Counters, UpstreamConfig, UpstreamError};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(
    about = "Run the mock upstream: answers `ok` after a delay (HTTP/1.1, and gRPC on the same port) and counts requests, connections and TLS handshakes",
    after_help = "Counters: GET /__stats. gRPC: loadlab.upstream.v1.Upstream/Call over HTTP/2 without TLS on the same port \
                  (crates/loadlab-upstream/proto/upstream.proto; not with --tls). Exit codes: 0 stopped by Ctrl-C; 2 could not start.\n\n\
                  Examples:\n  \
                  loadlab upstream --port 9100\n  \
                  loadlab upstream --port 9443 --tls --tls-dir /tmp/upstream-tls   # UPSTREAM_CA=/tmp/upstream-tls/ca.pem"
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
    /// Serve HTTPS (HTTP/1.1, TLS 1.2 and 1.3, session tickets and a session cache) and count
    /// each connection's handshake, full or resumed. Without --tls-cert, with a throwaway CA
    /// and a certificate for 127.0.0.1, ::1 and localhost; the CA's path is printed
    /// (`ca PATH` on stdout) for the targets' UPSTREAM_CA.
    #[arg(long, help_heading = "TLS")]
    pub tls: bool,
    /// With --tls and no --tls-cert: write ca.pem, cert.pem and key.pem into this directory
    /// (kept after exit) instead of a temporary one removed at exit.
    #[arg(
        long,
        value_name = "DIR",
        requires = "tls",
        conflicts_with = "tls_cert",
        help_heading = "TLS"
    )]
    pub tls_dir: Option<PathBuf>,
    /// With --tls: serve this PEM certificate chain instead of a throwaway one; needs --tls-key.
    #[arg(long, value_name = "FILE", requires_all = ["tls", "tls_key"], help_heading = "TLS")]
    pub tls_cert: Option<PathBuf>,
    /// With --tls-cert: its PEM private key (PKCS#8).
    #[arg(long, value_name = "FILE", requires = "tls_cert", help_heading = "TLS")]
    pub tls_key: Option<PathBuf>,
}

/// The HTTPS setup: the server configuration, and the throwaway files it came from (kept
/// alive until exit, when they are removed).
fn tls(args: &UpstreamArgs) -> anyhow::Result<Option<(UpstreamConfigTls, Option<CertDir>)>> {
    if !args.tls {
        return Ok(None);
    }
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        let config = loadlab_certs::server_config(
            &loadlab_certs::read_pem(cert)?,
            &loadlab_certs::read_pem(key)?,
            &[b"http/1.1"],
        )
        .with_context(|| {
            format!(
                "--tls-cert {} --tls-key {}: give a PEM certificate chain and its PEM private key",
                cert.display(),
                key.display()
            )
        })?;
        return Ok(Some((UpstreamConfigTls { config, ca: None }, None)));
    }
    let certs = CertDir::create(&[args.host])?;
    let ca = match &args.tls_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("--tls-dir {}: cannot create it", dir.display()))?;
            certs.write_to(dir)?;
            dir.join("ca.pem")
        }
        None => certs.ca_path(),
    };
    let config = loadlab_certs::server_config_for(certs.issued(), &[b"http/1.1"])?;
    Ok(Some((
        UpstreamConfigTls {
            config,
            ca: Some(ca),
        },
        Some(certs),
    )))
}

struct UpstreamConfigTls {
    config: std::sync::Arc<loadlab_certs::rustls::ServerConfig>,
    /// The CA to trust, when loadlab made it.
    ca: Option<PathBuf>,
}

pub fn run(args: UpstreamArgs) -> anyhow::Result<ExitCode> {
    if args.tls_cert.is_some() != args.tls_key.is_some() {
        bail!("--tls-cert and --tls-key go together: give both, or neither for a throwaway certificate");
    }
    let tls = tls(&args)?;
    let config = UpstreamConfig {
        addr: SocketAddr::from((args.host, args.port)),
        delay: args.delay,
        tls: tls.as_ref().map(|(t, _)| t.config.clone()),
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
    let scheme = config.scheme();
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(config.addr)
            .await
            .map_err(|source| UpstreamError::Bind {
                addr: config.addr,
                source,
            })?;
        let addr = listener.local_addr()?;
        // The contract's first line, then (over HTTPS with a throwaway CA) where the CA is.
        println!("listening on {addr}");
        if let Some(ca) = tls.as_ref().and_then(|(t, _)| t.ca.as_ref()) {
            println!("ca {}", ca.display());
        }
        eprintln!(
            "mock upstream: every path answers `ok` after {}; counters on {scheme}://{addr}/__stats; Ctrl-C stops it",
            humantime::format_duration(config.delay)
        );
        if tls.is_none() {
            eprintln!(
                "gRPC {} on the same port (UPSTREAM_GRPC_URL=http://{addr})",
                loadlab_upstream::grpc::CALL_PATH
            );
        }
        serve_upstream(listener, config.clone(), counters.clone(), async {
            let _ = stop_rx.await;
        })
        .await
    })?;
    let stats = counters.snapshot();
    if tls.is_some() {
        eprintln!(
            "stopped after {} requests over {} connections ({} full TLS handshakes, {} resumed)",
            stats.requests, stats.connections, stats.tls_full, stats.tls_resumed
        );
    } else {
        eprintln!(
            "stopped after {} requests over {} connections; gRPC: {} calls over {} connections ({} streams)",
            stats.requests,
            stats.connections,
            stats.grpc_requests,
            stats.grpc_connections,
            stats.grpc_streams
        );
    }
    // The throwaway certificates (if any) are removed here, with `tls`.
    drop(tls);
    Ok(ExitCode::SUCCESS)
}
