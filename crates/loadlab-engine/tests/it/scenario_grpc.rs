//! gRPC steps in scenarios, against servers that count what they receive: the mock
//! upstream's tonic service (every call it answered counted, the connections the users
//! held), and the testkit's scripted gRPC server (the bytes of every message, the last
//! call's metadata, and each status code's answer). A message templated from a feeder, a
//! capture from one answer's field sent as the next call's metadata, checks on the status
//! and the answer's fields; runs end by request count, so every count is exact.

use loadlab_engine::result::scenario::StepSummary;
use loadlab_engine::scenario::Scenario;
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{grpc_frame, GrpcAnswer, GrpcServer};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::common;

const SHOP: &str = r#"
syntax = "proto3";
package t.v1;
service Shop {
  rpc Login(Who) returns (Token);
  rpc Get(Who) returns (Token);
  rpc Watch(Who) returns (stream Token);
}
message Who { string name = 1; int32 age = 2; }
message Token { string token = 1; repeated int32 ids = 2; map<string, Who> friends = 3; }
"#;

/// A folder holding the scenario's files, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str, files: &[(&str, &str)]) -> Dir {
        let dir = std::env::temp_dir().join(format!(
            "loadlab-scenario-grpc-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (file, text) in files {
            std::fs::write(dir.join(file), text).unwrap();
        }
        Dir(dir)
    }

    fn scenario(&self, text: &str) -> Arc<Scenario> {
        Arc::new(Scenario::from_toml_str(text, &self.0).expect("valid scenario"))
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn spec(scenario: Arc<Scenario>, users: usize, requests: u64) -> RunSpec {
    RunSpec {
        scenario: Some(scenario),
        connections: Some(users),
        threads: Some(1),
        requests: Some(requests),
        timeout: Duration::from_secs(10),
        pm_qos: false,
        ..RunSpec::default()
    }
}

fn run(spec: RunSpec) -> RunResult {
    common::run_within(spec, Duration::from_secs(30))
}

fn step<'a>(r: &'a RunResult, name: &str) -> &'a StepSummary {
    let steps = &r.scenario.as_ref().expect("a scenario section").steps;
    steps.iter().find(|s| s.name == name).expect("the step")
}

/// `Token{token: "abc"}`, framed.
fn token_abc() -> GrpcAnswer {
    GrpcAnswer::ok_with_data(vec![grpc_frame(&[0x0a, 3, b'a', b'b', b'c'])])
}

#[test]
fn a_feeders_message_and_a_captured_field_as_metadata_reach_the_server_exactly() {
    let server = GrpcServer::start(vec![token_abc()]);
    let dir = Dir::new(
        "feed",
        &[("shop.proto", SHOP), ("users.csv", "USER\nann\nbo\n")],
    );
    let s = dir.scenario(&format!(
        r#"
name = "shop"
base_url = "{url}"
[grpc]
proto = ["shop.proto"]
[[feeders]]
file = "users.csv"
[[steps]]
name = "login"
grpc = "t.v1.Shop/Login"
message = {{ name = "{{{{USER}}}}", age = 7 }}
[[steps.captures]]
var = "TOKEN"
json = "$.token"
[[steps]]
name = "get"
grpc = "t.v1.Shop/Get"
metadata = {{ x-test = "{{{{TOKEN}}}}" }}
deadline = "5s"
[[steps.checks]]
grpc_status = "OK"
[[steps.checks]]
json = "$.ids"
equals = []
"#,
        url = server.url()
    ));
    let r = run(spec(s, 1, 20));
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, 20);
    let c = server.counters();
    assert_eq!(c.calls.load(Ordering::SeqCst), 20);
    // Login: Who{name, age: 7} framed: 5 + (2 + 3) + 2 for ann, 5 + (2 + 2) + 2 for bo,
    // five of each (one user walks the rows in turn); Get: Who{} framed, 5.
    assert_eq!(
        c.request_bytes.load(Ordering::SeqCst),
        5 * 12 + 5 * 11 + 10 * 5
    );
    let seen = c.last_headers.lock().unwrap().clone();
    assert!(seen.contains(&("x-test".into(), "abc".into())), "{seen:?}");
    assert!(seen.iter().any(|(k, _)| k == "grpc-timeout"), "{seen:?}");
    for name in ["login", "get"] {
        let s = step(&r, name);
        assert_eq!((s.issued, s.completed, s.failed), (10, 10, 0), "{name}");
    }
    assert_eq!(step(&r, "get").request, "gRPC t.v1.Shop/Get");
}

#[test]
fn a_status_is_its_codes_class_unless_a_check_expects_it() {
    let server = GrpcServer::start(vec![GrpcAnswer::trailers_only(5, "no%20such")]);
    let dir = Dir::new("status", &[("shop.proto", SHOP)]);
    let s = dir.scenario(&format!(
        r#"
name = "shop"
base_url = "{url}"
[grpc]
proto = ["shop.proto"]
[[steps]]
name = "expected"
grpc = "t.v1.Shop/Get"
[[steps.checks]]
grpc_status = ["OK", "NOT_FOUND"]
[[steps]]
name = "plain"
grpc = "t.v1.Shop/Get"
[[steps]]
name = "wrong"
grpc = "t.v1.Shop/Get"
[[steps.checks]]
grpc_status = 0
"#,
        url = server.url()
    ));
    // One user: the budget counts requests, so with two the steps' shares depend on where
    // each user was when it ran out (CI saw 11 of "expected"); one walks them in turn.
    let r = run(spec(s, 1, 30));
    assert_eq!(server.counters().calls.load(Ordering::SeqCst), 30);
    let expected = step(&r, "expected");
    assert_eq!((expected.completed, expected.failed), (10, 0));
    let plain = step(&r, "plain");
    assert_eq!(plain.failed, 10);
    assert_eq!(
        plain.errors.get("grpc_not_found"),
        Some(&10),
        "{:?}",
        plain.errors
    );
    let wrong = step(&r, "wrong");
    assert_eq!(
        wrong.errors.get("check_failed"),
        Some(&10),
        "{:?}",
        wrong.errors
    );
    assert!(
        wrong.checks[0].check.contains("grpc_status OK"),
        "{:?}",
        wrong.checks
    );
    let m = &r.measured;
    assert_eq!((m.requests.completed, m.requests.failed), (10, 20));
    let detail = m.error_details.get("grpc_not_found").expect("a detail");
    assert!(detail.contains("NOT_FOUND (5): no such"), "{detail}");
}

#[test]
fn calls_to_the_mock_upstream_equal_its_count_on_the_users_connections() {
    let server = loadlab_upstream::Upstream::start_on_thread(Default::default()).unwrap();
    let proto =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../loadlab-upstream/proto/upstream.proto");
    let dir = Dir::new("upstream", &[]);
    // The answer is a BytesValue, whose JSON is its value alone (base64): `$` is it.
    let s = dir.scenario(&format!(
        r#"
name = "upstream"
base_url = "{url}"
[grpc]
proto = ["{proto}"]
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
        url = server.grpc_url(),
        proto = proto.display()
    ));
    let r = run(spec(s, 2, 400));
    let up = server.stop();
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, 400);
    assert_eq!(up.grpc_requests, 400);
    assert_eq!(up.grpc_connections, 2, "one HTTP/2 connection per user");
    // The budget counts requests: a user may end between its two steps (199 and 201).
    let (first, second) = (step(&r, "first").completed, step(&r, "second").completed);
    assert_eq!(first + second, 400);
    assert!(
        (199..=200).contains(&second),
        "first {first}, second {second}"
    );
}

/// Streaming steps against the mock upstream, which counts every message each way: a
/// server stream's answers all read (the capture from the last), a client stream's three
/// templated messages (its one answer, the count it read, checked), a bidirectional
/// stream's four messages answered one each (the capture from answer 2). The step's
/// `messages` and the upstream's counts agree exactly.
#[test]
fn streaming_steps_count_every_message_as_the_upstream_does() {
    let server = loadlab_upstream::Upstream::start_on_thread(Default::default()).unwrap();
    let proto =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../loadlab-upstream/proto/upstream.proto");
    let dir = Dir::new("streams", &[]);
    let s = dir.scenario(&format!(
        r#"
name = "streams"
base_url = "{url}"
[variables]
N = "5"
[grpc]
proto = ["{proto}"]
[[steps]]
name = "watch"
grpc = "loadlab.upstream.v1.Upstream/Stream"
message = "{{{{N}}}}"
[[steps.captures]]
var = "LAST"
json = "$"
[[steps]]
name = "collect"
grpc = "loadlab.upstream.v1.Upstream/Collect"
message = [{{}}, {{}}, {{}}]
metadata = {{ x-last = "{{{{LAST}}}}" }}
[[steps.checks]]
json = "$"
equals = 3
[[steps]]
name = "chat"
grpc = "loadlab.upstream.v1.Upstream/Chat"
message = [{{}}, {{}}, {{}}, {{}}]
answer_index = 2
[[steps.checks]]
body_contains = "b2s="
"#,
        url = server.grpc_url(),
        proto = proto.display()
    ));
    let r = run(spec(s, 1, 30));
    let up = server.stop();
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, 30);
    assert_eq!(up.grpc_requests, 30);
    let messages = |name: &str| {
        let s = step(&r, name);
        assert_eq!((s.completed, s.failed), (10, 0), "{name}");
        let m = s.messages.expect("a streaming step's messages");
        (m.sent, m.received)
    };
    assert_eq!(messages("watch"), (10, 50));
    assert_eq!(messages("collect"), (30, 10));
    assert_eq!(messages("chat"), (40, 40));
    assert_eq!(up.grpc_messages_received, 10 + 30 + 40);
    assert_eq!(up.grpc_messages_sent, 50 + 10 + 40);
    // The timeline's intervals count the same (what `--metrics-out` sends).
    let each = r.timeline.iter().filter_map(|i| i.messages);
    let over_timeline = each.fold((0, 0), |(s, r), m| (s + m.sent, r + m.received));
    assert_eq!(over_timeline, (80, 100), "{:?}", r.timeline);
}

#[test]
fn a_schema_by_reflection_is_asked_once_before_the_run() {
    let v1 = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
    let files = crate::grpc::upstream_descriptors(true);
    let server = GrpcServer::start_reflecting(vec![GrpcAnswer::ok()], v1, files);
    let dir = Dir::new("reflect", &[]);
    let s = dir.scenario(&format!(
        "name = \"r\"\nbase_url = \"{}\"\n[grpc]\nreflect = true\n[[steps]]\nname = \"call\"\n\
         grpc = \"loadlab.upstream.v1.Upstream/Call\"\n[[steps.checks]]\nbody_contains = \"b2s=\"",
        server.url()
    ));
    let r = run(spec(s, 1, 20));
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, 20);
    // Reflection's own calls are not among the server's counted calls.
    assert_eq!(server.counters().calls.load(Ordering::SeqCst), 20);
}
