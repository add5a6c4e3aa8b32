//! The glue a command uses during a run: every interval, on a thread of its own, ask the run
//! for its figures (a closure, so this crate needs no engine types) and offer them to the
//! sender; at the end, the sender's and the scraper's reports as the notes a result keeps.
//! It must never block the load: the closure should only read counters.

use crate::figures::IntervalFigures;
use crate::scraper::ScrapeReport;
use crate::sender::{MetricsOut, SenderReport};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Feeds a [`MetricsOut`] every `interval` until stopped, then once more for the last figures.
pub struct LiveFeed {
    stop: Sender<()>,
    handle: JoinHandle<MetricsOut>,
}

impl LiveFeed {
    pub fn start<F>(
        mut out: MetricsOut,
        interval: Duration,
        mut figures: F,
    ) -> std::io::Result<Self>
    where
        F: FnMut() -> IntervalFigures + Send + 'static,
    {
        let (stop, stop_rx) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("metrics-feed".into())
            .spawn(move || {
                let mut next = Instant::now() + interval;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    let stopping =
                        !matches!(stop_rx.recv_timeout(wait), Err(RecvTimeoutError::Timeout));
                    out.offer(figures());
                    if stopping {
                        return out;
                    }
                    next += interval;
                }
            })?;
        Ok(LiveFeed { stop, handle })
    }

    /// Sends the last figures and waits up to `wait` for the queue to drain.
    pub fn finish(self, wait: Duration) -> Option<SenderReport> {
        let _ = self.stop.send(());
        self.handle.join().ok().map(|out| out.finish(wait))
    }
}

/// One line for the result's notes about what was sent.
pub fn sender_note(r: &SenderReport) -> String {
    let mut note = format!(
        "metrics out ({}, {}): {} of {} intervals sent, {} dropped (queue full), {} failed",
        r.format, r.url, r.sent, r.offered, r.dropped, r.failed
    );
    if let Some(e) = &r.last_error {
        note.push_str(&format!("; last error: {e}"));
    }
    if r.abandoned {
        note.push_str("; stopped waiting for the receiver at the end");
    }
    note
}

/// Lines for the result's notes about the scrapes: failures by endpoint, and which
/// well-known series stood for the server's CPU and memory.
pub fn scrape_notes(r: &ScrapeReport) -> Vec<String> {
    let mut notes: Vec<String> = r
        .failures
        .iter()
        .map(|f| {
            format!(
                "server metrics: {} scrape(s) of {} failed; last: {}",
                f.count, f.url, f.last_error
            )
        })
        .collect();
    let mut seen: Vec<(String, &str)> = Vec::new();
    for p in &r.points {
        for series in [p.well_known.cpu_series, p.well_known.memory_series]
            .into_iter()
            .flatten()
        {
            if !seen.iter().any(|(u, s)| u == &p.url && *s == series) {
                seen.push((p.url.clone(), series));
                notes.push(format!("server metrics: {series} from {}", p.url));
            }
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::RunLabels;
    use crate::scraper::ScrapeFailures;
    use crate::sender::OutTarget;
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    #[test]
    fn the_feed_offers_the_last_figures_at_stop_and_notes_say_what_happened() {
        let refused = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let target = OutTarget::parse(&format!("otlp+http://{refused}/v1/metrics"), None).unwrap();
        let out = MetricsOut::start(
            target,
            RunLabels::default(),
            0,
            8,
            Duration::from_millis(200),
        );
        let calls = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&calls);
        // An hour-long interval: only the figures taken at stop are offered.
        let feed = LiveFeed::start(out, Duration::from_secs(3600), move || {
            counted.fetch_add(1, Ordering::Relaxed);
            IntervalFigures::default()
        })
        .unwrap();
        let report = feed.finish(Duration::from_secs(5)).unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        assert_eq!((report.offered, report.failed), (1, 1));
        let note = sender_note(&report);
        assert!(
            note.contains("0 of 1 intervals sent") && note.contains("otlp-http"),
            "{note}"
        );

        let scrapes = ScrapeReport {
            failures: vec![ScrapeFailures {
                url: "http://x/metrics".into(),
                count: 3,
                last_error: "timed out".into(),
            }],
            ..Default::default()
        };
        assert_eq!(
            scrape_notes(&scrapes),
            vec!["server metrics: 3 scrape(s) of http://x/metrics failed; last: timed out"]
        );
    }
}
