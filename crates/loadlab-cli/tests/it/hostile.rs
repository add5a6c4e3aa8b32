//! Hostile servers and hostile command lines (issue 15), through the `loadlab` binary as a
//! user runs it. Each test starts one scripted server that misbehaves in one way (the
//! testkit's [`Script`] for HTTP/1.1, [`H2Script`] for raw HTTP/2 frames), runs loadlab
//! against it for a bounded time, and asserts what loadlab decided: the failure class and its
//! detail, the counts (against the server's own where they can be compared), the exit code,
//! and that the result file is valid against the schema. A run that does not end is killed
//! by a watchdog and fails the test: "no hang" is asserted, not hoped for.
//!
//! Counts are compared with what the code decides, never with how fast the machine was: a
//! slow machine sends fewer requests, but every one is accounted for in the same classes.

use crate::common;
use common::loadlab;

use common::assert_valid;
use loadlab_probe::procfs::{alive, tree};
use loadlab_testkit::h2frames::{code, frame, setting, On};
use loadlab_testkit::{
    closed_port, random_bytes, H2FrameServer, H2Script, H2Step, Script, ScriptedServer,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// The longest any run here may take before it counts as hung (each asks for at most 2 s).
const WATCHDOG: Duration = Duration::from_secs(60);

/// What one run of loadlab left: its exit code, its result file (checked against the
/// schema) and its standard error.
struct Ran {
    code: Option<i32>,
    json: Value,
    stderr: String,
}

impl Ran {
    fn requests(&self) -> (u64, u64, u64) {
        let r = &self.json["measured"]["requests"];
        let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("requests.{k}: {r}"));
        (n("issued"), n("completed"), n("failed"))
    }

    fn errors(&self) -> BTreeMap<String, u64> {
        serde_json::from_value(self.json["measured"]["errors"].clone()).unwrap()
    }

    fn detail(&self, class: &str) -> String {
        self.json["measured"]["error_details"][class]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    fn status(&self, code: &str) -> u64 {
        self.json["measured"]["status_codes"][code]
            .as_u64()
            .unwrap_or(0)
    }

    fn in_flight_at_end(&self) -> u64 {
        self.json["in_flight_at_end"].as_u64().unwrap()
    }

    fn lines(&self, key: &str) -> Vec<String> {
        serde_json::from_value(self.json[key].clone()).unwrap()
    }

    fn says(&self, key: &str, needle: &str) -> bool {
        self.lines(key).iter().any(|l| l.contains(needle))
    }

    /// Every request issued is completed, failed, or still in flight when the run ended.
    fn accounts_for_every_request(&self) {
        let (issued, completed, failed) = self.requests();
        assert_eq!(
            issued,
            completed + failed + self.in_flight_at_end(),
            "{}",
            self.json["measured"]["requests"]
        );
    }
}

/// Where a run's result goes (removed once read back).
fn result_path(name: &str) -> PathBuf {
    let name: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    std::env::temp_dir().join(format!(
        "loadlab-hostile-{}-{name}.json",
        std::process::id()
    ))
}

/// Waits for `child` within the watchdog; a run still going then is killed and fails.
fn finish(mut child: Child, what: &str) -> (Option<i32>, String) {
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > WATCHDOG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: loadlab hung (still running after {WATCHDOG:?})");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    (out.status.code(), stderr)
}

/// Runs `loadlab run -q --json FILE ARGS URL` and reads the result back.
fn run(name: &str, args: &[&str], url: &str) -> Ran {
    let path = result_path(name);
    let _ = std::fs::remove_file(&path);
    let child = loadlab()
        .arg("run")
        .args(["-q", "--json", path.to_str().unwrap()])
        .args(args)
        .arg(url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (code, stderr) = finish(child, name);
    assert!(path.exists(), "{name}: no result written; {stderr}");
    let json = read_result(&path);
    Ran { code, json, stderr }
}

/// A result file, checked against the schema, then removed.
fn read_result(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no result at {}: {e}", path.display()));
    let _ = std::fs::remove_file(path);
    let json: Value = serde_json::from_str(&text).expect("the result is JSON");
    assert_valid(&json);
    json
}

fn classes(ran: &Ran) -> Vec<String> {
    ran.errors().into_keys().collect()
}

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

fn status_response(code: u16) -> Vec<u8> {
    format!("HTTP/1.1 {code} X\r\nContent-Length: 2\r\n\r\nxx").into_bytes()
}

// ---------------------------------------------------------------------------------------
// HTTP/1.1

/// Case 5: bytes past Content-Length are the server's framing error, their own class; the
/// connection is not reused, and nothing is counted a success.
#[test]
fn extra_bytes_past_content_length_are_their_own_class() {
    let server = ScriptedServer::start(Script::answer_every(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA".to_vec(),
    ));
    let ran = run("extra-bytes", &["-c", "2", "-d", "500ms"], &server.url("/"));
    let (_, completed, failed) = ran.requests();
    assert_eq!(completed, 0);
    assert!(failed > 0);
    assert_eq!(classes(&ran), ["extra_bytes"]);
    assert_eq!(ran.errors()["extra_bytes"], failed);
    ran.accounts_for_every_request();
    // Each response with extra bytes ended its connection: one request per connection.
    let (accepted, read) = (server.counters().accepted(), server.counters().requests());
    assert!(
        read <= accepted,
        "{read} requests on {accepted} connections"
    );
    assert!((failed..=failed + 2).contains(&read), "{failed} {read}");
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(ran.says("verdicts", "nothing succeeded"));
}

/// Case 5: a `Connection: close` the server does not honour costs a wait, bounded and
/// counted in the result, with a warning.
#[test]
fn a_close_the_server_does_not_honour_is_waited_for_visibly() {
    let server = ScriptedServer::start(
        Script::new()
            .read_request()
            .write(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok".to_vec())
            .hold(),
    );
    let ran = run("unkept-close", &["-c", "2", "-d", "1s"], &server.url("/"));
    let (_, completed, failed) = ran.requests();
    assert_eq!(failed, 0, "{:?}", ran.errors());
    assert!(completed > 0);
    let m = &ran.json["measured"];
    let timeouts = m["close_wait_timeouts"].as_u64().unwrap_or(0);
    // Every close was waited for, but the last of each connection, cut by the run's end.
    assert!(
        timeouts > 0 && timeouts <= completed && timeouts + 2 >= completed,
        "{timeouts} waits for {completed} responses"
    );
    assert!(m["close_wait_s"].as_f64().unwrap() > 0.0);
    // Each wait ended with loadlab closing, and a new connection for the next request.
    assert!(server.counters().accepted() >= completed);
    assert!(ran.says("warnings", "without closing"));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
}

/// Bytes that are not HTTP: `malformed_response`, each on a connection of its own.
#[test]
fn random_bytes_are_a_malformed_response() {
    let server = ScriptedServer::start(
        Script::new()
            .read_request()
            .write(random_bytes(15, 512))
            .close(),
    );
    let ran = run("random-h1", &["-c", "2", "-d", "500ms"], &server.url("/"));
    let (_, completed, failed) = ran.requests();
    assert_eq!(completed, 0);
    assert_eq!(classes(&ran), ["malformed_response"]);
    assert!(failed > 0 && failed <= server.counters().requests());
    ran.accounts_for_every_request();
    assert_eq!(ran.code, Some(2));
}

/// A reset instead of an answer, and a body cut short by a close.
#[test]
fn resets_and_bodies_cut_short_are_classified() {
    let reset = ScriptedServer::start(Script::new().read_request().reset());
    let ran = run("reset", &["-c", "2", "-d", "500ms"], &reset.url("/"));
    assert_eq!(classes(&ran), ["connection_reset"]);
    assert_eq!(ran.requests().1, 0);
    ran.accounts_for_every_request();
    assert_eq!(ran.code, Some(2));

    let cut = ScriptedServer::start(
        Script::new()
            .read_request()
            .write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789".to_vec())
            .close(),
    );
    let ran = run("cut-short", &["-c", "2", "-d", "500ms"], &cut.url("/"));
    assert_eq!(classes(&ran), ["closed_before_response"]);
    ran.accounts_for_every_request();
    assert_eq!(ran.code, Some(2));
}

/// Case 7: a port that refuses every connection. Connects back off (about a dozen tries a
/// second per connection, not tens of thousands), and a run where nothing succeeded says so
/// and exits 2.
#[test]
fn refused_connections_back_off_and_the_run_fails_plainly() {
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let ran = run("refused", &["-c", "5", "-d", "1s"], &url);
    let (_, completed, failed) = ran.requests();
    assert_eq!(completed, 0);
    assert_eq!(classes(&ran), ["connect_refused"]);
    // A refused connect counts as a request issued and failed.
    ran.accounts_for_every_request();
    // 10+20+40+80 ms, then 100 ms waits: at most 14 tries per connection in a second.
    assert!(failed > 0 && failed <= 5 * 16, "{failed} refused connects");
    assert_eq!(ran.code, Some(2));
    assert!(ran.says("verdicts", "nothing succeeded"));
}

/// Issue 46, case 1: a server that never lets a connection finish opening (its listener
/// never accepts, so a TLS ClientHello is never answered) within a run shorter than
/// --connect-timeout. Nothing was sent and nothing succeeded: the requests that waited are
/// due and never sent, the result says so, and loadlab exits 2 (it said "0 of 0 issued",
/// exit 0).
#[test]
fn a_tls_handshake_never_answered_is_a_failed_run() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://127.0.0.1:{}/", silent.local_addr().unwrap().port());
    let ran = run(
        "tls-silent",
        &["-c", "2", "-d", "1s", "--connect-timeout", "10m"],
        &url,
    );
    assert_eq!(ran.requests(), (0, 0, 0));
    assert_eq!(ran.json["measured"]["requests"]["not_sent"], 2);
    assert!(ran.says("verdicts", "nothing succeeded"), "{}", ran.json);
    assert!(ran.says("warnings", "still opening"), "{}", ran.json);
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    drop(silent);
}

/// Issue 51, item 3: HTTP/3 against a UDP port nothing listens on, in a run shorter than
/// --connect-timeout, was "0 of 0 issued", no error, exit 0. As over TCP and TLS, the
/// requests that waited for the handshakes are due and never sent, and the run failed.
#[test]
fn an_http3_handshake_never_answered_is_a_failed_run() {
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .unwrap()
        .port();
    let url = format!("https://127.0.0.1:{port}/");
    let ran = run(
        "h3-nothing",
        &["--http3", "-c", "2", "-d", "1s", "--connect-timeout", "10m"],
        &url,
    );
    assert_eq!(ran.requests(), (0, 0, 0));
    assert_eq!(ran.json["measured"]["requests"]["not_sent"], 2);
    assert!(ran.says("verdicts", "nothing succeeded"), "{}", ran.json);
    assert!(ran.says("warnings", "over QUIC"), "{}", ran.json);
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
}

/// Issue 51, item 4: an open loop against a server that never lets a connection open ran
/// far past its end (HTTP/2 and HTTP/3 tried one connection at a time, a --connect-timeout
/// each: 50 s for -d 2s; HTTP/1.1 15.6 s) and blamed busy connections. Each protocol ends
/// within its duration plus one connect timeout, and says no connection opened.
#[test]
fn an_open_loop_that_never_connects_ends_on_time_and_says_why() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp = format!("https://127.0.0.1:{}/", silent.local_addr().unwrap().port());
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let quic = format!("https://127.0.0.1:{}/", udp.local_addr().unwrap().port());
    let load = ["--rate", "10", "-d", "1s", "--connect-timeout", "1s"];
    for (name, protocol, url) in [
        ("open-h1", None, &tcp),
        ("open-h2", Some("--http2"), &tcp),
        ("open-h3", Some("--http3"), &quic),
    ] {
        let args: Vec<&str> = load.iter().copied().chain(protocol).collect();
        let began = Instant::now();
        let ran = run(name, &args, url);
        // 1 s of run and 1 s of connect timeout, and the process's start and end.
        let took = began.elapsed();
        assert!(took < Duration::from_secs(4), "{name}: {took:?}");
        assert!(
            ran.says("verdicts", "no connection to the target opened"),
            "{name}: {}",
            ran.json["verdicts"]
        );
        assert!(
            !ran.says("verdicts", "every connection was busy"),
            "{name}: {}",
            ran.json["verdicts"]
        );
        assert_eq!(ran.code, Some(2), "{name}: {}", ran.stderr);
    }
    drop((silent, udp));
}

/// Case 9: a server that reads requests and never answers. Nothing failed and nothing
/// completed: the result says the server stalled, not that every request failed.
#[test]
fn a_stalled_server_is_named_as_such() {
    let server = ScriptedServer::start(Script::new().read_request().hold());
    let ran = run("stall", &["-c", "2", "-d", "500ms"], &server.url("/"));
    assert_eq!(ran.requests(), (2, 0, 0));
    assert_eq!(ran.in_flight_at_end(), 2);
    assert!(ran.says("warnings", "still waiting for its response"));
    assert!(!ran.says("warnings", "every measured request failed"));
    assert_eq!(ran.code, Some(2));
}

/// Case 9: a body dripping in when the run ends. The response is abandoned in flight, but
/// the bytes it brought count as received.
#[test]
fn a_dripping_body_counts_its_bytes() {
    let mut response = b"HTTP/1.1 200 OK\r\nContent-Length: 10000000000\r\n\r\n".to_vec();
    let head = response.len();
    response.extend(std::iter::repeat_n(b'a', 100_000));
    // The head and 1,000 bytes at once, then 1,000 bytes every 20 ms.
    let server = ScriptedServer::start(Script::new().read_request().drip(
        response,
        head + 1_000,
        Duration::from_millis(20),
    ));
    let ran = run("drip", &["-c", "1", "-d", "1s"], &server.url("/"));
    assert_eq!(ran.requests(), (1, 0, 0));
    assert_eq!(ran.in_flight_at_end(), 1);
    let received = ran.json["measured"]["bytes"]["received"].as_u64().unwrap();
    assert!(received >= (head + 1_000) as u64, "received {received} B");
    assert!(ran.says("warnings", "still waiting for its response"));
}

/// Case 10: three responses in four are 5xx. The verdict says so, and a gate on errors fails
/// the run.
#[test]
fn a_majority_of_server_errors_is_a_verdict_and_fails_a_gate() {
    let server = ScriptedServer::start(
        Script::new()
            .read_request()
            .write_nth(vec![
                status_response(503),
                status_response(500),
                status_response(503),
                OK.to_vec(),
            ])
            .repeat(),
    );
    let ran = run("5xx", &["-c", "2", "-d", "500ms"], &server.url("/"));
    let (_, completed, failed) = ran.requests();
    assert_eq!(failed, 0);
    let (s200, s500, s503) = (ran.status("200"), ran.status("500"), ran.status("503"));
    assert_eq!(s200 + s500 + s503, completed);
    // The server wrote every fourth response 200; at most the two in flight were unread.
    assert!(s200 * 4 + 8 >= completed && s200 * 4 <= completed + 8);
    assert!(ran.says("verdicts", "most responses were server errors"));
    assert_eq!(ran.code, Some(0), "no gate: the run itself completed");
    let gated = run(
        "5xx-gated",
        &["-c", "2", "-d", "300ms", "--fail-if", "errors > 50%"],
        &server.url("/"),
    );
    assert_eq!(gated.code, Some(1), "{}", gated.stderr);
}

/// Case 8: an open loop stopped by Ctrl-C (or SIGTERM) is judged on the time that ran: the
/// rest of its schedule is not "never sent" and the target, which kept the rate, is not
/// blamed.
#[test]
fn a_stopped_open_loop_blames_no_one() {
    let server = ScriptedServer::start(Script::answer_every(OK.to_vec()));
    let path = result_path("stopped-open-loop");
    let child = loadlab()
        .args(["run", "-q", "--json", path.to_str().unwrap()])
        .args(["--rate", "200", "-d", "60s", &server.url("/")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while server.counters().writes() < 100 {
        assert!(started.elapsed() < WATCHDOG, "the run never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling the child this test started, by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let (code, stderr) = finish(child, "stopped open loop");
    assert_eq!(code, Some(143), "SIGTERM: 128 + 15; {stderr}");
    let json = read_result(&path);
    assert_eq!(json["interrupted"], true);
    // Due between the signal and the thread seeing it: one per 5 ms, so 200 would be a
    // second's stall of a busy machine; the minute's rest would be about 11,900.
    assert!(json["measured"]["requests"]["not_sent"].as_u64().unwrap() <= 200);
    let verdicts = json["verdicts"].to_string();
    assert!(!verdicts.contains("could not keep up"), "{verdicts}");
}

/// Case 2: the highest rate loadlab accepts still ends on time, and obeys a stop.
#[test]
fn the_highest_rate_accepted_ends_on_time_and_obeys_a_stop() {
    let server = ScriptedServer::start(Script::answer_every(OK.to_vec()));
    let url = server.url("/");
    let started = Instant::now();
    let ran = run(
        "max-rate",
        &["--rate", "10000000", "--max-connections", "20", "-d", "1s"],
        &url,
    );
    let (issued, completed, _) = ran.requests();
    assert!(issued > 0 && completed > 0);
    // No machine sends ten million a second: what fell due and was not sent is counted.
    assert!(
        ran.json["measured"]["requests"]["not_sent"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "a 1 s run took {:?}",
        started.elapsed()
    );

    let path = result_path("max-rate-stopped");
    let child = loadlab()
        .args(["run", "-q", "--json", path.to_str().unwrap()])
        .args(["--rate", "10000000", "--max-connections", "20", "-d", "60s"])
        .arg(&url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (before, started) = (server.counters().writes(), Instant::now());
    while server.counters().writes() < before + 100 {
        assert!(started.elapsed() < WATCHDOG, "the run never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling the child this test started, by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (code, stderr) = finish(child, "max rate, stopped");
    assert_eq!(code, Some(130), "{stderr}");
    let json = read_result(&path);
    assert_eq!(json["interrupted"], true);
}

// ---------------------------------------------------------------------------------------
// HTTP/2 (h2c, prior knowledge)

fn h2_run(name: &str, server: &H2FrameServer, extra: &[&str]) -> Ran {
    let mut args = vec!["--http2", "-c", "1", "--streams", "1", "-t", "1"];
    args.extend_from_slice(extra);
    if !extra.contains(&"-d") {
        args.extend_from_slice(&["-d", "1s"]);
    }
    run(name, &args, &server.url("/"))
}

/// A connection that dies before answering anything is not reopened thousands of times a
/// second: one connection backs off to at most about 14 tries a second.
fn assert_backed_off(server: &H2FrameServer) {
    let n = server.counters().connections();
    assert!((1..=16).contains(&n), "{n} connections in 1 s");
}

/// Case 6: an HTTP/1.1-only server answering an h2c client is a protocol error with the
/// reason and the fix, not GOAWAY nor an I/O error.
#[test]
fn h2c_against_an_http1_server_is_a_protocol_error() {
    let server = ScriptedServer::start(Script::answer_every(OK.to_vec()));
    let ran = run(
        "h2c-http1",
        &["--http2", "-c", "2", "-t", "1", "-d", "1s"],
        &server.url("/"),
    );
    assert_eq!(ran.requests().1, 0);
    assert_eq!(classes(&ran), ["protocol_error"]);
    let detail = ran.detail("protocol_error");
    // What happened, not only that the bytes were wrong.
    assert!(
        detail.contains("does not speak HTTP/2 (h2c)")
            && detail.contains("answered with HTTP/1.1")
            && detail.contains("drop --http2"),
        "{detail}"
    );
    assert!(server.counters().accepted() <= 2 * 16);
    assert_eq!(ran.code, Some(2));
}

/// Case 6 and the frame-level failures: each bad opening or bad frame is `protocol_error`
/// (loadlab detected it and told the server with GOAWAY), never `goaway` or `io_error`, and
/// the connection backs off.
#[test]
fn protocol_violations_are_protocol_errors() {
    let after_request = |frames: Vec<H2Step>| {
        let mut s = H2Script::handshake().read_request();
        for f in frames {
            s = s.step(f);
        }
        s.hold()
    };
    let cases: Vec<(&str, H2Script, Option<u32>)> = vec![
        (
            "DATA on stream 0",
            after_request(vec![H2Step::Frame {
                kind: frame::DATA,
                flags: 0,
                on: On::Stream(0),
                payload: b"x".to_vec(),
            }]),
            Some(code::PROTOCOL_ERROR),
        ),
        (
            "random bytes for a preface",
            H2Script::new()
                .step(H2Step::ReadPreface)
                .step(H2Step::Raw(random_bytes(6, 256)))
                .hold(),
            None,
        ),
        (
            "a PING before SETTINGS",
            H2Script::new()
                .step(H2Step::ReadPreface)
                .frame(frame::PING, 0, On::Stream(0), vec![0; 8])
                .hold(),
            None,
        ),
        (
            "SETTINGS with ENABLE_PUSH 2",
            H2Script::new()
                .step(H2Step::ReadPreface)
                .step(H2Step::Settings(vec![(setting::ENABLE_PUSH, 2)]))
                .hold(),
            Some(code::PROTOCOL_ERROR),
        ),
        (
            "SETTINGS with a window past 2^31-1",
            H2Script::new()
                .step(H2Step::ReadPreface)
                .step(H2Step::Settings(vec![(
                    setting::INITIAL_WINDOW_SIZE,
                    0x8000_0000,
                )]))
                .hold(),
            // RFC 9113 asks for FLOW_CONTROL_ERROR; the h2 crate answers every SETTINGS
            // it cannot load with PROTOCOL_ERROR.
            Some(code::PROTOCOL_ERROR),
        ),
        (
            "SETTINGS of 5 bytes",
            H2Script::new()
                .step(H2Step::ReadPreface)
                .frame(frame::SETTINGS, 0, On::Stream(0), vec![0; 5])
                .hold(),
            Some(code::PROTOCOL_ERROR),
        ),
        (
            "a DATA frame over the client's maximum size",
            after_request(vec![
                H2Step::Frame {
                    kind: frame::HEADERS,
                    flags: frame::END_HEADERS,
                    on: On::Current,
                    payload: loadlab_testkit::h2frames::status_block(200),
                },
                H2Step::Frame {
                    kind: frame::DATA,
                    flags: frame::END_STREAM,
                    on: On::Current,
                    payload: vec![b'a'; 16_385],
                },
            ]),
            Some(code::FRAME_SIZE_ERROR),
        ),
        (
            "a WINDOW_UPDATE past 2^31-1",
            after_request(vec![H2Step::Frame {
                kind: frame::WINDOW_UPDATE,
                flags: 0,
                on: On::Stream(0),
                payload: 0x7fff_ffffu32.to_be_bytes().to_vec(),
            }]),
            Some(code::FLOW_CONTROL_ERROR),
        ),
    ];
    // At once: each case has its own server and loadlab, and spends its second mostly
    // backing off, so the eight take about one case's time (11 s one after another).
    std::thread::scope(|s| {
        for (what, script, told) in cases {
            s.spawn(move || protocol_violation_is_a_protocol_error(what, script, told));
        }
    });
}

/// One case of [`protocol_violations_are_protocol_errors`]: `script`'s violation is
/// `protocol_error`, explained, and loadlab told the server `told` (a GOAWAY code).
fn protocol_violation_is_a_protocol_error(what: &str, script: H2Script, told: Option<u32>) {
    let server = H2FrameServer::start(script);
    let ran = h2_run(what, &server, &[]);
    assert_eq!(ran.requests().1, 0, "{what}");
    assert_eq!(
        classes(&ran),
        ["protocol_error"],
        "{what}: {:?}",
        ran.errors()
    );
    let detail = ran.detail("protocol_error");
    assert!(detail.contains("not valid HTTP/2"), "{what}: {detail}");
    if what.contains("PING") {
        assert!(
            detail.contains("first frame was PING, not SETTINGS"),
            "{detail}"
        );
    }
    ran.accounts_for_every_request();
    assert_eq!(ran.code, Some(2), "{what}: {}", ran.stderr);
    assert_backed_off(&server);
    if let Some(code) = told {
        // loadlab sent it before it exited; the server's thread may still be reading.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !server.counters().client_goaways().contains(&code) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            server.counters().client_goaways().contains(&code),
            "{what}: loadlab told the server {:?}",
            server.counters().client_goaways()
        );
    }
}

/// The server's own GOAWAY, with an error code: `goaway`, with the code in the detail; the
/// request it refused is counted once, and the next connection waits.
#[test]
fn a_goaway_with_an_error_code_is_counted_with_its_code() {
    for (code, name) in [
        (code::ENHANCE_YOUR_CALM, "ENHANCE_YOUR_CALM"),
        (code::PROTOCOL_ERROR, "PROTOCOL_ERROR"),
    ] {
        let server =
            H2FrameServer::start(H2Script::handshake().read_request().goaway(0, code).close());
        let ran = h2_run(name, &server, &[]);
        let (_, completed, failed) = ran.requests();
        assert_eq!(completed, 0);
        assert_eq!(classes(&ran), ["goaway"], "{name}");
        assert!(
            ran.detail("goaway").contains(name),
            "{}",
            ran.detail("goaway")
        );
        // Every request the server read was refused by its GOAWAY.
        let read = server.counters().requests();
        assert!(
            failed >= read.saturating_sub(1) && failed <= read,
            "{failed} {read}"
        );
        ran.accounts_for_every_request();
        assert_backed_off(&server);
        assert_eq!(ran.code, Some(2));
    }
}

/// RST_STREAM on every other stream: `stream_reset` with its code; the connection carries on
/// and the answered half completes. (INTERNAL_ERROR: the request may have been processed.
/// REFUSED_STREAM says it was not, and such a stream is sent again instead: tests/h2_retry.rs
/// in the engine.)
#[test]
fn stream_resets_are_counted_and_the_connection_goes_on() {
    let server = H2FrameServer::start(
        H2Script::handshake()
            .step(H2Step::Loop)
            .read_request()
            .respond(200, b"ok")
            .read_request()
            .rst_stream(code::INTERNAL_ERROR),
    );
    let ran = h2_run("rst", &server, &["-d", "500ms"]);
    let (_, completed, failed) = ran.requests();
    assert!(completed > 0);
    assert_eq!(classes(&ran), ["stream_reset"]);
    assert!(ran.detail("stream_reset").contains("INTERNAL_ERROR"));
    // One stream at a time, alternately answered and reset.
    assert!(completed.abs_diff(failed) <= 1, "{completed} {failed}");
    assert_eq!(server.counters().connections(), 1);
    ran.accounts_for_every_request();
    assert_eq!(ran.code, Some(0));
}

/// REFUSED_STREAM on every other stream: the server did not process those, so each is sent
/// again (RFC 9113 8.7), not failed, and the result counts them as `retried` (a field the
/// schema allows: the result is checked against it).
#[test]
fn refused_streams_are_sent_again_and_counted_as_retried() {
    let server = H2FrameServer::start(
        H2Script::handshake()
            .step(H2Step::Loop)
            .read_request()
            .respond(200, b"ok")
            .read_request()
            .rst_stream(code::REFUSED_STREAM),
    );
    let ran = h2_run("refused-stream", &server, &["-d", "500ms"]);
    let (_, completed, failed) = ran.requests();
    assert!(completed > 0);
    assert_eq!(failed, 0, "{:?}", ran.errors());
    let retried = ran.json["measured"]["retried"].as_u64().unwrap_or(0);
    // Every refused stream is answered next: one retry per answer, give or take the last.
    assert!(
        completed.abs_diff(retried) <= 1,
        "{completed} answered, {retried} retried"
    );
    ran.accounts_for_every_request();
    assert_eq!(ran.code, Some(0));
}

/// A server that reads the preface and never answers, not even SETTINGS; and one whose
/// flow-control window never opens for a request body. Neither hangs loadlab: each request
/// times out (`--timeout`), or is in flight when the run ends.
#[test]
fn silent_servers_and_closed_windows_time_out() {
    let silent = H2FrameServer::start(H2Script::new().step(H2Step::ReadPreface).hold());
    let ran = h2_run("silent", &silent, &["--timeout", "200ms"]);
    let (_, completed, failed) = ran.requests();
    assert_eq!(completed, 0);
    assert!(failed >= 1);
    assert_eq!(classes(&ran), ["request_timeout"]);
    ran.accounts_for_every_request();
    assert_eq!(ran.code, Some(2));

    let closed = H2FrameServer::start(
        H2Script::new()
            .step(H2Step::ReadPreface)
            .step(H2Step::Settings(vec![(setting::INITIAL_WINDOW_SIZE, 0)]))
            .step(H2Step::SettingsAck)
            .step(H2Step::Loop)
            .read_request(),
    );
    let ran = h2_run(
        "closed-window",
        &closed,
        &["-m", "POST", "--body", "hello", "--timeout", "200ms"],
    );
    let (_, completed, failed) = ran.requests();
    assert_eq!(completed, 0);
    assert!(failed >= 1);
    assert_eq!(classes(&ran), ["request_timeout"]);
    ran.accounts_for_every_request();
    assert_eq!(ran.code, Some(2));
}

// ---------------------------------------------------------------------------------------
// Servers never left behind (case 11)

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// A server launched with `--exec` dies with loadlab even when loadlab is killed outright
/// (SIGKILL: no handler, no destructor). `sh -c` used to fork it, so the death signal reached
/// the shell only and the server went on, reparented to init. No root needed: no limits.
#[test]
fn a_killed_loadlab_leaves_no_launched_server() {
    let fixture = env!("CARGO_BIN_EXE_loadlab-fixture");
    let mut child = loadlab()
        .args(["run", "-q", "--exec", fixture, "-c", "1", "-d", "60s", "/"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let server = loop {
        let below = tree(child.id());
        if let Some(p) = below.iter().find(|p| comm(**p) == "loadlab-fixture") {
            break *p;
        }
        if started.elapsed() > WATCHDOG {
            let _ = child.kill();
            panic!("no server started: {below:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let launched = tree(child.id());
    child.kill().unwrap();
    child.wait().unwrap();
    // The kernel delivers the death signal as loadlab exits; a busy machine may take a
    // moment to tear the server down.
    let deadline = Instant::now() + Duration::from_secs(10);
    while launched.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let left: Vec<u32> = launched.into_iter().filter(|p| alive(*p)).collect();
    for p in &left {
        // SAFETY: kill(2) of a process this test launched (through loadlab).
        unsafe { libc::kill(*p as i32, libc::SIGKILL) };
    }
    assert!(
        left.is_empty(),
        "left running after loadlab was killed: {left:?} (server {server})"
    );
}

// ---------------------------------------------------------------------------------------
// Hostile command lines (cases 1-4 and 14) and the schema

/// Each is refused at once with exit 2, naming the flag or the problem, never a panic.
#[test]
fn hostile_command_lines_are_refused_up_front() {
    let url = "http://127.0.0.1:9/";
    let huge = "18446744073709551615s";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["http://127.0.0.1:99999/"], "invalid port"),
        (vec!["http://127.0.0.1:abc/"], "invalid port"),
        (vec!["http://127.0.0.1:-1/"], "invalid port"),
        (vec!["http://127.0.0.1:80x/"], "invalid port"),
        (vec!["http://127.0.0.1:65616/"], "invalid port"),
        (vec!["http://127.0.0.1:/"], "invalid port"),
        (vec!["http://127.0.0.1:0/"], "invalid port"),
        (vec!["https://127.0.0.1:99999/"], "invalid port"),
        (vec!["http://user:pass@127.0.0.1:8080/"], "credentials"),
        (vec!["--rate", "1e12", "-d", "1s", url], "--rate"),
        (vec!["--rate", "1e9", "-d", "1s", url], "--rate"),
        (vec!["--stages", "1s:1e12", url], "--stages"),
        (vec!["-c", "4294967296", url], "-c"),
        (
            vec!["--stages", "1s:4294967296", "--closed", url],
            "--stages",
        ),
        (
            vec!["--stages", "1s:2.5", "--closed", url],
            "not a whole number",
        ),
        (vec!["-d", huge, url], "--duration"),
        (vec!["--warmup", huge, url], "--warmup"),
        (vec!["--timeout", huge, url], "--timeout"),
        (vec!["--interval", huge, url], "--interval"),
        (vec!["--pace", huge, url], "--pace"),
        // A bare number is seconds; one too large for a duration is refused, not a panic.
        (vec!["--pace", "18446744073709551615", url], "--pace"),
        (vec!["-d", "1e30", url], "--duration"),
        (vec!["-c", "-1", url], "`-1` is not a count"),
        // Every numeric or duration flag names itself and its range for a negative value,
        // instead of clap's "use '-- -1'" tip (issue 27, item 7).
        (
            vec!["-d", "-1s", url],
            "'--duration <DURATION>': `-1s` is negative",
        ),
        (
            vec!["--warmup", "-2s", url],
            "'--warmup <WARMUP>': `-2s` is negative",
        ),
        (
            vec!["--timeout", "-1", url],
            "`-1` is negative: give a duration of 0",
        ),
        (vec!["--interval", "-1s", url], "--interval"),
        (vec!["--pace", "-1s", url], "--pace"),
        (vec!["--tick", "-1ms", url], "--tick"),
        (vec!["--connect-timeout", "-5s", url], "--connect-timeout"),
        (
            vec!["--rate", "-5", url],
            "'--rate <RATE>': `-5` is not a rate: give requests per second above 0",
        ),
        (vec!["--new-connection-share", "-0.5", url], "from 0 to 1"),
        (
            vec!["--streams", "-1", url],
            "'--streams <STREAMS>': `-1` is not a count",
        ),
        (vec!["--seed", "-1", url], "--seed"),
        // Issue 51, item 6: bounded as -c is (4294967296 aborted on a failed allocation).
        (
            vec!["--http2", "--streams", "4294967296", url],
            "4294967296 streams on a connection, more than one loadlab carries",
        ),
        (
            vec!["--http3", "--streams", "100000000", "https://127.0.0.1:9/"],
            "100000000 streams on a connection",
        ),
        (
            vec!["--http2", "-c", "10", "--streams", "1000000", url],
            "10 connections x 1000000 streams",
        ),
    ];
    for (args, needle) in cases {
        let child = loadlab()
            .arg("run")
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (code, stderr) = finish(child, &format!("{args:?}"));
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("use '-- -1'"), "{args:?}: {stderr}");
        // No "took under 10 s": a parse error takes milliseconds on an idle machine and
        // whatever a busy one makes it; `finish`'s watchdog catches a run that went ahead.
    }
}

/// Issue 46, case 7: `loadlab recover` on a spill file altered after it was written. An
/// interval 1e308 s into the run panicked it (exit 101); a negative duration and counts that
/// wrap were taken silently. Each is refused by name, exit 2, and nothing is written.
#[test]
fn recover_refuses_an_altered_spill_file() {
    let fixture: Value = serde_json::from_str(include_str!(
        "../../../loadlab-report/tests/fixtures/open.json"
    ))
    .unwrap();
    let mut header = fixture.clone();
    header["timeline"] = Value::Array(Vec::new());
    let first = fixture["timeline"][0].clone();
    let altered = |key: &str, value: Value| {
        let mut iv = first.clone();
        iv[key] = value;
        iv
    };
    let huge = Value::from(u64::MAX);
    let cases = [
        (
            "far",
            vec![altered("start_s", 1e308.into())],
            "starts 1e308 s",
        ),
        (
            "negative",
            vec![altered("duration_s", (-1.0).into())],
            "lasts -1 s",
        ),
        (
            "wrapping",
            vec![
                altered("completed", huge.clone()),
                altered("completed", huge),
            ],
            "overflow",
        ),
    ];
    for (name, intervals, phrase) in cases {
        let path = result_path(&format!("altered-{name}.spill"));
        let out = result_path(&format!("altered-{name}-out"));
        let mut text = String::from("loadlab-spill 1\n");
        for record in std::iter::once(&header).chain(&intervals) {
            let json = record.to_string();
            text.push_str(&format!("{} {json}\n", json.len()));
        }
        std::fs::write(&path, text).unwrap();
        let child = loadlab()
            .arg("recover")
            .arg(&path)
            .arg("-o")
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (code, stderr) = finish(child, name);
        let _ = std::fs::remove_file(&path);
        assert_eq!(code, Some(2), "{name}: {stderr}");
        assert!(stderr.contains(phrase), "{name}: {stderr}");
        assert!(
            stderr.contains("altered after it was written"),
            "{name}: {stderr}"
        );
        assert!(!out.exists(), "{name}: a result was written");
    }
}

/// Every failure class loadlab can count is a name the schema allows (`extra_bytes` was
/// missing, so a result with one failed validation).
#[test]
fn the_schema_allows_every_failure_class() {
    let schema: Value =
        serde_json::from_str(include_str!("../../../../schema/run-result.schema.json")).unwrap();
    let allowed: Vec<&str> = schema["$defs"]["phase"]["properties"]["errors"]["propertyNames"]
        ["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for (class, _) in loadlab_result::failure::FAILURE_CLASSES {
        assert!(allowed.contains(class), "the schema lacks `{class}`");
    }
}
