//! The settings of one arm ([`Settings`]: load, limits, environment), the protocols, the
//! bandwidth caps, and the matrix's axes that vary them. Checked values only.

use super::raw::RawLimits;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `http1` (plain HTTP/1.1), `https` (HTTP/1.1 over TLS), `http2` (over TLS when the URL is
/// `https://`, prior knowledge otherwise) or `http3` (QUIC, always encrypted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    Http1,
    Https,
    Http2,
    Http3,
}

impl Protocol {
    pub(super) fn parse(raw: &str, key: &str) -> Result<Protocol, String> {
        match raw {
            "http1" | "http/1.1" => Ok(Protocol::Http1),
            "https" => Ok(Protocol::Https),
            "http2" | "h2" | "h2c" => Ok(Protocol::Http2),
            "http3" | "h3" => Ok(Protocol::Http3),
            other => Err(format!(
                "{key}: unknown protocol {other:?}; use http1, https, http2 or http3"
            )),
        }
    }

    /// The protocol carries concurrent streams on a connection (`[load] streams`).
    pub fn multiplexed(self) -> bool {
        matches!(self, Protocol::Http2 | Protocol::Http3)
    }

    /// The protocol only speaks over TLS, so its server must serve `https://`.
    pub fn encrypted(self) -> bool {
        matches!(self, Protocol::Https | Protocol::Http3)
    }

    /// As the file names it, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "http1",
            Protocol::Https => "https",
            Protocol::Http2 => "http2",
            Protocol::Http3 => "http3",
        }
    }
}

/// The load and server settings of one arm: the file's defaults with the arm's axis values
/// and variant overrides applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub connections: Option<usize>,
    pub rate: Option<f64>,
    pub stages: Option<String>,
    pub threads: Option<usize>,
    pub keepalive: bool,
    pub protocol: Protocol,
    /// `[load] http3_0rtt`: the arm's HTTP/3 connections that resume a session send their
    /// first requests as 0-RTT early data (`--http3-0rtt`); only arms over `http3` take it.
    /// Absent from the plan's hash when off, so plans from before it resume.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub http3_0rtt: bool,
    /// `[load] streams`: concurrent streams per connection of the arms over `http2` or
    /// `http3` (`--streams`; absent: 1, and absent from the plan's hash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<usize>,
    /// `[load] pipeline`: HTTP/1.1 requests written ahead on a connection of the arms over
    /// `http1` and `https` (`--pipeline`; absent: 1, and absent from the plan's hash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<usize>,
    /// Sent in rotation on each connection.
    pub paths: Vec<String>,
    pub method: String,
    pub headers: Vec<String>,
    pub body: String,
    pub timeout_s: f64,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub cpus: Option<f64>,
    pub memory: Option<String>,
    pub pin: Option<String>,
    /// Environment for a launched server (target knobs such as `WORKERS`, `BACKLOG`).
    pub env: BTreeMap<String, String>,
    pub healthz: String,
    /// A launched server behind a capped link (absent: none; kept out of the plan's hash
    /// then, so plans from before it resume).
    #[serde(default, skip_serializing_if = "Bandwidth::is_empty")]
    pub bandwidth: Bandwidth,
    /// A scenario file run instead of `paths`, `method`, `headers` and `body` (its requests go
    /// to the variant's server). Absent from the plan's hash when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// `[load] ws_*`: what a WebSocket arm's connections do (its variant's url is `ws://` or
    /// `wss://`). Absent from the plan's hash when none is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws: Option<WsSettings>,
}

/// `[load] ws_mode`, `ws_binary`, `ws_size`, `ws_ping`, `ws_held` and `ws_no_deflate`, as
/// `--ws-*` takes them
/// (docs/websocket.md); the engine checks their combinations as for the flags.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WsSettings {
    /// `echo`, `hold` or `connect`.
    pub mode: String,
    pub binary: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ping_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<usize>,
    /// Left out when false, so a plan without it hashes as before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_deflate: bool,
}

impl WsSettings {
    /// As the engine takes them.
    pub fn spec(&self) -> loadlab_engine::ws::WsSpec {
        use loadlab_engine::ws::WsMode;
        loadlab_engine::ws::WsSpec {
            mode: match self.mode.as_str() {
                "hold" => WsMode::Hold,
                "connect" => WsMode::Connect,
                _ => WsMode::Echo,
            },
            binary: self.binary,
            size: self.size,
            ping: self.ping_s.map(std::time::Duration::from_secs_f64),
            held: self.held,
            // Not yet a `[load]` key: an arm's held connections open as fast as 64 in flight
            // allow.
            connect_rate: None,
            no_deflate: self.no_deflate,
        }
    }
}

/// Bandwidth caps on the link to a launched server, as `--bandwidth` takes them (`2MBps`:
/// megabytes per second on the wire), checked when the file is read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Bandwidth {
    /// Each way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub both: Option<String>,
    /// Toward the server, in place of `both`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up: Option<String>,
    /// Toward loadlab, in place of `both`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down: Option<String>,
}

impl Bandwidth {
    pub fn is_empty(&self) -> bool {
        self.both.is_none() && self.up.is_none() && self.down.is_none()
    }

    pub(super) fn from_limits(l: &RawLimits, key: &str) -> Result<Bandwidth, String> {
        let check = |v: &Option<String>, name: &str| -> Result<Option<String>, String> {
            match v {
                Some(raw) => loadlab_machine::Rate::parse(raw)
                    .map(|_| Some(raw.clone()))
                    .map_err(|e| format!("{key} {name}: {e}")),
                None => Ok(None),
            }
        };
        Ok(Bandwidth {
            both: check(&l.bandwidth, "bandwidth")?,
            up: check(&l.bandwidth_up, "bandwidth_up")?,
            down: check(&l.bandwidth_down, "bandwidth_down")?,
        })
    }

    /// Variant overrides, field by field.
    pub(crate) fn overridden_by(&mut self, other: &Bandwidth) {
        if other.both.is_some() {
            self.both = other.both.clone();
        }
        if other.up.is_some() {
            self.up = other.up.clone();
        }
        if other.down.is_some() {
            self.down = other.down.clone();
        }
    }
}

/// One axis of the matrix: a setting and the values it takes, in the file's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    /// `connections`, `rate`, `keepalive`, `protocol`, `path`, `cpus`, `memory`, `bandwidth`,
    /// or `env.NAME`.
    pub key: String,
    pub values: Vec<String>,
}

impl Settings {
    /// Applies one axis value (already checked when the file was read).
    pub fn apply(&mut self, key: &str, value: &str) -> Result<(), String> {
        let bad = || format!("[matrix] {key}: bad value {value:?}");
        match key {
            "connections" => {
                self.connections = Some(value.parse().map_err(|_| bad())?);
                self.rate = None;
            }
            "rate" => {
                self.rate = Some(value.parse().map_err(|_| bad())?);
                self.connections = None;
            }
            "keepalive" => self.keepalive = value.parse().map_err(|_| bad())?,
            "protocol" => self.protocol = Protocol::parse(value, key)?,
            "path" => self.paths = vec![value.to_string()],
            "cpus" => self.cpus = Some(value.parse().map_err(|_| bad())?),
            "memory" => self.memory = Some(value.to_string()),
            "bandwidth" => {
                self.bandwidth.both = Some(value.to_string());
                self.bandwidth.up = None;
                self.bandwidth.down = None;
            }
            k if k.starts_with("env.") => {
                self.env.insert(k[4..].to_string(), value.to_string());
            }
            _ => return Err(bad()),
        }
        Ok(())
    }
}
