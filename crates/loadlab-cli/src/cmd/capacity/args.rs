//! `loadlab capacity`'s and `loadlab sweep`'s flags: what both share ([`ProbeArgs`]: the
//! objectives, the probes' shape, the server, outputs), then each command's own. Only flags
//! here; `prepare` checks them.

use crate::cmd::run::{count, parse_duration, RequestArgs};
use crate::cmd::server::ServerArgs;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

use super::vary;

/// What a search and a sweep share: the objectives, the probes' shape, the server, outputs.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// The URL to load, e.g. http://127.0.0.1:8080/plaintext; with --target or --exec, a
    /// path such as /plaintext. With --scenario, none: the scenario names its URLs.
    #[arg(required_unless_present = "scenario")]
    pub url: Option<String>,

    /// --scenario and --var: each probe an open loop of the scenario's iterations.
    #[command(flatten)]
    pub scenario: crate::cmd::run::ScenarioArgs,

    /// Objectives each probe must hold, e.g. "p99<50ms, errors<1%" (pNN for any percentile,
    /// mean, max, errors). Without an errors objective, errors<1% is added.
    #[arg(long, value_name = "OBJECTIVES", default_value = "errors<1%")]
    pub slo: String,

    /// Also fail a probe once the server's CPU reaches this share of its quota (--cpus), of
    /// its pinned CPUs, or of one core: server-cpu=0.85 (post 003's criterion).
    #[arg(long, value_name = "server-cpu=SHARE")]
    pub until: Option<String>,

    /// How long each probe measures.
    #[arg(short = 'd', long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "5s")]
    pub duration: Duration,

    /// Load before each probe measures (reported apart): lets the server warm and drain
    /// the queue the last probe left.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "1s")]
    pub warmup: Duration,

    /// Pause after a probe that failed, so its queue drains before the next.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "1s")]
    pub cooldown: Duration,

    /// Write the document (every probe, its judgment, the finding) as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write a report: HTML (throughput and p99 against offered load, the probes' table,
    /// the boundary probes over time) or Markdown, by the file's extension.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// --save, --no-save, --tag and --db.
    #[command(flatten)]
    pub store: crate::cmd::store_args::StoreArgs,

    #[command(flatten)]
    pub provenance: crate::cmd::runs::ProvenanceArgs,

    /// Print only the table and the verdict.
    #[arg(short = 'q', long)]
    pub quiet: bool,

    #[command(flatten)]
    pub request: RequestArgs,

    #[command(flatten)]
    pub server: ServerArgs,

    #[command(flatten)]
    pub generators: crate::cmd::generators::GeneratorArgs,

    #[command(flatten)]
    pub metrics: crate::cmd::run::MetricsArgs,

    #[command(flatten)]
    pub live: crate::live::LiveArgs,

    #[command(flatten)]
    pub tui: crate::tui::TuiArgs,
}

#[derive(Debug, Args)]
#[command(
    about = "Find the highest request rate a service sustains within its objectives",
    after_help = "Open-loop probes at rising rates: doubling from --start until a probe fails, \
                  then bisection to --tolerance; then --repeats rounds near the boundary, so \
                  the capacity comes with its range. A probe passes when it holds every \
                  objective, keeps up (98% of the offered rate answered) and no queue grows \
                  during it; a probe where loadlab itself was the limit ends the search with \
                  that verdict.\n\n\
                  Exit codes: 0 a capacity was found; 2 bad usage or the search could not \
                  start; 3 the server died; 4 no capacity found (loadlab was the limit, or the \
                  search hit --min-rate or --max-rate); 130 interrupted by Ctrl-C, 143 by SIGTERM, \
                  129 by SIGHUP (the probes so far are printed and written).\n\n\
                  Examples:\n  \
                  loadlab capacity --target rust-actix-web --cpus 0.5 --slo 'p99<50ms' /plaintext\n  \
                  loadlab capacity --until server-cpu=0.85 --budget 5m http://127.0.0.1:8080/json"
)]
pub struct CapacityArgs {
    #[command(flatten)]
    pub probe: ProbeArgs,

    /// The first rate probed (requests/s).
    #[arg(long, default_value_t = 100.0, allow_hyphen_values = true, value_parser = crate::cmd::run::rate)]
    pub start: f64,

    /// The highest rate probed (requests/s).
    #[arg(long, default_value_t = 1_000_000.0, allow_hyphen_values = true, value_parser = crate::cmd::run::rate)]
    pub max_rate: f64,

    /// The lowest rate probed (requests/s).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true, value_parser = crate::cmd::run::rate)]
    pub min_rate: f64,

    /// Bisect until the failing rate is within this share above the passing one.
    #[arg(long, default_value_t = 0.05)]
    pub tolerance: f64,

    /// Rounds of the search: the first, and repeats near the boundary for the range.
    #[arg(long, default_value_t = 3, allow_hyphen_values = true, value_parser = count::<usize>)]
    pub repeats: usize,

    /// Start no probe that would end after this much time, e.g. 5m.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration)]
    pub budget: Option<Duration>,

    /// --vary and --echo-rate.
    #[command(flatten)]
    pub vary: vary::VaryArgs,
}

#[derive(Debug, Args)]
#[command(
    about = "Measure a list of rates or connection counts: the latency-throughput curve, knee marked",
    after_help = "Examples:\n  \
                  loadlab sweep --rates 1000,5000,10000,12000,14000,15000 --target rust-actix-web /plaintext\n  \
                  loadlab sweep --connections 100,500,1000,1500,2000,2500 http://127.0.0.1:8080/"
)]
pub struct SweepArgs {
    #[command(flatten)]
    pub probe: ProbeArgs,

    /// Open loop: requests/s, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        conflicts_with = "connections",
        required_unless_present = "connections"
    )]
    pub rates: Vec<f64>,

    /// Closed loop: connection counts, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = count::<usize>)]
    pub connections: Vec<usize>,

    /// The knee is where p99 first reaches this many times its value at the lowest load.
    #[arg(long, default_value_t = 3.0)]
    pub knee_factor: f64,
}
