//! Seeded synthetic trials: the verdicts must behave as the method promises on data whose
//! truth is known (no shift, a large shift, too few runs, a negligible shift).

use crate::common;

use common::SplitMix64;
use loadlab_compare::{compare, compare_many, Better, Options, Verdict};

fn is_significant(v: &Verdict) -> bool {
    matches!(v, Verdict::Better { .. } | Verdict::Worse { .. })
}

/// Same distribution in both arms: the false-alarm rate of the exact 5 v 5 test at 95% is
/// 8/252 ≈ 3.2%, so at most 6 of 100 trials may come out significant.
#[test]
fn identical_arms_are_rarely_significant() {
    let opts = Options::default();
    let mut significant = 0;
    for seed in 0..100 {
        let mut rng = SplitMix64::new(seed);
        let control = rng.runs(5, 1000.0, 0.05);
        let test = rng.runs(5, 1000.0, 0.05);
        let c = compare(&control, &test, Better::Higher, &opts).unwrap();
        if is_significant(&c.verdict) {
            significant += 1;
        } else {
            assert!(
                matches!(c.verdict, Verdict::NoDifference | Verdict::Equivalent),
                "seed {seed}: {:?}",
                c.verdict
            );
        }
    }
    assert!(significant <= 6, "{significant} of 100 significant");
}

/// Test 20% slower with 2% noise: every trial finds it, with the right sign and size.
#[test]
fn large_shift_is_always_found() {
    let opts = Options::default();
    for seed in 1000..1020 {
        let mut rng = SplitMix64::new(seed);
        let control = rng.runs(5, 10.0, 0.02);
        let test = rng.runs(5, 12.0, 0.02);
        let c = compare(&control, &test, Better::Lower, &opts).unwrap();
        let Verdict::Worse { by } = c.verdict else {
            panic!("seed {seed}: {:?}", c.verdict);
        };
        assert!((by - 0.2).abs() < 0.05, "seed {seed}: by {by}");
        let (lo, hi) = c.ci.unwrap();
        assert!(lo > 1.0 && lo <= 1.0 + by && hi >= 1.0 + by);
        // Complete separation at 5 v 5.
        assert!((c.p_value.unwrap() - 2.0 / 252.0).abs() < 1e-15);
        // The same data read as throughput is an improvement.
        let c = compare(&control, &test, Better::Higher, &opts).unwrap();
        assert!(matches!(c.verdict, Verdict::Better { .. }));
    }
}

/// 3 runs per arm cannot reach p < 0.05 (the smallest p is 0.10), however large the shift.
#[test]
fn three_runs_per_arm_are_always_inconclusive() {
    let opts = Options::default();
    for seed in 0..50 {
        let mut rng = SplitMix64::new(seed);
        let shift = if seed % 2 == 0 { 1.0 } else { 1.5 };
        let control = rng.runs(3, 10.0, 0.02);
        let test = rng.runs(3, 10.0 * shift, 0.02);
        let c = compare(&control, &test, Better::Lower, &opts).unwrap();
        assert_eq!(
            c.verdict,
            Verdict::Inconclusive {
                runs_needed: Some(4)
            },
            "seed {seed}"
        );
        assert_eq!(c.ci, None);
        assert!((c.min_p - 0.1).abs() < 1e-15);
    }
}

/// 0.5% noise, no shift, 10 runs each: the 95% ratio interval is well inside ±3%.
#[test]
fn quiet_identical_arms_are_equivalent() {
    let opts = Options::default();
    let mut equivalent = 0;
    for seed in 500..520 {
        let mut rng = SplitMix64::new(seed);
        let control = rng.runs(10, 250.0, 0.005);
        let test = rng.runs(10, 250.0, 0.005);
        let c = compare(&control, &test, Better::Lower, &opts).unwrap();
        let (lo, hi) = c.ci.unwrap();
        assert!(lo > 0.97 && hi < 1.03, "seed {seed}: [{lo}, {hi}]");
        match c.verdict {
            Verdict::Equivalent => equivalent += 1,
            // A chance "significant" (about 4% of trials at 10 v 10) must be a tiny one.
            Verdict::Better { by } | Verdict::Worse { by } => assert!(by < 0.01),
            other => panic!("seed {seed}: {other:?}"),
        }
    }
    assert!(equivalent >= 18, "{equivalent} of 20 equivalent");
    let mut rng = SplitMix64::new(500);
    let (control, test) = (rng.runs(10, 250.0, 0.005), rng.runs(10, 250.0, 0.005));
    let c = compare(&control, &test, Better::Lower, &opts).unwrap();
    assert_eq!(c.verdict, Verdict::Equivalent);
}

/// Holm over three metrics raises the bar: at 4 v 4 the smallest p (2/70) times 3 is above
/// 0.05, so even completely separated metrics are inconclusive, needing 5 per arm; one metric
/// alone at 4 v 4 is significant.
#[test]
fn holm_family_size_changes_what_is_reachable() {
    let opts = Options::default();
    let mut rng = SplitMix64::new(7);
    let control: Vec<Vec<f64>> = (0..3).map(|_| rng.runs(4, 10.0, 0.01)).collect();
    let test: Vec<Vec<f64>> = (0..3).map(|_| rng.runs(4, 13.0, 0.01)).collect();
    let metrics: Vec<(&[f64], &[f64], Better)> = (0..3)
        .map(|i| (&control[i][..], &test[i][..], Better::Lower))
        .collect();
    let results: Vec<_> = compare_many(&metrics, &opts)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    for r in &results {
        assert!((r.p_value.unwrap() - 2.0 / 70.0).abs() < 1e-15);
        assert!((r.p_adjusted.unwrap() - 6.0 / 70.0).abs() < 1e-15);
        assert_eq!(r.family_size, 3);
        assert_eq!(
            r.verdict,
            Verdict::Inconclusive {
                runs_needed: Some(5)
            }
        );
    }
    let single = compare(&control[0], &test[0], Better::Lower, &opts).unwrap();
    assert!(matches!(single.verdict, Verdict::Worse { .. }));
}

/// Adjusted p-values from `compare_many` are the Holm adjustment of the raw ones, and verdicts
/// follow the adjusted values: a metric significant alone can lose significance in a family.
#[test]
fn compare_many_uses_adjusted_p_values() {
    let opts = Options::default();
    let mut rng = SplitMix64::new(42);
    // Metric 0: big shift (p = 2/252); 1 and 2: no shift.
    let arms: Vec<(Vec<f64>, Vec<f64>)> = vec![
        (rng.runs(5, 10.0, 0.02), rng.runs(5, 12.0, 0.02)),
        (rng.runs(5, 10.0, 0.05), rng.runs(5, 10.0, 0.05)),
        (rng.runs(5, 10.0, 0.05), rng.runs(5, 10.0, 0.05)),
    ];
    let metrics: Vec<(&[f64], &[f64], Better)> = arms
        .iter()
        .map(|(c, t)| (&c[..], &t[..], Better::Lower))
        .collect();
    let results: Vec<_> = compare_many(&metrics, &opts)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let raw: Vec<f64> = results.iter().map(|r| r.p_value.unwrap()).collect();
    let adjusted: Vec<f64> = results.iter().map(|r| r.p_adjusted.unwrap()).collect();
    assert_eq!(adjusted, loadlab_compare::holm(&raw));
    assert!((adjusted[0] - 6.0 / 252.0).abs() < 1e-15);
    assert!(matches!(results[0].verdict, Verdict::Worse { .. }));
    assert!(!is_significant(&results[1].verdict));
    assert!(!is_significant(&results[2].verdict));
}

/// With different run counts per metric the floor on a metric's adjusted p is its own
/// smallest p or Holm's first step over the family, whichever is larger: a 4 v 4 metric next
/// to a strongly significant 10 v 10 one can still be significant (adjusted p = 2/70).
#[test]
fn holm_floor_with_unequal_run_counts() {
    let opts = Options::default();
    let mut rng = SplitMix64::new(11);
    let (a10, b10) = (rng.runs(10, 10.0, 0.01), rng.runs(10, 13.0, 0.01));
    let (a4, b4) = (rng.runs(4, 10.0, 0.01), rng.runs(4, 13.0, 0.01));
    let results: Vec<_> = compare_many(
        &[(&a10, &b10, Better::Lower), (&a4, &b4, Better::Lower)],
        &opts,
    )
    .into_iter()
    .map(Result::unwrap)
    .collect();
    assert!((results[1].p_adjusted.unwrap() - 2.0 / 70.0).abs() < 1e-15);
    assert!((results[1].min_p - 2.0 / 70.0).abs() < 1e-15);
    assert!(matches!(results[1].verdict, Verdict::Worse { .. }));
    // The 10 v 10 metric's floor is Holm's first step: 2 · 2/C(20, 10).
    assert!((results[0].min_p - 4.0 / 184_756.0).abs() < 1e-18);
}
