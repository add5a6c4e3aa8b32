//! The server's side of the path through its agent (issue 52): a run with `--agent` against a
//! server on the agent's host gets the server's connections sampled by the agent, in the
//! result as a `side: "server"` report with the sending end's chrono stats, as a server on
//! loadlab's own machine gets. Loopback: the agent and the server are processes here.

use crate::common::assert_valid;
use crate::generators::LoopbackGenerator;
use loadlab_testkit::ScratchDir;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// `loadlab-fixture` on 127.0.0.1:0, stopped (by PID) when dropped; and where it listens.
struct Fixture(Child);

impl Fixture {
    fn start() -> (Fixture, String) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_loadlab-fixture"))
            .arg("--print-address")
            .env("PORT", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the fixture");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the fixture said {line:?}"))
            .to_string();
        (Fixture(child), addr)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_servers_agent_samples_its_connections_into_the_servers_path_report() {
    let dir = ScratchDir::new("server-path");
    let (_server, addr) = Fixture::start();
    let agent = LoopbackGenerator::start_as(&dir.join("agent"), &[]);
    let json = dir.join("run.json");
    let out = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(["run", "-q", "-c", "4", "-d", "1s", "--interval", "200ms"])
        .args(agent.flags())
        .arg("--json")
        .arg(&json)
        .arg(format!("http://{addr}/bytes?n=65536"))
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_valid(&doc);
    assert!(
        doc["server"]["agent"].is_object(),
        "through the agent: {said}"
    );
    let reports = doc["path"].as_array().unwrap();
    let server = reports
        .iter()
        .find(|r| r["side"] == "server")
        .unwrap_or_else(|| panic!("no server side: {:#}", doc["path"]));
    assert_eq!(server["transport"], "tcp");
    let intervals = server["intervals"].as_array().unwrap();
    assert!(intervals.len() >= 3, "{server:#}");
    // The server sent the answers: its connections acked them, and were busy sending.
    let sent: f64 = intervals
        .iter()
        .map(|i| i["acked_per_s"].as_f64().unwrap())
        .sum();
    assert!(sent > 1e6, "{server:#}");
    assert!(
        intervals
            .iter()
            .any(|i| i["busy_share"].as_f64().is_some_and(|b| b > 0.0)),
        "the sending end's chrono stats: {server:#}"
    );
    let most = intervals.iter().filter_map(|i| i["sockets"].as_u64()).max();
    assert_eq!(
        most,
        Some(4),
        "its 4 connections, the listener left out: {server:#}"
    );
}

/// A fleet's run with the server's agent: the path check before the load measures each
/// generator's path both ways, and the result carries what it found per generator (goodput
/// each way, what the load asks of it, whether it was named), as the Markdown report does.
#[test]
fn a_fleets_path_check_is_in_the_result_per_generator() {
    let dir = ScratchDir::new("path-check");
    let (_server, addr) = Fixture::start();
    let agent = LoopbackGenerator::start_as(&dir.join("agent"), &[]);
    let (_generators, fleet) = crate::generators::loopback_fleet(&dir, 2);
    let (json, md) = (dir.join("run.json"), dir.join("run.md"));
    let out = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(["run", "--rate", "100", "-d", "500ms", "--generators"])
        .arg(&fleet)
        .args(agent.flags())
        .arg("--json")
        .arg(&json)
        .arg("--report")
        .arg(&md)
        .arg(format!("http://{addr}/bytes?n=10000"))
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("path to generator gen0: "),
        "the check said in words: {said}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_valid(&doc);
    let check = &doc["path_check"];
    // What the load asks: a first answer's size (10,000 bytes and the headers), the rate.
    let answer = check["answer_bytes"]
        .as_f64()
        .unwrap_or_else(|| panic!("{check:#}"));
    assert!((10_000.0..10_400.0).contains(&answer), "{check:#}");
    assert_eq!(check["planned_per_s"].as_f64(), Some(100.0), "{check:#}");
    let found = check["generators"].as_array().unwrap();
    let names: Vec<&str> = found
        .iter()
        .filter_map(|f| f["generator"].as_str())
        .collect();
    assert_eq!(names, ["gen0", "gen1"], "{check:#}");
    for f in found {
        for way in ["down_bits_per_s", "up_bits_per_s"] {
            assert!(f[way].as_f64().is_some_and(|b| b > 1e6), "{way}: {f:#}");
        }
        assert_eq!(f["share_per_s"].as_f64(), Some(50.0), "{f:#}");
        assert!(
            f["ceiling_per_s"].as_f64().is_some_and(|c| c > 50.0),
            "{f:#}"
        );
        assert!(f["named"].is_null(), "loopback carries this load: {f:#}");
    }
    let report = std::fs::read_to_string(&md).unwrap();
    assert!(report.contains("Path check"), "{report}");
    assert!(report.contains("| gen1 |"), "{report}");

    // A sweep's (and a capacity search's) document carries the same check.
    let sweep = dir.join("sweep.json");
    let out = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(["sweep", "-q", "--no-save", "--rates", "100", "-d", "500ms"])
        .args(["--warmup", "0s", "--slo", "p99<1s", "--generators"])
        .arg(&fleet)
        .args(agent.flags())
        .arg("--json")
        .arg(&sweep)
        .arg(format!("http://{addr}/bytes?n=10000"))
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&sweep)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr))),
    )
    .unwrap();
    let found = doc["path_check"]["generators"].as_array();
    assert_eq!(found.map(Vec::len), Some(2), "{doc:#}");
}
