//! Holm-Bonferroni adjustment against hand-computed examples.

use loadlab_compare::holm;

fn assert_all_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-15, "got {got:?}, want {want:?}");
    }
}

/// p = [0.01, 0.04, 0.03, 0.005], k = 4. Sorted: 0.005, 0.01, 0.03, 0.04, scaled by 4, 3, 2, 1:
/// 0.02, 0.03, 0.06, 0.04; running maximum: 0.02, 0.03, 0.06, 0.06. Back in input order:
/// [0.03, 0.06, 0.06, 0.02].
#[test]
fn step_down_with_running_maximum() {
    assert_all_close(&holm(&[0.01, 0.04, 0.03, 0.005]), &[0.03, 0.06, 0.06, 0.02]);
}

/// [0.3, 0.5]: 2 · 0.3 = 0.6, then 1 · 0.5 = 0.5 raised to 0.6 by monotonicity.
#[test]
fn monotone() {
    assert_all_close(&holm(&[0.3, 0.5]), &[0.6, 0.6]);
}

/// [0.4, 0.6, 0.7]: 1.2 capped at 1, and everything after follows.
#[test]
fn capped_at_one() {
    assert_all_close(&holm(&[0.4, 0.6, 0.7]), &[1.0, 1.0, 1.0]);
}

/// Equal p-values: 3 · 0.01 for the first, 2 · 0.01 raised to 0.03, and so on.
#[test]
fn ties() {
    assert_all_close(&holm(&[0.01, 0.01, 0.01]), &[0.03, 0.03, 0.03]);
}

#[test]
fn one_value_is_unchanged() {
    assert_all_close(&holm(&[0.042]), &[0.042]);
}
