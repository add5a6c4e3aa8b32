//! What the server's own metrics said during a run (`--server-metrics`, `--prometheus
//! --query`): per endpoint the picked series on the run's timeline, the well-known series
//! that stood for the server's CPU and memory, and how many scrapes failed and why. Types
//! only: scraping is `loadlab-metrics`' job.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The server's metrics read during the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerMetrics {
    /// Seconds between two scrapes of an endpoint.
    pub scrape_interval_s: f64,
    /// One entry per `--server-metrics URL`, in the order given.
    pub endpoints: Vec<MetricsEndpoint>,
    /// One entry per `--query`, evaluated over the run's window after the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queries: Vec<MetricsQuery>,
}

/// One scraped endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricsEndpoint {
    pub url: String,
    pub scrapes_ok: u64,
    pub scrapes_failed: u64,
    /// The last failure's reason, when a scrape failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Which well-known series stood for the server's figures: `cpu_cores`, `memory_bytes`,
    /// `throttled_periods_per_s` to a series name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub well_known: BTreeMap<String, String>,
    /// Every series the selectors picked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<MetricSeries>,
}

/// One series over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricSeries {
    /// The selector (or query) that picked it; a chart draws one per selector.
    pub selector: String,
    /// Its identity: the name and labels, e.g. `http_requests_total{code="200"}`.
    pub series: String,
    /// A counter, given as a rate per second; otherwise the gauge's value.
    pub per_s: bool,
    pub points: Vec<MetricPoint>,
}

/// One value, at seconds from the run's start (negative: before it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricPoint {
    pub t_s: f64,
    pub value: f64,
}

/// A PromQL query over the run's window (`/api/v1/query_range`, the run's interval as step).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricsQuery {
    /// The Prometheus server asked.
    pub url: String,
    pub query: String,
    pub step_s: f64,
    /// Set when the query failed; `series` is then empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub series: Vec<MetricSeries>,
}
