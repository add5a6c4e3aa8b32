//! The figures `--metrics-out` sends: while the run goes, its progress counters (requests
//! completed, failed and in flight, connections open) and loadlab's own CPU, with the last
//! finished interval's exact rate, offered rate and percentiles and a gRPC run's messages over
//! the finished intervals; at its end, its final figures. Reading them must never block the
//! load: only counters and a lock held for a clone.

use loadlab_engine::collector::IntervalSink;
use loadlab_engine::PartObserver;
use loadlab_engine::{RunControl, RunResult};
use loadlab_metrics::IntervalFigures;
use loadlab_result::scenario::StepMessages;
use loadlab_result::IntervalSummary;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The last intervals the run showed: the last whole one, and the last of any kind; and a
/// gRPC run's messages over all it showed (each interval is shown once).
#[derive(Default)]
pub struct Latest {
    whole: Option<IntervalSummary>,
    any: Option<IntervalSummary>,
    messages: Option<StepMessages>,
}

impl Latest {
    fn best(&self) -> Option<&IntervalSummary> {
        self.whole.as_ref().or(self.any.as_ref())
    }
}

/// Keeps the last finished intervals of the timeline for the live feeds.
pub struct LatestInterval(pub Arc<Mutex<Latest>>);

impl IntervalSink for LatestInterval {
    fn start(&mut self, _header: &RunResult) -> Result<(), String> {
        Ok(())
    }

    fn interval(&mut self, interval: &IntervalSummary) -> Result<(), String> {
        keep(&self.0, interval);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }
}

fn keep(latest: &Mutex<Latest>, interval: &IntervalSummary) {
    if let Ok(mut latest) = latest.lock() {
        latest.messages = StepMessages::sum(latest.messages, interval.messages);
        let mut kept = interval.clone();
        kept.histogram = None;
        kept.server = None;
        if kept.partial {
            latest.any = Some(kept);
        } else {
            latest.whole = Some(kept.clone());
            latest.any = Some(kept);
        }
    }
}

/// Keeps the last finished intervals of each part of a run driven elsewhere (each
/// generator of a fleet), for the series sent per part.
pub struct LatestOfParts(pub Vec<Arc<Mutex<Latest>>>);

impl PartObserver for LatestOfParts {
    fn interval(&mut self, part: usize, interval: &IntervalSummary) {
        if let Some(latest) = self.0.get(part) {
            keep(latest, interval);
        }
    }
}

/// Whose figures a live feed sends.
#[derive(Debug, Clone, Copy)]
pub enum Whose {
    /// The whole run's (with this process's CPU: the generator's, when it is the engine).
    Run,
    /// Part `n` of a run driven elsewhere (a fleet's generator `n`).
    Part(usize),
}

/// What the feeds send while the run goes; after the run, its final figures (`last`).
pub fn live_figures(
    control: RunControl,
    whose: Whose,
    last: Arc<Mutex<Option<IntervalFigures>>>,
    latest: Arc<Mutex<Latest>>,
) -> impl FnMut() -> IntervalFigures + Send + 'static {
    let pid = std::process::id();
    let mut prev: Option<(u64, Instant, Option<u64>)> = None;
    move || {
        if let Some(f) = last.lock().ok().and_then(|f| f.clone()) {
            return f;
        }
        let (snap, cpu_ns) = match whose {
            Whose::Run => (control.progress(), loadlab_probe::procfs::cpu_ns(pid)),
            Whose::Part(n) => (control.progress_of(n).unwrap_or_default(), None),
        };
        let now = Instant::now();
        let (achieved_per_s, generator_cpu_cores) = match prev {
            Some((completed, at, cpu)) => {
                let dt = now.duration_since(at).as_secs_f64().max(1e-3);
                (
                    snap.completed.saturating_sub(completed) as f64 / dt,
                    cpu.zip(cpu_ns)
                        .map(|(a, b)| b.saturating_sub(a) as f64 / 1e9 / dt),
                )
            }
            None => (0.0, None),
        };
        prev = Some((snap.completed, now, cpu_ns));
        let mut figures = IntervalFigures {
            at_unix_ms: unix_ms(),
            achieved_per_s,
            completed_total: snap.completed,
            failed_total_by_class: by_class(
                snap.failed_classes()
                    .into_iter()
                    .map(|(class, n)| (class.to_string(), n)),
            ),
            // A run driven elsewhere tells neither here: not sent, rather than sent as 0.
            in_flight: (!snap.remote).then_some(snap.in_flight),
            connections_open: (!snap.remote).then_some(snap.connections_open),
            generator_cpu_cores,
            ..IntervalFigures::default()
        };
        if let Ok(latest) = latest.lock() {
            if let Some(i) = latest.best() {
                figures.achieved_per_s = i.achieved_per_s;
                figures.offered_per_s = i.offered_per_s;
                figures.latency_quantiles_s = quantiles(i);
            }
            figures.grpc_messages_total = latest.messages.map(|m| (m.sent, m.received));
        }
        figures
    }
}

/// Failures by class, every class loadlab knows (the result's keys: `connect_refused`,
/// `request_timeout`, ...) from 0, as Prometheus's practice asks of a labelled counter: a
/// failures panel then shows zeros rather than no data, and a class that appears mid-run has a
/// rate from its first failure.
fn by_class(classes: impl Iterator<Item = (String, u64)>) -> Vec<(String, u64)> {
    let mut out: std::collections::BTreeMap<String, u64> = loadlab_result::failure::FAILURE_CLASSES
        .iter()
        .map(|(key, ..)| (key.to_string(), 0))
        .collect();
    for (class, n) in classes {
        *out.entry(class).or_default() += n;
    }
    out.into_iter().collect()
}

/// An interval's percentiles, in seconds, as the senders name them.
fn quantiles(i: &IntervalSummary) -> Vec<(f64, f64)> {
    [(0.5, i.p50_us), (0.9, i.p90_us), (0.99, i.p99_us)]
        .into_iter()
        .filter_map(|(q, us)| us.map(|us| (q, us / 1e6)))
        .collect()
}

/// The run's figures at its end: the totals from its result (warm-up included, as the live
/// counters were), the last whole interval's rate and percentiles (as observed, or from the
/// result's timeline when no observer saw them), and the connections still open.
pub fn final_figures(
    result: &RunResult,
    latest: &Mutex<Latest>,
    connections_open: Option<u64>,
) -> IntervalFigures {
    let warm = result.warmup.as_ref().map(|w| &w.requests);
    let m = &result.measured.requests;
    let observed = latest.lock().ok().and_then(|l| l.best().cloned());
    let last = observed.or_else(|| {
        result
            .timeline
            .iter()
            .rev()
            .find(|i| !i.partial)
            .or(result.timeline.last())
            .cloned()
    });
    IntervalFigures {
        at_unix_ms: unix_ms(),
        offered_per_s: last.as_ref().and_then(|i| i.offered_per_s),
        achieved_per_s: last.as_ref().map_or(0.0, |i| i.achieved_per_s),
        completed_total: m.completed + warm.map_or(0, |w| w.completed),
        failed_total_by_class: by_class(
            result
                .measured
                .errors
                .iter()
                .chain(result.warmup.iter().flat_map(|w| &w.errors))
                .map(|(class, n)| (class.clone(), *n)),
        ),
        in_flight: Some(result.in_flight_at_end),
        latency_quantiles_s: last.as_ref().map(quantiles).unwrap_or_default(),
        generator_cpu_cores: None,
        connections_open,
        grpc_messages_total: grpc_messages(result).map(|m| (m.sent, m.received)),
    }
}

/// A gRPC run's messages each way (measured part only, as its intervals count them): the
/// `grpc` section's, or a scenario's streaming steps' added; `None` for a run with neither.
fn grpc_messages(result: &RunResult) -> Option<StepMessages> {
    let section = result.grpc.as_ref().map(|g| StepMessages {
        sent: g.messages_sent,
        received: g.messages_received,
    });
    let steps = result.scenario.iter().flat_map(|s| &s.steps);
    steps.fold(section, |all, step| StepMessages::sum(all, step.messages))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(achieved_per_s: f64, p99_ms: f64) -> IntervalSummary {
        IntervalSummary {
            start_s: 1.0,
            duration_s: 1.0,
            partial: false,
            warmup: false,
            offered_per_s: None,
            connections: None,
            achieved_per_s,
            completed: achieved_per_s as u64,
            failed: 0,
            p50_us: None,
            p90_us: None,
            p99_us: Some(p99_ms * 1000.0),
            max_us: None,
            bytes_sent: 0,
            bytes_received: 0,
            steal: None,
            histogram: None,
            server: None,
            errors: Default::default(),
            messages: None,
            generator: None,
        }
    }

    #[test]
    fn each_generator_of_a_fleet_has_figures_of_its_own_and_the_unknown_is_not_sent() {
        let control = RunControl::new();
        let latest: Vec<Arc<Mutex<Latest>>> = vec![Arc::default(), Arc::default()];
        control.observe_parts(Box::new(LatestOfParts(latest.clone())));
        let (_, progress) = control.begin_external(Instant::now(), 2);
        progress[0]
            .completed
            .fetch_add(30, std::sync::atomic::Ordering::Relaxed);
        progress[1]
            .completed
            .fetch_add(70, std::sync::atomic::Ordering::Relaxed);
        control.part_interval(0, &interval(30.0, 4.0));
        control.part_interval(1, &interval(70.0, 12.0));

        let none = || Arc::new(Mutex::new(None));
        let second = live_figures(control.clone(), Whose::Part(1), none(), latest[1].clone())();
        assert_eq!(second.completed_total, 70);
        assert_eq!(second.achieved_per_s, 70.0);
        assert_eq!(second.latency_quantiles_s, vec![(0.99, 0.012)]);
        assert_eq!((second.in_flight, second.connections_open), (None, None));
        let first = live_figures(control.clone(), Whose::Part(0), none(), latest[0].clone())();
        assert_eq!(first.latency_quantiles_s, vec![(0.99, 0.004)]);
        // The whole run: both generators' counts; what no agent reports live is not sent.
        let all = live_figures(control.clone(), Whose::Run, none(), Arc::default())();
        assert_eq!(all.completed_total, 100);
        assert_eq!((all.in_flight, all.connections_open), (None, None));

        // Once the run is over its observers are let go: a late interval changes nothing.
        control.finish_external(loadlab_engine::collector::StreamReport::default());
        control.part_interval(0, &interval(999.0, 1.0));
        assert_eq!(
            latest[0].lock().unwrap().best().unwrap().achieved_per_s,
            30.0
        );
    }

    #[test]
    fn every_class_is_sent_from_zero_and_repeated_classes_are_summed() {
        let sent = by_class(
            [
                ("connect_refused", 3),
                ("status", 2),
                ("connect_refused", 4),
            ]
            .into_iter()
            .map(|(c, n)| (c.to_string(), n)),
        );
        assert_eq!(sent.len(), loadlab_result::failure::FAILURE_CLASSES.len());
        let get = |class: &str| sent.iter().find(|(c, _)| c == class).map(|(_, n)| *n);
        assert_eq!(get("connect_refused"), Some(7));
        assert_eq!(get("status"), Some(2));
        assert_eq!(get("connect_timeout"), Some(0));
        assert_eq!(sent.iter().map(|(_, n)| n).sum::<u64>(), 9);
    }
}
