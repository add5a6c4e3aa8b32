//! `--streams` beyond what the server allows at once on a connection (issue 51, item 6): a
//! million asked of one connection made a million tasks up front (1.6-2.7 GB), each waiting
//! for the server's credit, and reported "0 of 0 issued". Streams now start as the server
//! lets them open, so the run carries what the server allows, and the result says how many
//! that was (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS, QUIC's stream limit).

use loadlab_engine::tls::TlsSpec;
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{H2Behavior, H2Server, H3Server, TestCa};
use std::time::Duration;

use crate::common;

/// The most --streams takes on one connection.
const HUGE: usize = 1_000_000;

fn run(spec: RunSpec) -> RunResult {
    common::run_within(
        RunSpec {
            connections: Some(1),
            threads: Some(1),
            streams: HUGE,
            duration: Some(Duration::from_millis(300)),
            pm_qos: false,
            ..spec
        },
        Duration::from_secs(60),
    )
}

fn carried_what_the_server_allowed(name: &str, r: &RunResult, allowed: &str) {
    let q = &r.measured.requests;
    assert!(q.completed > 0, "{name}: {q:?}");
    assert_eq!(q.failed, 0, "{name}: {:?}", r.measured.errors);
    let said = format!("--streams asked for {HUGE} concurrent streams on each connection; the server allowed at most {allowed}");
    assert!(
        r.warnings.iter().any(|w| w.starts_with(&said)),
        "{name}: {said}: {:?}",
        r.warnings
    );
}

#[test]
fn http2_streams_beyond_the_servers_limit_are_never_made() {
    let server = H2Server::start(H2Behavior {
        max_concurrent_streams: Some(8),
        ..H2Behavior::default()
    });
    let r = run(RunSpec {
        url: format!("http://{}/", server.addr()),
        http2: true,
        ..RunSpec::default()
    });
    carried_what_the_server_allowed("HTTP/2", &r, "8 at once");
}

#[test]
fn http3_streams_beyond_the_servers_limit_are_never_made() {
    let ca = TestCa::new();
    // quinn's default: 100 bidirectional streams at once.
    let server = H3Server::start(&ca);
    let r = run(RunSpec {
        url: server.url(),
        http3: true,
        tls: TlsSpec {
            ca_pem: Some(ca.pem().into_bytes()),
            ..TlsSpec::default()
        },
        ..RunSpec::default()
    });
    carried_what_the_server_allowed("HTTP/3", &r, "");
    let allowed = r.warnings.iter().find_map(|w| {
        let at = w.find("allowed at most ")? + "allowed at most ".len();
        w[at..].split(' ').next()?.parse::<usize>().ok()
    });
    assert!(
        allowed.is_some_and(|n| (90..=100).contains(&n)),
        "{:?}",
        r.warnings
    );
}
