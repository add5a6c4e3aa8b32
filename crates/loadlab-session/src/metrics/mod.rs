//! Server metrics around a session's runs: the scraper (`--server-metrics`) and the live
//! senders (`--metrics-out`) start just before the load and stop after it; their points go on
//! the run's timeline (`server_metrics`), the well-known series stand in for the server's CPU
//! and memory when nothing sampled it, and `--query` is asked after the run over its window.
//! Shared by every command that drives load (run, experiment, capacity, sweep) through
//! [`crate::Session::set_metrics`]. Nothing here may slow or fail the load: every failure is
//! counted and named in the result. It must not print or read flags.
//!
//! `live.rs` makes the figures sent each interval, `scraped.rs` turns scrapes into the
//! result's endpoints and server report, `query.rs` asks the queries.

mod live;
mod query;
mod scraped;

pub use loadlab_metrics::http::HttpOptions;
pub use loadlab_metrics::sender::OutTarget;
pub use loadlab_metrics::{RunLabels, Selector};

use live::{final_figures, live_figures, LatestInterval, LatestOfParts, Whose};
use loadlab_engine::{RunControl, RunResult};
use loadlab_metrics::live::{sender_note, LiveFeed};
use loadlab_metrics::scraper::{Scraper, ScraperConfig};
use loadlab_metrics::sender::MetricsOut;
use loadlab_result::ServerMetrics;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest wait for a live receiver at the end, and for each scrape or query.
const END_WAIT: Duration = Duration::from_secs(3);
/// Intervals a sender may queue before dropping.
const QUEUE_LEN: usize = 64;
/// The `shard` label of a fleet's merged series (each generator's are labelled with its name).
pub const ALL_SHARDS: &str = "all";

/// What to scrape, send and ask around each run: checked by the caller (every URL parsed).
#[derive(Debug, Clone, Default)]
pub struct MetricsPlan {
    pub scrape_urls: Vec<String>,
    pub selectors: Vec<Selector>,
    /// How often to scrape [default: the run's interval].
    pub scrape_interval: Option<Duration>,
    pub outs: Vec<OutTarget>,
    /// The labels on every series sent; callers running many runs set `run_id`,
    /// `experiment`, `variant` per run.
    pub labels: RunLabels,
    /// A Prometheus server's base URL, asked `queries` after each run.
    pub prometheus: Option<String>,
    pub queries: Vec<String>,
    /// The CA and bearer token for every endpoint above (never stored in the result).
    pub http: HttpOptions,
}

impl MetricsPlan {
    /// Nothing to scrape, send or ask.
    pub fn is_empty(&self) -> bool {
        self.scrape_urls.is_empty() && self.outs.is_empty() && self.queries.is_empty()
    }
}

/// The metrics of a run under way.
pub struct MetricsRun {
    plan: MetricsPlan,
    interval: Duration,
    scraper: Option<(Scraper, Instant)>,
    feeds: Vec<LiveFeed>,
    /// A fleet's: one feed per generator and `--metrics-out`.
    part_feeds: Vec<LiveFeed>,
    /// The last finished interval the run showed (its timeline may be kept elsewhere).
    latest: Arc<Mutex<live::Latest>>,
    /// The run's own final figures, once it ended: the feeds' last offer.
    last: Arc<Mutex<Option<loadlab_metrics::IntervalFigures>>>,
}

impl MetricsRun {
    /// Starts the scraper and one live feed per `--metrics-out`; `interval` is the run's.
    /// `parts`: the names of a fleet's generators, when the run is theirs: each gets series
    /// of its own (labelled `shard="NAME"`) beside the merged ones (`shard="all"`).
    pub fn start(
        plan: &MetricsPlan,
        control: &RunControl,
        interval: Duration,
        parts: &[String],
    ) -> Result<MetricsRun, String> {
        let scraper = if plan.scrape_urls.is_empty() {
            None
        } else {
            let started = Instant::now();
            let every = plan.scrape_interval.unwrap_or(interval);
            let scraper = Scraper::start(ScraperConfig {
                urls: plan.scrape_urls.clone(),
                selectors: plan.selectors.clone(),
                interval: every,
                timeout: END_WAIT.min(every.max(Duration::from_millis(500))),
                http: plan.http.clone(),
            })
            .map_err(|e| format!("cannot start the --server-metrics scraper thread: {e}"))?;
            Some((scraper, started))
        };
        let last = Arc::new(Mutex::new(None));
        let latest = Arc::new(Mutex::new(live::Latest::default()));
        if !plan.outs.is_empty() {
            // Each finished interval's exact figures (percentiles included), beside the sink
            // that keeps the timeline when one does (`loadlab run`'s spill file).
            control.observe_intervals(Box::new(LatestInterval(Arc::clone(&latest))));
        }
        let mut labels = plan.labels.clone();
        let part_latest: Vec<Arc<Mutex<live::Latest>>> = if plan.outs.is_empty() {
            Vec::new()
        } else {
            parts.iter().map(|_| Arc::default()).collect()
        };
        if !part_latest.is_empty() {
            control.observe_parts(Box::new(LatestOfParts(part_latest.clone())));
            if labels.shard.is_empty() {
                labels.shard = ALL_SHARDS.into();
            }
        }
        let mut feeds = Vec::new();
        let mut part_feeds = Vec::new();
        for target in &plan.outs {
            let mut target = target.clone();
            target.http = plan.http.clone();
            let feed = |labels: RunLabels, whose, last, latest| {
                let out =
                    MetricsOut::start(target.clone(), labels, live::unix_ms(), QUEUE_LEN, END_WAIT);
                LiveFeed::start(
                    out,
                    interval,
                    live_figures(control.clone(), whose, last, latest),
                )
                .map_err(|e| format!("cannot start the --metrics-out thread: {e}"))
            };
            feeds.push(feed(
                labels.clone(),
                Whose::Run,
                Arc::clone(&last),
                Arc::clone(&latest),
            )?);
            for (n, (name, latest)) in parts.iter().zip(&part_latest).enumerate() {
                let mut labels = labels.clone();
                labels.shard = name.clone();
                part_feeds.push(feed(
                    labels,
                    Whose::Part(n),
                    Arc::default(),
                    Arc::clone(latest),
                )?);
            }
        }
        Ok(MetricsRun {
            plan: plan.clone(),
            interval,
            scraper,
            feeds,
            part_feeds,
            latest,
            last,
        })
    }

    /// Stops everything, puts what was read into `result` and returns the lines to print.
    /// Call after the server's own report is attached (a scraped one stands in only without).
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
            metrics.endpoints = scraped::endpoints(&self.plan.scrape_urls, &report, offset_s);
            if result.server.is_none() {
                if let Some(server) = scraped::server_from_metrics(&report, offset_s, result) {
                    loadlab_result::attach_server(result, server);
                }
            }
        }
        if !self.feeds.is_empty() {
            let snap = control.progress();
            let figures = final_figures(
                result,
                &self.latest,
                (!snap.remote).then_some(snap.connections_open),
            );
            if let Ok(mut last) = self.last.lock() {
                *last = Some(figures);
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
            // Each generator's own series: their sends named only when some failed.
            for feed in self.part_feeds {
                if let Some(report) = feed.finish(END_WAIT) {
                    if report.failed + report.dropped > 0 || report.abandoned {
                        let note = format!(
                            "{} (a generator's own series); run_id {}",
                            sender_note(&report),
                            self.plan.labels.run_id
                        );
                        result.warnings.push(note.clone());
                        lines.push(note);
                    }
                }
            }
        }
        if let (Some(base), Some(started)) = (&self.plan.prometheus, run_started) {
            let window = query::Window::of_run(started.elapsed(), self.interval);
            for q in &self.plan.queries {
                metrics
                    .queries
                    .push(query::ask(base, q, &window, &self.plan.http, END_WAIT));
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
