//! Experiment files: TOML as people write it ([`RawExperiment`], every field checked by name)
//! becomes a validated [`Experiment`] whose every value the planner can trust. A rejection
//! names the key, what was wrong and how to fix it. No I/O beyond reading the file: targets
//! are checked by the runner, when it verifies them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// A file that cannot become an experiment. `Display` names the key and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct FileError {
    pub file: String,
    pub message: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExperiment {
    name: String,
    #[serde(default)]
    description: String,
    repetitions: Option<usize>,
    seed: Option<u64>,
    cooldown: Option<String>,
    warmup: Option<String>,
    duration: Option<String>,
    /// Start a mock upstream for the targets' `/upstream` endpoint.
    #[serde(default)]
    upstream: bool,
    #[serde(default)]
    load: RawLoad,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    matrix: RawMatrix,
    #[serde(default, rename = "variant")]
    variants: Vec<RawVariant>,
    #[serde(default)]
    compare: RawCompare,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLoad {
    connections: Option<usize>,
    rate: Option<f64>,
    stages: Option<String>,
    threads: Option<usize>,
    keepalive: Option<bool>,
    protocol: Option<String>,
    path: Option<String>,
    paths: Option<Vec<String>>,
    method: Option<String>,
    #[serde(default)]
    headers: Vec<String>,
    body: Option<String>,
    timeout: Option<String>,
    /// A scenario file (docs/scenario-format.md) run in place of path, method, headers, body.
    scenario: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    cpus: Option<f64>,
    memory: Option<String>,
    pin: Option<String>,
    bandwidth: Option<String>,
    bandwidth_up: Option<String>,
    bandwidth_down: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatrix {
    #[serde(default)]
    connections: Vec<usize>,
    #[serde(default)]
    rate: Vec<f64>,
    #[serde(default)]
    keepalive: Vec<bool>,
    #[serde(default)]
    protocol: Vec<String>,
    #[serde(default)]
    path: Vec<String>,
    #[serde(default)]
    cpus: Vec<f64>,
    #[serde(default)]
    memory: Vec<String>,
    #[serde(default)]
    bandwidth: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    name: String,
    target: Option<String>,
    url: Option<String>,
    exec: Option<String>,
    healthz: Option<String>,
    /// The variant's own paths (in rotation), instead of `[load]`'s.
    paths: Option<Vec<String>>,
    /// The variant's own scenario file, instead of `[load]`'s requests.
    scenario: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    limits: Option<RawLimits>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCompare {
    control: Option<String>,
    /// The equivalence margin, as a fraction (0.03: ±3%).
    margin: Option<f64>,
}

/// Where a variant's server comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A lab target, launched (and verified) by loadlab.
    Target(String),
    /// A server already running; loadlab only loads it.
    Url(String),
    /// Any command, launched by loadlab (`$PORT` / `{port}`).
    Exec(String),
}

/// `http1` (plain HTTP/1.1), `https` (HTTP/1.1 over TLS) or `http2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    Http1,
    Https,
    Http2,
}

impl Protocol {
    fn parse(raw: &str, key: &str) -> Result<Protocol, String> {
        match raw {
            "http1" | "http/1.1" => Ok(Protocol::Http1),
            "https" => Ok(Protocol::Https),
            "http2" | "h2" | "h2c" => Ok(Protocol::Http2),
            other => Err(format!(
                "{key}: unknown protocol {other:?}; use http1, https or http2"
            )),
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

    fn from_limits(l: &RawLimits, key: &str) -> Result<Bandwidth, String> {
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    pub name: String,
    pub source: Source,
    /// Paths of this variant's own, in place of the file's.
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// A scenario of this variant's own, in place of the file's requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    pub env: BTreeMap<String, String>,
    pub cpus: Option<f64>,
    pub memory: Option<String>,
    pub pin: Option<String>,
    pub healthz: Option<String>,
    /// The variant's own caps.
    #[serde(default, skip_serializing_if = "Bandwidth::is_empty")]
    pub bandwidth: Bandwidth,
    /// A lab target's recommended warm-up (`warmup_secs` in its manifest), in place of the
    /// file's default, when the file sets no `warmup` of its own (see [`crate::warmup`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_warmup_s: Option<f64>,
}

/// One axis of the matrix: a setting and the values it takes, in the file's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    /// `connections`, `rate`, `keepalive`, `protocol`, `path`, `cpus`, `memory`, `bandwidth`,
    /// or `env.NAME`.
    pub key: String,
    pub values: Vec<String>,
}

/// A validated experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    pub name: String,
    pub description: String,
    pub repetitions: usize,
    pub seed: u64,
    pub cooldown_s: f64,
    pub upstream: bool,
    pub base: Settings,
    pub axes: Vec<Axis>,
    pub variants: Vec<Variant>,
    /// Index of the control variant (the first unless `[compare] control` names another).
    pub control: usize,
    pub margin: f64,
    /// The file (or `--warmup`) set the warm-up: a target's recommended one does not apply.
    /// Not stored: what it decided is in each variant's `target_warmup_s`.
    #[serde(skip)]
    pub warmup_given: bool,
}

/// Runs per arm when the file does not say: enough for 95% confidence with room to spare
/// (4 per arm is the least that can reach it).
pub const DEFAULT_REPETITIONS: usize = 5;

pub fn duration_s(raw: &str, key: &str) -> Result<f64, String> {
    let raw = raw.trim();
    let d = match raw.parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.0 => Duration::from_secs_f64(s),
        _ => humantime::parse_duration(raw)
            .map_err(|_| format!("{key}: {raw:?} is not a duration; write e.g. 10s, 500ms, 2m"))?,
    };
    if d > Duration::from_secs(24 * 3_600) {
        return Err(format!("{key}: {raw:?} is longer than a day; shorten it"));
    }
    Ok(d.as_secs_f64())
}

impl Experiment {
    pub fn load(path: &Path) -> Result<Experiment, FileError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| FileError {
            file: file.clone(),
            message: format!("cannot read it ({e}); check the path"),
        })?;
        let mut experiment =
            Experiment::parse(&text).map_err(|message| FileError { file, message })?;
        // Scenario files are named relative to the experiment file.
        let dir = path.parent().unwrap_or(Path::new("."));
        let resolve = |s: &mut Option<String>| {
            if let Some(p) = s.as_mut().filter(|p| Path::new(p.as_str()).is_relative()) {
                *p = dir.join(&*p).display().to_string();
            }
        };
        resolve(&mut experiment.base.scenario);
        for v in &mut experiment.variants {
            resolve(&mut v.scenario);
        }
        Ok(experiment)
    }

    pub fn parse(text: &str) -> Result<Experiment, String> {
        let raw: RawExperiment = toml::from_str(text).map_err(|e| e.to_string())?;
        raw.validate()
    }
}

impl RawExperiment {
    fn validate(self) -> Result<Experiment, String> {
        if self.name.trim().is_empty() || self.name.contains(':') {
            return Err(format!(
                "name {:?}: give the experiment a non-empty name without ':' (runs are named \
                 NAME:variant)",
                self.name
            ));
        }
        let repetitions = self.repetitions.unwrap_or(DEFAULT_REPETITIONS);
        if repetitions == 0 || repetitions > 1_000 {
            return Err(format!(
                "repetitions = {repetitions}: must be between 1 and 1000 (5 is a good start)"
            ));
        }
        let l = &self.load;
        if l.path.is_some() && l.paths.is_some() {
            return Err("[load]: give path or paths, not both".into());
        }
        let paths = match (&l.path, &l.paths) {
            (Some(p), _) => vec![p.clone()],
            (None, Some(ps)) if !ps.is_empty() => ps.clone(),
            (None, Some(_)) => return Err("[load] paths: give at least one path".into()),
            (None, None) => vec!["/".to_string()],
        };
        for p in &paths {
            if !p.starts_with('/') {
                return Err(format!("[load] path {p:?}: must start with /"));
            }
        }
        if l.rate.is_some() && l.connections.is_some() {
            return Err(
                "[load]: rate (an open loop) and connections (a closed loop) exclude each other; \
                 keep one"
                    .into(),
            );
        }
        let base = Settings {
            connections: l.connections,
            rate: l.rate,
            stages: l.stages.clone(),
            threads: l.threads,
            keepalive: l.keepalive.unwrap_or(true),
            protocol: match &l.protocol {
                Some(p) => Protocol::parse(p, "[load] protocol")?,
                None => Protocol::Http1,
            },
            paths,
            method: l.method.clone().unwrap_or_else(|| "GET".into()),
            headers: l.headers.clone(),
            body: l.body.clone().unwrap_or_default(),
            timeout_s: duration_s(l.timeout.as_deref().unwrap_or("20s"), "[load] timeout")?,
            warmup_s: duration_s(self.warmup.as_deref().unwrap_or("2s"), "warmup")?,
            duration_s: duration_s(self.duration.as_deref().unwrap_or("10s"), "duration")?,
            cpus: self.limits.cpus,
            memory: self.limits.memory.clone(),
            pin: self.limits.pin.clone(),
            env: self.env.clone(),
            healthz: "/healthz".into(),
            bandwidth: Bandwidth::from_limits(&self.limits, "[limits]")?,
            scenario: l.scenario.clone(),
        };
        if l.scenario.is_some()
            && (l.path.is_some()
                || l.paths.is_some()
                || l.method.is_some()
                || !l.headers.is_empty()
                || l.body.is_some())
        {
            return Err(
                "[load] scenario: the scenario sets every request; drop path, paths, method, \
                 headers and body (headers for every step go in the scenario's [defaults])"
                    .into(),
            );
        }
        if base.duration_s <= 0.0 {
            return Err("duration: must be longer than 0; try duration = \"10s\"".into());
        }
        let axes = self.matrix.axes()?;
        if self.variants.is_empty() {
            return Err(
                "no [[variant]]: name at least one (two to compare), each with target, url or exec"
                    .into(),
            );
        }
        let mut variants = Vec::new();
        for v in &self.variants {
            if v.name.trim().is_empty()
                || v.name.contains(':')
                || v.name.contains(char::is_whitespace)
            {
                return Err(format!(
                    "[[variant]] name {:?}: use a short name without spaces or ':'",
                    v.name
                ));
            }
            if variants.iter().any(|x: &Variant| x.name == v.name) {
                return Err(format!("[[variant]] name {:?} appears twice", v.name));
            }
            let source = match (&v.target, &v.url, &v.exec) {
                (Some(t), None, None) => Source::Target(t.clone()),
                (None, Some(u), None) => {
                    if !(u.starts_with("http://") || u.starts_with("https://")) {
                        return Err(format!(
                            "[[variant]] {}: url {u:?} must start with http:// or https://",
                            v.name
                        ));
                    }
                    Source::Url(u.trim_end_matches('/').to_string())
                }
                (None, None, Some(e)) => Source::Exec(e.clone()),
                _ => {
                    return Err(format!(
                        "[[variant]] {}: give exactly one of target (a lab target), url (a \
                         running server) or exec (a command loadlab starts)",
                        v.name
                    ))
                }
            };
            let limits = v.limits.clone().unwrap_or_default();
            let bandwidth =
                Bandwidth::from_limits(&limits, &format!("[[variant]] {} limits", v.name))?;
            let capped = !bandwidth.is_empty()
                || !base.bandwidth.is_empty()
                || !self.matrix.bandwidth.is_empty();
            if capped && matches!(source, Source::Url(_)) {
                return Err(format!(
                    "[[variant]] {}: a bandwidth cap needs a server loadlab starts (target or \
                     exec), which it runs in a network namespace behind the capped link; a url \
                     cannot be moved there",
                    v.name
                ));
            }
            if let Some(paths) = &v.paths {
                if paths.is_empty() || paths.iter().any(|p| !p.starts_with('/')) {
                    return Err(format!(
                        "[[variant]] {}: paths must be a non-empty list of paths starting with /",
                        v.name
                    ));
                }
            }
            if v.scenario.is_some() && v.paths.is_some() {
                return Err(format!(
                    "[[variant]] {}: give paths or scenario, not both",
                    v.name
                ));
            }
            variants.push(Variant {
                name: v.name.clone(),
                source,
                paths: v.paths.clone(),
                scenario: v.scenario.clone(),
                env: v.env.clone(),
                cpus: limits.cpus,
                memory: limits.memory,
                pin: limits.pin,
                healthz: v.healthz.clone(),
                bandwidth,
                target_warmup_s: None,
            });
        }
        let control = match &self.compare.control {
            Some(name) => variants
                .iter()
                .position(|v| &v.name == name)
                .ok_or_else(|| {
                    format!("[compare] control = {name:?}: no [[variant]] has that name")
                })?,
            None => 0,
        };
        let margin = self.compare.margin.unwrap_or(0.03);
        if !(0.0..0.5).contains(&margin) {
            return Err(format!(
                "[compare] margin = {margin}: a fraction below 0.5, e.g. 0.03 for ±3%"
            ));
        }
        Ok(Experiment {
            name: self.name,
            description: self.description,
            repetitions,
            seed: self.seed.unwrap_or(1),
            cooldown_s: duration_s(self.cooldown.as_deref().unwrap_or("1s"), "cooldown")?,
            upstream: self.upstream,
            base,
            axes,
            variants,
            control,
            margin,
            warmup_given: self.warmup.is_some(),
        })
    }
}

fn strings<T: ToString>(values: &[T]) -> Vec<String> {
    values.iter().map(ToString::to_string).collect()
}

impl RawMatrix {
    fn axes(&self) -> Result<Vec<Axis>, String> {
        let mut axes = Vec::new();
        let mut push = |key: &str, values: Vec<String>| {
            if !values.is_empty() {
                axes.push(Axis {
                    key: key.to_string(),
                    values,
                });
            }
        };
        push("connections", strings(&self.connections));
        push("rate", strings(&self.rate));
        push("keepalive", strings(&self.keepalive));
        for p in &self.protocol {
            Protocol::parse(p, "[matrix] protocol")?;
        }
        push("protocol", self.protocol.clone());
        push("path", self.path.clone());
        push("cpus", strings(&self.cpus));
        push("memory", self.memory.clone());
        for b in &self.bandwidth {
            loadlab_machine::Rate::parse(b).map_err(|e| format!("[matrix] bandwidth: {e}"))?;
        }
        push("bandwidth", self.bandwidth.clone());
        for (name, values) in &self.env {
            push(&format!("env.{name}"), values.clone());
        }
        if !self.connections.is_empty() && !self.rate.is_empty() {
            return Err("[matrix]: connections and rate exclude each other; keep one".into());
        }
        Ok(axes)
    }
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
