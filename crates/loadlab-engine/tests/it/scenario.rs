//! Scenario runs against loopback servers that count what they receive: captures carrying a
//! token between steps, checks, feeders, think times, pacing, the connection mix, pages, and
//! the open loop of iterations.
//! Runs end by request count (`-n`) where the assertion is about counts, so that a busy
//! machine changes how long a run takes, never what it asserts. Time-dependent logic is
//! asserted by bounds the code guarantees (a think time never shorter than asked; never more
//! requests than pacing slots), not by how fast the machine was.

use loadlab_engine::result::scenario::{ScenarioSummary, StepSummary};
use loadlab_engine::scenario::Scenario;
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{response, Answer, RouteServer, Seen};
use std::collections::HashSet;
use std::io::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common;

fn run(spec: RunSpec) -> RunResult {
    common::run_within(spec, Duration::from_secs(60))
}

fn scenario(text: &str) -> Arc<Scenario> {
    Arc::new(Scenario::from_toml_str(text, Path::new(".")).expect("valid scenario"))
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

fn json(status: u16, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The tokens a login server issued, and how many requests it rejected.
type Issued = Arc<Mutex<HashSet<String>>>;
type Rejected = Arc<Mutex<u64>>;

/// A login that hands out a new token each time, a profile that rejects any other token, and
/// a route that does not exist.
fn login_server() -> (RouteServer, Issued, Rejected) {
    let issued = Arc::new(Mutex::new(HashSet::new()));
    let rejected = Arc::new(Mutex::new(0u64));
    let (i, rj) = (issued.clone(), rejected.clone());
    let server = RouteServer::start(move |req: &Seen| -> Answer {
        match req.route() {
            "/login" => {
                let mut issued = i.lock().unwrap();
                let token = format!("tok-{}", issued.len());
                issued.insert(token.clone());
                json(200, &format!(r#"{{"token":"{token}","user":"ann"}}"#)).into()
            }
            "/me" => {
                let token = req
                    .header("authorization")
                    .and_then(|v| v.strip_prefix("Bearer "))
                    .unwrap_or("");
                if i.lock().unwrap().contains(token) {
                    json(200, r#"{"user":"ann","ok":true}"#).into()
                } else {
                    *rj.lock().unwrap() += 1;
                    json(401, r#"{"error":"bad token"}"#).into()
                }
            }
            _ => response(404, "no such page").into(),
        }
    });
    (server, issued, rejected)
}

fn login_scenario(base: &str, user_check: &str) -> String {
    format!(
        r#"
name = "login"
base_url = "{base}"

[[steps]]
name = "login"
method = "POST"
url = "/login"
body.json = {{ user = "ann" }}
[[steps.captures]]
var = "TOKEN"
json = "$.token"

[[steps]]
name = "me"
url = "/me"
headers = {{ Authorization = "Bearer {{{{TOKEN}}}}" }}
[[steps.checks]]
json = "$.user"
equals = "{user_check}"

[[steps]]
name = "missing"
url = "/not-found"
[[steps.checks]]
status = 404
"#
    )
}

#[test]
fn a_captured_token_is_sent_by_later_steps_and_a_404_check_is_not_a_failure() {
    let (server, _, rejected) = login_server();
    let base = server.url("");
    let r = run(spec(scenario(&login_scenario(&base, "ann")), 2, 60));
    assert_eq!(
        *rejected.lock().unwrap(),
        0,
        "every /me carried a token /login issued"
    );
    let (login, me, missing) = (step(&r, "login"), step(&r, "me"), step(&r, "missing"));
    assert_eq!(login.issued + me.issued + missing.issued, 60);
    assert_eq!(login.completed, server.counters().requests_to("/login"));
    assert_eq!(me.completed, server.counters().requests_to("/me"));
    assert_eq!(
        missing.completed,
        server.counters().requests_to("/not-found")
    );
    assert_eq!(missing.status_codes.get("404"), Some(&missing.completed));
    for s in [login, me, missing] {
        assert_eq!(s.failed, 0, "{}: {:?}", s.name, s.errors);
        assert!(s.latency_us.is_some());
    }
    assert!(r.measured.errors.is_empty(), "{:?}", r.measured.errors);
    assert_eq!(r.measured.requests.completed, 60);
    assert!(
        steps(&r).iterations >= 19,
        "{} iterations",
        steps(&r).iterations
    );
    assert!(steps(&r).iteration_us.is_some());
}

#[test]
fn a_failed_check_is_check_failed_with_the_step_and_the_check() {
    let (server, _, _) = login_server();
    let r = run(spec(
        scenario(&login_scenario(&server.url(""), "bob")),
        1,
        30,
    ));
    let me = step(&r, "me");
    assert!(me.issued >= 9);
    assert_eq!(me.failed, me.issued);
    assert_eq!(me.errors.get("check_failed"), Some(&me.issued));
    assert_eq!(me.checks[0].check, r#"$.user == "bob""#);
    assert_eq!(me.checks[0].failed, me.issued);
    assert_eq!(
        me.checks[0].first_failure.as_deref(),
        Some(r#"$.user is ann, expected "bob""#)
    );
    assert_eq!(r.measured.errors.get("check_failed"), Some(&me.issued));
    assert_eq!(step(&r, "login").failed, 0);
    assert_eq!(steps(&r).iterations_failed, steps(&r).iterations);
}

#[test]
fn a_capture_that_finds_nothing_and_a_bad_status_are_failures_of_their_step() {
    let server = RouteServer::start(|req: &Seen| match req.route() {
        "/login" => json(200, r#"{"nothing":1}"#).into(),
        _ => response(500, "down").into(),
    });
    let text = format!(
        r#"
name = "fails"
base_url = "{}"
[[steps]]
name = "login"
url = "/login"
[[steps.captures]]
var = "TOKEN"
json = "$.token"
[[steps]]
name = "down"
url = "/down"
"#,
        server.url("")
    );
    let r = run(spec(scenario(&text), 1, 10));
    let login = step(&r, "login");
    assert_eq!(login.failed, 5);
    assert_eq!(login.checks[0].check, "capture TOKEN");
    assert_eq!(
        login.checks[0].first_failure.as_deref(),
        Some("capture TOKEN: $.token not found")
    );
    let down = step(&r, "down");
    assert_eq!(down.errors.get("status"), Some(&5));
    assert_eq!(down.status_codes.get("500"), Some(&5));
    assert_eq!(r.measured.status_codes.get("500"), Some(&5));
}

#[test]
fn feeder_rows_are_taken_in_order_per_user() {
    let dir = tempdir("feeder");
    std::fs::write(dir.join("users.csv"), "USER\nann\nbob\ncid\n").unwrap();
    let server = RouteServer::start(|_: &Seen| response(200, "ok").into());
    let text = format!(
        r#"
name = "fed"
[[feeders]]
file = "users.csv"
[[steps]]
name = "hello"
method = "POST"
url = "{}"
body.form = {{ user = "{{{{USER}}}}" }}
"#,
        server.url("/hello")
    );
    let s = Arc::new(Scenario::from_toml_str(&text, &dir).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    run(spec(s, 1, 7));
    let bodies: Vec<String> = server
        .counters()
        .seen()
        .iter()
        .map(|s| String::from_utf8(s.body.clone()).unwrap())
        .collect();
    assert_eq!(
        bodies,
        ["user=ann", "user=bob", "user=cid", "user=ann", "user=bob", "user=cid", "user=ann"]
    );
}

#[test]
fn think_time_holds_every_gap_between_a_users_requests() {
    let server = RouteServer::start(|_: &Seen| response(200, "ok").into());
    let text = format!(
        r#"
name = "thinks"
base_url = "{}"
[defaults]
think = {{ fixed = "60ms" }}
[[steps]]
name = "a"
url = "/a"
[[steps]]
name = "b"
url = "/b"
think = {{ uniform = ["40ms", "50ms"] }}
"#,
        server.url("")
    );
    run(spec(scenario(&text), 2, 10));
    let gaps = server.counters().gaps();
    assert_eq!(gaps.len(), 8, "2 users x 5 requests on a connection each");
    // A response must reach the user before it thinks, so a gap is at least the think time.
    for g in gaps {
        assert!(g >= Duration::from_millis(40), "gap {g:?}");
    }
    let per_route = server.counters().per_route();
    assert_eq!(per_route["/a"] + per_route["/b"], 10);
    assert!(per_route["/a"] >= per_route["/b"], "{per_route:?}");
}

#[test]
fn pacing_never_sends_more_than_one_request_per_slot_and_reports_the_offered_rate() {
    let server = RouteServer::start(|_: &Seen| response(200, "ok").into());
    let s = scenario(&format!(
        "name = \"paced\"\n[[steps]]\nname = \"p\"\nurl = \"{}\"",
        server.url("/p")
    ));
    let r = run(RunSpec {
        requests: None,
        duration: Some(Duration::from_secs(1)),
        pace: Some(Duration::from_millis(200)),
        ..spec(s, 2, 1)
    });
    // Slots in the first second: 0, 200, ..., 800 ms for one user; 100, ..., 900 for the other.
    let sent = server.counters().requests();
    assert!((1..=10).contains(&sent), "{sent} requests");
    assert_eq!(steps(&r).offered_per_s, Some(10.0));
    assert_eq!(steps(&r).pace_s, Some(0.2));
    assert!(
        r.load.plan.contains("one request per 200ms"),
        "{}",
        r.load.plan
    );
}

#[test]
fn a_paced_single_url_run_is_paced_too() {
    let server = RouteServer::start(|_: &Seen| response(200, "ok").into());
    let r = run(RunSpec {
        url: server.url("/"),
        connections: Some(3),
        threads: Some(1),
        duration: Some(Duration::from_millis(500)),
        pace: Some(Duration::from_millis(250)),
        pm_qos: false,
        ..RunSpec::default()
    });
    // 3 users x slots at 0 and 250 ms (offset by a third of a period).
    assert!(server.counters().requests() <= 6);
    assert!(r.scenario.is_none(), "no scenario section for a single URL");
    assert!(r.measured.requests.completed <= server.counters().requests());
}

#[test]
fn a_share_of_requests_goes_on_new_connections() {
    let server = RouteServer::start(|_: &Seen| response(200, "ok").into());
    let s = scenario(&format!(
        "name = \"mix\"\n[[steps]]\nname = \"m\"\nurl = \"{}\"",
        server.url("/m")
    ));
    let r = run(RunSpec {
        new_connection_share: Some(0.3),
        ..spec(s.clone(), 1, 400)
    });
    let closes = server
        .counters()
        .seen()
        .iter()
        .filter(|s| s.header("connection") == Some("close"))
        .count() as u64;
    let accepted = server.counters().accepted();
    assert!(
        (80..=160).contains(&closes),
        "{closes} of 400 asked to close"
    );
    // Every close but a last one is followed by a new connection.
    assert!(
        accepted == closes || accepted == closes + 1,
        "{accepted} for {closes}"
    );
    assert_eq!(r.measured.connections_opened, accepted);
    assert!(
        r.measured.connect_us.is_some(),
        "connection setup is counted apart"
    );
    assert_eq!(steps(&r).new_connection_share, 0.3);

    let all_new = RouteServer::start(|_: &Seen| response(200, "ok").into());
    let s = scenario(&format!(
        "name = \"mix\"\n[[steps]]\nname = \"m\"\nurl = \"{}\"",
        all_new.url("/m")
    ));
    run(RunSpec {
        new_connection_share: Some(1.0),
        ..spec(s, 1, 20)
    });
    assert_eq!(all_new.counters().accepted(), 20);
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn a_page_of_19_requests_uses_at_most_6_connections_and_weighs_its_bytes() {
    let text_body = "body { color: black; } ".repeat(200);
    let compressed = gzip(text_body.as_bytes());
    let server = RouteServer::start(move |req: &Seen| {
        let bytes = if req.route().ends_with(".css") {
            let mut head = format!(
                "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
                compressed.len()
            )
            .into_bytes();
            head.extend_from_slice(&compressed);
            head
        } else {
            response(200, "<p>asset</p>")
        };
        // Slow enough that the page's connections overlap.
        Answer {
            bytes,
            delay: Duration::from_millis(20),
        }
    });
    let mut text = format!(
        "name = \"page\"\nbase_url = \"{}\"\n[[steps]]\nname = \"home\"\n",
        server.url("")
    );
    for k in 0..19 {
        let ext = if k % 4 == 0 { "css" } else { "js" };
        text.push_str(&format!("[[steps.requests]]\nurl = \"/asset{k}.{ext}\"\n"));
    }
    let r = run(spec(scenario(&text), 1, 19));
    let c = server.counters();
    assert_eq!(c.requests(), 19);
    assert!(
        c.max_open() <= 6,
        "{} connections open at once",
        c.max_open()
    );
    assert_eq!(c.accepted(), 6, "six connections, kept for the whole page");
    let home = step(&r, "home");
    assert_eq!(home.request, "page of 19 requests");
    assert_eq!((home.issued, home.completed, home.failed), (19, 19, 0));
    assert_eq!(
        home.latency_us.as_ref().map(|l| l.count),
        Some(1),
        "the page's time"
    );
    assert_eq!(home.request_latency_us.as_ref().map(|l| l.count), Some(19));
    // 19 requests over 6 connections take at least 4 rounds of 20 ms.
    let page = home.latency_us.as_ref().unwrap();
    assert!(page.min >= common::reported_floor_us(80_000.0), "{page:?}");
    assert_eq!(home.content_encodings.get("gzip"), Some(&5));
    assert_eq!(home.content_encodings.get("identity"), Some(&14));
    let b = &home.bytes;
    let gained = 5 * (text_body.len() as u64) - 5 * (gzip(text_body.as_bytes()).len() as u64);
    assert_eq!(
        b.decoded - b.received,
        gained,
        "decoded {} received {}",
        b.decoded,
        b.received
    );
}

#[test]
fn a_mix_runs_one_step_per_iteration_by_weight() {
    let server = RouteServer::start(|_: &Seen| response(200, "ok").into());
    let text = format!(
        r#"
name = "mix"
mode = "mix"
base_url = "{}"
[[steps]]
name = "often"
url = "/often"
weight = 4
[[steps]]
name = "rarely"
url = "/rarely"
"#,
        server.url("")
    );
    let r = run(spec(scenario(&text), 2, 500));
    let often = server.counters().requests_to("/often");
    assert_eq!(often + server.counters().requests_to("/rarely"), 500);
    assert!((340..=460).contains(&often), "{often} of 500");
    assert_eq!(steps(&r).iterations, 500);
}

#[test]
fn a_scenario_refuses_flags_that_it_replaces() {
    let s = scenario("name = \"s\"\n[[steps]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/\"");
    for (bad, setting) in [
        (
            RunSpec {
                headers: vec!["X-A: 1".into()],
                ..spec(s.clone(), 1, 1)
            },
            "scenario",
        ),
        (
            // A user's streams are its own (a page's requests); more users, not streams.
            RunSpec {
                http2: true,
                streams: 10,
                ..spec(s.clone(), 1, 1)
            },
            "streams",
        ),
        (
            RunSpec {
                stages: Some("1s:5".into()),
                closed_stages: true,
                requests: None,
                connections: None,
                ..spec(s.clone(), 1, 1)
            },
            "closed_stages",
        ),
        (
            RunSpec {
                rate: Some(10.0),
                pace: Some(Duration::from_secs(1)),
                requests: None,
                connections: None,
                ..spec(s.clone(), 1, 1)
            },
            "pace",
        ),
        (
            RunSpec {
                new_connection_share: Some(1.5),
                ..spec(s.clone(), 1, 1)
            },
            "new_connection_share",
        ),
        (
            RunSpec {
                pace: Some(Duration::ZERO),
                ..spec(s.clone(), 1, 1)
            },
            "pace",
        ),
    ] {
        let e = bad.validate().unwrap_err();
        assert_eq!(e.setting, setting, "{e}");
    }
}

/// An open loop of `rate` iterations/s for `secs`, at most `slots` running at once.
fn open_loop(scenario: Arc<Scenario>, rate: f64, secs: u64, slots: usize) -> RunResult {
    run(RunSpec {
        rate: Some(rate),
        duration: Some(Duration::from_secs(secs)),
        max_connections: Some(slots),
        requests: None,
        connections: None,
        warmup: Duration::ZERO,
        ..spec(scenario, 1, 1)
    })
}

#[test]
fn an_open_loop_starts_every_iteration_of_its_schedule_and_times_steps_from_when_due() {
    let server = RouteServer::start(|_: &Seen| response(200, "ok").into());
    let text = format!(
        r#"
name = "open"
base_url = "{}"
[[feeders]]
file = "users.csv"
[[steps]]
name = "a"
url = "/a?user={{{{USER}}}}"
think = {{ fixed = "300ms" }}
[[steps]]
name = "b"
url = "/b"
"#,
        server.url("")
    );
    let dir = tempdir("open-feeder");
    std::fs::write(dir.join("users.csv"), "USER\nann\nbob\ncid\n").unwrap();
    let s = Arc::new(Scenario::from_toml_str(&text, &dir).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    let r = open_loop(s, 40.0, 1, 100);
    // The schedule holds 40 iterations (uniform, one every 25 ms): each started (its first
    // step reached the server) or is counted as never started.
    let started = server.counters().requests_to("/a");
    assert_eq!(started + r.measured.requests.not_sent, 40, "{r:?}");
    assert!(started >= 20, "only {started} iterations started");
    // Each iteration is a new user with its own feeder row: iterations 0, 1, 2, ... of the
    // schedule take rows 0, 1, 2, 0, ... (in whatever order their requests arrive).
    let seen = server.counters().seen();
    let with = |user: &str| {
        let path = format!("/a?user={user}");
        seen.iter().filter(|s| s.path == path).count() as u64
    };
    let n = started;
    assert_eq!(
        [with("ann"), with("bob"), with("cid")],
        [n.div_ceil(3), (n + 1) / 3, n / 3]
    );
    // New users, but connections kept alive between them: far fewer than iterations.
    assert!(
        server.counters().accepted() < started / 2,
        "{} connections for {started} iterations",
        server.counters().accepted()
    );
    // Step b fell due 300 ms after a ended, and is timed from then: the think time is not
    // in its latency (a closed loop's user would not be timed through it either way).
    let b = step(&r, "b");
    assert!(b.completed > 0, "{b:?}");
    let b_p50 = b.latency_us.as_ref().unwrap().p50;
    assert!(
        b_p50 < 300_000.0,
        "b's median {b_p50} us includes the think time"
    );
    let sc = steps(&r);
    assert_eq!(sc.offered_iterations_per_s, Some(40.0));
    assert_eq!(sc.iteration_slots, Some(100));
    assert_eq!(sc.virtual_users, None);
    assert!(
        r.load.plan.contains("open loop of scenario iterations"),
        "{}",
        r.load.plan
    );
}

#[test]
fn in_an_open_loop_a_stall_is_not_hidden_and_waiting_iterations_carry_their_wait() {
    // Every request takes 100 ms; one iteration runs at a time; 20 iterations/s fall due.
    let server = RouteServer::start(|_: &Seen| Answer {
        bytes: response(200, "ok"),
        delay: Duration::from_millis(100),
    });
    let s = scenario(&format!(
        "name = \"stall\"\n[[steps]]\nname = \"a\"\nurl = \"{}\"",
        server.url("/a")
    ));
    let r = open_loop(s, 20.0, 1, 1);
    let a = step(&r, "a");
    // Iteration j is due at j x 50 ms but cannot start before j x 100 ms (each before it held
    // the one slot for 100 ms or more): timed from when it was due, it took j x 50 + 100 ms
    // or more. A loop that timed from the send would see about 100 ms every time.
    let n = a.completed;
    assert!(n >= 3, "only {n} iterations completed");
    let max_ms = a.latency_us.as_ref().unwrap().max / 1000.0;
    let floor_ms = (n - 1) as f64 * 50.0 + 100.0;
    assert!(
        max_ms >= floor_ms * 0.99,
        "{n} iterations, the last timed {max_ms} ms from when due (at least {floor_ms} ms)"
    );
    // At most 10 of the 20 could start; the rest are counted, and the verdict says why.
    let started = server.counters().requests_to("/a");
    assert!(started <= 10, "{started}");
    assert_eq!(started + r.measured.requests.not_sent, 20);
    assert!(
        r.verdicts
            .iter()
            .any(|v| v.contains("could not keep up") && v.contains("iterations were never started")),
        "{:?}",
        r.verdicts
    );
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("loadlab-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The longest think times and pace loadlab accepts (a week, as every duration) end with the
/// run, never panicking a worker (2^64-1 s did, issue 46 item 3; a worker's panic fails the
/// run, so `run` gets no result): an exponential draw is up to about 37 times its mean, a
/// closed loop sleeps no later than the run's end, an open loop dates its next step from it,
/// a pace moves its slots on by it.
#[test]
fn the_longest_think_times_and_pace_end_with_the_run() {
    let server = RouteServer::start(|_: &Seen| response(200, "ok").into());
    let week = Duration::from_secs(7 * 86_400);
    for think in ["fixed = \"7days\"", "exponential = \"7days\""] {
        let s = scenario(&format!(
            "name = \"t\"\n[[steps]]\nname = \"a\"\nurl = \"{}\"\nthink = {{ {think} }}\n\
             [[steps]]\nname = \"b\"\nurl = \"{}\"",
            server.url("/a"),
            server.url("/b")
        ));
        for rate in [None, Some(50.0)] {
            let r = run(RunSpec {
                requests: None,
                duration: Some(Duration::from_millis(300)),
                rate,
                connections: rate.is_none().then_some(2),
                ..spec(s.clone(), 2, 1)
            });
            assert!(r.measured.requests.completed > 0, "{think} rate {rate:?}");
        }
    }
    let r = run(RunSpec {
        url: server.url("/"),
        connections: Some(2),
        threads: Some(1),
        duration: Some(Duration::from_millis(300)),
        pace: Some(week),
        pm_qos: false,
        ..RunSpec::default()
    });
    assert!(r.measured.requests.completed > 0);
}
