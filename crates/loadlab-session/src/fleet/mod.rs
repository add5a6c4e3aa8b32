//! Where load comes from: this machine (the engine, in-process), or a fleet of generators,
//! each a `loadlab agent --generator` on a host of its own, that together send one load
//! split as `--shard I/N` splits it, started at one agreed instant on each one's clock.
//!
//! - this file: the fleet as the user gives it (`--generators FILE`, a small TOML list of
//!   agents) and its checks before a run (every generator answers, has the role, its host's
//!   limits and TIME_WAIT are read, its clock is compared);
//! - `source`: the forms `--generators` takes (a file, an Ansible inventory, a cluster's
//!   agents), parsed;
//! - [`departure`]: a generator whose response time or goodput departs from the others' at
//!   the same share, named (its path, not the server);
//! - [`path`]: the path between the server's host and each generator's, measured both ways
//!   before the load, and the rule that names a path that would set the figure (issue 52);
//! - `run`: one run over the fleet: the shards started, their intervals read live and merged
//!   exactly into the caller's sink (so progress, stop rules and windowed gates work as for
//!   one generator), a lost generator named, and the shards' results merged.
//!
//! It must not read files (the CLI hands over the file's text; token files are read by the
//! agent client) nor print: what a person should know comes back as notes and warnings.

pub mod departure;
mod lead;
pub mod path;
#[cfg(test)]
mod refused_tests;
mod run;
#[cfg(test)]
mod run_tests;
mod source;

pub use source::FleetSource;

use crate::{AgentEndpoint, SessionError};
use serde::Deserialize;
use std::path::Path;

/// One generator of a fleet.
#[derive(Debug, Clone, PartialEq)]
pub struct Generator {
    /// How results and messages name it: the file's `name`, else the URL's host.
    pub name: String,
    pub endpoint: AgentEndpoint,
}

/// Generators that together send one load.
#[derive(Debug, Clone, PartialEq)]
pub struct Fleet {
    pub generators: Vec<Generator>,
    /// How long the last run took to hand every generator its shard: the next run's start
    /// lead is made from it (see `run`).
    posting: lead::Posting,
}

/// The fleet file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    generator: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    #[serde(default)]
    name: Option<String>,
    url: String,
    token_file: String,
    #[serde(default)]
    fingerprint: Option<String>,
    #[serde(default)]
    cacert: Option<String>,
}

/// The most generators one fleet may have.
pub const MAX_GENERATORS: usize = 256;

impl Fleet {
    /// A fleet of these generators.
    pub fn of(generators: Vec<Generator>) -> Fleet {
        Fleet {
            generators,
            posting: lead::Posting::default(),
        }
    }

    /// Parses a fleet file's `text`; relative paths in it are relative to `dir` (the file's
    /// directory). Each mistake names the generator and the field.
    pub fn parse(text: &str, dir: &Path) -> Result<Fleet, SessionError> {
        let bad = |m: String| SessionError::Invalid(format!("--generators: {m}"));
        let file: File = toml::from_str(text).map_err(|e| {
            bad(format!(
                "{}; write one [[generator]] table per agent with url, token_file and \
                 fingerprint (or cacert)",
                e.to_string().trim()
            ))
        })?;
        if file.generator.is_empty() {
            return Err(bad("the file names no [[generator]]".into()));
        }
        if file.generator.len() > MAX_GENERATORS {
            return Err(bad(format!(
                "{} generators is more than {MAX_GENERATORS}",
                file.generator.len()
            )));
        }
        let mut generators: Vec<Generator> = Vec::new();
        for (i, e) in file.generator.into_iter().enumerate() {
            let which = format!("generator {}", i + 1);
            let url = url::Url::parse(&e.url)
                .ok()
                .filter(|u| u.scheme() == "https" && u.host_str().is_some())
                .ok_or_else(|| {
                    bad(format!(
                        "{which}: url {:?} is not https://HOST:PORT, as its agent printed it",
                        e.url
                    ))
                })?;
            if e.fingerprint.is_some() == e.cacert.is_some() {
                return Err(bad(format!(
                    "{which}: give fingerprint (as its agent printed it) or cacert, one of them"
                )));
            }
            let name = e
                .name
                .unwrap_or_else(|| url.host_str().unwrap_or("generator").to_string());
            if generators.iter().any(|g| g.name == name) {
                return Err(bad(format!(
                    "{which}: the name {name:?} is taken by another generator; give each a \
                     name of its own"
                )));
            }
            let at = |p: String| {
                let p = Path::new(&p);
                if p.is_absolute() {
                    p.to_path_buf()
                } else {
                    dir.join(p)
                }
            };
            generators.push(Generator {
                name,
                endpoint: AgentEndpoint {
                    url: e.url.trim_end_matches('/').to_string(),
                    token_file: at(e.token_file),
                    fingerprint: e.fingerprint,
                    cacert: e.cacert.map(at),
                },
            });
        }
        Ok(Fleet::of(generators))
    }

    /// Says hello to every generator: each must answer, speak this protocol, have the
    /// generator role and be free, and its host must allow its share of `connections` (the
    /// whole load's) in open files and local ports, the ports its closed connections to
    /// `target_port` still hold (TIME_WAIT) counted. Each clock is read against this one.
    /// Returns a note per generator (its host, cores, limits, clock) and warnings (many
    /// ports in TIME_WAIT, a clock whose offset is known only roughly).
    pub fn check(
        &self,
        connections: usize,
        target_port: Option<u16>,
    ) -> Result<FleetCheck, SessionError> {
        let share = connections.div_ceil(self.generators.len().max(1)) as u64;
        let local = loadlab_agent::clock::LocalClock::new();
        let mut check = FleetCheck::default();
        for g in &self.generators {
            let (mut client, hello, host) = g.ready(share, target_port)?;
            let clock = client.estimate_clock(&local, 8).ok();
            check.notes.push(format!(
                "generator {}: {} ({} cores, kernel {}), open files {}, local ports {}{}",
                g.name,
                hello.hostname,
                hello.cpus,
                hello.kernel,
                host.nofile_soft
                    .map_or_else(|| "unknown".to_string(), |n| n.to_string()),
                host.port_range
                    .map_or_else(|| "unknown".to_string(), |(a, b)| format!("{a}-{b}")),
                clock.as_ref().map_or_else(String::new, |c| format!(
                    ", clock {:+.3} ms from this one (±{:.3} ms)",
                    c.offset_ns as f64 / 1e6,
                    c.uncertainty_ns as f64 / 1e6
                )),
            ));
            check
                .warnings
                .extend(host_warnings(&g.name, &host, target_port, clock.as_ref()));
        }
        Ok(check)
    }
}

/// What [`Fleet::check`] found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct FleetCheck {
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
}

/// Beyond this, the generators' common start is known only this roughly: the start spread
/// a run reports is bounded by 10 ms.
const CLOCK_UNCERTAINTY_WARN_NS: i64 = 5_000_000;

/// What is worth a warning on a generator's host before a run: half its local ports or more
/// held in TIME_WAIT toward the target, and a clock read too roughly for a common start.
fn host_warnings(
    name: &str,
    host: &loadlab_agent::protocol::HostInfo,
    target_port: Option<u16>,
    clock: Option<&loadlab_agent::clock::Estimate>,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if let (Some(tw), Some((low, high)), Some(port)) =
        (host.time_wait_on_port, host.port_range, target_port)
    {
        let ports = u64::from(high.saturating_sub(low)) + 1;
        if tw * 2 >= ports {
            warnings.push(format!(
                "generator {name}: {tw} of its {ports} local ports are held in TIME_WAIT by \
                 closed connections to port {port}; a run with new connections may run out: \
                 set net.ipv4.tcp_tw_reuse=1 there, or wait for them to expire (60 s)"
            ));
        }
    }
    if let Some(c) = clock {
        if c.uncertainty_ns > CLOCK_UNCERTAINTY_WARN_NS {
            warnings.push(format!(
                "generator {name}: its clock is known to ±{:.1} ms only (the fastest of {} \
                 exchanges took {:.1} ms): the generators' common start is that rough; a \
                 closer or less loaded link to it narrows it",
                c.uncertainty_ns as f64 / 1e6,
                c.exchanges,
                c.uncertainty_ns as f64 * 2.0 / 1e6
            ));
        }
    }
    warnings
}

impl Generator {
    /// Connects to this generator and checks it can take a share of `share` connections:
    /// it answers, speaks this protocol, has the generator role, is free, and its host has
    /// room ([`too_small`]). What every run and every check starts with.
    pub(crate) fn ready(
        &self,
        share: u64,
        target_port: Option<u16>,
    ) -> Result<
        (
            loadlab_agent::client::AgentClient,
            loadlab_agent::protocol::Hello,
            loadlab_agent::protocol::HostInfo,
        ),
        SessionError,
    > {
        let fail = |e: loadlab_agent::client::ClientError| {
            SessionError::Invalid(format!("generator {}: {e}", self.name))
        };
        let (mut client, hello) =
            loadlab_agent::client::AgentClient::connect(&self.endpoint).map_err(fail)?;
        let refuse = |why: String| {
            Err(SessionError::Invalid(format!(
                "generator {} ({}) {why}",
                self.name, self.endpoint.url
            )))
        };
        if !hello.generator {
            return refuse(
                "was started without --generator: start its agent with --generator to let it \
                 send load"
                    .into(),
            );
        }
        if let Some(busy) = &hello.load_busy {
            return refuse(format!(
                "is busy sending load for run {} from host {}: wait for it, or use another \
                 generator",
                busy.run.as_deref().unwrap_or("(unnamed)"),
                busy.client
            ));
        }
        let host = client.host_info(target_port).map_err(fail)?;
        if let Some(problem) = too_small(&host, share) {
            return refuse(format!("on {}: {problem}", hello.hostname));
        }
        Ok((client, hello, host))
    }

    /// Whether this generator, as its hello says, can send `spec`: a field of the load an
    /// older agent would ignore (and so run another load than asked) needs the agent to name
    /// its feature (docs/agent-protocol.md).
    pub(crate) fn can_send(
        &self,
        hello: &loadlab_agent::protocol::Hello,
        spec: &loadlab_engine::RunSpec,
    ) -> Result<(), SessionError> {
        use loadlab_agent::protocol::{
            FEATURE_GRPC, FEATURE_PIPELINE, FEATURE_WEBSOCKET, FEATURE_WS_CONNECT_RATE,
            FEATURE_WS_H2, FEATURE_WS_HELD,
        };
        let websocket = loadlab_agent::protocol::load::is_websocket(&spec.url);
        let needs = [
            (
                websocket,
                FEATURE_WEBSOCKET,
                "a WebSocket load (it would run any one as echo)",
            ),
            (
                spec.pipeline > 1,
                FEATURE_PIPELINE,
                "a pipelined load (it would send one request at a time)",
            ),
            (
                spec.grpc.is_some(),
                FEATURE_GRPC,
                "a gRPC load (it would send plain HTTP requests, not the calls)",
            ),
            (
                spec.ws.held.is_some_and(|n| n > 0),
                FEATURE_WS_HELD,
                "--ws-held (it would run the echo load alone, with no connection held)",
            ),
            (
                spec.ws.connect_rate.is_some(),
                FEATURE_WS_CONNECT_RATE,
                "--ws-connect-rate (it would open every held connection at once)",
            ),
            (
                // A scenario's WebSocket steps too: an older agent refuses them with --http2.
                (websocket || spec.scenario.as_ref().is_some_and(|s| s.has_ws())) && spec.http2,
                FEATURE_WS_H2,
                "a WebSocket load over --http2 (it refuses one at its start)",
            ),
        ];
        for (needed, feature, what) in needs {
            if needed && !hello.features.iter().any(|f| f == feature) {
                // The hello's words were escaped as it was read.
                return Err(SessionError::Invalid(format!(
                    "generator {} ({}) runs loadlab agent {} on {}, too old for {what}: run the \
                     same loadlab version on the coordinator and every generator host",
                    self.name, self.endpoint.url, hello.agent_version, hello.hostname
                )));
            }
        }
        Ok(())
    }
}

/// Open files a run needs besides its connections (the runtime, the spill file, ...).
const FILES_BESIDE_CONNECTIONS: u64 = 64;

/// Why a generator host cannot hold `share` connections, if it cannot: the open-files limit
/// the engine raises itself to (the hard one), or the local port range.
fn too_small(host: &loadlab_agent::protocol::HostInfo, share: u64) -> Option<String> {
    if let Some(hard) = host.nofile_hard {
        if share + FILES_BESIDE_CONNECTIONS > hard {
            return Some(format!(
                "its share of the load is {share} connections, but its open-files limit is \
                 {hard} (hard): raise it there (ulimit -n, or LimitNOFILE= for a service), or \
                 add generators"
            ));
        }
    }
    if let Some((low, high)) = host.port_range {
        let ports = u64::from(high.saturating_sub(low)) + 1;
        if share > ports {
            return Some(format!(
                "its share of the load is {share} connections, more than its {ports} local \
                 ports ({low}-{high}): widen net.ipv4.ip_local_port_range there, or add \
                 generators"
            ));
        }
        let held = host.time_wait_on_port.unwrap_or(0);
        if share + held > ports {
            return Some(format!(
                "its share of the load is {share} connections, and {held} of its {ports} local \
                 ports are still held in TIME_WAIT by closed connections to the target: wait \
                 for them to expire (60 s), set net.ipv4.tcp_tw_reuse=1 there, or add \
                 generators"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A generator host with these open-files (hard) and local-port limits.
    fn host(nofile: u64, ports: (u16, u16)) -> loadlab_agent::protocol::HostInfo {
        loadlab_agent::protocol::HostInfo {
            hostname: "g".into(),
            cpus: 2,
            memory_bytes: None,
            somaxconn: None,
            tcp_max_syn_backlog: None,
            syncookies: None,
            nofile_soft: Some(1024),
            nofile_hard: Some(nofile),
            port_range: Some(ports),
            listen_backlog: None,
            time_wait_on_port: None,
        }
    }

    #[test]
    fn a_generator_host_too_small_for_its_share_is_named() {
        assert_eq!(too_small(&host(524_288, (32768, 60999)), 10_000), None);
        let files = too_small(&host(1024, (32768, 60999)), 1000).unwrap();
        assert!(files.contains("open-files limit is 1024"), "{files}");
        let ports = too_small(&host(524_288, (60000, 60999)), 5000).unwrap();
        assert!(ports.contains("1000 local ports"), "{ports}");
        // Ports held in TIME_WAIT toward the target are not free for the share.
        let mut held = host(524_288, (60000, 60999));
        held.time_wait_on_port = Some(600);
        assert_eq!(too_small(&held, 400), None);
        let tw = too_small(&held, 401).unwrap();
        assert!(tw.contains("600 of its 1000 local ports"), "{tw}");
        assert!(tw.contains("tcp_tw_reuse"), "{tw}");
    }

    #[test]
    fn half_the_ports_in_time_wait_or_a_rough_clock_is_a_warning() {
        let mut host = host(524_288, (60000, 60999));
        host.time_wait_on_port = Some(499);
        let clock = |uncertainty_ns| loadlab_agent::clock::Estimate {
            offset_ns: 2_000_000,
            uncertainty_ns,
            at_ns: 0,
            exchanges: 8,
        };
        assert!(host_warnings("g1", &host, Some(8080), Some(&clock(40_000))).is_empty());
        host.time_wait_on_port = Some(500);
        let w = host_warnings("g1", &host, Some(8080), Some(&clock(40_000)));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("500 of its 1000 local ports") && w[0].contains("port 8080"));
        // No target port asked: nothing is known about TIME_WAIT toward it.
        assert!(host_warnings("g1", &host, None, None).is_empty());
        let w = host_warnings("g1", &host, None, Some(&clock(6_000_000)));
        assert!(w[0].contains("±6.0 ms"), "{w:?}");
    }

    #[test]
    fn a_fleet_file_is_read_with_paths_beside_it() {
        let text = r#"
            [[generator]]
            url = "https://10.0.0.11:7070"
            token_file = "gen1.token"
            fingerprint = "sha256:AB"
            [[generator]]
            name = "pi-2"
            url = "https://10.0.0.12:7070/"
            token_file = "/etc/loadlab/gen2.token"
            cacert = "ca.pem"
        "#;
        let fleet = Fleet::parse(text, Path::new("/fleet")).unwrap();
        assert_eq!(fleet.generators.len(), 2);
        let (a, b) = (&fleet.generators[0], &fleet.generators[1]);
        assert_eq!(a.name, "10.0.0.11");
        assert_eq!(a.endpoint.token_file, Path::new("/fleet/gen1.token"));
        assert_eq!(b.name, "pi-2");
        assert_eq!(b.endpoint.url, "https://10.0.0.12:7070");
        assert_eq!(b.endpoint.token_file, Path::new("/etc/loadlab/gen2.token"));
        assert_eq!(
            b.endpoint.cacert.as_deref(),
            Some(Path::new("/fleet/ca.pem"))
        );
    }

    #[test]
    fn mistakes_name_the_generator_and_the_fix() {
        let err = |text: &str| Fleet::parse(text, Path::new("/")).unwrap_err().to_string();
        assert!(err("").contains("generator"));
        let http = "[[generator]]\nurl = \"http://h:1\"\ntoken_file = \"t\"\nfingerprint = \"x\"";
        assert!(err(http).contains("generator 1: url"), "{}", err(http));
        let neither = "[[generator]]\nurl = \"https://h:1\"\ntoken_file = \"t\"";
        assert!(err(neither).contains("fingerprint"), "{}", err(neither));
        let twice = format!(
            "{0}\nname = \"a\"\n{0}\nname = \"a\"",
            "[[generator]]\nurl = \"https://h:1\"\ntoken_file = \"t\"\nfingerprint = \"x\""
        );
        assert!(err(&twice).contains("taken"), "{}", err(&twice));
        let typo = "[[generator]]\nurl = \"https://h:1\"\ntoken = \"t\"\nfingerprint = \"x\"";
        assert!(err(typo).contains("token"), "{}", err(typo));
    }
}
