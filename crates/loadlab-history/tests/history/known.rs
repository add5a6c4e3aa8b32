//! Series with known truth: where the change points are (or that there are none), how big
//! they are, and what the newest revision's verdict must be.

use crate::support::{history, same_env, steps};
use loadlab_history::analysis::{analyse, Options};
use loadlab_history::edivisive::{self, e_divisive};
use loadlab_history::{Direction, History, Metric, Newest};

/// Noise per run: 3% (a quiet CI machine's p99 varies this much between runs).
const SIGMA: f64 = 0.03;

fn p99(h: &History) -> &loadlab_history::MetricHistory {
    h.metrics.iter().find(|m| m.metric == Metric::P99).unwrap()
}

fn change_at(h: &History) -> Vec<usize> {
    p99(h).changes.iter().map(|c| c.index).collect()
}

/// A flat series over many seeds: the detector's false alarms (any change point at all)
/// are counted and must stay near its alpha (1% per series; bound 4% over 200 series), and
/// the newest revision is never called a regression.
#[test]
fn flat_noisy_series_rarely_find_a_change_and_never_gate() {
    let levels = steps(40, &[]);
    let (mut series_with_change, mut gate_fails) = (0, 0);
    let seeds = 200;
    for seed in 0..seeds {
        let points = history(&levels, 3, SIGMA, seed, &same_env);
        let h = analyse("flat", &points, 0, &[Metric::P99], &Options::default());
        if !p99(&h).changes.is_empty() {
            series_with_change += 1;
        }
        if matches!(
            p99(&h).newest.as_ref().unwrap().verdict,
            Newest::Regression { .. }
        ) {
            gate_fails += 1;
        }
    }
    println!("flat: {series_with_change} of {seeds} series with a false change point, {gate_fails} false gate failures");
    assert!(
        series_with_change <= seeds * 4 / 100,
        "{series_with_change} of {seeds}"
    );
    assert!(gate_fails <= 1, "{gate_fails} of {seeds}");
}

/// Single and multiple steps of known size at known revisions (table, six seeds each):
/// every one found, in its direction, at its revision (or, with a revision whose noise
/// happens to fall the step's way, one beside it: exact in at least 90%); a change point where there is none is
/// counted (each window is tested at 1%, so a few series in 30 may have one; bound 10%); the
/// sizes' 95% intervals hold the true ratio about 95% of the time (at least 85% counted
/// over every change: 5% of honest 95% intervals miss).
#[test]
fn steps_are_found_at_their_revisions_with_their_sizes() {
    struct Case {
        n: usize,
        steps: &'static [(usize, f64)],
    }
    let cases = [
        Case {
            n: 40,
            steps: &[(20, 1.10)],
        },
        Case {
            n: 60,
            steps: &[(45, 0.92)],
        },
        Case {
            n: 30,
            steps: &[(10, 1.25)],
        },
        // A regression, then its fix: a bump (the paper's search of the end κ finds it).
        Case {
            n: 60,
            steps: &[(20, 1.15), (40, 1.0 / 1.15)],
        },
        Case {
            n: 60,
            steps: &[(15, 1.10), (30, 1.10), (45, 1.10)],
        },
    ];
    let (mut covered, mut total, mut extra, mut series, mut exact) = (0, 0, 0, 0, 0);
    for (k, case) in cases.iter().enumerate() {
        for seed in 1..=6 {
            let points = history(
                &steps(case.n, case.steps),
                3,
                SIGMA,
                100 * k as u64 + seed,
                &same_env,
            );
            let h = analyse("steps", &points, 0, &[Metric::P99], &Options::default());
            let found = change_at(&h);
            series += 1;
            extra += usize::from(found.len() > case.steps.len());
            for &(at, factor) in case.steps {
                let c = p99(&h).changes.iter().find(|c| c.index.abs_diff(at) <= 1);
                let c = c.unwrap_or_else(|| panic!("case {k} seed {seed}: {at} not in {found:?}"));
                exact += usize::from(c.index == at);
                let (lo, hi) = c.size.interval.expect("an interval");
                total += 1;
                covered += usize::from(lo <= factor && factor <= hi);
                let want = if factor > 1.0 {
                    Direction::Worse
                } else {
                    Direction::Better
                };
                assert_eq!(c.direction, want);
            }
        }
    }
    println!(
        "steps: {exact} of {total} found at their revision exactly; {covered} of {total} \
         intervals hold the true size; {extra} of {series} series with a change point where \
         there is none"
    );
    assert!(exact * 10 >= total * 9, "{exact} of {total} exact");
    assert!(covered * 100 >= total * 85, "{covered} of {total}");
    assert!(extra * 10 <= series, "{extra} of {series}");
}

/// MongoDB's form (Y always ends at the window's end) misses a regression that is fixed
/// within the window; the paper's search of κ finds both edges.
#[test]
fn a_reverted_change_needs_the_search_of_its_end() {
    let mut values = vec![0.0; 10];
    values.extend([1.0; 10]);
    values.extend([0.0; 10]);
    let fixed_end = edivisive::Options {
        search_end: false,
        ..Default::default()
    };
    assert!(e_divisive(&values, &fixed_end).is_empty());
    let found: Vec<usize> = e_divisive(&values, &Default::default())
        .iter()
        .map(|c| c.index)
        .collect();
    assert_eq!(found, [10, 20]);
}

/// A slow drift (+0.5% a revision, 35% over 60): a real change, reported as changes for the
/// worse (never for the better); no single revision started it, so the gate never fails
/// beyond the first revisions a change point's stretch restarts at.
#[test]
fn a_slow_drift_is_reported_as_worse_and_never_better() {
    let levels: Vec<f64> = (0..60).map(|i| 1000.0 * 1.005f64.powi(i)).collect();
    let points = history(&levels, 3, SIGMA, 7, &same_env);
    let h = analyse("drift", &points, 0, &[Metric::P99], &Options::default());
    let m = p99(&h);
    assert!(!m.changes.is_empty(), "a 35% drift is a change");
    assert!(
        m.changes.iter().all(|c| c.direction == Direction::Worse),
        "{:?}",
        m.changes
    );
}

/// One wild run (5x) among a revision's three, and one wild revision of a single run (3x):
/// neither is a change point, nor a regression when it is the newest... unless it is
/// the newest revision's only runs, which the gate judges on its own runs.
#[test]
fn one_wild_run_is_not_a_change() {
    for seed in 0..20 {
        let mut points = history(&steps(40, &[]), 3, SIGMA, 500 + seed, &same_env);
        let (id, s) = &mut points[25].runs[1];
        let _ = id;
        s.latency_p99_us = s.latency_p99_us.map(|v| v * 5.0);
        let h = analyse("wild", &points, 0, &[Metric::P99], &Options::default());
        assert!(change_at(&h).is_empty(), "seed {seed}: {:?}", change_at(&h));

        let mut single = history(&steps(40, &[]), 1, SIGMA, 900 + seed, &same_env);
        let s = &mut single[17].runs[0].1;
        s.latency_p99_us = s.latency_p99_us.map(|v| v * 3.0);
        let h = analyse("wild", &single, 0, &[Metric::P99], &Options::default());
        assert!(
            change_at(&h).is_empty(),
            "seed {seed}, one run a revision: {:?}",
            change_at(&h)
        );
    }
}

/// The same code on a slower machine from revision 30 on: no change point (each environment
/// is judged apart), the move marked, and the first revision on the new machine has nothing
/// to be compared with rather than being a regression.
#[test]
fn a_new_machine_is_marked_not_reported_as_a_regression() {
    let levels: Vec<f64> = (0..60)
        .map(|i| if i < 30 { 1000.0 } else { 1300.0 })
        .collect();
    let env = |i: usize| {
        if i < 30 {
            "cpu A".to_string()
        } else {
            "cpu B".to_string()
        }
    };
    let points = history(&levels, 3, SIGMA, 11, &env);
    let h = analyse("machines", &points, 0, &[Metric::P99], &Options::default());
    assert!(change_at(&h).is_empty(), "{:?}", p99(&h).changes);
    assert_eq!(p99(&h).environment_changes, [30]);
    assert_eq!(h.environments, ["cpu A", "cpu B"]);
    let first_on_b = analyse(
        "machines",
        &points[..31],
        0,
        &[Metric::P99],
        &Options::default(),
    );
    assert_eq!(
        p99(&first_on_b).newest.as_ref().unwrap().verdict,
        Newest::NoBaseline
    );
    // Judged as one environment, the same data would be a 30% regression: the split is
    // what keeps it out.
    let one_env: Vec<_> = points
        .iter()
        .cloned()
        .map(|mut p| {
            p.environment = "cpu".into();
            p
        })
        .collect();
    let h = analyse("machines", &one_env, 0, &[Metric::P99], &Options::default());
    assert_eq!(change_at(&h), [30]);
}

/// Replayed as CI runs it (the history as it stood after each revision), a 20% step at
/// r25 of 40: the gate names r25 alone; right after it, before the detector can confirm the
/// change (it needs 3 revisions after), the newest revisions say the change began at r25.
#[test]
fn the_gate_names_the_revision_a_change_begins_at_and_no_later_one() {
    for seed in [31, 32, 33] {
        let points = history(&steps(40, &[(25, 1.20)]), 3, SIGMA, seed, &same_env);
        let mut regressions = Vec::new();
        for k in 1..points.len() {
            let h = analyse(
                "replay",
                &points[..=k],
                0,
                &[Metric::P99],
                &Options::default(),
            );
            let newest = p99(&h).newest.clone().unwrap();
            match newest.verdict {
                Newest::Regression { .. } => regressions.push(k),
                Newest::ContinuesEarlierChange { since, .. } if k < 28 => {
                    assert_eq!(since, "r025", "seed {seed}, k {k}")
                }
                _ => {}
            }
        }
        assert_eq!(regressions, [25], "seed {seed}");
    }
}

/// Revisions that vary more than their runs do (runs back to back share the machine's
/// passing state): a newest revision 6% off, within how revisions vary (3%), is unchanged
/// however tight its own runs (nor did a change begin at a revision that happened to be
/// high); 25% is a regression.
#[test]
fn the_newest_must_stand_out_from_how_revisions_vary() {
    let mut rng = crate::support::Rng(77);
    for (factor, regression) in [(1.06, false), (1.25, true)] {
        let mut levels: Vec<f64> = (0..30).map(|_| rng.around(1000.0, 0.03)).collect();
        levels.push(1000.0 * factor);
        let points = history(&levels, 5, 0.001, 78, &same_env);
        let h = analyse("tight", &points, 0, &[Metric::P99], &Options::default());
        let verdict = &p99(&h).newest.as_ref().unwrap().verdict;
        let want = if regression {
            matches!(verdict, Newest::Regression { .. })
        } else {
            matches!(verdict, Newest::Unchanged { .. })
        };
        assert!(want, "{factor}: {verdict:?}");
    }
}
