//! `loadlab demo`: the main job with nothing to set up. Starts an embedded HTTP server (the
//! lab's mock upstream, a hyper server) on 127.0.0.1, loads it, prints the result, and checks
//! loadlab's counts against the server's own.

use super::run::{execute, install_ctrlc, parse_duration};
use crate::output::{Destination, Outputs};
use anyhow::Context as _;
use clap::Args;
use loadlab_engine::RunSpec;
use loadlab_report::count;
use loadlab_session::{BusyPoll, Session, SessionSpec};
use loadlab_upstream::{Upstream, UpstreamConfig};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(
    about = "Load an embedded server for a few seconds: see what loadlab reports, no setup needed"
)]
pub struct DemoArgs {
    /// How long to measure.
    #[arg(short = 'd', long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "5s")]
    pub duration: Duration,

    /// Concurrent connections.
    #[arg(short = 'c', long, default_value_t = 50)]
    pub connections: usize,

    /// Write the result as JSON to this file (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
}

pub fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    // Before the demo's servers start: see `install_ctrlc`.
    install_ctrlc()?;
    let outputs = Outputs {
        json: args
            .json
            .as_deref()
            .map(|p| Destination::open(p, "--json"))
            .transpose()?,
        ..Outputs::default()
    };
    // The server gets a thread and event loop of its own, as a separate process would.
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::Builder::new()
        .name("demo-server".into())
        .spawn(move || -> anyhow::Result<loadlab_upstream::Stats> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async move {
                let upstream = Upstream::start(UpstreamConfig::default()).await?;
                let _ = addr_tx.send(upstream.url());
                let _ = stop_rx.await;
                let stats = upstream.stats();
                upstream.shutdown().await?;
                Ok(stats)
            })
        })
        .context("cannot start the embedded server's thread")?;
    let url = addr_rx
        .recv()
        .map_err(|_| anyhow::anyhow!("the embedded server did not start"))?;

    eprintln!("loadlab demo: an embedded hyper server listens on {url}; loading it for {:?} with {} connections.\n",
        args.duration, args.connections);
    let mut session = Session::prepare(SessionSpec {
        run: RunSpec {
            url: format!("{}/demo", url.trim_end_matches('/')),
            connections: Some(args.connections),
            threads: Some(1),
            duration: Some(args.duration),
            warmup: Duration::from_secs(1),
            ..RunSpec::default()
        },
        server: None,
        busy_poll: BusyPoll::Auto,
    })
    .map_err(super::run::flags_named)?;
    let (result, code) = execute(&mut session, outputs, false)?;
    let _ = stop_tx.send(());
    let served = server
        .join()
        .map_err(|_| anyhow::anyhow!("the embedded server crashed"))??;

    let loadlab_total = result.measured.requests.completed
        + result.warmup.as_ref().map_or(0, |w| w.requests.completed);
    println!(
        "\nCross-check   the server counted {} requests on {} connections; loadlab counted {} \
         completed (warm-up included) and {} abandoned in flight at the end",
        count(served.requests),
        count(served.connections),
        count(loadlab_total),
        count(result.in_flight_at_end)
    );
    println!("Next          loadlab run -c 50 -d 10s http://127.0.0.1:8080/   (your own server)");
    println!(
        "              loadlab run --target rust-axum --cpus 0.5 --memory 128Mi /plaintext   \
         (a lab target under limits, its CPU and memory sampled; `loadlab lab build rust-axum` first)"
    );
    Ok(code)
}
