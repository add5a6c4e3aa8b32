//! The result of one run as data: the JSON contract that reports, the store and outside
//! scripts read (`schema/run-result.schema.json` describes it; a test checks real output
//! against it). Field names carry their units. Summaries come from full HDR histograms, which
//! are also kept, compressed, so results from several runs can be merged exactly
//! ([`crate::merge`]). Types only: producing a result is the engine's job.

use crate::latency::LatencySummary;
// Kept reachable as `run::` items, as before they had a file of their own.
pub use crate::health::{GeneratorHealth, IntervalHealth, LinkUse, NofileLimit};
pub use crate::parts::{PartSummary, ShardInfo, ShardsSummary};
use crate::server::ServerReport;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The version of this document's shape; readers refuse versions they do not know.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema_version: u32,
    pub loadlab_version: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// The run was stopped early (Ctrl-C): what is here is what was measured until then.
    pub interrupted: bool,
    /// The command line that produced this result, when run from the CLI.
    pub command: Vec<String>,
    pub target: TargetInfo,
    pub load: LoadModel,
    /// The measured part of the run, warm-up excluded.
    pub measured: PhaseSummary,
    /// The warm-up, reported apart; absent when there was none.
    pub warmup: Option<PhaseSummary>,
    /// Requests sent but neither answered nor failed when the run ended (abandoned).
    pub in_flight_at_end: u64,
    /// The run interval by interval (warm-up included), for charts and for spotting drift.
    pub timeline: Vec<IntervalSummary>,
    /// One-line conclusions a reader should not miss: who was the bottleneck.
    pub verdicts: Vec<String>,
    pub generator: GeneratorHealth,
    pub environment: Environment,
    /// Things a careful reader must know about this run, in plain words.
    pub warnings: Vec<String>,
    /// What else is worth knowing about the target, in plain words, with what to do about it
    /// (it advertises HTTP/3: the command to load it so); not a fault of the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The first interval's response times against the measured rest: a cold start shows
    /// here. Absent when the run had fewer than two intervals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_requests: Option<FirstRequests>,
    /// The server's side, when loadlab launched it (`--target`, `--exec`) or watched it
    /// (`--pid`, `--cgroup`): limits, start-up, CPU and memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerReport>,
    /// A merged result: each part's own figures (shards or repetitions), in merge order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartSummary>,
    /// The kernel's TCP counters over the measured time (listen queue overflows,
    /// retransmissions, resets, TIME_WAIT on the target's port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<crate::machine::KernelCounters>,
    /// The shaped link, when the server ran behind `--bandwidth`, `--delay` or `--loss`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<crate::machine::LinkReport>,
    /// `--shard I/N`: this result is one shard's part of a larger run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// Shards merged (`loadlab merge`): which reported, which did not, how together they
    /// started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<ShardsSummary>,
    /// A scenario run (`--scenario`): every step's figures and the iterations'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<crate::scenario::ScenarioSummary>,
    /// A gRPC run (`--grpc`): the method, how it streams, the messages each way and their
    /// times (per call figures are `measured`'s: a request is a call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<crate::grpc::GrpcSummary>,
    /// A WebSocket run (`ws://`, `wss://`): what the server pushed and the gaps between
    /// pushes, its pings, the held connections (docs/websocket.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<crate::ws::WsSummary>,
    /// The server's own metrics (`--server-metrics`, `--prometheus --query`) on the
    /// timeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<crate::metrics::ServerMetrics>,
    /// The path to the server as each end's TCP stack saw it: every generator's connections,
    /// and the server's when its agent sampled them (docs/path.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<crate::path::PathReport>,
    /// The fleet's path check before the load (`--generators` with the server's agent):
    /// each generator's path measured both ways against what the load asks of it
    /// (docs/path.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_check: Option<crate::path::PathCheck>,
}

/// The first requests of a run, reported apart from the steady state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirstRequests {
    /// How many: the run's first completed requests (warm-up or not), across threads.
    pub requests: u64,
    /// When the last of them completed, from the start of the run.
    pub window_s: f64,
    pub latency_us: LatencySummary,
    /// The measured requests after them.
    pub rest_us: LatencySummary,
    /// The first requests were much slower than the rest: p50 at least twice, or p90 at
    /// least three times the rest's, and at least 1 ms more.
    pub cold_start: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    pub url: String,
    pub method: String,
    /// Paths sent in rotation on each connection, when more than the URL's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The socket address the host name resolved to.
    pub address: String,
    /// For https: how the connection was secured.
    pub tls: Option<TlsInfo>,
    /// Over HTTPS on HTTP/1.1 or HTTP/2: the server advertised HTTP/3 (`Alt-Svc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alt_svc: Option<AltSvcH3>,
}

/// The server's HTTP/3 advertisement (`Alt-Svc: h3=...`, RFC 7838), as the first response
/// that carried one sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AltSvcH3 {
    /// The header's value, as sent (its fields joined).
    pub header: String,
    /// The host the h3 alternative names; absent: the URL's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The UDP port of the h3 alternative.
    pub port: u16,
    /// `ma`: how long the advertisement holds, seconds.
    pub max_age_s: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TlsInfo {
    /// `1.2`, `1.3`, or `1.2 or 1.3`.
    pub versions: String,
    /// How the server's certificate was checked.
    pub trust: String,
    /// `--insecure`: certificates were not verified.
    pub insecure: bool,
    pub resumption: bool,
    pub client_certificate: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadModel {
    /// `closed_loop`: each connection sends its next request when the last one ends.
    /// `open_loop`: requests go out on a schedule (an arrival rate), whatever the server does.
    pub model: String,
    /// Closed loop: the connections (the most any stage uses). Open loop: the cap.
    pub connections: usize,
    pub threads: usize,
    pub keepalive: bool,
    /// Set when the run was bounded by time.
    pub duration_s: Option<f64>,
    /// Set when the run was bounded by a request count.
    pub requests: Option<u64>,
    pub warmup_s: f64,
    pub timeout_s: f64,
    pub connect_timeout_s: f64,
    pub body_bytes: u64,
    /// Open loop: `uniform` (evenly spaced) or `poisson`.
    pub arrival: Option<String>,
    /// The Poisson seed, to reproduce the schedule.
    pub seed: Option<u64>,
    /// Stages of the profile: requests/s in an open loop, connections in a staged closed loop.
    pub stages: Vec<StageSpec>,
    /// The plan in words, as printed before the run.
    pub plan: String,
    pub interval_s: f64,
    /// Open loop with `--tick`: the sender wakes at most once per tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_s: Option<f64>,
    /// `--busy-poll`: worker threads polled for responses instead of sleeping.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub busy_poll: bool,
    /// Why loadlab chose to busy-poll (no `--busy-poll` given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_poll_why: Option<String>,
    /// Open loop over plain HTTP/1.1: threads slept from one due time (or tick) to the next,
    /// not woken by each response, and responses were timed by the kernel's receive stamps.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rx_stamps: bool,
    /// `http/1.1`, `h2`, `h3`, or `grpc` (gRPC calls over HTTP/2).
    pub protocol: String,
    /// HTTP/2 streams per connection (1 for HTTP/1.1).
    pub streams: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageSpec {
    pub duration_s: f64,
    pub from: f64,
    pub to: f64,
}

/// One interval of the timeline. Latencies are response times (from the intended send time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalSummary {
    pub start_s: f64,
    /// The interval's real length: the run's interval width, except for a last interval the
    /// run ended inside (then [`IntervalSummary::partial`]).
    pub duration_s: f64,
    /// The run ended inside this interval: its rates are per second of its real length
    /// (`duration_s`), and a chart shows it as partial or leaves it out, never as a drop.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    pub warmup: bool,
    /// Open loop: requests/s the schedule asked for.
    pub offered_per_s: Option<f64>,
    /// Closed loop: active connections (the stage level).
    pub connections: Option<f64>,
    /// Completed requests/s.
    pub achieved_per_s: f64,
    pub completed: u64,
    pub failed: u64,
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub max_us: Option<f64>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Share of all CPU time the hypervisor stole during this interval.
    pub steal: Option<f64>,
    /// This interval's response-time histogram (nanoseconds, compressed V2, base64).
    pub histogram: Option<String>,
    /// The server's CPU and memory in this interval, when loadlab sampled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::server::IntervalResources>,
    /// This interval's failures by class (the names of [`crate::failure::FAILURE_CLASSES`],
    /// only those that occurred, so at most that many keys): they add up to `failed`, and
    /// over the timeline to the phases' `errors`. Absent in documents made before it was
    /// kept, and when nothing failed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, u64>,
    /// A gRPC run's stream messages each way in this interval (a `--grpc` run's calls, a
    /// scenario's streaming gRPC steps), counted when each call ended, measured part only:
    /// over the timeline they add up to the `grpc` section's `messages_sent` and
    /// `messages_received` (or the steps' `messages`). Absent when the interval counted none,
    /// and in documents made before intervals kept them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<crate::scenario::StepMessages>,
    /// The generator's own health in this interval (its worker threads' CPU, how late it
    /// noticed due requests), so that a fleet's page shows each generator's as the run goes.
    /// Absent in intervals not streamed as the run went (a run with no store, page or
    /// coordinator keeps its timeline to the end), from an older agent, and in documents
    /// made before intervals kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<IntervalHealth>,
}

impl IntervalSummary {
    /// Bytes sent per second over this interval, for a measured one with a length (what a
    /// merge takes the busiest of, beside the parts' own busiest seconds).
    pub fn measured_sent_per_s(&self) -> Option<u64> {
        (!self.warmup && self.duration_s > 0.0)
            .then(|| (self.bytes_sent as f64 / self.duration_s) as u64)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseSummary {
    /// The planned measured time (a run stopped early: what it lasted).
    pub duration_s: f64,
    /// An open loop's drain: from the planned end of its load to when its last request ended
    /// (answered, failed, or given up). Its rates (`requests.per_second`, `bytes.*_per_s`)
    /// are over `duration_s` plus this, so answers that arrive after the load's end do not
    /// inflate them. Absent for a closed loop, a run stopped early, and older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain_s: Option<f64>,
    pub requests: Requests,
    /// Absent when no request completed.
    pub latency_us: Option<LatencySummary>,
    /// Open loop: from the actual send to the last byte (the server's share of `latency_us`).
    pub service_time_us: Option<LatencySummary>,
    /// From the actual send to the first byte of the response.
    pub ttfb_us: Option<LatencySummary>,
    /// Open loop: actual send minus intended send, whatever the cause.
    pub send_lag_us: Option<LatencySummary>,
    /// Open loop: how late loadlab itself noticed requests were due (its own health).
    pub scheduler_lag_us: Option<LatencySummary>,
    /// TCP connection setup, apart from request latency. Absent when none was opened.
    pub connect_us: Option<LatencySummary>,
    /// TLS handshakes, after TCP setup (https only).
    pub tls_handshake_us: Option<LatencySummary>,
    /// TLS handshakes that resumed an earlier session, and full ones.
    pub tls_resumed: u64,
    pub tls_full: u64,
    pub connections_opened: u64,
    /// Connections loadlab tried and failed to open (refused, timed out, out of descriptors
    /// or ports): each is also a failed request in `errors`.
    pub connections_failed: u64,
    /// Responses by status code.
    pub status_codes: BTreeMap<String, u64>,
    /// Failed requests by class (only classes that occurred).
    pub errors: BTreeMap<String, u64>,
    /// For some classes, the first message seen (a certificate's problem, with the fix).
    pub error_details: BTreeMap<String, String>,
    /// HTTP/1.1 and HTTP/2: every byte the connections wrote and read, before TLS; HTTP/3:
    /// DATA payload alone (what crossed the wire is `wire_bytes`).
    pub bytes: Bytes,
    /// HdrHistograms (nanoseconds) in HdrHistogram's compressed V2 form, base64.
    pub histograms: EncodedHistograms,
    /// Seconds spent waiting for servers to close connections they announced they would
    /// close (`Connection: close`), and how many of those waits ran out with the server
    /// still holding the connection open.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub close_wait_s: f64,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub close_wait_timeouts: u64,
    /// Requests sent again because the server said it had not processed them (HTTP/2: a
    /// stream above a graceful GOAWAY's last stream id, or refused with REFUSED_STREAM).
    /// Each is issued, and completed or failed, once; absent when none.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub retried: u64,
    /// Reported percentiles that sit on the edge of a gap between a fast and a slow mode
    /// ([`crate::cliff`]): their value depends on which side of it they fell, so compare the
    /// share of requests beyond the gap instead. Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cliffs: Vec<crate::cliff::Cliff>,
    /// HTTP/3 with `--http3-0rtt`: the connections that resumed with 0-RTT and the requests
    /// they sent as early data. Absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_data: Option<EarlyData>,
    /// HTTP/3: the bytes that crossed the wire, as UDP datagrams, beside `bytes` (which are
    /// HTTP/3 DATA payload alone there). Absent for HTTP/1.1 and HTTP/2, whose `bytes`
    /// are already every byte their connections wrote and read (before TLS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_bytes: Option<WireBytes>,
}

impl PhaseSummary {
    /// The seconds the phase's rates are over: its duration plus an open loop's drain.
    pub fn rate_span_s(&self) -> f64 {
        self.duration_s + self.drain_s.unwrap_or(0.0)
    }
}

/// HTTP/3's traffic as quinn counted it on each connection (`udp_tx.bytes`, `udp_rx.bytes`):
/// the UDP payloads of the datagrams it sent and received, so QUIC's packet headers, its
/// encryption, acknowledgements, the handshake and packets sent again are all in, and IP
/// and UDP headers are not. Booked when each request ends, as what crossed its connection
/// since the previous request there ended; what crosses after a connection's last request
/// (its last acknowledgements, its close) is not counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WireBytes {
    pub sent: u64,
    pub received: u64,
}

impl WireBytes {
    pub fn add(&mut self, other: &WireBytes) {
        self.sent += other.sent;
        self.received += other.received;
    }
}

/// HTTP/3's 0-RTT (`--http3-0rtt`): connections that resumed a session and sent their first
/// requests before their handshake ended, and what the server did with those requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EarlyData {
    /// Connections that sent requests as early data, their handshake's end seen; those whose
    /// early data the server took (counted in `tls_resumed`), and those whose it discarded
    /// (counted in `tls_full`: rustls and quic-go servers discard it when they do not resume).
    pub connections: u64,
    pub connections_accepted: u64,
    pub connections_rejected: u64,
    /// Requests sent as early data (a request is counted once, however it ended).
    pub requests: u64,
    /// Early requests the server took: answered or failed as any other request.
    pub requests_accepted: u64,
    /// Early requests the server discarded: each sent again on the same connection once its
    /// handshake was over (and counted in `retried`), timed from its first send.
    pub requests_rejected: u64,
    /// The 0-RTT connections' handshakes, from the first packet to the handshake's end (their
    /// requests went before it ended). `tls_handshake_us` holds the other handshakes.
    pub handshake_us: Option<LatencySummary>,
}

impl EarlyData {
    /// Adds `other`'s counts (not the handshake times: those merge as histograms).
    pub fn add_counts(&mut self, other: &EarlyData) {
        self.connections += other.connections;
        self.connections_accepted += other.connections_accepted;
        self.connections_rejected += other.connections_rejected;
        self.requests += other.requests;
        self.requests_accepted += other.requests_accepted;
        self.requests_rejected += other.requests_rejected;
    }
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

pub(crate) fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Requests {
    /// Sent, or attempted: a request whose connection could not be opened counts as issued and failed.
    pub issued: u64,
    /// A full response arrived, whatever its status.
    pub completed: u64,
    /// No full response: see `errors`.
    pub failed: u64,
    /// Due before the end of the run but never sent: an open loop's every connection was
    /// busy, or (either loop) the request's connection was still opening when the run ended.
    pub not_sent: u64,
    /// Completed requests per second.
    pub per_second: f64,
}

impl Requests {
    /// Requests were due (sent, attempted, or waiting for a connection that never opened)
    /// and none got a response: a failed run (exit code 2).
    pub fn nothing_succeeded(&self) -> bool {
        self.completed == 0 && (self.issued > 0 || self.not_sent > 0)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bytes {
    pub sent: u64,
    pub received: u64,
    pub sent_per_s: f64,
    pub received_per_s: f64,
    /// The most bytes sent in any 1-second window (Cloud Run's "max send bytes").
    pub max_sent_per_s: u64,
    pub max_received_per_s: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncodedHistograms {
    pub latency: String,
    pub connect: String,
    /// The other phases of a request, so that merged results summarise them exactly too.
    /// Absent in results from before they were kept, and when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfb: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_lag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshake: Option<String>,
    /// `early_data`'s handshakes (0-RTT connections).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_handshake: Option<String>,
}

/// Where the run happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    pub hostname: String,
    pub os: String,
    pub kernel: String,
    pub arch: String,
    pub cpus: usize,
    /// The machine checked against this run before it started (`loadlab doctor`'s checks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::machine::Check>,
}
