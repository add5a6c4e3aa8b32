//! The metrics flags at run time: the scraper and the live senders start just before the
//! load and stop after it; their points go on the run's timeline (`server_metrics`), the
//! well-known series stand in for the server's CPU and memory when nothing sampled it, and
//! `--query` is asked after the run over its window. Nothing here may slow or fail the load:
//! every failure is counted and named in the result.

use super::metrics_args::MetricsPlan;
use loadlab_engine::collector::IntervalSink;
use loadlab_engine::{RunControl, RunResult};
use loadlab_metrics::live::{sender_note, LiveFeed};
use loadlab_metrics::scraper::{ScrapeReport, Scraper, ScraperConfig};
use loadlab_metrics::sender::MetricsOut;
use loadlab_metrics::IntervalFigures;
use loadlab_result::metrics::{MetricPoint, MetricSeries, MetricsEndpoint, MetricsQuery};
use loadlab_result::server::{ResourceSummary, ServerReport, Spread, WindowSample};
use loadlab_result::{IntervalSummary, ServerMetrics};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Longest wait for a live receiver at the end, and for each scrape or query.
const END_WAIT: Duration = Duration::from_secs(3);
/// Intervals a sender may queue before dropping.
const QUEUE_LEN: usize = 64;

/// The metrics of a run under way.
pub struct MetricsRun {
    plan: MetricsPlan,
    interval: Duration,
    scraper: Option<(Scraper, Instant)>,
    feeds: Vec<LiveFeed>,
    /// The run's own final figures, once it ended: the feeds' last offer.
    last: Arc<Mutex<Option<IntervalFigures>>>,
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl MetricsRun {
    /// Starts the scraper and one live feed per `--metrics-out`; `interval` is the run's.
    pub fn start(
        plan: &MetricsPlan,
        control: &RunControl,
        interval: Duration,
    ) -> anyhow::Result<MetricsRun> {
        let scraper = if plan.scrape_urls.is_empty() {
            None
        } else {
            let started = Instant::now();
            let scraper = Scraper::start(ScraperConfig {
                urls: plan.scrape_urls.clone(),
                selectors: plan.selectors.clone(),
                interval: plan.scrape_interval.unwrap_or(interval),
                timeout: END_WAIT.min(
                    plan.scrape_interval
                        .unwrap_or(interval)
                        .max(Duration::from_millis(500)),
                ),
            })?;
            Some((scraper, started))
        };
        let last = Arc::new(Mutex::new(None));
        let latest = Arc::new(Mutex::new(None));
        if !plan.outs.is_empty() {
            // Each finished interval's exact figures (percentiles included), as the run's
            // spill sink takes it; without that sink the feeds send the progress counters.
            control.observe_intervals(Box::new(LatestInterval(Arc::clone(&latest))));
        }
        let mut feeds = Vec::new();
        for target in &plan.outs {
            let out = MetricsOut::start(
                target.clone(),
                plan.labels.clone(),
                unix_ms(),
                QUEUE_LEN,
                END_WAIT,
            );
            feeds.push(LiveFeed::start(
                out,
                interval,
                live_figures(control.clone(), Arc::clone(&last), Arc::clone(&latest)),
            )?);
        }
        Ok(MetricsRun {
            plan: plan.clone(),
            interval,
            scraper,
            feeds,
            last,
        })
    }

    /// Stops everything, puts what was read into `result` and returns the lines to print.
    pub fn finish(self, control: &RunControl, result: &mut RunResult) -> Vec<String> {
        let mut lines = Vec::new();
        let run_started = control.started_at();
        let mut metrics = ServerMetrics {
            scrape_interval_s: self
                .plan
                .scrape_interval
                .unwrap_or(self.interval)
                .as_secs_f64(),
            ..ServerMetrics::default()
        };
        if let Some((scraper, scraper_started)) = self.scraper {
            let report = scraper.finish();
            let offset_s = run_started
                .map(|r| r.saturating_duration_since(scraper_started).as_secs_f64())
                .unwrap_or(0.0);
            metrics.endpoints = endpoints(&self.plan.scrape_urls, &report, offset_s);
            if result.server.is_none() {
                if let Some(server) = server_from_metrics(&report, offset_s, result) {
                    loadlab_result::attach_server(result, server);
                }
            }
        }
        if !self.feeds.is_empty() {
            if let Ok(mut last) = self.last.lock() {
                *last = Some(final_figures(result));
            }
            for feed in self.feeds {
                if let Some(report) = feed.finish(END_WAIT) {
                    let note = format!(
                        "{}; run_id {}",
                        sender_note(&report),
                        self.plan.labels.run_id
                    );
                    if report.failed + report.dropped > 0 || report.abandoned {
                        result.warnings.push(note.clone());
                    }
                    lines.push(note);
                }
            }
        }
        if let (Some(base), Some(started)) = (&self.plan.prometheus, run_started) {
            let end_unix_s = unix_ms() as f64 / 1000.0;
            let run_start_unix_s = end_unix_s - started.elapsed().as_secs_f64();
            let step_s = self.interval.as_secs_f64();
            // Steps counted back from the end, so the last one sees the final figures.
            let steps = ((end_unix_s - run_start_unix_s) / step_s).ceil();
            let window = (
                end_unix_s - steps * step_s,
                end_unix_s,
                step_s,
                run_start_unix_s,
            );
            for query in &self.plan.queries {
                metrics.queries.push(ask(base, query, window));
            }
        }
        if !metrics.endpoints.is_empty() || !metrics.queries.is_empty() {
            for q in metrics.queries.iter().filter(|q| q.error.is_some()) {
                let note = format!(
                    "--query {:?} failed: {}",
                    q.query,
                    q.error.as_deref().unwrap_or("")
                );
                result.warnings.push(note);
            }
            result.server_metrics = Some(metrics);
        }
        lines
    }
}

/// The last finished interval of the timeline, kept for the live feeds.
struct LatestInterval(Arc<Mutex<Option<IntervalSummary>>>);

impl IntervalSink for LatestInterval {
    fn start(&mut self, _header: &RunResult) -> Result<(), String> {
        Ok(())
    }

    fn interval(&mut self, interval: &IntervalSummary) -> Result<(), String> {
        if let Ok(mut latest) = self.0.lock() {
            let mut kept = interval.clone();
            kept.histogram = None;
            kept.server = None;
            *latest = Some(kept);
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// What the feeds send while the run goes: its progress counters and loadlab's own CPU,
/// with the last finished interval's exact rate, offered rate and percentiles when the
/// timeline is streamed; after the run, its final figures.
fn live_figures(
    control: RunControl,
    last: Arc<Mutex<Option<IntervalFigures>>>,
    latest: Arc<Mutex<Option<IntervalSummary>>>,
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
            failed_total_by_class: vec![("all".into(), snap.failed)],
            generator_cpu_cores,
            ..IntervalFigures::default()
        };
        if let Some(i) = latest.lock().ok().and_then(|l| l.clone()) {
            figures.achieved_per_s = i.achieved_per_s;
            figures.offered_per_s = i.offered_per_s;
            figures.latency_quantiles_s = quantiles(&i);
        }
        figures
    }
}

/// An interval's percentiles, in seconds, as the senders name them.
fn quantiles(i: &IntervalSummary) -> Vec<(f64, f64)> {
    [(0.5, i.p50_us), (0.9, i.p90_us), (0.99, i.p99_us)]
        .into_iter()
        .filter_map(|(q, us)| us.map(|us| (q, us / 1e6)))
        .collect()
}

/// The run's figures at its end, from its result: the totals (warm-up included, as the live
/// counters were), the last interval's rate and percentiles.
fn final_figures(result: &RunResult) -> IntervalFigures {
    let warm = result.warmup.as_ref().map(|w| &w.requests);
    let m = &result.measured.requests;
    let last = result
        .timeline
        .iter()
        .rev()
        .find(|i| !i.partial)
        .or(result.timeline.last());
    let quantiles = last.map(quantiles).unwrap_or_default();
    IntervalFigures {
        at_unix_ms: unix_ms(),
        offered_per_s: last.and_then(|i| i.offered_per_s),
        achieved_per_s: last.map_or(0.0, |i| i.achieved_per_s),
        completed_total: m.completed + warm.map_or(0, |w| w.completed),
        failed_total_by_class: vec![("all".into(), m.failed + warm.map_or(0, |w| w.failed))],
        in_flight: Some(result.in_flight_at_end),
        latency_quantiles_s: quantiles,
        generator_cpu_cores: None,
        connections_open: None,
    }
}

/// Each endpoint's scrapes, failures, well-known series and picked series.
fn endpoints(urls: &[String], report: &ScrapeReport, offset_s: f64) -> Vec<MetricsEndpoint> {
    urls.iter()
        .map(|url| {
            let points: Vec<_> = report.points.iter().filter(|p| &p.url == url).collect();
            let failures = report.failures.iter().find(|f| &f.url == url);
            let mut endpoint = MetricsEndpoint {
                url: url.clone(),
                scrapes_ok: points.len() as u64,
                scrapes_failed: failures.map_or(0, |f| f.count),
                last_error: failures.map(|f| f.last_error.clone()),
                ..MetricsEndpoint::default()
            };
            for p in &points {
                let wk = &p.well_known;
                for (figure, series) in [
                    ("cpu_cores", wk.cpu_series),
                    ("memory_bytes", wk.memory_series),
                    ("throttled_periods_per_s", wk.throttled_series),
                ] {
                    if let Some(series) = series {
                        endpoint
                            .well_known
                            .entry(figure.into())
                            .or_insert_with(|| series.into());
                    }
                }
                for picked in p.picked.iter().filter(|x| x.value.is_finite()) {
                    let point = MetricPoint {
                        t_s: p.at_s - offset_s,
                        value: picked.value,
                    };
                    match endpoint
                        .series
                        .iter_mut()
                        .find(|s| s.selector == picked.selector && s.series == picked.series)
                    {
                        Some(s) => s.points.push(point),
                        None => endpoint.series.push(MetricSeries {
                            selector: picked.selector.clone(),
                            series: picked.series.clone(),
                            per_s: picked.is_rate,
                            points: vec![point],
                        }),
                    }
                }
            }
            endpoint
        })
        .collect()
}

/// The server's CPU and memory from the first endpoint with a well-known CPU series, as a
/// server report of source "metrics" (only when nothing sampled the server).
fn server_from_metrics(
    report: &ScrapeReport,
    offset_s: f64,
    result: &RunResult,
) -> Option<ServerReport> {
    let first = report
        .points
        .iter()
        .find(|p| p.well_known.cpu_cores.is_some())?;
    let url = &first.url;
    let points: Vec<_> = report.points.iter().filter(|p| &p.url == url).collect();
    let samples: Vec<WindowSample> = points
        .windows(2)
        .filter_map(|pair| {
            let wk = &pair[1].well_known;
            Some(WindowSample {
                t_s: pair[1].at_s - offset_s,
                dt_s: pair[1].at_s - pair[0].at_s,
                cpu_cores: wk.cpu_cores.filter(|c| c.is_finite())?,
                throttled_periods: None,
                rss_bytes: wk.memory_bytes.filter(|m| m.is_finite()).unwrap_or(0.0) as u64,
                memory_bytes: None,
                threads: 0,
                fds: 0,
                generator_cpu_cores: 0.0,
                processes: 0,
                sent_bytes: None,
            })
        })
        .collect();
    let warmup_s = result.load.warmup_s;
    let measured: Vec<&WindowSample> = samples.iter().filter(|w| w.t_s > warmup_s).collect();
    let summary =
        Spread::of(&measured.iter().map(|w| w.cpu_cores).collect::<Vec<_>>()).map(|cpu| {
            ResourceSummary {
                windows: measured.len(),
                cpu_cores: cpu,
                cpu_cores_per_s: None,
                cpu_quota_cores: None,
                cpu_quota_share: None,
                throttled_periods: None,
                periods: None,
                throttled_s: None,
                rss_bytes: Spread::of(
                    &measured
                        .iter()
                        .map(|w| w.rss_bytes as f64)
                        .collect::<Vec<_>>(),
                )
                .unwrap_or_default(),
                memory_bytes: None,
                memory_limit_bytes: None,
                memory_limit_share: None,
                threads_max: 0,
                fds_max: 0,
                processes_max: 0,
                sent_bytes: None,
                sent_per_s: None,
                generator_cpu_cores: Spread::default(),
                oom_kills: None,
            }
        });
    let wk = &first.well_known;
    let used: Vec<String> = [
        ("CPU", wk.cpu_series),
        (
            "memory",
            points.iter().find_map(|p| p.well_known.memory_series),
        ),
    ]
    .into_iter()
    .filter_map(|(what, s)| s.map(|s| format!("{what} from {s}")))
    .collect();
    Some(ServerReport {
        source: "metrics".into(),
        description: format!("{url} ({})", used.join(", ")),
        pid: None,
        limits: None,
        startup: None,
        sample_interval_s: samples.first().map_or(1.0, |w| w.dt_s.max(1e-3)),
        summary,
        exit: None,
        samples,
        agent: None,
    })
}

/// One `--query` over the run's window.
/// `window`: from and to (Unix seconds), the step, and the run's start (the origin of `t_s`).
fn ask(base: &str, query: &str, window: (f64, f64, f64, f64)) -> MetricsQuery {
    let (start_unix_s, end_unix_s, step_s, run_start_unix_s) = window;
    let mut q = MetricsQuery {
        url: base.to_string(),
        query: query.to_string(),
        step_s,
        ..MetricsQuery::default()
    };
    match loadlab_metrics::promql::query_range(
        base,
        query,
        start_unix_s,
        end_unix_s,
        step_s,
        END_WAIT,
    ) {
        Ok(series) => {
            q.series = series
                .into_iter()
                .map(|s| MetricSeries {
                    selector: query.to_string(),
                    series: s.series,
                    per_s: false,
                    points: s
                        .points
                        .into_iter()
                        .filter(|(_, v)| v.is_finite())
                        .map(|(at, value)| MetricPoint {
                            t_s: at - run_start_unix_s,
                            value,
                        })
                        .collect(),
                })
                .collect()
        }
        Err(e) => q.error = Some(e),
    }
    q
}
