//! Merging the shards of one run (`loadlab run --shard I/N` on N machines) into one result.
//!
//! On top of the exact concurrent [`merge`](crate::merge::merge): the shards must belong to
//! one run (same shard count, same plan digest, each index once), a shard that did not report
//! or failed is named, each shard's figures and health stay in [`RunResult::parts`] with its
//! verdicts marked as its own, timelines are aligned by wall-clock interval (a shard that
//! started an interval late lands in the right interval), and the spread of the shards' start
//! times is measured against a stated bound.
//!
//! This module judges only whether the parts make one run; it must not re-weigh or correct
//! anyone's figures.

use crate::merge::{merge, MergeError};
use crate::parts::{ShardInfo, ShardsSummary};
use crate::run::RunResult;

/// Shards that started further apart than this are reported: over a 10 s run, 10 ms is 0.1%
/// of the time at a load the target saw only in part.
pub const START_SPREAD_BOUND_S: f64 = 0.010;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardMergeError {
    /// Part `part` (from 0) has no shard information while others have.
    NotAShard {
        part: usize,
    },
    /// Part `part` is shard `index` of `count`, unlike the first part's `first_count`.
    Count {
        part: usize,
        index: u32,
        count: u32,
        first_count: u32,
    },
    /// Part `part` is shard `index` of another run (another plan or start time).
    OtherRun {
        part: usize,
        index: u32,
        what: &'static str,
    },
    /// Shard `index` was given twice (parts `first` and `again`).
    Duplicate {
        index: u32,
        first: usize,
        again: usize,
    },
    Merge(MergeError),
}

impl std::fmt::Display for ShardMergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShardMergeError::NotAShard { part } => write!(
                f,
                "result {} is not a shard (it ran without --shard) while others are: merge the \
                 shards of one run only",
                part + 1
            ),
            ShardMergeError::Count {
                part,
                index,
                count,
                first_count,
            } => write!(
                f,
                "result {} is shard {index}/{count}, but the first is one of {first_count} \
                 shards: these are shards of different runs",
                part + 1
            ),
            ShardMergeError::OtherRun { part, index, what } => write!(
                f,
                "result {} (shard {index}) belongs to another run: its {what} differs from the \
                 first shard's; merge the shards of one run only",
                part + 1
            ),
            ShardMergeError::Duplicate {
                index,
                first,
                again,
            } => write!(
                f,
                "shard {index} was given twice (results {} and {}): give each shard's result \
                 once",
                first + 1,
                again + 1
            ),
            ShardMergeError::Merge(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ShardMergeError {}

impl From<MergeError> for ShardMergeError {
    fn from(e: MergeError) -> Self {
        ShardMergeError::Merge(e)
    }
}

impl RunResult {
    /// Why this run is partial, in words: a shard of it is missing (on a fleet, its
    /// generator was lost). The warning that names the generator when there is one.
    pub fn partial(&self) -> Option<String> {
        let missing = &self.shards.as_ref()?.missing;
        if missing.is_empty() {
            return None;
        }
        Some(
            self.warnings
                .iter()
                .find(|w| w.contains("is missing from these figures"))
                .cloned()
                .unwrap_or_else(|| {
                    let list: Vec<String> = missing.iter().map(u32::to_string).collect();
                    format!(
                        "shard {} is missing from the merged figures",
                        list.join(", ")
                    )
                }),
        )
    }
}

/// Merges the shards of one run. Parts without shard information (then none of them may have
/// any) merge as plain concurrent parts.
pub fn merge_shards(parts: &[RunResult]) -> Result<RunResult, ShardMergeError> {
    let infos: Vec<Option<&ShardInfo>> = parts.iter().map(|p| p.shard.as_ref()).collect();
    if infos.iter().all(Option::is_none) {
        return Ok(merge(parts)?);
    }
    if let Some(part) = infos.iter().position(Option::is_none) {
        return Err(ShardMergeError::NotAShard { part });
    }
    let infos: Vec<&ShardInfo> = infos.into_iter().flatten().collect();
    let first = infos[0];
    let mut seen: Vec<(u32, usize)> = Vec::new();
    for (part, info) in infos.iter().enumerate() {
        if info.count != first.count {
            return Err(ShardMergeError::Count {
                part,
                index: info.index,
                count: info.count,
                first_count: first.count,
            });
        }
        let what = if info.start_at != first.start_at {
            Some("start time (--start-at)")
        } else if info.plan_id != first.plan_id {
            Some("plan (URL, request, load or timing)")
        } else {
            None
        };
        if let Some(what) = what {
            return Err(ShardMergeError::OtherRun {
                part,
                index: info.index,
                what,
            });
        }
        if let Some((_, earlier)) = seen.iter().find(|(i, _)| *i == info.index) {
            return Err(ShardMergeError::Duplicate {
                index: info.index,
                first: *earlier,
                again: part,
            });
        }
        seen.push((info.index, part));
    }

    // In shard order, each aligned to the earliest start by whole intervals, its verdicts and
    // warnings marked as its own.
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&i| infos[i].index);
    let earliest = infos
        .iter()
        .map(|i| i.started_unix_s)
        .fold(f64::INFINITY, f64::min);
    let latest = infos
        .iter()
        .map(|i| i.started_unix_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let aligned: Vec<RunResult> = order
        .iter()
        .map(|&i| aligned_part(&parts[i], earliest))
        .collect();
    let mut merged = merge(&aligned)?;
    merged.load.plan = first.whole_plan.clone();
    merged.started_at = order
        .iter()
        .map(|&i| &parts[i])
        .min_by(|a, b| {
            let (a, b) = (a.shard.as_ref(), b.shard.as_ref());
            let key = |s: Option<&ShardInfo>| s.map_or(f64::INFINITY, |s| s.started_unix_s);
            key(a).total_cmp(&key(b))
        })
        .map_or_else(|| merged.started_at.clone(), |p| p.started_at.clone());

    let reported: Vec<u32> = order.iter().map(|&i| infos[i].index).collect();
    let missing: Vec<u32> = (1..=first.count)
        .filter(|i| !reported.contains(i))
        .collect();
    let failed: Vec<u32> = order
        .iter()
        .filter(|&&i| {
            let m = &parts[i].measured.requests;
            parts[i].interrupted || m.nothing_succeeded()
        })
        .map(|&i| infos[i].index)
        .collect();
    let spread = (latest - earliest).max(0.0);
    let max_clock_error_s = infos
        .iter()
        .filter_map(|i| i.clock_error_s)
        .reduce(f64::max);
    let mut notes = Vec::new();
    if !missing.is_empty() {
        notes.push(format!(
            "{} of {} shards reported: {} missing; the merged figures hold only the others' \
             share of the load",
            reported.len(),
            first.count,
            name_shards(&missing)
        ));
    }
    if !failed.is_empty() {
        notes.push(format!(
            "{} failed (interrupted, or no request succeeded); its figures are merged as they are",
            name_shards(&failed)
        ));
    }
    if spread > START_SPREAD_BOUND_S {
        notes.push(format!(
            "the shards started {:.1} ms apart (bound {:.0} ms){}: for that long the target saw \
             only part of the load",
            spread * 1e3,
            START_SPREAD_BOUND_S * 1e3,
            if first.start_at.is_none() {
                "; start them together with --start-at"
            } else {
                ""
            }
        ));
    }
    // A shard whose command arrived after the start time began at once, late.
    let late: Vec<(u32, f64)> = order
        .iter()
        .filter_map(|&i| {
            let late = infos[i].started_unix_s - infos[i].start_at_unix_s?;
            (late > START_SPREAD_BOUND_S).then_some((infos[i].index, late))
        })
        .collect();
    if !late.is_empty() {
        let worst = late.iter().map(|l| l.1).fold(0.0, f64::max);
        let who: Vec<u32> = late.iter().map(|l| l.0).collect();
        notes.push(format!(
            "{} started after --start-at (up to {:.1} ms late): the command reached it too \
             late; choose a start time further ahead",
            name_shards(&who),
            worst * 1e3
        ));
    }
    let unsynced: Vec<u32> = order
        .iter()
        .filter(|&&i| infos[i].clock_synced == Some(false))
        .map(|&i| infos[i].index)
        .collect();
    if !unsynced.is_empty() && first.count > 1 {
        notes.push(format!(
            "the clock of {} was not synchronised (NTP/chrony): a common start time and the \
             start spread are only as good as the clocks",
            name_shards(&unsynced)
        ));
    }
    merged.warnings.splice(0..0, notes);
    merged.shards = Some(ShardsSummary {
        count: first.count,
        reported,
        missing,
        failed,
        start_spread_s: spread,
        start_spread_bound_s: START_SPREAD_BOUND_S,
        max_clock_error_s,
    });
    Ok(merged)
}

/// "shard 2", "shards 2 and 4", "shards 1, 2 and 4".
fn name_shards(list: &[u32]) -> String {
    let names: Vec<String> = list.iter().map(u32::to_string).collect();
    match names.as_slice() {
        [one] => format!("shard {one}"),
        [init @ .., last] => format!("shards {} and {last}", init.join(", ")),
        [] => "no shard".into(),
    }
}

/// A shard's result shifted onto the earliest shard's timeline (by whole intervals), with
/// its verdicts and warnings marked as its own.
fn aligned_part(part: &RunResult, earliest_unix_s: f64) -> RunResult {
    let mut p = part.clone();
    let info = part.shard.as_ref().expect("checked: every part is a shard");
    let interval = p.load.interval_s.max(1e-3);
    let shift = ((info.started_unix_s - earliest_unix_s) / interval).round() * interval;
    if shift > 0.0 {
        for iv in &mut p.timeline {
            iv.start_s += shift;
        }
    }
    let tag = format!("shard {}/{}: ", info.index, info.count);
    for line in p.verdicts.iter_mut().chain(p.warnings.iter_mut()) {
        line.insert_str(0, &tag);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::name_shards;

    #[test]
    fn shards_are_named_in_words() {
        assert_eq!(name_shards(&[2]), "shard 2");
        assert_eq!(name_shards(&[2, 4]), "shards 2 and 4");
        assert_eq!(name_shards(&[1, 2, 4]), "shards 1, 2 and 4");
    }
}
