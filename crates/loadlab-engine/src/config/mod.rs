//! Run configuration in two stages: [`RunSpec`] holds what a user typed (strings, options),
//! [`RunSpec::validate`] turns it into a [`RunConfig`] the engine can trust. Every rejection
//! names the flag, what was wrong, and how to fix it. Nothing here does I/O: name resolution
//! happens when the run starts.
//!
//! - this module: the types ([`RunSpec`], [`RunConfig`], [`ConfigError`]);
//! - `validate`: the checks, from a spec to a config;
//! - `request`: the URL, the method and the headers;
//! - `grpc`: a gRPC run checked and made into its HTTP/2 request;
//! - `ws`: a WebSocket run (a `ws://` or `wss://` URL) checked;
//! - `scenario`: a scenario run's settings (pace, connection policy), and the one-step
//!   scenario a paced single-URL run becomes.

use crate::schedule::{Arrival, Profile};
use crate::tls::{TlsSettings, TlsSpec};
use std::sync::Arc;
use std::time::Duration;

/// What a user asked for, before any checking. Field names follow the CLI flags.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub url: String,
    pub method: String,
    /// Raw `Name: value` strings, as given to `-H`.
    pub headers: Vec<String>,
    pub body: Vec<u8>,
    /// `-c`: closed-loop connections. `None`: the default (50), or unset in an open loop.
    pub connections: Option<usize>,
    /// `None`: one thread per core.
    pub threads: Option<usize>,
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub warmup: Duration,
    pub keepalive: bool,
    /// `--rate`: requests per second; switches to an open loop.
    pub rate: Option<f64>,
    /// `--stages`: a staged profile (rates, or connection counts with `closed_stages`).
    pub stages: Option<String>,
    /// `--closed`: `stages` are connection counts of a closed loop.
    pub closed_stages: bool,
    pub arrival: Arrival,
    /// `--max-connections`: the open loop's cap.
    pub max_connections: Option<usize>,
    /// `--interval`: width of the timeline's intervals.
    pub interval: Duration,
    /// `--tick`: open loop only; wake to send at most once per tick (0: at each due time).
    pub tick: Duration,
    /// `--busy-poll`: closed loop only; poll for responses instead of sleeping.
    pub busy_poll: bool,
    /// Hold the PM QoS CPU latency at 0 during the run (`--no-pm-qos` turns it off).
    pub pm_qos: bool,
    /// TLS options; used with `https://` URLs.
    pub tls: TlsSpec,
    /// `--http2`: HTTP/2 (ALPN h2 over TLS, prior knowledge over plain TCP).
    pub http2: bool,
    /// `--http3`: HTTP/3 over QUIC (https only; ALPN h3).
    pub http3: bool,
    /// `--http3-0rtt`: a connection that resumes a session sends its first requests as 0-RTT
    /// early data (with `http3`).
    pub http3_0rtt: bool,
    /// `--streams`: concurrent HTTP/2 or HTTP/3 streams per connection.
    pub streams: usize,
    /// `--pipeline`: HTTP/1.1 requests written on a connection before the first answer is
    /// read (1: no pipelining). See `pipeline`.
    pub pipeline: usize,
    /// Paths (with their queries) sent in rotation on each connection, in order; empty: the
    /// URL's own path only. The URL gives the scheme, host and port.
    pub paths: Vec<String>,
    /// CPUs the worker threads may run on (the server has the others); `None`: anywhere.
    pub generator_cpus: Option<Vec<usize>>,
    /// `--shard I/N`: run this shard's part of the load (see [`crate::shard`]).
    pub shard: Option<crate::shard::Shard>,
    /// `--start-at`: with `shard`, start at this wall-clock instant.
    pub start_at: Option<std::time::SystemTime>,
    /// `--scenario`: run this scenario (loaded and compiled) instead of one request; `url`
    /// then only redirects it (a launched server's address), empty to use its own.
    pub scenario: Option<Arc<loadlab_scenario::Scenario>>,
    /// `--pace`: a closed loop's connections each send one request per this long.
    pub pace: Option<Duration>,
    /// `--new-connection-share`: this share of requests goes on a new connection.
    pub new_connection_share: Option<f64>,
    /// `--seed`: think times, random feeder rows and a mix's choices.
    pub seed: u64,
    /// A run bounded by `-n` gives up the rest of its count once nothing has answered for
    /// this long while every connection it tried failed to open (the target went away).
    pub give_up_after: Duration,
    /// `--grpc`: every request is this gRPC call (prepared: schema compiled, message
    /// encoded), over HTTP/2; see [`crate::grpc`].
    pub grpc: Option<Arc<crate::grpc::Call>>,
    /// With a `ws://` or `wss://` URL: what each WebSocket connection does (see
    /// [`crate::ws`]); refused with an HTTP URL unless left at its default.
    pub ws: crate::ws::WsSpec,
}

/// [`RunSpec::give_up_after`] unless set: long enough for a server restarting on purpose,
/// short enough that a run against one that went away does not retry its count for hours.
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(5);

/// The longest `--tick`: beyond it the send lag a tick adds would dwarf most latencies.
const MAX_TICK: Duration = Duration::from_millis(10);

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            url: String::new(),
            method: "GET".into(),
            headers: Vec::new(),
            body: Vec::new(),
            connections: None,
            threads: None,
            duration: None,
            requests: None,
            timeout: Duration::from_secs(20),
            connect_timeout: Duration::from_secs(5),
            warmup: Duration::ZERO,
            keepalive: true,
            rate: None,
            stages: None,
            closed_stages: false,
            arrival: Arrival::Uniform,
            max_connections: None,
            interval: Duration::from_secs(1),
            tick: Duration::ZERO,
            busy_poll: false,
            pm_qos: true,
            tls: TlsSpec::default(),
            http2: false,
            http3: false,
            http3_0rtt: false,
            streams: 1,
            pipeline: 1,
            paths: Vec::new(),
            generator_cpus: None,
            shard: None,
            start_at: None,
            scenario: None,
            pace: None,
            new_connection_share: None,
            seed: 1,
            give_up_after: GIVE_UP_AFTER,
            grpc: None,
            ws: crate::ws::WsSpec::default(),
        }
    }
}

/// When the measured part of a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Run for this long after the warm-up.
    Duration(Duration),
    /// Issue exactly this many measured requests.
    Requests(u64),
}

/// How load is generated.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    /// Each connection sends its next request when the last one ends. With stages, the number
    /// of active connections follows the profile.
    Closed { stages: Option<Profile> },
    /// Requests are sent on a schedule, whatever the server does; connections open as needed,
    /// up to `RunConfig::connections`.
    Open { profile: Profile, arrival: Arrival },
}

/// The parts of the URL the engine needs. Only `http` for now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetUrl {
    /// The URL as the user gave it, for reports.
    pub original: String,
    pub host: String,
    pub port: u16,
    /// Value of the `Host` header: host, plus the port when it is not the default.
    pub authority: String,
    pub path_and_query: String,
    pub https: bool,
}

impl TargetUrl {
    /// `scheme://authority`, e.g. `http://127.0.0.1:8080`: the URL without its path.
    pub fn origin(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.authority)
    }
}

/// A run the engine can execute: every value checked.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub url: TargetUrl,
    pub method: String,
    /// Validated header names and values, in the order given.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub model: Model,
    /// Closed loop: the connections (the most any stage asks for). Open loop: the cap.
    pub connections: usize,
    pub threads: usize,
    pub stop: Stop,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub warmup: Duration,
    pub keepalive: bool,
    pub interval: Duration,
    /// Open loop: the sender wakes at most once per tick and sends every request due by then
    /// (zero: each request at its due time).
    pub tick: Duration,
    /// Closed loop: worker threads poll for responses instead of sleeping, so the server
    /// never pays to wake them.
    pub busy_poll: bool,
    /// Why busy polling was chosen, when loadlab chose it (no `--busy-poll` given).
    pub busy_poll_why: Option<String>,
    pub pm_qos: bool,
    /// Set for `https://` URLs.
    pub tls: Option<TlsSettings>,
    pub http2: bool,
    /// HTTP/3 over QUIC (then `tls` is set, and carries ALPN h3 to QUIC).
    pub http3: bool,
    /// With `http3`: resume sessions with 0-RTT, a connection's first requests as early data.
    pub http3_0rtt: bool,
    /// HTTP/2 or HTTP/3 streams per connection (1 for HTTP/1.1).
    pub streams: usize,
    /// HTTP/1.1 requests in flight on a connection at once, written before the first answer
    /// is read (1: no pipelining; more only over HTTP/1.1).
    pub pipeline: usize,
    /// The paths sent in rotation on each connection (at least one: the URL's own).
    pub paths: Vec<String>,
    /// CPUs the worker threads pin themselves to; `None`: wherever the process may run.
    pub generator_cpus: Option<Vec<usize>>,
    /// One shard of a larger run: `connections` and `stop` are already this shard's share.
    pub shard: Option<crate::shard::ShardPlan>,
    /// A scenario run, or a run paced or mixing new connections (a one-step scenario).
    pub scenario: Option<Arc<ScenarioRun>>,
    /// See [`RunSpec::give_up_after`].
    pub give_up_after: Duration,
    /// A gRPC run's call (then `http2` is set and the request is its POST).
    pub grpc: Option<Arc<crate::grpc::Call>>,
    /// A WebSocket run (a `ws://` or `wss://` URL): what its connections do.
    pub ws: Option<Arc<crate::ws::WsConfig>>,
}

/// A scenario and how it is run.
#[derive(Debug, Clone)]
pub struct ScenarioRun {
    pub scenario: loadlab_scenario::Scenario,
    /// Closed loop: the virtual users (the run's connections); open loop: the most
    /// iterations running at once (`--max-connections`).
    pub users: usize,
    /// Each virtual user sends one request per this long (its connection's pace).
    pub pace: Option<Duration>,
    /// Share of requests sent with `Connection: close` on a connection of their own.
    pub new_connection_share: f64,
    pub seed: u64,
    /// Made from the URL and flags (for `--pace` or `--new-connection-share`), not a file:
    /// the result then shows no scenario section.
    pub implicit: bool,
    /// Each step's gRPC call, by step (`None` for an HTTP step); empty when no step is one.
    pub grpc: Vec<Option<Arc<crate::grpc::steps::StepCall>>>,
}

impl ScenarioRun {
    /// Step `i`'s gRPC call, when it is a gRPC step.
    pub fn grpc_call(&self, i: usize) -> Option<&crate::grpc::steps::StepCall> {
        self.grpc.get(i).and_then(|c| c.as_deref())
    }
}

impl RunConfig {
    pub fn is_open_loop(&self) -> bool {
        matches!(self.model, Model::Open { .. })
    }

    /// An open loop over plain HTTP/1.1 sleeps from one due time (or tick) to the next,
    /// reading the responses that arrived meanwhile and timing them by the kernel's receive
    /// stamps. Over TLS or HTTP/2 the bytes the kernel stamps are not the response's, so
    /// there responses still wake the thread (and a tick only batches sends).
    /// A scenario's open loop waits in the event loop: its steps fall due at the ends of
    /// other steps, not only on the schedule.
    pub fn sleeps_between_sends(&self) -> bool {
        self.is_open_loop()
            && self.tls.is_none()
            && !self.http2
            && self.scenario.is_none()
            && self.ws.is_none()
    }

    /// Busy-polls, for the reason given: a decision made once the server's placement is
    /// known (after it started), so not a flag. Only a closed loop over HTTP/1.1 polls.
    pub fn with_busy_poll(mut self, why: String) -> RunConfig {
        if matches!(self.model, Model::Closed { .. }) {
            self.busy_poll = true;
            self.busy_poll_why = Some(why);
        }
        self
    }
}

/// A rejected setting. `setting` names the [`RunSpec`] field (`duration`, `rate`,
/// `tls.ca`...): the engine knows no flags, and each front end names the setting its own way
/// (the CLI as `-d/--duration`, an experiment file as its key). `Display` gives the sentence
/// with the setting's name, fix included.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: {message}")]
pub struct ConfigError {
    pub setting: &'static str,
    pub message: String,
}

fn reject(setting: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        setting,
        message: message.into(),
    }
}

/// The default run length when neither `-d` nor `-n` is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// Closed-loop connections when `-c` is not given.
pub const DEFAULT_CONNECTIONS: usize = 50;
/// The open loop's connection cap when `--max-connections` is not given.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

mod grpc;
mod pipeline;
mod request;
mod scenario;
mod sharding;
mod validate;
mod ws;

#[cfg(test)]
mod tests;
