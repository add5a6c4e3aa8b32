//! The server on another host, through its agent (`--agent`): the session asks the agent to
//! launch or attach, keeps the agent's lease alive, collects the agent's samples while the
//! load runs, places them on this run's timeline with the estimated clock offset, and
//! builds the same [`ServerReport`] a local server gets, plus what only the agent knows
//! (the server host's TCP counters, the clock, a lost agent).
//!
//! One thread per remote server (the keeper) talks to the agent on its own connection:
//! while sampling it long-polls the agent's samples (each poll renews the lease), otherwise
//! it renews the lease every third of it. The session's own calls (open, start, stop,
//! close) go on another connection. Losing the agent never fails the run: the keeper notes
//! when and why, and the server's series ends there.
//!
//! It must not print: what a person should know comes back as notes and warnings.

use crate::SessionError;
use loadlab_agent::client::{AgentClient, AgentEndpoint, ClientError};
use loadlab_agent::clock::{ClockMap, LocalClock};
use loadlab_agent::protocol::{
    Hello, OpenSession, Opened, ServerRequest, StartSampling, WireSample,
};
use loadlab_probe::report::{self, ServerReport};
use loadlab_probe::sampler::{Exit, Sample};
use loadlab_result::server::{AgentLost, AgentReport, ClockEstimate};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod keeper;
pub(crate) mod request;

use keeper::{interpolate, Keeper, Shared, CLOCK_BURST};
pub use request::doctor_checks;
use request::hostname;
pub(crate) use request::{demand, request, url_port};

/// A server on the agent's host, for as long as the session holds it.
pub struct Remote {
    client: AgentClient,
    hello: Hello,
    opened: Opened,
    clock: LocalClock,
    every: Duration,
    shared: Arc<Mutex<Shared>>,
    done: Arc<AtomicBool>,
    keeper: Option<JoinHandle<()>>,
}

impl Remote {
    /// Connects, estimates the clock, and opens a session for `server`.
    pub(crate) fn open(
        endpoint: &AgentEndpoint,
        server: ServerRequest,
        fallback_port: Option<u16>,
        every: Duration,
        notes: &mut Vec<String>,
    ) -> Result<Remote, SessionError> {
        let (mut client, hello) = AgentClient::connect(endpoint).map_err(agent_error)?;
        let clock = LocalClock::new();
        let first = client
            .estimate_clock(&clock, CLOCK_BURST)
            .map_err(agent_error)?;
        let server = match (server, fallback_port) {
            // No server named and none given to the agent at start: the URL's port.
            (ServerRequest::Default, Some(port)) if hello.default_server.is_none() => {
                ServerRequest::Port { port }
            }
            (ServerRequest::Default, None) if hello.default_server.is_none() => {
                return Err(SessionError::Invalid(format!(
                    "--agent {}: say which server to watch on {} (--pid, --cgroup, --port, \
                     --container) or launch (--target, --exec); the agent was started without one",
                    endpoint.url, hello.hostname
                )))
            }
            (other, _) => other,
        };
        let request = OpenSession {
            server,
            client: hostname(),
            run: None,
            lease_ms: None,
        };
        let opened = client.open(&request).map_err(agent_error)?;
        notes.push(format!(
            "agent {} on {} (protocol {}, loadlab {}): {} {}; clock offset {:+.3} ms ± {:.3} ms",
            endpoint.url,
            hello.hostname,
            hello.protocol,
            hello.agent_version,
            if opened.kind == "launched" {
                "started"
            } else {
                "watching"
            },
            opened.description,
            first.offset_ns as f64 / 1e6,
            first.uncertainty_ns as f64 / 1e6,
        ));
        notes.extend(opened.notes.iter().map(|n| format!("agent: {n}")));
        let shared = Arc::new(Mutex::new(Shared {
            estimates: vec![first],
            ..Shared::default()
        }));
        let done = Arc::new(AtomicBool::new(false));
        let keeper = Keeper {
            client: client.try_clone().map_err(agent_error)?,
            session: opened.session.clone(),
            lease: Duration::from_millis(opened.lease_ms.max(300)),
            clock,
            shared: shared.clone(),
            done: done.clone(),
        };
        let keeper = std::thread::Builder::new()
            .name("loadlab-agent".into())
            .spawn(move || keeper.run())
            .map_err(|e| SessionError::Invalid(format!("cannot start the agent's keeper: {e}")))?;
        Ok(Remote {
            client,
            hello,
            opened,
            clock,
            every,
            shared,
            done,
            keeper: Some(keeper),
        })
    }

    /// The agent this session talks to (for the fleet's path check).
    pub(crate) fn endpoint(&self) -> &AgentEndpoint {
        self.client.endpoint()
    }

    pub(crate) fn opened(&self) -> &Opened {
        &self.opened
    }

    /// The server host's limits checked against the run (a failure to read them is a note,
    /// not a stop: the agent may be older or the host may hide them).
    pub(crate) fn host_checks(
        &mut self,
        config: &loadlab_engine::RunConfig,
        notes: &mut Vec<String>,
    ) -> Vec<loadlab_result::Check> {
        match self.client.host_info(Some(config.url.port)) {
            Ok(info) => crate::remote_host::checks(&info, demand(config)),
            Err(e) => {
                notes.push(format!("the server host's limits could not be read: {e}"));
                Vec::new()
            }
        }
    }

    /// Where a server the agent launched listens (`HOST:PORT`, IPv6 in brackets).
    pub(crate) fn authority(&self) -> Option<String> {
        let port = self.opened.port?;
        let host = self
            .opened
            .host
            .clone()
            .unwrap_or_else(|| self.client.host().to_string());
        Some(if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        })
    }

    /// Starts the agent's sampling (old samples are dropped); `on_exit` runs if the server
    /// dies. A failure to start is a lost agent, not a failed run.
    pub(crate) fn start_sampling(&mut self, port: Option<u16>, on_exit: Box<dyn FnOnce() + Send>) {
        let request = StartSampling {
            every_ms: self.every.as_millis() as u64,
            port,
        };
        let started = self.client.start_sampling(&self.opened.session, &request);
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        shared.samples.clear();
        shared.own_cpu.clear();
        shared.exit = None;
        shared.after = 0;
        shared.on_exit = Some(on_exit);
        match started {
            Ok(_) => shared.sampling = true,
            Err(e) => {
                if shared.lost.is_none() {
                    shared.lost = Some((self.clock.now_ns(), e.to_string()));
                }
            }
        }
        drop(shared);
        if let Some(k) = &self.keeper {
            k.thread().unpark();
        }
    }

    /// Stops sampling and builds the report; `origin` is the run's start, `measured` the
    /// measured span in seconds from it. Returns the report with the agent's part, and the
    /// verdicts and warnings the server host's counters and the clock call for.
    pub(crate) fn finish(
        &mut self,
        origin: Instant,
        measured: (f64, f64),
        issued: u64,
        backlog_env: Option<String>,
    ) -> (ServerReport, Vec<String>, Vec<String>) {
        // The keeper stops polling first, so the calls below have the agent to themselves.
        let lost_before = {
            let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
            shared.sampling = false;
            shared.lost.is_some()
        };
        let mut kernel = None;
        if !lost_before {
            match self.client.stop_sampling(&self.opened.session) {
                Ok(stopped) => {
                    kernel = stopped.kernel;
                    let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
                    if shared.exit.is_none() {
                        shared.exit = stopped.exit;
                    }
                }
                Err(e) => self.lose(e),
            }
            self.drain();
        }
        let shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        let mut map = ClockMap::default();
        for e in &shared.estimates {
            map.push(*e);
        }
        let samples: Vec<Sample> = shared
            .samples
            .iter()
            .filter_map(|w| self.sample(w, &map, &shared.own_cpu))
            .collect();
        let exit = shared.exit.as_ref().and_then(|e| {
            Some(Exit {
                at: self.clock.instant_of(map.to_local(e.at_ns)?),
                status: e.status.clone(),
                oom_killed: e.oom_killed,
            })
        });
        let (mut verdicts, mut warnings) = (Vec::new(), Vec::new());
        let secs = |ns: i64| (self.clock.instant_of(ns), origin);
        let from_origin = |ns: i64| {
            let (at, origin) = secs(ns);
            if at >= origin {
                (at - origin).as_secs_f64()
            } else {
                -(origin - at).as_secs_f64()
            }
        };
        let lost = shared.lost.as_ref().map(|(at, reason)| AgentLost {
            at_s: from_origin(*at),
            reason: reason.clone(),
        });
        if let Some(lost) = &lost {
            warnings.push(format!(
                "lost the agent on {} at {:.1} s ({}): the load's figures are whole, the server's \
                 series ends there",
                self.hello.hostname, lost.at_s, lost.reason
            ));
        }
        let worst = map.worst_uncertainty_ns().unwrap_or(0);
        if worst as u128 > self.every.as_nanos() {
            warnings.push(format!(
                "the clock offset to {} is known only within {:.1} ms, more than the sampling \
                 interval ({} ms): the server's samples may sit a window off on the timeline \
                 (a slow or busy path to the agent)",
                self.hello.hostname,
                worst as f64 / 1e6,
                self.every.as_millis()
            ));
        }
        if let Some(k) = &kernel {
            let found = loadlab_machine::counters::findings(
                k,
                &loadlab_machine::counters::Context {
                    server_local: true,
                    backlog_env,
                    issued,
                    // The server host's UDP drops are shown with its counters, not judged
                    // here: the wording of the findings is for loadlab's own host.
                    quic: false,
                },
            );
            verdicts.extend(found.verdicts);
            warnings.extend(found.warnings);
        }
        let kernel = kernel.map(|mut k| {
            k.scope = format!(
                "the server's host {} (read by its agent: its whole network namespace, over the \
                 sampled span)",
                self.hello.hostname
            );
            k
        });
        let first = shared.estimates.first().copied();
        let agent = AgentReport {
            url: self.client.endpoint().url.clone(),
            hostname: self.hello.hostname.clone(),
            protocol: self.hello.protocol,
            agent_version: self.hello.agent_version.clone(),
            clock_offset_s: first.map_or(0.0, |e| e.offset_ns as f64 / 1e9),
            clock_uncertainty_s: worst as f64 / 1e9,
            clock_estimates: map
                .estimates()
                .iter()
                .map(|e| ClockEstimate {
                    t_s: from_origin(e.at_ns),
                    offset_s: e.offset_ns as f64 / 1e9,
                    uncertainty_s: e.uncertainty_ns as f64 / 1e9,
                })
                .collect(),
            kernel,
            lost,
        };
        drop(shared);
        let end = exit
            .as_ref()
            .map_or(measured.1, |e| report::exit_report(e, origin).at_s);
        let end = agent.lost.as_ref().map_or(end, |l| end.min(l.at_s));
        let report = ServerReport {
            source: self.opened.kind.clone(),
            description: format!("{} on {}", self.opened.description, self.hello.hostname),
            pid: self.opened.pid,
            limits: self.opened.limits.clone(),
            startup: self.opened.startup.clone(),
            sample_interval_s: self.every.as_secs_f64(),
            summary: report::summarize(
                &samples,
                origin,
                measured.0,
                end,
                self.opened.quota_cores,
                self.opened.memory_limit_bytes,
            ),
            exit: exit.as_ref().map(|e| report::exit_report(e, origin)),
            samples: report::windows(&samples, origin),
            agent: Some(agent),
        };
        (report, verdicts, warnings)
    }

    /// The server's connections as the agent sampled them with each sample (docs/path.md),
    /// each window placed on this run's clock (`t_s` from `origin`); empty from an agent
    /// that does not sample them. Read after [`Remote::finish`], which fetches the last.
    pub(crate) fn server_path(&self, origin: Instant) -> Vec<loadlab_result::path::PathWindow> {
        let shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        let mut map = ClockMap::default();
        for e in &shared.estimates {
            map.push(*e);
        }
        shared
            .samples
            .iter()
            .filter_map(|s| {
                let window = s.path?;
                let at = self.clock.instant_of(map.to_local(s.at_ns)?);
                Some(loadlab_result::path::PathWindow {
                    t_s: at.checked_duration_since(origin)?.as_secs_f64(),
                    ..window
                })
            })
            .collect()
    }

    /// The samples the keeper has not fetched yet.
    fn drain(&mut self) {
        let after = self.shared.lock().unwrap_or_else(|e| e.into_inner()).after;
        match self
            .client
            .samples(&self.opened.session, after, Duration::ZERO)
        {
            Ok(batch) => {
                let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
                shared.take(batch.samples, batch.exit, &self.clock);
            }
            Err(e) => self.lose(e),
        }
    }

    fn lose(&self, e: ClientError) {
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if shared.lost.is_none() {
            shared.lost = Some((self.clock.now_ns(), e.to_string()));
        }
    }

    /// One agent sample as the probe's, on this run's clock.
    fn sample(&self, w: &WireSample, map: &ClockMap, own: &[(i64, u64)]) -> Option<Sample> {
        let local = map.to_local(w.at_ns)?;
        Some(Sample {
            at: self.clock.instant_of(local),
            cpu_ns: w.cpu_ns,
            throttling: w.throttling.map(|t| loadlab_probe::cgroup::Throttling {
                periods: t.periods,
                throttled: t.throttled,
                throttled_ns: t.throttled_ns,
            }),
            rss_bytes: w.rss_bytes,
            memory_bytes: w.memory_bytes,
            threads: w.threads,
            fds: w.fds,
            generator_cpu_ns: interpolate(own, local),
            processes: w.processes,
            sent_bytes: w.sent_bytes,
            oom_kills: w.oom_kills,
        })
    }
}

impl Drop for Remote {
    /// Closes the session: the agent stops what it launched. If the agent cannot be
    /// reached, its lease does the same within the lease's time.
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
        if let Some(k) = self.keeper.take() {
            k.thread().unpark();
            let _ = k.join();
        }
        let _ = self.client.close(&self.opened.session);
    }
}

/// A client error as the session reports it.
pub(super) fn agent_error(e: ClientError) -> SessionError {
    SessionError::Invalid(e.to_string())
}
