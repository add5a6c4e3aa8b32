//! `--server-metrics`: scrapes Prometheus text endpoints every interval on a thread of its
//! own, once at the start (the counters' baseline) and once at the stop. A scrape that fails
//! or times out is counted and named in the report, never fatal; the thread never touches the
//! load.

use crate::http::{self, HttpOptions};
use crate::rates::{Picked, RateTracker, WellKnown};
use crate::select::Selector;
use crate::text;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct ScraperConfig {
    pub urls: Vec<String>,
    pub selectors: Vec<Selector>,
    pub interval: Duration,
    /// Bounds each scrape; a slower endpoint is a failed scrape.
    pub timeout: Duration,
    /// The CA and token for `https://` endpoints or ones behind auth.
    pub http: HttpOptions,
}

/// One endpoint's scrape: the picked series and the well-known server figures.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrapePoint {
    /// Seconds since the scraper started.
    pub at_s: f64,
    pub url: String,
    pub picked: Vec<Picked>,
    pub well_known: WellKnown,
    pub skipped_lines: usize,
}

/// An endpoint whose scrapes failed: how often, and the last reason.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrapeFailures {
    pub url: String,
    pub count: u64,
    pub last_error: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScrapeReport {
    pub points: Vec<ScrapePoint>,
    pub scrapes_ok: u64,
    pub failures: Vec<ScrapeFailures>,
}

pub struct Scraper {
    stop: Sender<()>,
    handle: JoinHandle<ScrapeReport>,
}

impl Scraper {
    pub fn start(config: ScraperConfig) -> std::io::Result<Scraper> {
        let (stop, stop_rx) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("server-metrics".into())
            .spawn(move || {
                let started = Instant::now();
                // A CA that cannot be used fails every scrape, counted and named.
                let client = http::Client::new(&config.http, config.timeout);
                let mut trackers: Vec<RateTracker> =
                    config.urls.iter().map(|_| RateTracker::default()).collect();
                let mut report = ScrapeReport::default();
                let mut next = started;
                loop {
                    scrape_all(&config, &client, started, &mut trackers, &mut report);
                    next += config.interval;
                    let wait = next.saturating_duration_since(Instant::now());
                    match stop_rx.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => continue,
                        _ => {
                            scrape_all(&config, &client, started, &mut trackers, &mut report);
                            return report;
                        }
                    }
                }
            })?;
        Ok(Scraper { stop, handle })
    }

    /// Stops after one last scrape and returns everything scraped.
    pub fn finish(self) -> ScrapeReport {
        let _ = self.stop.send(());
        self.handle.join().unwrap_or_default()
    }
}

fn scrape_all(
    config: &ScraperConfig,
    client: &Result<http::Client, http::HttpError>,
    started: Instant,
    trackers: &mut [RateTracker],
    report: &mut ScrapeReport,
) {
    for (url, tracker) in config.urls.iter().zip(trackers.iter_mut()) {
        let result = match client {
            Ok(client) => client.get(url).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
        .and_then(|r| match r.status {
            200 => Ok(r.body),
            401 | 403 => Err(format!(
                "{url}: answered {} (not allowed); give the endpoint's bearer token with --metrics-token-file FILE",
                r.status
            )),
            status => Err(format!(
                "{url}: answered {status}, not 200; check the URL names the metrics page"
            )),
        });
        let at_s = started.elapsed().as_secs_f64();
        match result {
            Ok(body) => {
                let exp = text::parse(&String::from_utf8_lossy(&body));
                report.scrapes_ok += 1;
                report.points.push(ScrapePoint {
                    at_s,
                    url: url.clone(),
                    picked: tracker.pick(&exp, at_s, &config.selectors),
                    well_known: WellKnown::read(&exp, at_s, tracker),
                    skipped_lines: exp.skipped_lines,
                });
            }
            Err(e) => match report.failures.iter_mut().find(|f| &f.url == url) {
                Some(f) => {
                    f.count += 1;
                    f.last_error = e;
                }
                None => report.failures.push(ScrapeFailures {
                    url: url.clone(),
                    count: 1,
                    last_error: e,
                }),
            },
        }
    }
}
