//! What the scraper read, as the result keeps it: each endpoint's scrapes, failures,
//! well-known series and picked series on the run's timeline, and the server's CPU and
//! memory from the well-known series when nothing else sampled the server.

use loadlab_engine::RunResult;
use loadlab_metrics::scraper::ScrapeReport;
use loadlab_result::metrics::{MetricPoint, MetricSeries, MetricsEndpoint};
use loadlab_result::server::{ResourceSummary, ServerReport, Spread, WindowSample};

/// Each endpoint's scrapes, failures, well-known series and picked series.
pub fn endpoints(urls: &[String], report: &ScrapeReport, offset_s: f64) -> Vec<MetricsEndpoint> {
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
pub fn server_from_metrics(
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
