//! The server flags of `loadlab run`: launch the server under limits (`--target`, `--exec`)
//! or watch one already running (`--pid`, `--cgroup`). Flags only: the session launches,
//! samples and reports.

use anyhow::bail;
use clap::Args;
use loadlab_machine::{LinkSpec, Rate};
use loadlab_probe::limits;
use loadlab_probe::{Limits, LimitsMode};
use loadlab_session::{AgentEndpoint, AgentSpec, ServerKind, ServerSpec};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LimitsArg {
    Strict,
    BestEffort,
}

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Start this lab target (see `loadlab lab list`) for the run; the URL may then be a
    /// path such as /plaintext.
    #[arg(long, value_name = "NAME", help_heading = "Server under test",
          conflicts_with_all = ["exec", "pid", "cgroup", "listen_port", "container"])]
    pub target: Option<String>,

    /// Start any server with `sh -c CMD` for the run. It must listen on 127.0.0.1:$PORT
    /// (loadlab picks the port; `{port}` in CMD is replaced by it). The URL may be a path.
    #[arg(long, value_name = "CMD", help_heading = "Server under test",
          conflicts_with_all = ["pid", "cgroup", "listen_port", "container"])]
    pub exec: Option<String>,

    /// Sample a server that is already running: this process and its children.
    #[arg(
        long,
        value_name = "PID",
        help_heading = "Server under test",
        conflicts_with_all = ["cgroup", "listen_port", "container"]
    )]
    pub pid: Option<u32>,

    /// Sample every process in this cgroup: a directory under /sys/fs/cgroup, or a path as
    /// /proc/PID/cgroup shows it (e.g. /system.slice/nginx.service).
    #[arg(long, value_name = "PATH", help_heading = "Server under test",
          conflicts_with_all = ["listen_port", "container"])]
    pub cgroup: Option<String>,

    /// Sample the server listening on this port (the lowest PID among its listeners, and
    /// its children); with --agent, on the agent's host.
    #[arg(
        long = "port",
        value_name = "PORT",
        help_heading = "Server under test",
        conflicts_with = "container"
    )]
    pub listen_port: Option<u16>,

    /// With --agent: sample this Podman or Docker container (by name or id) on the agent's
    /// host, through its cgroup.
    #[arg(
        long,
        value_name = "NAME",
        requires = "agent",
        help_heading = "Server under test"
    )]
    pub container: Option<String>,

    /// The server is on another host, where `loadlab agent` runs: --target, --exec, --pid,
    /// --cgroup, --port, --container and the limits then apply there, and the server's CPU,
    /// memory, throttling and TCP counters come from its agent, on this run's timeline. With
    /// no server flag: what the agent was started to watch, else the URL's port there.
    #[arg(long, value_name = "URL", help_heading = "Server on another host")]
    pub agent: Option<String>,

    /// The agent's token, in a file (never on the command line); the agent printed its path.
    #[arg(
        long,
        value_name = "FILE",
        requires = "agent",
        help_heading = "Server on another host"
    )]
    pub agent_token_file: Option<PathBuf>,

    /// Trust the agent's certificate by its SHA-256 fingerprint (the agent printed it).
    #[arg(
        long,
        value_name = "SHA256",
        requires = "agent",
        help_heading = "Server on another host"
    )]
    pub agent_fingerprint: Option<String>,

    /// Or trust the agent's certificate through this CA (or the certificate itself).
    #[arg(
        long,
        value_name = "FILE",
        requires = "agent",
        conflicts_with = "agent_fingerprint",
        help_heading = "Server on another host"
    )]
    pub agent_cacert: Option<PathBuf>,

    /// CPU quota for the launched server, in cores (0.08 = 8% of one core), enforced per
    /// 100 ms period like `docker run --cpus`.
    #[arg(long, value_name = "CORES", help_heading = "Server under test")]
    pub cpus: Option<String>,

    /// Memory limit for the launched server, e.g. 128Mi, 1Gi; past it the kernel OOM-kills.
    #[arg(long, value_name = "SIZE", help_heading = "Server under test")]
    pub memory: Option<String>,

    /// Pin the launched server to these CPUs, e.g. 1 or 0-1; loadlab then runs on the others.
    #[arg(long, value_name = "CPUS", help_heading = "Server under test")]
    pub pin: Option<String>,

    /// strict: refuse to run when a limit cannot be applied; best-effort: run, and say in
    /// the result which limits held.
    #[arg(long, value_enum, default_value_t = LimitsArg::Strict, help_heading = "Server under test")]
    pub limits: LimitsArg,

    /// How often to sample the server's CPU and memory.
    #[arg(long, value_parser = crate::cmd::run::parse_duration, default_value = "100ms",
          help_heading = "Server under test")]
    pub sample_every: Duration,

    /// A launched server is ready when GET PATH answers 2xx.
    #[arg(
        long,
        value_name = "PATH",
        default_value = "/healthz",
        help_heading = "Server under test"
    )]
    pub healthz: String,

    /// Longest wait for a launched server to become ready.
    #[arg(long, value_parser = crate::cmd::run::parse_duration, default_value = "60s",
          help_heading = "Server under test")]
    pub startup_timeout: Duration,

    /// With --target: UPSTREAM_URL for its /upstream endpoint (e.g. `loadlab upstream`'s URL);
    /// an http:// URL also sets UPSTREAM_GRPC_URL to the same port, for /upstream-grpc.
    #[arg(
        long,
        value_name = "URL",
        requires = "target",
        help_heading = "Server under test"
    )]
    pub upstream: Option<String>,

    /// With --target: UPSTREAM_CA, the CA file an https:// --upstream's certificate chains
    /// to (the `ca PATH` line of `loadlab upstream --tls`).
    #[arg(
        long,
        value_name = "FILE",
        requires = "upstream",
        help_heading = "Server under test"
    )]
    pub upstream_ca: Option<PathBuf>,

    /// Serve the launched server over HTTPS: loadlab makes a throwaway CA and a certificate
    /// for the loopback names, gives them to the server as TLS_CERT and TLS_KEY, trusts the CA
    /// for the run, and removes them afterwards. The URL is then a path (/plaintext).
    #[arg(long, help_heading = "Server under test")]
    pub tls: bool,

    /// Environment for the launched server, NAME=VALUE (repeatable): the lab's knobs such as
    /// BACKLOG=16 or WORKERS=1 (the run's verdicts name BACKLOG when its queue overflows).
    #[arg(
        long = "env",
        value_name = "NAME=VALUE",
        help_heading = "Server under test"
    )]
    pub env: Vec<String>,

    /// Cap the link to a launched server at RATE each way: 2MBps is 2,000,000 bytes/s
    /// (megabytes, decimal), counted on the wire with headers; 16Mbit is megabits. The server
    /// then runs in a network namespace of its own, behind a veth pair shaped by tbf and
    /// calibrated before the run. Needs root and iproute2.
    #[arg(
        long,
        value_name = "RATE",
        help_heading = "Network (a launched server)"
    )]
    pub bandwidth: Option<String>,

    /// The cap toward the server (requests) only, or apart from --bandwidth's.
    #[arg(
        long,
        value_name = "RATE",
        help_heading = "Network (a launched server)"
    )]
    pub bandwidth_up: Option<String>,

    /// The cap toward loadlab (responses) only, or apart from --bandwidth's.
    #[arg(
        long,
        value_name = "RATE",
        help_heading = "Network (a launched server)"
    )]
    pub bandwidth_down: Option<String>,

    /// Delay every packet by D each way (the round trip grows by 2 D), e.g. 20ms. Needs the
    /// netem qdisc: where the kernel lacks it, the run fails and says so.
    #[arg(long, value_name = "D", value_parser = crate::cmd::run::parse_duration,
          help_heading = "Network (a launched server)")]
    pub delay: Option<Duration>,

    /// Drop this share of packets at random each way, e.g. 0.1%. Needs netem, as --delay.
    #[arg(
        long,
        value_name = "PERCENT",
        help_heading = "Network (a launched server)"
    )]
    pub loss: Option<String>,

    /// With --target: the targets directory [default: the nearest targets/ above here].
    #[arg(
        long,
        value_name = "DIR",
        requires = "target",
        help_heading = "Server under test"
    )]
    pub targets: Option<PathBuf>,
}

impl ServerArgs {
    /// The agent the flags name, with the limits as typed (the agent parses them against
    /// its own host's CPUs).
    fn agent(&self) -> anyhow::Result<Option<AgentSpec>> {
        let Some(url) = &self.agent else {
            return Ok(None);
        };
        let Some(token_file) = self.agent_token_file.clone() else {
            bail!(
                "--agent {url}: give the agent's token file with --agent-token-file FILE (the \
                 agent printed its path at start; copy it here, mode 0600)"
            );
        };
        if !self.launches() && (self.cpus.is_some() || self.memory.is_some() || self.pin.is_some())
        {
            bail!("--cpus, --memory and --pin limit a server the agent starts: add --target NAME or --exec CMD");
        }
        Ok(Some(AgentSpec {
            endpoint: AgentEndpoint {
                url: url.clone(),
                token_file,
                fingerprint: self.agent_fingerprint.clone(),
                cacert: self.agent_cacert.clone(),
            },
            cpus: self.cpus.clone(),
            memory: self.memory.clone(),
            pin: self.pin.clone(),
        }))
    }

    fn launches(&self) -> bool {
        self.target.is_some() || self.exec.is_some()
    }

    fn limits(&self) -> anyhow::Result<Limits> {
        if self.agent.is_some() {
            // Parsed on the agent's host, against its CPUs.
            return Ok(Limits::default());
        }
        let online = limits::online_cpus();
        let limits = Limits {
            cpus: self
                .cpus
                .as_deref()
                .map(|c| limits::parse_cpus(c, online))
                .transpose()?,
            memory: self
                .memory
                .as_deref()
                .map(limits::parse_memory)
                .transpose()?,
            pin: self
                .pin
                .as_deref()
                .map(|p| limits::parse_cpu_list(p, online))
                .transpose()?,
        };
        if !self.env.is_empty() && self.target.is_none() && self.exec.is_none() {
            bail!(
                "--env sets the environment of a server loadlab starts: add --target NAME or \
                 --exec CMD"
            );
        }
        if !limits.is_empty() && self.target.is_none() && self.exec.is_none() {
            bail!(
                "--cpus, --memory and --pin limit a server loadlab starts: add --target NAME or \
                 --exec CMD (a server already running cannot be limited from here)"
            );
        }
        Ok(limits)
    }

    /// The shaped link the flags ask for, if any.
    fn link(&self) -> anyhow::Result<Option<LinkSpec>> {
        let rate = |raw: &Option<String>, flag: &str| {
            raw.as_deref()
                .map(|r| Rate::parse(r).map_err(|e| anyhow::anyhow!("{flag}: {e}")))
                .transpose()
        };
        let both = rate(&self.bandwidth, "--bandwidth")?;
        let loss_percent = match self.loss.as_deref() {
            Some(raw) => {
                let value: f64 = raw.trim().trim_end_matches('%').parse().map_err(|_| {
                    anyhow::anyhow!("--loss {raw:?}: give a percentage such as 0.1%")
                })?;
                if !(value > 0.0 && value <= 100.0) {
                    bail!("--loss {raw:?}: between 0% and 100%, such as 0.1%");
                }
                Some(value)
            }
            None => None,
        };
        let link = LinkSpec {
            up: rate(&self.bandwidth_up, "--bandwidth-up")?.or(both),
            down: rate(&self.bandwidth_down, "--bandwidth-down")?.or(both),
            delay: self.delay.filter(|d| !d.is_zero()),
            loss_percent,
        };
        if link.is_empty() {
            return Ok(None);
        }
        if self.agent.is_some() {
            bail!(
                "--bandwidth, --delay and --loss shape a link on this machine; with --agent the \
                 server is on another host: shape that host's link there, or drop --agent"
            );
        }
        if self.target.is_none() && self.exec.is_none() {
            bail!(
                "--bandwidth, --delay and --loss shape the link to a server loadlab starts: add \
                 --target NAME or --exec CMD (loadlab runs it in a network namespace of its own, \
                 behind the shaped link; a server already running cannot be moved there)"
            );
        }
        Ok(Some(link))
    }

    /// The server the flags describe, for the session; `None` when no server flag was given.
    /// The limits are parsed here (and refused without a server to limit); the rest is
    /// checked by the session (`ServerSpec::check`) before anything starts.
    pub fn spec(&self) -> anyhow::Result<Option<ServerSpec>> {
        let agent = self.agent()?;
        let limits = self.limits()?;
        let link = self.link()?;
        let mut env = Vec::new();
        for pair in &self.env {
            let Some((name, value)) = pair.split_once('=').filter(|(n, _)| !n.is_empty()) else {
                bail!("--env {pair:?}: write NAME=VALUE, such as --env BACKLOG=16");
            };
            env.push((name.to_string(), value.to_string()));
        }
        if !env.is_empty() && self.target.is_none() && self.exec.is_none() {
            bail!("--env sets the environment of a server loadlab starts: add --target NAME or --exec CMD");
        }
        let kind = if let Some(name) = &self.target {
            ServerKind::Target {
                name: name.clone(),
                dir: self.targets.clone(),
                upstream: self.upstream.clone(),
            }
        } else if let Some(cmd) = &self.exec {
            ServerKind::Exec(cmd.clone())
        } else if let Some(pid) = self.pid {
            ServerKind::Pid(pid)
        } else if let Some(path) = &self.cgroup {
            ServerKind::Cgroup(path.clone())
        } else if let Some(port) = self.listen_port {
            ServerKind::Port(port)
        } else if let Some(name) = &self.container {
            ServerKind::Container(name.clone())
        } else if self.agent.is_some() {
            ServerKind::AgentDefault
        } else {
            if self.tls {
                bail!(
                    "--tls serves a server loadlab starts over HTTPS: add --target NAME or \
                     --exec CMD (for a server already running over HTTPS, give its https:// URL \
                     and --cacert)"
                );
            }
            return Ok(None);
        };
        Ok(Some(ServerSpec {
            limits,
            mode: match self.limits {
                LimitsArg::Strict => LimitsMode::Strict,
                LimitsArg::BestEffort => LimitsMode::BestEffort,
            },
            sample_every: self.sample_every,
            healthz: self.healthz.clone(),
            startup_timeout: self.startup_timeout,
            env,
            link,
            tls: self.tls,
            upstream_ca: self.upstream_ca.clone(),
            agent,
            ..ServerSpec::new(kind)
        }))
    }
}
