//! Run configuration in two stages: [`RunSpec`] holds what a user typed (strings, options),
//! [`RunSpec::validate`] turns it into a [`RunConfig`] the engine can trust. Every rejection
//! names the flag, what was wrong, and how to fix it. Nothing here does I/O: name resolution
//! happens when the run starts.
//!
//! - this module: the types ([`RunSpec`], [`RunConfig`], [`ConfigError`]);
//! - `validate`: the checks, from a spec to a config;
//! - `request`: the URL, the method and the headers.

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

mod request;
mod validate;

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
            stages: Some("1s:2, 2s:2->8".into()),
            closed_stages: true,
            ..spec("http://a/")
        }
        .validate()
        .unwrap();
        assert!(matches!(c.model, Model::Closed { stages: Some(_) }));
        assert_eq!(c.connections, 8);
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

    /// Hostile input from issue 15: each is refused up front, naming the flag.
    #[test]
    fn out_of_range_values_are_refused_by_name() {
        let base = || spec("http://127.0.0.1:8080/");
        let cases: Vec<(RunSpec, &str)> = vec![
            (spec("http://127.0.0.1:99999/"), "invalid port"),
            (spec("http://127.0.0.1:abc/"), "invalid port"),
            (spec("http://127.0.0.1:-1/"), "invalid port"),
            (spec("http://127.0.0.1:80x/"), "invalid port"),
            (spec("http://127.0.0.1:65616/"), "invalid port"),
            (spec("http://127.0.0.1:/"), "invalid port"),
            (spec("http://127.0.0.1:0/"), "invalid port"),
            (spec("http://[::1]:0/"), "invalid port"),
            (spec("http://user:pass@127.0.0.1:8080/"), "credentials"),
            (
                RunSpec {
                    rate: Some(1e12),
                    ..base()
                },
                "--rate",
            ),
            (
                RunSpec {
                    rate: Some(1e9),
                    ..base()
                },
                "more than one machine",
            ),
            (
                RunSpec {
                    stages: Some("1s:1e12".into()),
                    ..base()
                },
                "--stages",
            ),
            (
                RunSpec {
                    connections: Some(4_294_967_296),
                    ..base()
                },
                "-c/--connections",
            ),
            (
                RunSpec {
                    stages: Some("1s:4294967296".into()),
                    closed_stages: true,
                    ..base()
                },
                "more than one loadlab opens",
            ),
            (
                RunSpec {
                    stages: Some("1s:2.5".into()),
                    closed_stages: true,
                    ..base()
                },
                "not a whole number",
            ),
            (
                RunSpec {
                    duration: Some(Duration::from_secs(u64::MAX)),
                    ..base()
                },
                "-d/--duration",
            ),
            (
                RunSpec {
                    warmup: Duration::from_secs(u64::MAX),
                    ..base()
                },
                "--warmup",
            ),
            (
                RunSpec {
                    timeout: Duration::from_secs(u64::MAX),
                    ..base()
                },
                "--timeout",
            ),
            (
                RunSpec {
                    interval: Duration::from_secs(u64::MAX),
                    ..base()
                },
                "--interval",
            ),
        ];
        for (spec, needle) in cases {
            let url = spec.url.clone();
            let err = spec.validate().expect_err(&url).to_string();
            assert!(err.contains(needle), "{url}: {err}");
        }
        // Good ports still pass, with and without brackets.
        for ok in ["http://127.0.0.1:1/", "http://[::1]:65535/x", "http://h/"] {
            spec(ok).validate().unwrap();
        }
    }
}
