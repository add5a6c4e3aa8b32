//! The machine and the wire in a session: the preflight checks against the planned run
//! (the same as `loadlab doctor`), the kernel's TCP counters read at the start and the end of
//! the measured time, and the shaped link's counters. The mechanisms are
//! `loadlab-machine`'s; this module only plans, times and attaches. It must not print.

use crate::server::{ServerKind, ServerSpec};
use crate::SessionError;
use loadlab_engine::{RunConfig, RunControl};
use loadlab_machine::counters::{self, Snapshot};
use loadlab_machine::plan::{Arrivals, Backlog, OpenLoop, Target, WantedControllers};
use loadlab_machine::{Link, PlannedRun, Scope};
use loadlab_result::machine::QdiscStats;
use loadlab_result::{Check, CheckStatus, RunResult};
use std::collections::BTreeSet;
use std::net::ToSocketAddrs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the machine is checked before a run.
#[derive(Debug, Clone, Copy)]
pub struct MachineOptions {
    /// A FAIL stops the run before it starts (`--strict`); otherwise checks only warn.
    pub strict: bool,
    /// How long CPU use is sampled (busy processes, steal).
    pub sample: Duration,
}

impl Default for MachineOptions {
    fn default() -> Self {
        MachineOptions {
            strict: false,
            sample: Duration::from_millis(200),
        }
    }
}

/// The run as the checks see it. `target_known`: the URL names where the load goes (not so
/// for `loadlab doctor` without one); `link`: the server will sit behind a shaped link.
pub fn planned_run(
    config: &RunConfig,
    server: Option<&ServerSpec>,
    target_known: bool,
    behind_link: bool,
) -> PlannedRun {
    let launches = server.is_some_and(ServerSpec::launches);
    let open_loop = match &config.model {
        loadlab_engine::config::Model::Open { profile, .. } => Some(OpenLoop {
            peak_rate: profile
                .stages
                .iter()
                .map(|s| s.from.max(s.to))
                .fold(0.0, f64::max),
            max_connections: config.connections as u64,
        }),
        loadlab_engine::config::Model::Closed { .. } => None,
    };
    let loopback = !behind_link
        && (config.url.host.as_str(), config.url.port)
            .to_socket_addrs()
            .ok()
            .is_some_and(|mut a| a.any(|a| a.ip().is_loopback()));
    let target = target_known.then_some(Target {
        // A launched server is not listening yet: nothing to look up on its port.
        port: if launches { 0 } else { config.url.port },
        loopback,
    });
    let generator_cpus: BTreeSet<usize> = match &config.generator_cpus {
        Some(cpus) => cpus.iter().copied().collect(),
        None => loadlab_probe::affinity::of(0).unwrap_or_default(),
    };
    let server_cpus = match server {
        Some(s) if launches => Some(match &s.limits.pin {
            Some(pin) => pin.iter().copied().collect(),
            // Unpinned, it may run wherever loadlab may.
            None => loadlab_probe::affinity::of(0).unwrap_or_default(),
        }),
        Some(ServerSpec {
            kind: ServerKind::Pid(pid),
            ..
        }) => loadlab_probe::affinity::of_process(*pid),
        _ => None,
    };
    // A WebSocket run's connections: a closed loop opens a bounded number at a time, an open
    // loop as its messages fall due; a connection storm's are new for each handshake.
    let arrivals = match (&config.ws, &open_loop) {
        (None, _) => Arrivals::AtStart,
        (Some(_), Some(_)) => Arrivals::AsNeeded,
        (Some(_), None) => Arrivals::AtMostAtOnce(loadlab_engine::ws::HANDSHAKES_AT_ONCE as u64),
    };
    let storm = config
        .ws
        .as_ref()
        .is_some_and(|w| w.mode == loadlab_engine::ws::WsMode::Connect);
    PlannedRun {
        connections: config.connections as u64,
        open_loop,
        keepalive: config.keepalive && !storm,
        arrivals,
        target,
        backlog: server.and_then(backlog_env).and_then(|raw| {
            Some(Backlog {
                value: raw.parse().ok()?,
                source: format!("BACKLOG={raw}"),
            })
        }),
        server_cpus,
        generator_cpus,
        limits: server.map_or(WantedControllers::default(), |s| WantedControllers {
            cpu: s.limits.cpus.is_some(),
            memory: s.limits.memory.is_some(),
            cpuset: s.limits.pin.is_some(),
        }),
        pm_qos: config.pm_qos,
        link: server
            .and_then(|s| s.link)
            .map(|l| l.delay.is_some() || l.loss_percent.is_some()),
        udp_receive_buffer_bytes: config
            .http3
            .then_some(loadlab_engine::engine::H3_UDP_RCVBUF_BYTES),
    }
}

/// `BACKLOG` as given to a launched server.
pub fn backlog_env(server: &ServerSpec) -> Option<String> {
    server
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "BACKLOG")
        .map(|(_, v)| v.clone())
}

/// Reads the machine and checks it against `plan`.
pub fn check(plan: &PlannedRun, server: Option<&ServerSpec>, sample: Duration) -> Vec<Check> {
    let exclude: Vec<u32> = match server.map(|s| &s.kind) {
        Some(ServerKind::Pid(pid)) => loadlab_probe::procfs::tree(*pid),
        _ => Vec::new(),
    };
    let readings = loadlab_machine::reader::read_machine(plan, sample, &exclude);
    loadlab_machine::checks::all(&readings, plan)
}

/// Checks the machine against the run before anything starts: the findings that did not
/// pass go to `notes`; a closed loop with more connections than descriptors or local ports
/// is refused (it could only measure loadlab's own failures, and would hold a task per
/// connection), as a bad flag is; with `options.strict`, so is any FAIL.
pub fn preflight(
    config: &RunConfig,
    server: Option<&ServerSpec>,
    behind_link: bool,
    options: MachineOptions,
    notes: &mut Vec<String>,
) -> Result<(PlannedRun, Vec<Check>), SessionError> {
    let plan = planned_run(config, server, true, behind_link);
    let checks = check(&plan, server, options.sample);
    let failed: Vec<&Check> = checks
        .iter()
        .filter(|c| c.status == CheckStatus::Fail)
        .collect();
    let lines = |list: &[&Check]| {
        list.iter()
            .map(|c| loadlab_machine::checks::line(c))
            .collect::<Vec<_>>()
            .join("\n  ")
    };
    let impossible: Vec<&Check> = failed
        .iter()
        .copied()
        .filter(|c| {
            !config.is_open_loop() && matches!(c.name.as_str(), "open_files" | "ephemeral_ports")
        })
        .collect();
    if !impossible.is_empty() {
        return Err(SessionError::Invalid(format!(
            "-c {}: this machine cannot open that many connections (refused with or without \
             --strict: the connections past the limit would fail on loadlab's side, not the \
             server's):\n  {}",
            config.connections,
            lines(&impossible)
        )));
    }
    if options.strict && !failed.is_empty() {
        return Err(SessionError::Invalid(format!(
            "--strict: this machine cannot hold the run as planned:\n  {}",
            lines(&failed)
        )));
    }
    notes.extend(
        checks
            .iter()
            .filter(|c| c.status != CheckStatus::Pass)
            .map(loadlab_machine::checks::line),
    );
    Ok((plan, checks))
}

/// The machine's checks against the run `spec` describes, without starting anything
/// (`loadlab doctor`). The URL may be empty (the target is then unknown) or a path (with a
/// server to launch).
pub fn doctor(spec: crate::SessionSpec, sample: Duration) -> Result<Vec<Check>, SessionError> {
    let crate::SessionSpec {
        mut run, server, ..
    } = spec;
    if let Some(server) = &server {
        server.check()?;
    }
    let link = server.as_ref().is_some_and(|s| s.link.is_some());
    let target_known = !run.url.is_empty();
    // HTTP/3 is refused over http://.
    let scheme = if run.http3 { "https" } else { "http" };
    if !target_known {
        run.url = format!("{scheme}://doctor.invalid/");
    } else if run.url.starts_with('/') {
        run.url = format!("{scheme}://127.0.0.1:1{}", run.url);
    }
    if let Some(free) = server.as_ref().and_then(ServerSpec::generator_cpus) {
        run.threads = run.threads.or(Some(free.len()));
        run.generator_cpus = Some(free);
    }
    let config = run.validate()?;
    let agent = server.as_ref().and_then(|s| s.agent.as_ref());
    // With an agent the server is on its host: this machine is checked as the generator's.
    let local_server = server.as_ref().filter(|s| s.agent.is_none());
    let plan = planned_run(&config, local_server, target_known, link);
    let mut checks = check(&plan, local_server, sample);
    if let Some(agent) = agent {
        checks.extend(crate::remote::doctor_checks(&agent.endpoint, &config)?);
    }
    Ok(checks)
}

/// The kernel's counters (and the link's) at one moment.
struct Reading {
    kernel: Snapshot,
    link: [Option<QdiscStats>; 2],
}

fn read(scopes: &[Scope], port: u16, link: Option<&Link>) -> Reading {
    Reading {
        kernel: counters::snapshot(scopes, Some(port)),
        link: link.map_or([None, None], Link::stats),
    }
}

/// Reads the counters when the measured time starts (after the warm-up, on a thread of its
/// own when there is one) and when it ends, and puts their deltas in the result.
pub struct Window {
    scopes: Vec<Scope>,
    port: u16,
    start: Option<Reading>,
    watcher: Option<(Arc<AtomicBool>, std::thread::JoinHandle<Option<Reading>>)>,
}

impl Window {
    /// Called just before the engine starts.
    pub fn open(config: &RunConfig, link: Option<&Link>, control: &RunControl) -> Window {
        let mut scopes = vec![Scope::Own];
        if let Some(link) = link {
            scopes.push(Scope::Netns(link.netns_path()));
        }
        let port = config.url.port;
        if config.warmup.is_zero() {
            return Window {
                start: Some(read(&scopes, port, link)),
                scopes,
                port,
                watcher: None,
            };
        }
        // The sockets on the port are counted now, before the run: that is a netlink walk of
        // every TCP socket on the host (milliseconds of CPU with thousands in TIME_WAIT), which
        // at the warm-up's end would take a pinned generator's core just as measurement
        // begins. The counters, two small files, are read at the warm-up's end.
        let sockets = counters::snapshot(&scopes, Some(port));
        let done = Arc::new(AtomicBool::new(false));
        let (flag, control, warmup) = (done.clone(), control.clone(), config.warmup);
        let (watch_scopes, link_stats) = (scopes.clone(), link.map(LinkStats::of));
        let watcher = std::thread::Builder::new()
            .name("loadlab-counters".into())
            .spawn(move || {
                let quit = || flag.load(Ordering::Acquire) || control.is_stopped();
                let started = loop {
                    if let Some(s) = control.started_at() {
                        break s;
                    }
                    if quit() {
                        return None;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                };
                let at = started + warmup;
                while Instant::now() < at {
                    if quit() {
                        return None;
                    }
                    std::thread::sleep((at - Instant::now()).min(Duration::from_millis(5)));
                }
                let mut kernel = counters::snapshot(&watch_scopes, None);
                kernel.time_wait = sockets.time_wait;
                kernel.backlog = sockets.backlog;
                Some(Reading {
                    kernel,
                    link: link_stats.map_or([None, None], |l| l.read()),
                })
            })
            .ok();
        Window {
            scopes,
            port,
            start: None,
            watcher: watcher.map(|w| (done, w)),
        }
    }

    /// Called as soon as the engine has returned: reads the end. `None` when the run was
    /// stopped before its warm-up ended (no measured time to read counters over).
    pub fn close(mut self, link: Option<&Link>) -> Option<Measured> {
        let end = read(&self.scopes, self.port, link);
        if let Some((done, watcher)) = self.watcher.take() {
            done.store(true, Ordering::Release);
            self.start = watcher.join().ok().flatten();
        }
        Some(Measured {
            start: self.start.take()?,
            end,
            scopes: std::mem::take(&mut self.scopes),
            port: self.port,
        })
    }
}

impl Drop for Window {
    /// An engine that failed leaves no watcher waiting.
    fn drop(&mut self) {
        if let Some((done, _)) = &self.watcher {
            done.store(true, Ordering::Release);
        }
    }
}

/// The readings at both ends of the measured time.
pub struct Measured {
    start: Reading,
    end: Reading,
    scopes: Vec<Scope>,
    port: u16,
}

impl Measured {
    /// Puts the deltas, and what they mean, in the result.
    pub fn attach(
        self,
        result: &mut RunResult,
        link: Option<&Link>,
        backlog_env: Option<String>,
        target_local: bool,
    ) {
        let Measured {
            start,
            end,
            scopes,
            port,
        } = self;
        if let Some(mut k) = counters::delta(
            &start.kernel,
            &end.kernel,
            counters::describe(&scopes),
            Some(port),
        ) {
            // Over TCP, UDP's counters would be other processes' datagrams.
            let quic = result.load.protocol == "h3";
            if !quic {
                k.udp = None;
            }
            let found = counters::findings(
                &k,
                &counters::Context {
                    server_local: target_local || link.is_some(),
                    backlog_env,
                    issued: result.measured.requests.issued,
                    quic,
                },
            );
            counters::spare_the_target_for_udp_drops(&mut result.verdicts, &k, None);
            result.verdicts.extend(found.verdicts);
            result.warnings.extend(found.warnings);
            result.kernel = Some(k);
        }
        if let Some(link) = link {
            let measured = [0, 1].map(|i| match (start.link[i], end.link[i]) {
                (Some(a), Some(b)) => Some(b.since(a)),
                _ => None,
            });
            let report = link.report(measured);
            if let Some(down) = &report.down {
                if down.qdisc_stats.drops > 0 {
                    result.warnings.push(format!(
                        "the link's queue toward loadlab dropped {} packets over the measured \
                         time: the server sent more than {} carries, and TCP resent them",
                        down.qdisc_stats.drops,
                        link.spec().down.map_or("the cap".into(), |r| r.to_string())
                    ));
                }
            }
            result.link = Some(report);
        }
    }
}

/// What the watcher thread needs to read a link's qdiscs without borrowing the link.
struct LinkStats {
    host_dev: String,
    netns: String,
}

impl LinkStats {
    fn of(link: &Link) -> LinkStats {
        LinkStats {
            host_dev: link.host_device().to_string(),
            netns: link.netns().to_string(),
        }
    }

    fn read(&self) -> [Option<QdiscStats>; 2] {
        loadlab_machine::link::stats_of(&self.host_dev, &self.netns)
    }
}
