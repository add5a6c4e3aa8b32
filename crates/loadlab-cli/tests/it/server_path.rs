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
