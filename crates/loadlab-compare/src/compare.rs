//! The API `loadlab compare A B` calls: turns the repeated runs of a control arm and a test arm
//! into a ratio, its interval, a (Holm-adjusted) p-value and a verdict, per metric.
//!
//! All metrics are compared as ratios test/control, so work is done on log values: the
//! Hodges-Lehmann shift of the logs, exponentiated, is the ratio, and its exact interval,
//! exponentiated, is the ratio's interval. A zero, negative or non-finite value has no log and
//! is rejected with [`CompareError`] rather than silently dropped or clamped: for a time or a
//! rate it means a broken run, and for a metric that is legitimately zero (an error rate) a
//! ratio is the wrong question, which the caller must answer another way.
//!
//! This module wires the statistics together; it does not render text (see `describe`) or
//! decide what counts as significant (see `verdict`).

use crate::arm::Arm;
use crate::hodges_lehmann::hodges_lehmann;
use crate::holm::holm;
use crate::mann_whitney::{mann_whitney, min_attainable_p, Method};
use crate::verdict::{decide, Evidence, Verdict};
use serde::Serialize;

/// Which direction of change is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Requests per second, bytes per second.
    Higher,
    /// Latency, errors, CPU.
    Lower,
}

/// How strict a comparison is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Options {
    /// Confidence level of the interval and of significance: significant means
    /// p < 1 - confidence. Must be in (0, 1).
    pub confidence: f64,
    /// Half-width of the equivalence band, as a fraction of the control: 0.03 calls arms
    /// equivalent when the whole ratio interval lies within [0.97, 1.03].
    pub equivalence_margin: f64,
    /// Coefficient of variation above which an arm is flagged noisy.
    pub noise_cv: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            confidence: 0.95,
            equivalence_margin: 0.03,
            noise_cv: 0.05,
        }
    }
}

/// Why a comparison could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompareError {
    #[error("the {arm} arm has no runs")]
    Empty { arm: &'static str },
    #[error("run {index} of the {arm} arm is {value}: comparisons are ratios of positive values")]
    NotPositive {
        arm: &'static str,
        index: usize,
        value: f64,
    },
    #[error("run {index} of the {arm} arm is {value}, not a finite number")]
    NotFinite {
        arm: &'static str,
        index: usize,
        value: f64,
    },
    #[error("option {name} = {value} is out of range: {expected}")]
    InvalidOption {
        name: &'static str,
        value: f64,
        expected: &'static str,
    },
}

/// One metric's comparison of test against control.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricComparison {
    pub control: Arm,
    pub test: Arm,
    /// test / control: the exponentiated Hodges-Lehmann shift of the log values.
    pub ratio: Option<f64>,
    /// Interval for `ratio` at [`Options::confidence`] (exact, distribution-free); `None` when
    /// these run counts cannot reach that confidence, or an arm has fewer than 2 runs.
    pub ci: Option<(f64, f64)>,
    /// Two-sided Mann-Whitney p-value; `None` with fewer than 2 runs in an arm.
    pub p_value: Option<f64>,
    /// `p_value` after Holm adjustment over the metrics compared together (equal to `p_value`
    /// for a single metric). Verdicts use this one.
    pub p_adjusted: Option<f64>,
    pub verdict: Verdict,
    /// How the numbers were computed, for the report's footnote.
    pub method: &'static str,
    /// The options' confidence and margin, and the Holm family size, kept so the comparison
    /// can be explained on its own.
    pub confidence: f64,
    pub equivalence_margin: f64,
    pub family_size: usize,
    /// A floor under `p_adjusted` that no data can go below: the larger of this metric's
    /// smallest possible p (complete separation, 2 / C(n+m, n)) and the family size times
    /// the family's smallest such p (Holm's first step). With the same run counts for every
    /// metric it is exactly size · 2 / C(n+m, n). Not below 1 - confidence: no data could be
    /// significant, and the verdict is `Inconclusive`.
    pub min_p: f64,
}

/// Compares one metric: `control` (arm A) against `test` (arm B), raw positive values, one per
/// run.
pub fn compare(
    control: &[f64],
    test: &[f64],
    better: Better,
    opts: &Options,
) -> Result<MetricComparison, CompareError> {
    check_options(opts)?;
    let analysis = analyse(control, test, opts)?;
    let family = Family {
        size: usize::from(analysis.p_value.is_some()),
        smallest_min_p: analysis.min_p,
    };
    let p = analysis.p_value;
    Ok(conclude(analysis, p, &family, better, opts))
}

/// Compares several metrics of the same two arms, Holm-adjusting their p-values together so
/// that "some metric changed" keeps the nominal false-alarm rate.
///
/// One result per metric, in order. A metric that cannot be compared (an empty arm, a zero or
/// negative value) gets its own error and does not stop the others; it is left out of the
/// Holm family, as are metrics with fewer than 2 runs in an arm (they are not tested). Invalid
/// options make every entry that error.
pub fn compare_many(
    metrics: &[(&[f64], &[f64], Better)],
    opts: &Options,
) -> Vec<Result<MetricComparison, CompareError>> {
    if let Err(error) = check_options(opts) {
        return metrics.iter().map(|_| Err(error.clone())).collect();
    }
    let analyses: Vec<Result<Analysis, CompareError>> = metrics
        .iter()
        .map(|(control, test, _)| analyse(control, test, opts))
        .collect();
    let tested: Vec<&Analysis> = analyses
        .iter()
        .filter_map(|a| a.as_ref().ok().filter(|a| a.p_value.is_some()))
        .collect();
    let family = Family {
        size: tested.len(),
        smallest_min_p: tested.iter().map(|a| a.min_p).fold(1.0, f64::min),
    };
    let raw: Vec<f64> = tested.iter().filter_map(|a| a.p_value).collect();
    let mut adjusted = holm(&raw).into_iter();
    analyses
        .into_iter()
        .zip(metrics)
        .map(|(analysis, &(_, _, better))| {
            let analysis = analysis?;
            let p_adjusted = analysis.p_value.and_then(|_| adjusted.next());
            Ok(conclude(analysis, p_adjusted, &family, better, opts))
        })
        .collect()
}

/// The Holm family a metric was adjusted in: its size, and the smallest p any member's run
/// counts allow (Holm's first step multiplies the family's smallest p by the size, and every
/// adjusted p is at least that).
struct Family {
    size: usize,
    smallest_min_p: f64,
}

/// Everything about one metric that does not depend on the other metrics.
struct Analysis {
    control: Arm,
    test: Arm,
    ratio: f64,
    ci: Option<(f64, f64)>,
    p_value: Option<f64>,
    /// The smallest p these run counts allow, before any adjustment.
    min_p: f64,
    method: &'static str,
}

fn analyse(control: &[f64], test: &[f64], opts: &Options) -> Result<Analysis, CompareError> {
    check_values("control", control)?;
    check_values("test", test)?;
    let log_control: Vec<f64> = control.iter().map(|v| v.ln()).collect();
    let log_test: Vec<f64> = test.iter().map(|v| v.ln()).collect();
    let shift = hodges_lehmann(&log_control, &log_test, opts.confidence);
    let tested = control.len() >= 2 && test.len() >= 2;
    // Ranks come from the raw values: ln is monotone, but two distinct neighbouring floats
    // can share a log, which would invent a tie.
    let test_result = tested.then(|| mann_whitney(control, test));
    Ok(Analysis {
        control: Arm::summarise(control, opts.noise_cv),
        test: Arm::summarise(test, opts.noise_cv),
        ratio: shift.estimate.exp(),
        ci: shift
            .interval
            .filter(|_| tested)
            .map(|(lo, hi)| (lo.exp(), hi.exp())),
        p_value: test_result.as_ref().map(|r| r.p_value),
        min_p: min_attainable_p(control.len(), test.len()),
        method: match test_result.map(|r| r.method) {
            None => "none: fewer than 2 runs in an arm",
            Some(Method::Exact) => {
                "exact Mann-Whitney U; Hodges-Lehmann ratio of logs with exact interval"
            }
            Some(Method::ExactTied) => concat!(
                "exact Mann-Whitney U over tied ranks; ",
                "Hodges-Lehmann ratio of logs with exact interval"
            ),
            Some(Method::Normal) => concat!(
                "Mann-Whitney U and Hodges-Lehmann interval by normal approximation ",
                "(tie and continuity corrected)"
            ),
        },
    })
}

fn conclude(
    a: Analysis,
    p_adjusted: Option<f64>,
    family: &Family,
    better: Better,
    opts: &Options,
) -> MetricComparison {
    // A lower bound on this metric's adjusted p: at least its own smallest p, and at least
    // Holm's first step. With equal run counts across metrics: size · 2 / C(n+m, n).
    let size = family.size.max(1);
    let min_p = a.min_p.max(size as f64 * family.smallest_min_p).min(1.0);
    let verdict = decide(
        &Evidence {
            n: a.control.n,
            m: a.test.n,
            p: p_adjusted,
            ratio: a.ratio,
            ratio_ci: a.ci,
            min_p,
            family: size,
        },
        better,
        opts,
    );
    MetricComparison {
        control: a.control,
        test: a.test,
        ratio: Some(a.ratio),
        ci: a.ci,
        p_value: a.p_value,
        p_adjusted,
        verdict,
        method: a.method,
        confidence: opts.confidence,
        equivalence_margin: opts.equivalence_margin,
        family_size: family.size,
        min_p,
    }
}

fn check_values(arm: &'static str, values: &[f64]) -> Result<(), CompareError> {
    if values.is_empty() {
        return Err(CompareError::Empty { arm });
    }
    for (index, &value) in values.iter().enumerate() {
        if !value.is_finite() {
            return Err(CompareError::NotFinite { arm, index, value });
        }
        if value <= 0.0 {
            return Err(CompareError::NotPositive { arm, index, value });
        }
    }
    Ok(())
}

fn check_options(opts: &Options) -> Result<(), CompareError> {
    let invalid = |name, value, expected| {
        Err(CompareError::InvalidOption {
            name,
            value,
            expected,
        })
    };
    if !(opts.confidence > 0.0 && opts.confidence < 1.0) {
        return invalid("confidence", opts.confidence, "between 0 and 1, e.g. 0.95");
    }
    if !(opts.equivalence_margin >= 0.0 && opts.equivalence_margin < 1.0) {
        return invalid(
            "equivalence_margin",
            opts.equivalence_margin,
            "a fraction in [0, 1), e.g. 0.03",
        );
    }
    if !(opts.noise_cv >= 0.0 && opts.noise_cv.is_finite()) {
        return invalid(
            "noise_cv",
            opts.noise_cv,
            "a non-negative fraction, e.g. 0.05",
        );
    }
    Ok(())
}
