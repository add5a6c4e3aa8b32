//! A killed run's result rebuilt from what it wrote as it went, streaming: running totals
//! over the written intervals (their histograms merged exactly, their counts summed) laid
//! over the header (a gRPC run's messages each way too), marked interrupted with the end of
//! the last interval written. One code
//! path for both homes of a timeline: a spill file ([`recover`], `loadlab recover FILE`) and
//! the results store ([`super::stored`], `loadlab runs show` of a killed run). It must not
//! hold intervals beyond the timeline the result document itself carries.

use super::timeline::TimelineBuilder;
use super::{Damage, SpillReader};
use loadlab_engine::totals::LATEST_END_S;
pub use loadlab_engine::totals::{apply, Totals};
use loadlab_result::scenario::StepMessages;
use loadlab_result::{decode_histogram, IntervalSummary, RunResult};
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
    /// The run's interval width (seconds), as its header says: no interval lasts longer.
    interval_s: f64,
    /// The first interval [`check`] refused: said once every interval has been through the
    /// totals' own checks, so that a count that overflows is named as such wherever it is.
    not_a_runs: Option<String>,
    /// A gRPC run's messages each way over the intervals (its `grpc` section's, exactly).
    messages: Option<StepMessages>,
}

impl Recovery {
    /// For `written` intervals (the timeline is coarsened past
    /// [`super::timeline::MAX_TIMELINE_INTERVALS`]; `None`: keep them all) of the run whose
    /// header is `header`. A header that names no interval width a run can have is refused:
    /// its intervals could not be checked.
    pub fn new(written: Option<u64>, header: &RunResult) -> anyhow::Result<Recovery> {
        let interval_s = header.load.interval_s;
        if !(MIN_DURATION_S..=LATEST_END_S).contains(&interval_s) {
            anyhow::bail!(
                "the header's interval width is {interval_s} s, which no run has: the file was \
                 altered after it was written; recover from an unaltered copy"
            );
        }
        Ok(Recovery {
            totals: Totals::default(),
            timeline: TimelineBuilder::new(
                written.unwrap_or(0),
                written.map_or(u64::MAX, |_| super::timeline::MAX_TIMELINE_INTERVALS),
            ),
            interval_s,
            not_a_runs: None,
            messages: None,
        })
    }

    /// Adds one interval, or says why it cannot be the run's: the totals' own checks here,
    /// [`check`]'s when the recovery finishes (no result is made then either).
    pub fn push(&mut self, iv: IntervalSummary) -> Result<(), String> {
        self.totals.add(&iv)?;
        self.messages = StepMessages::sum(self.messages, iv.messages);
        if let Err(why) = check(&iv, self.interval_s) {
            self.not_a_runs.get_or_insert(why);
        }
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
        if let Some(why) = self.not_a_runs {
            anyhow::bail!(why);
        }
        let totals = self.totals;
        if let (Some(grpc), Some(m)) = (result.grpc.as_mut(), self.messages) {
            grpc.messages_sent = m.sent;
            grpc.messages_received = m.received;
        }
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

/// The shortest interval a run writes, with room to spare: the engine's shortest is a
/// timeline bucket (100 ms), or a whole interval when shorter. A duration of 1e-300 s made a
/// recovered interval serve 1.8e18 requests/s.
pub const MIN_DURATION_S: f64 = 0.001;

/// Why `iv` cannot be an interval of a run whose intervals are `interval_s` long, if it
/// cannot: it lasts under [`MIN_DURATION_S`] or longer than the interval width, or its
/// histogram is not its own (the histogram holds one response time per request completed,
/// and the interval's percentiles and maximum were read from it).
pub fn check(iv: &IntervalSummary, interval_s: f64) -> Result<(), String> {
    let altered = |what: String| {
        format!(
            "the interval at {} s {what}: the file was altered after it was written (loadlab \
             writes no such interval); recover from an unaltered copy",
            iv.start_s
        )
    };
    // The width as the header says, and a hair over for the float arithmetic of a merge.
    if !(MIN_DURATION_S..=interval_s * (1.0 + 1e-9)).contains(&iv.duration_s) {
        // Plain figures, but 1e-300 rather than 301 digits.
        let d = iv.duration_s;
        let said = if d != 0.0 && !(1e-6..1e9).contains(&d.abs()) {
            format!("{d:e}")
        } else {
            format!("{d}")
        };
        return Err(altered(format!(
            "lasts {said} s, not between {MIN_DURATION_S} s and the run's interval of \
             {interval_s} s"
        )));
    }
    let Some(text) = &iv.histogram else {
        return Ok(());
    };
    // A histogram that does not decode is the totals' error to name.
    let Ok(h) = decode_histogram(text) else {
        return Ok(());
    };
    if h.len() != iv.completed {
        return Err(altered(format!(
            "has a histogram of {} response times for {} requests completed (another \
             interval's histogram?)",
            h.len(),
            iv.completed
        )));
    }
    let near = |said: Option<f64>, of: f64| {
        said.is_none_or(|v| (v - of).abs() <= 1e-9 * of.abs().max(1.0))
    };
    let ms = |v: u64| v as f64 / 1_000.0;
    let read_from_it = h.is_empty()
        || (near(iv.p50_us, ms(h.value_at_quantile(0.5)))
            && near(iv.p99_us, ms(h.value_at_quantile(0.99)))
            && near(iv.max_us, ms(h.max())));
    if !read_from_it {
        return Err(altered(format!(
            "says its median and maximum were {:?} and {:?} µs, but its histogram's are {} and \
             {} µs (another interval's histogram?)",
            iv.p50_us,
            iv.max_us,
            ms(h.value_at_quantile(0.5)),
            ms(h.max())
        )));
    }
    Ok(())
}

/// A recovered result, and what the spill file's reader skipped on the way.
#[derive(Debug)]
pub struct Recovered {
    pub result: RunResult,
    /// Whole records that failed their check (not the torn tail a kill leaves): the result
    /// lacks their intervals, and its warnings say so.
    pub damage: Damage,
}

/// The partial result of a run killed while writing the spill file `path`: its totals are
/// exactly the merge of the intervals written, and it says so. A damaged record in the
/// middle is skipped, the intact ones after it are recovered, and both are said (first
/// among the warnings).
pub fn recover(path: &Path) -> anyhow::Result<Recovered> {
    let mut reader = SpillReader::open(path)?;
    let mut header = reader.header()?;
    let mut recovery = Recovery::new(None, &header)?;
    let escaped = escape_header(&mut header);
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
    let source = path.display().to_string();
    let mut result = recovery.finish(header, &source, &torn)?;
    if let Some(said) = reader.damage.describe(&source) {
        result.warnings.insert(0, said);
    }
    if escaped {
        result.warnings.push(
            "the header held control characters, shown escaped: no run writes them there, so \
             the file was altered after it was written"
                .into(),
        );
    }
    Ok(Recovered {
        result,
        damage: reader.damage,
    })
}

/// The header as a terminal may show it. loadlab writes no control character into a
/// header but line breaks in its own sentences, and none at all into the target (its URL
/// is parsed, the rest is ours), so any there was put in by hand: escaped as every peer's
/// text is ([`escape`]), the target's line breaks too. Whether anything was.
fn escape_header(header: &mut RunResult) -> bool {
    let mut changed = false;
    let target = &mut header.target;
    for text in [&mut target.url, &mut target.method, &mut target.address] {
        changed |= escape(text, false);
    }
    let Ok(mut value) = serde_json::to_value(&*header) else {
        return changed;
    };
    if escape_all(&mut value) {
        if let Ok(escaped) = serde_json::from_value(value) {
            *header = escaped;
            changed = true;
        }
    }
    changed
}

/// Every string of `value`, escaped but for its line breaks.
fn escape_all(value: &mut serde_json::Value) -> bool {
    match value {
        serde_json::Value::String(s) => escape(s, true),
        serde_json::Value::Array(items) => items.iter_mut().fold(false, |c, v| escape_all(v) | c),
        serde_json::Value::Object(map) => map.values_mut().fold(false, |c, v| escape_all(v) | c),
        _ => false,
    }
}

/// `text` as a terminal may show it, by the one rule for a peer's text
/// (`loadlab_result::format::shown`), line by line when `keep_lines`; whether it changed.
fn escape(text: &mut String, keep_lines: bool) -> bool {
    use loadlab_result::format::shown;
    let escaped = if keep_lines {
        text.split('\n').map(shown).collect::<Vec<_>>().join("\n")
    } else {
        shown(text).into_owned()
    };
    let changed = escaped != *text;
    *text = escaped;
    changed
}
