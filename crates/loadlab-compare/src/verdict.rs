//! What a comparison concludes: better, worse, no difference, equivalent, or inconclusive, and
//! how many runs would settle an inconclusive one.
//!
//! The rules live here and only here, so the CLI, reports and tests agree on them. This module
//! does not compute statistics or word its verdicts (see `describe`).

use crate::compare::{Better, Options};
use crate::mann_whitney::min_attainable_p;
use serde::Serialize;

/// The conclusion for one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly better; `by` is |ratio - 1| as a fraction (0.12 for 12%).
    Better { by: f64 },
    /// Significantly worse; `by` as for `Better`.
    Worse { by: f64 },
    /// Not significant, and the interval is too wide to call the arms equivalent ("~").
    NoDifference,
    /// Not significant, and the whole ratio interval lies within the equivalence margin.
    Equivalent,
    /// These run counts cannot reach the requested confidence whatever the data, or an arm has
    /// fewer than 2 runs. `runs_needed` is the smallest equal number of runs per arm that
    /// could; `None` if no practical number could.
    Inconclusive { runs_needed: Option<usize> },
}

/// What [`decide`] needs to know about one metric.
pub(crate) struct Evidence {
    /// Runs in the control and test arms.
    pub n: usize,
    pub m: usize,
    /// Holm-adjusted p-value, if the metric was tested.
    pub p: Option<f64>,
    /// Estimated ratio test/control.
    pub ratio: f64,
    pub ratio_ci: Option<(f64, f64)>,
    /// A lower bound on the adjusted p these run counts allow.
    pub min_p: f64,
    /// Size of the Holm family (at least 1).
    pub family: usize,
}

/// Applies the rules, in order:
///
/// 1. Fewer than 2 runs in an arm: `Inconclusive`.
/// 2. Adjusted p < 1 - confidence and the ratio interval excludes 1: `Better` or `Worse` by
///    the side of 1 the interval lies on, read through `better`. Requiring both guards
///    against the rare discordance between the test (which uses tied ranks) and the
///    interval (which does not).
/// 3. The whole interval within [1 - margin, 1 + margin]: `Equivalent`. The interval is the
///    reported one at the requested confidence, which is stricter than the (1 - 2α) interval
///    of a TOST equivalence test at level α.
/// 4. The smallest attainable adjusted p is not below 1 - confidence: `Inconclusive`.
/// 5. Otherwise `NoDifference`.
pub(crate) fn decide(e: &Evidence, better: Better, opts: &Options) -> Verdict {
    let alpha = 1.0 - opts.confidence;
    let inconclusive = Verdict::Inconclusive {
        runs_needed: runs_needed(alpha, e.family),
    };
    if e.n < 2 || e.m < 2 {
        return inconclusive;
    }
    if let Some((lo, hi)) = e.ratio_ci {
        let significant = e.p.is_some_and(|p| p < alpha);
        if significant && (hi < 1.0 || lo > 1.0) {
            let test_lower = hi < 1.0;
            let by = (e.ratio - 1.0).abs();
            return if test_lower == (better == Better::Lower) {
                Verdict::Better { by }
            } else {
                Verdict::Worse { by }
            };
        }
        let margin = opts.equivalence_margin;
        if lo >= 1.0 - margin && hi <= 1.0 + margin {
            return Verdict::Equivalent;
        }
    }
    if e.min_p >= alpha {
        return inconclusive;
    }
    Verdict::NoDifference
}

/// The smallest equal number of runs per arm whose smallest attainable p, times the Holm
/// family size (Holm's first step multiplies the smallest p by it), is below `alpha`.
/// For α = 0.05 and one metric: 4 (2/70 ≈ 0.029, where 3 per arm gives 0.10).
pub fn runs_needed(alpha: f64, family: usize) -> Option<usize> {
    if alpha.is_nan() || alpha <= 0.0 {
        return None;
    }
    // 2 / C(2n, n) falls roughly 4x per extra run, so any sensible α is met well before this.
    (2..=1000).find(|&n| family.max(1) as f64 * min_attainable_p(n, n) < alpha)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_needed_for_common_levels() {
        assert_eq!(runs_needed(0.05, 1), Some(4));
        // 5 v 5: 2/252 ≈ 0.0079 < 0.01; 4 v 4 is 0.029.
        assert_eq!(runs_needed(0.01, 1), Some(5));
        // 3 v 3 gives exactly 0.10, which is not below 0.10.
        assert_eq!(runs_needed(0.10, 1), Some(4));
        // Three metrics: 3 · 2/70 ≈ 0.086 fails, 3 · 2/252 ≈ 0.024 passes.
        assert_eq!(runs_needed(0.05, 3), Some(5));
        assert_eq!(runs_needed(0.0, 1), None);
    }

    fn evidence(p: f64, ratio: f64, ci: (f64, f64)) -> Evidence {
        Evidence {
            n: 5,
            m: 5,
            p: Some(p),
            ratio,
            ratio_ci: Some(ci),
            min_p: 2.0 / 252.0,
            family: 1,
        }
    }

    #[test]
    fn direction_follows_the_metric_sense() {
        let opts = Options::default();
        let slower = evidence(0.008, 1.2, (1.15, 1.25));
        let Verdict::Worse { by } = decide(&slower, Better::Lower, &opts) else {
            panic!("higher latency is worse");
        };
        assert!((by - 0.2).abs() < 1e-12);
        assert!(matches!(
            decide(&slower, Better::Higher, &opts),
            Verdict::Better { .. }
        ));
    }

    #[test]
    fn significance_needs_both_p_and_interval() {
        let opts = Options::default();
        // p small but interval touching 1 (can happen with ties): not significant.
        let e = evidence(0.03, 1.1, (1.0, 1.2));
        assert_eq!(decide(&e, Better::Lower, &opts), Verdict::NoDifference);
        let e = evidence(0.2, 1.005, (0.99, 1.02));
        assert_eq!(decide(&e, Better::Lower, &opts), Verdict::Equivalent);
    }
}
