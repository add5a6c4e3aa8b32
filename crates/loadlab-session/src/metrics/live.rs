//! The figures `--metrics-out` sends: while the run goes, its progress counters (requests
//! completed, failed and in flight, connections open) and loadlab's own CPU, with the last
//! finished interval's exact rate, offered rate and percentiles; at its end, its final
//! figures. Reading them must never block the load: only counters and a
//! lock held for a clone.

use loadlab_engine::collector::IntervalSink;
use loadlab_engine::{RunControl, RunResult};
use loadlab_metrics::IntervalFigures;
use loadlab_result::IntervalSummary;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The last intervals the run showed: the last whole one, and the last of any kind.
#[derive(Default)]
pub struct Latest {
    whole: Option<IntervalSummary>,
    any: Option<IntervalSummary>,
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
        if let Ok(mut latest) = self.0.lock() {
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
        Ok(())
    }

    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// What the feeds send while the run goes; after the run, its final figures (`last`).
pub fn live_figures(
    control: RunControl,
    last: Arc<Mutex<Option<IntervalFigures>>>,
    latest: Arc<Mutex<Latest>>,
) -> impl FnMut() -> IntervalFigures + Send + 'static {
    let pid = std::process::id();
    let mut prev: Option<(u64, Instant, Option<u64>)> = None;
    move || {
        if let Some(f) = last.lock().ok().and_then(|f| f.clone()) {
            return f;
        }
        let snap = control.progress();
        let now = Instant::now();
        let cpu_ns = loadlab_probe::procfs::cpu_ns(pid);
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
            in_flight: Some(snap.in_flight),
            connections_open: Some(snap.connections_open),
            generator_cpu_cores,
            ..IntervalFigures::default()
        };
        if let Some(i) = latest.lock().ok().and_then(|l| l.best().cloned()) {
            figures.achieved_per_s = i.achieved_per_s;
            figures.offered_per_s = i.offered_per_s;
            figures.latency_quantiles_s = quantiles(&i);
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
    connections_open: u64,
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
        connections_open: Some(connections_open),
    }
}

#[cfg(test)]
mod tests {
    use super::by_class;

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
