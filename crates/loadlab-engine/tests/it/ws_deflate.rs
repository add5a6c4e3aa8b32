//! permessage-deflate (RFC 7692) against the testkit's server that speaks it (frames by
//! hand, DEFLATE by flate2): echoes of text and binary messages compressed both ways, with
//! and without context takeover, a compressed message in fragments with a ping between, a
//! decompression bomb and a bad parameter as named failures, and `--ws-no-deflate`. Counts
//! are the server's own. Interop with Python's `websockets`, which agrees to the extension by
//! default, is the CLI's `tests/it/websocket.rs`.

use loadlab_engine::ws::{WsMode, WsSpec};
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{DeflateBehavior, DeflateServer, WsCounters};
use std::time::Duration;

use crate::common;

fn echo(url: String, requests: u64) -> RunSpec {
    RunSpec {
        url,
        threads: Some(1),
        connections: Some(2),
        requests: Some(requests),
        timeout: Duration::from_secs(3),
        ws: WsSpec {
            mode: WsMode::Echo,
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

fn ok(r: &RunResult, n: u64) {
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, n);
}

fn note(r: &RunResult) -> String {
    let found = r.notes.iter().find(|n| n.contains("permessage-deflate"));
    found.cloned().unwrap_or_else(|| panic!("{:?}", r.notes))
}

#[test]
fn echoes_go_compressed_both_ways_and_count_as_the_server_does() {
    let server = DeflateServer::start(DeflateBehavior::Echo, "permessage-deflate");
    let c = server.counters();
    // Text: 64 bytes of `x` a message, deflated to a few.
    let r = run(RunSpec {
        ws: WsSpec {
            size: Some(64),
            ..WsSpec::default()
        },
        ..echo(server.url("/"), 300)
    });
    ok(&r, 300);
    assert_eq!(
        (get(&c.messages), get(&c.compressed), get(&c.bad)),
        (300, 300, 0)
    );
    assert_eq!(get(&c.payload_bytes), 300 * 64);
    assert!(get(&c.wire_bytes) < 300 * 16, "{}", get(&c.wire_bytes));
    let offers = c.offers.lock().unwrap().clone();
    assert_eq!(offers, vec!["permessage-deflate"; 2]);
    let text = note(&r);
    assert!(text.contains("agreed on 2 of 2 connections"), "{text}");
    assert!(
        text.contains("300 messages sent deflated, 19200 bytes as"),
        "{text}"
    );
    assert!(text.contains("300 compressed messages received"), "{text}");

    // Binary, from the body.
    let body: Vec<u8> = (0..2000u32).map(|i| (i % 7) as u8).collect();
    let r = run(RunSpec {
        body: body.clone(),
        ws: WsSpec {
            binary: true,
            ..WsSpec::default()
        },
        ..echo(server.url("/"), 100)
    });
    ok(&r, 100);
    assert_eq!((get(&c.messages), get(&c.compressed)), (400, 400));
    assert_eq!(get(&c.payload_bytes), 300 * 64 + 100 * 2000);
}

/// With context takeover each message refers to the ones before it on its connection, so
/// the same message costs fewer bytes after the first; without, each starts afresh, and the
/// server inflates each with a fresh window (a client that kept its window would fail
/// there, counted as bad).
#[test]
fn context_takeover_on_and_off() {
    let mut wire = Vec::new();
    for answer in [
        "permessage-deflate",
        "permessage-deflate; client_no_context_takeover; server_no_context_takeover",
    ] {
        let server = DeflateServer::start(DeflateBehavior::Echo, answer);
        let body =
            b"{\"type\":\"quote\",\"symbol\":\"ACME\",\"bid\":101.25,\"ask\":101.5}".to_vec();
        let r = run(RunSpec {
            body,
            connections: Some(1),
            ..echo(server.url("/"), 50)
        });
        ok(&r, 50);
        let c = server.counters();
        assert_eq!(
            (get(&c.messages), get(&c.compressed), get(&c.bad)),
            (50, 50, 0),
            "{answer}"
        );
        wire.push(get(&c.wire_bytes));
    }
    // Taken over, 49 of the 50 are a back reference of a few bytes.
    assert!(wire[0] * 3 < wire[1], "{wire:?}");
}

#[test]
fn a_compressed_message_in_fragments_with_a_ping_between() {
    let server = DeflateServer::start(
        DeflateBehavior::Fragmented { fragments: 3 },
        "permessage-deflate",
    );
    let body: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 251) as u8).collect();
    let r = run(RunSpec {
        body,
        ws: WsSpec {
            binary: true,
            ..WsSpec::default()
        },
        ..echo(server.url("/"), 60)
    });
    ok(&r, 60);
    let c = server.counters();
    assert_eq!(
        (get(&c.messages), get(&c.compressed), get(&c.bad)),
        (60, 60, 0)
    );
    assert!(r.websocket.as_ref().unwrap().server_pings >= 120);
}

/// 64 MiB of zeros deflated to about 64 KiB: over the 16 MiB a message may be, a protocol
/// error named as such, inflating stopped at the limit (the layer's own test bounds the
/// memory it held).
#[test]
fn a_decompression_bomb_is_a_protocol_error() {
    let server = DeflateServer::start(
        DeflateBehavior::Bomb { bytes: 64 << 20 },
        "permessage-deflate",
    );
    let r = run(echo(server.url("/"), 2));
    let m = &r.measured;
    assert_eq!(m.requests.completed, 0, "{:?}", m.errors);
    assert!(m.errors.contains_key("ws_protocol_error"), "{:?}", m.errors);
    let detail = &m.error_details["ws_protocol_error"];
    assert!(
        detail.contains("inflates to more than the 16777216 bytes loadlab accepts"),
        "{detail}"
    );
}

#[test]
fn an_answer_loadlab_cannot_honour_fails_the_upgrade_naming_it() {
    for (answer, names) in [
        (
            "permessage-deflate; client_max_window_bits=10",
            "client_max_window_bits=10",
        ),
        (
            "permessage-deflate; server_max_window_bits=20",
            "server_max_window_bits",
        ),
        ("permessage-deflate; zebra", "zebra"),
    ] {
        let server = DeflateServer::start(DeflateBehavior::Echo, answer);
        let r = run(echo(server.url("/"), 2));
        let m = &r.measured;
        assert_eq!(m.requests.completed, 0, "{answer}: {:?}", m.errors);
        let detail = m.error_details.get("ws_bad_handshake");
        let detail = detail.unwrap_or_else(|| panic!("{answer}: {:?}", m.errors));
        assert!(detail.contains(names), "{detail}");
        assert_eq!(get(&server.counters().messages), 0);
    }
}

#[test]
fn no_deflate_offers_nothing_and_frames_go_plain() {
    let server = DeflateServer::start(DeflateBehavior::Echo, "permessage-deflate");
    let r = run(RunSpec {
        ws: WsSpec {
            no_deflate: true,
            ..WsSpec::default()
        },
        ..echo(server.url("/"), 100)
    });
    ok(&r, 100);
    let c = server.counters();
    assert_eq!((get(&c.messages), get(&c.compressed)), (100, 0));
    assert_eq!(c.offers.lock().unwrap().clone(), vec![""; 2]);
    assert!(
        !r.notes.iter().any(|n| n.contains("deflate")),
        "{:?}",
        r.notes
    );
}

/// A scenario's WebSocket step offers the extension too (as a browser's does): its messages
/// go deflated, their compressed echoes are inflated before the checks read them.
#[test]
fn a_scenario_step_deflates_and_its_checks_read_the_inflated_answer() {
    let server = DeflateServer::start(DeflateBehavior::Echo, "permessage-deflate");
    let text = format!(
        r#"
name = "chat"
base_url = "http://{}"
[[steps]]
name = "say"
ws = "/say"
messages = ['{{"quote": "ACME ACME ACME ACME"}}', "again again again"]
[[steps.checks]]
body_contains = "again again"
"#,
        server.addr()
    );
    let dir = std::env::temp_dir();
    let scenario = loadlab_engine::scenario::Scenario::from_toml_str(&text, &dir).unwrap();
    let r = run(RunSpec {
        scenario: Some(std::sync::Arc::new(scenario)),
        connections: Some(2),
        threads: Some(1),
        requests: Some(40),
        timeout: Duration::from_secs(5),
        ..RunSpec::default()
    });
    ok(&r, 40);
    let c = server.counters();
    assert_eq!(
        (get(&c.messages), get(&c.compressed), get(&c.bad)),
        (40, 40, 0)
    );
    let offers = c.offers.lock().unwrap().clone();
    assert!(
        !offers.is_empty() && offers.iter().all(|o| o == "permessage-deflate"),
        "{offers:?}"
    );
}
