//! WebSockets over HTTP/2 (RFC 8441, `--http2` with a ws:// or wss:// URL) against the
//! testkit's extended-CONNECT server: echoes completed equal the server's messages over h2c
//! and h2 over TLS; `-c` connections carry `--streams` WebSockets each, the server counting
//! both; a server's stream limit makes WebSockets wait, not fail; a server that does not
//! offer extended CONNECT, or refuses it, or resets the stream, is a named failure with its
//! fix or its status.

use loadlab_engine::ws::{WsMode, WsSpec};
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{TestCa, WsH2Behavior, WsH2Server};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::common;

fn ws_h2(url: String, mode: WsMode) -> RunSpec {
    RunSpec {
        url,
        threads: Some(2),
        http2: true,
        ws: WsSpec {
            mode,
            ..WsSpec::default()
        },
        ..RunSpec::default()
    }
}

fn run(spec: RunSpec) -> RunResult {
    common::run_within(spec, Duration::from_secs(20))
}

fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::SeqCst)
}

fn url(server: &WsH2Server, scheme: &str, host: &str) -> String {
    format!("{scheme}://{host}:{}/echo", server.addr().port())
}

#[test]
fn echo_over_h2c_completes_what_the_server_counts_on_shared_connections() {
    let server = WsH2Server::start(WsH2Behavior::default());
    let r = run(RunSpec {
        connections: Some(2),
        streams: 4,
        requests: Some(1_000),
        ..ws_h2(url(&server, "ws", "127.0.0.1"), WsMode::Echo)
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, 1_000);
    let c = server.counters();
    assert_eq!(get(&c.messages), 1_000);
    // 2 connections (one a thread) carrying 4 WebSockets each.
    assert_eq!((get(&c.connections), get(&c.upgraded)), (2, 8));
    assert_eq!(get(&c.max_streams_on_one_connection), 4);
    assert_eq!(m.connections_opened, 2);
    // Counted under the status the server answered the CONNECTs with, not HTTP/1.1's 101.
    let statuses: Vec<_> = m.status_codes.iter().collect();
    assert_eq!(statuses, [(&"200".to_string(), &1_000)]);
}

#[test]
fn echo_over_h2_agreed_by_alpn_goes_through_the_runs_tls_settings() {
    let ca = TestCa::new();
    let server = WsH2Server::start_tls(WsH2Behavior::default(), &ca);
    let r = run(RunSpec {
        connections: Some(1),
        streams: 3,
        requests: Some(300),
        threads: Some(1),
        tls: loadlab_engine::tls::TlsSpec {
            ca_pem: Some(ca.pem().into_bytes()),
            ..Default::default()
        },
        ..ws_h2(url(&server, "wss", "localhost"), WsMode::Echo)
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, 300);
    let c = server.counters();
    assert_eq!(get(&c.messages), 300);
    assert_eq!((get(&c.connections), get(&c.upgraded)), (1, 3));
    assert!(m.tls_handshake_us.is_some());
}

/// Held: `-c 2 --streams 5` holds 10 WebSockets over 2 TCP connections, each pinged, and
/// says goodbye to each at the end.
#[test]
fn held_websockets_share_two_connections() {
    let server = WsH2Server::start(WsH2Behavior::default());
    let r = run(RunSpec {
        connections: Some(2),
        streams: 5,
        duration: Some(Duration::from_millis(600)),
        ws: WsSpec {
            mode: WsMode::Hold,
            ping: Some(Duration::from_millis(100)),
            ..WsSpec::default()
        },
        ..ws_h2(url(&server, "ws", "127.0.0.1"), WsMode::Hold)
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    let c = server.counters();
    assert_eq!((get(&c.connections), get(&c.upgraded)), (2, 10));
    let w = r.websocket.as_ref().expect("a WebSocket section");
    assert_eq!(w.held_peak, 10);
    assert!(m.requests.completed >= 30, "{}", m.requests.completed);
    // Each pong answered a ping the server counted (one may be in flight at the end).
    assert!(get(&c.pings) >= m.requests.completed, "{}", get(&c.pings));
    assert_eq!(get(&c.closes), 10, "a goodbye from each");
    let pongs = m.requests.completed;
    assert_eq!(
        m.status_codes.get("200"),
        Some(&pongs),
        "{:?}",
        m.status_codes
    );
    assert_eq!(m.status_codes.get("101"), None);
}

/// A server allowing 2 streams a connection, asked for 4: two WebSockets on each
/// connection wait for a stream (none fails), and the note says why and what to change.
#[test]
fn a_servers_stream_limit_makes_websockets_wait_not_fail() {
    let server = WsH2Server::start(WsH2Behavior {
        max_concurrent_streams: Some(2),
        ..WsH2Behavior::default()
    });
    let r = run(RunSpec {
        connections: Some(1),
        streams: 4,
        threads: Some(1),
        requests: Some(200),
        ..ws_h2(url(&server, "ws", "127.0.0.1"), WsMode::Echo)
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, 200);
    // Beyond its limit the server would have refused a stream (REFUSED_STREAM): a failure.
    assert_eq!(get(&server.counters().connections), 1);
    let note = r.notes.iter().find(|n| n.contains("over HTTP/2"));
    let note = note.unwrap_or_else(|| panic!("{:?}", r.notes));
    assert!(note.contains("allows 2 streams"), "{note}");
    assert!(note.contains("; 2 WebSockets waited"), "{note}");
    assert!(note.contains("-c"), "{note}");
}

fn three(server: &WsH2Server) -> RunResult {
    run(RunSpec {
        connections: Some(1),
        threads: Some(1),
        requests: Some(3),
        timeout: Duration::from_secs(2),
        connect_timeout: Duration::from_millis(500),
        ..ws_h2(url(server, "ws", "127.0.0.1"), WsMode::Echo)
    })
}

#[test]
fn a_server_without_extended_connect_is_refused_with_the_fix() {
    let server = WsH2Server::start(WsH2Behavior {
        connect_protocol: false,
        ..WsH2Behavior::default()
    });
    let r = three(&server);
    let m = &r.measured;
    assert_eq!(m.requests.completed, 0);
    assert_eq!(m.errors.get("ws_refused"), Some(&3), "{:?}", m.errors);
    let detail = &m.error_details["ws_refused"];
    assert!(
        detail.contains("does not offer WebSockets over HTTP/2") && detail.contains("drop --http2"),
        "{detail}"
    );
    assert_eq!(get(&server.counters().upgraded), 0);
}

#[test]
fn a_refused_connect_is_classed_by_its_status() {
    let server = WsH2Server::start(WsH2Behavior {
        refuse: Some(403),
        ..WsH2Behavior::default()
    });
    let r = three(&server);
    let m = &r.measured;
    assert_eq!(m.errors.get("ws_refused"), Some(&3), "{:?}", m.errors);
    assert!(
        m.error_details["ws_refused"].contains("HTTP 403"),
        "{:?}",
        m.error_details
    );
    assert_eq!(m.status_codes.get("403"), Some(&3));
    assert_eq!(get(&server.counters().refused), 3);
    // The refusals were streams of one connection, not a connection each.
    assert_eq!(get(&server.counters().connections), 1);
}

/// RST_STREAM on a WebSocket's stream is the server's reset of it, `stream_reset` as for an
/// HTTP/2 request, and the next WebSocket opens on the same connection.
#[test]
fn a_reset_stream_fails_as_stream_reset() {
    let server = WsH2Server::start(WsH2Behavior {
        reset_at_first: true,
        ..WsH2Behavior::default()
    });
    let r = three(&server);
    let m = &r.measured;
    assert_eq!(m.requests.completed, 0);
    assert_eq!(m.errors.get("stream_reset"), Some(&3), "{:?}", m.errors);
    let detail = &m.error_details["stream_reset"];
    assert!(detail.contains("HTTP/2 stream"), "{detail}");
    let c = server.counters();
    assert_eq!((get(&c.connections), get(&c.upgraded)), (1, 3));
}

/// A connection the server ends (GOAWAY INTERNAL_ERROR, then its close) fails the WebSocket
/// on it, by the class h2 gives the stream (the connection's reset here), and the next
/// WebSocket opens on a new connection rather than on the dead one.
#[test]
fn a_connection_gone_away_fails_its_websocket_and_the_next_opens_a_new_one() {
    let server = WsH2Server::start(WsH2Behavior {
        go_away_at_first: true,
        ..WsH2Behavior::default()
    });
    let r = three(&server);
    let m = &r.measured;
    assert_eq!((m.requests.completed, m.requests.failed), (0, 3));
    let gone = ["goaway", "connection_reset"];
    let failed: u64 = gone.iter().filter_map(|c| m.errors.get(*c)).sum();
    assert_eq!(failed, 3, "{:?} {:?}", m.errors, m.error_details);
    let c = server.counters();
    assert_eq!((get(&c.connections), get(&c.upgraded)), (3, 3));
    assert_eq!(m.connections_opened, 3);
}

/// `--ws-mode connect` over HTTP/2 is a storm of streams: each exchange a CONNECT and a
/// goodbye, on a connection that stays open.
#[test]
fn a_connect_storm_is_a_storm_of_streams_on_one_connection() {
    let server = WsH2Server::start(WsH2Behavior::default());
    let r = run(RunSpec {
        connections: Some(1),
        streams: 2,
        threads: Some(1),
        requests: Some(50),
        ..ws_h2(url(&server, "ws", "127.0.0.1"), WsMode::Connect)
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, 50);
    let c = server.counters();
    assert_eq!((get(&c.connections), get(&c.upgraded)), (1, 50));
    assert_eq!(get(&c.closes), 50, "a goodbye from each");
    assert_eq!(m.status_codes.get("200"), Some(&50), "{:?}", m.status_codes);
}

/// Messages larger than HTTP/2's windows (65,535 bytes at first, each way): a write waits
/// for the window the server opens as it reads, a read releases what it took, so 200 KB
/// messages go and come back whole.
#[test]
fn messages_larger_than_the_flow_control_window_cross_whole() {
    let server = WsH2Server::start(WsH2Behavior::default());
    let r = run(RunSpec {
        connections: Some(1),
        streams: 2,
        threads: Some(1),
        requests: Some(6),
        ws: WsSpec {
            size: Some(200_000),
            binary: true,
            ..WsSpec::default()
        },
        ..ws_h2(url(&server, "ws", "127.0.0.1"), WsMode::Echo)
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, 6);
    assert_eq!(get(&server.counters().messages), 6);
    assert_eq!((m.bytes.sent, m.bytes.received), (6 * 200_000, 6 * 200_000));
}

/// permessage-deflate over HTTP/2 (RFC 8441 carries the offer on the CONNECT and the answer
/// on its 200): echoes go compressed both ways, the server's counts exact and its bytes on
/// the wire fewer than the messages'; a `-H Sec-WebSocket-Extensions` replaces the offer and
/// `--ws-no-deflate` makes none, as over HTTP/1.1.
#[test]
fn echo_over_h2c_deflated_when_agreed() {
    let deflating = WsH2Behavior {
        deflate: Some("permessage-deflate"),
        ..WsH2Behavior::default()
    };
    let echo = |server: &WsH2Server, ws: WsSpec, headers: Vec<String>| {
        run(RunSpec {
            connections: Some(1),
            streams: 2,
            threads: Some(1),
            requests: Some(200),
            headers,
            ws: WsSpec {
                size: Some(64),
                ..ws
            },
            ..ws_h2(url(server, "ws", "127.0.0.1"), WsMode::Echo)
        })
    };
    let server = WsH2Server::start(deflating);
    let r = echo(&server, WsSpec::default(), vec![]);
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, 200);
    let d = &server.counters().deflate;
    assert_eq!(
        (get(&d.messages), get(&d.compressed), get(&d.bad)),
        (200, 200, 0)
    );
    assert_eq!(get(&d.payload_bytes), 200 * 64);
    assert!(get(&d.wire_bytes) < 200 * 16, "{}", get(&d.wire_bytes));
    assert_eq!(
        d.offers.lock().unwrap().clone(),
        vec!["permessage-deflate"; 2]
    );
    let note = r.notes.iter().find(|n| n.contains("permessage-deflate"));
    let note = note.unwrap_or_else(|| panic!("{:?}", r.notes));
    assert!(note.contains("agreed on 2 of 2 connections"), "{note}");
    assert!(note.contains("200 compressed messages received"), "{note}");

    let own = "permessage-deflate; client_no_context_takeover";
    let server = WsH2Server::start(deflating);
    let r = echo(
        &server,
        WsSpec::default(),
        vec![format!("Sec-WebSocket-Extensions: {own}")],
    );
    assert_eq!(
        r.measured.requests.completed, 200,
        "{:?}",
        r.measured.errors
    );
    let d = &server.counters().deflate;
    assert_eq!(d.offers.lock().unwrap().clone(), vec![own; 2]);
    assert_eq!(get(&d.compressed), 200);

    let server = WsH2Server::start(deflating);
    let plain = WsSpec {
        no_deflate: true,
        ..WsSpec::default()
    };
    let r = echo(&server, plain, vec![]);
    assert_eq!(
        r.measured.requests.completed, 200,
        "{:?}",
        r.measured.errors
    );
    let d = &server.counters().deflate;
    assert_eq!((get(&d.messages), get(&d.compressed)), (200, 0));
    assert_eq!(d.offers.lock().unwrap().clone(), vec![""; 2]);
}
