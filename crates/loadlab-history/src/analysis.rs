//! A metric's history: the median of each revision's runs with their spread, the change
//! points E-Divisive finds in those medians (on log values, within each environment, so a
//! new machine is never a change of the code), each change's size with an interval from the
//! runs on either side, and the verdict on the newest revision that the CI gate reads.
//!
//! Sizes and the newest revision's verdict use `loadlab-compare`'s exact Mann-Whitney test
//! and Hodges-Lehmann interval on the runs themselves (not the medians): the detector says
//! where, the runs say how much and how sure. This module must not read the store or print.

use crate::edivisive::{self, e_divisive};
use crate::metric::{Better, Metric, Scale};
use crate::series::Point;
use loadlab_compare::{hodges_lehmann, mann_whitney};
use loadlab_store::RunId;
use serde::Serialize;

/// How a history is judged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Options {
    pub detector: edivisive::Options,
    /// Of the intervals on change sizes.
    pub confidence: f64,
    /// Of the newest revision's verdict: its p-value must be below 1 - this, and its
    /// interval (at this confidence) clear of `min_change`.
    pub gate_confidence: f64,
    /// The smallest change the gate calls a regression: a ratio's distance from 1 (0.02 is
    /// 2%), for a difference (the error rate) `min_change_difference`.
    pub min_change: f64,
    pub min_change_difference: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            detector: edivisive::Options::default(),
            confidence: 0.95,
            gate_confidence: 0.99,
            min_change: 0.02,
            min_change_difference: 0.001,
        }
    }
}

/// How far (in robust standard deviations of the baseline revisions' medians) the newest
/// revision's median must lie from theirs for the gate to call it a change.
pub const REVISION_SCALES: f64 = 3.0;

/// One revision's runs on one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RevisionStat {
    pub revision: String,
    pub first_started_at: String,
    /// Index into [`History::environments`].
    pub environment: usize,
    /// Its runs' ids in the store (`loadlab runs show ID`).
    #[serde(serialize_with = "run_ids")]
    pub runs: Vec<RunId>,
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// A change's size: after against before.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Size {
    pub scale: Scale,
    /// After/before (a ratio) or after - before (a difference): the Hodges-Lehmann estimate.
    pub estimate: f64,
    /// At the confidence asked; `None` when the run counts cannot reach it.
    pub interval: Option<(f64, f64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Worse,
    Better,
}

/// A change point: the metric changes starting at `revision`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// Index into [`MetricHistory::revisions`].
    pub index: usize,
    pub revision: String,
    pub direction: Direction,
    pub size: Size,
    /// Mann-Whitney, the runs of the stretch before against the stretch after.
    pub p_value: f64,
    /// The detector's permutation p-value.
    pub detector_p: f64,
    pub runs_before: usize,
    pub runs_after: usize,
}

/// What the newest revision did, for the gate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum Newest {
    /// It starts a change for the worse.
    Regression { size: Size, p_value: f64 },
    /// It starts a change for the better.
    Improvement { size: Size, p_value: f64 },
    /// Within noise (or below the smallest change that counts).
    Unchanged { size: Size, p_value: f64 },
    /// The stretch from `since` to it differs from the revisions before: the change began
    /// at `since`, earlier than the newest revision (whose own gate named it).
    ContinuesEarlierChange {
        since: String,
        size: Size,
        p_value: f64,
    },
    /// Its environment has no earlier revision to compare with.
    NoBaseline,
    /// Too few runs to reach the gate's confidence.
    TooFewRuns { runs: usize, baseline_runs: usize },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewestCheck {
    pub revision: String,
    /// The first revision of the stretch it was compared with.
    pub baseline_from: Option<String>,
    pub baseline_revisions: usize,
    pub baseline_runs: usize,
    pub runs: usize,
    #[serde(flatten)]
    pub verdict: Newest,
}

/// One metric over revisions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricHistory {
    pub metric: Metric,
    pub better: Better,
    pub unit: &'static str,
    pub revisions: Vec<RevisionStat>,
    pub changes: Vec<Change>,
    /// Indices into `revisions` whose environment differs from the revision before.
    pub environment_changes: Vec<usize>,
    pub newest: Option<NewestCheck>,
}

/// A series' history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct History {
    pub series: String,
    /// Environment fingerprints, in the order first seen.
    pub environments: Vec<String>,
    pub metrics: Vec<MetricHistory>,
    pub runs_without_revision: usize,
    /// Older revisions left out (`--last`): the history holds the newest ones only.
    pub revisions_left_out: usize,
}

/// Builds the history of `points` (in order) on each of `metrics`.
pub fn analyse(
    series: &str,
    points: &[Point],
    runs_without_revision: usize,
    metrics: &[Metric],
    opts: &Options,
) -> History {
    analyse_with_progress(
        series,
        points,
        runs_without_revision,
        metrics,
        opts,
        &mut |_, _| {},
    )
}

/// [`analyse`], calling `progress(metric, k)` as it starts on the `k`th of `metrics`: a
/// long history takes seconds a metric, and a terminal can say how far it is.
pub fn analyse_with_progress(
    series: &str,
    points: &[Point],
    runs_without_revision: usize,
    metrics: &[Metric],
    opts: &Options,
    progress: &mut dyn FnMut(Metric, usize),
) -> History {
    let mut environments: Vec<String> = Vec::new();
    for p in points {
        if !environments.contains(&p.environment) {
            environments.push(p.environment.clone());
        }
    }
    let metrics = metrics
        .iter()
        .enumerate()
        .map(|(k, &m)| {
            progress(m, k);
            metric_history(m, points, &environments, opts)
        })
        .collect();
    History {
        series: series.to_string(),
        environments,
        metrics,
        runs_without_revision,
        revisions_left_out: 0,
    }
}

/// A revision's runs on the metric's analysis scale (logs for a ratio).
struct Column {
    stat: RevisionStat,
    transformed: Vec<f64>,
}

fn metric_history(
    metric: Metric,
    points: &[Point],
    environments: &[String],
    opts: &Options,
) -> MetricHistory {
    let columns: Vec<Column> = points
        .iter()
        .filter_map(|p| {
            let with: Vec<(RunId, f64)> = p
                .runs
                .iter()
                .filter_map(|(id, s)| metric.of(s).map(|v| (*id, v)))
                .collect();
            let mut raw: Vec<f64> = with.iter().map(|(_, v)| *v).collect();
            if raw.is_empty() {
                return None;
            }
            raw.sort_by(f64::total_cmp);
            Some(Column {
                stat: RevisionStat {
                    revision: p.revision.clone(),
                    first_started_at: p.first_started_at.clone(),
                    environment: environments
                        .iter()
                        .position(|e| e == &p.environment)
                        .expect("listed"),
                    runs: with.iter().map(|(id, _)| *id).collect(),
                    median: median(&raw),
                    min: raw[0],
                    max: raw[raw.len() - 1],
                },
                transformed: with.iter().map(|(_, v)| metric.transform(*v)).collect(),
            })
        })
        .collect();
    let environment_changes = (1..columns.len())
        .filter(|&i| columns[i].stat.environment != columns[i - 1].stat.environment)
        .collect();
    let mut changes = Vec::new();
    let mut newest = None;
    for env in 0..environments.len() {
        // This environment's revisions, as indices into `columns`: detected apart from the
        // others, so a move between machines is never a change point.
        let idx: Vec<usize> = (0..columns.len())
            .filter(|&i| columns[i].stat.environment == env)
            .collect();
        if idx.is_empty() {
            continue;
        }
        let medians: Vec<f64> = idx
            .iter()
            .map(|&i| median_of(&columns[i].transformed))
            .collect();
        let found = e_divisive(&medians, &opts.detector);
        let mut bounds: Vec<usize> = found.iter().map(|c| c.index).collect();
        bounds.insert(0, 0);
        bounds.push(idx.len());
        for (k, cp) in found.iter().enumerate() {
            let before = pooled(&columns, &idx[bounds[k]..cp.index]);
            let after = pooled(&columns, &idx[cp.index..bounds[k + 2]]);
            let (size, p_value) = measure(metric, &before, &after, opts.confidence);
            changes.push(Change {
                index: idx[cp.index],
                revision: columns[idx[cp.index]].stat.revision.clone(),
                direction: direction(metric, size.estimate),
                size,
                p_value,
                detector_p: cp.p_value,
                runs_before: before.len(),
                runs_after: after.len(),
            });
        }
        if idx.last() == Some(&(columns.len() - 1)) {
            // The stretch the newest revision is judged against ends at the change points
            // found without it: with it, a change in the last few revisions is placed up to
            // `min_size` revisions early (a split must leave that many on each side).
            let before = e_divisive(&medians[..medians.len() - 1], &opts.detector);
            let mut bounds: Vec<usize> = before.iter().map(|c| c.index).collect();
            bounds.insert(0, 0);
            newest = Some(newest_check(metric, &columns, &idx, &bounds, opts));
        }
    }
    changes.sort_by_key(|c| c.index);
    MetricHistory {
        metric,
        better: metric.better(),
        unit: metric.unit(),
        revisions: columns.into_iter().map(|c| c.stat).collect(),
        changes,
        environment_changes,
        newest,
    }
}

/// The newest revision (the last of `idx`) against the stretch since the last change point
/// before it (`bounds`: the starts of the stretches found without it); and the stretches
/// from each revision since to the newest, since a change that began earlier is not the
/// newest revision's doing.
fn newest_check(
    metric: Metric,
    columns: &[Column],
    idx: &[usize],
    bounds: &[usize],
    opts: &Options,
) -> NewestCheck {
    let last = idx.len() - 1;
    let start = bounds
        .iter()
        .copied()
        .filter(|&b| b < last)
        .max()
        .unwrap_or(0);
    let newest = &columns[idx[last]];
    let baseline = pooled(columns, &idx[start..last]);
    let mut check = NewestCheck {
        revision: newest.stat.revision.clone(),
        baseline_from: (start < last).then(|| columns[idx[start]].stat.revision.clone()),
        baseline_revisions: last - start,
        baseline_runs: baseline.len(),
        runs: newest.transformed.len(),
        verdict: Newest::NoBaseline,
    };
    if baseline.is_empty() {
        return check;
    }
    let judge = |before: &[f64], after: &[f64]| -> Option<(Size, f64, Option<Direction>)> {
        let (size, p) = measure(metric, before, after, opts.gate_confidence);
        let (lo, hi) = size.interval?;
        let band = match metric.scale() {
            Scale::Ratio => (1.0 - opts.min_change, 1.0 + opts.min_change),
            Scale::Difference => (-opts.min_change_difference, opts.min_change_difference),
        };
        let significant = p < 1.0 - opts.gate_confidence;
        let moved = if lo > band.1 {
            Some(direction(metric, lo))
        } else if hi < band.0 {
            Some(direction(metric, hi))
        } else {
            None
        };
        Some((size, p, moved.filter(|_| significant)))
    };
    let Some((size, p_value, moved)) = judge(&baseline, &newest.transformed) else {
        check.verdict = Newest::TooFewRuns {
            runs: check.runs,
            baseline_runs: check.baseline_runs,
        };
        return check;
    };
    // A revision's runs are taken back to back and share the machine's passing state (a
    // neighbour's build, a cache), so they vary less among themselves than revisions do: a
    // stretch judged changed must also stand out from the revisions before it, its median
    // revision beyond `REVISION_SCALES` robust standard deviations (1.4826·MAD) of their
    // medians, when there are enough of them to say (3 or more).
    let revision_median = |i: usize| median_of(&columns[i].transformed);
    let stands_out = |before: &[usize], after: &[usize]| {
        let medians: Vec<f64> = before.iter().map(|&i| revision_median(i)).collect();
        if medians.len() < 3 {
            return true;
        }
        let centre = median_of(&medians);
        let spread: Vec<f64> = medians.iter().map(|m| (m - centre).abs()).collect();
        let sigma = 1.4826 * median_of(&spread);
        let after: Vec<f64> = after.iter().map(|&i| revision_median(i)).collect();
        (median_of(&after) - centre).abs() > REVISION_SCALES * sigma
    };
    let moved = moved.filter(|_| stands_out(&idx[start..last], &idx[last..]));
    // A change may have begun a few revisions back, too recently for the detector (it
    // needs `min_size` revisions after it): the stretch from each revision since `start` to
    // the newest is judged against the revisions before it, and the change begins where
    // that split is surest (the smallest p: a split inside the change, or before it, mixes
    // changed and unchanged runs on one side and separates them less well). It is the
    // newest revision's doing only if that is the newest revision itself.
    // Cheapest first, and the same answer as `judge` then `stands_out`: the Mann-Whitney p
    // (O(runs)) and the revisions' spread before the Hodges-Lehmann interval, whose
    // pairwise differences number before × after and are needed only for a split that
    // is significant and stands out (few, where nothing changed).
    let surest = (start + 1..=last)
        .filter_map(|from| {
            let (before, after) = (
                pooled(columns, &idx[start..from]),
                pooled(columns, &idx[from..=last]),
            );
            let p = mann_whitney(&before, &after).p_value;
            if p >= 1.0 - opts.gate_confidence || !stands_out(&idx[start..from], &idx[from..=last])
            {
                return None;
            }
            let (size, p, m) = judge(&before, &after)?;
            m.map(|d| (from, size, p, d))
        })
        .min_by(|a, b| a.2.total_cmp(&b.2));
    check.verdict = match (moved, surest) {
        (_, Some((from, size, p_value, _))) if from < last => Newest::ContinuesEarlierChange {
            since: columns[idx[from]].stat.revision.clone(),
            size,
            p_value,
        },
        (Some(Direction::Worse), _) => Newest::Regression { size, p_value },
        (Some(Direction::Better), _) => Newest::Improvement { size, p_value },
        (None, _) => Newest::Unchanged { size, p_value },
    };
    check
}

/// The transformed runs of the revisions `which`.
fn pooled(columns: &[Column], which: &[usize]) -> Vec<f64> {
    which
        .iter()
        .flat_map(|&i| columns[i].transformed.iter().copied())
        .collect()
}

/// Hodges-Lehmann size (back on the metric's scale) and Mann-Whitney p of after against
/// before, both on the transformed values.
fn measure(metric: Metric, before: &[f64], after: &[f64], confidence: f64) -> (Size, f64) {
    let hl = hodges_lehmann(before, after, confidence);
    let back = |v: f64| match metric.scale() {
        Scale::Ratio => v.exp(),
        Scale::Difference => v,
    };
    let size = Size {
        scale: metric.scale(),
        estimate: back(hl.estimate),
        interval: hl.interval.map(|(lo, hi)| (back(lo), back(hi))),
    };
    (size, mann_whitney(before, after).p_value)
}

/// Whether a change whose estimate is `estimate` (a ratio above or below 1, a difference
/// above or below 0; only its side matters) is for the worse.
fn direction(metric: Metric, estimate: f64) -> Direction {
    let up = match metric.scale() {
        Scale::Ratio => estimate > 1.0,
        Scale::Difference => estimate > 0.0,
    };
    match (up, metric.better()) {
        (true, Better::Lower) | (false, Better::Higher) => Direction::Worse,
        _ => Direction::Better,
    }
}

fn run_ids<S: serde::Serializer>(ids: &[RunId], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ids.iter().map(|id| id.0))
}

fn median_of(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    median(&v)
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}
