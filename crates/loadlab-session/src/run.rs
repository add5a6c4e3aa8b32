//! [`Session::run`]: one measured run with the server sampled beside it (here, or on the
//! agent's host), the machine's counters read over the measured window, the metrics
//! scraped and sent, the generator's own connections sampled for the path's figures
//! (docs/path.md), and the server's too (here, or by its agent), and the result returned
//! with the server's side attached.

use crate::{machine, metrics, spill, ServerSide, Session, SessionError, SessionOutcome};
use loadlab_engine::RunControl;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

impl Session {
    /// `sink` (where the run's intervals are written as it goes), with the server's samples
    /// within each interval written beside it (CPU, memory, throttling), so that a killed
    /// run's recovered result keeps them. Only a server on this machine is sampled live.
    pub fn with_server_samples(
        &self,
        sink: Box<dyn loadlab_engine::collector::IntervalSink>,
        control: &RunControl,
    ) -> Box<dyn loadlab_engine::collector::IntervalSink> {
        match &self.server {
            Some(ServerSide::Local(s)) => Box::new(spill::server_samples::WithServer::new(
                sink,
                s.live_samples(),
                control.clone(),
            )),
            _ => sink,
        }
    }

    /// Runs the load until it ends, `control` stops it, or the server dies; returns the
    /// result with the server's side attached. The session's server keeps running (until the
    /// session is dropped), so one session can run again.
    pub fn run(&mut self, control: &RunControl) -> Result<SessionOutcome, SessionError> {
        let metrics_run = match self.metrics.as_ref() {
            Some(plan) => Some(
                metrics::MetricsRun::start(
                    plan,
                    control,
                    self.config.interval,
                    &self
                        .fleet
                        .as_ref()
                        .map(|f| {
                            f.generators
                                .iter()
                                .map(|g| g.name.clone())
                                .collect::<Vec<_>>()
                        })
                        .unwrap_or_default(),
                )
                .map_err(SessionError::Invalid)?,
            ),
            None => None,
        };
        let died = Arc::new(AtomicBool::new(false));
        if let Some(server) = self.server.as_mut() {
            let (control, died) = (control.clone(), died.clone());
            let on_exit: Box<dyn FnOnce() + Send> = Box::new(move || {
                died.store(true, Ordering::Release);
                control.stop();
            });
            match server {
                ServerSide::Local(s) => s.start_sampling(on_exit),
                ServerSide::Remote(r) => r.start_sampling(Some(self.config.url.port), on_exit),
            }
        }
        // From this machine (its counters read around the run), or from the fleet (whose
        // hosts' figures come with each shard).
        let ran = match &self.fleet {
            Some(fleet) => fleet.run(&self.run, control).map(|result| {
                let span = fleet_span(&result);
                (result, span, None)
            }),
            None => {
                let window = machine::Window::open(&self.config, self.link.as_ref(), control);
                let path = loadlab_machine::path::PathWatch::for_run(&self.config, control);
                // A server on this machine: its connections too (the sending end's view).
                let server_path = match &self.link {
                    Some(link) => Some(loadlab_machine::Scope::Netns(link.netns_path())),
                    None => self.target_local.then_some(loadlab_machine::Scope::Own),
                }
                .and_then(|scope| {
                    loadlab_machine::path::PathWatch::for_server(&self.config, control, scope)
                });
                let outcome = loadlab_engine::run(&self.config, control);
                let measured = window.close(self.link.as_ref());
                // A timeline read back from its spill past an hour's intervals is merged
                // (`spill::timeline`): the path's intervals are merged the same way, and its
                // windows folded by the merged spans as they are read back (issue 55).
                let group = merged_group(control);
                let path = path.map(|p| p.finish_grouped(group));
                let server_path = server_path.map(|p| p.finish_grouped(group));
                outcome.map_err(SessionError::from).map(|o| {
                    let mut result = loadlab_engine::summarize(&self.config, &o);
                    if let Some(windows) = path {
                        let report = loadlab_result::path::PathReport::grouped(
                            "generator",
                            loadlab_machine::path::transport(&self.config),
                            &windows,
                            &result,
                            group,
                        );
                        result.path.push(report);
                    }
                    if let Some(windows) = server_path {
                        let mut report = loadlab_result::path::PathReport::grouped(
                            "server", "tcp", &windows, &result, group,
                        );
                        report.response_p50_us = None;
                        result.path.push(report);
                    }
                    let from = o.warmup.min(o.elapsed).as_secs_f64();
                    (result, (from, o.elapsed.as_secs_f64()), measured)
                })
            }
        };
        let (mut result, span, measured) = match ran {
            Ok(ran) => ran,
            Err(e) => {
                // Stop sampling before reporting the failure.
                if let (Some(server), Some(origin)) = (self.server.as_mut(), control.started_at()) {
                    match server {
                        ServerSide::Local(s) => {
                            let _ = s.finish(origin, (0.0, 0.0));
                        }
                        ServerSide::Remote(r) => {
                            let _ = r.finish(origin, (0.0, 0.0), 0, None);
                        }
                    }
                }
                return Err(e);
            }
        };
        result.environment.checks = self.checks.clone();
        if let Some(measured) = measured {
            measured.attach(
                &mut result,
                self.link.as_ref(),
                self.backlog_env.clone(),
                self.target_local,
            );
        }
        let mut server_died = false;
        if let (Some(server), Some(origin)) = (self.server.as_mut(), control.started_at()) {
            let mut report = match server {
                ServerSide::Local(s) => s.finish(origin, span),
                ServerSide::Remote(r) => {
                    let issued = result.measured.requests.issued;
                    let (mut report, verdicts, warnings) =
                        r.finish(origin, span, issued, self.backlog_env.clone());
                    // The server's connections, sampled by its agent: the server's side of
                    // the path, as for a server on this machine (over TCP only).
                    let windows = r.server_path(origin);
                    if result.load.protocol != "h3" && !windows.is_empty() {
                        let mut path = loadlab_result::path::PathReport::of(
                            "server", "tcp", &windows, &result,
                        );
                        path.response_p50_us = None;
                        result.path.push(path);
                    }
                    // Over TCP, the server host's UDP counters are other processes'.
                    if result.load.protocol != "h3" {
                        if let Some(k) = report.agent.as_mut().and_then(|a| a.kernel.as_mut()) {
                            k.udp = None;
                        }
                    }
                    result.verdicts.extend(verdicts);
                    result.warnings.extend(warnings);
                    report
                }
            };
            // The server's bytes are counted over TCP: not the load's over HTTP/3 (UDP).
            if result.load.protocol == "h3" {
                report.forget_sent_bytes();
            }
            server_died = report.exit.is_some();
            // The run stopped because the server died, not because someone stopped it.
            if server_died && died.load(Ordering::Acquire) {
                result.interrupted = false;
            }
            // Past an hour's intervals, one window per merged interval of the timeline: the
            // result holds what an hour's does, its figures per interval exact (issue 55).
            let group = merged_group(control);
            if group > 1 {
                let spans = loadlab_result::path::spans(&result.timeline, group);
                let samples = std::mem::take(&mut report.samples);
                report.samples = loadlab_result::server::fold_by_spans(samples, &spans);
            }
            loadlab_result::attach_server(&mut result, report);
        }
        // A queue on the path to a generator is named, whichever end saw it.
        let on_path = loadlab_result::path::run_verdicts(&result);
        result.verdicts.extend(on_path);
        // And what the fleet's path check found before the load, each path it named.
        if let Some(check) = &self.path_check {
            let named = check
                .named()
                .map(|n| format!("{n} (the path check before the load: docs/path.md)"));
            result.verdicts.extend(named.collect::<Vec<_>>());
            result.path_check = Some(check.clone());
        }
        let metrics_notes = metrics_run
            .map(|m| m.finish(control, &mut result))
            .unwrap_or_default();
        Ok(SessionOutcome {
            result,
            server_died,
            metrics_notes,
        })
    }
}

/// The span a fleet's server samples are summarised over, in seconds from the start: the
/// measured part and an open loop's drain, as a run on this machine's is (to its end), so
/// that the server's CPU and the requests answered are over the same time (over the
/// planned time alone, a backlog's answers counted with none of the CPU they took).
fn fleet_span(result: &loadlab_result::RunResult) -> (f64, f64) {
    let warmup = result.warmup.as_ref().map_or(0.0, |w| w.duration_s);
    (warmup, warmup + result.measured.rate_span_s())
}

/// How many of the run's intervals its result's timeline merges into one once read back
/// from where they streamed (`spill::timeline`): 1 up to an hour's intervals, and when
/// nothing streamed or streaming failed (the timeline then stays the engine's).
fn merged_group(control: &RunControl) -> u64 {
    match control.stream_report() {
        Some(r) if r.error.is_none() => crate::spill::timeline::group_for(
            r.intervals_written,
            crate::spill::timeline::MAX_TIMELINE_INTERVALS,
        ),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    /// A fleet's open loop of 2 s after 1 s of warm-up, whose last answers came 1.5 s after
    /// the load's end: its server is summarised to then, not to the planned end.
    #[test]
    fn a_fleets_server_span_holds_the_drain() {
        let path = format!(
            "{}/../loadlab-report/tests/fixtures/open.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut r: loadlab_result::RunResult =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        r.measured.duration_s = 2.0;
        r.measured.drain_s = Some(1.5);
        r.warmup.as_mut().expect("a warm-up").duration_s = 1.0;
        assert_eq!(super::fleet_span(&r), (1.0, 4.5));
        r.measured.drain_s = None;
        assert_eq!(super::fleet_span(&r), (1.0, 3.0));
    }
}
