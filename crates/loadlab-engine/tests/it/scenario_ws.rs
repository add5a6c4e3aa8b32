//! WebSocket steps in scenarios, against the testkit's WebSocket server (tungstenite's server
//! side), which counts the upgrades, messages and goodbyes it sees: templated messages from a
//! feeder, a capture from a JSON answer used in the next step's URL and message, an echo told
//! from the server's pushes (or the next message taken, pushes and all), and a close frame
//! counted as a `--ws-mode` run counts it. Runs end by request count (each message is a
//! request), so every count is exact.

use loadlab_engine::result::scenario::StepSummary;
use loadlab_engine::scenario::Scenario;
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{WsBehavior, WsCounters, WsH2Behavior, WsH2Server, WsServer};
use std::sync::Arc;
use std::time::Duration;

use crate::common;

/// The scenario `text` (its feeder file beside it, in a folder of the test's own, removed
/// once the scenario has read it) as a closed loop of `users` ending after `requests`.
fn spec(name: &str, text: &str, users: usize, requests: u64) -> RunSpec {
    let dir =
        std::env::temp_dir().join(format!("loadlab-scenario-ws-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("users.csv"), "USER\nann\nbo\n").unwrap();
    let scenario = Scenario::from_toml_str(text, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    let scenario = scenario.expect("valid scenario");
    RunSpec {
        scenario: Some(Arc::new(scenario)),
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

#[test]
fn messages_from_a_feeder_and_a_capture_reach_the_server_exactly() {
    let server = WsServer::start(WsBehavior::Echo);
    let text = format!(
        r#"
name = "chat"
base_url = "http://{addr}"
[[feeders]]
file = "users.csv"
[[steps]]
name = "join"
ws = "/join"
headers = {{ X-User = "{{{{USER}}}}" }}
messages = ["hello", '{{"token": "t-{{{{USER}}}}"}}']
[[steps.captures]]
var = "TOKEN"
json = "$.token"
[[steps]]
name = "say"
ws = "ws://{addr}/say?t={{{{TOKEN}}}}"
binary = true
messages = ["{{{{TOKEN}}}}"]
[[steps.checks]]
body_contains = "t-"
"#,
        addr = server.addr()
    );
    let r = run(spec("feed", &text, 2, 30));
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, 30);
    let c = server.counters();
    assert_eq!(WsCounters::get(&c.messages), 30, "every message, once");
    // Every WebSocket opened said goodbye (a step cut by the end of the count too).
    let upgraded = WsCounters::get(&c.upgraded);
    assert_eq!(WsCounters::get(&c.closes), upgraded);
    let (join, say) = (step(&r, "join"), step(&r, "say"));
    assert_eq!(join.issued + say.issued, 30);
    assert_eq!(join.completed + say.completed, 30);
    assert!(say.completed >= 9, "{}", say.completed);
    assert_eq!(join.request, "WebSocket /join (2 messages)");
    assert!(join.request_latency_us.is_some(), "each message's own time");
}

#[test]
fn an_echo_is_told_from_pushes_and_next_takes_whatever_comes() {
    // A push ("pushed") before every echo.
    let server = WsServer::start(WsBehavior::EchoAndPush { every: 1 });
    let text = format!(
        r#"
name = "push"
base_url = "http://{}"
[[steps]]
name = "echo"
ws = "/"
messages = ["hello"]
[[steps.checks]]
body_contains = "hello"
[[steps]]
name = "next"
ws = "/"
answer = "next"
messages = ["hello"]
[[steps.checks]]
body_contains = "pushed"
"#,
        server.addr()
    );
    let r = run(spec("push", &text, 1, 10));
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(step(&r, "echo").completed, 5);
    assert_eq!(step(&r, "next").completed, 5);
    assert_eq!(WsCounters::get(&server.counters().messages), 10);
}

#[test]
fn a_close_frame_fails_the_message_as_ws_closed_with_the_servers_reason() {
    let server = WsServer::start(WsBehavior::CloseOnFirst(4000, "go\u{1b}away".into()));
    let text = format!(
        "name = \"c\"\nbase_url = \"http://{}\"\n[[steps]]\nname = \"a\"\nws = \"/\"\n\
         messages = [\"one\", \"two\"]",
        server.addr()
    );
    let r = run(spec("close", &text, 1, 4));
    let a = step(&r, "a");
    assert_eq!(
        (a.issued, a.failed),
        (4, 4),
        "the first message of each of four"
    );
    assert_eq!(a.errors.get("ws_closed"), Some(&4), "{:?}", a.errors);
    let detail = &r.measured.error_details["ws_closed"];
    assert!(
        detail.contains("4000") && detail.contains("go\\u{1b}away"),
        "{detail}"
    );
    assert_eq!(WsCounters::get(&server.counters().messages), 4);
}

/// With --http2 a step opens by RFC 8441 (below); over HTTP/3 loadlab has no WebSockets.
#[test]
fn a_websocket_step_is_refused_with_http3_and_an_http_url() {
    let text = "name = \"c\"\nbase_url = \"http://127.0.0.1:1\"\n[[steps]]\nname = \"a\"\n\
                ws = \"/\"\nmessages = [\"x\"]";
    let err = RunSpec {
        http3: true,
        ..spec("http3", text, 1, 1)
    }
    .validate()
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("WebSocket steps") && err.contains("--http3; drop it"),
        "{err}"
    );
    let http = "name = \"c\"\n[[steps]]\nname = \"a\"\nws = \"http://127.0.0.1:1/\"\n\
                messages = [\"x\"]";
    let err = Scenario::from_toml_str(http, std::path::Path::new("."))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("step `a`: ws:") && err.contains("not a WebSocket URL"),
        "{err}"
    );
}

/// An open loop: 20 iterations in the first second, then none; the run ends with the last
/// iteration, every message counted by the server, every WebSocket closed with a goodbye
/// (finished behind the user, awaited before the run ends).
#[test]
fn an_open_loop_sends_every_iterations_messages_and_says_every_goodbye() {
    let server = WsServer::start(WsBehavior::Echo);
    let text = format!(
        "name = \"o\"\nbase_url = \"http://{}\"\n\
         [[steps]]\nname = \"a\"\nws = \"/a\"\nmessages = [\"one\", \"two\"]\n\
         [[steps]]\nname = \"b\"\nws = \"/b\"\nmessages = [\"{{{{USER}}}}\"]\n\
         [[feeders]]\nfile = \"users.csv\"",
        server.addr()
    );
    let r = run(RunSpec {
        requests: None,
        connections: None,
        stages: Some("1s:20, 60s:0".into()),
        max_connections: Some(20),
        ..spec("open", &text, 1, 1)
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!((m.requests.completed, m.requests.not_sent), (60, 0));
    assert_eq!(r.scenario.as_ref().unwrap().iterations, 20);
    let c = server.counters();
    assert_eq!(WsCounters::get(&c.messages), 60);
    assert_eq!(WsCounters::get(&c.upgraded), 40);
    assert_eq!(WsCounters::get(&c.closes), 40, "every goodbye said");
}

/// In an `--http2` run over TLS (ALPN offering h2 only), a WebSocket step opens its
/// WebSocket by RFC 8441's extended CONNECT, as a `--ws-mode` run does, where an HTTP/1.1
/// upgrade would reach an h2 server that cannot take it: every message is echoed, counted
/// under the CONNECT's 200, and each WebSocket says goodbye.
#[test]
fn a_websocket_step_in_an_http2_run_opens_by_extended_connect() {
    let ca = loadlab_testkit::TestCa::new();
    let server = WsH2Server::start_tls(WsH2Behavior::default(), &ca);
    let text = format!(
        r#"
name = "h2"
base_url = "https://localhost:{}"
[[steps]]
name = "chat"
ws = "/chat"
headers = {{ X-User = "ann" }}
messages = ["hello", "again"]
[[steps.checks]]
body_contains = "again"
"#,
        server.addr().port()
    );
    let r = run(RunSpec {
        http2: true,
        tls: loadlab_engine::tls::TlsSpec {
            ca_pem: Some(ca.pem().into_bytes()),
            ..Default::default()
        },
        ..spec("h2", &text, 2, 20)
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, 20);
    let c = server.counters();
    assert_eq!(WsCounters::get(&c.messages), 20, "every message, once");
    // Every WebSocket opened said goodbye (a step cut by the end of the count too).
    let upgraded = WsCounters::get(&c.upgraded);
    assert!((10..=11).contains(&upgraded), "{upgraded}");
    assert_eq!(WsCounters::get(&c.closes), upgraded, "a goodbye from each");
    assert_eq!(m.status_codes.get("200"), Some(&20), "{:?}", m.status_codes);
    assert_eq!(step(&r, "chat").completed, 20);
}
