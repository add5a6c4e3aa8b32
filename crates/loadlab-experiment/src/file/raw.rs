//! The experiment file as people write it: every table and key, checked by name (an unknown
//! key is an error naming it). Data only; [`super::validate`] turns it into an experiment.

use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExperiment {
    pub(super) name: String,
    #[serde(default)]
    pub(super) description: String,
    pub(super) repetitions: Option<usize>,
    pub(super) seed: Option<u64>,
    pub(super) cooldown: Option<String>,
    pub(super) warmup: Option<String>,
    pub(super) duration: Option<String>,
    /// Start a mock upstream for the targets' `/upstream` endpoint.
    #[serde(default)]
    pub(super) upstream: bool,
    #[serde(default)]
    pub(super) load: RawLoad,
    #[serde(default)]
    pub(super) limits: RawLimits,
    #[serde(default)]
    pub(super) env: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) matrix: RawMatrix,
    #[serde(default, rename = "variant")]
    pub(super) variants: Vec<RawVariant>,
    #[serde(default)]
    pub(super) compare: RawCompare,
    /// Where the servers run: `[server] agent = "https://..."`.
    #[serde(default)]
    pub(super) server: super::server::RawServer,
    /// What every run scrapes and sends: `[metrics] server_metrics = [...]`.
    #[serde(default)]
    pub(super) metrics: super::metrics::MetricsFile,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLoad {
    pub(super) connections: Option<usize>,
    pub(super) rate: Option<f64>,
    pub(super) stages: Option<String>,
    pub(super) threads: Option<usize>,
    pub(super) keepalive: Option<bool>,
    pub(super) protocol: Option<String>,
    /// `http2` and `http3` arms: concurrent streams per connection (`--streams`).
    pub(super) streams: Option<usize>,
    /// `http1` and `https` arms: requests written ahead on a connection (`--pipeline`).
    pub(super) pipeline: Option<usize>,
    /// `http3` arms: resume with 0-RTT (`--http3-0rtt`).
    pub(super) http3_0rtt: Option<bool>,
    /// `https://` variants: trust these CAs (PEM, relative to the file), as `--cacert`.
    pub(super) cacert: Option<String>,
    pub(super) path: Option<String>,
    pub(super) paths: Option<Vec<String>>,
    pub(super) method: Option<String>,
    #[serde(default)]
    pub(super) headers: Vec<String>,
    pub(super) body: Option<String>,
    pub(super) timeout: Option<String>,
    /// A scenario file (docs/scenario-format.md) run in place of path, method, headers, body.
    pub(super) scenario: Option<String>,
    /// A fleet file (`--generators`): every run's load split across its generators.
    pub(super) generators: Option<String>,
    /// WebSocket arms (a `ws://` or `wss://` variant url): `--ws-mode`, `--ws-binary`,
    /// `--ws-size`, `--ws-ping`, `--ws-held`, `--ws-no-deflate`.
    pub(super) ws_mode: Option<String>,
    pub(super) ws_binary: Option<bool>,
    pub(super) ws_size: Option<usize>,
    pub(super) ws_ping: Option<String>,
    pub(super) ws_held: Option<usize>,
    pub(super) ws_no_deflate: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    pub(super) cpus: Option<f64>,
    pub(super) memory: Option<String>,
    pub(super) pin: Option<String>,
    pub(super) bandwidth: Option<String>,
    pub(super) bandwidth_up: Option<String>,
    pub(super) bandwidth_down: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMatrix {
    #[serde(default)]
    pub(super) connections: Vec<usize>,
    #[serde(default)]
    pub(super) rate: Vec<f64>,
    #[serde(default)]
    pub(super) keepalive: Vec<bool>,
    #[serde(default)]
    pub(super) protocol: Vec<String>,
    #[serde(default)]
    pub(super) path: Vec<String>,
    #[serde(default)]
    pub(super) cpus: Vec<f64>,
    #[serde(default)]
    pub(super) memory: Vec<String>,
    #[serde(default)]
    pub(super) bandwidth: Vec<String>,
    #[serde(default)]
    pub(super) env: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVariant {
    pub(super) name: String,
    pub(super) target: Option<String>,
    pub(super) url: Option<String>,
    pub(super) exec: Option<String>,
    pub(super) healthz: Option<String>,
    /// The variant's own paths (in rotation), instead of `[load]`'s.
    pub(super) paths: Option<Vec<String>>,
    /// The variant's own scenario file, instead of `[load]`'s requests.
    pub(super) scenario: Option<String>,
    #[serde(default)]
    pub(super) env: BTreeMap<String, String>,
    pub(super) limits: Option<RawLimits>,
    /// The variant's own agent, over the file's `[server]`.
    pub(super) server: Option<super::server::RawServer>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCompare {
    pub(super) control: Option<String>,
    /// The equivalence margin, as a fraction (0.03: ±3%).
    pub(super) margin: Option<f64>,
}
