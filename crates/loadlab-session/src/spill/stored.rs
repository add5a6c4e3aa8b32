//! Streamed runs in the results store, read back: the timeline of a run that ended (from its
//! written intervals, coarsened like a spill file's), its result replacing the header, and
//! killed runs (their writer gone) sealed with the partial result [`Recovery`] rebuilds, the
//! same code path as `loadlab recover FILE`. It must not print; it says what it sealed.

use super::recover::Recovery;
use super::store_sink::{boot_id, StreamedRun};
use super::timeline::{with_summary, Rebuilt, TimelineBuilder, MAX_TIMELINE_INTERVALS};
use loadlab_engine::RunControl;
use loadlab_result::{IntervalSummary, RunResult};
use loadlab_store::{RunId, RunMeta, Store, Writer};

/// Whether the process that wrote a stream may still be writing it: same boot, and its PID
/// is alive (this process counts as alive).
pub fn writer_alive(w: &Writer) -> bool {
    if let (Some(theirs), Some(ours)) = (&w.boot_id, boot_id()) {
        if *theirs != ours {
            return false;
        }
    }
    w.pid == std::process::id() || pid_alive(w.pid)
}

/// Whether `pid` is a process that runs (a zombie, killed and not yet reaped, is not).
pub fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `PID (COMM) STATE ...`: COMM may hold spaces and parentheses, STATE follows the last `)`.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// The timeline of the streamed run `run` from its `written` intervals; `summary` is the
/// engine's (counts only), whose steal and server samples are carried over.
pub fn rebuild_timeline(
    store: &Store,
    run: RunId,
    written: u64,
    summary: &[IntervalSummary],
) -> anyhow::Result<Rebuilt> {
    let mut builder = TimelineBuilder::new(written, MAX_TIMELINE_INTERVALS);
    let mut i = 0;
    let mut failed = None;
    store.for_each_interval(run, |iv| {
        let iv = with_summary(iv, summary.get(i), builder.group());
        i += 1;
        builder.push(iv).map_err(|e| {
            let text = format!("{e:#}");
            failed = Some(text.clone());
            text
        })
    })?;
    if let Some(e) = failed {
        anyhow::bail!(e);
    }
    builder.finish()
}

/// The partial result of the killed streamed run `run`: its header with the exact merge of
/// its written intervals, marked interrupted with the time of the last one.
pub fn recover_run(store: &Store, run: RunId) -> anyhow::Result<RunResult> {
    let header = store.run(run)?.result;
    let written = store.interval_count(run)?;
    let mut recovery = Recovery::new(Some(written), &header)?;
    store.for_each_interval(run, |iv| recovery.push(iv))?;
    let source = format!("run {run} of the results store {}", store.path().display());
    recovery.finish(header, &source, "")
}

/// What [`seal_orphans`] did: the runs sealed, and those that could not be (with why).
#[derive(Debug, Default)]
pub struct Sealed {
    pub sealed: Vec<RunId>,
    pub failed: Vec<(RunId, String)>,
}

/// Seals every streamed run whose writer is gone with its recovered result.
pub fn seal_orphans(store: &Store) -> anyhow::Result<Sealed> {
    let (mut sealed, mut failed) = (Vec::new(), Vec::new());
    for open in store.open_streams()? {
        if writer_alive(&open.writer) {
            continue;
        }
        match recover_run(store, open.run).and_then(|r| Ok(store.seal_run(open.run, &r)?)) {
            Ok(()) => sealed.push(open.run),
            Err(e) => failed.push((open.run, format!("{e:#}"))),
        }
    }
    Ok(Sealed { sealed, failed })
}

/// A streamed run that ended (well or stopped): its timeline read back from the store into
/// `result` (coarsened, with a warning, past [`MAX_TIMELINE_INTERVALS`]). Nothing to do when
/// the run has no row (the engine never started the sink).
pub fn read_back(
    store: &Store,
    control: Option<&RunControl>,
    streamed: &StreamedRun,
    result: &mut RunResult,
) {
    let Some(run) = streamed.run() else {
        return;
    };
    // Without the run's control, what the store holds is what was written.
    let report = match control {
        Some(c) => c.stream_report(),
        None => store
            .interval_count(run)
            .ok()
            .map(|n| loadlab_engine::collector::StreamReport {
                intervals_written: n,
                ..Default::default()
            }),
    };
    let Some(report) = report else {
        return;
    };
    if let Some(e) = &report.error {
        result.warnings.push(format!(
            "the timeline could not be written to the results store as the run went ({e}): \
             the result's timeline has counts but no per-interval latency"
        ));
        return;
    }
    let summary = std::mem::take(&mut result.timeline);
    match rebuild_timeline(store, run, report.intervals_written, &summary) {
        Ok(rebuilt) => {
            if rebuilt.group > 1 {
                result.warnings.push(format!(
                    "the timeline's {} intervals of {} s are shown merged {} at a time (intervals \
                     of {} s) to keep the result and its report small; the totals are exact, \
                     and `loadlab runs export {} --intervals` gives every interval back",
                    rebuilt.read,
                    result.load.interval_s,
                    rebuilt.group,
                    result.load.interval_s * rebuilt.group as f64,
                    run.0
                ));
            }
            result.timeline = rebuilt.timeline;
            if let Some(server) = result.server.as_ref().filter(|_| rebuilt.group > 1) {
                // Merged intervals have no server figures of their own: from the windows
                // kept, one per merged interval.
                loadlab_result::attach::join_server(&mut result.timeline, &server.samples);
            }
        }
        Err(e) => {
            result.timeline = summary;
            result.warnings.push(format!(
                "the timeline could not be read back from the results store ({e:#}); it has \
                 counts but no per-interval latency"
            ));
        }
    }
}

/// The streamed run's result laid over its row (same id), its intervals gone unless the
/// result's timeline merged them (fewer intervals than were written: they are then kept for
/// `loadlab runs export --intervals`); without a row (the engine never started the sink) the
/// result is saved as a new run. Returns the id.
pub fn save(
    store: &Store,
    streamed: &StreamedRun,
    result: &RunResult,
    meta: &RunMeta,
) -> anyhow::Result<RunId> {
    match streamed.run() {
        Some(run) => {
            if store.interval_count(run)? > result.timeline.len() as u64 {
                store.finish_run_keeping_intervals(run, result, meta)?;
            } else {
                store.finish_run(run, result, meta)?;
            }
            Ok(run)
        }
        None => Ok(store.save_run(result, meta)?),
    }
}
