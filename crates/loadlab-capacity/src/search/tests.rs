//! Tests of [`super`], on tables: no network.

use super::*;

fn policy() -> Policy {
    Policy {
        start: 100.0,
        max_rate: 1_000_000.0,
        min_rate: 1.0,
        tolerance: 0.05,
        rounds: 3,
        unit: Unit::Rate,
    }
}

/// Runs the policy against a service whose capacity in each round is `capacity(round)`:
/// a probe passes when its rate is at most that. Returns the finding and the probes.
fn search(policy: &Policy, capacity: impl Fn(usize) -> f64) -> (Finding, Vec<Outcome>) {
    let mut history = Vec::new();
    loop {
        match next(policy, &history) {
            Step::Probe { rate, round } => {
                assert!(history.len() < 200, "the search does not end: {history:?}");
                let verdict = if rate <= capacity(round) {
                    Verdict::Pass
                } else {
                    Verdict::Fail
                };
                history.push(Outcome {
                    rate,
                    round,
                    verdict,
                });
            }
            Step::Done(f) => return (f, history),
        }
    }
}

#[test]
fn a_fixed_capacity_is_found_within_the_tolerance_in_few_probes() {
    // (true capacity, most probes allowed): doubling from 100 takes log2(C/100) probes,
    // bisection about log2(1/tolerance) more, and each repeat round about four.
    for (truth, most) in [
        (1_000.0, 20),
        (11_800.0, 23),
        (12_345.0, 23),
        (500.0, 18),
        (100.0, 15),
        (150.0, 16),
    ] {
        let (finding, probes) = search(&policy(), |_| truth);
        let Finding::Capacity {
            estimate,
            low,
            high,
            rounds,
            ..
        } = finding
        else {
            panic!("{truth}: {finding:?}");
        };
        assert_eq!(rounds.len(), 3);
        for r in [estimate, low, high] {
            assert!(r <= truth && r >= truth * 0.95, "{truth}: {r}");
        }
        assert!(probes.len() <= most, "{truth}: {} probes", probes.len());
    }
}

#[test]
fn the_search_doubles_then_bisects_then_repeats_near_the_boundary() {
    let (_, probes) = search(&policy(), |_| 1_000.0);
    let rates: Vec<f64> = probes.iter().map(|o| o.rate).collect();
    assert_eq!(&rates[..5], &[100.0, 200.0, 400.0, 800.0, 1_600.0]);
    // Bisection between 800 and 1,600.
    assert_eq!(rates[5], 1_200.0);
    assert_eq!(rates[6], 1_000.0);
    // The repeat rounds start at round 0's answer.
    let first_of_round_1 = probes.iter().find(|o| o.round == 1).unwrap();
    let round_0_answer = probes
        .iter()
        .filter(|o| o.round == 0 && o.verdict == Verdict::Pass)
        .map(|o| o.rate)
        .fold(0.0, f64::max);
    assert_eq!(first_of_round_1.rate, round_0_answer);
    assert!(probes.iter().all(|o| o.rate <= 1_600.0));
}

#[test]
fn a_noisy_boundary_is_reported_as_a_range() {
    let truths = [10_000.0, 11_000.0, 10_400.0];
    let (finding, _) = search(&policy(), |round| truths[round]);
    let Finding::Capacity {
        low,
        high,
        estimate,
        ..
    } = &finding
    else {
        panic!("{finding:?}")
    };
    assert!(*low <= 10_000.0 && *low >= 9_500.0, "{finding:?}");
    assert!(*high <= 11_000.0 && *high >= 10_450.0, "{finding:?}");
    assert!(*estimate <= 10_400.0 && *estimate >= 9_880.0, "{finding:?}");
    let text = finding.to_string();
    assert!(text.starts_with("capacity "), "{text}");
    assert!(text.contains(" over 3 repeats"), "{text}");
}

#[test]
fn a_failing_start_halves_and_the_edges_are_findings() {
    let (finding, probes) = search(&policy(), |_| 30.0);
    assert_eq!(probes[1].rate, 50.0);
    assert!(
        matches!(finding, Finding::Capacity { estimate, .. } if (28.5..=30.0).contains(&estimate))
    );
    let low = Policy {
        min_rate: 10.0,
        ..policy()
    };
    let (finding, _) = search(&low, |_| 3.0);
    assert_eq!(finding, Finding::Below { rate: 10.0 });
    let capped = Policy {
        max_rate: 5_000.0,
        ..policy()
    };
    let (finding, probes) = search(&capped, |_| 1e9);
    assert_eq!(finding, Finding::AtLeast { rate: 5_000.0 });
    assert_eq!(probes.last().unwrap().rate, 5_000.0);
}

#[test]
fn a_probe_where_loadlab_was_the_limit_runs_again_then_ends_the_search() {
    let mut history = vec![
        Outcome {
            rate: 100.0,
            round: 0,
            verdict: Verdict::Pass,
        },
        Outcome {
            rate: 200.0,
            round: 0,
            verdict: Verdict::Pass,
        },
        Outcome {
            rate: 400.0,
            round: 0,
            verdict: Verdict::GeneratorLimited,
        },
    ];
    assert_eq!(
        next(&policy(), &history),
        Step::Probe {
            rate: 400.0,
            round: 0
        }
    );
    // A hiccup: the second try passes and the search goes on.
    let mut hiccup = history.clone();
    hiccup.push(Outcome {
        rate: 400.0,
        round: 0,
        verdict: Verdict::Pass,
    });
    assert_eq!(
        next(&policy(), &hiccup),
        Step::Probe {
            rate: 800.0,
            round: 0
        }
    );
    history.push(Outcome {
        rate: 400.0,
        round: 0,
        verdict: Verdict::GeneratorLimited,
    });
    assert_eq!(
        next(&policy(), &history),
        Step::Done(Finding::GeneratorLimit {
            rate: 400.0,
            passed: Some(200.0)
        })
    );
}

#[test]
fn interrupted_probes_and_passes_above_a_failure_are_not_believed() {
    let history = [
        Outcome {
            rate: 100.0,
            round: 0,
            verdict: Verdict::Pass,
        },
        Outcome {
            rate: 200.0,
            round: 0,
            verdict: Verdict::Interrupted,
        },
    ];
    assert_eq!(
        next(&policy(), &history),
        Step::Probe {
            rate: 200.0,
            round: 0
        }
    );
    let history = [
        Outcome {
            rate: 800.0,
            round: 0,
            verdict: Verdict::Pass,
        },
        Outcome {
            rate: 1_600.0,
            round: 0,
            verdict: Verdict::Fail,
        },
        Outcome {
            rate: 1_200.0,
            round: 0,
            verdict: Verdict::Fail,
        },
        Outcome {
            rate: 1_400.0,
            round: 0,
            verdict: Verdict::Pass,
        },
    ];
    // 1,400 passed above the failure at 1,200: the bracket stays 800..1,200.
    assert_eq!(
        next(&policy(), &history),
        Step::Probe {
            rate: 1_000.0,
            round: 0
        }
    );
}

#[test]
fn a_marginal_miss_runs_again_and_counts_only_if_it_misses_again() {
    let o = |rate, verdict| Outcome {
        rate,
        round: 0,
        verdict,
    };
    let mut history = vec![o(100.0, Verdict::Pass), o(200.0, Verdict::Marginal)];
    assert_eq!(
        next(&policy(), &history),
        Step::Probe {
            rate: 200.0,
            round: 0
        }
    );
    // A stall of the machine: the repeat holds, and the search goes on upwards.
    let mut stall = history.clone();
    stall.push(o(200.0, Verdict::Pass));
    assert_eq!(
        next(&policy(), &stall),
        Step::Probe {
            rate: 400.0,
            round: 0
        }
    );
    // The service: missed twice, so 200 failed and the search bisects below it.
    history.push(o(200.0, Verdict::Marginal));
    assert_eq!(
        next(&policy(), &history),
        Step::Probe {
            rate: 150.0,
            round: 0
        }
    );
}

#[test]
fn a_stopped_search_reports_what_it_had() {
    let history = [
        Outcome {
            rate: 800.0,
            round: 0,
            verdict: Verdict::Pass,
        },
        Outcome {
            rate: 1_600.0,
            round: 0,
            verdict: Verdict::Fail,
        },
    ];
    let finding = stopped(&policy(), &history);
    assert_eq!(
        finding,
        Finding::Unfinished {
            passed: Some(800.0),
            failed: Some(1_600.0)
        }
    );
    assert!(finding
        .to_string()
        .contains("between 800/s (held) and 1,600/s (failed)"));
    let (_, probes) = search(&policy(), |_| 1_000.0);
    let round_1_ends = probes.iter().rposition(|o| o.round == 1).unwrap();
    let finding = stopped(&policy(), &probes[..=round_1_ends]);
    assert!(
        finding.to_string().ends_with("(2 of 3 rounds finished)"),
        "{finding}"
    );
}

#[test]
fn bad_policies_name_their_flag() {
    for (p, flag) in [
        (
            Policy {
                start: 0.0,
                ..policy()
            },
            "--start",
        ),
        (
            Policy {
                max_rate: 50.0,
                ..policy()
            },
            "--max-rate",
        ),
        (
            Policy {
                min_rate: 0.0,
                ..policy()
            },
            "--min-rate",
        ),
        (
            Policy {
                tolerance: 0.001,
                ..policy()
            },
            "--tolerance",
        ),
        (
            Policy {
                rounds: 0,
                ..policy()
            },
            "--repeats",
        ),
    ] {
        assert!(p.check().unwrap_err().starts_with(flag), "{flag}");
    }
    assert!(policy().check().is_ok());
}

#[test]
fn rates_read_as_people_write_them() {
    assert_eq!(rate(11_800.0), "11,800");
    assert_eq!(rate(1_234_567.4), "1,234,567");
    assert_eq!(rate(950.0), "950");
    assert_eq!(rate(12.5), "12.5");
    assert_eq!(rate(12.0), "12");
    assert_eq!(nice(11_796.875), 11_800.0);
    assert_eq!(nice(37.46), 37.5);
}

/// `--vary ws-held`: counts of held connections, whole, the bisection ending at adjacent
/// counts when the tolerance would allow less than one.
#[test]
fn held_connections_are_searched_in_whole_numbers() {
    let held = Policy {
        start: 4.0,
        max_rate: 10_000.0,
        tolerance: 0.05,
        rounds: 2,
        unit: Unit::Held,
        ..policy()
    };
    for truth in [1.0, 7.0, 13.0, 20.0, 37.0, 150.0] {
        let (finding, probes) = search(&held, |_| truth);
        for o in &probes {
            assert_eq!(o.rate, o.rate.round(), "{truth}: {probes:?}");
            assert!(o.rate >= 1.0, "{truth}: {probes:?}");
        }
        let Finding::Capacity { estimate, low, .. } = finding else {
            panic!("{truth}: {finding:?}");
        };
        // Small counts: exact (adjacent counts bracket it); larger: within the tolerance.
        assert!(
            low <= truth && low >= (truth * 0.95).floor(),
            "{truth}: {finding:?}"
        );
        if truth < 20.0 {
            assert_eq!(estimate, truth, "{truth}: {probes:?}");
        }
        assert!(probes.len() <= 30, "{truth}: {} probes", probes.len());
    }
    // Doubling from 4, then halving down from a failure at 4.
    let (_, probes) = search(&held, |_| 13.0);
    let counts: Vec<f64> = probes.iter().map(|o| o.rate).collect();
    assert_eq!(&counts[..4], &[4.0, 8.0, 16.0, 12.0]);
    let (_, probes) = search(&held, |_| 1.0);
    assert_eq!(probes[1].rate, 2.0);
    let (finding, _) = search(&held, |_| 0.0);
    assert_eq!(finding, Finding::Below { rate: 1.0 });
    assert_eq!(
        finding.text(Unit::Held),
        "capacity below 1 held: it failed even at the lowest count allowed (lower --min-rate)"
    );
    let (finding, _) = search(&held, |_| 1e9);
    assert!(
        finding
            .text(Unit::Held)
            .starts_with("capacity at least 10,000 held"),
        "{finding:?}"
    );
}
