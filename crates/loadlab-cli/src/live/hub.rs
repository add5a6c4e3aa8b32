//! The live page's state: the run's intervals as they finish, kept at full resolution for a
//! bounded window and downsampled before it (pairs merged exactly, histograms added), the
//! since-the-start figures merged from the intervals' histograms (never averaged), and each
//! update as a server-sent event, numbered so a reconnecting page gets what it missed.
//!
//! It runs on the page's own thread, fed by [`LiveSink`] through an unbounded channel: the
//! run's collector only sends (no lock, no wait). It must not do I/O; `http` serves what it
//! makes. Memory is flat in the run's length: [`WINDOW`] events and [`COARSE`] merged
//! intervals at most.

use loadlab_engine::collector::IntervalSink;
use loadlab_report::html::data::{chart_data, distribution, ChartData, Distribution};
use loadlab_result::{
    decode_histogram, encode_histogram, new_histogram, IntervalSummary, LatencySummary, RunResult,
};
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

pub mod command;

/// Intervals (and their events) kept at full resolution: 15 minutes at the default 1 s.
pub const WINDOW: usize = 900;
/// At most this many downsampled intervals before the window; past it, pairs are merged.
pub const COARSE: usize = 600;

/// What the run's collector hands the page (and the terminal's `--tui`: each gets a copy).
#[derive(Clone)]
pub enum Update {
    Start(Box<RunResult>),
    Interval(Box<IntervalSummary>),
    /// The load has ended; the result is being made.
    LoadEnded,
    /// The run's result, once made (`None`: it could not be): the stream's last event.
    Result(Option<Box<RunResult>>),
    /// A command of many runs: its plan, steps and answer so far.
    Command(command::Update),
}

/// The run's side: an [`IntervalSink`] that only sends (its answer never fails the run), to
/// each that follows the run: the page's thread, the terminal's (`--tui`), or both.
#[derive(Clone, Default)]
pub struct LiveSink(pub Vec<UnboundedSender<Update>>);

impl LiveSink {
    /// Sends `update` to each (a copy to all but the last); one gone is skipped.
    pub fn send(&self, update: Update) {
        if let Some((last, rest)) = self.0.split_last() {
            for tx in rest {
                let _ = tx.send(update.clone());
            }
            let _ = last.send(update);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl IntervalSink for LiveSink {
    fn start(&mut self, header: &RunResult) -> Result<(), String> {
        self.send(Update::Start(Box::new(header.clone())));
        Ok(())
    }
    fn interval(&mut self, interval: &IntervalSummary) -> Result<(), String> {
        self.send(Update::Interval(Box::new(interval.clone())));
        Ok(())
    }
    fn finish(&mut self) -> Result<(), String> {
        self.send(Update::LoadEnded);
        Ok(())
    }
}

/// The figures since the start of the measured load (warm-up left out, as the result does).
#[derive(Debug, Default, Serialize)]
pub struct SinceStart {
    pub measured_s: f64,
    pub completed: u64,
    pub failed: u64,
    pub per_s: f64,
    /// Open loop: the rate the schedule asked for, over the measured time.
    pub offered_per_s: Option<f64>,
    /// Merged from the intervals' histograms.
    pub latency_us: Option<LatencySummary>,
    /// The server's mean CPU over the measured intervals that carry it, in cores.
    pub server_cpu_cores: Option<f64>,
    /// The server's highest RSS in any of them.
    pub server_rss_max_bytes: Option<u64>,
    /// Failures by class, summed over the measured intervals (each carries its own).
    pub errors: std::collections::BTreeMap<String, u64>,
}

/// One event of the stream: its number (the SSE id) and its whole text.
#[derive(Clone)]
pub struct Event {
    pub id: u64,
    pub text: Arc<str>,
}

/// The run's failures by class, from its result, with the first message of each class (a
/// server's words: the page shows them as text only).
#[derive(Debug, Default, Clone, Serialize)]
pub struct Errors {
    pub by_class: std::collections::BTreeMap<String, u64>,
    pub details: std::collections::BTreeMap<String, String>,
}

#[derive(Serialize)]
struct EndEvent<'a> {
    since_start: &'a SinceStart,
    errors: &'a Errors,
    interrupted: bool,
}

#[derive(Serialize)]
struct IntervalEvent<'a> {
    last: &'a IntervalSummary,
    since_start: &'a SinceStart,
    /// The interval as the report's charts plot it (one point).
    point: ChartData,
    distribution: Option<Distribution>,
}

#[derive(Serialize)]
struct SnapshotEvent<'a> {
    target: Option<String>,
    errors: &'a Errors,
    last: Option<&'a IntervalSummary>,
    since_start: &'a SinceStart,
    /// Every interval kept (downsampled, then the full window), as the report plots them.
    data: Option<ChartData>,
    ended: bool,
    /// Intervals before the window merged this many at a time.
    coarse_group: u64,
    command: &'a command::State,
}

pub struct Hub {
    /// [`WINDOW`] and [`COARSE`] (smaller in tests).
    window_cap: usize,
    coarse_cap: usize,
    header: Option<RunResult>,
    window: VecDeque<IntervalSummary>,
    coarse: Vec<IntervalSummary>,
    coarse_group: u64,
    events: VecDeque<Event>,
    histogram: Option<hdrhistogram::Histogram<u64>>,
    offered_weighted: f64,
    /// CPU-seconds and seconds of the intervals with the server's figures.
    server_cpu_s: (f64, f64),
    since: SinceStart,
    next_id: u64,
    errors: Errors,
    interrupted: bool,
    /// The load is over (no more intervals).
    pub load_ended: bool,
    /// The stream's last event is made.
    pub ended: bool,
    /// A command of many runs (empty for `loadlab run`).
    command: command::State,
}

impl Default for Hub {
    fn default() -> Hub {
        Hub::with_limits(WINDOW, COARSE)
    }
}

impl Hub {
    pub fn with_limits(window_cap: usize, coarse_cap: usize) -> Hub {
        Hub {
            window_cap,
            coarse_cap: coarse_cap.max(2),
            header: None,
            window: VecDeque::new(),
            coarse: Vec::new(),
            coarse_group: 0,
            events: VecDeque::new(),
            histogram: None,
            offered_weighted: 0.0,
            server_cpu_s: (0.0, 0.0),
            since: SinceStart::default(),
            next_id: 0,
            errors: Errors::default(),
            interrupted: false,
            load_ended: false,
            ended: false,
            command: command::State::default(),
        }
    }

    /// Takes one update; returns the event it makes for the pages attached.
    pub fn apply(&mut self, update: Update) -> Option<Event> {
        match update {
            Update::Start(header) => self.start_run(*header),
            Update::Interval(iv) => Some(self.interval(*iv)),
            Update::LoadEnded => {
                self.load_ended = true;
                None
            }
            Update::Result(_) if self.ended => None,
            Update::Result(result) => {
                if let Some(r) = result {
                    self.errors = Errors {
                        by_class: r.measured.errors.clone(),
                        details: r.measured.error_details.clone(),
                    };
                    self.interrupted = r.interrupted;
                    // The result's rate is the authority: an open loop's counts the drain
                    // after the load's end (drain_s), which no interval's time holds.
                    let m = &r.measured;
                    self.since.measured_s = m.rate_span_s();
                    self.since.per_s = m.requests.per_second;
                }
                self.load_ended = true;
                self.ended = true;
                Some(self.end())
            }
            Update::Command(u) => self.command(u),
        }
    }

    fn interval(&mut self, iv: IntervalSummary) -> Event {
        if !iv.warmup {
            self.count(&iv);
        }
        let point = self.chart(std::slice::from_ref(&iv), None);
        let dist = self.histogram.as_ref().and_then(distribution);
        let json = serde_json::to_string(&IntervalEvent {
            last: &iv,
            since_start: &self.since,
            point,
            distribution: dist,
        })
        .unwrap_or_default();
        self.keep(iv);
        self.emit("interval", &json)
    }

    fn end(&mut self) -> Event {
        let json = serde_json::to_string(&EndEvent {
            since_start: &self.since,
            errors: &self.errors,
            interrupted: self.interrupted,
        })
        .unwrap_or_default();
        self.emit("end", &json)
    }

    /// Counts a measured interval into the since-the-start figures: its histogram added.
    fn count(&mut self, iv: &IntervalSummary) {
        let s = &mut self.since;
        s.measured_s += iv.duration_s;
        s.completed += iv.completed;
        s.failed += iv.failed;
        loadlab_result::failure::add_counts(&mut s.errors, &iv.errors);
        s.per_s = s.completed as f64 / s.measured_s.max(1e-9);
        if let Some(o) = iv.offered_per_s {
            self.offered_weighted += o * iv.duration_s;
            s.offered_per_s = Some(self.offered_weighted / s.measured_s.max(1e-9));
        }
        if let Some(server) = &iv.server {
            self.server_cpu_s.0 += server.cpu_cores * iv.duration_s;
            self.server_cpu_s.1 += iv.duration_s;
            s.server_cpu_cores = Some(self.server_cpu_s.0 / self.server_cpu_s.1.max(1e-9));
            s.server_rss_max_bytes = s.server_rss_max_bytes.max(Some(server.rss_bytes));
        }
        if let Some(h) = iv
            .histogram
            .as_deref()
            .and_then(|t| decode_histogram(t).ok())
        {
            let total = self.histogram.get_or_insert_with(new_histogram);
            // Both have the result's bounds: adding cannot fail but for a foreign histogram.
            let _ = total.add(&h);
            s.latency_us = LatencySummary::from_histogram(total);
        }
    }

    /// Into the window; what leaves it joins the downsampled part, whose pairs are merged
    /// when it is full.
    fn keep(&mut self, iv: IntervalSummary) {
        self.window.push_back(iv);
        if self.window.len() <= self.window_cap {
            return;
        }
        let old = self.window.pop_front().expect("over the window");
        if self.coarse_group == 0 {
            self.coarse_group = 1;
        }
        self.coarse.push(old);
        if self.coarse.len() > self.coarse_cap {
            let mut merged = Vec::with_capacity(self.coarse_cap / 2 + 1);
            for pair in self.coarse.chunks(2) {
                let mut group = pair.to_vec();
                match loadlab_session::spill::timeline::merge(&mut group) {
                    Ok(m) => merged.push(m),
                    Err(_) => merged.extend(pair.iter().take(1).cloned()),
                }
            }
            self.coarse = merged;
            self.coarse_group *= 2;
        }
    }

    /// The report's chart data for `timeline` (with the since-the-start histogram when
    /// given, for the distribution).
    fn chart(&self, timeline: &[IntervalSummary], whole: Option<String>) -> ChartData {
        let mut r = match &self.header {
            Some(h) => h.clone(),
            None => return chart_data(&[]),
        };
        r.timeline = timeline.to_vec();
        r.measured.histograms.latency = whole.unwrap_or_default();
        r.first_requests = None;
        chart_data(&[(r.started_at.clone().as_str(), &r)])
    }

    /// The figures since the start of the measured load, as the page shows them (also the
    /// terminal's, `--tui`: one since-the-start for both).
    pub fn since_start(&self) -> &SinceStart {
        &self.since
    }

    /// The intervals kept at full resolution, oldest first (the last is the newest).
    pub fn recent(&self) -> impl DoubleEndedIterator<Item = &IntervalSummary> + ExactSizeIterator {
        self.window.iter()
    }

    /// What the run loads, as the page's title says it (unescaped: the page escapes it).
    pub fn target(&self) -> Option<String> {
        self.header
            .as_ref()
            .map(|h| format!("{} {}", h.target.method, h.target.url))
    }

    #[cfg(test)]
    pub fn set_target_for_test(&mut self, url: &str) {
        let mut h: RunResult = serde_json::from_str(include_str!(
            "../../../loadlab-report/tests/fixtures/ok.json"
        ))
        .expect("fixture");
        h.target.method = String::new();
        h.target.url = url.to_string();
        self.header = Some(h);
    }

    /// The whole run as kept, for a page that connects (or whose gap left the window).
    pub fn snapshot(&self) -> Event {
        let timeline: Vec<IntervalSummary> = self
            .coarse
            .iter()
            .chain(self.window.iter())
            .cloned()
            .collect();
        let data = self
            .header
            .as_ref()
            .map(|_| self.chart(&timeline, self.histogram.as_ref().map(encode_histogram)));
        let json = serde_json::to_string(&SnapshotEvent {
            target: self.target(),
            errors: &self.errors,
            last: self.window.back(),
            since_start: &self.since,
            data,
            ended: self.ended,
            coarse_group: self.coarse_group.max(1),
            command: &self.command,
        })
        .unwrap_or_default();
        Event {
            id: self.next_id,
            text: format!("id: {}\nevent: snapshot\ndata: {json}\n\n", self.next_id).into(),
        }
    }

    /// What a page that saw events up to `last_id` missed: the events after it when they are
    /// all still kept, else `None` (it gets a snapshot).
    pub fn since(&self, last_id: u64) -> Option<Vec<Event>> {
        if last_id > self.next_id {
            return None;
        }
        let first_kept = self.events.front().map_or(self.next_id + 1, |e| e.id);
        if last_id + 1 < first_kept {
            return None;
        }
        Some(
            self.events
                .iter()
                .filter(|e| e.id > last_id)
                .cloned()
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(i: usize, latency_ns: u64) -> IntervalSummary {
        let mut h = new_histogram();
        h.record(latency_ns).unwrap();
        IntervalSummary {
            start_s: i as f64,
            duration_s: 1.0,
            partial: false,
            warmup: false,
            offered_per_s: None,
            connections: Some(1.0),
            achieved_per_s: 1.0,
            completed: 1,
            failed: 0,
            p50_us: Some(latency_ns as f64 / 1e3),
            p90_us: None,
            p99_us: None,
            max_us: None,
            bytes_sent: 0,
            bytes_received: 0,
            steal: None,
            histogram: Some(encode_histogram(&h)),
            server: None,
            errors: Default::default(),
            messages: None,
            generator: None,
        }
    }

    /// A day of one-second intervals: the hub keeps a bounded number of them, and the
    /// since-the-start percentiles are of every one (merged, not averaged).
    #[test]
    fn memory_stays_bounded_and_totals_stay_exact() {
        let (window, coarse) = (30, 20);
        let mut hub = Hub::with_limits(window, coarse);
        let n = 3 * (window + coarse) + 7;
        for i in 0..n {
            // One slow interval in fifty: its latency must show as the max, not be averaged away.
            let ns = if i % 50 == 0 { 50_000_000 } else { 1_000_000 };
            hub.apply(Update::Interval(Box::new(interval(i, ns))));
        }
        assert!(hub.window.len() == window && hub.coarse.len() <= coarse);
        assert!(hub.events.len() <= window);
        assert!(
            hub.coarse_group >= 4,
            "the older part merged again and again"
        );
        assert_eq!(hub.since.completed, n as u64);
        let l = hub.since.latency_us.as_ref().unwrap();
        assert!(
            (l.max - 50_000.0).abs() < 100.0 && (l.p50 - 1_000.0).abs() < 2.0,
            "{l:?}"
        );
        let kept: u64 = hub
            .coarse
            .iter()
            .chain(&hub.window)
            .map(|i| i.completed)
            .sum();
        assert_eq!(kept, n as u64, "downsampling loses no request");
    }

    #[test]
    fn a_reconnecting_page_gets_its_gap_or_a_snapshot() {
        const WINDOW: usize = 30;
        let mut hub = Hub::with_limits(WINDOW, 20);
        for i in 0..WINDOW + 10 {
            hub.apply(Update::Interval(Box::new(interval(i, 1_000))));
        }
        let gap = hub.since(WINDOW as u64).expect("in the window");
        assert_eq!(
            gap.iter().map(|e| e.id).collect::<Vec<_>>(),
            (WINDOW as u64 + 1..=WINDOW as u64 + 10).collect::<Vec<_>>()
        );
        assert!(
            hub.since(3).is_none(),
            "left the window: a snapshot instead"
        );
        assert!(hub.since(10_000).is_none(), "another run's id");
    }
}
