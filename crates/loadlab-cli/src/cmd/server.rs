//! The server flags of `loadlab run`: launch the server under limits (`--target`, `--exec`)
//! or watch one already running (`--pid`, `--cgroup`). Flags only: the session launches,
//! samples and reports.

use anyhow::bail;
use clap::Args;
use loadlab_probe::limits;
use loadlab_probe::{Limits, LimitsMode};
use loadlab_session::{ServerKind, ServerSpec};
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
          conflicts_with_all = ["exec", "pid", "cgroup"])]
    pub target: Option<String>,

    /// Start any server with `sh -c CMD` for the run. It must listen on 127.0.0.1:$PORT
    /// (loadlab picks the port; `{port}` in CMD is replaced by it). The URL may be a path.
    #[arg(long, value_name = "CMD", help_heading = "Server under test",
          conflicts_with_all = ["pid", "cgroup"])]
    pub exec: Option<String>,

    /// Sample a server that is already running: this process and its children.
    #[arg(
        long,
        value_name = "PID",
        help_heading = "Server under test",
        conflicts_with = "cgroup"
    )]
    pub pid: Option<u32>,

    /// Sample every process in this cgroup: a directory under /sys/fs/cgroup, or a path as
    /// /proc/PID/cgroup shows it (e.g. /system.slice/nginx.service).
    #[arg(long, value_name = "PATH", help_heading = "Server under test")]
    pub cgroup: Option<String>,

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

    /// With --target: UPSTREAM_URL for its /upstream endpoint (e.g. `loadlab upstream`'s URL).
    #[arg(
        long,
        value_name = "URL",
        requires = "target",
        help_heading = "Server under test"
    )]
    pub upstream: Option<String>,

    /// Environment for the launched server, NAME=VALUE; repeat for more. For lab targets,
    /// the contract's knobs: --env WORKERS=128 --env BACKLOG=256.
    #[arg(short = 'e', long = "env", value_name = "NAME=VALUE", value_parser = env_pair,
          help_heading = "Server under test")]
    pub env: Vec<(String, String)>,

    /// With --target: the targets directory [default: the nearest targets/ above here].
    #[arg(
        long,
        value_name = "DIR",
        requires = "target",
        help_heading = "Server under test"
    )]
    pub targets: Option<PathBuf>,
}

/// `NAME=VALUE`, with a name a shell would accept.
fn env_pair(raw: &str) -> Result<(String, String), String> {
    let (name, value) = raw
        .split_once('=')
        .ok_or_else(|| format!("`{raw}`: write NAME=VALUE, e.g. WORKERS=4"))?;
    let ok = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(format!(
            "`{name}` is not an environment variable name (letters, digits and _)"
        ));
    }
    Ok((name.to_string(), value.to_string()))
}

impl ServerArgs {
    fn limits(&self) -> anyhow::Result<Limits> {
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

    /// The server the flags describe, for the session; `None` when no server flag was given.
    /// The limits are parsed here (and refused without a server to limit); the rest is
    /// checked by the session (`ServerSpec::check`) before anything starts.
    pub fn spec(&self) -> anyhow::Result<Option<ServerSpec>> {
        let limits = self.limits()?;
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
        } else {
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
            env: self.env.clone(),
            ..ServerSpec::new(kind)
        }))
    }
}
