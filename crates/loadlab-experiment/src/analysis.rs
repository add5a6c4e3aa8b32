//! Comparisons of arms: for each metric, each arm's runs (one value per run), the ratio
//! test/control with its exact interval and a verdict, Holm-adjusted across every metric and
//! every arm compared at once. Around the verdicts, what a careful reader must know: arms
//! whose runs disagree (noisy, with the likely cause when the results say one), and each
//! launch's start-up and cold start, reported apart so that a cold container cannot pose as
//! a slow framework. A percentile that sits on a cliff (a gap between a fast and a slow
//! mode, see `cliff_rows`) gets no verdict; the share of requests beyond the cliff is compared
//! in its place. Pure: results in, a [`Comparison`] out; rendering is elsewhere.

#[path = "cliff_rows.rs"]
pub mod cliff_rows;

use crate::metrics::{self, Family, Metric, Sense, METRICS};
use loadlab_compare::{Better, MetricComparison, Options, Verdict};
pub(crate) use loadlab_result::median;
use loadlab_result::RunResult;
use serde::Serialize;

/// One arm's runs, by label.
pub struct ArmRuns<'a> {
    pub label: String,
    pub runs: &'a [RunResult],
}

/// One metric of one comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub metric: &'static str,
    pub family: Family,
    pub label: &'static str,
    pub control_values: Vec<f64>,
    pub test_values: Vec<f64>,
    /// `None` when the metric could not be tested (missing, or zero in some run).
    pub comparison: Option<MetricComparison>,
    /// Why it was not tested, or a remark.
    pub note: Option<String>,
    /// The share-beyond-the-cliff row: the cliff it measures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cliff: Option<cliff_rows::CliffFinding>,
}

/// A test arm against its control.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub control: String,
    pub test: String,
    pub rows: Vec<Row>,
    /// Arms whose runs disagree, with the likely cause when the results name one.
    pub noise: Vec<String>,
    /// Each arm's start-up and cold starts, apart from the comparison.
    pub startup: Vec<StartupSummary>,
    /// The paths the fleet's check named before the runs (docs/path.md): a generator's path
    /// that would set these figures, not the server.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StartupSummary {
    pub arm: String,
    pub runs: usize,
    /// Median time from spawn to the first good health check, when loadlab launched it.
    pub ready_s_median: Option<f64>,
    pub ready_s_max: Option<f64>,
    /// Runs whose first requests were flagged a cold start.
    pub cold_starts: usize,
    /// Median p50 of the first requests against the rest's, over the runs (µs).
    pub first_p50_us_median: Option<f64>,
    pub rest_p50_us_median: Option<f64>,
}

fn values(runs: &[RunResult], key: &str) -> Vec<Option<f64>> {
    runs.iter().map(|r| metrics::value(r, key)).collect()
}

/// Compares every test arm with its control, all at once: each metric family is one Holm
/// family across every pair (see `metrics::Family`).
pub fn compare(pairs: &[(ArmRuns, ArmRuns)], opts: &Options) -> Vec<Comparison> {
    struct Pending {
        pair: usize,
        metric: &'static Metric,
        control: Vec<f64>,
        test: Vec<f64>,
        note: Option<String>,
        tested: bool,
        cliff: Option<cliff_rows::CliffFinding>,
    }
    let mut pending = Vec::new();
    for (i, (control, test)) in pairs.iter().enumerate() {
        let cliffs = cliff_rows::find(control.runs, test.runs);
        for metric in METRICS {
            let c = values(control.runs, metric.key);
            let t = values(test.runs, metric.key);
            let complete = |v: &[Option<f64>]| v.iter().all(Option::is_some) && !v.is_empty();
            let (cv, tv): (Vec<f64>, Vec<f64>) = (
                c.iter().flatten().copied().collect(),
                t.iter().flatten().copied().collect(),
            );
            if cv.is_empty() && tv.is_empty() {
                continue;
            }
            let mut note = None;
            let mut tested = complete(&c) && complete(&t);
            if !tested {
                note = Some("not in every run: not tested".to_string());
            } else if cv.iter().chain(&tv).any(|v| *v <= 0.0) {
                tested = false;
                note = Some(if cv.iter().chain(&tv).all(|v| *v == 0.0) {
                    "zero in every run".to_string()
                } else {
                    "zero in some runs: a ratio is not defined, compare the medians".to_string()
                });
            }
            // A percentile on a cliff: no verdict, and the share beyond it after the last
            // percentile on it.
            let on = cliffs.iter().find(|f| f.percentiles.contains(&metric.key));
            if let Some(f) = on {
                tested = false;
                note = Some(cliff_rows::percentile_note(f));
            }
            pending.push(Pending {
                pair: i,
                metric,
                control: cv,
                test: tv,
                note,
                tested,
                cliff: None,
            });
            for f in cliffs
                .iter()
                .filter(|f| f.percentiles.last() == Some(&metric.key))
            {
                let share = metrics::metric(metrics::CLIFF_SHARE).expect("in METRICS");
                let zero = f
                    .control_shares
                    .iter()
                    .chain(&f.test_shares)
                    .any(|v| *v <= 0.0);
                pending.push(Pending {
                    pair: i,
                    metric: share,
                    control: f.control_shares.clone(),
                    test: f.test_shares.clone(),
                    note: zero.then(|| {
                        "none beyond it in some runs: a ratio is not defined, compare the medians"
                            .to_string()
                    }),
                    tested: !zero,
                    cliff: Some(f.clone()),
                });
            }
        }
    }
    // One Holm family per metric family, across every pair (see `metrics::Family`).
    let mut results: Vec<Option<MetricComparison>> = vec![None; pending.len()];
    for family in [Family::Service, Family::Server, Family::Health] {
        let members: Vec<usize> = (0..pending.len())
            .filter(|&i| pending[i].tested && pending[i].metric.family == family)
            .collect();
        let input: Vec<(&[f64], &[f64], Better)> = members
            .iter()
            .map(|&i| {
                let p = &pending[i];
                (
                    p.control.as_slice(),
                    p.test.as_slice(),
                    match p.metric.sense {
                        Sense::HigherIsBetter => Better::Higher,
                        Sense::LowerIsBetter => Better::Lower,
                    },
                )
            })
            .collect();
        // Values were checked positive and finite above: the statistics cannot refuse them.
        let compared = loadlab_compare::compare_many(&input, opts);
        for (i, c) in members.into_iter().zip(compared) {
            results[i] = c.ok();
        }
    }
    let mut out: Vec<Comparison> = pairs
        .iter()
        .map(|(c, t)| Comparison {
            control: c.label.clone(),
            test: t.label.clone(),
            rows: Vec::new(),
            noise: Vec::new(),
            startup: vec![startup(c), startup(t)],
            paths: named_paths(&[c, t]),
        })
        .collect();
    for (p, comparison) in pending.into_iter().zip(results) {
        out[p.pair].rows.push(Row {
            metric: p.metric.key,
            family: p.metric.family,
            label: p.metric.label,
            control_values: p.control,
            test_values: p.test,
            comparison,
            note: p.note,
            cliff: p.cliff,
        });
    }
    // Noise as the statistics measured it (each arm's coefficient of variation against the
    // options' threshold), explained from the runs.
    for (c, (control, test)) in out.iter_mut().zip(pairs) {
        let mut lines = Vec::new();
        for (arm, is_control) in [(control, true), (test, false)] {
            for row in c
                .rows
                .iter()
                .filter(|r| r.metric == "rps" || r.metric == "p99")
            {
                let Some(m) = &row.comparison else { continue };
                let side = if is_control { &m.control } else { &m.test };
                if side.noisy {
                    lines.push(noise(arm, row.metric, side.cv));
                }
            }
        }
        c.noise = lines;
    }
    out
}

/// The paths the fleet's check named before these arms' runs, each once.
fn named_paths(arms: &[&ArmRuns]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let named = arms
        .iter()
        .flat_map(|a| a.runs.iter())
        .filter_map(|r| r.path_check.as_ref())
        .flat_map(|c| c.named());
    for why in named {
        if !out.iter().any(|o| o == why) {
            out.push(why.to_string());
        }
    }
    out
}

/// The verdict in words, for one row.
pub fn verdict_words(row: &Row) -> String {
    let metric = metrics::metric(row.metric).expect("rows hold known metrics");
    match &row.comparison {
        Some(c) => {
            let p = c
                .p_adjusted
                .map_or(String::new(), |p| format!(" (p={})", p_text(p)));
            match &c.verdict {
                Verdict::Better { .. } | Verdict::Worse { .. } | Verdict::NoDifference => {
                    c.verdict.describe(metric.better, metric.worse) + &p
                }
                _ => c.verdict.describe(metric.better, metric.worse),
            }
        }
        None => row.note.clone().unwrap_or_default(),
    }
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else if p < 0.01 {
        format!("{p:.4}")
    } else {
        format!("{p:.2}")
    }
}

/// Why verdicts were inconclusive, once per comparison rather than on every row.
pub fn inconclusive_note(c: &Comparison) -> Option<String> {
    c.rows
        .iter()
        .filter_map(|r| r.comparison.as_ref())
        .find(|m| matches!(m.verdict, Verdict::Inconclusive { .. }))
        .map(|m| m.describe("", ""))
}

/// Whether a verdict found a significant change.
pub fn significant(v: &Verdict) -> bool {
    matches!(v, Verdict::Better { .. } | Verdict::Worse { .. })
}

/// Says that an arm's runs disagree on `key` (coefficient of variation `cv`), with what the
/// results say about why.
fn noise(arm: &ArmRuns, key: &str, cv: f64) -> String {
    let count = |pred: &dyn Fn(&RunResult) -> bool| arm.runs.iter().filter(|r| pred(r)).count();
    let verdict =
        |text: &'static str| move |r: &RunResult| r.verdicts.iter().any(|v| v.contains(text));
    let mut causes = Vec::new();
    let steal = arm
        .runs
        .iter()
        .filter_map(|r| r.generator.max_steal)
        .fold(0.0, f64::max);
    if steal >= 0.05 {
        causes.push(format!("hypervisor steal up to {:.0}%", steal * 100.0));
    }
    let saturated = count(&verdict("generator was saturated"));
    if saturated > 0 {
        causes.push(format!("the generator was saturated in {saturated} runs"));
    }
    let late = count(&verdict("generator was late"));
    if late > 0 {
        causes.push(format!(
            "the generator was late in {late} runs (other tasks held its cores)"
        ));
    }
    let cold = count(&|r| r.first_requests.as_ref().is_some_and(|f| f.cold_start));
    if cold > 0 {
        causes.push(format!("a cold start in {cold} runs"));
    }
    let throttled = count(&verdict("CPU-bound on its quota"));
    if throttled > 0 {
        causes.push(format!(
            "CPU throttling under the quota in {throttled} runs"
        ));
    }
    format!(
        "{}: {key} varies {:.1}% between runs (CV){}",
        arm.label,
        cv * 100.0,
        if causes.is_empty() {
            String::new()
        } else {
            format!("; likely: {}", causes.join(", "))
        }
    )
}

fn startup(arm: &ArmRuns) -> StartupSummary {
    let ready: Vec<f64> = arm
        .runs
        .iter()
        .filter_map(|r| r.server.as_ref()?.startup.as_ref().map(|s| s.ready_s))
        .collect();
    let first: Vec<f64> = arm
        .runs
        .iter()
        .filter_map(|r| r.first_requests.as_ref().map(|f| f.latency_us.p50))
        .collect();
    let rest: Vec<f64> = arm
        .runs
        .iter()
        .filter_map(|r| r.first_requests.as_ref().map(|f| f.rest_us.p50))
        .collect();
    StartupSummary {
        arm: arm.label.clone(),
        runs: arm.runs.len(),
        ready_s_max: ready.iter().copied().reduce(f64::max),
        ready_s_median: median(&ready),
        cold_starts: arm
            .runs
            .iter()
            .filter(|r| r.first_requests.as_ref().is_some_and(|f| f.cold_start))
            .count(),
        first_p50_us_median: median(&first),
        rest_p50_us_median: median(&rest),
    }
}
