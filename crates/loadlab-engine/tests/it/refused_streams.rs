//! A server that refuses every stream unprocessed (HTTP/2's REFUSED_STREAM, HTTP/3's
//! H3_REQUEST_REJECTED), over h2c, h2 over TLS and HTTP/3: a closed loop sends each request
//! again, at most 5 times in all, then counts it failed with the reason, so a count-bounded
//! run ends with every request failed and the server's count equal to the sends loadlab
//! made; and one that goes away before any request on every connection: a slot's requests
//! are given up after five such connections in a row. Before, such runs went on for as long
//! as the server lived (their requests were sent again without end), plain runs and
//! scenarios alike.

use loadlab_engine::scenario::Scenario;
use loadlab_engine::tls::TlsSpec;
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{Seen, TestCa};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::common;
use crate::mux_server::{Handler, MuxServer, Reply};

/// Sends of one request before it counts as failed.
const SENDS: u64 = 5;

#[derive(Debug, Clone, Copy)]
enum Protocol {
    H2c,
    H2Tls,
    H3,
}

const PROTOCOLS: [Protocol; 3] = [Protocol::H2c, Protocol::H2Tls, Protocol::H3];

fn refusing(protocol: Protocol, ca: &TestCa) -> MuxServer {
    let handler: Arc<Handler> = Arc::new(|_: &Seen| Reply {
        refuse: true,
        ..Reply::default()
    });
    match protocol {
        Protocol::H2c => MuxServer::h2(handler, None),
        Protocol::H2Tls => MuxServer::h2(handler, Some(ca)),
        Protocol::H3 => MuxServer::h3(handler, ca),
    }
}

/// Connections, streams and the protocol's flags, for a run of `requests` against `server`.
fn spec(protocol: Protocol, ca: &TestCa, server: &MuxServer, requests: u64) -> RunSpec {
    let https = !matches!(protocol, Protocol::H2c);
    RunSpec {
        url: format!("{}/", server.url(https)),
        http2: !matches!(protocol, Protocol::H3),
        http3: matches!(protocol, Protocol::H3),
        tls: if https {
            TlsSpec {
                ca_pem: Some(ca.pem().into_bytes()),
                ..TlsSpec::default()
            }
        } else {
            TlsSpec::default()
        },
        connections: Some(2),
        streams: 3,
        threads: Some(1),
        requests: Some(requests),
        pm_qos: false,
        ..RunSpec::default()
    }
}

/// Every request failed after its sends, counted once, with the reason; the server saw
/// every send, on the connections opened at the start (a refused stream leaves its
/// connection as it was).
fn assert_all_refused(r: &RunResult, server: &MuxServer, requests: u64, connections: u64) {
    let m = &r.measured;
    let label = format!("{:?} {:?}", m.errors, m.error_details);
    assert_eq!(
        (m.requests.issued, m.requests.completed, m.requests.failed),
        (requests, 0, requests),
        "{label}"
    );
    assert_eq!(m.retried, requests * (SENDS - 1), "{label}");
    assert_eq!(server.counts.requests(), requests * SENDS, "{label}");
    assert_eq!(m.errors.get("stream_reset"), Some(&requests), "{label}");
    let why = m
        .error_details
        .get("stream_reset")
        .cloned()
        .unwrap_or_default();
    assert!(why.contains("5 times in a row"), "{why}");
    assert_eq!(server.counts.connections(), connections, "{label}");
}

#[test]
fn a_count_bounded_run_against_a_server_refusing_every_stream_ends() {
    for protocol in PROTOCOLS {
        let ca = TestCa::new();
        let server = refusing(protocol, &ca);
        let r = common::run_within(spec(protocol, &ca, &server, 20), Duration::from_secs(60));
        assert_all_refused(&r, &server, 20, 2);
    }
}

#[test]
fn a_scenario_against_a_server_refusing_every_stream_ends() {
    for protocol in PROTOCOLS {
        let ca = TestCa::new();
        let server = refusing(protocol, &ca);
        let https = !matches!(protocol, Protocol::H2c);
        let text = format!(
            "name = \"refused\"\n[[steps]]\nname = \"r\"\nurl = \"{}/r\"",
            server.url(https)
        );
        let scenario = Scenario::from_toml_str(&text, Path::new(".")).unwrap();
        let r = common::run_within(
            RunSpec {
                scenario: Some(Arc::new(scenario)),
                streams: RunSpec::default().streams,
                ..spec(protocol, &ca, &server, 12)
            },
            Duration::from_secs(60),
        );
        // A scenario's user holds one connection of its own (two users: two connections).
        assert_all_refused(&r, &server, 12, 2);
        let steps = r.scenario.as_ref().expect("a scenario's summary");
        let step = &steps.steps[0];
        assert_eq!((step.issued, step.failed), (12, 12), "{protocol:?}");
    }
}

/// A server that goes away on every connection before any request (HTTP/2 GOAWAY, NO_ERROR,
/// last stream id 0): the requests owed to a connection slot are given up once five of its
/// connections in a row answered nothing, so the count-bounded run ends, every request
/// failed once, none answered. Before, it reconnected for as long as the server lived.
#[test]
fn a_count_bounded_run_against_a_server_going_away_on_every_connection_ends() {
    let server = loadlab_testkit::H2Server::start(loadlab_testkit::H2Behavior {
        go_away_at_once: true,
        ..loadlab_testkit::H2Behavior::default()
    });
    let r = common::run_within(
        RunSpec {
            url: format!("http://{}/", server.addr()),
            http2: true,
            connections: Some(2),
            streams: 3,
            threads: Some(1),
            requests: Some(20),
            pm_qos: false,
            ..RunSpec::default()
        },
        Duration::from_secs(60),
    );
    let m = &r.measured;
    let label = format!("{:?} {:?}", m.errors, m.error_details);
    assert_eq!(
        (m.requests.issued, m.requests.completed, m.requests.failed),
        (20, 0, 20),
        "{label}"
    );
    // A stream that meets the connection after the server closed it (the GOAWAY read, then
    // the end of the stream of bytes) fails with the connection, as any request on a
    // connection that died; the others are the requests given up.
    let classes: u64 = m.errors.values().sum();
    assert_eq!(classes, 20, "{label}");
    assert!(
        m.errors
            .keys()
            .all(|class| class == "goaway" || class == "connection_reset"),
        "{label}"
    );
    if m.errors.contains_key("goaway") {
        let why = &m.error_details["goaway"];
        assert!(why.contains("5 connections in a row"), "{why}");
    }
    let counters = server.counters();
    assert_eq!(
        counters.requests.load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    assert!(
        counters
            .connections
            .load(std::sync::atomic::Ordering::SeqCst)
            >= 2 * 5
    );
}
