//! `--prometheus URL --query PROMQL` after a run: each query over the run's window, its
//! points placed on the run's timeline. A failed query is recorded with its reason, never
//! fatal.

use loadlab_metrics::http::HttpOptions;
use loadlab_result::metrics::{MetricPoint, MetricSeries, MetricsQuery};
use std::time::Duration;

/// The run's window in Unix seconds, and the step (the run's interval).
pub struct Window {
    pub start_unix_s: f64,
    pub end_unix_s: f64,
    pub step_s: f64,
    /// The run's start: the origin of the points' `t_s`.
    pub run_start_unix_s: f64,
}

impl Window {
    /// The window of a run that started `elapsed` ago, in steps of `interval` counted back
    /// from now, so the last step sees the final figures.
    pub fn of_run(elapsed: Duration, interval: Duration) -> Window {
        let end_unix_s = super::live::unix_ms() as f64 / 1000.0;
        let run_start_unix_s = end_unix_s - elapsed.as_secs_f64();
        let step_s = interval.as_secs_f64().max(1e-3);
        let steps = ((end_unix_s - run_start_unix_s) / step_s).ceil();
        Window {
            start_unix_s: end_unix_s - steps * step_s,
            end_unix_s,
            step_s,
            run_start_unix_s,
        }
    }
}

/// One `--query` over the run's window.
pub fn ask(
    base: &str,
    query: &str,
    window: &Window,
    http: &HttpOptions,
    timeout: Duration,
) -> MetricsQuery {
    let mut q = MetricsQuery {
        url: base.to_string(),
        query: query.to_string(),
        step_s: window.step_s,
        ..MetricsQuery::default()
    };
    match loadlab_metrics::promql::query_range(
        base,
        query,
        (window.start_unix_s, window.end_unix_s, window.step_s),
        http,
        timeout,
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
                            t_s: at - window.run_start_unix_s,
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
