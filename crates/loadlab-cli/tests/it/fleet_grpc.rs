//! gRPC loads over a generator fleet (`--grpc ... --generators FLEET`): two `loadlab agent
//! --generator` processes on loopback each rebuild the call from the schema that travelled in
//! their load (the `.proto` is read on the coordinator only) and run their shard against the
//! mock upstream's gRPC service, which counts the calls and messages it read. The merged
//! result's calls and its `grpc` section's messages must equal the server's counts.

use crate::generators::{loopback_fleet, run_fleet};
use loadlab_testkit::ScratchDir;
use serde_json::Value;
use std::path::Path;

fn requests(result: &Value, what: &str) -> u64 {
    result["measured"]["requests"][what]
        .as_u64()
        .unwrap_or_else(|| panic!("no {what}: {result:#}"))
}

fn messages(result: &Value, which: &str) -> u64 {
    result["grpc"][which]
        .as_u64()
        .unwrap_or_else(|| panic!("no grpc.{which}: {result:#}"))
}

/// Each generator's part: its shard's calls issued, every generator having sent some.
fn issued_per_part(result: &Value) -> Vec<u64> {
    let parts: Vec<u64> = result["parts"]
        .as_array()
        .unwrap_or_else(|| panic!("no parts: {result:#}"))
        .iter()
        .map(|p| p["issued"].as_u64().unwrap())
        .collect();
    assert_eq!(parts.len(), 2, "{result:#}");
    assert!(parts.iter().all(|&n| n > 0), "a generator sent nothing");
    parts
}

#[test]
fn grpc_loads_over_a_fleet_are_exact_against_the_servers_counts() {
    let dir = ScratchDir::new("cli-fleet-grpc");
    let (generators, fleet) = loopback_fleet(&dir, 2);
    // One upstream a run: its counts are that run's alone.
    let upstream = || loadlab_upstream::Upstream::start_on_thread(Default::default()).unwrap();
    let server = upstream();
    // A copy the test removes after the coordinator read it would prove nothing more: the
    // generators never get a path (the wire test checks that); they run in other folders.
    let proto =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../loadlab-upstream/proto/upstream.proto");
    let proto = proto.to_str().unwrap();

    // Unary, closed loop: 4 connections (2 a generator) x 4 streams, 600 calls.
    let unary = run_fleet(
        &fleet,
        &dir.join("unary.json"),
        &[
            "--grpc",
            "loadlab.upstream.v1.Upstream/Call",
            "--proto",
            proto,
            "-c",
            "4",
            "--streams",
            "4",
            "-n",
            "600",
            server.grpc_url(),
        ],
    );
    let stats = server.stop();
    assert_eq!(requests(&unary, "completed"), 600, "{unary:#}");
    assert_eq!(requests(&unary, "failed"), 0, "{unary:#}");
    assert_eq!(stats.grpc_requests, 600);
    assert_eq!(stats.grpc_connections, 4, "each generator its own 2");
    assert_eq!(unary["grpc"]["kind"], "unary");
    assert_eq!(issued_per_part(&unary).iter().sum::<u64>(), 600);

    // Bidirectional, 5 messages a call back to back: a generator that dropped the stream's
    // settings would send one message a call (or a plain POST, counted by no method).
    let server = upstream();
    let bidi = run_fleet(
        &fleet,
        &dir.join("bidi.json"),
        &[
            "--grpc",
            "loadlab.upstream.v1.Upstream/Chat",
            "--proto",
            proto,
            "--grpc-messages",
            "5",
            "--grpc-message-rate",
            "max",
            "-c",
            "2",
            "--streams",
            "4",
            "-n",
            "200",
            server.grpc_url(),
        ],
    );
    let after = server.stop();
    assert_eq!(requests(&bidi, "completed"), 200, "{bidi:#}");
    assert_eq!(requests(&bidi, "failed"), 0, "{bidi:#}");
    assert_eq!(bidi["grpc"]["kind"], "bidi_streaming");
    assert_eq!(bidi["grpc"]["messages_per_call"], 5);
    assert_eq!(after.grpc_requests, 200);
    assert_eq!(
        after.grpc_messages_received, 1000,
        "5 messages a call, read by the server"
    );
    assert_eq!(messages(&bidi, "messages_sent"), 1000);
    assert_eq!(messages(&bidi, "messages_received"), 1000);
    assert_eq!(issued_per_part(&bidi).iter().sum::<u64>(), 200);
    drop(generators);
}

/// A scenario's gRPC steps over the fleet: the `.proto` beside the scenario is compiled on
/// the coordinator and its descriptors travel in the load (the generators run in folders of
/// their own, where `upstream.proto` names nothing). A capture from the first call's answer
/// goes out as the second's metadata; every call the generators complete is one the
/// upstream counted.
#[test]
fn a_scenarios_grpc_steps_with_proto_files_run_over_a_fleet() {
    let dir = ScratchDir::new("cli-fleet-grpc-scenario");
    let (generators, fleet) = loopback_fleet(&dir, 2);
    let server = loadlab_upstream::Upstream::start_on_thread(Default::default()).unwrap();
    let proto =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../loadlab-upstream/proto/upstream.proto");
    std::fs::copy(proto, dir.join("upstream.proto")).unwrap();
    let scenario = dir.join("calls.toml");
    std::fs::write(
        &scenario,
        format!(
            r#"name = "calls"
base_url = "{url}"
[grpc]
proto = ["upstream.proto"]
[[steps]]
name = "first"
grpc = "loadlab.upstream.v1.Upstream/Call"
[[steps.captures]]
var = "OK"
json = "$"
[[steps]]
name = "second"
grpc = "loadlab.upstream.v1.Upstream/Call"
metadata = {{ x-ok = "{{{{OK}}}}" }}
[[steps.checks]]
body_contains = "b2s="
"#,
            url = server.grpc_url()
        ),
    )
    .unwrap();
    let result = run_fleet(
        &fleet,
        &dir.join("scenario.json"),
        &[
            "--scenario",
            scenario.to_str().unwrap(),
            "-c",
            "4",
            "-n",
            "400",
        ],
    );
    let stats = server.stop();
    assert_eq!(requests(&result, "failed"), 0, "{result:#}");
    assert_eq!(requests(&result, "completed"), 400, "{result:#}");
    assert_eq!(stats.grpc_requests, 400);
    assert_eq!(stats.grpc_connections, 4, "one HTTP/2 connection per user");
    assert_eq!(issued_per_part(&result).iter().sum::<u64>(), 400);
    drop(generators);
}
