//! The rule on tables: each row a case measured in namespaces (docs/path.md), or the edge of
//! a threshold.

use super::*;

/// A generator's evidence: goodput per interval in Mbit/s, round trip and minimum in ms,
/// median response time in ms.
fn e(goodput_mbit: &[f64], rtt_ms: f64, min_ms: f64, p50_ms: f64) -> Evidence {
    Evidence {
        generator: Some("g1".into()),
        goodput_per_s: goodput_mbit.iter().map(|m| m * 1e6 / 8.0).collect(),
        rtt_us: Some(rtt_ms * 1e3),
        min_rtt_us: Some(min_ms * 1e3),
        response_p50_us: Some(p50_ms * 1e3),
        ..Evidence::default()
    }
}

/// Over QUIC, with the server's CPU (cores, or share of its quota) when it was sampled.
fn quic(mut ev: Evidence, server_cpu: Option<f64>) -> Evidence {
    ev.quic = true;
    ev.server_cpu = server_cpu;
    ev
}

fn with_server(mut ev: Evidence, busy: f64, network: f64) -> Evidence {
    ev.sender_busy_share = Some(busy);
    ev.sender_network_limited_share = Some(network);
    ev
}

#[derive(Debug, PartialEq)]
enum Kind {
    Path,
    NotPath,
    Inconclusive,
}

fn kind(v: &PathVerdict) -> Kind {
    match v {
        PathVerdict::Path { .. } => Kind::Path,
        PathVerdict::NotPath { .. } => Kind::NotPath,
        PathVerdict::Inconclusive { .. } => Kind::Inconclusive,
    }
}

#[test]
fn the_rule_on_its_table() {
    let flat = [9.6, 9.5, 9.7, 9.6];
    let rows: Vec<(&str, Evidence, Kind)> = vec![
        // Measured: a 10 Mbit/s cap with a 100 ms buffer on the far side, 12 KB answers.
        ("capped downlink", e(&flat, 101.0, 0.01, 122.0), Kind::Path),
        // Measured: a serial server, 4 ms an answer, 64 connections, no cap.
        (
            "slow server, many connections",
            e(&[86.0, 85.0, 86.5], 16.0, 0.005, 72.0),
            Kind::NotPath,
        ),
        // Measured: one connection; its ACK rides on the answer, so the round trip is the
        // response time, but short.
        (
            "slow server, one connection",
            e(&[14.0, 14.1], 7.6, 0.005, 7.6),
            Kind::NotPath,
        ),
        // A busy event-loop server's delayed ACK at its 40 ms bound, answers at 300 ms.
        (
            "delayed ACKs at their bound",
            e(&[20.0, 20.0], 40.0, 0.05, 300.0),
            Kind::NotPath,
        ),
        // Delay but no cap: the minimum is the delay.
        (
            "40 ms of delay, no cap",
            e(&[50.0, 80.0, 65.0], 41.0, 40.0, 45.0),
            Kind::NotPath,
        ),
        // Large answers from a CPU-bound server over a wide path.
        (
            "large answers, wide path",
            e(&[800.0, 810.0], 1.2, 0.1, 90.0),
            Kind::NotPath,
        ),
        // Measured: an open loop at twice the cap; requests also wait for a connection.
        (
            "overloaded open loop, deep queue",
            e(&[9.3, 9.3, 9.5, 9.5], 124.0, 0.017, 1_300.0),
            Kind::Path,
        ),
        // An overloaded server, its delayed ACKs at their bound, answers at 1.3 s.
        (
            "overloaded server",
            e(&[9.3, 9.3, 9.5], 40.0, 0.017, 1_300.0),
            Kind::NotPath,
        ),
        // Measured: at twice the cap, drops cost timeouts; the busier intervals agree.
        (
            "overload with drops",
            e(&[9.5, 4.1, 9.4, 6.0], 123.0, 0.015, 484.0),
            Kind::Path,
        ),
        // A queue, but the goodput rose through the run: no ceiling, something else moved.
        (
            "queue, goodput rising",
            e(&[4.0, 6.0, 8.0, 10.0], 80.0, 0.01, 122.0),
            Kind::Inconclusive,
        ),
        // ... unless the queue is past any delayed ACK: drops left the goodput uneven.
        (
            "deep queue, goodput uneven",
            e(&[4.0, 9.5], 123.0, 0.01, 700.0),
            Kind::Path,
        ),
        // A queue past the bound that explains a third of the response time.
        (
            "queue, a third of the wait",
            e(&flat, 70.0, 0.1, 210.0),
            Kind::Inconclusive,
        ),
        // The middle band: 45 ms over the minimum is a delayed ACK's size.
        ("middle band", e(&flat, 45.0, 0.1, 60.0), Kind::Inconclusive),
        // ... which the server's sockets settle: busy and network-limited.
        (
            "middle band, server busy sending",
            with_server(e(&flat, 45.0, 0.1, 60.0), 0.95, 0.91),
            Kind::Path,
        ),
        // ... or idle: the evidence disagrees with a queue on the path.
        (
            "queue but the server's sockets idle",
            with_server(e(&flat, 101.0, 0.01, 122.0), 0.05, 0.9),
            Kind::Inconclusive,
        ),
        (
            "one interval only",
            e(&[9.6], 80.0, 0.01, 122.0),
            Kind::Inconclusive,
        ),
        // Over QUIC (HTTP/3), measured: quinn's round trip holds a queue on the path as
        // TCP's does; with the server's CPU sampled and idle, it is the path's.
        (
            "QUIC, capped downlink, server idle",
            quic(e(&[9.7, 9.7], 103.0, 1.57, 120.0), Some(0.04)),
            Kind::Path,
        ),
        // ... but it also holds a busy QUIC server's wait to read its packets (user space):
        // caddy on one CPU, 512 connections, no cap.
        (
            "QUIC, CPU-bound server, no cap",
            quic(
                e(&[285.1, 226.9, 233.2, 219.9], 142.0, 1.27, 212.0),
                Some(1.0),
            ),
            Kind::Inconclusive,
        ),
        // ... and one starved of its CPU by others (60% of a core): deeper than its answers
        // took, and uneven.
        (
            "QUIC, starved server, no cap",
            quic(e(&[79.0, 149.1, 255.4], 374.0, 0.25, 246.0), Some(0.6)),
            Kind::Inconclusive,
        ),
        (
            "QUIC, a queue deeper than the answers took",
            quic(e(&[9.7, 9.7], 300.0, 0.25, 246.0), Some(0.1)),
            Kind::Inconclusive,
        ),
        // Measured: an open loop at twice the cap; QUIC's goodput stayed flat.
        (
            "QUIC, overloaded open loop, deep queue",
            quic(e(&[9.6, 9.6, 9.6, 9.6], 114.0, 0.07, 1_922.0), Some(0.14)),
            Kind::Path,
        ),
        // ... so without the server's CPU the same round trip cannot blame the path.
        (
            "QUIC, capped downlink, server not sampled",
            quic(e(&[9.7, 9.7], 103.0, 1.57, 120.0), None),
            Kind::Inconclusive,
        ),
        // Measured: a serial server behind a QUIC proxy; the peer's ACK delay is taken out.
        (
            "QUIC, slow server",
            quic(e(&[24.4, 24.4, 24.4], 1.7, 0.06, 67.0), None),
            Kind::NotPath,
        ),
    ];
    let mut wrong = Vec::new();
    for (case, ev, want) in rows {
        let got = judge(&ev);
        if kind(&got) != want {
            wrong.push(format!("{case}: want {want:?}, got {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_round_trip_is_inconclusive_and_said_so() {
    let mut ev = e(&[9.6, 9.6], 101.0, 0.01, 122.0);
    ev.rtt_us = None;
    let v = judge(&ev);
    assert_eq!(kind(&v), Kind::Inconclusive);
    assert!(v.describe().contains("no round trip"), "{}", v.describe());
}

#[test]
fn a_path_verdict_names_the_generator_its_goodput_and_its_inflation() {
    let v = judge(&e(&[9.6, 9.6, 9.6], 101.5, 2.9, 120.0));
    assert_eq!(
        v.describe(),
        "the path to generator g1 carried 9.6 Mbit/s and no more, with its round trip \
         at 35x its minimum (102 ms against 2.90 ms): a queue on the path, not in the server"
    );
    let mut mine = e(&[9.6, 9.6], 101.0, 0.01, 122.0);
    mine.generator = None;
    assert!(judge(&mine)
        .describe()
        .starts_with("the path to this machine carried"));
}

#[test]
fn evidence_from_reports_reads_whole_measured_intervals_only() {
    let iv = |warmup: bool, received: f64, rtt: f64| PathInterval {
        warmup,
        duration_s: 1.0,
        received_per_s: received,
        rtt_us: Some(rtt),
        ..PathInterval::default()
    };
    // The run ended 40 ms into its last interval: one burst's rate, left out.
    let partial = PathInterval {
        duration_s: 0.04,
        ..iv(false, 9e6, 101_000.0)
    };
    let report = PathReport {
        side: "generator".into(),
        generator: Some("g2".into()),
        transport: "tcp".into(),
        min_rtt_us: Some(10.0),
        response_p50_us: Some(120_000.0),
        intervals: vec![
            iv(true, 1.0, 5.0),
            iv(false, 1.2e6, 100_000.0),
            iv(false, 1.2e6, 102_000.0),
            partial,
        ],
    };
    let server = PathReport {
        side: "server".into(),
        generator: None,
        intervals: vec![PathInterval {
            busy_share: Some(0.9),
            network_limited_share: Some(0.95),
            ..PathInterval::default()
        }],
        ..report.clone()
    };
    let ev = Evidence::of(&report, Some(&server));
    assert_eq!(ev.goodput_per_s, vec![1.2e6, 1.2e6]);
    // A capacity probe's 200 ms intervals: goodput judged per second, where the bucket's
    // jumps even out.
    let fifth = |received: f64| PathInterval {
        duration_s: 0.2,
        ..iv(false, received, 100_000.0)
    };
    let jumpy = PathReport {
        intervals: [2.0e6, 0.4e6, 1.4e6, 0.8e6, 1.4e6]
            .iter()
            .cycle()
            .take(10)
            .map(|&r| fifth(r))
            .collect(),
        ..report.clone()
    };
    let per_s = Evidence::of(&jumpy, None);
    assert_eq!(per_s.goodput_per_s.len(), 2);
    assert!(
        per_s.flat() && (per_s.goodput().unwrap() - 1.2e6).abs() < 1.0,
        "{per_s:?}"
    );
    assert_eq!(ev.rtt_us, Some(101_000.0));
    assert_eq!(ev.sender_busy_share, Some(0.9));
    assert!(judge(&ev).is_path());
}
