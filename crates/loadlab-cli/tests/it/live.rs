//! `loadlab run --ui`: the live page of a real run, read with a plain HTTP client: its event
//! stream delivers intervals while the load goes and ends with the result's own figures; a
//! reconnecting page gets its gap; the stop button ends the run with its result written;
//! the page is refused to another Host, is under a nonce policy and escapes the target.

use crate::common::{assert_valid, loadlab};
use loadlab_testkit::{response, Behavior, ScratchDir, TestServer};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Starts `loadlab run --ui=127.0.0.1:0 ARGS`; returns it and the page's address.
pub(crate) fn start(args: &[&str]) -> (Child, String) {
    start_command("run", args)
}

/// Starts `loadlab COMMAND --ui=127.0.0.1:0 ARGS`; returns it and the page's address.
pub(crate) fn start_command(command: &str, args: &[&str]) -> (Child, String) {
    let mut child = loadlab()
        .args([command, "--ui=127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no live page printed"
        );
        if let Some(rest) = line.trim().strip_prefix("live page: http://") {
            break rest.split('/').next().unwrap().to_string();
        }
    };
    // The rest of stderr drained, so that loadlab never waits on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (child, addr)
}

/// A request over HTTP/1.0 (the response ends with the connection: no chunks to undo).
pub(crate) fn request(addr: &str, head: &str) -> BufReader<TcpStream> {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(tcp, "{head}\r\n").unwrap();
    BufReader::new(tcp)
}

pub(crate) fn whole(mut r: BufReader<TcpStream>) -> String {
    let mut text = String::new();
    r.read_to_string(&mut text).unwrap();
    text
}

pub(crate) struct Sse {
    pub id: u64,
    pub kind: String,
    pub data: serde_json::Value,
    pub at: Instant,
}

/// The next event of a stream whose headers were read; `None` at its end.
pub(crate) fn next_event(r: &mut BufReader<TcpStream>) -> Option<Sse> {
    let (mut id, mut kind, mut data) = (0, String::new(), String::new());
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end_matches('\n');
        if line.is_empty() {
            if kind.is_empty() {
                continue; // the retry line
            }
            return Some(Sse {
                id,
                kind,
                data: serde_json::from_str(&data).unwrap(),
                at: Instant::now(),
            });
        }
        if let Some(v) = line.strip_prefix("id: ") {
            id = v.parse().unwrap();
        } else if let Some(v) = line.strip_prefix("event: ") {
            kind = v.to_string();
        } else if let Some(v) = line.strip_prefix("data: ") {
            data = v.to_string();
        }
    }
}

pub(crate) fn open_events(addr: &str, extra: &str) -> BufReader<TcpStream> {
    let mut r = request(
        addr,
        &format!("GET /events HTTP/1.0\r\nHost: {addr}\r\n{extra}"),
    );
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.contains(" 200 "), "{line}");
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break r;
        }
        assert!(
            !line.to_ascii_lowercase().starts_with("content-type:")
                || line.contains("text/event-stream")
        );
    }
}

/// The page once the run has started: its own Host only, under a policy of nonces.
fn read_page(addr: &str) -> String {
    let refused = whole(request(addr, "GET / HTTP/1.0\r\nHost: evil.example\r\n"));
    assert!(refused.starts_with("HTTP/1.0 421"), "{refused}");
    let page = whole(request(
        addr,
        &format!("GET / HTTP/1.0\r\nHost: {addr}\r\n"),
    ));
    let lower = page.to_ascii_lowercase();
    assert!(
        lower.contains("content-security-policy: default-src 'none'; script-src 'nonce-"),
        "{page}"
    );
    assert!(!page.contains("<script>"), "every script runs by its nonce");
    page
}

#[test]
fn the_stream_follows_the_run_and_ends_with_the_results_figures() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("live");
    let json = dir.join("run.json");
    let url = server.url("/?a=1&b=2");
    let (child, addr) = start(&[
        "-c",
        "2",
        "-d",
        "3s",
        "--json",
        json.to_str().unwrap(),
        &url,
    ]);

    let mut stream = open_events(&addr, "");
    let first = next_event(&mut stream).expect("a snapshot first");
    assert_eq!(first.kind, "snapshot");
    let (mut intervals, mut end, mut page, mut again) = (Vec::new(), None, None, None);
    while let Some(e) = next_event(&mut stream) {
        match e.kind.as_str() {
            "interval" => {
                if page.is_none() {
                    // The first came while the load went, not with the end: the run has
                    // not written its result yet (it does so once the load has ended).
                    assert!(!json.exists(), "the first interval came with the end");
                    page = Some(read_page(&addr));
                    // A page reconnecting after the first interval, while the run goes:
                    // read once the run has ended (the page's server may be gone then).
                    again = Some(open_events(&addr, &format!("Last-Event-ID: {}\r\n", e.id)));
                }
                intervals.push(e);
            }
            "end" => {
                end = Some(e);
                break;
            }
            // The run's start, naming its target (for a page opened before it).
            "run" => {
                assert!(intervals.is_empty(), "the start after an interval");
                assert_eq!(e.data["run"], 1);
            }
            other => panic!("unexpected event {other}"),
        }
    }
    let end = end.expect("an end event");
    let page = page.expect("the page was read");
    assert!(intervals.len() >= 3, "{} intervals in 3 s", intervals.len());
    // An event a second, each as its interval ends: the bound leaves room for a busy
    // machine (the other tests of this binary load the CPUs: 2.9 s was seen at a load
    // average of 7), not for a page that waits for the end of the run.
    for pair in intervals.windows(2) {
        let gap = pair[1].at - pair[0].at;
        assert!(
            gap < Duration::from_millis(3_000),
            "an interval {gap:?} after the last"
        );
        assert_eq!(pair[1].id, pair[0].id + 1);
    }
    assert!(end.at >= intervals[0].at);
    // Each figure says which it is; the interval's chart point is the report's data.
    let last = &intervals[0].data;
    assert!(last["last"]["completed"].as_u64().unwrap() > 0);
    assert_eq!(
        last["point"]["runs"][0]["timeline"]["t_s"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // The page that reconnected after the first interval got the rest, not a snapshot.
    let mut again = again.expect("reconnected after the first interval");
    let resumed = next_event(&mut again).unwrap();
    assert_eq!(
        (resumed.kind.as_str(), resumed.id),
        ("interval", intervals[1].id)
    );

    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_valid(&result);
    let since = &end.data["since_start"];
    let measured = &result["measured"];
    assert_eq!(since["completed"], measured["requests"]["completed"]);
    assert_eq!(since["failed"], measured["requests"]["failed"]);
    assert_eq!(since["per_s"], measured["requests"]["per_second"]);
    for p in ["p50", "p90", "p99", "max", "count"] {
        assert_eq!(
            since["latency_us"][p], measured["latency_us"][p],
            "{p}: merged from the intervals, equal to the result's"
        );
    }
    assert!(page.contains("&amp;b=2"), "the target escaped: {page}");
}

#[test]
fn the_stop_button_ends_the_run_as_ctrl_c_does() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("live-stop");
    let json = dir.join("run.json");
    let (child, addr) = start(&[
        "-c",
        "2",
        "-d",
        "60s",
        "--json",
        json.to_str().unwrap(),
        &server.url("/"),
    ]);
    let page = whole(request(
        &addr,
        &format!("GET / HTTP/1.0\r\nHost: {addr}\r\n"),
    ));
    let csrf = page
        .split("\"csrf\":\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_string();
    let mut stream = open_events(&addr, "");
    while next_event(&mut stream).unwrap().kind != "interval" {}

    let stop = |headers: &str| {
        whole(request(
            &addr,
            &format!("POST /stop HTTP/1.0\r\nHost: {addr}\r\n{headers}Content-Length: 0\r\n"),
        ))
    };
    let origin = format!("Origin: http://{addr}\r\n");
    assert!(stop("").starts_with("HTTP/1.0 403"), "no origin");
    assert!(stop(&format!(
        "Origin: http://evil.example\r\nX-Loadlab-Csrf: {csrf}\r\n"
    ))
    .starts_with("HTTP/1.0 403"));
    assert!(
        stop(&format!("{origin}X-Loadlab-Csrf: 00\r\n")).starts_with("HTTP/1.0 403"),
        "a wrong token"
    );
    let stopped = stop(&format!("{origin}X-Loadlab-Csrf: {csrf}\r\n"));
    assert!(stopped.starts_with("HTTP/1.0 202"), "{stopped}");

    let end = std::iter::from_fn(|| next_event(&mut stream))
        .find(|e| e.kind == "end")
        .expect("the stream ends");
    assert_eq!(end.data["interrupted"], true);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "as a Ctrl-C");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(result["interrupted"], true);
    assert!(result["measured"]["duration_s"].as_f64().unwrap() < 30.0);
    assert_eq!(
        end.data["since_start"]["completed"],
        result["measured"]["requests"]["completed"]
    );
}

#[test]
fn off_loopback_a_token_is_required() {
    let out = loadlab()
        .args(["run", "--ui=0.0.0.0:0", "-d", "1s", "http://127.0.0.1:9/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not a loopback address") && stderr.contains("--ui-token-file"),
        "{stderr}"
    );
}

/// With a token file, every request carries the token (`?token=` or a bearer header).
#[test]
fn a_token_file_guards_every_request() {
    use std::os::unix::fs::PermissionsExt as _;
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("live-token");
    let file = dir.join("token");
    let token = "0f3a9c27d41b86e5a0f3a9c27d41b86e";
    std::fs::write(&file, format!("{token}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (mut child, addr) = start(&[
        "--ui-token-file",
        file.to_str().unwrap(),
        "-c",
        "1",
        "-d",
        "30s",
        &server.url("/"),
    ]);
    let without = whole(request(
        &addr,
        &format!("GET / HTTP/1.0\r\nHost: {addr}\r\n"),
    ));
    let wrong = whole(request(
        &addr,
        &format!("GET /?token=x{token} HTTP/1.0\r\nHost: {addr}\r\n"),
    ));
    let with = whole(request(
        &addr,
        &format!("GET /?token={token} HTTP/1.0\r\nHost: {addr}\r\n"),
    ));
    // The stream goes on until the run ends: its status line alone.
    let mut bearer = String::new();
    request(
        &addr,
        &format!("GET /events HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n"),
    )
    .read_line(&mut bearer)
    .unwrap();
    // SAFETY: signalling our own child by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait().unwrap();
    assert!(without.starts_with("HTTP/1.0 401"), "{without}");
    assert!(wrong.starts_with("HTTP/1.0 401"), "{wrong}");
    assert!(with.starts_with("HTTP/1.0 200"), "{with}");
    assert!(bearer.starts_with("HTTP/1.0 200"), "{bearer}");
}

/// `loadlab ui`: the store's runs listed (a user's tag escaped), a run's page the report's.
#[test]
fn the_store_in_a_browser_lists_runs_and_serves_their_pages() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("live-store");
    let db = dir.join("runs.db");
    let tag = "t<script>alert(1)</script>";
    let saved = loadlab()
        .args([
            "run",
            "-n",
            "50",
            "-c",
            "1",
            "--db",
            db.to_str().unwrap(),
            "--tag",
            tag,
            &server.url("/"),
        ])
        .output()
        .unwrap();
    assert_eq!(
        saved.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&saved.stderr)
    );
    let mut child = loadlab()
        .args(["ui", "--db", db.to_str().unwrap()])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line}"))
        .to_string();
    let list = whole(request(
        &addr,
        &format!("GET / HTTP/1.0\r\nHost: {addr}\r\n"),
    ));
    let page = whole(request(
        &addr,
        &format!("GET /run/1 HTTP/1.0\r\nHost: {addr}\r\n"),
    ));
    let refused = whole(request(&addr, "GET / HTTP/1.0\r\nHost: evil.example\r\n"));
    let posted = whole(request(
        &addr,
        &format!("POST /run/1 HTTP/1.0\r\nHost: {addr}\r\nContent-Length: 0\r\n"),
    ));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(list.contains("href=\"/run/1\""), "{list}");
    assert!(
        list.contains("t&lt;script&gt;alert(1)&lt;/script&gt;") && !list.contains("<script>"),
        "{list}"
    );
    assert!(
        page.contains("<!DOCTYPE html>") && page.contains("id=\"charts\""),
        "the report's page"
    );
    assert!(page
        .to_ascii_lowercase()
        .contains("content-security-policy: default-src 'none'; script-src 'sha256-"));
    assert!(refused.starts_with("HTTP/1.0 421"));
    assert!(posted.starts_with("HTTP/1.0 405"), "read-only: {posted}");
}

/// A server loadlab launched is sampled: the page's intervals carry its CPU and memory, as
/// the spill file's do.
#[test]
fn a_launched_servers_cpu_and_memory_reach_the_page() {
    let fixture = env!("CARGO_BIN_EXE_loadlab-fixture");
    let (child, addr) = start(&["--exec", fixture, "-c", "1", "-d", "2s", "-q", "/"]);
    let mut stream = open_events(&addr, "");
    let events: Vec<Sse> = std::iter::from_fn(|| next_event(&mut stream))
        .take_while(|e| e.kind != "end")
        .collect();
    child.wait_with_output().unwrap();
    let sampled = events
        .iter()
        .filter(|e| e.kind == "interval")
        .filter(|e| e.data["last"]["server"]["rss_bytes"].as_u64().unwrap_or(0) > 0)
        .count();
    assert!(sampled >= 1, "no interval carried the server's figures");
    let last = events.iter().rev().find(|e| e.kind == "interval").unwrap();
    let since = &last.data["since_start"];
    assert!(
        since["server_rss_max_bytes"].as_u64().unwrap_or(0) > 0,
        "{since}"
    );
    assert!(since["server_cpu_cores"].as_f64().is_some(), "{since}");
}
