//! Scenarios over HTTP/2 (h2 over TLS, h2c) and HTTP/3, against in-process servers that
//! answer by route and count what they see: a capture from a JSON body used in the next
//! step's path, a cookie set by one step and sent by the next, a failing check and a reset
//! stream counted on their steps, and a page whose requests go as concurrent streams on the
//! user's one connection (the server holds each page request until all of the page's are
//! open at once on a connection, so a page sent one request after another is seen). Closed
//! loops end by request count and open loops by the end of their schedule (a stage at rate 0
//! follows, and the run ends when the last iteration does), so that every count is exact
//! and held against the server's own, whatever the machine's speed.

use loadlab_engine::result::scenario::{ScenarioSummary, StepSummary};
use loadlab_engine::scenario::Scenario;
use loadlab_engine::tls::TlsSpec;
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{Seen, TestCa};
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common;
use crate::mux_server::{Handler, MuxServer, Reply};

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// The requests of one iteration of `SCENARIO`: login, item, profile, broken, and a page of
/// `PAGE` assets.
const PAGE: u64 = 4;
const PER_ITERATION: u64 = 4 + PAGE;

/// A login that issues a numbered id in its JSON body and a session cookie for it; an item
/// page that answers only the id's own session (403 otherwise, counted in `refused`); a
/// profile; a route whose streams are reset; and assets answered once the page's four are
/// open at once (the first gzip-compressed).
fn app(refused: Arc<AtomicU64>) -> Arc<Handler> {
    let issued = AtomicU64::new(0);
    let css = "asset: body { color: black; } ".repeat(50);
    let compressed = gzip(css.as_bytes());
    Arc::new(move |req: &Seen| {
        let json = |status: u16, body: String| Reply {
            status,
            headers: vec![("content-type", "application/json".into())],
            body: body.into_bytes(),
            ..Reply::default()
        };
        let route = req.route();
        if route == "/login" {
            let id = issued.fetch_add(1, Ordering::SeqCst);
            let mut reply = json(200, format!(r#"{{"id":{id},"user":"ann"}}"#));
            reply
                .headers
                .push(("set-cookie", format!("session=s-{id}; Path=/; HttpOnly")));
            reply
        } else if let Some(id) = route.strip_prefix("/items/") {
            let cookie = req.header("cookie").unwrap_or("");
            if !id.is_empty() && cookie == format!("session=s-{id}") {
                json(200, format!(r#"{{"id":{id}}}"#))
            } else {
                refused.fetch_add(1, Ordering::SeqCst);
                json(403, r#"{"error":"not your session"}"#.into())
            }
        } else if route == "/profile" {
            json(200, r#"{"user":"ann"}"#.into())
        } else if route == "/broken" {
            Reply {
                reset: true,
                ..Reply::default()
            }
        } else if route == "/asset0.css" {
            Reply {
                status: 200,
                headers: vec![("content-encoding", "gzip".into())],
                body: compressed.clone(),
                together: Some(PAGE),
                ..Reply::default()
            }
        } else {
            Reply {
                status: 200,
                body: format!("<p>asset {route}</p>").into_bytes(),
                together: Some(PAGE),
                ..Reply::default()
            }
        }
    })
}

fn scenario(base: &str) -> Arc<Scenario> {
    let mut text = format!(
        r#"
name = "mux"
base_url = "{base}"

[[steps]]
name = "login"
method = "POST"
url = "/login"
body.json = {{ user = "ann" }}
[[steps.captures]]
var = "ID"
json = "$.id"

[[steps]]
name = "item"
url = "/items/{{{{ID}}}}"

[[steps]]
name = "profile"
url = "/profile"
[[steps.checks]]
json = "$.user"
equals = "bob"

[[steps]]
name = "broken"
url = "/broken"

[[steps]]
name = "home"
[[steps.checks]]
body_contains = "asset"
"#
    );
    for k in 0..PAGE {
        let ext = if k == 0 { "css" } else { "js" };
        text.push_str(&format!("[[steps.requests]]\nurl = \"/asset{k}.{ext}\"\n"));
    }
    Arc::new(Scenario::from_toml_str(&text, Path::new(".")).expect("valid scenario"))
}

fn steps(r: &RunResult) -> &ScenarioSummary {
    r.scenario.as_ref().expect("a scenario section")
}

fn step<'a>(r: &'a RunResult, name: &str) -> &'a StepSummary {
    steps(r)
        .steps
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no step {name}"))
}

fn trusting(ca: &TestCa) -> TlsSpec {
    TlsSpec {
        ca_pem: Some(ca.pem().into_bytes()),
        ..TlsSpec::default()
    }
}

#[derive(Clone, Copy, Debug)]
enum Protocol {
    H2c,
    H2,
    H3,
}

/// A server of `app` for `protocol`, and the spec of a scenario run against it.
fn against(protocol: Protocol, ca: &TestCa, refused: Arc<AtomicU64>) -> (MuxServer, RunSpec) {
    let handler = app(refused);
    let server = match protocol {
        Protocol::H2c => MuxServer::h2(handler, None),
        Protocol::H2 => MuxServer::h2(handler, Some(ca)),
        Protocol::H3 => MuxServer::h3(handler, ca),
    };
    let https = !matches!(protocol, Protocol::H2c);
    let spec = RunSpec {
        scenario: Some(scenario(&server.url(https))),
        http2: !matches!(protocol, Protocol::H3),
        http3: matches!(protocol, Protocol::H3),
        tls: if https {
            trusting(ca)
        } else {
            TlsSpec::default()
        },
        threads: Some(1),
        timeout: Duration::from_secs(10),
        pm_qos: false,
        ..RunSpec::default()
    };
    (server, spec)
}

/// What every run of `SCENARIO` must show, whatever the protocol and the loop: each count
/// equal to the server's, the capture and the cookie carried (no 403), the failing check and
/// the reset counted on their own steps, the page's requests concurrent on one connection.
fn assert_counts(r: &RunResult, server: &MuxServer, refused: &AtomicU64, label: &str) {
    let c = &server.counts;
    let (login, item, profile, broken, home) = (
        step(r, "login"),
        step(r, "item"),
        step(r, "profile"),
        step(r, "broken"),
        step(r, "home"),
    );
    assert_eq!(
        refused.load(Ordering::SeqCst),
        0,
        "{label}: every item carried its id and cookie"
    );
    assert_eq!(
        (login.issued, login.completed),
        (c.requests_to("/login"), login.issued),
        "{label}"
    );
    assert_eq!(
        (item.issued, item.completed),
        (c.requests_to("/items/"), item.issued),
        "{label}"
    );
    // The server answered every profile; the check failed on each.
    assert_eq!(profile.issued, c.requests_to("/profile"), "{label}");
    assert_eq!(profile.failed, profile.issued, "{label}");
    assert_eq!(
        profile.errors.get("check_failed"),
        Some(&profile.issued),
        "{label}"
    );
    assert_eq!(profile.checks[0].failed, profile.issued, "{label}");
    assert_eq!(
        profile.checks[0].first_failure.as_deref(),
        Some(r#"$.user is ann, expected "bob""#),
        "{label}"
    );
    // Every stream the server reset is a stream_reset of its step.
    assert_eq!(broken.issued, c.requests_to("/broken"), "{label}");
    assert_eq!(
        broken.errors.get("stream_reset"),
        Some(&broken.issued),
        "{label}: {:?}",
        broken.errors
    );
    // The page: every request answered and its check passed (the gzip body decompressed:
    // its compressed bytes do not hold the word the check looks for).
    assert_eq!(home.request, format!("page of {PAGE} requests"));
    assert_eq!(
        (home.issued, home.completed, home.failed),
        (c.requests_to("/asset"), home.issued, 0),
        "{label}: {:?}",
        home.errors
    );
    assert_eq!(
        home.content_encodings.get("gzip"),
        Some(&c.requests_to("/asset0")),
        "{label}"
    );
    assert!(
        home.bytes.decoded > home.bytes.received,
        "{label}: {:?}",
        home.bytes
    );
    assert_eq!(
        home.request_latency_us.as_ref().map(|l| l.count),
        Some(home.issued),
        "{label}"
    );
    assert_eq!(
        home.latency_us.as_ref().map(|l| l.count),
        Some(home.issued / PAGE),
        "{label}"
    );
    // The run's own figures hold the same requests.
    let m = &r.measured;
    assert_eq!(m.requests.issued, c.requests(), "{label}");
    assert_eq!(
        m.requests.completed + m.requests.failed,
        c.requests(),
        "{label}: {:?}",
        m.requests
    );
    assert_eq!(
        m.requests.completed,
        login.completed + item.completed + home.completed,
        "{label}"
    );
    let mut errors = m.errors.clone();
    errors.retain(|_, n| *n > 0);
    assert_eq!(errors.len(), 2, "{label}: {errors:?} {:?}", m.error_details);
    assert_eq!(m.connections_opened, c.connections(), "{label}");
    // A page's requests went at once, as streams of one connection.
    assert_eq!(c.most_streams.load(Ordering::SeqCst), PAGE, "{label}");
    // The requests carried :authority, not the headers HTTP/1.1 alone has.
    let seen = c.seen.lock().unwrap();
    let login_seen = seen
        .iter()
        .find(|s| s.route() == "/login")
        .expect("a login");
    let authority = format!("localhost:{}", server.addr.port());
    assert_eq!(
        login_seen.header(":authority"),
        Some(authority.as_str()),
        "{label}"
    );
    assert_eq!(login_seen.header("host"), None, "{label}");
    assert_eq!(
        login_seen.header("content-type"),
        Some("application/json"),
        "{label}"
    );
    assert_eq!(login_seen.body, br#"{"user":"ann"}"#, "{label}");
}

/// A closed loop: 2 users, 3 iterations' worth of requests, each user on one connection.
fn closed_loop(protocol: Protocol) {
    let ca = TestCa::new();
    let refused = Arc::new(AtomicU64::new(0));
    let (server, spec) = against(protocol, &ca, refused.clone());
    let requests = 3 * PER_ITERATION;
    let r = common::run_within(
        RunSpec {
            connections: Some(2),
            requests: Some(requests),
            ..spec
        },
        Duration::from_secs(60),
    );
    let label = format!("{protocol:?} closed loop");
    assert_counts(&r, &server, &refused, &label);
    assert_eq!(server.counts.requests(), requests, "{label}");
    assert_eq!(
        server.counts.connections(),
        2,
        "{label}: a connection per user"
    );
    assert_eq!(steps(&r).virtual_users, Some(2), "{label}");
}

/// An open loop: 8 iterations in the first second, then none; the run ends with the last
/// iteration, every one of them whole.
fn open_loop(protocol: Protocol) {
    let ca = TestCa::new();
    let refused = Arc::new(AtomicU64::new(0));
    let (server, spec) = against(protocol, &ca, refused.clone());
    let r = common::run_within(
        RunSpec {
            stages: Some("1s:8, 60s:0".into()),
            max_connections: Some(8),
            warmup: Duration::ZERO,
            ..spec
        },
        Duration::from_secs(60),
    );
    let label = format!("{protocol:?} open loop");
    assert_counts(&r, &server, &refused, &label);
    assert_eq!(r.measured.requests.not_sent, 0, "{label}");
    assert_eq!(step(&r, "login").issued, 8, "{label}");
    assert_eq!(server.counts.requests(), 8 * PER_ITERATION, "{label}");
    assert_eq!(steps(&r).iterations, 8, "{label}");
    // Iterations are new users on the thread's kept connections: at most one each.
    assert!(server.counts.connections() <= 8, "{label}");
}

#[test]
fn a_scenario_over_h2_with_tls_in_a_closed_loop() {
    closed_loop(Protocol::H2);
}

#[test]
fn a_scenario_over_h2c_in_an_open_loop() {
    open_loop(Protocol::H2c);
}

#[test]
fn a_scenario_over_http3_in_a_closed_loop() {
    closed_loop(Protocol::H3);
}

#[test]
fn a_scenario_over_http3_in_an_open_loop() {
    open_loop(Protocol::H3);
}

/// `--new-connection-share 1`: every request ends its connection once its step is over (a
/// page's streams share one), so each step of each iteration opens one.
#[test]
fn every_step_on_a_new_connection_over_h2_and_http3() {
    for protocol in [Protocol::H2c, Protocol::H3] {
        let ca = TestCa::new();
        let refused = Arc::new(AtomicU64::new(0));
        let (server, spec) = against(protocol, &ca, refused.clone());
        let r = common::run_within(
            RunSpec {
                connections: Some(1),
                requests: Some(2 * PER_ITERATION),
                new_connection_share: Some(1.0),
                ..spec
            },
            Duration::from_secs(60),
        );
        let label = format!("{protocol:?}, a new connection per step");
        assert_counts(&r, &server, &refused, &label);
        // Five steps an iteration: four requests and a page.
        assert_eq!(server.counts.connections(), 2 * 5, "{label}");
    }
}

/// `--http3-0rtt`: with a new connection each step, every connection after the first tickets
/// arrived resumes and sends the step's requests (a page's four too) as early data, which the
/// server takes; each counted once, as over 1-RTT.
#[test]
fn a_scenario_over_http3_sends_early_data_on_resumed_connections() {
    let ca = TestCa::new();
    let refused = Arc::new(AtomicU64::new(0));
    let server = MuxServer::h3_0rtt(app(refused.clone()), &ca);
    let r = common::run_within(
        RunSpec {
            scenario: Some(scenario(&server.url(true))),
            http3: true,
            http3_0rtt: true,
            tls: trusting(&ca),
            connections: Some(1),
            threads: Some(1),
            requests: Some(2 * PER_ITERATION),
            new_connection_share: Some(1.0),
            pm_qos: false,
            ..RunSpec::default()
        },
        Duration::from_secs(60),
    );
    assert_counts(&r, &server, &refused, "H3 0-RTT");
    assert_eq!(server.counts.connections(), 2 * 5);
    let early = r.measured.early_data.as_ref().expect("requests went early");
    // The first connection had no ticket to resume; each later one did.
    assert_eq!(early.connections, 2 * 5 - 1, "{early:?}");
    assert_eq!(early.connections_accepted, early.connections, "{early:?}");
    assert_eq!(early.requests, early.requests_accepted, "{early:?}");
    assert!(early.requests >= early.connections, "{early:?}");
    assert_eq!(r.measured.retried, 0);
}

/// A request the server refused unprocessed is sent again on the user's connection: counted
/// once as issued and completed, and in `retried` as often as it was refused.
#[test]
fn a_refused_stream_is_sent_again_and_counted_as_retried() {
    for protocol in [Protocol::H2c, Protocol::H3] {
        let ca = TestCa::new();
        let refused = Arc::new(AtomicU64::new(0));
        let (seen, r) = (AtomicU64::new(0), refused.clone());
        // Every other request is refused.
        let handler: Arc<Handler> = Arc::new(move |_: &Seen| {
            if seen.fetch_add(1, Ordering::SeqCst) % 2 == 0 {
                r.fetch_add(1, Ordering::SeqCst);
                Reply {
                    refuse: true,
                    ..Reply::default()
                }
            } else {
                Reply {
                    status: 200,
                    body: b"ok".to_vec(),
                    ..Reply::default()
                }
            }
        });
        let server = match protocol {
            Protocol::H3 => MuxServer::h3(handler, &ca),
            _ => MuxServer::h2(handler, None),
        };
        let https = matches!(protocol, Protocol::H3);
        let text = format!(
            "name = \"flaky\"\n[[steps]]\nname = \"f\"\nurl = \"{}/f\"",
            server.url(https)
        );
        let r = common::run_within(
            RunSpec {
                scenario: Some(Arc::new(
                    Scenario::from_toml_str(&text, Path::new(".")).unwrap(),
                )),
                http2: !https,
                http3: https,
                tls: if https {
                    trusting(&ca)
                } else {
                    TlsSpec::default()
                },
                connections: Some(1),
                threads: Some(1),
                requests: Some(10),
                pm_qos: false,
                ..RunSpec::default()
            },
            Duration::from_secs(60),
        );
        let label = format!("{protocol:?}");
        let f = step(&r, "f");
        assert_eq!(
            (f.issued, f.completed, f.failed),
            (10, 10, 0),
            "{label}: {:?}",
            f.errors
        );
        let refused = refused.load(Ordering::SeqCst);
        assert_eq!(refused, 10, "{label}");
        assert_eq!(server.counts.requests(), 10 + refused, "{label}");
        let m = &r.measured;
        assert_eq!(
            (m.requests.issued, m.requests.completed, m.retried),
            (10, 10, refused),
            "{label}: {:?}",
            m.requests
        );
        assert_eq!(
            server.counts.connections(),
            1,
            "{label}: only the stream was refused"
        );
    }
}

/// `--pace` with a single URL (a one-step scenario) over HTTP/3: each user sends on its own
/// slots, never sooner, on one connection of its own.
#[test]
fn a_paced_single_url_runs_over_http3() {
    let ca = TestCa::new();
    let handler: Arc<Handler> = Arc::new(|_: &Seen| Reply {
        status: 200,
        body: b"ok".to_vec(),
        ..Reply::default()
    });
    let server = MuxServer::h3(handler, &ca);
    let r = common::run_within(
        RunSpec {
            url: format!("{}/", server.url(true)),
            http3: true,
            tls: trusting(&ca),
            connections: Some(2),
            threads: Some(1),
            requests: Some(4),
            pace: Some(Duration::from_millis(100)),
            pm_qos: false,
            ..RunSpec::default()
        },
        Duration::from_secs(60),
    );
    assert_eq!(server.counts.requests(), 4);
    assert_eq!(r.measured.requests.completed, 4);
    // Slots 0 and 100 ms for one user, 50 and 150 ms for the other: the last request cannot
    // go before 150 ms (a busy machine only makes it later).
    assert!(r.measured.duration_s >= 0.15, "{} s", r.measured.duration_s);
    assert!(r.scenario.is_none(), "no scenario section for a single URL");
    assert!(
        r.load.plan.contains("one request per 100ms"),
        "{}",
        r.load.plan
    );
    assert_eq!(server.counts.connections(), 2, "a connection per user");
}

/// What `--no-keepalive --http2`'s refusal offers instead: `--new-connection-share 1` on a
/// single URL sends each request on a connection of its own over HTTP/2.
#[test]
fn a_new_connection_per_request_over_h2c_on_a_single_url() {
    let handler: Arc<Handler> = Arc::new(|_: &Seen| Reply {
        status: 200,
        body: b"ok".to_vec(),
        ..Reply::default()
    });
    let server = MuxServer::h2(handler, None);
    let spec = RunSpec {
        url: format!("{}/", server.url(false)),
        http2: true,
        connections: Some(1),
        threads: Some(1),
        requests: Some(5),
        pm_qos: false,
        ..RunSpec::default()
    };
    let refused = RunSpec {
        keepalive: false,
        ..spec.clone()
    };
    let e = refused.validate().unwrap_err();
    assert!(e.message.contains("--new-connection-share 1"), "{e}");
    let r = common::run_within(
        RunSpec {
            new_connection_share: Some(1.0),
            ..spec
        },
        Duration::from_secs(60),
    );
    assert_eq!(r.measured.requests.completed, 5);
    assert_eq!(server.counts.requests(), 5);
    assert_eq!(server.counts.connections(), 5);
    assert_eq!(r.measured.connections_opened, 5);
}
