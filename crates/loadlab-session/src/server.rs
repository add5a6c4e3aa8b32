//! The server side of a session: launch the server under limits (a lab target or any
//! command) or watch one already running (a PID, a cgroup), sample it while the load runs,
//! and build its report. The mechanisms are the probe's; this module only wires them.
//! It must not print: what a person should know comes back as notes.

use crate::SessionError;
use loadlab_lab::{Lab, ServeOptions, ServeTls};
use loadlab_probe::limits::{self, format_cpu_list};
use loadlab_probe::report::{self, ServerReport, Startup};
use loadlab_probe::sampler::{Samples, Source};
use loadlab_probe::{Cgroup, Launch, Launched, Limits, LimitsMode, Readiness, Sampler};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// Which server the run is about.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerKind {
    /// A built lab target, by name.
    Target {
        name: String,
        /// The targets directory; `None`: the nearest `targets/` above the working directory.
        dir: Option<PathBuf>,
        /// `UPSTREAM_URL` for its `/upstream` endpoint.
        upstream: Option<String>,
    },
    /// Any server, started with `sh -c CMD`; `{port}` in CMD and `$PORT` give its port.
    Exec(String),
    /// A running process and its children, watched.
    Pid(u32),
    /// Every process in a cgroup, watched.
    Cgroup(String),
    /// The processes listening on this port, watched (with `--agent`: on the agent's host).
    Port(u16),
    /// A Podman or Docker container by name or id, watched through its agent.
    Container(String),
    /// With `--agent` and no server flag: what the agent was started to watch, or else the
    /// process listening on the URL's port on the agent's host.
    AgentDefault,
}

/// The server's host is another machine, reached through `loadlab agent` there: the kind
/// applies on that host, and the limits are parsed there, as typed (its CPUs are not ours).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    pub endpoint: loadlab_agent::client::AgentEndpoint,
    pub cpus: Option<String>,
    pub memory: Option<String>,
    pub pin: Option<String>,
}

/// The server to launch or watch, and how.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    pub kind: ServerKind,
    /// Limits apply to a launched server only.
    pub limits: Limits,
    pub mode: LimitsMode,
    /// Extra environment for a launched server (target knobs: `WORKERS`, `BACKLOG`, ...).
    pub env: Vec<(String, String)>,
    pub sample_every: Duration,
    /// A launched server is ready when `GET healthz` answers 2xx.
    pub healthz: String,
    pub startup_timeout: Duration,
    /// A launched server runs behind a shaped link (`--bandwidth`, `--delay`, `--loss`): in a
    /// network namespace of its own, joined to loadlab's by a veth pair.
    pub link: Option<loadlab_machine::LinkSpec>,
    /// A launched server serves HTTPS (`--tls`): the session makes a throwaway CA and a
    /// certificate (`TLS_CERT`, `TLS_KEY`), trusts the CA for the run, and removes them after.
    pub tls: bool,
    /// `UPSTREAM_CA` for a lab target whose upstream is `https://`.
    pub upstream_ca: Option<PathBuf>,
    /// The server runs on another host, through its agent.
    pub agent: Option<AgentSpec>,
}

impl ServerSpec {
    pub fn new(kind: ServerKind) -> ServerSpec {
        ServerSpec {
            kind,
            limits: Limits::default(),
            mode: LimitsMode::Strict,
            env: Vec::new(),
            sample_every: Duration::from_millis(100),
            healthz: "/healthz".into(),
            startup_timeout: Duration::from_secs(60),
            link: None,
            tls: false,
            upstream_ca: None,
            agent: None,
        }
    }

    pub fn launches(&self) -> bool {
        matches!(self.kind, ServerKind::Target { .. } | ServerKind::Exec(_))
    }

    /// Checks what can be checked without starting anything, so a typo fails before a JVM
    /// boots.
    pub fn check(&self) -> Result<(), SessionError> {
        if let Some(agent) = &self.agent {
            let limited = agent.cpus.is_some() || agent.memory.is_some() || agent.pin.is_some();
            if limited && !self.launches() {
                return Err(SessionError::Invalid(
                    "--cpus, --memory and --pin limit a server the agent starts: add --target \
                     NAME or --exec CMD"
                        .into(),
                ));
            }
            if self.link.is_some() {
                return Err(SessionError::Invalid(
                    "--bandwidth, --delay and --loss shape a link on this machine; with --agent \
                     the server is on another host: shape that host's link there, or drop --agent"
                        .into(),
                ));
            }
            if self.upstream_ca.is_some() {
                return Err(SessionError::Invalid(
                    "--upstream-ca names a file on this machine; with --agent the target runs on \
                     the agent's host: give the agent's target an http:// upstream, or drop --agent"
                        .into(),
                ));
            }
            return self.check_common();
        }
        if matches!(
            self.kind,
            ServerKind::Container(_) | ServerKind::AgentDefault
        ) {
            return Err(SessionError::Invalid(
                "--container watches a container through the agent on its host: add --agent URL \
                 (on this machine, give the container's --pid or its --cgroup)"
                    .into(),
            ));
        }
        if !self.limits.is_empty() && !self.launches() {
            return Err(SessionError::Invalid(
                "--cpus, --memory and --pin limit a server loadlab starts: add --target NAME or \
                 --exec CMD (a server already running cannot be limited from here)"
                    .into(),
            ));
        }
        if self.link.is_some() && !self.launches() {
            return Err(SessionError::Invalid(
                "--bandwidth, --delay and --loss shape the link to a server loadlab starts (in a \
                 network namespace of its own): add --target NAME or --exec CMD"
                    .into(),
            ));
        }
        if let ServerKind::Target {
            upstream: Some(url),
            ..
        } = &self.kind
        {
            if self.link.is_some() && (url.contains("://127.") || url.contains("://localhost")) {
                return Err(SessionError::Invalid(format!(
                    "--upstream {url}: behind --bandwidth the target runs in a network namespace \
                     of its own, whose loopback is not this machine's; give an upstream it can \
                     reach, or drop the cap"
                )));
            }
        }
        if self.upstream_ca.is_some()
            && !matches!(self.kind, ServerKind::Target { upstream: Some(ref u), .. } if u.starts_with("https://"))
        {
            return Err(SessionError::Invalid(
                "--upstream-ca is the CA of an https:// --upstream: add --target NAME --upstream https://..."
                    .into(),
            ));
        }
        if let ServerKind::Pid(pid) = self.kind {
            if !loadlab_probe::procfs::alive(pid) {
                return Err(SessionError::Invalid(format!(
                    "--pid {pid}: no such running process"
                )));
            }
        }
        self.check_common()
    }

    /// What holds wherever the server runs.
    fn check_common(&self) -> Result<(), SessionError> {
        if self.tls && !self.launches() {
            return Err(SessionError::Invalid(
                "--tls serves a server loadlab starts over HTTPS with a throwaway certificate: add \
                 --target NAME or --exec CMD (for a server already running over HTTPS, give its \
                 https:// URL and --cacert)"
                    .into(),
            ));
        }
        if self.sample_every < Duration::from_millis(10) {
            return Err(SessionError::Invalid(
                "--sample-every must be at least 10ms".into(),
            ));
        }
        if !self.healthz.starts_with('/') {
            return Err(SessionError::Invalid(format!(
                "--healthz {:?} must be a path starting with /",
                self.healthz
            )));
        }
        Ok(())
    }

    /// The CPUs left for loadlab when the server is pinned (none left: no restriction).
    pub fn generator_cpus(&self) -> Option<Vec<usize>> {
        if self.agent.is_some() {
            // Pinned on another host: every CPU here is loadlab's.
            return None;
        }
        let pinned = self.limits.pin.as_ref()?;
        let free: Vec<usize> = (0..limits::online_cpus())
            .filter(|c| !pinned.contains(c))
            .collect();
        (!free.is_empty()).then_some(free)
    }
}

/// The server loadlab launched or watches, and what it learnt at start.
pub struct Server {
    launched: Option<Launched>,
    source: Source,
    kind: &'static str,
    description: String,
    startup: Option<Startup>,
    every: Duration,
    sampler: Option<Sampler>,
    /// The latest samples of the run going on, for its intervals as they are written.
    live: crate::spill::server_samples::LiveSamples,
    /// The network namespace a launched server runs in, behind a shaped link.
    netns: Option<PathBuf>,
}

impl Server {
    /// Launches (on `port`, which the caller chose so that the URL is known before; inside
    /// `link`'s namespace when there is one) or attaches. Returns the server and a line for a
    /// person. `http3`: the run is over HTTP/3, which a lab target must declare it serves.
    pub(crate) fn start(
        spec: &ServerSpec,
        port: u16,
        link: Option<&loadlab_machine::Link>,
        certs: Option<&loadlab_certs::CertDir>,
        http3: bool,
    ) -> Result<(Server, String), SessionError> {
        let tls = certs.map(ServeTls::from_dir);
        let health_tls = tls.as_ref().map(ServeTls::client_config).transpose()?;
        let host: std::net::IpAddr = match link {
            Some(link) => link.server_address().into(),
            None => [127, 0, 0, 1].into(),
        };
        let netns = link.map(|l| loadlab_probe::NetnsEntry {
            path: l.netns_path(),
            address: host,
        });
        let launch = |command: Command, description: String, readiness: Readiness| Launch {
            command,
            description,
            limits: spec.limits.clone(),
            mode: spec.mode,
            readiness,
            health_path: spec.healthz.clone(),
            health_tls: health_tls.clone(),
            timeout: spec.startup_timeout,
            netns: netns.clone(),
        };
        let addr = SocketAddr::new(host, port);
        let launch = match &spec.kind {
            ServerKind::Target {
                name,
                dir,
                upstream,
            } => {
                let lab = match dir {
                    Some(dir) => Lab::open(dir)?,
                    None => Lab::discover(&std::env::current_dir().map_err(|e| {
                        SessionError::Invalid(format!("cannot read the current directory: {e}"))
                    })?)?,
                };
                let options = ServeOptions {
                    port,
                    host,
                    upstream_url: upstream.clone(),
                    upstream_ca: spec.upstream_ca.clone(),
                    tls: tls.clone(),
                    ..ServeOptions::default()
                };
                if http3 && !lab.target(name)?.has(loadlab_lab::manifest::HTTP3) {
                    let serving = lab.with_capability(loadlab_lab::manifest::HTTP3);
                    return Err(SessionError::Invalid(format!(
                        "--http3: target {name} does not serve HTTP/3 (its target.toml declares no \
                         capabilities = [\"http3\"]), so every request would fail; {}",
                        if serving.is_empty() {
                            "no target in this lab does: drop --http3".to_string()
                        } else {
                            format!("targets that do: {}; or drop --http3", serving.join(", "))
                        }
                    )));
                }
                let mut command = lab.command(name, &options)?;
                command.envs(spec.env.iter().map(|(k, v)| (k, v)));
                Some(launch(command, name.clone(), Readiness::AddressLine))
            }
            ServerKind::Exec(cmd) => {
                let tls = tls.as_ref().map(|t| (t.cert.as_path(), t.key.as_path()));
                let mut command = loadlab_probe::shell::exec_command(cmd, port, host, tls);
                command.envs(spec.env.iter().map(|(k, v)| (k, v)));
                Some(launch(command, cmd.clone(), Readiness::Address(addr)))
            }
            ServerKind::Pid(_)
            | ServerKind::Cgroup(_)
            | ServerKind::Port(_)
            | ServerKind::Container(_)
            | ServerKind::AgentDefault => None,
        };
        let Some(launch) = launch else {
            return Self::attach(spec);
        };
        let launched = launch.start()?;
        if launched.addr() != addr {
            return Err(SessionError::Invalid(format!(
                "{} listens on {} though it was given PORT={port}: the target must bind the \
                 port in $PORT (see targets/CONTRACT.md)",
                launched.description(),
                launched.addr()
            )));
        }
        let (idle_rss, idle_memory) = launched.memory_now();
        let held = launched.limits().describe();
        let note = format!(
            "started {} (pid {}) at {}://{} in {:.0} ms{}",
            launched.description(),
            launched.pid(),
            if tls.is_some() { "https" } else { "http" },
            launched.addr(),
            launched.ready_after().as_secs_f64() * 1e3,
            if held.is_empty() {
                String::new()
            } else {
                format!(
                    ", limits: {} ({})",
                    held.join(", "),
                    launched.limits().mechanism
                )
            }
        );
        let server = Server {
            source: launched.source(),
            kind: "launched",
            description: launched.description().to_string(),
            startup: Some(Startup {
                ready_s: launched.ready_after().as_secs_f64(),
                health_url: launched.health_url(),
                idle_rss_bytes: idle_rss,
                idle_memory_bytes: idle_memory,
            }),
            launched: Some(launched),
            every: spec.sample_every,
            sampler: None,
            live: Default::default(),
            netns: link.map(|l| l.netns_path()),
        };
        Ok((server, note))
    }

    fn attach(spec: &ServerSpec) -> Result<(Server, String), SessionError> {
        let (source, kind, description) = match &spec.kind {
            ServerKind::Pid(pid) => (Source::Tree { pid: *pid }, "pid", format!("pid {pid}")),
            ServerKind::Cgroup(path) => (
                Source::Attached(std::sync::Arc::new(Cgroup::attach(path)?)),
                "cgroup",
                format!("cgroup {path}"),
            ),
            ServerKind::Port(port) => {
                let pid = loadlab_probe::affinity::listeners(*port)
                    .into_iter()
                    .min()
                    .ok_or_else(|| {
                        SessionError::Invalid(format!(
                            "--port {port}: no process listens on it here (as root loadlab sees \
                             every process's sockets)"
                        ))
                    })?;
                (
                    Source::Tree { pid },
                    "port",
                    format!("pid {pid}, listening on port {port}"),
                )
            }
            _ => unreachable!("launched kinds are handled by start, containers by the agent"),
        };
        let note = format!("watching {description}");
        let server = Server {
            source,
            kind,
            description,
            startup: None,
            launched: None,
            every: spec.sample_every,
            sampler: None,
            live: Default::default(),
            netns: None,
        };
        Ok((server, note))
    }

    /// Starts sampling; `on_exit` runs if the server dies.
    pub(crate) fn start_sampling(&mut self, on_exit: Box<dyn FnOnce() + Send>) {
        let probe = self.launched.as_ref().map(Launched::exit_probe);
        // Behind a link, the server's sockets are in its namespace: sample from inside.
        let netns = self
            .netns
            .as_ref()
            .and_then(|p| std::fs::File::open(p).ok());
        self.live.clear();
        let live = self.live.clone();
        self.sampler = Some(Sampler::start_streaming(
            netns,
            self.source.clone(),
            self.every,
            probe,
            on_exit,
            Box::new(move |sample, _| live.push(*sample)),
            true,
        ));
    }

    /// The latest samples of the run going on.
    pub(crate) fn live_samples(&self) -> crate::spill::server_samples::LiveSamples {
        self.live.clone()
    }

    /// Stops sampling and builds the report; `origin` is the run's start, `measured` the
    /// measured span in seconds from it.
    pub(crate) fn finish(&mut self, origin: Instant, measured: (f64, f64)) -> ServerReport {
        let Samples { samples, exit } =
            self.sampler.take().map(Sampler::finish).unwrap_or_default();
        let group = match &self.source {
            Source::Cgroup { group, .. } | Source::Attached(group) => Some(group.clone()),
            Source::Tree { .. } => None,
        };
        let quota = group.as_ref().and_then(|g| g.cpu_quota());
        let memory_limit = group.as_ref().and_then(|g| g.memory_limit());
        let end = exit
            .as_ref()
            .map_or(measured.1, |e| report::exit_report(e, origin).at_s);
        ServerReport {
            source: self.kind.to_string(),
            description: self.description.clone(),
            pid: match &self.source {
                Source::Cgroup { pid, .. } | Source::Tree { pid } => Some(*pid),
                Source::Attached(_) => None,
            },
            limits: self.launched.as_ref().map(|l| l.limits().clone()),
            startup: self.startup.clone(),
            sample_interval_s: self.every.as_secs_f64(),
            summary: report::summarize(&samples, origin, measured.0, end, quota, memory_limit),
            exit: exit.as_ref().map(|e| report::exit_report(e, origin)),
            samples: report::windows(&samples, origin),
            agent: None,
        }
    }
}

/// `0-1` for messages.
pub fn cpus(list: &[usize]) -> String {
    format_cpu_list(list)
}
