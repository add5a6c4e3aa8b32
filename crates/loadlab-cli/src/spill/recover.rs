//! A run's result rebuilt from its spill file, streaming: running totals over the written
//! intervals (their histograms merged exactly, their counts summed) laid over the header.
//! Serves both a run that ended well (its totals come from what it wrote) and `loadlab
//! recover` (a run killed by any means). It must not hold intervals beyond the timeline the
//! result document itself carries, and keeps none when asked for totals only.

use super::SpillReader;
pub use loadlab_engine::totals::{apply, Totals};
use loadlab_result::RunResult;
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

/// The partial result of a killed run: its totals are exactly the merge of the intervals
/// written, and it says so.
pub fn recover(path: &Path) -> anyhow::Result<RunResult> {
    let mut reader = SpillReader::open(path)?;
    let (mut result, totals) = read(&mut reader, true)?;
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
    let torn = if reader.torn_bytes > 0 {
        format!(
            "; the {} bytes of a record cut short by the kill were left out",
            reader.torn_bytes
        )
    } else {
        String::new()
    };
    result.warnings.push(format!(
        "recovered from {} after the run was killed at {killed_at} (the end of its last \
         interval written, {:.0} s in); figures up to the last interval written ({} intervals){torn}. \
         Counts, latency and bytes are the exact merge of those intervals; connect times, \
         status codes, error classes and the generator's health are not written per interval \
         and stay as they were at the start",
        path.display(),
        totals.last_end_s,
        totals.measured.intervals + totals.warmup.intervals,
    ));
    Ok(result)
}
