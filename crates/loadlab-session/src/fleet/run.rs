//! One run over a fleet: each generator gets its shard (`i/N` of the whole load), all start
//! at one instant (the coordinator's clock plus each generator's offset, estimated with
//! NTP's four timestamps), and each one's intervals are read as they finish (a thread per
//! generator, long-polling). Interval k is merged exactly across the generators that have
//! sent it and handed to the run's sink; a generator that stops answering for
//! [`LOST_AFTER`] is named lost and the others go on without it. At the end the shards'
//! results merge exactly (`merge_shards`): counts and histograms added, each shard's health
//! kept beside the whole, a missing shard named, and the run marked partial.
//!
//! Memory stays flat over a long run, as one generator's does: each read acknowledges what
//! the generator sent (it drops them), the shards' results come without timelines, and the
//! run's timeline is the merged intervals handed to the sink, read back from it by the
//! caller as for one generator (`Spill::read_back`); here only their counts are kept, as the
//! engine keeps them (whole intervals only when no sink takes them). Intervals wait here only
//! for a slower generator's same interval ([`StreamReport::max_held_intervals`]).
//!
//! It must not judge the merged figures (the engine's verdicts came with each shard; the
//! merge keeps them per part) nor print.

use super::lead::lead_after;
use super::{Fleet, Generator};
use crate::SessionError;
use loadlab_agent::client::{AgentClient, ClientError};
use loadlab_agent::clock::LocalClock;
use loadlab_agent::protocol::load::{LoadBatch, StartLoad, WireLoad};
use loadlab_engine::collector::StreamReport;
use loadlab_engine::engine::ThreadProgress;
use loadlab_engine::shard::Shard;
use loadlab_engine::{RunControl, RunSpec};
use loadlab_result::{IntervalSummary, RunResult};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A generator that has not answered for this long is lost.
pub const LOST_AFTER: Duration = Duration::from_secs(3);
/// How long each interval poll waits for something new.
const POLL_WAIT: Duration = Duration::from_millis(1000);
/// A generator's lease: it stops its shard when the coordinator stops asking for this long.
const LEASE: Duration = Duration::from_secs(10);

/// What a generator's poller reports.
enum Event {
    Header(usize, Box<RunResult>),
    Intervals(usize, Vec<IntervalSummary>),
    Done(usize, Result<Box<RunResult>, String>),
    Lost(usize, String),
    /// Its reply was refused: why.
    Refused(usize, String),
}

/// A generator during the run.
struct Part {
    name: String,
    url: String,
    pending: VecDeque<IntervalSummary>,
    /// Lost or failed: why, and when (seconds from the start).
    gone: Option<(f64, String)>,
    result: Option<RunResult>,
}

impl Fleet {
    /// Runs `spec` split over the fleet until it ends or `control` stops it; the merged
    /// result. `control`'s sink (if set) gets every merged interval as it is made.
    pub fn run(&self, spec: &RunSpec, control: &RunControl) -> Result<RunResult, SessionError> {
        let n = self.generators.len();
        let count = u32::try_from(n).unwrap_or(u32::MAX);
        let local = LocalClock::new();
        let mut clients = Vec::with_capacity(n);
        let share = connections_of(spec).div_ceil(n.max(1)) as u64;
        let target_port = url::Url::parse(&spec.url)
            .ok()
            .and_then(|u| u.port_or_known_default());
        for g in &self.generators {
            let (mut client, hello, _) = g.ready(share, target_port)?;
            g.can_send(&hello, spec)?;
            let estimate = client
                .estimate_clock(&local, 8)
                .map_err(|e| SessionError::Invalid(format!("generator {}: {e}", g.name)))?;
            clients.push((client, estimate.offset_ns));
        }
        let lead = lead_after(self.posting.last());
        let posting = Instant::now();
        let start_ns = local.now_ns() + lead.as_nanos() as i64;
        let start_instant = posting + lead;
        let run_label = format!("fleet-{start_ns}");
        let mut loads = Vec::with_capacity(n);
        for (i, ((client, offset_ns), g)) in clients.iter_mut().zip(&self.generators).enumerate() {
            let shard = Shard {
                index: i as u32,
                count,
            };
            let load = WireLoad::from_spec(spec, shard).map_err(SessionError::Invalid)?;
            let started = client.start_load(&StartLoad {
                load,
                start_at_ns: start_ns + *offset_ns,
                agreed_start_ns: start_ns,
                client: crate::remote::request::hostname(),
                run: Some(run_label.clone()),
                lease_ms: Some(LEASE.as_millis() as u64),
            });
            match started {
                Ok(s) => loads.push(s.load),
                Err(e) => {
                    // Those already told to start are stopped: no shard runs alone.
                    for ((c, _), id) in clients.iter_mut().zip(&loads) {
                        let _ = c.close_load(id);
                    }
                    return Err(SessionError::Invalid(format!(
                        "generator {} could not start its shard: {e}",
                        g.name
                    )));
                }
            }
        }
        self.posting.record(posting.elapsed());
        let (sink, progress) = control.begin_external(start_instant, n);
        let (tx, rx) = mpsc::channel();
        let mut pollers = Vec::with_capacity(n);
        for (i, ((client, _), id)) in clients.into_iter().zip(loads).enumerate() {
            let (tx, control) = (tx.clone(), control.clone());
            pollers.push(std::thread::spawn(move || {
                poll(i, client, id, control, start_instant, tx)
            }));
        }
        drop(tx);
        let parts: Vec<Part> = self.generators.iter().map(Part::new).collect();
        let merged = Merger {
            parts,
            timeline: Vec::new(),
            max_held: 0,
            sink,
            progress,
            headers: vec![None; n],
            started_sink: false,
            written: 0,
            error: None,
            start: start_instant,
            control: control.clone(),
        }
        .drive(rx);
        for p in pollers {
            let _ = p.join();
        }
        control.finish_external(StreamReport {
            intervals_written: merged.written,
            max_held_intervals: merged.max_held,
            error: merged.error.clone(),
        });
        merged.finish(count)
    }
}

/// The most connections the whole load may open: a closed loop's, or an open loop's cap.
fn connections_of(spec: &RunSpec) -> usize {
    spec.connections.or(spec.max_connections).unwrap_or(0)
}

impl Part {
    fn new(g: &Generator) -> Part {
        Part {
            name: g.name.clone(),
            url: g.endpoint.url.clone(),
            pending: VecDeque::new(),
            gone: None,
            result: None,
        }
    }

    /// Still expected to send intervals.
    fn live(&self) -> bool {
        self.gone.is_none() && self.result.is_none()
    }
}

/// Reads one generator's load until it ends, is lost, or the run is stopped (then it stops
/// the load and reads on to its result).
fn poll(
    i: usize,
    mut client: AgentClient,
    id: String,
    control: RunControl,
    start: Instant,
    tx: mpsc::Sender<Event>,
) {
    let mut after = 0u64;
    let mut failing_since: Option<Instant> = None;
    let mut stop_sent = false;
    loop {
        if control.is_stopped() && !stop_sent {
            stop_sent = client.stop_load(&id).is_ok();
        }
        match client.load_batch(&id, after, POLL_WAIT) {
            Ok(batch) => {
                failing_since = None;
                let LoadBatch {
                    header,
                    intervals,
                    done,
                    result,
                    error,
                    ..
                } = batch;
                if let Some(h) = header {
                    let _ = tx.send(Event::Header(i, Box::new(h)));
                }
                after += intervals.len() as u64;
                if !intervals.is_empty() {
                    let _ = tx.send(Event::Intervals(i, intervals));
                }
                if done {
                    let outcome = match (result, error) {
                        (Some(r), _) => Ok(Box::new(r)),
                        (None, e) => Err(e.unwrap_or_else(|| "it sent no result".into())),
                    };
                    let _ = tx.send(Event::Done(i, outcome));
                    let _ = client.close_load(&id);
                    return;
                }
            }
            // A reply this loadlab cannot take (too long, not the protocol's) comes again
            // the same way: the generator is given up at once and asked to close its load
            // (else its lease ends it).
            Err(e @ ClientError::Protocol(..)) => {
                let at = Instant::now()
                    .saturating_duration_since(start)
                    .as_secs_f64();
                let _ = tx.send(Event::Refused(i, format!("at {at:.1} s: {e}")));
                let _ = client.close_load(&id);
                return;
            }
            Err(e) => {
                let since = *failing_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= LOST_AFTER {
                    let at = since.saturating_duration_since(start).as_secs_f64();
                    let _ = tx.send(Event::Lost(i, format!("at {at:.1} s: {e}")));
                    return;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// Merges the generators' intervals as they come and hands them to the run's sink.
struct Merger {
    parts: Vec<Part>,
    /// The run's timeline as the engine would keep it: each merged interval's counts when a
    /// sink takes the intervals (the caller reads them back from it, whole), the intervals
    /// themselves when none does (nothing else holds them then).
    timeline: Vec<IntervalSummary>,
    /// The most intervals waiting at once for a slower generator's same interval.
    max_held: usize,
    sink: Option<Box<dyn loadlab_engine::collector::IntervalSink>>,
    progress: Vec<Arc<ThreadProgress>>,
    headers: Vec<Option<RunResult>>,
    started_sink: bool,
    written: u64,
    error: Option<String>,
    start: Instant,
    /// Shows each generator's own intervals to the run's part observers (`--metrics-out`'s
    /// series per generator).
    control: RunControl,
}

impl Merger {
    fn drive(mut self, rx: mpsc::Receiver<Event>) -> Merger {
        for event in rx {
            match event {
                Event::Header(i, h) => self.headers[i] = Some(*h),
                Event::Intervals(i, ivs) => {
                    for iv in &ivs {
                        self.control.part_interval(i, iv);
                        self.progress[i]
                            .completed
                            .fetch_add(iv.completed, Ordering::Relaxed);
                        self.progress[i]
                            .failed
                            .fetch_add(iv.failed, Ordering::Relaxed);
                    }
                    self.parts[i].pending.extend(ivs);
                    let held = self.parts.iter().map(|p| p.pending.len()).sum();
                    self.max_held = self.max_held.max(held);
                }
                Event::Done(i, Ok(result)) => self.parts[i].result = Some(*result),
                Event::Done(i, Err(why)) => {
                    let at = self.start.elapsed().as_secs_f64();
                    self.parts[i].gone = Some((at, format!("its shard failed: {why}")));
                }
                Event::Lost(i, why) => {
                    let at = self.start.elapsed().as_secs_f64();
                    self.parts[i].gone = Some((at, format!("it stopped answering {why}")));
                }
                Event::Refused(i, why) => {
                    let at = self.start.elapsed().as_secs_f64();
                    self.parts[i].gone = Some((at, format!("its reply was refused {why}")));
                }
            }
            self.start_sink();
            self.emit();
        }
        self.emit_rest();
        if let Some(sink) = self.sink.as_mut() {
            if let Err(e) = sink.finish() {
                self.error.get_or_insert(e);
            }
        }
        self
    }

    /// The sink's header, once every generator still running has sent its own: their merge
    /// (the whole load's head), else the first. Without a sink the merge starts all the
    /// same: the run's timeline is made of what it merges.
    fn start_sink(&mut self) {
        if self.started_sink {
            return;
        }
        let waiting = self
            .parts
            .iter()
            .zip(&self.headers)
            .any(|(p, h)| p.gone.is_none() && h.is_none());
        if waiting {
            return;
        }
        let heads: Vec<RunResult> = self.headers.iter().flatten().cloned().collect();
        let Some(first) = heads.first().cloned() else {
            return;
        };
        self.started_sink = true;
        if let Some(sink) = self.sink.as_mut() {
            let head = loadlab_result::merge_shards(&heads).unwrap_or(first);
            if let Err(e) = sink.start(&head) {
                self.error.get_or_insert(e);
            }
        }
    }

    /// Every interval that each generator still expected has sent.
    fn emit(&mut self) {
        if !self.started_sink {
            return;
        }
        loop {
            let waiting = self.parts.iter().any(|p| p.pending.is_empty() && p.live());
            let any = self.parts.iter().any(|p| !p.pending.is_empty());
            if waiting || !any {
                return;
            }
            self.emit_one();
        }
    }

    /// What is left once every generator has ended or been lost.
    fn emit_rest(&mut self) {
        self.start_sink();
        while self.started_sink && self.parts.iter().any(|p| !p.pending.is_empty()) {
            self.emit_one();
        }
    }

    fn emit_one(&mut self) {
        let next: Vec<IntervalSummary> = self
            .parts
            .iter_mut()
            .filter_map(|p| p.pending.pop_front())
            .collect();
        let refs: Vec<&IntervalSummary> = next.iter().collect();
        let merged = match loadlab_result::merge_concurrent_intervals(&refs) {
            Ok(Some(m)) => m,
            Ok(None) => return,
            Err(e) => {
                self.error.get_or_insert(e.to_string());
                return;
            }
        };
        if self.error.is_none() {
            if let Some(Err(e)) = self.sink.as_mut().map(|s| s.interval(&merged)) {
                self.error = Some(e);
            }
        }
        self.written += 1;
        self.keep(merged);
    }

    /// Adds a merged interval to the run's own timeline (see [`Merger::timeline`]).
    fn keep(&mut self, mut merged: IntervalSummary) {
        if self.sink.is_some() {
            merged.histogram = None;
            (merged.p50_us, merged.p90_us, merged.p99_us, merged.max_us) = (None, None, None, None);
        }
        self.timeline.push(merged);
    }

    /// The shards' results merged; a generator lost or failed is named, and the run is
    /// marked partial (its shard shows as missing).
    fn finish(mut self, count: u32) -> Result<RunResult, SessionError> {
        let results: Vec<RunResult> = self.parts.iter().filter_map(|p| p.result.clone()).collect();
        if results.is_empty() {
            let why: Vec<String> = self
                .parts
                .iter()
                .map(|p| {
                    format!(
                        "{} ({}): {}",
                        p.name,
                        p.url,
                        p.gone.as_ref().map_or("no result", |(_, w)| w.as_str())
                    )
                })
                .collect();
            return Err(SessionError::Invalid(format!(
                "no generator of the fleet returned a result: {}",
                why.join("; ")
            )));
        }
        let mut merged = loadlab_result::merge_shards(&results)
            .map_err(|e| SessionError::Invalid(format!("the fleet's shards: {e}")))?;
        // Every interval received, a lost generator's too: the shards' results carry none.
        merged.timeline = std::mem::take(&mut self.timeline);
        // The busiest merged interval, beside the shards' own busiest seconds: a lower bound
        // of the whole load's, as `merge` takes it (the shards' timelines no longer travel;
        // the intervals kept here keep their bytes).
        let busiest = merged
            .timeline
            .iter()
            .filter_map(IntervalSummary::measured_sent_per_s)
            .max()
            .unwrap_or(0);
        let bytes = &mut merged.measured.bytes;
        bytes.max_sent_per_s = bytes.max_sent_per_s.max(busiest);
        // Each generator's path, named (docs/path.md).
        merged.path = self
            .parts
            .iter()
            .flat_map(|p| {
                let reports = p.result.as_ref().map_or(&[][..], |r| &r.path[..]);
                reports.iter().map(|r| loadlab_result::path::PathReport {
                    generator: Some(p.name.clone()),
                    ..r.clone()
                })
            })
            .collect();
        // A generator whose response time or goodput departs from the others' at the same
        // share is named: its path, not the server (issue 52).
        let shares: Vec<super::departure::ShareFigures> = self
            .parts
            .iter()
            .filter(|p| p.gone.is_none())
            .filter_map(|p| {
                let r = p.result.as_ref()?;
                Some(super::departure::ShareFigures {
                    generator: p.name.clone(),
                    p50_us: r.measured.latency_us.as_ref().map(|l| l.p50),
                    received_per_s: r.measured.bytes.received_per_s,
                })
            })
            .collect();
        merged
            .verdicts
            .extend(super::departure::departures(&shares));
        // A generator whose link was saturated capped the load: named, and the merged
        // result's link is its (the first such).
        let mut capped = None;
        for p in &self.parts {
            let Some(link) = p.result.as_ref().and_then(|r| r.generator.link.clone()) else {
                continue;
            };
            if !link.saturated {
                continue;
            }
            merged.verdicts.push(format!(
                "limited by generator {}'s link ({} saturated at {:.1} Mbit/s, {}), not by the \
                 server: this load is not the server's limit; add generators or give this one \
                 a wider link",
                p.name,
                link.interface,
                link.limit_bits_per_s.unwrap_or(0.0) / 1e6,
                link.limit_source.as_deref().unwrap_or("its limit")
            ));
            if capped.is_none() {
                capped = Some(loadlab_result::LinkUse {
                    interface: format!("{} of generator {}", link.interface, p.name),
                    ..link
                });
            }
        }
        if capped.is_some() {
            merged.generator.link = capped;
        }
        for (i, p) in self.parts.iter().enumerate() {
            if let Some((at, why)) = &p.gone {
                merged.warnings.push(format!(
                    "generator {} ({}) was lost {at:.1} s into the run ({why}): its shard \
                     ({}/{count} of the load) is missing from these figures, so this run is \
                     partial",
                    p.name,
                    p.url,
                    i + 1
                ));
                merged.verdicts.push(format!(
                    "partial run: generator {} was lost, so the server met less than the \
                     planned load; these figures are not the server's answer to it",
                    p.name
                ));
            }
        }
        Ok(merged)
    }
}
