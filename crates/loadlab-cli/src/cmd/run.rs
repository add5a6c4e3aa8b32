//! `loadlab run URL`: parse the flags, validate them into a run config, run the engine with a
//! progress bar and Ctrl-C handling, then print and write the result. The JSON file is opened
//! before the run starts so a bad path fails in a second, not after a long run.

use crate::output::{self, Destination};
use crate::progress::Progress;
use anyhow::Context as _;
use clap::Args;
use loadlab_engine::{RunConfig, RunControl, RunResult, RunSpec};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(
    about = "Drive load against a URL and report latency, throughput and failures",
    after_help = "Exit codes: 0 the run completed; 2 bad usage or the run could not start; \
                  130 interrupted (Ctrl-C), partial results printed and written."
)]
pub struct RunArgs {
    /// The URL to load, e.g. http://127.0.0.1:8080/plaintext
    pub url: String,

    /// Concurrent connections, each sending its next request when the last one ends.
    #[arg(short = 'c', long, default_value_t = 50)]
    pub connections: usize,

    /// Worker threads, each an event loop driving a share of the connections [default: one per core]
    #[arg(short = 't', long)]
    pub threads: Option<usize>,

    /// How long to measure, e.g. 10s, 2m, 500ms [default: 10s]
    #[arg(short = 'd', long, value_parser = parse_duration, conflicts_with = "requests")]
    pub duration: Option<Duration>,

    /// Measure exactly this many requests instead of a duration.
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,

    /// HTTP method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,

    /// Request header `Name: value`; repeat for more.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,

    /// Request body.
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,

    /// Request body read from a file.
    #[arg(long, value_name = "PATH")]
    pub body_file: Option<PathBuf>,

    /// Longest wait for a full response before the request counts as timed out.
    #[arg(long, value_parser = parse_duration, default_value = "20s")]
    pub timeout: Duration,

    /// Longest wait for a TCP connection to open.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub connect_timeout: Duration,

    /// Load for this long first, measured but reported apart from the result.
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    pub warmup: Duration,

    /// Open a new TCP connection for every request (like ab without -k).
    #[arg(long)]
    pub no_keepalive: bool,

    /// Write the result as JSON to this file (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,

    /// Print no human summary.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// Durations as people write them: `10s`, `1m30s`, `250ms`; a bare number means seconds.
pub fn parse_duration(raw: &str) -> Result<Duration, String> {
    let raw = raw.trim();
    if let Ok(secs) = raw.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(Duration::from_secs_f64(secs));
        }
    }
    humantime::parse_duration(raw)
        .map_err(|_| format!("`{raw}` is not a duration; write e.g. 10s, 500ms, 2m"))
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let body = match (&args.body, &args.body_file) {
        (Some(b), _) => b.clone().into_bytes(),
        (None, Some(path)) => std::fs::read(path).with_context(|| {
            format!(
                "--body-file: cannot read {}; check the path",
                path.display()
            )
        })?,
        (None, None) => Vec::new(),
    };
    let spec = RunSpec {
        url: args.url.clone(),
        method: args.method.clone(),
        headers: args.headers.clone(),
        body,
        connections: args.connections,
        threads: args.threads,
        duration: args.duration,
        requests: args.requests,
        timeout: args.timeout,
        connect_timeout: args.connect_timeout,
        warmup: args.warmup,
        keepalive: !args.no_keepalive,
    };
    let config = spec.validate()?;
    let json = args.json.as_deref().map(Destination::open).transpose()?;
    let (_, code) = execute(&config, json, args.quiet)?;
    Ok(code)
}

/// Runs a validated config with a progress bar and Ctrl-C handling, then prints and writes
/// the result. Shared by every command that drives load.
pub fn execute(
    config: &RunConfig,
    json: Option<Destination>,
    quiet: bool,
) -> anyhow::Result<(RunResult, ExitCode)> {
    let control = RunControl::new();
    install_ctrlc(&control)?;
    let progress = Progress::start(config, &control);
    let outcome = loadlab_engine::run(config, &control);
    progress.finish();
    let outcome = outcome?;
    let mut result = loadlab_engine::summarize(config, &outcome);
    result.command = std::env::args().collect();

    let json_on_stdout = matches!(json, Some(Destination::Stdout));
    if let Some(dest) = json {
        output::write_json(dest, &result)?;
    }
    if !quiet {
        output::print_summary(&result, json_on_stdout)?;
    }
    let code = if result.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    };
    Ok((result, code))
}

/// First Ctrl-C: stop the run and keep what was measured. Second: leave at once.
fn install_ctrlc(control: &RunControl) -> anyhow::Result<()> {
    let control = control.clone();
    ctrlc::set_handler(move || {
        if control.is_stopped() {
            std::process::exit(130);
        }
        control.stop();
    })
    .context("cannot install the Ctrl-C handler")
}
