//! WebSocket runs against the testkit's counting server: echoes completed equal the
//! server's messages (closed and open loop), pushes counted apart, held connections pinged,
//! handshake storms counted, and every hostile server a named failure class, fast, with no
//! panic and bounded memory. Interop with servers no one here wrote is the CLI's test
//! (`tests/it/websocket.rs`).

use loadlab_engine::ws::{WsMode, WsSpec};
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{Script, ScriptedServer, WsBehavior, WsCounters, WsServer};
use std::time::Duration;

use crate::common;

fn ws(url: String, mode: WsMode) -> RunSpec {
    RunSpec {
        url,
        threads: Some(2),
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

fn get(c: &std::sync::atomic::AtomicU64) -> u64 {
    WsCounters::get(c)
}

#[test]
fn echo_closed_loop_completes_exactly_what_the_server_counts() {
    let server = WsServer::start(WsBehavior::EchoAndPush { every: 10 });
    let r = run(RunSpec {
        connections: Some(4),
        requests: Some(2_000),
        ..ws(server.url("/echo"), WsMode::Echo)
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, 2_000);
    assert_eq!(get(&server.counters().messages), 2_000);
    assert_eq!(get(&server.counters().upgraded), 4);
    assert!(m.latency_us.is_some());
    // Every 10th message was preceded by a push: 200, none taken for an echo.
    assert_eq!(get(&server.counters().pushed), 200);
    let w = r.websocket.as_ref().expect("a WebSocket section");
    assert_eq!(
        (w.mode.as_str(), w.pushed, w.pushed_bytes),
        ("echo", 200, 1_200)
    );
}

/// Pushes on a cadence of the server's own: counted exactly, their rate over the run, and
/// the gaps between two on one connection (each connection's first has none).
#[test]
fn pushes_give_their_rate_and_the_gaps_between_them() {
    let every = Duration::from_millis(20);
    let server = WsServer::start(WsBehavior::Push { count: 10, every });
    let r = run(RunSpec {
        connections: Some(3),
        duration: Some(Duration::from_millis(700)),
        ..ws(server.url("/feed"), WsMode::Hold)
    });
    assert_eq!(r.measured.requests.failed, 0, "{:?}", r.measured.errors);
    assert_eq!(get(&server.counters().pushed), 30);
    let w = r.websocket.as_ref().expect("a WebSocket section");
    assert_eq!((w.pushed, w.pushed_bytes, w.held_peak), (30, 120, 3));
    assert!((w.pushed_per_s - 30.0 / w.over_s).abs() < 1e-6, "{w:?}");
    // Over the load's 700 ms, not the run's time with the goodbyes' grace after it.
    assert_eq!(w.over_s, 0.7, "{w:?}");
    let gaps = w.push_gap_us.as_ref().expect("gaps");
    assert_eq!(gaps.count, 27);
    // The server's timer sets the gaps: 20 ms apart, give or take its wake-ups.
    assert!((10_000.0..60_000.0).contains(&gaps.p50), "{gaps:?}");
    assert!(gaps.max >= gaps.p99 && gaps.p99 >= gaps.p50, "{gaps:?}");
    assert!(w.push_gap_histogram.is_some());
}

#[test]
fn wss_echo_goes_through_the_runs_tls_settings() {
    let ca = loadlab_testkit::TestCa::new();
    let server = WsServer::start_tls(WsBehavior::Echo, ca.server_config());
    let url = format!("wss://localhost:{}/", server.addr().port());
    let r = run(RunSpec {
        connections: Some(2),
        requests: Some(500),
        tls: loadlab_engine::tls::TlsSpec {
            ca_pem: Some(ca.pem().into_bytes()),
            ..Default::default()
        },
        ..ws(url.clone(), WsMode::Echo)
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, 500);
    assert_eq!(get(&server.counters().messages), 500);
    assert!(m.tls_handshake_us.is_some());
    // Without the CA, the certificate is refused as for any https run.
    let r = run(RunSpec {
        connections: Some(1),
        requests: Some(2),
        ..ws(url, WsMode::Echo)
    });
    assert_eq!(
        r.measured.errors.get("tls_certificate"),
        Some(&2),
        "{:?}",
        r.measured.errors
    );
}

#[test]
fn echo_binary_payload_from_the_body() {
    let server = WsServer::start(WsBehavior::Echo);
    let r = run(RunSpec {
        connections: Some(2),
        requests: Some(300),
        body: vec![0, 159, 146, 150, 255],
        ws: WsSpec {
            binary: true,
            ..WsSpec::default()
        },
        ..ws(server.url("/"), WsMode::Echo)
    });
    assert_eq!(
        r.measured.requests.completed, 300,
        "{:?}",
        r.measured.errors
    );
    assert_eq!(get(&server.counters().messages), 300);
}

#[test]
fn echo_open_loop_times_from_the_schedule_and_counts_what_the_server_saw() {
    let server = WsServer::start(WsBehavior::Echo);
    let r = run(RunSpec {
        rate: Some(400.0),
        duration: Some(Duration::from_millis(800)),
        max_connections: Some(20),
        ..ws(server.url("/"), WsMode::Echo)
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?}", m.error_details);
    assert!(m.requests.completed >= 300, "{}", m.requests.completed);
    let seen = get(&server.counters().messages);
    assert!(
        seen >= m.requests.completed && seen <= m.requests.completed + r.in_flight_at_end,
        "server {seen}, loadlab {} (+{} in flight)",
        m.requests.completed,
        r.in_flight_at_end
    );
    assert!(
        m.send_lag_us.is_some(),
        "an open loop's latency is from the due time"
    );
}

/// `--ws-held`: connections held idle beside the echo load, open loop: each opened once and
/// held (the server's peak counts them with the echoes'), never pinged, none timed; the
/// echoes alone are the exchanges, each one the server read.
#[test]
fn held_connections_beside_an_echo_load_are_held_not_timed() {
    let server = WsServer::start(WsBehavior::Echo);
    let r = run(RunSpec {
        rate: Some(200.0),
        duration: Some(Duration::from_millis(600)),
        ws: WsSpec {
            held: Some(25),
            ..WsSpec::default()
        },
        ..ws(server.url("/"), WsMode::Echo)
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?}", m.error_details);
    let c = server.counters();
    let seen = get(&c.messages);
    assert!(
        seen >= m.requests.completed && seen <= m.requests.completed + r.in_flight_at_end,
        "server {seen}, loadlab {}",
        m.requests.completed
    );
    assert_eq!(get(&c.pings), 0, "held beside an echo load: never pinged");
    let w = r.websocket.as_ref().expect("a WebSocket section");
    assert_eq!(w.held_peak, 25);
    // Every held connection and each echo connection upgraded once; all said goodbye.
    let echo_connections = get(&c.upgraded) - 25;
    assert!(echo_connections >= 1, "{}", get(&c.upgraded));
    assert_eq!(get(&c.closes), get(&c.upgraded));
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("25 connections held open at most")),
        "{:?}",
        r.notes
    );
}

#[test]
fn held_connections_are_pinged_and_their_memory_reported() {
    let server = WsServer::start(WsBehavior::Silent);
    let r = run(RunSpec {
        connections: Some(40),
        duration: Some(Duration::from_millis(700)),
        ws: WsSpec {
            mode: WsMode::Hold,
            ping: Some(Duration::from_millis(100)),
            ..WsSpec::default()
        },
        ..ws(server.url("/"), WsMode::Hold)
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?}", m.error_details);
    assert_eq!(get(&server.counters().upgraded), 40);
    // Each connection pings about every 100 ms: 40 x ~6 pongs.
    assert!(m.requests.completed >= 120, "{}", m.requests.completed);
    let pings = get(&server.counters().pings);
    assert!(
        pings >= m.requests.completed && pings <= m.requests.completed + r.in_flight_at_end,
        "server {pings} pings, loadlab {} pongs",
        m.requests.completed
    );
    // The run's end closed each one with a close frame (the server saw no dropped ones).
    let started = std::time::Instant::now();
    while get(&server.counters().closes) < 40 && started.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(get(&server.counters().closes), 40);
    let held = r.notes.iter().find(|n| n.contains("connections held open"));
    let held = held.unwrap_or_else(|| panic!("{:?}", r.notes));
    assert!(
        held.contains("40 connections") && held.contains("per held"),
        "{held}"
    );
}

/// A held load against a server that accepts 1,000 connections a second behind a listen
/// backlog of 64: opened all at once, most of 300 overflowed the backlog (SYNs dropped,
/// retried a second later) and were not held within the run; with at most 64 handshakes in
/// flight every one is held, as the server counts, and the notes say how long that took.
#[test]
fn held_connections_open_within_a_small_backlog() {
    let server = WsServer::start_slow_accept(WsBehavior::Silent, 64, 1_000);
    let r = run(RunSpec {
        connections: Some(300),
        duration: Some(Duration::from_millis(1_000)),
        ws: WsSpec {
            mode: WsMode::Hold,
            ping: Some(Duration::from_secs(60)),
            ..WsSpec::default()
        },
        ..ws(server.url("/"), WsMode::Hold)
    });
    assert_eq!(
        r.measured.requests.failed, 0,
        "{:?}",
        r.measured.error_details
    );
    assert_eq!(get(&server.counters().upgraded), 300);
    let w = r.websocket.as_ref().expect("a WebSocket section");
    assert_eq!(w.held_peak, 300);
    let held = r.notes.iter().find(|n| n.contains("connections held open"));
    let held = held.unwrap_or_else(|| panic!("{:?}", r.notes));
    assert!(
        held.contains("all open") && held.contains("300 handshakes (at most 64 at once): p50"),
        "{held}"
    );
}

#[test]
fn connect_storm_counts_each_handshake_closed_and_open_loop() {
    let server = WsServer::start(WsBehavior::Echo);
    let r = run(RunSpec {
        connections: Some(4),
        requests: Some(200),
        ..ws(server.url("/"), WsMode::Connect)
    });
    assert_eq!(
        r.measured.requests.completed, 200,
        "{:?}",
        r.measured.errors
    );
    assert_eq!(get(&server.counters().upgraded), 200);
    assert_eq!(r.measured.status_codes.get("101"), Some(&200));

    let server = WsServer::start(WsBehavior::Echo);
    let r = run(RunSpec {
        rate: Some(200.0),
        duration: Some(Duration::from_millis(500)),
        ..ws(server.url("/"), WsMode::Connect)
    });
    let done = r.measured.requests.completed;
    assert!(done >= 80, "{done}");
    assert_eq!(r.measured.requests.failed, 0);
    assert!(get(&server.counters().upgraded) >= done);
}

/// Runs three echoes against `server`'s URL and returns the result.
fn three(url: String) -> RunResult {
    run(RunSpec {
        connections: Some(1),
        requests: Some(3),
        timeout: Duration::from_secs(2),
        connect_timeout: Duration::from_millis(400),
        ..ws(url, WsMode::Echo)
    })
}

fn failed_as(r: &RunResult, class: &str) -> String {
    let m = &r.measured;
    assert_eq!(m.requests.completed, 0, "{:?}", m.errors);
    assert_eq!(
        m.errors.get(class),
        Some(&3),
        "{:?} {:?}",
        m.errors,
        m.error_details
    );
    m.error_details.get(class).cloned().unwrap_or_default()
}

#[test]
fn a_refused_upgrade_is_classed_by_its_status() {
    let server = ScriptedServer::start(
        Script::new()
            .read_request()
            .write("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
            .close(),
    );
    let r = three(server.url("/").replacen("http://", "ws://", 1));
    let detail = failed_as(&r, "ws_refused");
    assert!(detail.contains("HTTP 503"), "{detail}");
    assert_eq!(r.measured.status_codes.get("503"), Some(&3));
}

#[test]
fn a_101_with_the_wrong_accept_key_is_a_bad_handshake() {
    let server = ScriptedServer::start(
        Script::new()
            .read_request()
            .write(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                 Sec-WebSocket-Accept: bm90IHRoZSByaWdodCBrZXk=\r\n\r\n",
            )
            .hold(),
    );
    let r = three(server.url("/").replacen("http://", "ws://", 1));
    let detail = failed_as(&r, "ws_bad_handshake");
    assert!(detail.contains("Sec-WebSocket-Accept"), "{detail}");
}

#[test]
fn an_upgrade_closed_unanswered_is_closed_before_response() {
    // A server at its limit (Python's websockets under 15,000 connects) closes some before
    // answering: not a bad handshake, which is an answer.
    let server = ScriptedServer::start(Script::new().read_request().close());
    let r = three(server.url("/").replacen("http://", "ws://", 1));
    let detail = failed_as(&r, "closed_before_response");
    assert!(
        detail.contains("before it answered the upgrade"),
        "{detail}"
    );
}

#[test]
fn an_upgrade_never_answered_times_out_as_a_connect() {
    let server = ScriptedServer::start(Script::new().read_request().hold());
    let r = three(server.url("/").replacen("http://", "ws://", 1));
    let detail = failed_as(&r, "connect_timeout");
    assert!(detail.contains("upgrade"), "{detail}");
}

/// A server that breaks the protocol after the first message, with `bytes`.
fn after_first(bytes: Vec<u8>) -> RunResult {
    let server = WsServer::start(WsBehavior::RawAfterFirst(bytes));
    three(server.url("/"))
}

#[test]
fn a_frame_of_2_pow_63_bytes_fails_without_allocating_it() {
    let mut frame = vec![0x82, 0x7f, 0x80];
    frame.extend([0; 7]);
    let detail = failed_as(&after_first(frame), "ws_protocol_error");
    assert!(detail.contains("bytes"), "{detail}");
}

#[test]
fn text_that_is_not_utf8_is_a_protocol_error() {
    let detail = failed_as(
        &after_first(vec![0x81, 0x02, 0xc3, 0x28]),
        "ws_protocol_error",
    );
    assert!(detail.contains("UTF-8"), "{detail}");
}

#[test]
fn an_invalid_close_code_is_a_protocol_error() {
    // Close, code 999: no endpoint may send it.
    let detail = failed_as(
        &after_first(vec![0x88, 0x02, 0x03, 0xe7]),
        "ws_protocol_error",
    );
    assert!(detail.contains("1002"), "{detail}");
}

#[test]
fn endless_fragments_stop_at_the_size_limit() {
    // A text message begun and continued in 1 MiB fragments, past the 16 MiB accepted.
    let chunk = 1 << 20;
    let mut bytes = Vec::with_capacity(18 * (chunk + 10));
    for i in 0..18 {
        bytes.push(if i == 0 { 0x01 } else { 0x00 });
        bytes.push(0x7f);
        bytes.extend((chunk as u64).to_be_bytes());
        bytes.extend(std::iter::repeat_n(b'a', chunk));
    }
    let detail = failed_as(&after_first(bytes), "ws_protocol_error");
    assert!(detail.contains("over the"), "{detail}");
}

#[test]
fn a_close_code_is_a_failure_with_the_servers_reason_escaped() {
    let server = WsServer::start(WsBehavior::CloseOnFirst(1011, "db down\x1b[2J".into()));
    let r = three(server.url("/"));
    let detail = failed_as(&r, "ws_closed");
    assert!(detail.contains("1011 (internal server error)"), "{detail}");
    assert!(detail.contains("db down\\u{1b}[2J"), "{detail}");
}

#[test]
fn nonsense_combinations_are_refused_with_the_fix() {
    let url = "ws://127.0.0.1:9/".to_string();
    let cases: Vec<(RunSpec, &str, &str)> = vec![
        (
            // Streams are HTTP/2's (RFC 8441): with --http2 they are WebSockets a connection.
            RunSpec {
                streams: 4,
                ..ws(url.clone(), WsMode::Echo)
            },
            "streams",
            "add --http2",
        ),
        (
            RunSpec {
                rate: Some(10.0),
                ..ws(url.clone(), WsMode::Hold)
            },
            "rate",
            "--ws-mode connect",
        ),
        (
            RunSpec {
                body: vec![0xff],
                ..ws(url.clone(), WsMode::Echo)
            },
            "ws_binary",
            "--ws-binary",
        ),
        (
            RunSpec {
                ws: WsSpec {
                    mode: WsMode::Hold,
                    ..WsSpec::default()
                },
                ..ws("http://127.0.0.1:9/".into(), WsMode::Echo)
            },
            "ws",
            "ws://",
        ),
        (
            RunSpec {
                ws: WsSpec {
                    ping: Some(Duration::from_secs(1)),
                    ..WsSpec::default()
                },
                ..ws(url.clone(), WsMode::Echo)
            },
            "ws_ping",
            "--ws-mode hold",
        ),
        (
            RunSpec {
                connections: Some(2),
                duration: Some(Duration::from_secs(1)),
                ws: WsSpec {
                    mode: WsMode::Hold,
                    held: Some(5),
                    ..WsSpec::default()
                },
                ..ws(url.clone(), WsMode::Hold)
            },
            "ws_held",
            "beside an echo load",
        ),
        (
            RunSpec {
                requests: Some(100),
                ws: WsSpec {
                    held: Some(5),
                    ..WsSpec::default()
                },
                ..ws(url.clone(), WsMode::Echo)
            },
            "requests",
            "give -d",
        ),
    ];
    for (spec, setting, fix) in cases {
        let e = spec.validate().expect_err(setting);
        assert_eq!(e.setting, setting, "{e}");
        assert!(e.message.contains(fix), "{e}");
    }
    let ok = ws("WSS://example.com/chat?room=1".into(), WsMode::Echo)
        .validate()
        .unwrap();
    assert!(ok.url.https);
    assert_eq!(ok.ws.unwrap().uri, "wss://example.com/chat?room=1");
}
