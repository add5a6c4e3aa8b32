//! Run configuration in two stages: [`RunSpec`] holds what a user typed (strings, options),
//! [`RunSpec::validate`] turns it into a [`RunConfig`] the engine can trust. Every rejection
//! names the flag, what was wrong, and how to fix it. Nothing here does I/O: name resolution
//! happens when the run starts.

use crate::schedule::{Arrival, Profile};
use crate::tls::{TlsSettings, TlsSpec};
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
    /// `--streams`: concurrent HTTP/2 streams per connection.
    pub streams: usize,
    /// Paths (with their queries) sent in rotation on each connection, in order; empty: the
    /// URL's own path only. The URL gives the scheme, host and port.
    pub paths: Vec<String>,
    /// CPUs the worker threads may run on (the server has the others); `None`: anywhere.
    pub generator_cpus: Option<Vec<usize>>,
}

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
            streams: 1,
            paths: Vec::new(),
            generator_cpus: None,
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
    /// HTTP/2 streams per connection (1 for HTTP/1.1).
    pub streams: usize,
    /// The paths sent in rotation on each connection (at least one: the URL's own).
    pub paths: Vec<String>,
    /// CPUs the worker threads pin themselves to; `None`: wherever the process may run.
    pub generator_cpus: Option<Vec<usize>>,
}

impl RunConfig {
    pub fn is_open_loop(&self) -> bool {
        matches!(self.model, Model::Open { .. })
    }

    /// An open loop over plain HTTP/1.1 sleeps from one due time (or tick) to the next,
    /// reading the responses that arrived meanwhile and timing them by the kernel's receive
    /// stamps. Over TLS or HTTP/2 the bytes the kernel stamps are not the response's, so
    /// there responses still wake the thread (and a tick only batches sends).
    pub fn sleeps_between_sends(&self) -> bool {
        self.is_open_loop() && self.tls.is_none() && !self.http2
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

/// A rejected flag. `Display` gives the whole sentence, fix included.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: {message}")]
pub struct ConfigError {
    pub flag: &'static str,
    pub message: String,
}

fn reject(flag: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        flag,
        message: message.into(),
    }
}

/// The default run length when neither `-d` nor `-n` is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// Closed-loop connections when `-c` is not given.
pub const DEFAULT_CONNECTIONS: usize = 50;
/// The open loop's connection cap when `--max-connections` is not given.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

impl RunSpec {
    pub fn validate(&self) -> Result<RunConfig, ConfigError> {
        let url = parse_url(&self.url)?;
        let t = &self.tls;
        let tls_flags = t.insecure
            || t.ca_pem.is_some()
            || t.cert_pem.is_some()
            || t.key_pem.is_some()
            || t.resume.is_some()
            || t.version.is_some();
        if self.streams == 0 {
            return Err(reject("--streams", "must be at least 1; try --streams 10"));
        }
        if self.streams > 1 && !self.http2 {
            return Err(reject(
                "--streams",
                "sets concurrent HTTP/2 streams per connection; add --http2",
            ));
        }
        if self.http2 && !self.keepalive {
            return Err(reject(
                "--no-keepalive",
                "does not apply to HTTP/2, whose point is one long connection; drop it",
            ));
        }
        let tls = if url.https {
            Some(t.build(&url.host, self.http2)?)
        } else if tls_flags {
            return Err(reject(
                "URL",
                format!(
                    "TLS options need an https:// URL; `{}` is plain HTTP",
                    url.original
                ),
            ));
        } else {
            None
        };
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
                "--interval",
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
        let (model, connections, stop) = self.load_model()?;
        let threads = match self.threads {
            Some(0) => {
                return Err(reject(
                    "-t/--threads",
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
                    "--tick",
                    "paces an open loop's sends; add --rate or --stages, or drop --tick",
                ));
            }
            if self.tick > MAX_TICK {
                return Err(reject(
                    "--tick",
                    "must be at most 10ms: every request may wait up to a tick, and that wait \
                     counts in its response time; try --tick 1ms",
                ));
            }
        }
        if self.busy_poll && !matches!(model, Model::Closed { .. }) {
            return Err(reject(
                "--busy-poll",
                "applies to a closed loop (an open loop sleeps between due times); drop it",
            ));
        }
        if self.closed_stages && self.http2 {
            return Err(reject(
                "--http2",
                "cannot stage connections yet; drop --stages --closed",
            ));
        }
        if self.timeout.is_zero() {
            return Err(reject(
                "--timeout",
                "must be longer than 0; try --timeout 20s",
            ));
        }
        if self.connect_timeout.is_zero() {
            return Err(reject(
                "--connect-timeout",
                "must be longer than 0; try --connect-timeout 5s",
            ));
        }
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
            streams: self.streams,
            paths,
            generator_cpus: self.generator_cpus.clone().filter(|c| !c.is_empty()),
        })
    }

    /// Works out the load model, its connection count and when it stops.
    fn load_model(&self) -> Result<(Model, usize, Stop), ConfigError> {
        if self.duration.is_some_and(|d| d.is_zero()) {
            return Err(reject("-d/--duration", "must be longer than 0; try -d 10s"));
        }
        if self.duration.is_some() && self.requests.is_some() {
            return Err(reject(
                "-d/--duration",
                "cannot be combined with -n/--requests; give one of them",
            ));
        }
        if self.requests == Some(0) {
            return Err(reject(
                "-n/--requests",
                "must be at least 1, got 0; try -n 10000",
            ));
        }
        if self.connections == Some(0) {
            return Err(reject(
                "-c/--connections",
                "must be at least 1, got 0; try -c 50",
            ));
        }
        if self.max_connections == Some(0) {
            return Err(reject(
                "--max-connections",
                "must be at least 1, got 0; leave it out for no practical cap",
            ));
        }
        let stages = self
            .stages
            .as_deref()
            .map(Profile::parse)
            .transpose()
            .map_err(|e| reject("--stages", e.0.trim_start_matches("--stages: ").to_string()))?;
        if self.closed_stages && stages.is_none() {
            return Err(reject(
                "--closed",
                "stages connection counts, so it needs --stages, e.g. --stages \"10s:10, 20s:10->100\" --closed",
            ));
        }
        let open = self.rate.is_some() || (stages.is_some() && !self.closed_stages);
        if !open {
            if self.max_connections.is_some() {
                return Err(reject(
                    "--max-connections",
                    "caps an open loop (--rate or --stages); in a closed loop -c sets the connections",
                ));
            }
            if let Some(profile) = stages {
                if self.duration.is_some() || self.requests.is_some() {
                    return Err(reject(
                        "--stages",
                        "already sets how long the run lasts; drop -d/-n",
                    ));
                }
                if self.connections.is_some() {
                    return Err(reject(
                        "-c/--connections",
                        "conflicts with --stages --closed, which sets the connection counts; drop -c",
                    ));
                }
                let most = profile
                    .stages
                    .iter()
                    .map(|s| s.from.max(s.to))
                    .fold(0.0, f64::max)
                    .floor() as usize;
                if most == 0 {
                    return Err(reject(
                        "--stages",
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
                "-n/--requests",
                "counts requests of a closed loop; with --rate, give -d/--duration",
            ));
        }
        if self.connections.is_some() {
            return Err(reject(
                "-c/--connections",
                "sets a closed loop's connections; with --rate, connections open as needed: cap them with --max-connections",
            ));
        }
        let profile = match (self.rate, stages) {
            (Some(_), Some(_)) => {
                return Err(reject(
                    "--rate",
                    "cannot be combined with --stages, which sets the rates; give one of them",
                ))
            }
            (Some(rate), None) => {
                if !(rate.is_finite() && rate > 0.0) {
                    return Err(reject(
                        "--rate",
                        format!("must be more than 0 requests/s, got {rate}; try --rate 1000"),
                    ));
                }
                Profile::constant(rate, self.duration.unwrap_or(DEFAULT_DURATION))
            }
            (None, Some(profile)) => {
                if self.duration.is_some() {
                    return Err(reject(
                        "--stages",
                        "already sets how long the run lasts; drop -d",
                    ));
                }
                if profile.total_arrivals() < 1.0 {
                    return Err(reject(
                        "--stages",
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

fn parse_url(raw: &str) -> Result<TargetUrl, ConfigError> {
    const FLAG: &str = "URL";
    if raw.is_empty() {
        return Err(reject(
            FLAG,
            "missing; give one, e.g. http://127.0.0.1:8080/",
        ));
    }
    let Some((scheme, _)) = raw.split_once("://") else {
        return Err(reject(
            FLAG,
            format!("`{raw}` has no scheme; write it as http://{raw}"),
        ));
    };
    let https = match scheme.to_ascii_lowercase().as_str() {
        "http" => false,
        "https" => true,
        other => {
            return Err(reject(
                FLAG,
                format!("`{raw}`: unsupported scheme `{other}`; use http:// or https://"),
            ))
        }
    };
    let uri: http::Uri = raw
        .parse()
        .map_err(|e| reject(FLAG, format!("`{raw}` is not a valid URL ({e})")))?;
    let host = uri.host().filter(|h| !h.is_empty()).ok_or_else(|| {
        reject(
            FLAG,
            format!("`{raw}` has no host; e.g. http://127.0.0.1:8080/"),
        )
    })?;
    // `http::Uri` keeps IPv6 brackets in `host()`; sockets want them off.
    let bare_host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let default_port = if https { 443 } else { 80 };
    let port = uri.port_u16().unwrap_or(default_port);
    let authority = match uri.port_u16() {
        Some(p) if p != default_port => format!("{host}:{p}"),
        _ => host.to_string(),
    };
    let path_and_query = uri
        .path_and_query()
        .map(|pq| pq.as_str())
        .filter(|pq| !pq.is_empty())
        .unwrap_or("/")
        .to_string();
    Ok(TargetUrl {
        original: raw.to_string(),
        host: bare_host,
        port,
        authority,
        path_and_query,
        https,
    })
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn validate_method(raw: &str) -> Result<String, ConfigError> {
    if !is_token(raw) {
        return Err(reject(
            "-m/--method",
            format!("`{raw}` is not an HTTP method; use e.g. GET, POST, PUT"),
        ));
    }
    Ok(raw.to_string())
}

fn parse_header(raw: &str) -> Result<(String, String), ConfigError> {
    const FLAG: &str = "-H/--header";
    let Some((name, value)) = raw.split_once(':') else {
        return Err(reject(
            FLAG,
            format!("`{raw}` is not `Name: value`; write e.g. -H 'Accept: application/json'"),
        ));
    };
    let name = name.trim();
    if !is_token(name) {
        return Err(reject(
            FLAG,
            format!("`{name}` in `{raw}` is not a valid header name (letters, digits and -); write e.g. -H 'X-Trace: 1'"),
        ));
    }
    let value = value.trim();
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(reject(
            FLAG,
            format!("the value of `{name}` contains a line break or NUL; remove it"),
        ));
    }
    Ok((name.to_string(), value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(url: &str) -> RunSpec {
        RunSpec {
            url: url.into(),
            ..RunSpec::default()
        }
    }

    #[test]
    fn url_parts() {
        let c = spec("http://127.0.0.1:8080/a?b=1").validate().unwrap();
        assert_eq!(c.url.host, "127.0.0.1");
        assert_eq!(c.url.port, 8080);
        assert_eq!(c.url.authority, "127.0.0.1:8080");
        assert_eq!(c.url.path_and_query, "/a?b=1");
        let c = spec("http://example.test").validate().unwrap();
        assert_eq!((c.url.port, c.url.authority.as_str()), (80, "example.test"));
        let c = spec("https://example.test/x").validate().unwrap();
        assert_eq!(
            (c.url.port, c.url.authority.as_str()),
            (443, "example.test")
        );
        assert!(c.tls.is_some());
        assert_eq!(c.url.path_and_query, "/x");
        let c = spec("http://example.test").validate().unwrap();
        assert_eq!(c.url.path_and_query, "/");
        assert!(c.tls.is_none());
        let c = spec("http://[::1]:9000/x").validate().unwrap();
        assert_eq!(
            (c.url.host.as_str(), c.url.authority.as_str()),
            ("::1", "[::1]:9000")
        );
    }

    #[test]
    fn rejections_name_the_flag_and_the_fix() {
        let cases: &[(RunSpec, &str, &str)] = &[
            (spec("localhost:8080/"), "URL", "http://localhost:8080/"),
            (spec("ftp://x/"), "URL", "use http://"),
            (
                RunSpec {
                    tls: TlsSpec {
                        insecure: true,
                        ..TlsSpec::default()
                    },
                    ..spec("http://a/")
                },
                "URL",
                "need an https:// URL",
            ),
            (
                RunSpec {
                    tls: TlsSpec {
                        ca_pem: Some(b"not a pem".to_vec()),
                        ..TlsSpec::default()
                    },
                    ..spec("https://a/")
                },
                "--cacert",
                "no PEM certificate",
            ),
            (
                RunSpec {
                    connections: Some(0),
                    ..spec("http://a/")
                },
                "-c/--connections",
                "-c 50",
            ),
            (
                RunSpec {
                    headers: vec!["NoColon".into()],
                    ..spec("http://a/")
                },
                "-H/--header",
                "Name: value",
            ),
            (
                RunSpec {
                    headers: vec!["Bad Name: x".into()],
                    ..spec("http://a/")
                },
                "-H/--header",
                "not a valid header name",
            ),
            (
                RunSpec {
                    requests: Some(0),
                    ..spec("http://a/")
                },
                "-n/--requests",
                "-n 10000",
            ),
            (
                RunSpec {
                    requests: Some(5),
                    duration: Some(Duration::from_secs(1)),
                    ..spec("http://a/")
                },
                "-d/--duration",
                "one of them",
            ),
            (
                RunSpec {
                    method: "G T".into(),
                    ..spec("http://a/")
                },
                "-m/--method",
                "GET",
            ),
        ];
        for (s, flag, fix) in cases {
            let err = s.validate().unwrap_err();
            assert_eq!(err.flag, *flag, "{err}");
            assert!(err.to_string().contains(fix), "`{err}` lacks `{fix}`");
        }
    }

    #[test]
    fn load_models() {
        let c = spec("http://a/").validate().unwrap();
        assert_eq!(c.model, Model::Closed { stages: None });
        assert_eq!(
            (c.connections, c.stop),
            (50, Stop::Duration(DEFAULT_DURATION))
        );

        let c = RunSpec {
            rate: Some(500.0),
            duration: Some(Duration::from_secs(3)),
            ..spec("http://a/")
        }
        .validate()
        .unwrap();
        assert!(c.is_open_loop());
        assert_eq!(
            (c.connections, c.stop),
            (
                DEFAULT_MAX_CONNECTIONS,
                Stop::Duration(Duration::from_secs(3))
            )
        );

        let c = RunSpec {
            stages: Some("1s:10, 2s:10->40".into()),
            ..spec("http://a/")
        }
        .validate()
        .unwrap();
        assert!(c.is_open_loop());
        assert_eq!(c.stop, Stop::Duration(Duration::from_secs(3)));

        let c = RunSpec {
            stages: Some("1s:2, 2s:2->7.5".into()),
            closed_stages: true,
            ..spec("http://a/")
        }
        .validate()
        .unwrap();
        assert!(matches!(c.model, Model::Closed { stages: Some(_) }));
        assert_eq!(c.connections, 7);
    }

    #[test]
    fn load_model_conflicts_name_the_fix() {
        let cases: &[(RunSpec, &str, &str)] = &[
            (
                RunSpec {
                    rate: Some(0.0),
                    ..spec("http://a/")
                },
                "--rate",
                "--rate 1000",
            ),
            (
                RunSpec {
                    rate: Some(10.0),
                    requests: Some(5),
                    ..spec("http://a/")
                },
                "-n/--requests",
                "-d/--duration",
            ),
            (
                RunSpec {
                    rate: Some(10.0),
                    connections: Some(5),
                    ..spec("http://a/")
                },
                "-c/--connections",
                "--max-connections",
            ),
            (
                RunSpec {
                    rate: Some(10.0),
                    stages: Some("1s:5".into()),
                    ..spec("http://a/")
                },
                "--rate",
                "one of them",
            ),
            (
                RunSpec {
                    stages: Some("1s:5".into()),
                    duration: Some(Duration::from_secs(1)),
                    ..spec("http://a/")
                },
                "--stages",
                "drop -d",
            ),
            (
                RunSpec {
                    stages: Some("1s".into()),
                    ..spec("http://a/")
                },
                "--stages",
                "DURATION:LEVEL",
            ),
            (
                RunSpec {
                    closed_stages: true,
                    ..spec("http://a/")
                },
                "--closed",
                "--stages",
            ),
            (
                RunSpec {
                    max_connections: Some(10),
                    ..spec("http://a/")
                },
                "--max-connections",
                "open loop",
            ),
            (
                RunSpec {
                    interval: Duration::from_millis(250),
                    ..spec("http://a/")
                },
                "--interval",
                "100ms",
            ),
        ];
        for (s, flag, fix) in cases {
            let err = s.validate().unwrap_err();
            assert_eq!(err.flag, *flag, "{err}");
            assert!(err.to_string().contains(fix), "`{err}` lacks `{fix}`");
        }
    }

    #[test]
    fn threads_never_exceed_connections() {
        let c = RunSpec {
            connections: Some(3),
            threads: Some(8),
            ..spec("http://a/")
        }
        .validate()
        .unwrap();
        assert_eq!(c.threads, 3);
    }
}
