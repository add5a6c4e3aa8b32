//! From the file as written ([`super::raw`]) to a validated [`Experiment`]: every value
//! checked, every rejection naming the key, what was wrong and the fix.

use super::duration_s;
use super::raw::{RawExperiment, RawMatrix};
use super::{
    Axis, Bandwidth, Experiment, Protocol, Settings, Source, Variant, DEFAULT_REPETITIONS,
};

impl RawExperiment {
    pub(super) fn validate(self) -> Result<Experiment, String> {
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
            http3_0rtt: l.http3_0rtt.unwrap_or(false),
            streams: l.streams,
            pipeline: l.pipeline,
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
            ws: ws_settings(l)?,
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
        let protocols = protocols(base.protocol, &axes);
        if let Some(streams) = base.streams {
            if streams == 0 {
                return Err("[load] streams = 0: must be at least 1; try streams = 10".into());
            }
            if !protocols.iter().any(|p| p.multiplexed()) {
                return Err(
                    "[load] streams: concurrent streams are HTTP/2's and HTTP/3's; set [load] \
                     protocol = \"http2\" or \"http3\", or drop streams"
                        .into(),
                );
            }
        }
        if let Some(depth) = base.pipeline {
            if depth == 0 {
                return Err("[load] pipeline = 0: must be at least 1; try pipeline = 16".into());
            }
            if !protocols.iter().any(|p| !p.multiplexed()) {
                return Err(
                    "[load] pipeline: pipelining is HTTP/1.1's (HTTP/2 and HTTP/3 carry requests on \
                     concurrent streams: give [load] streams instead); set [load] protocol = \
                     \"http1\" or \"https\", or drop pipeline"
                        .into(),
                );
            }
        }
        if base.http3_0rtt && !protocols.contains(&Protocol::Http3) {
            return Err(
                "[load] http3_0rtt: 0-RTT is HTTP/3's; set [load] protocol = \"http3\" (or put \
                 \"http3\" in [matrix] protocol), or drop http3_0rtt"
                    .into(),
            );
        }
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
                (Some(t), None, None) if base.ws.is_some() => {
                    return Err(format!(
                        "[[variant]] {}: [load] ws_* set a WebSocket load, which goes to a running \
                         server's ws:// or wss:// url; lab targets serve HTTP: give url instead of \
                         target {t:?}",
                        v.name
                    ))
                }
                (Some(t), None, None) => Source::Target(t.clone()),
                (None, Some(u), None) => {
                    let websocket = u.starts_with("ws://") || u.starts_with("wss://");
                    if !(u.starts_with("http://") || u.starts_with("https://") || websocket) {
                        return Err(format!(
                            "[[variant]] {}: url {u:?} must start with http://, https://, ws:// \
                             or wss://",
                            v.name
                        ));
                    }
                    if base.ws.is_some() && !websocket {
                        return Err(format!(
                            "[[variant]] {}: [load] ws_* set a WebSocket load, which needs a \
                             ws:// or wss:// url, not {u:?}",
                            v.name
                        ));
                    }
                    Source::Url(u.trim_end_matches('/').to_string())
                }
                (None, None, Some(e)) if base.ws.is_some() => {
                    return Err(format!(
                        "[[variant]] {}: [load] ws_* set a WebSocket load, which goes to a running \
                         server's ws:// or wss:// url; give url instead of exec",
                        v.name
                    ))
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
            for p in protocols.iter().filter(|p| p.encrypted()) {
                check_encrypted(&v.name, &source, *p)?;
            }
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
            let agent = self
                .server
                .with(v.server.as_ref())
                .resolve(&format!("[[variant]] {} server", v.name))?;
            if agent.is_some() && capped {
                return Err(format!(
                    "[[variant]] {}: a bandwidth cap shapes a link on this machine; with an agent \
                     the server is on another host: drop the cap",
                    v.name
                ));
            }
            if agent.is_some() && self.upstream {
                return Err(format!(
                    "[[variant]] {}: upstream = true starts the mock upstream on this machine's \
                     loopback, which the agent's host cannot reach; run `loadlab upstream` where \
                     it can, and give the target's env UPSTREAM_URL",
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
                agent,
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
        self.metrics.check()?;
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
            metrics: self.metrics,
            generators: self.load.generators.clone(),
            cacert: self.load.cacert.clone(),
        })
    }
}

/// Every protocol some arm speaks: the `[load]` one unless `[matrix] protocol` replaces it
/// (values checked when the axes were read).
pub(super) fn protocols(base: Protocol, axes: &[Axis]) -> Vec<Protocol> {
    match axes.iter().find(|a| a.key == "protocol") {
        Some(axis) => axis
            .values
            .iter()
            .filter_map(|v| Protocol::parse(v, "[matrix] protocol").ok())
            .collect(),
        None => vec![base],
    }
}

/// A protocol that only speaks over TLS (`https`, `http3`) needs a variant that serves it. A
/// server loadlab starts (a lab target, an exec command) is given a throwaway certificate for
/// the run (`TLS_CERT`, `TLS_KEY`), so it can; a URL must already be `https://`.
fn check_encrypted(variant: &str, source: &Source, protocol: Protocol) -> Result<(), String> {
    let why = match protocol {
        Protocol::Http3 => "protocol http3 is QUIC, which is always encrypted (TLS 1.3)",
        _ => "protocol https is HTTP/1.1 over TLS",
    };
    match source {
        Source::Url(url) if !url.starts_with("https://") => Err(format!(
            "[[variant]] {variant}: {why}, but its url {url:?} is plain http: give the server's \
             https:// URL (and [load] cacert = \"ca.pem\" when a private CA signed its \
             certificate), or use protocol http1 or http2"
        )),
        _ => Ok(()),
    }
}

fn strings<T: ToString>(values: &[T]) -> Vec<String> {
    values.iter().map(ToString::to_string).collect()
}

impl RawMatrix {
    pub(super) fn axes(&self) -> Result<Vec<Axis>, String> {
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

/// `[load] ws_*` checked: the mode's name and the ping's duration; `None` when none is set.
fn ws_settings(l: &super::raw::RawLoad) -> Result<Option<super::WsSettings>, String> {
    if l.ws_mode.is_none()
        && l.ws_binary.is_none()
        && l.ws_size.is_none()
        && l.ws_ping.is_none()
        && l.ws_held.is_none()
        && l.ws_no_deflate.is_none()
    {
        return Ok(None);
    }
    let mode = l.ws_mode.clone().unwrap_or_else(|| "echo".into());
    if !["echo", "hold", "connect"].contains(&mode.as_str()) {
        return Err(format!(
            "[load] ws_mode {mode:?}: use \"echo\", \"hold\" or \"connect\""
        ));
    }
    let ping_s = match &l.ws_ping {
        Some(raw) => Some(duration_s(raw, "[load] ws_ping")?),
        None => None,
    };
    Ok(Some(super::WsSettings {
        mode,
        binary: l.ws_binary.unwrap_or(false),
        size: l.ws_size,
        ping_s,
        held: l.ws_held,
        no_deflate: l.ws_no_deflate.unwrap_or(false),
    }))
}
