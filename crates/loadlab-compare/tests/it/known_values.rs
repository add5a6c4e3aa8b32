//! Checks the exact test, the Hodges-Lehmann estimates and intervals, and the ratios `compare`
//! reports against reference answers computed independently in Python (scipy and brute-force
//! enumeration): see `fixtures/make_fixtures.py`, which wrote `fixtures/known_values.txt`.

use loadlab_compare::hodges_lehmann::interval_rank;
use loadlab_compare::mann_whitney::Method;
use loadlab_compare::{compare, hodges_lehmann, mann_whitney, Better, Options, Verdict};
use std::collections::HashMap;

const FIXTURES: &str = include_str!("../fixtures/known_values.txt");

/// One `case ... end` block: each line is a key followed by its values.
struct Case {
    name: String,
    fields: HashMap<String, Vec<String>>,
}

impl Case {
    fn numbers(&self, key: &str) -> Vec<f64> {
        self.fields[key]
            .iter()
            .map(|v| {
                v.parse()
                    .unwrap_or_else(|_| panic!("{}: bad {key}", self.name))
            })
            .collect()
    }

    fn number(&self, key: &str) -> f64 {
        self.numbers(key)[0]
    }

    /// `none` or a pair.
    fn interval(&self, key: &str) -> Option<(f64, f64)> {
        if self.fields[key] == ["none"] {
            None
        } else {
            let v = self.numbers(key);
            Some((v[0], v[1]))
        }
    }
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut current: Option<Case> = None;
    for line in FIXTURES
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let mut words = line.split_whitespace().map(str::to_string);
        let key = words.next().unwrap();
        let values: Vec<String> = words.collect();
        match key.as_str() {
            "case" => {
                current = Some(Case {
                    name: values[0].clone(),
                    fields: HashMap::new(),
                })
            }
            "end" => cases.push(current.take().expect("end without case")),
            _ => {
                current
                    .as_mut()
                    .expect("field outside a case")
                    .fields
                    .insert(key, values);
            }
        }
    }
    assert!(cases.len() >= 16, "fixture file truncated?");
    cases
}

fn assert_close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-12 * want.abs().max(1.0),
        "{what}: got {got}, want {want}"
    );
}

fn assert_interval(got: Option<(f64, f64)>, want: Option<(f64, f64)>, what: &str) {
    match (got, want) {
        (None, None) => {}
        (Some(g), Some(w)) => {
            assert_close(g.0, w.0, &format!("{what} lower"));
            assert_close(g.1, w.1, &format!("{what} upper"));
        }
        _ => panic!("{what}: got {got:?}, want {want:?}"),
    }
}

#[test]
fn fixtures_cover_the_required_shapes() {
    let names: Vec<String> = cases().into_iter().map(|c| c.name).collect();
    for required in [
        "3v3_same",
        "3v3_shift",
        "4v4_same",
        "4v4_shift",
        "5v5_same",
        "5v5_shift",
        "5v7_same",
        "5v7_shift",
        "10v10_same",
        "10v10_shift",
        "4v5_tied",
        "6v6_tied",
        "50v50_exact",
        "60v60_tied_normal",
    ] {
        assert!(names.iter().any(|n| n == required), "missing {required}");
    }
}

#[test]
fn mann_whitney_p_values_match_scipy_and_enumeration() {
    for case in cases() {
        let (control, test) = (case.numbers("control"), case.numbers("test"));
        let result = mann_whitney(&control, &test);
        assert_eq!(result.u, case.number("u"), "{}: U", case.name);
        assert_close(
            result.p_value,
            case.number("p"),
            &format!("{}: p", case.name),
        );
        let method = match case.fields["method"][0].as_str() {
            "exact" => Method::Exact,
            "exact_tied" => Method::ExactTied,
            "normal" => Method::Normal,
            other => panic!("unknown method {other}"),
        };
        assert_eq!(result.method, method, "{}", case.name);
    }
}

#[test]
fn hodges_lehmann_estimates_and_intervals_match() {
    for case in cases() {
        let (control, test) = (case.numbers("control"), case.numbers("test"));
        for (confidence, tag) in [(0.95, "95"), (0.90, "90")] {
            let what = format!("{} at {tag}%", case.name);
            let h = hodges_lehmann(&control, &test, confidence);
            assert_close(h.estimate, case.number("hl"), &format!("{what}: estimate"));
            assert_interval(
                h.interval,
                case.interval(&format!("ci{tag}")),
                &format!("{what}: interval"),
            );
            let k = case.number(&format!("k{tag}")) as usize;
            let rank = interval_rank(control.len(), test.len(), confidence);
            assert_eq!(rank.k.unwrap_or(0), k, "{what}: k");
            if let Some(coverage) = case.fields.get(&format!("coverage{tag}")) {
                let coverage: f64 = coverage[0].parse().unwrap();
                assert_close(h.coverage, coverage, &format!("{what}: coverage"));
                assert!(h.interval.is_none() || h.coverage >= confidence - 1e-12);
            }
        }
    }
}

#[test]
fn compare_reports_the_ratio_of_logs_and_its_interval() {
    for case in cases() {
        let (control, test) = (case.numbers("control"), case.numbers("test"));
        for (confidence, tag) in [(0.95, "95"), (0.90, "90")] {
            let opts = Options {
                confidence,
                ..Options::default()
            };
            let what = format!("{} at {tag}%", case.name);
            let c = compare(&control, &test, Better::Lower, &opts).unwrap();
            assert_close(
                c.ratio.unwrap(),
                case.number("ratio"),
                &format!("{what}: ratio"),
            );
            assert_interval(
                c.ci,
                case.interval(&format!("ratio_ci{tag}")),
                &format!("{what}: ratio interval"),
            );
            assert_close(c.p_value.unwrap(), case.number("p"), &format!("{what}: p"));
            assert_eq!(c.p_adjusted, c.p_value, "{what}: one metric, no adjustment");
        }
    }
}

/// The fixtures' shifted 5 v 5 and 10 v 10 cases separate completely or nearly so; their
/// verdicts follow from the reference numbers above.
#[test]
fn verdicts_on_fixture_cases() {
    let by_name: HashMap<String, Case> = cases().into_iter().map(|c| (c.name.clone(), c)).collect();
    let verdict = |name: &str, better| {
        let c = &by_name[name];
        compare(
            &c.numbers("control"),
            &c.numbers("test"),
            better,
            &Options::default(),
        )
        .unwrap()
        .verdict
    };
    // Test is ~15% higher: worse latency, better throughput.
    assert!(matches!(
        verdict("5v5_shift", Better::Lower),
        Verdict::Worse { .. }
    ));
    assert!(matches!(
        verdict("10v10_shift", Better::Higher),
        Verdict::Better { .. }
    ));
    assert_eq!(
        verdict("3v3_shift", Better::Lower),
        Verdict::Inconclusive {
            runs_needed: Some(4)
        }
    );
    assert_eq!(verdict("10v10_same", Better::Lower), Verdict::NoDifference);
}
