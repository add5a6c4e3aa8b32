//! The path rule in a table: the measured cases of issue 52 (one of three generators behind
//! a 10 Mbit/s cap, all three capped, a load beyond a path, no path at fault).

use super::*;

fn way(bits_per_s: f64) -> Transfer {
    // As the check measures: 8 MiB within 1.5 s when the path carries more than ~45 Mbit/s,
    // else what it carried in the 1.5 s.
    let complete = bits_per_s * 1.5 / 8.0 >= PATH_BYTES as f64;
    let elapsed_us = if complete {
        (PATH_BYTES as f64 * 8.0 / bits_per_s * 1e6) as u64
    } else {
        1_500_000
    };
    Transfer {
        bytes: (bits_per_s / 8.0 * elapsed_us as f64 / 1e6) as u64,
        elapsed_us,
        complete,
    }
}

fn path(name: &str, down_mbit: f64, up_mbit: f64) -> PathReading {
    PathReading {
        generator: name.into(),
        goodput: Ok(PathGoodput {
            down: way(down_mbit * 1e6),
            up: way(up_mbit * 1e6),
        }),
    }
}

/// 12 KB answers to 100-byte requests (the serial server).
fn load(rate: Option<f64>) -> Option<PathDemand> {
    Some(PathDemand {
        request_bytes: 100.0,
        answer_bytes: 12_400.0,
        rate_per_s: rate,
    })
}

fn named(findings: &[PathFinding]) -> Vec<&str> {
    findings
        .iter()
        .filter(|f| f.named.is_some())
        .map(|f| f.generator.as_str())
        .collect()
}

/// What a case is, the paths, the load, and the generators named.
type Case<'a> = (
    &'a str,
    &'a [PathReading],
    Option<PathDemand>,
    &'a [&'a str],
);

#[test]
fn the_rule_names_the_paths_that_would_set_the_figure() {
    let one_capped = [
        path("g1", 9.6, 900.0),
        path("g2", 900.0, 900.0),
        path("g3", 800.0, 900.0),
    ];
    let all_capped = [
        path("g1", 9.6, 900.0),
        path("g2", 9.5, 900.0),
        path("g3", 9.7, 900.0),
    ];
    let up_capped = [path("g1", 900.0, 9.6), path("g2", 900.0, 900.0)];
    #[rustfmt::skip]
    let cases: &[Case] = &[
        ("one of three capped, load unknown: named against the others", &one_capped, None, &["g1"]),
        ("one of three capped, 240/s planned: named", &one_capped, load(Some(240.0)), &["g1"]),
        ("all capped alike, 240/s planned: 80/s each is beyond 9.6 Mbit/s of 12 KB", &all_capped, load(Some(240.0)), &["g1", "g2", "g3"]),
        ("all capped alike, 60/s planned: 20/s each fits", &all_capped, load(Some(60.0)), &[]),
        ("all capped alike, no rate: equal paths, nothing to name", &all_capped, load(None), &[]),
        ("uplink capped: named by the way requests travel", &up_capped, None, &["g1"]),
        ("uncapped paths, one ten times slower (a busy CPU): nothing named", &[path("g1", 900.0, 900.0), path("g2", 90.0, 900.0), path("g3", 900.0, 900.0)], None, &[]),
        ("uncapped paths, 240/s planned: nothing named", &[path("g1", 900.0, 900.0), path("g2", 700.0, 900.0)], load(Some(240.0)), &[]),
        ("a lone generator with a roomy path", &[path("g1", 900.0, 900.0)], load(Some(240.0)), &[]),
    ];
    for (case, readings, demand, expected) in cases {
        let findings = judge(readings, *demand);
        assert_eq!(named(&findings), *expected, "{case}: {findings:#?}");
    }
}

#[test]
fn a_finding_says_what_the_path_carried_and_why_it_is_named() {
    let findings = judge(
        &[path("g1", 9.6, 900.0), path("g2", 900.0, 900.0)],
        load(Some(240.0)),
    );
    let g1 = &findings[0];
    assert_eq!(g1.ceiling_per_s.map(f64::round), Some(97.0));
    assert_eq!(g1.share_per_s, Some(120.0));
    let why = g1.named.as_deref().unwrap();
    assert!(
        why.contains("generator g1 carried 9.6 Mbit/s, 94x less"),
        "{why}"
    );
    assert_eq!(
        describe(g1),
        "path to generator g1: 9.6 Mbit/s from the server, 900.0 Mbit/s to it, at most 97 \
         requests/s of this load"
    );
}

#[test]
fn an_unchecked_path_is_named_with_its_reason() {
    let findings = judge(
        &[
            PathReading {
                generator: "g1".into(),
                goodput: Err("the agent at https://g1:7070 has no path check".into()),
            },
            path("g2", 900.0, 900.0),
        ],
        None,
    );
    assert_eq!(named(&findings), ["g1"]);
    assert!(findings[0]
        .named
        .as_deref()
        .unwrap()
        .contains("was not checked"));
}
