//! The generator role's wire types: a shard of a load, as the coordinator sends it to an
//! agent on a generator host (`POST /v1/loads`), and what comes back as it runs (the
//! header, each finished interval, exact histograms included, then the shard's result).
//!
//! A load travels as data only: every file the user named (a body, a CA, a client
//! certificate, a scenario with its feeders and body files) is sent as its contents, so that
//! the agent never reads a path a client names.

use loadlab_engine::shard::Shard;
use loadlab_engine::tls::{TlsSpec, TlsVersion};
use loadlab_engine::ws::{WsMode, WsSpec};
use loadlab_engine::RunSpec;
use loadlab_result::{IntervalSummary, RunResult};
use serde::{Deserialize, Serialize};
use std::time::Duration;

mod grpc;
pub use grpc::WireGrpc;

/// The largest `POST /v1/loads` body: a load's request body travels in it.
pub const MAX_LOAD_BYTES: usize = 16 * 1024 * 1024;

/// One shard of a load, every duration in nanoseconds.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct WireLoad {
    pub url: String,
    pub method: String,
    pub headers: Vec<String>,
    /// The request body, base64.
    pub body_b64: String,
    pub connections: Option<usize>,
    pub threads: Option<usize>,
    pub duration_ns: Option<u64>,
    pub requests: Option<u64>,
    pub timeout_ns: u64,
    pub connect_timeout_ns: u64,
    pub warmup_ns: u64,
    pub keepalive: bool,
    pub rate: Option<f64>,
    pub stages: Option<String>,
    pub closed_stages: bool,
    /// `None`: uniform arrivals; else Poisson with this seed.
    pub poisson_seed: Option<u64>,
    pub max_connections: Option<usize>,
    pub interval_ns: u64,
    pub tick_ns: u64,
    pub busy_poll: bool,
    pub pm_qos: bool,
    pub tls: WireTls,
    pub http2: bool,
    /// `--http3`: HTTP/3 over QUIC (`streams` a connection, as for HTTP/2). Absent from an
    /// older coordinator's load: HTTP/1.1 or HTTP/2 as it asked.
    #[serde(default)]
    pub http3: bool,
    /// `--http3-0rtt`: each generator's connections that resume send early data (each
    /// generator resumes the sessions its own connections made).
    #[serde(default)]
    pub http3_0rtt: bool,
    pub streams: usize,
    /// `--pipeline`: HTTP/1.1 requests written ahead on a connection. Absent from an older
    /// coordinator's load: 1, no pipelining, as it asked.
    #[serde(default = "no_pipelining")]
    pub pipeline: usize,
    pub paths: Vec<String>,
    pub pace_ns: Option<u64>,
    pub new_connection_share: Option<f64>,
    pub seed: u64,
    /// This shard, from 0, of `shard_count`.
    pub shard_index: u32,
    pub shard_count: u32,
    /// A scenario run instead of one request, whole (`url` then only redirects it, as
    /// locally).
    #[serde(default)]
    pub scenario: Option<WireScenario>,
    /// A WebSocket run's settings (`--ws-*`): present exactly when `url` is `ws://` or
    /// `wss://`. Absent from an older coordinator's load, whose WebSocket URL is then
    /// refused (it would have run as echo, whatever it asked); left out of an HTTP load, so
    /// that one reads the same to an older generator. A generator too old to read it says
    /// so in its hello ([`crate::protocol::FEATURE_WEBSOCKET`] missing) and is not sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws: Option<WireWs>,
    /// A gRPC run's call (`--grpc`), with its schema: left out of every other load, so that
    /// one reads the same to an older generator. A generator too old to read it (which would
    /// send plain HTTP requests instead of the calls) says so in its hello
    /// ([`crate::protocol::FEATURE_GRPC`] missing) and is not sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<WireGrpc>,
}

/// `--ws-mode`, `--ws-binary`, `--ws-size`, `--ws-ping`, `--ws-held` and `--ws-connect-rate`,
/// as they travel.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct WireWs {
    /// `"echo"`, `"hold"` or `"connect"`.
    pub mode: String,
    pub binary: bool,
    pub size: Option<usize>,
    pub ping_ns: Option<u64>,
    /// `--ws-held`: the whole run's count (each shard holds its share). Left out when not
    /// asked, so that a load reads the same to an older generator; one that could not read
    /// it is not sent it ([`crate::protocol::FEATURE_WS_HELD`] missing from its hello).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<usize>,
    /// `--ws-connect-rate`: the whole run's, per second (each shard opens its connections'
    /// places in the whole schedule). Left out when not asked; one that could not read it is
    /// not sent it ([`crate::protocol::FEATURE_WS_CONNECT_RATE`] missing from its hello).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_rate: Option<f64>,
    /// `--ws-no-deflate`: left out when not asked (an older generator offers
    /// permessage-deflate whatever it was sent).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_deflate: bool,
}

/// Whether `url` is a WebSocket run's (`ws://` or `wss://`, in any case).
pub fn is_websocket(url: &str) -> bool {
    ["ws://", "wss://"].iter().any(|scheme| {
        url.get(..scheme.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
    })
}

fn no_pipelining() -> usize {
    1
}

/// A scenario as it travels: its file, the `--var` overrides and the contents of every file
/// it names, base64; the agent compiles it from these alone.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct WireScenario {
    pub text: String,
    pub overrides: Vec<(String, String)>,
    pub files: Vec<WireFile>,
    /// The gRPC steps' schema as the coordinator resolved it (a `FileDescriptorSet`,
    /// base64): its `.proto` files compiled, or the server's reflection asked once, there.
    /// Left out of a scenario without gRPC steps, so that one reads the same to an older
    /// generator (which would refuse `.proto` files, saying they did not come).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_descriptors_b64: Option<String>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct WireFile {
    /// As the scenario names it.
    pub name: String,
    pub b64: String,
}

/// The most a scenario's files may weigh, together, to travel in one `POST /v1/loads`
/// (base64 makes them a third larger).
pub const MAX_SCENARIO_FILE_BYTES: usize = MAX_LOAD_BYTES / 4 * 3 - 64 * 1024;

/// TLS settings with every file's contents, PEM.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct WireTls {
    pub insecure: bool,
    pub ca_pem: Option<String>,
    pub cert_pem: Option<String>,
    pub key_pem: Option<String>,
    pub resume: Option<bool>,
    /// `"1.2"` or `"1.3"`.
    pub version: Option<String>,
}

/// `POST /v1/loads`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct StartLoad {
    pub load: WireLoad,
    /// When to start, on the agent's clock (unix ns): the coordinator's agreed instant plus
    /// this agent's clock offset.
    pub start_at_ns: i64,
    /// The agreed instant on the coordinator's clock (unix ns): what every shard's result
    /// records as its start, so that the shards of one run share one plan.
    pub agreed_start_ns: i64,
    /// The coordinator's host, for `busy`.
    pub client: String,
    pub run: Option<String>,
    pub lease_ms: Option<u64>,
}

/// `201` to `POST /v1/loads`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct LoadStarted {
    pub load: String,
    pub lease_ms: u64,
}

/// `GET /v1/loads/{id}/intervals?after=N&wait_ms=M`: the intervals after the N-th, the
/// header once the run has started, and the shard's result once it has ended. The request
/// acknowledges the first N: the agent drops them (`410` to a later read below N), so that
/// what it holds does not grow with the load's length.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct LoadBatch {
    pub header: Option<RunResult>,
    pub intervals: Vec<IntervalSummary>,
    /// How many intervals precede the first one here.
    pub after: u64,
    /// How many finished intervals the agent holds for this load as it answers (those from
    /// `after` on): what the coordinator has not acknowledged, never the whole load.
    pub held: u64,
    pub done: bool,
    /// The shard's result. Its `timeline` is empty (since protocol 2): every interval came
    /// in a batch's `intervals`, and the coordinator builds the timeline from those. Its
    /// `parts` holds the shard's own summary (the merge takes it from there).
    pub result: Option<RunResult>,
    /// Why the shard could not run (the engine's error), once done.
    pub error: Option<String>,
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl WireLoad {
    /// Shard `shard` of `spec`. A scenario is refused: its files stay here.
    pub fn from_spec(spec: &RunSpec, shard: Shard) -> Result<WireLoad, String> {
        use base64::Engine as _;
        let grpc = match &spec.grpc {
            None => None,
            Some(call) => Some(WireGrpc::of(call)?),
        };
        // Sent with an HTTP URL too when set, for the generator to refuse as locally.
        let ws = (is_websocket(&spec.url) || spec.ws != WsSpec::default()).then(|| WireWs {
            mode: spec.ws.mode.name().to_string(),
            binary: spec.ws.binary,
            size: spec.ws.size,
            ping_ns: spec.ws.ping.map(ns),
            held: spec.ws.held,
            connect_rate: spec.ws.connect_rate,
            no_deflate: spec.ws.no_deflate,
        });
        let scenario = match &spec.scenario {
            None => None,
            Some(s) => Some(WireScenario::of(&s.source)?),
        };
        let text =
            |b: &Option<Vec<u8>>| b.as_ref().map(|v| String::from_utf8_lossy(v).into_owned());
        Ok(WireLoad {
            url: spec.url.clone(),
            method: spec.method.clone(),
            headers: spec.headers.clone(),
            body_b64: base64::engine::general_purpose::STANDARD.encode(&spec.body),
            connections: spec.connections,
            threads: spec.threads,
            duration_ns: spec.duration.map(ns),
            requests: spec.requests,
            timeout_ns: ns(spec.timeout),
            connect_timeout_ns: ns(spec.connect_timeout),
            warmup_ns: ns(spec.warmup),
            keepalive: spec.keepalive,
            rate: spec.rate,
            stages: spec.stages.clone(),
            closed_stages: spec.closed_stages,
            poisson_seed: match spec.arrival {
                loadlab_engine::schedule::Arrival::Uniform => None,
                loadlab_engine::schedule::Arrival::Poisson { seed } => Some(seed),
            },
            max_connections: spec.max_connections,
            interval_ns: ns(spec.interval),
            tick_ns: ns(spec.tick),
            busy_poll: spec.busy_poll,
            pm_qos: spec.pm_qos,
            tls: WireTls {
                insecure: spec.tls.insecure,
                ca_pem: text(&spec.tls.ca_pem),
                cert_pem: text(&spec.tls.cert_pem),
                key_pem: text(&spec.tls.key_pem),
                resume: spec.tls.resume,
                version: spec.tls.version.map(|v| match v {
                    TlsVersion::V1_2 => "1.2".to_string(),
                    TlsVersion::V1_3 => "1.3".to_string(),
                }),
            },
            http2: spec.http2,
            http3: spec.http3,
            http3_0rtt: spec.http3_0rtt,
            streams: spec.streams,
            pipeline: spec.pipeline,
            paths: spec.paths.clone(),
            pace_ns: spec.pace.map(ns),
            new_connection_share: spec.new_connection_share,
            seed: spec.seed,
            shard_index: shard.index,
            shard_count: shard.count,
            scenario,
            ws,
            grpc,
        })
    }

    /// The engine's spec for this shard, on the generator host (its own cores, no start
    /// instant: the agent waits for it before starting the engine).
    pub fn to_spec(&self) -> Result<RunSpec, String> {
        use base64::Engine as _;
        let body = base64::engine::general_purpose::STANDARD
            .decode(&self.body_b64)
            .map_err(|e| format!("load.body_b64 is not base64: {e}"))?;
        if self.shard_count == 0 || self.shard_index >= self.shard_count {
            return Err(format!(
                "load.shard_index {} is not a shard of {}",
                self.shard_index, self.shard_count
            ));
        }
        let version = match self.tls.version.as_deref() {
            None => None,
            Some("1.2") => Some(TlsVersion::V1_2),
            Some("1.3") => Some(TlsVersion::V1_3),
            Some(other) => return Err(format!("load.tls.version {other:?} is not 1.2 or 1.3")),
        };
        let bytes = |s: &Option<String>| s.as_ref().map(|t| t.as_bytes().to_vec());
        let d = Duration::from_nanos;
        let ws = match &self.ws {
            None if is_websocket(&self.url) => {
                return Err(
                    "load.ws is missing for a WebSocket URL: the coordinator's loadlab is too \
                     old to send WebSocket settings (its load would run as echo whatever it \
                     asked); run the same loadlab version on the coordinator and the generators"
                        .into(),
                )
            }
            None => WsSpec::default(),
            Some(w) => WsSpec {
                mode: match w.mode.as_str() {
                    "echo" => WsMode::Echo,
                    "hold" => WsMode::Hold,
                    "connect" => WsMode::Connect,
                    other => {
                        // Debug-quoted: a peer's text, escaped.
                        return Err(format!(
                            "load.ws.mode {other:?} is not echo, hold or connect"
                        ));
                    }
                },
                binary: w.binary,
                size: w.size,
                ping: w.ping_ns.map(d),
                held: w.held,
                connect_rate: w.connect_rate,
                no_deflate: w.no_deflate,
            },
        };
        Ok(RunSpec {
            url: self.url.clone(),
            method: self.method.clone(),
            headers: self.headers.clone(),
            body,
            connections: self.connections,
            threads: self.threads,
            duration: self.duration_ns.map(d),
            requests: self.requests,
            timeout: d(self.timeout_ns),
            connect_timeout: d(self.connect_timeout_ns),
            warmup: d(self.warmup_ns),
            keepalive: self.keepalive,
            rate: self.rate,
            stages: self.stages.clone(),
            closed_stages: self.closed_stages,
            arrival: match self.poisson_seed {
                None => loadlab_engine::schedule::Arrival::Uniform,
                Some(seed) => loadlab_engine::schedule::Arrival::Poisson { seed },
            },
            max_connections: self.max_connections,
            interval: d(self.interval_ns),
            tick: d(self.tick_ns),
            busy_poll: self.busy_poll,
            pm_qos: self.pm_qos,
            tls: TlsSpec {
                insecure: self.tls.insecure,
                ca_pem: bytes(&self.tls.ca_pem),
                ca_from: None,
                cert_pem: bytes(&self.tls.cert_pem),
                key_pem: bytes(&self.tls.key_pem),
                resume: self.tls.resume,
                version,
            },
            http2: self.http2,
            http3: self.http3,
            http3_0rtt: self.http3_0rtt,
            streams: self.streams,
            pipeline: self.pipeline,
            paths: self.paths.clone(),
            generator_cpus: None,
            shard: Some(Shard {
                index: self.shard_index,
                count: self.shard_count,
            }),
            start_at: None,
            scenario: match &self.scenario {
                None => None,
                Some(s) => Some(std::sync::Arc::new(s.compile()?)),
            },
            pace: self.pace_ns.map(d),
            new_connection_share: self.new_connection_share,
            seed: self.seed,
            ws,
            grpc: match &self.grpc {
                None => None,
                Some(g) => Some(std::sync::Arc::new(g.call()?)),
            },
            // A field the wire does not carry yet keeps its default; `from_spec` lists
            // every field it sends.
            ..RunSpec::default()
        })
    }
}

impl WireScenario {
    /// A compiled scenario's source, ready to travel; too large a one is refused, saying so.
    pub fn of(source: &loadlab_engine::scenario::ScenarioSource) -> Result<WireScenario, String> {
        use base64::Engine as _;
        let total: usize = source.files.values().map(Vec::len).sum::<usize>()
            + source.text.len()
            + source.grpc_descriptors.as_ref().map_or(0, |d| d.len());
        if total > MAX_SCENARIO_FILE_BYTES {
            return Err(format!(
                "the scenario and the files it names weigh {:.1} MiB, more than a generator \
                 takes ({:.1} MiB): split its feeder files, or run it from one generator",
                total as f64 / 1_048_576.0,
                MAX_SCENARIO_FILE_BYTES as f64 / 1_048_576.0
            ));
        }
        Ok(WireScenario {
            text: source.text.clone(),
            overrides: source.overrides.clone(),
            files: source
                .files
                .iter()
                .map(|(name, bytes)| WireFile {
                    name: name.clone(),
                    b64: base64::engine::general_purpose::STANDARD.encode(bytes),
                })
                .collect(),
            grpc_descriptors_b64: source
                .grpc_descriptors
                .as_ref()
                .map(|d| base64::engine::general_purpose::STANDARD.encode(d)),
        })
    }

    /// The scenario, compiled on the generator from what travelled: no path is read.
    pub fn compile(&self) -> Result<loadlab_engine::scenario::Scenario, String> {
        use base64::Engine as _;
        let mut files = std::collections::BTreeMap::new();
        for f in &self.files {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(&f.b64)
                .map_err(|e| format!("load.scenario.files[{:?}] is not base64: {e}", f.name))?;
            files.insert(f.name.clone(), bytes);
        }
        let grpc_descriptors = match &self.grpc_descriptors_b64 {
            None => None,
            Some(b64) => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|e| format!("load.scenario.grpc_descriptors_b64 is not base64: {e}"))?
                    .into(),
            ),
        };
        loadlab_engine::scenario::Scenario::from_source(&loadlab_engine::scenario::ScenarioSource {
            text: self.text.clone(),
            overrides: self.overrides.clone(),
            files,
            grpc_descriptors,
        })
        .map_err(|e| format!("load.scenario: {e}"))
    }
}

#[cfg(test)]
mod tests;
