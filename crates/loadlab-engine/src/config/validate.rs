//! From a [`RunSpec`] to a [`RunConfig`]: every check, each rejection naming the setting
//! and the fix. The request's parts (URL, method, headers) are checked in `request`.

use super::request::{parse_header, parse_url, validate_method};
use super::*;

/// The longest duration any setting takes: a week.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 86_400);
/// The most connections one loadlab opens (each needs a descriptor and a port).
pub const MAX_CONNECTIONS: usize = 1_000_000;
/// The highest arrival rate one loadlab schedules: no machine sends more (this one sends
/// tens of thousands); beyond it the schedule itself would be the bottleneck.
pub const MAX_RATE: f64 = 10_000_000.0;

impl RunSpec {
    pub fn validate(&self) -> Result<RunConfig, ConfigError> {
        self.check_pipeline()?;
        let (http_url, websocket) = super::ws::as_http(&self.effective_url());
        if websocket && self.grpc.is_some() {
            return Err(reject(
                "grpc",
                "gRPC is not a WebSocket load; drop --grpc, or give an http:// URL",
            ));
        }
        if let Some(call) = &self.grpc {
            let mut config = self.as_grpc_http2(call)?.validate()?;
            config.grpc = Some(call.clone());
            return Ok(config);
        }
        if let Some(scenario) = self.scenario.as_ref().filter(|s| s.has_ws()) {
            // A WebSocket step opens a WebSocket of its own: an HTTP/1.1 connection upgraded,
            // or with --http2 a stream by RFC 8441; over HTTP/3 (RFC 9220) loadlab has none.
            let why = match (self.http3, scenario.has_grpc()) {
                (_, true) => {
                    Some("gRPC steps, which go over HTTP/2; put them in a scenario of their own")
                }
                (true, _) => Some("--http3; drop it"),
                _ => None,
            };
            if let Some(why) = why {
                return Err(reject(
                    "scenario",
                    format!(
                        "scenario {} has WebSocket steps, which open WebSockets over HTTP/1.1 \
                         (RFC 6455) or, with --http2, HTTP/2 (RFC 8441), and cannot be \
                         combined with {why}",
                        scenario.name
                    ),
                ));
            }
        }
        if let Some(scenario) = self.scenario.as_ref().filter(|s| s.has_grpc()) {
            // A gRPC step is a stream on the user's HTTP/2 connection: the whole scenario
            // goes over HTTP/2, as with --http2.
            if self.http3 {
                return Err(reject(
                    "http3",
                    format!(
                        "scenario {} has gRPC steps, which go over HTTP/2; drop --http3",
                        scenario.name
                    ),
                ));
            }
            if !self.http2 {
                return RunSpec {
                    http2: true,
                    ..self.clone()
                }
                .validate();
            }
        }
        let url = TargetUrl {
            original: self.effective_url(),
            ..parse_url(&http_url)?
        };
        let t = &self.tls;
        let tls_flags = t.insecure
            || t.ca_pem.is_some()
            || t.cert_pem.is_some()
            || t.key_pem.is_some()
            || t.resume.is_some()
            || t.version.is_some();
        if self.streams == 0 {
            return Err(reject("streams", "must be at least 1; try --streams 10"));
        }
        // Each stream is a request under way, as each connection is: the same bound.
        let concurrent = self.streams.saturating_mul(self.connections.unwrap_or(1));
        if concurrent > MAX_CONNECTIONS {
            let what = match self.connections {
                Some(c) if c > 1 => format!(
                    "{c} connections x {} streams is {concurrent} requests at once",
                    self.streams
                ),
                _ => format!("{} streams on a connection", self.streams),
            };
            return Err(reject(
                "streams",
                format!(
                    "{what}, more than one loadlab carries ({MAX_CONNECTIONS}); servers allow \
                     100 to 1,000 streams at once on a connection (HTTP/2's \
                     SETTINGS_MAX_CONCURRENT_STREAMS, QUIC's stream limit): give fewer, with \
                     more connections (-c), or run several loadlab processes (shards)"
                ),
            ));
        }
        if self.streams > 1 && !self.http2 && !self.http3 {
            return Err(reject(
                "streams",
                "sets concurrent HTTP/2 streams per connection; add --http2",
            ));
        }
        self.check_http3(&url)?;
        if self.http2 && !self.keepalive {
            return Err(reject(
                "keepalive",
                "does not apply to HTTP/2, whose point is one long connection; drop it (for a \
                 new connection per request, give --new-connection-share 1)",
            ));
        }
        let tls = if url.https {
            Some(t.build(&url.host, self.http2)?)
        } else if tls_flags {
            return Err(reject(
                "url",
                format!(
                    "TLS options need an https:// URL; `{}` is plain HTTP",
                    url.original
                ),
            ));
        } else {
            None
        };
        if let (true, Some(tls)) = (self.http3, &tls) {
            crate::engine::h3::client_config(tls, self.http3_0rtt)
                .map_err(|m| reject("http3", m))?;
        }
        let method = validate_method(&self.method)?;
        let headers = self
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<Vec<_>, _>>()?;
        if self.interval < Duration::from_millis(100)
            || !self.interval.as_millis().is_multiple_of(100)
            || !self.interval.subsec_nanos().is_multiple_of(1_000_000)
        {
            return Err(reject(
                "interval",
                "must be a whole multiple of 100ms; try --interval 1s",
            ));
        }
        let paths = if self.paths.is_empty() {
            vec![url.path_and_query.clone()]
        } else {
            for path in &self.paths {
                if !path.starts_with('/') || path.bytes().any(|b| b <= b' ' || b == 0x7f) {
                    return Err(reject(
                        "paths",
                        format!(
                            "{path:?} is not a path: each must start with / and hold no spaces \
                             or control characters (percent-encode them)"
                        ),
                    ));
                }
            }
            self.paths.clone()
        };
        let (model, whole_connections, whole_stop) = self.load_model()?;
        let (connections, stop) = self.shard_share(&model, whole_connections, whole_stop)?;
        let threads = match self.threads {
            Some(0) => {
                return Err(reject(
                    "threads",
                    "must be at least 1, got 0; leave it out to use one thread per core",
                ))
            }
            Some(t) => t,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
        // A thread without a connection would only burn a core.
        .min(connections);
        if !self.tick.is_zero() {
            if matches!(model, Model::Closed { .. }) {
                return Err(reject(
                    "tick",
                    "paces an open loop's sends; add --rate or --stages, or drop --tick",
                ));
            }
            if self.tick > MAX_TICK {
                return Err(reject(
                    "tick",
                    "must be at most 10ms: every request may wait up to a tick, and that wait \
                     counts in its response time; try --tick 1ms",
                ));
            }
        }
        if self.busy_poll && !matches!(model, Model::Closed { .. }) {
            return Err(reject(
                "busy_poll",
                "applies to a closed loop (an open loop sleeps between due times); drop it",
            ));
        }
        if self.closed_stages && self.http2 {
            return Err(reject(
                "http2",
                "cannot stage connections yet; drop --stages --closed",
            ));
        }
        if self.timeout.is_zero() {
            return Err(reject(
                "timeout",
                "must be longer than 0; try --timeout 20s",
            ));
        }
        if self.connect_timeout.is_zero() {
            return Err(reject(
                "connect_timeout",
                "must be longer than 0; try --connect-timeout 5s",
            ));
        }
        let scenario = self.scenario_run(&model, whole_connections)?;
        let ws = self.check_ws(&url, websocket, &model, whole_stop)?;
        Ok(RunConfig {
            url,
            method,
            headers,
            body: self.body.clone(),
            model,
            connections,
            threads,
            stop,
            timeout: self.timeout,
            connect_timeout: self.connect_timeout,
            warmup: self.warmup,
            keepalive: self.keepalive,
            interval: self.interval,
            tick: self.tick,
            busy_poll: self.busy_poll,
            busy_poll_why: None,
            pm_qos: self.pm_qos,
            tls,
            http2: self.http2,
            http3: self.http3,
            http3_0rtt: self.http3_0rtt,
            streams: self.streams,
            pipeline: self.pipeline,
            paths,
            generator_cpus: self.generator_cpus.clone().filter(|c| !c.is_empty()),
            shard: None,
            scenario,
            give_up_after: self.give_up_after,
            grpc: None,
            ws,
        }
        .with_shard(self, whole_connections, whole_stop))
    }

    /// `--http3`: over https, alone (not with --http2), not staged; TLS 1.3 (the QUIC client
    /// configuration is built here once, so a run never starts without it). Without
    /// keep-alive, a closed loop only (each connection carries one request a stream).
    /// `--http3-0rtt`: with `--http3`, and sessions resumed.
    fn check_http3(&self, url: &TargetUrl) -> Result<(), ConfigError> {
        if self.http3_0rtt && !self.http3 {
            return Err(reject(
                "http3_0rtt",
                "sends HTTP/3 requests as 0-RTT early data: add --http3",
            ));
        }
        if !self.http3 {
            return Ok(());
        }
        if self.http2 {
            return Err(reject(
                "http3",
                "and --http2 each choose the protocol; give one of them",
            ));
        }
        if !url.https {
            return Err(reject(
                "http3",
                format!(
                    "runs over QUIC, which is always encrypted: give an https:// URL, not `{}`",
                    url.original
                ),
            ));
        }
        if !self.keepalive && (self.rate.is_some() || self.stages.is_some()) {
            return Err(reject(
                "keepalive",
                "over HTTP/3 applies to a closed loop (each connection carries one request a \
                 stream, then closes); drop --no-keepalive or --rate/--stages",
            ));
        }
        if self.closed_stages {
            return Err(reject(
                "http3",
                "cannot stage connections yet; drop --stages --closed",
            ));
        }
        if self.tls.version == Some(crate::tls::TlsVersion::V1_2) {
            return Err(reject(
                "tls.version",
                "QUIC carries only TLS 1.3: drop --tls-version 1.2 for --http3",
            ));
        }
        if self.http3_0rtt && self.tls.resume == Some(false) {
            return Err(reject(
                "http3_0rtt",
                "resumes an earlier session to send early data: drop --tls-resume off",
            ));
        }
        Ok(())
    }

    /// Durations beyond [`MAX_DURATION`] are refused by name (they would overflow the
    /// clock's arithmetic long before they made sense).
    fn check_durations(&self) -> Result<(), ConfigError> {
        let all = [
            ("duration", self.duration),
            ("warmup", Some(self.warmup)),
            ("timeout", Some(self.timeout)),
            ("connect_timeout", Some(self.connect_timeout)),
            ("interval", Some(self.interval)),
            ("pace", self.pace),
        ];
        for (flag, d) in all {
            if d.is_some_and(|d| d > MAX_DURATION) {
                return Err(reject(
                    flag,
                    format!(
                        "{} is longer than loadlab allows ({} days); give a shorter one",
                        humantime::format_duration(d.unwrap_or_default()),
                        MAX_DURATION.as_secs() / 86_400
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Works out the load model, its connection count and when it stops.
    fn load_model(&self) -> Result<(Model, usize, Stop), ConfigError> {
        self.check_durations()?;
        for (flag, n) in [
            ("-c/--connections", self.connections),
            ("--max-connections", self.max_connections),
        ] {
            if n.is_some_and(|n| n > MAX_CONNECTIONS) {
                return Err(reject(
                    flag,
                    format!(
                        "{} connections is more than one loadlab opens ({MAX_CONNECTIONS}); run \
                         several loadlab processes (shards) for more",
                        n.unwrap_or_default()
                    ),
                ));
            }
        }
        if self.duration.is_some_and(|d| d.is_zero()) {
            return Err(reject("duration", "must be longer than 0; try -d 10s"));
        }
        if self.duration.is_some() && self.requests.is_some() {
            return Err(reject(
                "duration",
                "cannot be combined with -n/--requests; give one of them",
            ));
        }
        if self.requests == Some(0) {
            return Err(reject(
                "requests",
                "must be at least 1, got 0; try -n 10000",
            ));
        }
        if self.connections == Some(0) {
            return Err(reject(
                "connections",
                "must be at least 1, got 0; try -c 50",
            ));
        }
        if self.max_connections == Some(0) {
            return Err(reject(
                "max_connections",
                "must be at least 1, got 0; leave it out for no practical cap",
            ));
        }
        let stages = self
            .stages
            .as_deref()
            .map(Profile::parse)
            .transpose()
            .map_err(|e| reject("stages", e.0.trim_start_matches("--stages: ").to_string()))?;
        if self.closed_stages && stages.is_none() {
            return Err(reject(
                "closed_stages",
                "stages connection counts, so it needs --stages, e.g. --stages \"10s:10, 20s:10->100\" --closed",
            ));
        }
        let open = self.rate.is_some() || (stages.is_some() && !self.closed_stages);
        if !open {
            if self.max_connections.is_some() {
                return Err(reject(
                    "max_connections",
                    "caps an open loop (--rate or --stages); in a closed loop -c sets the connections",
                ));
            }
            if let Some(profile) = stages {
                if self.duration.is_some() || self.requests.is_some() {
                    return Err(reject(
                        "stages",
                        "already sets how long the run lasts; drop -d/-n",
                    ));
                }
                if self.connections.is_some() {
                    return Err(reject(
                        "connections",
                        "conflicts with --stages --closed, which sets the connection counts; drop -c",
                    ));
                }
                if let Some(s) = profile
                    .stages
                    .iter()
                    .find(|s| s.from.fract() != 0.0 || s.to.fract() != 0.0)
                {
                    return Err(reject(
                        "stages",
                        format!(
                            "with --closed, the levels are connection counts: {} is not a whole \
                             number",
                            if s.from.fract() != 0.0 { s.from } else { s.to }
                        ),
                    ));
                }
                let most = profile
                    .stages
                    .iter()
                    .map(|s| s.from.max(s.to))
                    .fold(0.0, f64::max);
                if most > MAX_CONNECTIONS as f64 {
                    return Err(reject(
                        "stages",
                        format!(
                            "{most} connections is more than one loadlab opens \
                             ({MAX_CONNECTIONS}); run several loadlab processes (shards) for more"
                        ),
                    ));
                }
                let most = most as usize;
                if most == 0 {
                    return Err(reject(
                        "stages",
                        "with --closed, the levels are connection counts: at least one must be 1 or more",
                    ));
                }
                let stop = Stop::Duration(profile.duration());
                return Ok((
                    Model::Closed {
                        stages: Some(profile),
                    },
                    most,
                    stop,
                ));
            }
            let stop = match (self.duration, self.requests) {
                (Some(d), _) => Stop::Duration(d),
                (_, Some(n)) => Stop::Requests(n),
                _ => Stop::Duration(DEFAULT_DURATION),
            };
            let connections = self.connections.unwrap_or(DEFAULT_CONNECTIONS);
            return Ok((Model::Closed { stages: None }, connections, stop));
        }
        // Open loop.
        if self.requests.is_some() {
            return Err(reject(
                "requests",
                "counts requests of a closed loop; with --rate, give -d/--duration",
            ));
        }
        if self.connections.is_some() {
            return Err(reject(
                "connections",
                "sets a closed loop's connections; with --rate, connections open as needed: cap them with --max-connections",
            ));
        }
        let profile = match (self.rate, stages) {
            (Some(_), Some(_)) => {
                return Err(reject(
                    "rate",
                    "cannot be combined with --stages, which sets the rates; give one of them",
                ))
            }
            (Some(rate), None) => {
                if !(rate.is_finite() && rate > 0.0) {
                    return Err(reject(
                        "rate",
                        format!("must be more than 0 requests/s, got {rate}; try --rate 1000"),
                    ));
                }
                if rate > MAX_RATE {
                    return Err(reject(
                        "rate",
                        format!(
                            "{rate} requests/s is more than one machine can send (loadlab's \
                             limit is {MAX_RATE}/s); split the load across shards"
                        ),
                    ));
                }
                Profile::constant(rate, self.duration.unwrap_or(DEFAULT_DURATION))
            }
            (None, Some(profile)) => {
                if let Some(s) = profile.stages.iter().find(|s| s.from.max(s.to) > MAX_RATE) {
                    return Err(reject(
                        "stages",
                        format!(
                            "{} requests/s is more than one machine can send (loadlab's limit is \
                             {MAX_RATE}/s); split the load across shards",
                            s.from.max(s.to)
                        ),
                    ));
                }
                if self.duration.is_some() {
                    return Err(reject(
                        "stages",
                        "already sets how long the run lasts; drop -d",
                    ));
                }
                if profile.total_arrivals() < 1.0 {
                    return Err(reject(
                        "stages",
                        "asks for no request at all; give a rate above 0 in some stage",
                    ));
                }
                profile
            }
            (None, None) => unreachable!("open only with a rate or stages"),
        };
        let stop = Stop::Duration(profile.duration());
        let cap = self.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS);
        Ok((
            Model::Open {
                profile,
                arrival: self.arrival,
            },
            cap,
            stop,
        ))
    }
}
