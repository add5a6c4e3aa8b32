//! A killed run's result rebuilt from what it wrote as it went, streaming: running totals
//! over the written intervals (their histograms merged exactly, their counts summed) laid
//! over the header, marked interrupted with the end of the last interval written. One code
//! path for both homes of a timeline: a spill file ([`recover`], `loadlab recover FILE`) and
//! the results store ([`super::stored`], `loadlab runs show` of a killed run). It must not
//! hold intervals beyond the timeline the result document itself carries.

use super::timeline::TimelineBuilder;
use super::SpillReader;
pub use loadlab_engine::totals::{apply, Totals};
use loadlab_result::{IntervalSummary, RunResult};
use std::io::BufRead;
use std::path::Path;
use std::time::Duration;

/// Reads a spill file through: its header, its totals, and (when `keep_timeline`) its
/// intervals for the result's timeline.
pub fn read(
    reader: &mut SpillReader<impl BufRead>,
    keep_timeline: bool,
) -> anyhow::Result<(RunResult, Totals)> {
    let mut result = reader.header()?;
    let mut totals = Totals::default();
    while let Some(iv) = reader.next_interval()? {
        totals.add(&iv).map_err(anyhow::Error::msg)?;
        if keep_timeline {
            result.timeline.push(iv);
        }
    }
    Ok((result, totals))
}

/// Intervals on their way to a partial result: the totals and the timeline, built as they
/// come.
pub struct Recovery {
    pub totals: Totals,
    timeline: TimelineBuilder,
}

impl Recovery {
    /// For `written` intervals (the timeline is coarsened past
    /// [`super::timeline::MAX_TIMELINE_INTERVALS`]); `None`: keep them all.
    pub fn new(written: Option<u64>) -> Recovery {
        Recovery {
            totals: Totals::default(),
            timeline: TimelineBuilder::new(
                written.unwrap_or(0),
                written.map_or(u64::MAX, |_| super::timeline::MAX_TIMELINE_INTERVALS),
            ),
        }
    }

    pub fn push(&mut self, iv: IntervalSummary) -> Result<(), String> {
        self.totals.add(&iv)?;
        self.timeline.push(iv).map_err(|e| format!("{e:#}"))
    }

    /// The partial result: `header` with the totals laid over it, marked interrupted, with
    /// a warning naming `source` and the time of the last interval written (`note` added).
    pub fn finish(
        self,
        mut result: RunResult,
        source: &str,
        note: &str,
    ) -> anyhow::Result<RunResult> {
        let totals = self.totals;
        let rebuilt = self.timeline.finish()?;
        result.timeline = rebuilt.timeline;
        apply(&mut result.measured, &totals.measured);
        if let Some(warmup) = result.warmup.as_mut() {
            apply(warmup, &totals.warmup);
        }
        result.interrupted = true;
        let killed_at = humantime::parse_rfc3339_weak(&result.started_at)
            .ok()
            .map(|t| t + Duration::from_secs_f64(totals.last_end_s))
            .map_or_else(
                || format!("{:.0} s into the run", totals.last_end_s),
                |t| humantime::format_rfc3339_seconds(t).to_string(),
            );
        let coarse = if rebuilt.group > 1 {
            format!(
                "; the timeline shows them merged {} at a time (the totals are exact)",
                rebuilt.group
            )
        } else {
            String::new()
        };
        result.warnings.push(format!(
            "recovered from {source} after the run was killed at {killed_at} (the end of its \
             last interval written, {:.0} s in); figures up to the last interval written ({} \
             intervals){note}{coarse}. Counts, latency and bytes are the exact merge of those \
             intervals; connect times, status codes, error classes and the generator's health \
             are not written per interval and stay as they were at the start",
            totals.last_end_s,
            totals.measured.intervals + totals.warmup.intervals,
        ));
        Ok(result)
    }
}

/// The partial result of a run killed while writing the spill file `path`: its totals are
/// exactly the merge of the intervals written, and it says so.
pub fn recover(path: &Path) -> anyhow::Result<RunResult> {
    let mut reader = SpillReader::open(path)?;
    let header = reader.header()?;
    let mut recovery = Recovery::new(None);
    while let Some(iv) = reader.next_interval()? {
        recovery.push(iv).map_err(anyhow::Error::msg)?;
    }
    let torn = if reader.torn_bytes > 0 {
        format!(
            "; the {} bytes of a record cut short by the kill were left out",
            reader.torn_bytes
        )
    } else {
        String::new()
    };
    recovery.finish(header, &path.display().to_string(), &torn)
}
