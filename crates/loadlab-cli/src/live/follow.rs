//! How a command of many runs (`capacity`, `sweep`, `experiment`) feeds its live page: its
//! plan and steps ([`command`], [`step`]), each run's intervals beside the sink the command
//! already streams them to ([`follow`]), a fleet's generators' own intervals
//! ([`observe_parts`]), and the stop button bound to the command's own Ctrl-C.
//!
//! Every function here only sends to the page's thread and the terminal's (`--tui`): unbounded
//! channels, the run never waits for a browser or a terminal; and does nothing when neither
//! `--ui` nor `--tui` was given.

use super::hub::command::{Plan, Row, SoFar, Update as CommandUpdate};
use super::hub::{LiveSink, Update};
use super::ACTIVE;
use loadlab_engine::collector::IntervalSink;
use loadlab_engine::engine::PartObserver;
use loadlab_engine::RunControl;
use loadlab_result::{IntervalSummary, RunResult};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::UnboundedSender;

/// Who follows this process's runs: the page (`--ui`) and the terminal (`--tui`), either,
/// both or none.
fn listeners() -> LiveSink {
    let mut to: Vec<UnboundedSender<Update>> = ACTIVE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map(|(tx, _)| tx.clone())
        .into_iter()
        .collect();
    to.extend(crate::tui::updates());
    LiveSink(to)
}

/// Whether a page or the terminal is following this process.
pub fn active() -> bool {
    !listeners().is_empty()
}

/// The command's plan; from now on the page's stop button calls `stop` (what the command's
/// first Ctrl-C does: the run going on ends and is kept, no other starts), not only the
/// run going on.
/// (The terminal's `q` raises SIGINT: the command's own handler stops it.)
pub fn command(plan: Plan, stop: impl Fn() + Send + Sync + 'static) {
    if let Some((_, shared)) = ACTIVE.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        *shared
            .command_stop
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(Box::new(stop));
    }
    listeners().send(Update::Command(CommandUpdate::Plan(Box::new(plan))));
}

/// A step started or ended (a row with an earlier one's key replaces it), with what the
/// steps say so far when that changed.
pub fn step(row: Row, so_far: Option<SoFar>) {
    listeners().send(Update::Command(CommandUpdate::Step(
        Box::new(row),
        so_far.map(Box::new),
    )));
}

/// What the steps say now; `is_final` once the command has its answer.
pub fn so_far(so_far: SoFar) {
    listeners().send(Update::Command(CommandUpdate::SoFar(Box::new(so_far))));
}

/// A run of the command ended: its failures by class on the page.
pub fn run_ended(result: &RunResult) {
    let to = listeners();
    if !to.is_empty() {
        to.send(Update::Command(CommandUpdate::RunEnded(Box::new(
            result.clone(),
        ))));
    }
}

/// The sink a run of the command streams its intervals to, with the page beside it. Without
/// a sink (a search that keeps nothing in the store) the intervals are kept in memory for
/// the run's timeline ([`Kept::read_back`]): a run must stream to a sink to be followed, and
/// then the engine keeps only counts.
pub fn follow(
    sink: Option<Box<dyn IntervalSink>>,
) -> (Option<Box<dyn IntervalSink>>, Option<Kept>) {
    let to = listeners();
    if to.is_empty() {
        return (sink, None);
    }
    let page = Box::new(to);
    match sink {
        Some(sink) => (Some(Box::new(Beside { sink, page })), None),
        None => {
            let kept = Kept::default();
            let sink = Box::new(Beside {
                sink: Box::new(kept.clone()),
                page,
            });
            (Some(sink), Some(kept))
        }
    }
}

/// The fleet's generators, by part, as the page names their rows.
pub fn generators(fleet: &loadlab_session::fleet::Fleet) {
    let names = fleet.generators.iter().map(|g| g.name.clone()).collect();
    listeners().send(Update::Command(CommandUpdate::Generators(names)));
}

/// The run going on: over a fleet, each generator's own intervals on the page (a row each);
/// its elapsed time on the terminal's title.
pub fn observe_parts(control: &RunControl) {
    crate::tui::follow_control(control);
    let to = listeners();
    if !to.is_empty() {
        control.observe_parts(Box::new(Parts(to)));
    }
}

struct Parts(LiveSink);

impl PartObserver for Parts {
    fn interval(&mut self, part: usize, interval: &IntervalSummary) {
        let mut iv = interval.clone();
        // The page shows the generator's figures, not its latency's histogram.
        iv.histogram = None;
        self.0
            .send(Update::Command(CommandUpdate::Part(part, Box::new(iv))));
    }
}

/// A sink with the page beside it: the sink's answer is the one that counts (the page's
/// never fails the run).
struct Beside {
    sink: Box<dyn IntervalSink>,
    page: Box<dyn IntervalSink>,
}

impl IntervalSink for Beside {
    fn start(&mut self, header: &RunResult) -> Result<(), String> {
        let _ = self.page.start(header);
        self.sink.start(header)
    }
    fn interval(&mut self, interval: &IntervalSummary) -> Result<(), String> {
        let _ = self.page.interval(interval);
        self.sink.interval(interval)
    }
    fn finish(&mut self) -> Result<(), String> {
        let _ = self.page.finish();
        self.sink.finish()
    }
}

/// A run's intervals kept in memory, for its timeline (a probe's: a few dozen).
#[derive(Clone, Default)]
pub struct Kept(Arc<Mutex<Vec<IntervalSummary>>>);

impl IntervalSink for Kept {
    fn start(&mut self, _: &RunResult) -> Result<(), String> {
        Ok(())
    }
    fn interval(&mut self, interval: &IntervalSummary) -> Result<(), String> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(interval.clone());
        Ok(())
    }
    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }
}

impl Kept {
    /// The result's timeline: the intervals kept, with what only the engine's own summary
    /// of each knows (as a timeline read back from the store gets it).
    pub fn read_back(&self, result: &mut RunResult) {
        let kept = std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()));
        if kept.is_empty() {
            return;
        }
        let summary = std::mem::take(&mut result.timeline);
        result.timeline = kept
            .into_iter()
            .enumerate()
            .map(|(i, iv)| loadlab_session::spill::timeline::with_summary(iv, summary.get(i), 1))
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe followed without a store: its timeline is the intervals the sink kept (whole,
    /// histograms and all), with what only the engine's summary knows (steal) laid on them.
    #[test]
    fn kept_intervals_are_the_results_timeline() {
        let mut result: RunResult = serde_json::from_str(include_str!(
            "../../../loadlab-report/tests/fixtures/open.json"
        ))
        .expect("fixture");
        let mut whole = result.timeline.clone();
        assert!(whole.len() >= 2);
        for (i, iv) in whole.iter_mut().enumerate() {
            iv.histogram = Some(format!("histogram {i}"));
        }
        let mut kept = Kept::default();
        for iv in &whole {
            let mut counts_only = iv.clone();
            counts_only.steal = None;
            kept.interval(&counts_only).unwrap();
        }
        // What the engine leaves when a sink takes the intervals: counts, no histograms.
        for (i, iv) in result.timeline.iter_mut().enumerate() {
            iv.histogram = None;
            iv.steal = Some(i as f64 / 100.0);
        }
        kept.read_back(&mut result);
        assert_eq!(result.timeline.len(), whole.len());
        for (i, iv) in result.timeline.iter().enumerate() {
            assert_eq!(iv.histogram, whole[i].histogram);
            assert_eq!(iv.steal, Some(i as f64 / 100.0));
        }
    }
}
