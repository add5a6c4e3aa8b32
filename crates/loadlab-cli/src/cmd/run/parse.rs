//! Flag values into settings: the value parsers shared by every command (`count`,
//! `parse_duration`, `rate`, `share`), the request's spec, the session spec of `loadlab run`,
//! and engine settings named by their flags in errors. Nothing here starts a run.

use super::args::{ArrivalArg, OnOff, RequestArgs, RunArgs, TlsVersionArg};
use anyhow::Context as _;
use loadlab_engine::schedule::Arrival;
use loadlab_engine::tls::{TlsSpec, TlsVersion};
use loadlab_engine::RunSpec;
use loadlab_session::{BusyPoll, SessionSpec};
use std::path::PathBuf;
use std::time::Duration;

/// The largest `--body-file`: a body is held in memory and sent whole with every request,
/// and a file that never ends (`/dev/zero`, a pipe) must not be read until memory runs out.
pub const MAX_BODY_FILE_BYTES: u64 = 64 << 20;

/// `--body-file`'s bytes, at most [`MAX_BODY_FILE_BYTES`]; more is refused, naming the limit.
fn read_body_file(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    use std::io::Read as _;
    let cannot = || {
        format!(
            "--body-file: cannot read {}; check the path",
            path.display()
        )
    };
    let file = std::fs::File::open(path).with_context(cannot)?;
    let mut body = Vec::new();
    file.take(MAX_BODY_FILE_BYTES + 1)
        .read_to_end(&mut body)
        .with_context(cannot)?;
    if body.len() as u64 > MAX_BODY_FILE_BYTES {
        anyhow::bail!(
            "--body-file: {} is larger than 64 MiB, the most loadlab sends as one body (it is \
             held in memory and sent whole with every request); give a smaller file",
            path.display()
        );
    }
    Ok(body)
}

impl RequestArgs {
    /// A spec for `url` with these requests; the load's shape (connections, rate, duration)
    /// is the caller's.
    pub fn spec(&self, url: &str) -> anyhow::Result<RunSpec> {
        let body = match (&self.body, &self.body_file) {
            (Some(b), _) => b.clone().into_bytes(),
            (None, Some(path)) => read_body_file(path)?,
            (None, None) => Vec::new(),
        };
        let tls = TlsSpec {
            insecure: self.insecure,
            ca_pem: read_pem(&self.cacert, "--cacert")?,
            ca_from: None,
            cert_pem: read_pem(&self.cert, "--cert")?,
            key_pem: read_pem(&self.key, "--key")?,
            resume: self.tls_resume.map(|r| r == OnOff::On),
            version: self.tls_version.map(|v| match v {
                TlsVersionArg::V1_2 => TlsVersion::V1_2,
                TlsVersionArg::V1_3 => TlsVersion::V1_3,
            }),
        };
        Ok(RunSpec {
            url: url.to_string(),
            method: self.method.clone(),
            headers: self.headers.clone(),
            body,
            threads: self.threads,
            timeout: self.timeout,
            connect_timeout: self.connect_timeout,
            keepalive: !self.no_keepalive,
            arrival: match self.arrival {
                ArrivalArg::Uniform => Arrival::Uniform,
                ArrivalArg::Poisson => Arrival::Poisson { seed: self.seed },
            },
            max_connections: self.max_connections,
            tick: self.tick.unwrap_or_default(),
            pm_qos: !self.no_pm_qos,
            http2: self.http2,
            http3: self.http3,
            http3_0rtt: self.http3_0rtt,
            streams: self.streams,
            pipeline: self.pipeline,
            grpc: self.grpc.call(url, &tls, self.timeout)?,
            ws: self.ws.spec(),
            tls,
            ..RunSpec::default()
        })
    }
}

/// A count (connections, threads, requests): a whole number. A negative one is taken as the
/// flag's value, not as another flag, so the message says what is wrong with it (clap's own
/// tip, "use -- -1", would make it the URL).
pub fn count<T: std::str::FromStr>(raw: &str) -> Result<T, String> {
    raw.trim()
        .parse::<T>()
        .map_err(|_| format!("`{raw}` is not a count: give a whole number such as 50"))
}

/// Durations as people write them: `10s`, `1m30s`, `250ms`; a bare number means seconds.
/// Flags that take one allow a leading `-`, so that `-d -1s` is told it is negative (clap's
/// own tip, "use -- -1s", would make it the URL).
pub fn parse_duration(raw: &str) -> Result<Duration, String> {
    let raw = raw.trim();
    if let Ok(secs) = raw.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            // Too long for any duration: refused here (from_secs_f64 would panic), shorter
            // ones beyond a week by the flag's own check.
            return Duration::try_from_secs_f64(secs).map_err(|_| {
                format!("`{raw}` seconds is longer than loadlab allows; give at most 7 days")
            });
        }
    }
    if raw.starts_with('-') {
        return Err(format!(
            "`{raw}` is negative: give a duration of 0 or more, e.g. 10s, 500ms, 2m"
        ));
    }
    humantime::parse_duration(raw)
        .map_err(|_| format!("`{raw}` is not a duration; write e.g. 10s, 500ms, 2m"))
}

/// `--rate`: requests (or iterations) per second, a number of 0 or more (0 is refused later
/// with the reason); a negative one is named as such, not taken for a flag.
pub fn rate(raw: &str) -> Result<f64, String> {
    match raw.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r >= 0.0 => Ok(r),
        _ => Err(format!(
            "`{raw}` is not a rate: give requests per second above 0, e.g. 1000"
        )),
    }
}

/// A share from 0 to 1 (`--new-connection-share`).
pub fn share(raw: &str) -> Result<f64, String> {
    match raw.trim().parse::<f64>() {
        Ok(s) if (0.0..=1.0).contains(&s) => Ok(s),
        _ => Err(format!(
            "`{raw}` is not a share: give a number from 0 to 1, e.g. 0.1"
        )),
    }
}

fn read_pem(path: &Option<PathBuf>, flag: &str) -> anyhow::Result<Option<Vec<u8>>> {
    path.as_ref()
        .map(|p| {
            std::fs::read(p)
                .with_context(|| format!("{flag}: cannot read {}; check the path", p.display()))
        })
        .transpose()
}

/// `--var NAME=VALUE` pairs.
pub fn parse_vars(vars: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    vars.iter()
        .map(|v| match v.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() => {
                Ok((name.trim().to_string(), value.to_string()))
            }
            _ => anyhow::bail!("--var {v:?}: write NAME=VALUE, e.g. --var BLOG_ID=001"),
        })
        .collect()
}

/// The session the flags describe (nothing started yet).
pub fn session_spec(args: &RunArgs) -> anyhow::Result<SessionSpec> {
    let mut server = args.server.spec()?;
    // Shards of one load share one server: its agent serves one session, shard 1's (the
    // same flags go to every shard; the merge keeps the one server report).
    if args.shard.shard.is_some_and(|s| s.index > 0)
        && server.as_ref().is_some_and(|s| s.agent.is_some())
    {
        server = None;
    }
    let run = RunSpec {
        pace: args.pace,
        new_connection_share: args.new_connection_share,
        seed: args.request.seed,
        connections: args.connections,
        duration: args.duration,
        requests: args.requests,
        warmup: args.warmup,
        rate: args.rate,
        stages: args.stages.clone(),
        closed_stages: args.closed,
        interval: args.interval,
        shard: args.shard.shard,
        start_at: args.shard.start_at,
        ..args
            .scenario
            .spec(&args.request, args.url.as_deref(), server.is_some())?
    };
    Ok(SessionSpec {
        run,
        server,
        busy_poll: if args.busy_poll {
            BusyPoll::On
        } else if args.no_busy_poll {
            BusyPoll::Off
        } else {
            BusyPoll::Auto
        },
    })
}

/// The flag that sets each of the engine's settings: the engine names settings, the
/// command line names flags.
pub fn flag_for(setting: &str) -> &str {
    match setting {
        "url" => "URL",
        "method" => "-m/--method",
        "headers" => "-H/--header",
        "connections" => "-c/--connections",
        "threads" => "-t/--threads",
        "duration" => "-d/--duration",
        "requests" => "-n/--requests",
        "timeout" => "--timeout",
        "connect_timeout" => "--connect-timeout",
        "warmup" => "--warmup",
        "keepalive" => "--no-keepalive",
        "rate" => "--rate",
        "stages" => "--stages",
        "closed_stages" => "--closed",
        "max_connections" => "--max-connections",
        "interval" => "--interval",
        "tick" => "--tick",
        "busy_poll" => "--busy-poll",
        "http2" => "--http2",
        "http3" => "--http3",
        "http3_0rtt" => "--http3-0rtt",
        "streams" => "--streams",
        "pipeline" => "--pipeline",
        "tls.ca" => "--cacert",
        "tls.cert" => "--cert",
        "tls.key" => "--key",
        "tls.version" => "--tls-version",
        "tls.resume" => "--tls-resume",
        "tls.insecure" => "--insecure",
        "scenario" => "--scenario",
        "pace" => "--pace",
        "new_connection_share" => "--new-connection-share",
        "paths" => "--path",
        "body" => "--body",
        "deadline" => "--deadline",
        "ws" => "--ws-mode/--ws-*",
        "ws_ping" => "--ws-ping",
        "ws_size" => "--ws-size",
        "ws_binary" => "--ws-binary",
        "ws_held" => "--ws-held",
        "ws_connect_rate" => "--ws-connect-rate",
        "grpc" => "--grpc",
        "grpc_message_rate" => "--grpc-message-rate",
        other => other,
    }
}

/// A session's error, with an engine setting named by its flag.
pub fn flags_named(e: loadlab_session::SessionError) -> anyhow::Error {
    match e {
        loadlab_session::SessionError::Config(c) => {
            anyhow::anyhow!("{}: {}", flag_for(c.setting), c.message)
        }
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 46 item 10: `--body-file /dev/zero` read until memory ran out, then said "check
    /// the path". The read stops one byte past the limit and says why.
    #[test]
    fn a_body_file_that_never_ends_is_refused_at_the_limit() {
        let err = read_body_file(std::path::Path::new("/dev/zero")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--body-file: /dev/zero is larger than 64 MiB, the most loadlab sends as one body \
             (it is held in memory and sent whole with every request); give a smaller file"
        );
        let dir = std::env::temp_dir().join(format!("loadlab-body-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exact = dir.join("exact");
        std::fs::write(&exact, vec![b'x'; MAX_BODY_FILE_BYTES as usize]).unwrap();
        assert_eq!(
            read_body_file(&exact).unwrap().len() as u64,
            MAX_BODY_FILE_BYTES
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let missing = read_body_file(&dir.join("missing")).unwrap_err();
        assert!(
            missing.to_string().contains("cannot read")
                && missing.to_string().contains("check the path"),
            "{missing}"
        );
    }
}
