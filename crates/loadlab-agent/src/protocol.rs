//! The agent protocol, version [`PROTOCOL`]: the JSON bodies the agent and its client
//! exchange over HTTPS, and the certificate fingerprint helpers both sides use.
//!
//! Endpoints (every request and response carries [`HEADER_PROTOCOL`]; every POST and
//! DELETE carries a fresh [`HEADER_NONCE`]; every request carries `Authorization: Bearer`):
//!
//! ```text
//! GET    /v1/hello                                   -> Hello
//! POST   /v1/clock                                   -> ClockStamps (t2 stamped first, t3 last)
//! GET    /v1/host?port=N                             -> HostInfo
//! POST   /v1/sessions               OpenSession      -> 201 Opened | 409 ErrorBody{busy}
//! POST   /v1/sessions/{id}/lease                     -> Lease (renews)
//! POST   /v1/sessions/{id}/sampling StartSampling    -> Lease (starts, clears old samples,
//!                                                       snapshots the kernel counters)
//! GET    /v1/sessions/{id}/samples?after=SEQ&wait_ms=N -> SampleBatch (long poll, wait_ms <= 2000;
//!                                                       renews the lease)
//! POST   /v1/sessions/{id}/sampling/stop             -> Stopped (kernel counter delta)
//! DELETE /v1/sessions/{id}                           -> Closed (stops what it launched)
//! POST   /v1/loads                  StartLoad        -> 201 LoadStarted | 409 ErrorBody{busy}
//! GET    /v1/loads/{id}/intervals?after=N&wait_ms=M  -> LoadBatch (long poll; acknowledges
//!                                                       the first N, which are dropped)
//! POST   /v1/loads/{id}/stop                         -> stops the load (its result follows)
//! DELETE /v1/loads/{id}                              -> closes it
//! POST   /v1/path/listen            PathListen       -> PathTicket (a port and a single-use
//!                                                       ticket for one bulk check)
//! POST   /v1/path/check             PathCheck        -> PathGoodput (bulk both ways to a
//!                                                       listening agent; see [`path`])
//! ```
//!
//! Data only: no I/O here. A change of meaning of any field is a new [`PROTOCOL`]; a new
//! optional field is not. The page `docs/agent-protocol.md` describes it for people.

use serde::{Deserialize, Serialize};

/// The protocol version this build speaks. Each side refuses another, naming both.
/// 2: a load's result travels without its timeline (its intervals came in the batches, each
/// acknowledged and dropped by the agent); a coordinator of protocol 1 would have taken the
/// empty timeline for the shard's, so the two are refused to each other.
pub const PROTOCOL: u32 = 2;
/// In [`Hello::features`]: the agent's generator role reads a load's WebSocket settings
/// ([`load::WireLoad::ws`]). An older agent would ignore them and run any WebSocket load as
/// echo, so a coordinator sends a WebSocket load only to a generator that names this.
pub const FEATURE_WEBSOCKET: &str = "websocket";
/// In [`Hello::features`]: the generator role reads a load's pipeline depth
/// ([`load::WireLoad::pipeline`]). An older agent would ignore it and send one request at a
/// time, a fraction of the load asked, so a pipelined load goes only to one that names this.
pub const FEATURE_PIPELINE: &str = "pipeline";
/// In [`Hello::features`]: the generator role reads a load's gRPC call
/// ([`load::WireLoad::grpc`]). An older agent would ignore it and send the load's plain
/// HTTP requests, not the calls, so a gRPC load goes only to one that names this.
pub const FEATURE_GRPC: &str = "grpc";
/// In [`Hello::features`]: the generator role reads a WebSocket load's held connections
/// (`--ws-held`, [`load::WireWs::held`]). An older agent would ignore them and run the echo
/// load alone, with no connection held, so such a load goes only to one that names this.
pub const FEATURE_WS_HELD: &str = "ws-held";
/// In [`Hello::features`]: the generator role reads a held load's connect rate
/// (`--ws-connect-rate`, [`load::WireWs::connect_rate`]). An older agent would ignore it and
/// open every connection at once, not the ramp asked, so such a load goes only to one that
/// names this.
pub const FEATURE_WS_CONNECT_RATE: &str = "ws-connect-rate";
/// In [`Hello::features`]: the generator role runs a WebSocket load over HTTP/2 (RFC 8441,
/// [`load::WireLoad::http2`] with a `ws://` or `wss://` URL, or a scenario's WebSocket steps).
/// An older agent refuses such a load only once its shard starts, so it goes only to one
/// that names this.
pub const FEATURE_WS_H2: &str = "ws-h2";
/// What this build's agent names in [`Hello::features`].
pub const FEATURES: &[&str] = &[
    FEATURE_WEBSOCKET,
    FEATURE_PIPELINE,
    FEATURE_GRPC,
    FEATURE_WS_HELD,
    FEATURE_WS_CONNECT_RATE,
    FEATURE_WS_H2,
];
/// On every request and every response: the protocol version, in decimal.
pub const HEADER_PROTOCOL: &str = "x-loadlab-agent-protocol";
/// On every POST and DELETE: 32 hexadecimal characters, never reused (replay protection).
pub const HEADER_NONCE: &str = "x-loadlab-nonce";
/// The largest request body the agent reads; beyond it, 413.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The longest a `/samples` long poll waits for a new sample.
pub const MAX_WAIT_MS: u64 = 2_000;

/// `GET /v1/hello`: who the agent is and whether it is free.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Hello {
    pub protocol: u32,
    pub agent_version: String,
    pub hostname: String,
    pub cpus: usize,
    /// `uname -r`.
    pub kernel: String,
    /// `"v2"` or `"v1"`, or none when no cgroup hierarchy is usable.
    pub cgroup: Option<String>,
    /// Whether the agent runs commands a client sends (`--allow-exec`).
    pub allow_exec: bool,
    /// The lease a session gets unless it asks for another.
    pub lease_ms: u64,
    /// The open session, when there is one (sessions are one at a time).
    pub busy: Option<Busy>,
    /// The server the agent was told to watch at start (`--pid/--cgroup/--port/--container`),
    /// in words.
    pub default_server: Option<String>,
    /// Whether the agent sends load for a coordinator (`--generator`): the generator role.
    #[serde(default)]
    pub generator: bool,
    /// The load it is sending, when it is (one at a time).
    #[serde(default)]
    pub load_busy: Option<Busy>,
    /// What it does beyond what protocol 2 first carried, one word each (e.g.
    /// [`FEATURE_WEBSOCKET`]): a load field an older agent would ignore, and so misread, is
    /// sent only to an agent that names it here. Empty from an older agent.
    #[serde(default)]
    pub features: Vec<String>,
}

/// Who holds the agent.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Busy {
    /// Empty as shown to others (hello, a 409): with the token, a session's or a load's id
    /// is the right to act on it or read its result.
    pub session: String,
    /// The generator's host name, as it said (at most 128 bytes, no control characters).
    pub client: String,
    /// The run id or label, as it said (the same bounds).
    pub run: Option<String>,
    pub since_unix_s: f64,
}

impl Busy {
    /// As shown to anyone but its holder: without its id.
    pub fn without_id(self) -> Busy {
        Busy {
            session: String::new(),
            ..self
        }
    }
}

/// `POST /v1/clock`: the agent's clock (unix ns) when the request arrived and when the
/// answer left.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct ClockStamps {
    pub t2_ns: i64,
    pub t3_ns: i64,
}

/// `GET /v1/host?port=N`: the server host's limits, for `doctor`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct HostInfo {
    pub hostname: String,
    pub cpus: usize,
    pub memory_bytes: Option<u64>,
    pub somaxconn: Option<u64>,
    pub tcp_max_syn_backlog: Option<u64>,
    pub syncookies: Option<u64>,
    /// `RLIMIT_NOFILE` of the session's server when a session holds one, else the agent's.
    pub nofile_soft: Option<u64>,
    pub nofile_hard: Option<u64>,
    pub port_range: Option<(u16, u16)>,
    /// The backlog of the listener on `?port=`, when one listens there.
    pub listen_backlog: Option<u32>,
    /// TCP sockets in TIME_WAIT with `?port=` at either end (on a generator host: its closed
    /// connections to the target, each holding a local port), when asked and readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_wait_on_port: Option<u64>,
}

/// `POST /v1/sessions`: what to watch or launch.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct OpenSession {
    pub server: ServerRequest,
    /// The generator's host name, shown to others while the session is open.
    pub client: String,
    /// The run id or label, shown to others while the session is open.
    pub run: Option<String>,
    /// The lease wanted; the agent's own when none.
    pub lease_ms: Option<u64>,
}

/// The server of a session: attached to (`Default`, `Pid`, `Cgroup`, `Port`, `Container`)
/// or launched by the agent (`Target`, `Exec`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ServerRequest {
    /// What the agent was started with (`--pid/--cgroup/--port/--container`).
    Default,
    /// The process and its descendants.
    Pid { pid: u32 },
    /// A cgroup path under the mount, or a systemd unit (`x.service`).
    Cgroup { path: String },
    /// The processes listening on the port (the lowest PID's tree).
    Port { port: u16 },
    /// A Podman or Docker container by name or id (its cgroup).
    Container { name: String },
    /// A lab target by name, from the agent's lab.
    Target {
        name: String,
        #[serde(flatten)]
        launch: LaunchOptions,
    },
    /// A command line; only when the agent runs with `--allow-exec`.
    Exec {
        command: String,
        #[serde(flatten)]
        launch: LaunchOptions,
    },
}

impl ServerRequest {
    /// The request in words (`Hello.default_server`, the agent's start-up lines).
    pub fn describe(&self) -> String {
        match self {
            ServerRequest::Default => "the agent's default".into(),
            ServerRequest::Pid { pid } => format!("pid {pid} and its descendants"),
            ServerRequest::Cgroup { path } => format!("cgroup {path}"),
            ServerRequest::Port { port } => format!("the process listening on port {port}"),
            ServerRequest::Container { name } => format!("container {name}"),
            ServerRequest::Target { name, .. } => format!("lab target {name}"),
            ServerRequest::Exec { command, .. } => format!("command {command:?}"),
        }
    }
}

/// How to launch a server, as the user typed it on the generator.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct LaunchOptions {
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// `--cpus`, e.g. `"0.5"`; parsed with `loadlab_probe::limits` on the agent.
    #[serde(default)]
    pub cpus: Option<String>,
    /// `--memory`, e.g. `"128MiB"`.
    #[serde(default)]
    pub memory: Option<String>,
    /// `--pin`, e.g. `"0-1"`.
    #[serde(default)]
    pub pin: Option<String>,
    /// `"strict"` or `"best-effort"`.
    #[serde(default = "default_limits_mode")]
    pub limits_mode: String,
    /// Serve HTTPS with a throwaway CA returned in [`Opened::ca_pem`].
    #[serde(default)]
    pub tls: bool,
    /// The upstream URL handed to a lab target (`UPSTREAM_URL`).
    #[serde(default)]
    pub upstream: Option<String>,
    /// The readiness path.
    #[serde(default = "default_healthz")]
    pub healthz: String,
    #[serde(default = "default_startup_timeout_ms")]
    pub startup_timeout_ms: u64,
}

fn default_limits_mode() -> String {
    "strict".to_string()
}

fn default_healthz() -> String {
    "/healthz".to_string()
}

fn default_startup_timeout_ms() -> u64 {
    30_000
}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions {
            env: Vec::new(),
            cpus: None,
            memory: None,
            pin: None,
            limits_mode: default_limits_mode(),
            tls: false,
            upstream: None,
            healthz: default_healthz(),
            startup_timeout_ms: default_startup_timeout_ms(),
        }
    }
}

/// `201` to `POST /v1/sessions`: what the agent attached to or launched.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Opened {
    pub session: String,
    /// `"launched"`, `"pid"`, `"cgroup"`, `"port"` or `"container"`.
    pub kind: String,
    pub description: String,
    pub pid: Option<u32>,
    /// Where a launched server listens: the agent's address as the generator reached it.
    pub host: Option<String>,
    pub port: Option<u16>,
    /// `"http"` or `"https"`.
    pub scheme: Option<String>,
    /// The throwaway CA of a `tls: true` launch.
    pub ca_pem: Option<String>,
    pub startup: Option<loadlab_result::server::Startup>,
    pub limits: Option<loadlab_result::server::LimitsReport>,
    pub quota_cores: Option<f64>,
    pub memory_limit_bytes: Option<u64>,
    pub lease_ms: u64,
    pub notes: Vec<String>,
}

/// The lease granted (renewed by every request on the session).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct Lease {
    pub lease_ms: u64,
}

/// `POST /v1/sessions/{id}/sampling`.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct StartSampling {
    pub every_ms: u64,
    /// The server's port, for the kernel counters (TIME_WAIT on the port), the backlog and
    /// the server's connections sampled with each sample ([`WireSample::path`]).
    pub port: Option<u16>,
}

/// CFS throttling of the server's cgroup (mirrors `loadlab_probe::Throttling`).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct WireThrottling {
    pub periods: u64,
    pub throttled: u64,
    pub throttled_ns: u64,
}

/// One sample of the server, cumulative counters as the probe reads them.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct WireSample {
    /// 1, 2, 3... within a sampling; `/samples?after=SEQ` returns those after SEQ.
    pub seq: u64,
    /// The agent's clock, unix ns.
    pub at_ns: i64,
    pub cpu_ns: u64,
    pub throttling: Option<WireThrottling>,
    pub rss_bytes: u64,
    pub memory_bytes: Option<u64>,
    pub threads: u64,
    pub fds: u64,
    pub processes: u64,
    pub sent_bytes: Option<u64>,
    pub oom_kills: Option<u64>,
    /// The server's TCP connections on the sampling's port since the previous sample
    /// (`loadlab_machine::path::PathSampler`, `Side::Server`): the sending end's chrono
    /// stats, round trips and goodput (docs/path.md). Its `t_s` is 0: the window ends at
    /// `at_ns`, which the client places on its run's clock. Absent from an agent older than
    /// this field, without a port, on the first sample (the baseline) and when the host's
    /// socket diagnostics cannot be read: a new optional field, not a new protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<loadlab_result::path::PathWindow>,
}

/// The server ended (a launched child's exit, or an attached process gone).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct WireExit {
    /// The agent's clock, unix ns.
    pub at_ns: i64,
    /// In words: "exited with status 1", "killed by signal 9", "process 42 is gone".
    pub status: String,
    pub oom_killed: bool,
}

/// `GET /v1/sessions/{id}/samples`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct SampleBatch {
    pub samples: Vec<WireSample>,
    pub exit: Option<WireExit>,
    /// Whether sampling is still on.
    pub sampling: bool,
}

/// `POST /v1/sessions/{id}/sampling/stop`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Stopped {
    pub kernel: Option<loadlab_result::machine::KernelCounters>,
    pub exit: Option<WireExit>,
}

/// `DELETE /v1/sessions/{id}`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Closed {
    /// What was stopped or removed, in words.
    pub stopped: Vec<String>,
}

/// Every error answer (4xx, 5xx).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ErrorBody {
    /// What went wrong and how to fix it.
    pub error: String,
    /// The JSON path of the field at fault (`"server.cpus"`), for a 400.
    pub field: Option<String>,
    /// Who holds the agent, for a 409.
    pub busy: Option<Busy>,
}

/// The SHA-256 fingerprint of a DER certificate as `openssl x509 -fingerprint -sha256`
/// prints it after its `=`, prefixed with `sha256:`: `sha256:AB:CD:...`.
/// The fewest characters, and distinct characters, a token may have.
pub const TOKEN_MIN_CHARS: usize = 16;
pub const TOKEN_MIN_DISTINCT: usize = 8;

/// A token as a token file holds it (surrounding whitespace dropped), checked by the one
/// rule both sides apply: a bearer token's characters (RFC 6750 `b64token`: letters,
/// digits, `-._~+/`, then `=` padding only), at least [`TOKEN_MIN_CHARS`] of them and
/// [`TOKEN_MIN_DISTINCT`] different ones (a long run of one letter is no secret). The error
/// says what is wrong and how to make a good one.
pub fn parse_token(text: &str) -> Result<&str, String> {
    const MAKE: &str = "delete the file to have the agent make one, or write one made with \
                        `openssl rand -hex 32`";
    let token = text.trim();
    let body = token.trim_end_matches('=');
    if token.is_empty() {
        return Err(format!("the file holds no token: {MAKE}"));
    }
    if let Some(bad) = body
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-._~+/".contains(*c)))
    {
        return Err(format!(
            "the token holds {bad:?}: a token is one line of letters, digits and -._~+/ \
             (no spaces); {MAKE}"
        ));
    }
    if token.len() < TOKEN_MIN_CHARS {
        return Err(format!(
            "the token is {} characters, fewer than {TOKEN_MIN_CHARS}: {MAKE}",
            token.len()
        ));
    }
    let distinct = body
        .chars()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    if distinct < TOKEN_MIN_DISTINCT {
        return Err(format!(
            "the token has {distinct} different characters, fewer than {TOKEN_MIN_DISTINCT}: \
             it is guessable; {MAKE}"
        ));
    }
    Ok(token)
}

pub fn fingerprint(cert_der: &[u8]) -> String {
    loadlab_certs::fingerprint(cert_der)
}

/// [`fingerprint`] of the first certificate of a PEM chain (the server's own).
pub fn fingerprint_pem(cert_pem: &[u8]) -> Result<String, String> {
    use rustls::pki_types::pem::PemObject;
    let first = rustls::pki_types::CertificateDer::pem_slice_iter(cert_pem)
        .next()
        .ok_or("the certificate file holds no PEM certificate (-----BEGIN CERTIFICATE-----)")?
        .map_err(|e| format!("the certificate file is not valid PEM: {e}"))?;
    Ok(fingerprint(first.as_ref()))
}

/// Reads a SHA-256 fingerprint: with or without the `sha256:` prefix, colons optional,
/// any case.
pub fn parse_fingerprint(s: &str) -> Result<[u8; 32], String> {
    let trimmed = s.trim();
    let body = match trimmed.split_once(':') {
        Some((prefix, rest)) if prefix.eq_ignore_ascii_case("sha256") => rest,
        _ => trimmed,
    };
    let hex: String = body.chars().filter(|c| *c != ':').collect();
    let bad = || {
        format!(
            "{s:?} is not a SHA-256 fingerprint: give the 64 hexadecimal digits the agent \
             printed at start (e.g. sha256:AB:CD:..., colons optional)"
        )
    };
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(out)
}

pub mod load;
pub mod path;

#[cfg(test)]
mod tests;
