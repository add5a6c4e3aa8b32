//! The flags of `loadlab run` and of every command that drives load (`RequestArgs`): their
//! declarations and help only. Turning values into a spec is `parse.rs`; this must not run
//! anything.

use super::parse::{count, parse_duration, rate, share};
use crate::cmd::gates::GateArgs;
use crate::cmd::server::ServerArgs;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum TlsVersionArg {
    #[value(name = "1.2")]
    V1_2,
    #[value(name = "1.3")]
    V1_3,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ArrivalArg {
    Uniform,
    Poisson,
}

#[derive(Debug, Args)]
#[command(
    about = "Drive load against a URL and report latency, throughput and failures",
    after_help = "Exit codes: 0 the run completed; 1 a --fail-if gate failed; 2 bad usage, the \
                  run could not start, or no request succeeded (results printed and written); \
                  3 the server under test died during the run (crash or OOM kill), results up \
                  to then printed and written; 130 interrupted by Ctrl-C (SIGINT), 143 by \
                  SIGTERM, 129 by SIGHUP (128 + the signal), partial results printed and \
                  written.\n\n\
                  Examples:\n  \
                  loadlab run -c 50 -d 10s http://127.0.0.1:8080/plaintext\n  \
                  loadlab run --rate 5000 --warmup 2s http://127.0.0.1:8080/json\n  \
                  loadlab run --target rust-axum --cpus 0.08 --memory 128Mi /plaintext\n  \
                  loadlab run --exec './server --port {port}' --pin 1 /"
)]
pub struct RunArgs {
    /// The URL to load, e.g. http://127.0.0.1:8080/plaintext; with --target or --exec, a
    /// path such as /plaintext. With --scenario, none: the scenario names its URLs.
    #[arg(required_unless_present = "scenario")]
    pub url: Option<String>,

    /// --scenario and --var.
    #[command(flatten)]
    pub scenario: super::scenario_args::ScenarioArgs,

    /// Closed loop: each connection (virtual user) sends one request per this long, measured
    /// from when it was due (post 003's "a request per connection per second"); reported with
    /// the rate it offers.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, help_heading = "Scenarios")]
    pub pace: Option<Duration>,

    /// Send this share of requests (0 to 1) on a new connection of their own (Connection:
    /// close; over HTTP/2 and HTTP/3 the connection ends after the request's step), the rest
    /// over keep-alive; each new connection's setup is counted apart.
    #[arg(long, value_name = "SHARE", help_heading = "Scenarios", allow_hyphen_values = true, value_parser = share)]
    pub new_connection_share: Option<f64>,

    /// Closed loop: concurrent connections, each sending its next request when the last one
    /// ends [default: 50].
    #[arg(short = 'c', long, allow_hyphen_values = true, value_parser = count::<usize>)]
    pub connections: Option<usize>,

    /// Open loop: send this many requests per second on a schedule, whatever the server does;
    /// latency is measured from when each request was due. With --scenario: iterations per
    /// second, each a new user.
    #[arg(short = 'r', long, help_heading = "Open loop", allow_hyphen_values = true, value_parser = rate)]
    pub rate: Option<f64>,

    /// A staged profile, e.g. "10s:1000, 30s:1000->5000, 10s:5000": requests/s per stage,
    /// constant or ramping (with --closed: connection counts).
    #[arg(long, help_heading = "Open loop")]
    pub stages: Option<String>,

    /// With --stages: the levels are closed-loop connection counts.
    #[arg(long, requires = "stages")]
    pub closed: bool,

    /// Width of the timeline's intervals (a multiple of 100ms).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "1s")]
    pub interval: Duration,

    /// How long to measure, e.g. 10s, 2m, 500ms [default: 10s]
    #[arg(short = 'd', long, allow_hyphen_values = true, value_parser = parse_duration, conflicts_with = "requests")]
    pub duration: Option<Duration>,

    /// Measure exactly this many requests instead of a duration.
    #[arg(short = 'n', long, allow_hyphen_values = true, value_parser = count::<u64>)]
    pub requests: Option<u64>,

    /// Load for this long first, measured but reported apart from the result.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "0s")]
    pub warmup: Duration,

    /// Closed loop: poll for responses instead of sleeping between them, so the server never
    /// pays to wake loadlab (on one machine, an interrupt on the server's CPU). It takes a
    /// core per thread. Chosen by default over HTTPS/1.1 when the server is on this machine
    /// (found by its listening port) and may not run on any CPU loadlab may use.
    #[arg(long)]
    pub busy_poll: bool,

    /// Never busy-poll, even when loadlab and the server have CPUs apart.
    #[arg(long, conflicts_with = "busy_poll")]
    pub no_busy_poll: bool,

    /// Write the result as JSON to this file (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,

    /// Write response times per interval as an HdrHistogram interval log (readable by
    /// HdrHistogram's own tools; values in milliseconds).
    #[arg(long, value_name = "FILE")]
    pub hdr_log: Option<String>,

    /// Write a report of the run: HTML (self-contained, opens offline), Markdown or CSV,
    /// chosen by the file's extension (.html, .md, .csv).
    #[arg(long, value_name = "FILE")]
    pub report: Option<String>,

    /// --save, --no-save, --tag and --db.
    #[command(flatten)]
    pub store: crate::cmd::store_args::StoreArgs,

    #[command(flatten)]
    pub provenance: crate::cmd::runs::ProvenanceArgs,

    /// Print no human summary.
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// Refuse to start when a check of the machine against this run FAILs (a full conntrack
    /// table, too little memory...); without it they only warn. A closed loop with more
    /// connections than this machine can open (open files, local ports) is refused either way:
    /// the connections past the limit would fail on loadlab's side, and the run would measure
    /// that. See `loadlab doctor`.
    #[arg(long)]
    pub strict: bool,

    #[command(flatten)]
    pub request: RequestArgs,

    #[command(flatten)]
    pub gates: GateArgs,

    #[command(flatten)]
    pub server: ServerArgs,

    #[command(flatten)]
    pub shard: crate::cmd::shard::ShardArgs,

    #[command(flatten)]
    pub generators: crate::cmd::generators::GeneratorArgs,

    #[command(flatten)]
    pub metrics: super::metrics_args::MetricsArgs,

    #[command(flatten)]
    pub live: crate::live::LiveArgs,

    #[command(flatten)]
    pub tui: crate::tui::TuiArgs,
}

/// What each request is and how it travels: method, headers, body, timeouts, protocol, TLS,
/// threads, and the open loop's spacing. Shared by every command that drives load (`run`,
/// `capacity`, `sweep`).
#[derive(Debug, Args)]
pub struct RequestArgs {
    /// How arrivals are spaced: uniform (evenly) or poisson (exponential gaps).
    #[arg(long, value_enum, default_value_t = ArrivalArg::Uniform, help_heading = "Open loop")]
    pub arrival: ArrivalArg,

    /// Seed for --arrival poisson, to reproduce a schedule, and for a scenario's think
    /// times, random feeder rows and mix.
    #[arg(long, default_value_t = 1, help_heading = "Open loop", allow_hyphen_values = true, value_parser = count::<u64>)]
    pub seed: u64,

    /// Send on a tick: wake at most once per DUR (e.g. 1ms) and send every request due by
    /// then, trading timing precision for generator CPU at high rates (oha ticks at 1ms). The
    /// wait counts in each request's send lag and response time. [default: each request
    /// exactly when due]
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, help_heading = "Open loop")]
    pub tick: Option<Duration>,

    /// The most connections an open loop may open (with --scenario: iterations running at
    /// once); at the cap, due requests wait (and the wait counts in their response time).
    /// The first requests' connections open before the clock starts. Beyond what the load
    /// needs, a due request opens another only when the target is behind (a request in
    /// flight overdue), not when loadlab's own thread is. Connections idle for 30 s are
    /// closed, all but one [default: 10000].
    #[arg(long, help_heading = "Open loop", allow_hyphen_values = true, value_parser = count::<usize>)]
    pub max_connections: Option<usize>,

    /// Worker threads, each an event loop driving a share of the connections [default: one per core]
    #[arg(short = 't', long, allow_hyphen_values = true, value_parser = count::<usize>)]
    pub threads: Option<usize>,

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
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "20s")]
    pub timeout: Duration,

    /// Longest wait for a TCP connection to open.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "5s")]
    pub connect_timeout: Duration,

    /// Do not hold the kernel's PM QoS CPU latency at 0 during the run (loadlab holds it
    /// when it may, as root: on VMs, idle CPUs otherwise take tens of microseconds to wake).
    #[arg(long)]
    pub no_pm_qos: bool,

    /// Speak HTTP/2: over https by ALPN (h2), over http by prior knowledge (h2c). With a
    /// wss:// or ws:// URL: WebSockets over HTTP/2 (RFC 8441), --streams of them a connection.
    #[arg(long, help_heading = "HTTP/2")]
    pub http2: bool,

    /// Speak HTTP/3 over QUIC (UDP; https only, ALPN h3); --streams as for HTTP/2.
    #[arg(long, help_heading = "HTTP/2", conflicts_with = "http2")]
    pub http3: bool,

    /// HTTP/3: resume sessions with 0-RTT: a connection opened after the server gave a session
    /// ticket sends its first requests (one a stream) before its handshake ends, as early
    /// data, counted apart with what the server did with them (accepted, or rejected and
    /// sent again). With --no-keepalive every connection carries one request a stream, so
    /// each one after the first resumes. Early data can be replayed: load only what is safe
    /// to receive twice
    #[arg(long = "http3-0rtt", help_heading = "HTTP/2")]
    pub http3_0rtt: bool,

    /// HTTP/2 and HTTP/3: concurrent streams per connection; the concurrency is -c x --streams
    /// (WebSockets over HTTP/2: -c x --streams WebSockets over -c connections).
    #[arg(long, default_value_t = 1, help_heading = "HTTP/2", allow_hyphen_values = true, value_parser = count::<usize>)]
    pub streams: usize,

    /// HTTP/1.1 pipelining: write up to N requests on a connection before reading the first
    /// answer (RFC 9112 9.3.2; TechEmpower's plaintext test uses 16); the concurrency is -c x
    /// N. Each request is timed from when it was due: a closed loop's next when a place in
    /// the pipeline frees, an open loop's by the schedule. Requests a server closes on
    /// unanswered are sent again (at most 5 times each). Idempotent methods only; not over
    /// HTTP/2 or HTTP/3 (use --streams), nor with a scenario
    #[arg(long, default_value_t = 1, value_name = "N", help_heading = "HTTP/1.1", allow_hyphen_values = true, value_parser = count::<usize>)]
    pub pipeline: usize,

    /// https: accept any server certificate (for self-signed test servers).
    #[arg(short = 'k', long, help_heading = "TLS")]
    pub insecure: bool,

    /// https: trust the CA certificates in this PEM file instead of the built-in web roots.
    #[arg(long, value_name = "FILE", help_heading = "TLS")]
    pub cacert: Option<PathBuf>,

    /// https: client certificate chain (PEM) for mutual TLS; needs --key.
    #[arg(long, value_name = "FILE", help_heading = "TLS")]
    pub cert: Option<PathBuf>,

    /// https: the client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", help_heading = "TLS")]
    pub key: Option<PathBuf>,

    /// https: resume TLS sessions on new connections [default: on].
    #[arg(long, value_enum, help_heading = "TLS")]
    pub tls_resume: Option<OnOff>,

    /// https: allow only this TLS version [default: 1.2 or 1.3].
    #[arg(long, value_enum, help_heading = "TLS")]
    pub tls_version: Option<TlsVersionArg>,

    /// Open a new TCP connection for every request (like ab without -k); over HTTP/3, a
    /// closed loop's connection carries one request a stream, then closes.
    #[arg(long)]
    pub no_keepalive: bool,
    /// --grpc and its group.
    #[command(flatten)]
    pub grpc: super::grpc_args::GrpcArgs,
    /// The --ws-* group (a ws:// or wss:// URL).
    #[command(flatten)]
    pub ws: super::ws_args::WsArgs,
}
