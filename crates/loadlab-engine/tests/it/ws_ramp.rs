//! The ends and beginnings of WebSocket loads: an open loop's idle connections say goodbye
//! together at the run's end, within one grace however many there are and however slowly
//! the server answers; and held connections open at `--ws-connect-rate`, each handshake
//! timed from when its connection was due.

use loadlab_engine::ws::{WsMode, WsSpec};
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{WsBehavior, WsCounters, WsServer};
use std::time::{Duration, Instant};

use crate::common;

fn get(c: &std::sync::atomic::AtomicU64) -> u64 {
    WsCounters::get(c)
}

/// An open loop whose echoes take 100 ms keeps about ten connections busy at 100 messages a
/// second; at the end they are idle, and the server answers their goodbyes after 5 s. Each
/// goodbye gives up after 200 ms: awaited one after another, ten of them held the run's end
/// 2 s; together, the end comes within one grace.
#[test]
fn idle_open_loop_connections_say_goodbye_together() {
    let server = WsServer::start(WsBehavior::Slow {
        echo_after: Duration::from_millis(100),
        goodbye_after: Duration::from_secs(5),
    });
    let started = Instant::now();
    let r = common::run_within(
        RunSpec {
            url: server.url("/"),
            threads: Some(1),
            rate: Some(100.0),
            duration: Some(Duration::from_millis(300)),
            max_connections: Some(50),
            ..RunSpec::default()
        },
        Duration::from_secs(20),
    );
    let took = started.elapsed();
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?}", m.error_details);
    let opened = get(&server.counters().upgraded);
    assert!(opened >= 8, "only {opened} connections: too few to tell");
    // Every one said goodbye (the server counts the close frames it read).
    let since = Instant::now();
    while get(&server.counters().closes) < opened && since.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(get(&server.counters().closes), opened);
    // 300 ms of load, the last echoes' 100 ms, one goodbye's 200 ms, and the run's own
    // start and end: well under the 200 ms a connection of one after another.
    assert!(
        took < Duration::from_millis(1_200),
        "{opened} goodbyes took the run to {took:?}"
    );
}

/// A held load of `count` connections opened at `rate` a second for `ms`.
fn held_at(url: String, count: usize, rate: f64, ms: u64) -> RunResult {
    common::run_within(
        RunSpec {
            url,
            threads: Some(2),
            connections: Some(count),
            duration: Some(Duration::from_millis(ms)),
            ws: WsSpec {
                mode: WsMode::Hold,
                ping: Some(Duration::from_secs(60)),
                connect_rate: Some(rate),
                ..WsSpec::default()
            },
            ..RunSpec::default()
        },
        Duration::from_secs(20),
    )
}

/// The held connections' note, and its figure after `before` (e.g. "all open ", " s").
fn ramp_note(r: &RunResult) -> &str {
    let note = r.notes.iter().find(|n| n.contains("connections held open"));
    note.unwrap_or_else(|| panic!("{:?}", r.notes))
}

fn figure(note: &str, before: &str) -> f64 {
    let at = note
        .find(before)
        .unwrap_or_else(|| panic!("{before:?} in {note}"))
        + before.len();
    let digits: String = note[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("{before:?} in {note}"))
}

/// `--ws-connect-rate 200` for 40 connections: connection i is due i/200 s after the start,
/// so the last opens about 0.195 s in (at most 64 in flight, they all opened within a few
/// milliseconds before); the note says the rate achieved, over the gaps between them.
#[test]
fn held_connections_open_at_the_connect_rate() {
    let server = WsServer::start(WsBehavior::Silent);
    let r = held_at(server.url("/"), 40, 200.0, 500);
    assert_eq!(
        r.measured.requests.failed, 0,
        "{:?}",
        r.measured.error_details
    );
    assert_eq!(get(&server.counters().upgraded), 40);
    let note = ramp_note(&r);
    assert!(note.contains("40 connections held open"), "{note}");
    let all_open = figure(note, "all open ");
    assert!((0.18..0.40).contains(&all_open), "{note}");
    let achieved = figure(note, "opened at ");
    assert!((150.0..=230.0).contains(&achieved), "{note}");
    assert!(
        note.contains(
            "(--ws-connect-rate 200/s); 40 handshakes (at most 64 at once), timed from \
             when each was due"
        ),
        "{note}"
    );
}

/// A server that accepts 1,000 connections a second, asked for 128 at 10,000/s (all due in
/// the first 13 ms): 64 handshakes in flight, the other 64 waiting for a turn, so the last
/// connection opens about 130 ms in. Timed from when each was due, that wait is in the
/// handshake's time: the slowest is at least the last one's lateness (all open, less its due
/// time and the note's rounding); timed from when each began (after its turn came), the
/// slowest took about 64 ms.
#[test]
fn a_paced_handshake_is_timed_from_when_it_was_due() {
    let server = WsServer::start_slow_accept(WsBehavior::Silent, 256, 1_000);
    let r = held_at(server.url("/"), 128, 10_000.0, 400);
    assert_eq!(
        r.measured.requests.failed, 0,
        "{:?}",
        r.measured.error_details
    );
    assert_eq!(get(&server.counters().upgraded), 128);
    let note = ramp_note(&r);
    let all_open_ms = figure(note, "all open ") * 1e3;
    let max_ms = figure(note, "max ");
    assert!(all_open_ms >= 100.0, "{note}");
    assert!(max_ms >= all_open_ms - 13.0 - 5.0 - 2.0, "{note}");
}

/// A connect rate paces held connections: refused with any other load, and above 0.
#[test]
fn a_connect_rate_needs_held_connections() {
    let spec = |mode, held, rate| RunSpec {
        url: "ws://127.0.0.1:9/".into(),
        duration: Some(Duration::from_secs(1)),
        ws: WsSpec {
            mode,
            held,
            connect_rate: Some(rate),
            ..WsSpec::default()
        },
        ..RunSpec::default()
    };
    for (spec, fix) in [
        (spec(WsMode::Echo, None, 100.0), "add --ws-mode hold"),
        (
            spec(WsMode::Connect, None, 100.0),
            "--ws-mode connect --rate N",
        ),
        (spec(WsMode::Hold, None, 0.0), "give more than 0"),
        (spec(WsMode::Echo, Some(5), f64::NAN), "give more than 0"),
    ] {
        let err = spec.validate().expect_err("refused");
        assert_eq!(err.setting, "ws_connect_rate");
        assert!(err.message.contains(fix), "{}", err.message);
    }
    assert!(spec(WsMode::Echo, Some(5), 100.0).validate().is_ok());
    assert!(spec(WsMode::Hold, None, 0.5).validate().is_ok());
}
