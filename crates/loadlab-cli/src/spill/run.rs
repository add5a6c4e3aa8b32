//! Where a `loadlab run`'s timeline goes as the run goes: with `--save`, the results store
//! (the run's row made at the start, each interval appended; the result replaces it at the
//! end); otherwise a spill file next to `--json` as `FILE.spill`, or a temporary one. The
//! result's timeline is read back from there when the run ends; the spill file is removed
//! once the result is written (kept when the timeline had to be coarsened, since it alone has
//! every interval, or when writing it failed). A run killed by any means leaves the file for
//! `loadlab recover`, or its row for `loadlab runs show`.
//!
//! It must not print when quiet; it never fails a run that measured well: a timeline that
//! cannot be written becomes a warning in the result.

use super::sink::SpillSink;
use super::store_sink::{StoreSink, StreamedRun};
use super::stored;
use super::timeline::rebuild;
use crate::output::{Destination, Outputs};
use loadlab_engine::{RunControl, RunResult};
use loadlab_session::Session;
use loadlab_store::{RunId, RunMeta, Store};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// A run saved in the results store (`--save`).
pub struct Save<'a> {
    pub store: &'a Store,
    pub meta: RunMeta,
}

pub struct Spill {
    path: PathBuf,
    keep: bool,
    /// With `--save`: the run's row in the store (no spill file then).
    streamed: Option<StreamedRun>,
}

/// The spill file of a run whose JSON goes to `json` (a file: next to it).
pub fn path_for(json: Option<&Destination>) -> PathBuf {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    match json {
        Some(Destination::File(_, p)) => {
            let mut name = p.as_os_str().to_owned();
            name.push(".spill");
            PathBuf::from(name)
        }
        _ => {
            let unix_s = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            std::env::temp_dir().join(loadlab_session::spill::orphans::temp_name(
                std::process::id(),
                unix_s,
                RUNS.fetch_add(1, Ordering::Relaxed),
            ))
        }
    }
}

impl Spill {
    /// Sets the run's interval sink (the store with `save`, else a spill file); says where
    /// the timeline goes, and names the spill files killed runs left (unless `quiet`).
    pub fn start(
        control: &RunControl,
        outputs: &Outputs,
        quiet: bool,
        save: Option<&Save>,
        session: &Session,
    ) -> Spill {
        if !quiet {
            if let Some(text) = super::orphans::notice(&super::orphans::list()) {
                eprintln!("{text}");
            }
        }
        if let Some(save) = save {
            let (sink, streamed) = StoreSink::new(save.store.path(), save.meta.clone());
            control.stream_intervals_to(session.with_server_samples(Box::new(sink), control));
            if !quiet {
                eprintln!(
                    "timeline written to {} as the run goes (if loadlab is killed: loadlab \
                     runs list --db {0})",
                    save.store.path().display()
                );
            }
            return Spill {
                path: PathBuf::new(),
                keep: false,
                streamed: Some(streamed),
            };
        }
        let path = path_for(outputs.json.as_ref());
        control.stream_intervals_to(
            session.with_server_samples(Box::new(SpillSink::new(path.clone())), control),
        );
        if !quiet {
            eprintln!(
                "timeline written to {} as the run goes (if loadlab is killed: loadlab \
                 recover {0})",
                path.display()
            );
        }
        Spill {
            path,
            keep: false,
            streamed: None,
        }
    }

    /// Replaces the result's timeline by the one written (coarsened past
    /// [`super::timeline::MAX_TIMELINE_INTERVALS`], with a warning saying so).
    pub fn read_back(
        mut self,
        control: &RunControl,
        result: &mut RunResult,
        save: Option<&Save>,
    ) -> Spill {
        if let (Some(streamed), Some(save)) = (&self.streamed, save) {
            stored::read_back(save.store, Some(control), streamed, result);
            return self;
        }
        let Some(report) = control.stream_report() else {
            return self; // the engine never ran
        };
        let shown = self.path.display();
        if let Some(e) = &report.error {
            self.keep = true;
            result.warnings.push(format!(
                "the timeline could not be written as the run went ({e}): {} intervals are in \
                 {shown}; the result's timeline has counts but no per-interval latency. Give \
                 --json a file on a disk with room",
                report.intervals_written
            ));
            return self;
        }
        let summary = std::mem::take(&mut result.timeline);
        match rebuild(&self.path, report.intervals_written, &summary) {
            Ok(rebuilt) => {
                if rebuilt.group > 1 {
                    self.keep = true;
                    result.warnings.push(format!(
                        "the timeline's {} intervals of {} s are shown merged {} at a time \
                         (intervals of {} s) to keep the result and its report small; the \
                         totals are exact, and {shown} keeps every interval (loadlab recover \
                         {shown} --json FILE gives them all)",
                        rebuilt.read,
                        result.load.interval_s,
                        rebuilt.group,
                        result.load.interval_s * rebuilt.group as f64
                    ));
                }
                if rebuilt.read != report.intervals_written {
                    self.keep = true;
                    result.warnings.push(format!(
                        "{shown} holds {} intervals where {} were written: the file was \
                         changed during the run",
                        rebuilt.read, report.intervals_written
                    ));
                }
                result.timeline = rebuilt.timeline;
                if let Some(server) = result.server.as_ref().filter(|_| rebuilt.group > 1) {
                    // Merged intervals have no server figures of their own: from the windows
                    // kept, one per merged interval (`loadlab_session::run`).
                    loadlab_result::attach::join_server(&mut result.timeline, &server.samples);
                }
            }
            Err(e) => {
                self.keep = true;
                result.timeline = summary;
                result.warnings.push(format!(
                    "the timeline could not be read back from {shown} ({e:#}); it has counts \
                     but no per-interval latency"
                ));
            }
        }
        self
    }

    /// The result is written: the file goes, unless it holds more than the result.
    pub fn done(self, quiet: bool) {
        if self.streamed.is_some() {
            return;
        }
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        } else if !quiet {
            eprintln!("kept {} (every interval of the run)", self.path.display());
        }
    }

    /// With `--save`: the result laid over the run's row (or saved anew when the run never
    /// made one).
    pub fn save(&self, save: &Save, result: &RunResult) -> anyhow::Result<RunId> {
        match &self.streamed {
            Some(streamed) => stored::save(save.store, streamed, result, &save.meta),
            None => Ok(save.store.save_run(result, &save.meta)?),
        }
    }
}
