//! `loadlab run URL`: the flags become a session spec; the session (`loadlab-session`)
//! prepares and runs; this prints its notes, shows progress, handles Ctrl-C, and prints and
//! writes the result. The JSON file is opened before the run starts so a bad path fails in
//! a second, not after a long run.

use crate::cmd::gates::{self, GateArgs};
use crate::cmd::server::ServerArgs;
use crate::output::{self, Destination, Outputs};
use crate::progress::Progress;
use anyhow::Context as _;
use clap::Args;
use loadlab_engine::schedule::Arrival;
use loadlab_engine::tls::{TlsSpec, TlsVersion};
use loadlab_engine::{RunControl, RunResult, RunSpec};
use loadlab_report::{HdrLogExporter, JsonExporter};
use loadlab_session::{BusyPoll, MachineOptions, Session, SessionOutcome, SessionSpec};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
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

    /// Run a scenario file (docs/scenario-format.md): -c virtual users, each with its own
    /// connection and cookie jar, run its steps over and over; or with --rate, that many
    /// iterations per second, each a new user, every step timed from when it was due. The
    /// result has a row per step.
    #[arg(long, value_name = "FILE", help_heading = "Scenarios")]
    pub scenario: Option<PathBuf>,

    /// A scenario variable, NAME=VALUE, over the file's [variables] (repeat for more). Its
    /// value is never written to a result or the store.
    #[arg(
        long = "var",
        value_name = "NAME=VALUE",
        requires = "scenario",
        help_heading = "Scenarios"
    )]
    pub vars: Vec<String>,

    /// Closed loop: each connection (virtual user) sends one request per this long, measured
    /// from when it was due (post 003's "a request per connection per second"); reported with
    /// the rate it offers.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, help_heading = "Scenarios")]
    pub pace: Option<Duration>,

    /// Send this share of requests (0 to 1) on a new connection of their own (Connection:
    /// close), the rest over keep-alive; each new connection's setup is counted apart.
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
    /// core per thread. Chosen by default when the server is on this machine (found by its
    /// listening port) and may not run on any CPU loadlab may use.
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

    /// Keep the run in the results store (see `loadlab runs`).
    #[arg(long)]
    pub save: bool,

    /// With --save: a name to find the run by later (`loadlab compare baseline candidate`).
    #[arg(long, value_name = "NAME", requires = "save")]
    pub tag: Option<String>,

    /// The results store [default: $LOADLAB_DB, or loadlab.db here].
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,

    /// Print no human summary.
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// Refuse to start when a check of the machine against this run FAILs (more connections
    /// than open files or local ports, a full conntrack table...); without it they only warn.
    /// See `loadlab doctor`.
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
    /// once); at the cap, due requests wait (and the wait counts in their response time)
    /// [default: 10000].
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

    /// Speak HTTP/2: over https by ALPN (h2), over http by prior knowledge (h2c).
    #[arg(long, help_heading = "HTTP/2")]
    pub http2: bool,

    /// HTTP/2: concurrent streams per connection; the concurrency is -c x --streams.
    #[arg(long, default_value_t = 1, help_heading = "HTTP/2", allow_hyphen_values = true, value_parser = count::<usize>)]
    pub streams: usize,

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

    /// Open a new TCP connection for every request (like ab without -k).
    #[arg(long)]
    pub no_keepalive: bool,
}

impl RequestArgs {
    /// A spec for `url` with these requests; the load's shape (connections, rate, duration)
    /// is the caller's.
    pub fn spec(&self, url: &str) -> anyhow::Result<RunSpec> {
        let body = match (&self.body, &self.body_file) {
            (Some(b), _) => b.clone().into_bytes(),
            (None, Some(path)) => std::fs::read(path).with_context(|| {
                format!(
                    "--body-file: cannot read {}; check the path",
                    path.display()
                )
            })?,
            (None, None) => Vec::new(),
        };
        Ok(RunSpec {
            url: url.to_string(),
            method: self.method.clone(),
            headers: self.headers.clone(),
            body,
            threads: self.threads,
            timeout: self.timeout,
            connect_timeout: self.connect_timeout,
            keepalive: !self.no_keepalive,
            arrival: match self.arrival {
                ArrivalArg::Uniform => Arrival::Uniform,
                ArrivalArg::Poisson => Arrival::Poisson { seed: self.seed },
            },
            max_connections: self.max_connections,
            tick: self.tick.unwrap_or_default(),
            pm_qos: !self.no_pm_qos,
            http2: self.http2,
            streams: self.streams,
            tls: TlsSpec {
                insecure: self.insecure,
                ca_pem: read_pem(&self.cacert, "--cacert")?,
                cert_pem: read_pem(&self.cert, "--cert")?,
                key_pem: read_pem(&self.key, "--key")?,
                resume: self.tls_resume.map(|r| r == OnOff::On),
                version: self.tls_version.map(|v| match v {
                    TlsVersionArg::V1_2 => TlsVersion::V1_2,
                    TlsVersionArg::V1_3 => TlsVersion::V1_3,
                }),
            },
            ..RunSpec::default()
        })
    }
}

/// A count (connections, threads, requests): a whole number. A negative one is taken as the
/// flag's value, not as another flag, so the message says what is wrong with it (clap's own
/// tip, "use -- -1", would make it the URL).
pub fn count<T: std::str::FromStr>(raw: &str) -> Result<T, String> {
    raw.trim()
        .parse::<T>()
        .map_err(|_| format!("`{raw}` is not a count: give a whole number such as 50"))
}

/// Durations as people write them: `10s`, `1m30s`, `250ms`; a bare number means seconds.
/// Flags that take one allow a leading `-`, so that `-d -1s` is told it is negative (clap's
/// own tip, "use -- -1s", would make it the URL).
pub fn parse_duration(raw: &str) -> Result<Duration, String> {
    let raw = raw.trim();
    if let Ok(secs) = raw.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(Duration::from_secs_f64(secs));
        }
    }
    if raw.starts_with('-') {
        return Err(format!(
            "`{raw}` is negative: give a duration of 0 or more, e.g. 10s, 500ms, 2m"
        ));
    }
    humantime::parse_duration(raw)
        .map_err(|_| format!("`{raw}` is not a duration; write e.g. 10s, 500ms, 2m"))
}

/// `--rate`: requests (or iterations) per second, a number of 0 or more (0 is refused later
/// with the reason); a negative one is named as such, not taken for a flag.
pub fn rate(raw: &str) -> Result<f64, String> {
    match raw.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r >= 0.0 => Ok(r),
        _ => Err(format!(
            "`{raw}` is not a rate: give requests per second above 0, e.g. 1000"
        )),
    }
}

/// A share from 0 to 1 (`--new-connection-share`).
pub fn share(raw: &str) -> Result<f64, String> {
    match raw.trim().parse::<f64>() {
        Ok(s) if (0.0..=1.0).contains(&s) => Ok(s),
        _ => Err(format!(
            "`{raw}` is not a share: give a number from 0 to 1, e.g. 0.1"
        )),
    }
}

fn read_pem(path: &Option<PathBuf>, flag: &str) -> anyhow::Result<Option<Vec<u8>>> {
    path.as_ref()
        .map(|p| {
            std::fs::read(p)
                .with_context(|| format!("{flag}: cannot read {}; check the path", p.display()))
        })
        .transpose()
}

/// `--var NAME=VALUE` pairs.
pub fn parse_vars(vars: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    vars.iter()
        .map(|v| match v.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() => {
                Ok((name.trim().to_string(), value.to_string()))
            }
            _ => anyhow::bail!("--var {v:?}: write NAME=VALUE, e.g. --var BLOG_ID=001"),
        })
        .collect()
}

/// The scenario of `--scenario FILE` with its `--var`s, loaded and checked.
pub fn load_scenario(
    path: &std::path::Path,
    vars: &[String],
) -> anyhow::Result<std::sync::Arc<loadlab_engine::scenario::Scenario>> {
    let vars = parse_vars(vars)?;
    let scenario = loadlab_engine::scenario::Scenario::load(path, &vars)?;
    Ok(std::sync::Arc::new(scenario))
}

/// The session the flags describe (nothing started yet).
pub fn session_spec(args: &RunArgs) -> anyhow::Result<SessionSpec> {
    let mut server = args.server.spec()?;
    // Shards of one load share one server: its agent serves one session, shard 1's (the
    // same flags go to every shard; the merge keeps the one server report).
    if args.shard.shard.is_some_and(|s| s.index > 0)
        && server.as_ref().is_some_and(|s| s.agent.is_some())
    {
        server = None;
    }
    let scenario = args
        .scenario
        .as_deref()
        .map(|p| load_scenario(p, &args.vars))
        .transpose()?;
    let url = match (&args.url, &scenario) {
        (Some(url), _) => url.clone(),
        // A launched server: the scenario's requests go to it.
        (None, Some(_)) if server.is_some() => "/".to_string(),
        (None, Some(_)) => String::new(),
        (None, None) => {
            anyhow::bail!("give a URL to load, e.g. http://127.0.0.1:8080/, or --scenario FILE")
        }
    };
    let run = RunSpec {
        scenario,
        pace: args.pace,
        new_connection_share: args.new_connection_share,
        seed: args.request.seed,
        connections: args.connections,
        duration: args.duration,
        requests: args.requests,
        warmup: args.warmup,
        rate: args.rate,
        stages: args.stages.clone(),
        closed_stages: args.closed,
        interval: args.interval,
        shard: args.shard.shard,
        start_at: args.shard.start_at,
        ..args.request.spec(&url)?
    };
    Ok(SessionSpec {
        run,
        server,
        busy_poll: if args.busy_poll {
            BusyPoll::On
        } else if args.no_busy_poll {
            BusyPoll::Off
        } else {
            BusyPoll::Auto
        },
    })
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let spec = session_spec(&args)?;
    // Outputs, gates and the store are checked before anything starts, so a bad path or
    // expression fails in a second.
    let outputs = Outputs {
        json: args
            .json
            .as_deref()
            .map(|p| Destination::open(p, "--json"))
            .transpose()?,
        hdr_log: args
            .hdr_log
            .as_deref()
            .map(|p| Destination::open(p, "--hdr-log"))
            .transpose()?,
        report: match args.report.as_deref() {
            Some(p) => {
                loadlab_report::exporter_for(p)?;
                Some(Destination::open(p, "--report")?)
            }
            None => None,
        },
    };
    let gates = args.gates.parse()?;
    let store = if args.save {
        Some(crate::cmd::runs::open_store(args.db.as_deref())?)
    } else {
        None
    };
    let machine = MachineOptions {
        strict: args.strict,
        ..MachineOptions::default()
    };
    let mut session = Session::prepare_with(spec, machine).map_err(flags_named)?;
    if !args.quiet {
        for note in session.notes() {
            eprintln!("{note}");
        }
        crate::cmd::shard::announce(&args.shard);
    }
    let (result, code) = execute(&mut session, outputs, args.quiet)?;
    if args.shard.framed {
        crate::cmd::shard::print_framed(&result)?;
    }
    if let Some(store) = store {
        let id = crate::cmd::runs::save(&store, &result, args.tag.as_deref())?;
        if !args.quiet {
            eprintln!(
                "saved as run {id}{}",
                args.tag
                    .as_deref()
                    .map_or(String::new(), |t| format!(" (tag {t})"))
            );
        }
    }
    let cases = gates::judge_run(&gates, "run", &result);
    if cases.is_empty() {
        return Ok(code);
    }
    let gated = gates::finish(&args.gates, cases)?;
    // An interrupted run or a dead server says so first; then the gates.
    Ok(if code == ExitCode::SUCCESS {
        gated
    } else {
        code
    })
}

/// The flag that sets each of the engine's settings: the engine names settings, the
/// command line names flags.
pub fn flag_for(setting: &str) -> &str {
    match setting {
        "url" => "URL",
        "method" => "-m/--method",
        "headers" => "-H/--header",
        "connections" => "-c/--connections",
        "threads" => "-t/--threads",
        "duration" => "-d/--duration",
        "requests" => "-n/--requests",
        "timeout" => "--timeout",
        "connect_timeout" => "--connect-timeout",
        "warmup" => "--warmup",
        "keepalive" => "--no-keepalive",
        "rate" => "--rate",
        "stages" => "--stages",
        "closed_stages" => "--closed",
        "max_connections" => "--max-connections",
        "interval" => "--interval",
        "tick" => "--tick",
        "busy_poll" => "--busy-poll",
        "http2" => "--http2",
        "streams" => "--streams",
        "tls.ca" => "--cacert",
        "tls.cert" => "--cert",
        "tls.key" => "--key",
        "tls.version" => "--tls-version",
        "tls.resume" => "--tls-resume",
        "tls.insecure" => "--insecure",
        "scenario" => "--scenario",
        "pace" => "--pace",
        "new_connection_share" => "--new-connection-share",
        "paths" => "--path",
        other => other,
    }
}

/// A session's error, with an engine setting named by its flag.
pub fn flags_named(e: loadlab_session::SessionError) -> anyhow::Error {
    match e {
        loadlab_session::SessionError::Config(c) => {
            anyhow::anyhow!("{}: {}", flag_for(c.setting), c.message)
        }
        other => other.into(),
    }
}

/// Runs a prepared session with a progress bar and Ctrl-C handling, then prints and writes
/// the result. Shared by every command that drives load.
pub fn execute(
    session: &mut Session,
    outputs: Outputs,
    quiet: bool,
) -> anyhow::Result<(RunResult, ExitCode)> {
    if !quiet {
        eprintln!("{}", loadlab_engine::plan(session.config()));
    }
    let control = RunControl::new();
    install_ctrlc(&control)?;
    let progress = Progress::start(session.config(), &control);
    let outcome = session.run(&control);
    progress.finish();
    let SessionOutcome {
        mut result,
        server_died,
    } = outcome?;
    result.command = std::env::args().collect();

    let stdout_taken = matches!(outputs.json, Some(Destination::Stdout))
        || matches!(outputs.hdr_log, Some(Destination::Stdout));
    // Secrets given on the command line never reach a file.
    crate::cmd::runs::redact(&mut result);
    if let Some(dest) = &outputs.json {
        output::write(dest, &JsonExporter, &result)?;
    }
    if let Some(dest) = &outputs.hdr_log {
        output::write(dest, &HdrLogExporter, &result)?;
    }
    if let Some(dest) = &outputs.report {
        let path = match dest {
            Destination::File(_, p) => p.display().to_string(),
            Destination::Stdout => "html".into(),
        };
        output::write(dest, loadlab_report::exporter_for(&path)?.as_ref(), &result)?;
        if !quiet {
            eprintln!("report written to {path}");
        }
    }
    if !quiet {
        output::print_summary(&result, stdout_taken)?;
    }
    let nothing_succeeded =
        result.measured.requests.issued > 0 && result.measured.requests.completed == 0;
    let code = if result.interrupted {
        crate::signals::interrupted()
    } else if server_died {
        ExitCode::from(3)
    } else if nothing_succeeded {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    };
    Ok((result, code))
}

static CTRL_C: AtomicBool = AtomicBool::new(false);

/// First Ctrl-C: stop the run and keep what was measured. Second: leave at once (deleting
/// any cgroup and shaped link loadlab made; a launched server dies with loadlab).
fn install_ctrlc(control: &RunControl) -> anyhow::Result<()> {
    let control = control.clone();
    crate::signals::set_handler(move || {
        if CTRL_C.swap(true, Ordering::AcqRel) {
            loadlab_probe::cgroup::cleanup_all();
            loadlab_machine::link::cleanup_all();
            std::process::exit(crate::signals::interrupted_code().into());
        }
        control.stop();
    })
    .context("cannot install the Ctrl-C handler")
}
