//! The path's figures over HTTP/3 (docs/path.md): the kernel keeps none for QUIC, so a run's
//! path report comes from quinn's own estimates of the engine's connections. A real run over
//! loopback against the in-process HTTP/3 server must carry one, with its round trips and
//! the goodput it received, and blame no path.

use crate::common::assert_valid;
use loadlab_testkit::{H3Server, ScratchDir, TestCa};
use serde_json::Value;
use std::process::Command;

#[test]
fn an_http3_run_carries_quinns_round_trips_and_goodput_in_its_path_report() {
    let dir = ScratchDir::new("cli-path-h3");
    let ca = TestCa::new();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let server = H3Server::start(&ca);
    let json = dir.join("run.json");
    let out = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(["run", "-q", "--http3", "--cacert"])
        .arg(&ca_file)
        .args([
            "-c",
            "4",
            "-d",
            "1s",
            "--warmup",
            "200ms",
            "--interval",
            "200ms",
        ])
        .arg("--json")
        .arg(&json)
        .arg(format!("{}bytes?n=12288", server.url()))
        .output()
        .expect("loadlab runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    let result: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_valid(&result);
    let report = &result["path"][0];
    assert_eq!(report["side"], "generator", "{}", result["path"]);
    assert_eq!(report["transport"], "quic", "{report}");
    let min = report["min_rtt_us"].as_f64().unwrap_or(0.0);
    assert!(min > 0.0 && min < 100_000.0, "a loopback minimum: {report}");
    let measured: Vec<&Value> = report["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["warmup"] == false)
        .collect();
    assert!(measured.len() >= 5, "{report}");
    // Every window wholly inside the load (warm-up 200 ms, then 1 s) saw the 4 connections; one
    // at the end also holds the time they close in (CI saw 1 socket in a window at 1.2 s).
    let inside = |i: &&&Value| {
        i["start_s"].as_f64().unwrap() + i["duration_s"].as_f64().unwrap() <= 1.2 + 1e-6
    };
    assert!(measured.iter().filter(inside).count() >= 4, "{report}");
    for i in measured.iter().filter(inside) {
        assert!(i["rtt_us"].as_f64().is_some_and(|r| r > 0.0), "{i}");
        assert!(i["sockets"].as_u64() >= Some(4), "{i}");
    }
    // What came in: the UDP bytes the requests booked (`wire_bytes`), within the edges of
    // the 100 ms windows placed on the measured time.
    let received: f64 = measured
        .iter()
        .map(|i| i["received_per_s"].as_f64().unwrap() * i["duration_s"].as_f64().unwrap())
        .sum();
    let wire = result["measured"]["wire_bytes"]["received"]
        .as_f64()
        .unwrap();
    let bodies = result["measured"]["bytes"]["received"].as_f64().unwrap();
    assert!(wire > bodies, "{wire} {bodies}");
    assert!(
        (wire * 0.8..wire * 1.25).contains(&received),
        "{received} bytes in the path's intervals against {wire} booked"
    );
    assert!(
        !result["verdicts"].to_string().contains("on the path"),
        "{}",
        result["verdicts"]
    );
}
