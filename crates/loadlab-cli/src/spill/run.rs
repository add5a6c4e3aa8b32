//! A run's spill file from start to end: where it goes (next to `--json` as `FILE.spill`, or
//! a temporary file), the engine's sink set on the run's control, the result's timeline read
//! back from it when the run ends, and the file removed once the result is written (kept
//! when the timeline had to be coarsened, since it alone has every interval, or when writing
//! it failed). A run killed by any means leaves it for `loadlab recover`.
//!
//! It must not print when quiet; it never fails a run that measured well: a spill file
//! that cannot be written becomes a warning in the result.

use super::sink::SpillSink;
use super::timeline::rebuild;
use crate::output::{Destination, Outputs};
use loadlab_engine::{RunControl, RunResult};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Spill {
    path: PathBuf,
    keep: bool,
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
            std::env::temp_dir().join(format!(
                "loadlab-{}-{unix_s}-{}.spill",
                std::process::id(),
                RUNS.fetch_add(1, Ordering::Relaxed)
            ))
        }
    }
}

impl Spill {
    /// Sets the run's interval sink; says where the file is (unless `quiet`).
    pub fn start(control: &RunControl, outputs: &Outputs, quiet: bool) -> Spill {
        let path = path_for(outputs.json.as_ref());
        control.stream_intervals_to(Box::new(SpillSink::new(path.clone())));
        if !quiet {
            eprintln!(
                "timeline written to {} as the run goes (if loadlab is killed: loadlab \
                 recover {0})",
                path.display()
            );
        }
        Spill { path, keep: false }
    }

    /// Replaces the result's timeline by the one written (coarsened past
    /// [`super::timeline::MAX_TIMELINE_INTERVALS`], with a warning saying so).
    pub fn read_back(mut self, control: &RunControl, result: &mut RunResult) -> Spill {
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
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        } else if !quiet {
            eprintln!("kept {} (every interval of the run)", self.path.display());
        }
    }
}
