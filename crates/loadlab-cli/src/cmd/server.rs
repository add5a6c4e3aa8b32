//! The server side of `loadlab run`: launch the server under limits (`--target`, `--exec`) or
//! watch one already running (`--pid`, `--cgroup`), sample it while the load runs, and hand
//! the report to the result. The work is in `loadlab-probe`; this is flags and wiring.

use anyhow::{bail, Context as _};
use clap::Args;
use loadlab_lab::{Lab, ServeOptions};
use loadlab_probe::limits::{self, format_cpu_list};
use loadlab_probe::report::{self, ServerReport, Startup};
use loadlab_probe::sampler::{Samples, Source};
use loadlab_probe::{Cgroup, Launch, Launched, Limits, LimitsMode, Readiness, Sampler};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

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

    /// With --target: the targets directory [default: the nearest targets/ above here].
    #[arg(
        long,
        value_name = "DIR",
        requires = "target",
        help_heading = "Server under test"
    )]
    pub targets: Option<PathBuf>,
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
    /// CPUs left for loadlab when the server was pinned.
    pub generator_cpus: Option<Vec<usize>>,
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
        if !limits.is_empty() && self.target.is_none() && self.exec.is_none() {
            bail!(
                "--cpus, --memory and --pin limit a server loadlab starts: add --target NAME or \
                 --exec CMD (a server already running cannot be limited from here)"
            );
        }
        Ok(limits)
    }

    /// Checks the flags without starting anything, so a typo fails before a JVM boots.
    pub fn check(&self) -> anyhow::Result<()> {
        self.limits()?;
        if self.sample_every < Duration::from_millis(10) {
            bail!("--sample-every must be at least 10ms");
        }
        if !self.healthz.starts_with('/') {
            bail!(
                "--healthz {:?} must be a path starting with /",
                self.healthz
            );
        }
        Ok(())
    }

    pub fn wants_server(&self) -> bool {
        self.target.is_some() || self.exec.is_some() || self.pid.is_some() || self.cgroup.is_some()
    }

    /// Launches or attaches. `None` when no server flag was given.
    pub fn start(&self, quiet: bool) -> anyhow::Result<Option<Server>> {
        if !self.wants_server() {
            return Ok(None);
        }
        let limits = self.limits()?;
        let mode = match self.limits {
            LimitsArg::Strict => LimitsMode::Strict,
            LimitsArg::BestEffort => LimitsMode::BestEffort,
        };
        let generator_cpus = limits.pin.as_ref().and_then(|pinned| {
            let free: Vec<usize> = (0..limits::online_cpus())
                .filter(|c| !pinned.contains(c))
                .collect();
            (!free.is_empty()).then_some(free)
        });
        let (launch, kind) = if let Some(name) = &self.target {
            let lab = match &self.targets {
                Some(dir) => Lab::open(dir)?,
                None => Lab::discover(
                    &std::env::current_dir().context("cannot read the current directory")?,
                )?,
            };
            let options = ServeOptions {
                upstream_url: self.upstream.clone(),
                ..ServeOptions::default()
            };
            let command = lab.command(name, &options)?;
            (
                Some(Launch {
                    command,
                    description: name.clone(),
                    limits,
                    mode,
                    readiness: Readiness::AddressLine,
                    health_path: self.healthz.clone(),
                    timeout: self.startup_timeout,
                }),
                "launched",
            )
        } else if let Some(cmd) = &self.exec {
            let port = loadlab_probe::launch::free_port()
                .context("cannot find a free loopback port for --exec")?;
            let mut command = Command::new("sh");
            command
                .arg("-c")
                .arg(cmd.replace("{port}", &port.to_string()))
                .env("PORT", port.to_string())
                .env("HOST", "127.0.0.1");
            (
                Some(Launch {
                    command,
                    description: cmd.clone(),
                    limits,
                    mode,
                    readiness: Readiness::Address(([127, 0, 0, 1], port).into()),
                    health_path: self.healthz.clone(),
                    timeout: self.startup_timeout,
                }),
                "launched",
            )
        } else {
            (None, if self.pid.is_some() { "pid" } else { "cgroup" })
        };
        let server = match launch {
            Some(launch) => {
                let launched = launch.start()?;
                let (idle_rss, idle_memory) = launched.memory_now();
                if !quiet {
                    eprintln!(
                        "started {} (pid {}) at http://{} in {:.0} ms{}",
                        launched.description(),
                        launched.pid(),
                        launched.addr(),
                        launched.ready_after().as_secs_f64() * 1e3,
                        describe_limits(launched.limits())
                    );
                }
                Server {
                    source: launched.source(),
                    kind,
                    description: launched.description().to_string(),
                    startup: Some(Startup {
                        ready_s: launched.ready_after().as_secs_f64(),
                        health_url: launched.health_url(),
                        idle_rss_bytes: idle_rss,
                        idle_memory_bytes: idle_memory,
                    }),
                    launched: Some(launched),
                    every: self.sample_every,
                    sampler: None,
                    generator_cpus,
                }
            }
            None => {
                let source = match (self.pid, &self.cgroup) {
                    (Some(pid), _) => {
                        if !loadlab_probe::procfs::alive(pid) {
                            bail!("--pid {pid}: no such running process");
                        }
                        Source::Tree { pid }
                    }
                    (None, Some(path)) => {
                        Source::Attached(std::sync::Arc::new(Cgroup::attach(path)?))
                    }
                    (None, None) => unreachable!("wants_server checked"),
                };
                Server {
                    source,
                    kind,
                    description: match (self.pid, &self.cgroup) {
                        (Some(pid), _) => format!("pid {pid}"),
                        (_, Some(path)) => format!("cgroup {path}"),
                        _ => String::new(),
                    },
                    startup: None,
                    launched: None,
                    every: self.sample_every,
                    sampler: None,
                    generator_cpus: None,
                }
            }
        };
        Ok(Some(server))
    }
}

fn describe_limits(report: &loadlab_probe::cgroup::LimitsReport) -> String {
    let held = report.describe();
    if held.is_empty() {
        String::new()
    } else {
        format!(", limits: {} ({})", held.join(", "), report.mechanism)
    }
}

impl Server {
    /// The base URL of a launched server, to resolve a bare path against.
    pub fn base_url(&self) -> Option<String> {
        self.launched
            .as_ref()
            .map(|l| format!("http://{}", l.addr()))
    }

    /// Starts sampling; `on_exit` runs if the server dies.
    pub fn start_sampling(&mut self, on_exit: Box<dyn FnOnce() + Send>) {
        let probe = self.launched.as_ref().map(Launched::exit_probe);
        self.sampler = Some(Sampler::start(
            self.source.clone(),
            self.every,
            probe,
            on_exit,
        ));
    }

    /// Stops sampling and builds the report; `origin` is the run's start, `measured` the
    /// measured span in seconds from it.
    pub fn finish(&mut self, origin: Instant, measured: (f64, f64)) -> ServerReport {
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
        }
    }
}

/// `0-1` for messages.
pub fn cpus(list: &[usize]) -> String {
    format_cpu_list(list)
}
