//! The search's or sweep's [`Events`]: each probe printed as it starts and ends, streamed
//! into the store as it goes and kept there when it ends (redacted), and shown on the live
//! page; every probe's run kept for the report.

use super::live;
use loadlab_capacity::search::{rate, Unit};
use loadlab_capacity::{Events, ProbeRecord};
use loadlab_engine::collector::IntervalSink;
use loadlab_engine::RunResult;
use loadlab_session::spill::store_sink::{StoreSink, StreamedRun};
use loadlab_session::spill::stored;
use loadlab_store::Store;

pub(super) struct Printer<'a> {
    pub(super) quiet: bool,
    /// The loads are connection counts.
    pub(super) closed: bool,
    pub(super) unit: Unit,
    pub(super) store: Option<&'a Store>,
    pub(super) tag: &'a str,
    /// Every probe's run, for the report.
    pub(super) results: Vec<(ProbeRecord, RunResult)>,
    pub(super) failed_to_save: Option<String>,
    /// The probe going on, written to the store as it goes.
    pub(super) streamed: Option<StreamedRun>,
    pub(super) live: live::Page,
}

impl Events for Printer<'_> {
    fn stream(&mut self, _index: usize) -> Option<Box<dyn IntervalSink>> {
        let sink = self.store.map(|store| {
            let meta = crate::cmd::runs::run_meta(Some(self.tag));
            let (sink, streamed) = StoreSink::new(store.path(), meta);
            self.streamed = Some(streamed);
            Box::new(sink) as Box<dyn IntervalSink>
        });
        self.live.follow(sink)
    }

    fn read_back(&mut self, result: &mut RunResult) {
        if let (Some(store), Some(streamed)) = (self.store, &self.streamed) {
            stored::read_back(store, None, streamed, result);
        }
        self.live.read_back(result);
    }

    fn starting(&mut self, index: usize, load: f64, round: Option<usize>) {
        // With --tui the probes are its rows (a line here would be drawn over).
        if !self.quiet && !crate::tui::is_on() {
            let what = if self.closed {
                format!("{load} connections")
            } else {
                self.unit.show(load)
            };
            match round {
                Some(r) => eprint!("probe {index} (round {}): {what} ... ", r + 1),
                None => eprint!("probe {index}: {what} ... "),
            }
        }
        self.live.starting(index, load, round);
    }

    fn finished(&mut self, record: &ProbeRecord, result: &RunResult) -> Option<i64> {
        let mut result = result.clone();
        result.command = std::env::args().collect();
        crate::cmd::runs::redact(&mut result);
        if !self.quiet && !crate::tui::is_on() {
            let m = &record.measure;
            eprintln!(
                "{}/s {}, p99 {}: {}",
                rate(m.achieved_per_s),
                m.done(),
                m.p99_us.map_or("-".into(), loadlab_report::duration_us),
                record.verdict()
            );
        }
        let streamed = self.streamed.take();
        let id = match self.store {
            Some(store) => match match &streamed {
                Some(streamed) => {
                    let meta = crate::cmd::runs::run_meta(Some(self.tag));
                    stored::save(store, streamed, &result, &meta)
                }
                None => crate::cmd::runs::save(store, &result, Some(self.tag)),
            } {
                Ok(id) => Some(id.0),
                Err(e) => {
                    self.failed_to_save = Some(format!("a probe's run was not kept: {e:#}"));
                    None
                }
            },
            None => None,
        };
        let mut record = record.clone();
        record.run_id = id;
        self.live.finished(&record, &result);
        self.results.push((record, result));
        id
    }
}
