//! Degenerate inputs: constant arms, single runs, empty arms, values with no logarithm, bad
//! options. None may panic; each gets a defined verdict or a clear error.

use loadlab_compare::{compare, compare_many, Better, CompareError, Options, Verdict};

#[test]
fn identical_constant_arms_are_equivalent() {
    let c = compare(
        &[100.0; 5],
        &[100.0; 5],
        Better::Higher,
        &Options::default(),
    )
    .unwrap();
    assert_eq!(c.p_value, Some(1.0));
    assert_eq!(c.ratio, Some(1.0));
    assert_eq!(c.ci, Some((1.0, 1.0)));
    assert_eq!(c.verdict, Verdict::Equivalent);
    assert_eq!(c.control.cv, 0.0);
    assert!(!c.control.noisy);
}

/// With 3 runs no interval at 95% exists, so constant arms cannot be shown equivalent.
#[test]
fn identical_constant_arms_with_three_runs_are_inconclusive() {
    let c = compare(&[7.0; 3], &[7.0; 3], Better::Lower, &Options::default()).unwrap();
    assert_eq!(c.p_value, Some(1.0));
    assert_eq!(
        c.verdict,
        Verdict::Inconclusive {
            runs_needed: Some(4)
        }
    );
}

/// Two different constants: complete separation with ties inside each arm. The exact tied
/// distribution has the same extremes (1 split in 252 at each end), so p = 2/252.
#[test]
fn different_constant_arms_are_significant() {
    let c = compare(&[10.0; 5], &[12.0; 5], Better::Lower, &Options::default()).unwrap();
    assert!((c.p_value.unwrap() - 2.0 / 252.0).abs() < 1e-15);
    let (lo, hi) = c.ci.unwrap();
    assert!((lo - 1.2).abs() < 1e-12 && (hi - 1.2).abs() < 1e-12);
    let Verdict::Worse { by } = c.verdict else {
        panic!("{:?}", c.verdict);
    };
    assert!((by - 0.2).abs() < 1e-12);
}

#[test]
fn single_run_is_inconclusive_but_reports_the_ratio() {
    let c = compare(&[10.0], &[11.0], Better::Lower, &Options::default()).unwrap();
    assert_eq!(
        c.verdict,
        Verdict::Inconclusive {
            runs_needed: Some(4)
        }
    );
    assert!((c.ratio.unwrap() - 1.1).abs() < 1e-12);
    assert_eq!((c.p_value, c.p_adjusted, c.ci), (None, None, None));
    assert_eq!(c.min_p, 1.0);
    assert_eq!(c.method, "none: fewer than 2 runs in an arm");

    // One arm with plenty of runs does not help the other.
    let c = compare(&[10.0], &[11.0; 8], Better::Lower, &Options::default()).unwrap();
    assert!(matches!(c.verdict, Verdict::Inconclusive { .. }));
}

/// Untested metrics stay out of the Holm family.
#[test]
fn single_run_metric_is_left_out_of_the_family() {
    let one: &[f64] = &[10.0];
    let five_a: &[f64] = &[10.0, 10.1, 9.9, 10.2, 9.8];
    let five_b: &[f64] = &[12.0, 12.1, 11.9, 12.2, 11.8];
    let results = compare_many(
        &[(one, one, Better::Lower), (five_a, five_b, Better::Lower)],
        &Options::default(),
    );
    let results: Vec<_> = results.into_iter().map(Result::unwrap).collect();
    assert_eq!(results[0].p_adjusted, None);
    assert_eq!(results[1].family_size, 1);
    assert_eq!(results[1].p_adjusted, results[1].p_value);
    assert!(matches!(results[1].verdict, Verdict::Worse { .. }));
}

#[test]
fn empty_arm_is_an_error() {
    let opts = Options::default();
    assert_eq!(
        compare(&[], &[1.0, 2.0], Better::Lower, &opts),
        Err(CompareError::Empty { arm: "control" })
    );
    assert_eq!(
        compare(&[1.0, 2.0], &[], Better::Lower, &opts),
        Err(CompareError::Empty { arm: "test" })
    );
}

#[test]
fn values_without_a_logarithm_are_errors() {
    let opts = Options::default();
    let err = compare(&[1.0, 0.0, 2.0], &[1.0, 2.0], Better::Lower, &opts).unwrap_err();
    assert_eq!(
        err,
        CompareError::NotPositive {
            arm: "control",
            index: 1,
            value: 0.0
        }
    );
    assert_eq!(
        err.to_string(),
        "run 1 of the control arm is 0: comparisons are ratios of positive values"
    );
    assert!(matches!(
        compare(&[1.0, 2.0], &[1.0, -3.0], Better::Lower, &opts),
        Err(CompareError::NotPositive {
            arm: "test",
            index: 1,
            ..
        })
    ));
    assert!(matches!(
        compare(&[1.0, f64::NAN], &[1.0, 2.0], Better::Lower, &opts),
        Err(CompareError::NotFinite { index: 1, .. })
    ));
    assert!(matches!(
        compare(&[1.0, 2.0], &[f64::INFINITY, 2.0], Better::Lower, &opts),
        Err(CompareError::NotFinite { index: 0, .. })
    ));
}

/// A metric that cannot be compared gets its own error; the others are still compared, and
/// the Holm family is the metrics actually tested.
#[test]
fn compare_many_keeps_going_past_a_bad_metric() {
    let a: &[f64] = &[10.0, 10.1, 9.9, 10.2, 9.8];
    let b: &[f64] = &[12.0, 12.1, 11.9, 12.2, 11.8];
    let zeros: &[f64] = &[0.0, 0.0, 0.0, 0.0, 0.0];
    let results = compare_many(
        &[
            (a, b, Better::Lower),
            (zeros, zeros, Better::Lower),
            (a, b, Better::Higher),
        ],
        &Options::default(),
    );
    assert_eq!(
        results[1],
        Err(CompareError::NotPositive {
            arm: "control",
            index: 0,
            value: 0.0
        })
    );
    let (first, third) = (results[0].as_ref().unwrap(), results[2].as_ref().unwrap());
    assert_eq!(first.family_size, 2);
    assert!((first.p_adjusted.unwrap() - 4.0 / 252.0).abs() < 1e-15);
    assert!(matches!(first.verdict, Verdict::Worse { .. }));
    assert!(matches!(third.verdict, Verdict::Better { .. }));
    assert_eq!(compare_many(&[], &Options::default()), vec![]);
}

#[test]
fn bad_options_are_errors() {
    let values: &[f64] = &[1.0, 2.0];
    for opts in [
        Options {
            confidence: 1.0,
            ..Options::default()
        },
        Options {
            confidence: 0.0,
            ..Options::default()
        },
        Options {
            confidence: f64::NAN,
            ..Options::default()
        },
        Options {
            equivalence_margin: -0.1,
            ..Options::default()
        },
        Options {
            noise_cv: f64::INFINITY,
            ..Options::default()
        },
    ] {
        assert!(matches!(
            compare(values, values, Better::Lower, &opts),
            Err(CompareError::InvalidOption { .. })
        ));
        let all = compare_many(&[(values, values, Better::Lower); 2], &opts);
        assert!(all
            .iter()
            .all(|r| matches!(r, Err(CompareError::InvalidOption { .. }))));
    }
}

#[test]
fn noisy_flag_follows_the_coefficient_of_variation() {
    let quiet: &[f64] = &[100.0, 101.0, 99.0, 100.5, 99.5];
    let loud: &[f64] = &[100.0, 130.0, 80.0, 110.0, 90.0];
    let c = compare(quiet, loud, Better::Lower, &Options::default()).unwrap();
    assert!(!c.control.noisy && c.control.cv < 0.05);
    assert!(c.test.noisy && c.test.cv > 0.05);
    assert_eq!(
        (c.test.min, c.test.median, c.test.max),
        (80.0, 100.0, 130.0)
    );
}
