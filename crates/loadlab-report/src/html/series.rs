//! The server's own metrics for the HTML report's charts (`--server-metrics` series and
//! `--query` results): one family per selector or query, each series a line on the run's
//! time axis. Prepared here, drawn by the report's script (`js/runs.js`) on the same axis as
//! latency; this module must not write HTML.

use loadlab_result::RunResult;
use serde::Serialize;

/// At most this many points per series (a long run thinned by taking every n-th point).
const MAX_POINTS: usize = 1_800;

/// One chart: the series one selector (or query) picked.
#[derive(Debug, Serialize)]
pub struct MetricFamily {
    /// The selector or query: the chart's title.
    pub title: String,
    /// Counters drawn as rates per second.
    pub per_s: bool,
    pub series: Vec<MetricLine>,
}

#[derive(Debug, Serialize)]
pub struct MetricLine {
    pub label: String,
    pub t_s: Vec<f64>,
    pub values: Vec<f64>,
}

/// Every picked series and query of a run, by family.
pub fn families(r: &RunResult) -> Vec<MetricFamily> {
    let Some(m) = &r.server_metrics else {
        return Vec::new();
    };
    let picked = m.endpoints.iter().flat_map(|e| e.series.iter());
    let queried = m.queries.iter().flat_map(|q| q.series.iter());
    let mut out: Vec<MetricFamily> = Vec::new();
    for s in picked.chain(queried).filter(|s| s.points.len() > 1) {
        let step = s.points.len().div_ceil(MAX_POINTS).max(1);
        let line = MetricLine {
            label: s.series.clone(),
            t_s: s
                .points
                .iter()
                .step_by(step)
                .map(|p| round3(p.t_s))
                .collect(),
            values: s.points.iter().step_by(step).map(|p| p.value).collect(),
        };
        match out.iter_mut().find(|f| f.title == s.selector) {
            Some(f) => f.series.push(line),
            None => out.push(MetricFamily {
                title: s.selector.clone(),
                per_s: s.per_s,
                series: vec![line],
            }),
        }
    }
    out
}

fn round3(s: f64) -> f64 {
    (s * 1000.0).round() / 1000.0
}
