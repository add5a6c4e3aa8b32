//! From the kept runs to what the experiment concludes: each arm compared with its control,
//! and, with a load axis, each variant's latency-throughput curve. Prints nothing.

use loadlab_experiment::analysis::{self, ArmRuns};
use loadlab_experiment::{Experiment, Plan};
use loadlab_result::RunResult;

/// With a `rate` or `connections` axis, the latency-throughput curve of each variant (and
/// each combination of the other axes): one row per load, each arm's repetitions merged,
/// the knee marked, as `loadlab sweep` prints it.
pub(super) fn curves(
    experiment: &Experiment,
    plan: &Plan,
    by_arm: &[Vec<RunResult>],
) -> anyhow::Result<Vec<String>> {
    let is_load = |k: &str| k == "rate" || k == "connections";
    if !plan
        .arms
        .iter()
        .any(|a| a.axes.iter().any(|(k, _)| is_load(k)))
    {
        return Ok(Vec::new());
    }
    let criteria = loadlab_capacity::Criteria::new(Vec::new());
    // Arms grouped by variant and the other axes, in plan order.
    let mut groups: Vec<(String, Vec<(f64, RunResult)>)> = Vec::new();
    for (arm, runs) in plan.arms.iter().zip(by_arm) {
        if runs.is_empty() {
            continue;
        }
        let others: Vec<String> = arm
            .axes
            .iter()
            .filter(|(k, _)| !is_load(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let mut name = experiment.variants[arm.variant].name.clone();
        if !others.is_empty() {
            name = format!("{name}[{}]", others.join(","));
        }
        let load = arm
            .axes
            .iter()
            .find(|(k, _)| is_load(k))
            .and_then(|(_, v)| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        let merged = loadlab_result::merge_repetitions(runs).map_err(|e| anyhow::anyhow!("{e}"))?;
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, points)) => points.push((load, merged)),
            None => groups.push((name, vec![(load, merged)])),
        }
    }
    Ok(groups
        .into_iter()
        .map(|(name, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let records = points
                .iter()
                .enumerate()
                .map(|(i, (_, r))| loadlab_capacity::driver::record_of(i + 1, r, &criteria))
                .collect();
            let report = loadlab_capacity::driver::sweep_report(records, &criteria, 3.0, None);
            format!(
                "{name}: latency and throughput against load\n{}",
                report.text()
            )
        })
        .collect())
}

/// The arm that arm `arm` is compared against: the control variant's arm with the same axis
/// values; with one variant, the first arm. `None` for an arm that is its own control (it is
/// compared with nothing). The one place this rule lives: the plan's note on what the
/// repetitions can decide counts the same comparisons that `compare` makes.
pub(super) fn control_arm(experiment: &Experiment, plan: &Plan, arm: usize) -> Option<usize> {
    let control = if experiment.variants.len() == 1 {
        Some(0)
    } else {
        plan.control_of(arm, experiment.control)
    };
    control.filter(|c| *c != arm)
}

/// Each arm against its control (`control_arm`).
pub fn compare(
    experiment: &Experiment,
    plan: &Plan,
    by_arm: &[Vec<RunResult>],
) -> Vec<analysis::Comparison> {
    let mut pairs = Vec::new();
    for (i, arm) in plan.arms.iter().enumerate() {
        let Some(c) = control_arm(experiment, plan, i) else {
            continue;
        };
        if by_arm[c].is_empty() || by_arm[i].is_empty() {
            continue;
        }
        pairs.push((
            ArmRuns {
                label: format!("{}:{}", experiment.name, plan.arms[c].label),
                runs: &by_arm[c],
            },
            ArmRuns {
                label: format!("{}:{}", experiment.name, arm.label),
                runs: &by_arm[i],
            },
        ));
    }
    let opts = loadlab_compare::Options {
        equivalence_margin: experiment.margin,
        ..loadlab_compare::Options::default()
    };
    analysis::compare(&pairs, &opts)
}
