//! WebSocket loads over a generator fleet (`--generators FLEET ws://...`): two `loadlab agent
//! --generator` processes on loopback each run their shard against the testkit's WebSocket
//! server, which counts the upgrades, messages and pings it read. The merged result must
//! equal the server's counts: an echo load's messages, and a hold load's connections and
//! pings (a generator that dropped `--ws-mode hold` would have sent echo messages instead),
//! each generator's held connections noted as its own; `--ws-held`'s connections held beside
//! an echo load, each generator its share, opened at its share of `--ws-connect-rate`.

use crate::generators::{loopback_fleet, run_fleet};
use loadlab_testkit::{ScratchDir, WsBehavior, WsCounters, WsServer};
use serde_json::Value;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

/// The server counts what it read, which may be just after the generator saw its answer:
/// the count is read until it reaches `want` or stops moving.
fn settled(counter: &AtomicU64, want: u64) -> u64 {
    let mut last = (WsCounters::get(counter), Instant::now());
    while last.0 < want && last.1.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
        let now = WsCounters::get(counter);
        if now != last.0 {
            last = (now, Instant::now());
        }
    }
    last.0
}

fn requests(result: &Value, what: &str) -> u64 {
    result["measured"]["requests"][what]
        .as_u64()
        .unwrap_or_else(|| panic!("no {what}: {result:#}"))
}

/// Each generator's part of the merged result: its shard's exchanges issued.
fn issued_per_part(result: &Value) -> Vec<u64> {
    result["parts"]
        .as_array()
        .unwrap_or_else(|| panic!("no parts: {result:#}"))
        .iter()
        .map(|p| p["issued"].as_u64().unwrap())
        .collect()
}

#[test]
fn websocket_loads_over_a_fleet_are_exact_against_the_servers_counts() {
    let dir = ScratchDir::new("cli-fleet-ws");
    let (generators, fleet) = loopback_fleet(&dir, 2);
    let server = WsServer::start(WsBehavior::Echo);
    let c = server.counters();

    // Echo, closed loop: 4 connections (2 a generator), 600 messages and their echoes.
    let echo = run_fleet(
        &fleet,
        &dir.join("echo.json"),
        &[
            "-c",
            "4",
            "-n",
            "600",
            "--ws-size",
            "64",
            &server.url("/echo"),
        ],
    );
    assert_eq!(requests(&echo, "completed"), 600, "{echo:#}");
    assert_eq!(requests(&echo, "failed"), 0, "{echo:#}");
    assert_eq!(settled(&c.messages, 600), 600);
    assert_eq!(WsCounters::get(&c.upgraded), 4, "each generator its own 2");
    let parts = issued_per_part(&echo);
    assert_eq!(parts.len(), 2, "{echo:#}");
    assert!(
        parts.iter().all(|&n| n > 0),
        "a generator sent nothing: {parts:?}"
    );
    assert_eq!(parts.iter().sum::<u64>(), 600, "{parts:?}");

    // Hold: 6 connections (3 a generator) held for 1 s, each pinging every 200 ms. No
    // message is sent (a generator that ran echo would have), every pong is an exchange.
    let hold = run_fleet(
        &fleet,
        &dir.join("hold.json"),
        &[
            "--ws-mode",
            "hold",
            "-c",
            "6",
            "-d",
            "1s",
            "--ws-ping",
            "200ms",
            &server.url("/live"),
        ],
    );
    assert_eq!(requests(&hold, "failed"), 0, "{hold:#}");
    assert_eq!(settled(&c.upgraded, 10), 10, "6 held connections more");
    assert_eq!(
        WsCounters::get(&c.messages),
        600,
        "a held connection sends nothing"
    );
    let pongs = requests(&hold, "completed");
    assert!(pongs >= 6 * 3, "each held connection pinged: {hold:#}");
    // A ping sent just before the end is read by the server with its pong never awaited:
    // the result counts it in flight at the end.
    let in_flight = hold["in_flight_at_end"].as_u64().unwrap_or(0);
    let pings = settled(&c.pings, pongs);
    assert!(
        (pongs..=pongs + in_flight).contains(&pings),
        "server {pings} pings, {pongs} pongs, {in_flight} in flight: {hold:#}"
    );
    assert_eq!(issued_per_part(&hold).len(), 2, "{hold:#}");
    // Each generator's held connections, named as its own: a union of two alike notes
    // would have read as 3 held in all.
    let notes = hold["notes"].to_string();
    for shard in ["1/2", "2/2"] {
        let held = format!("shard {shard}: WebSocket: 3 connections held open at most");
        assert!(notes.contains(&held), "{notes}");
    }

    // Echo beside held connections: `--ws-held 8` crosses the wire, each generator holds its
    // 4 beside its echo connection (one that dropped it would have held none), all open at
    // once, so each notes its memory per held connection. `--ws-connect-rate 40/s` crosses
    // too: each generator opens its 4 at its share, 20 a second.
    let beside = run_fleet(
        &fleet,
        &dir.join("held.json"),
        &[
            "-c",
            "2",
            "-d",
            "1s",
            "--ws-held",
            "8",
            "--ws-connect-rate",
            "40/s",
            &server.url("/echo"),
        ],
    );
    assert_eq!(requests(&beside, "failed"), 0, "{beside:#}");
    assert!(requests(&beside, "completed") > 0, "{beside:#}");
    assert_eq!(
        settled(&c.upgraded, 20),
        20,
        "2 echo and 8 held connections more"
    );
    let notes = beside["notes"].to_string();
    for shard in ["1/2", "2/2"] {
        let held = format!("shard {shard}: WebSocket: 4 connections held open at most, all open");
        assert!(notes.contains(&held), "{notes}");
    }
    assert_eq!(notes.matches("per held connection").count(), 2, "{notes}");
    let paced = "(--ws-connect-rate 20/s, this shard's share of 40/s); 4 handshakes (at most 64 \
                 at once), timed from when each was due";
    assert_eq!(notes.matches(paced).count(), 2, "{notes}");
    drop(generators);
}
