//! HTTP/3 over a generator fleet (`--generators FLEET --http3`): two `loadlab agent
//! --generator` processes on loopback each run their shard over QUIC against an in-process
//! HTTP/3 server that counts the connections it accepted and the requests it answered; the
//! merged result must equal the server's counts, closed loop and open loop.

use crate::generators::{loopback_fleet, run_fleet};
use loadlab_testkit::{H3Server, ScratchDir, TestCa};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// `loadlab run ARGS --json FILE` over `fleet` with HTTP/3 trusting `ca`; the result.
fn run_h3(fleet: &Path, ca: &Path, json: &Path, args: &[&str]) -> Value {
    let ca = ca.to_str().expect("a UTF-8 scratch path");
    let all: Vec<&str> = ["--http3", "--cacert", ca]
        .iter()
        .chain(args)
        .copied()
        .collect();
    run_fleet(fleet, json, &all)
}

/// The server counts a request once its response has gone, which a generator may see first:
/// the count is read until it reaches `want` or stops moving.
fn settled(read: impl Fn() -> u64, want: u64) -> u64 {
    let mut last = (read(), Instant::now());
    while last.0 < want && last.1.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
        let now = read();
        if now != last.0 {
            last = (now, Instant::now());
        }
    }
    last.0
}

/// Each generator's part of the merged result: (its shard's requests issued) per part.
fn issued_per_part(result: &Value) -> Vec<u64> {
    result["parts"]
        .as_array()
        .unwrap_or_else(|| panic!("no parts: {result:#}"))
        .iter()
        .map(|p| p["issued"].as_u64().unwrap())
        .collect()
}

#[test]
fn http3_over_a_fleet_is_exact_against_the_servers_counts() {
    let dir = ScratchDir::new("cli-fleet-h3");
    let (generators, fleet) = loopback_fleet(&dir, 2);
    let ca = TestCa::new();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let server = H3Server::start(&ca);
    let counters = server.counters();

    // Closed loop: 4 connections (2 a generator) of 5 streams each, 600 requests.
    let closed = run_h3(
        &fleet,
        &ca_file,
        &dir.join("closed.json"),
        &["-c", "4", "--streams", "5", "-n", "600", &server.url()],
    );
    assert_eq!(
        closed["measured"]["requests"]["completed"], 600,
        "{closed:#}"
    );
    assert_eq!(closed["measured"]["requests"]["failed"], 0, "{closed:#}");
    assert_eq!(settled(|| counters.answered(), 600), 600);
    // Each generator opened its own 2 connections over QUIC, and no more.
    assert_eq!(counters.connections(), 4);
    let parts = issued_per_part(&closed);
    assert_eq!(parts.len(), 2, "{closed:#}");
    assert!(
        parts.iter().all(|&n| n > 0),
        "a generator sent nothing: {parts:?}"
    );
    assert_eq!(parts.iter().sum::<u64>(), 600, "{parts:?}");
    // Each generator ran HTTP/3 (a generator that dropped the protocol would have failed
    // every request against a server on UDP only, or planned another protocol).
    assert_eq!(closed["load"]["protocol"], "h3", "{closed:#}");
    assert_eq!(closed["load"]["streams"], 5, "{closed:#}");
    for part in closed["parts"].as_array().unwrap() {
        let plan = part["shard"]["whole_plan"].as_str().unwrap();
        assert!(plan.contains("over HTTP/3"), "{plan}");
    }

    // Open loop: 300 requests a second for 2 s, split over the two: exactly 600 more.
    let open = run_h3(
        &fleet,
        &ca_file,
        &dir.join("open.json"),
        &["--streams", "5", "--rate", "300", "-d", "2s", &server.url()],
    );
    assert_eq!(open["measured"]["requests"]["completed"], 600, "{open:#}");
    assert_eq!(settled(|| counters.answered(), 1200), 1200);
    let parts = issued_per_part(&open);
    assert_eq!(parts, vec![300, 300], "{open:#}");
    // Each generator's path, from quinn's figures for its own connections (docs/path.md).
    let paths = open["path"].as_array().unwrap();
    assert_eq!(paths.len(), 2, "{}", open["path"]);
    for p in paths {
        assert_eq!(p["transport"], "quic", "{p}");
        assert!(p["min_rtt_us"].as_f64().is_some_and(|m| m > 0.0), "{p}");
    }
    drop(generators);
}
