//! `loadlab run ws://...` against WebSocket servers no one here wrote: Python's `websockets`
//! (`tests/ws/echo_server.py`, from the venv scripts/setup.sh makes) and Debian's
//! `websocketd` running a shell loop that echoes and counts each line. The echoes loadlab
//! completed equal the messages each server counted (closed and open loop), and a held load
//! holds the server's connections; over HTTP/2 (RFC 8441) through Apache httpd's mod_http2
//! too; bad combinations exit 2 naming the flag and the fix.
//!
//! Capacity and sweeps over WebSocket figures run against the testkit's server (fast and
//! exact): a sweep of echo rates, a search over held connections beside an echo load (the
//! server refuses upgrades beyond its room, so the answer is exact), an experiment whose arms
//! are ws:// URLs, and the text summary's pushes and the gaps between them.

use crate::common::{assert_valid, loadlab};
use loadlab_testkit::WsCounters;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `loadlab run` with `args` (`--json -` added) and returns its JSON result.
fn run_json(args: &[&str]) -> serde_json::Value {
    let out = loadlab()
        .args(["run", "-t", "1", "--json", "-"])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&value);
    value
}

fn count(v: &serde_json::Value, what: &str) -> u64 {
    v["measured"]["requests"][what].as_u64().unwrap()
}

#[test]
fn against_python_websockets_the_counts_are_the_servers() {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/ws-venv/bin/python");
    if !python.exists() {
        eprintln!("SKIPPED: no target/ws-venv with websockets; run scripts/setup.sh");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ws/echo_server.py");
    let mut server = Command::new(&python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // Its tracebacks for held connections the run's end cut (no close frame) are noise.
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut to_server = server.stdin.take().unwrap();
    let mut from_server = BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    from_server.read_line(&mut line).unwrap();
    let url = format!("ws://127.0.0.1:{}/", line.trim());
    // The server's messages read, its most connections open at once since the last ask, and
    // those open now.
    let mut ask = || -> (u64, u64, u64) {
        writeln!(to_server).unwrap();
        line.clear();
        from_server.read_line(&mut line).unwrap();
        let mut n = line.split_whitespace().map(|w| w.parse::<u64>().unwrap());
        (n.next().unwrap(), n.next().unwrap(), n.next().unwrap())
    };
    let closed = run_json(&["-c", "4", "-n", "2000", &url]);
    assert_eq!(
        count(&closed, "failed"),
        0,
        "{}",
        closed["measured"]["errors"]
    );
    assert_eq!(count(&closed, "completed"), 2_000);
    assert_eq!(ask().0, 2_000);
    // websockets agrees to permessage-deflate by default: every message went deflated, and
    // every echo came compressed.
    let notes = closed["notes"].to_string();
    for said in [
        "permessage-deflate: agreed on 4 of 4 connections",
        "2000 messages sent deflated",
        "2000 compressed messages received",
    ] {
        assert!(notes.contains(said), "{said}: {notes}");
    }

    let open = run_json(&["--rate", "1000", "-d", "600ms", "--ws-binary", &url]);
    let done = count(&open, "completed");
    assert_eq!(count(&open, "failed"), 0, "{}", open["measured"]["errors"]);
    assert!(done >= 500, "{done}");
    let in_flight = open["in_flight_at_end"].as_u64().unwrap();
    let seen = ask().0 - 2_000;
    assert!(
        seen >= done && seen <= done + in_flight,
        "server {seen}, loadlab {done} + {in_flight} in flight"
    );

    // The open loop's connections may still be closing on a busy server: the held ones are
    // counted from none open (a peak over both read 113 for 100).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while ask().2 > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never closed the open loop's connections"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let held = run_json(&[
        "--ws-mode",
        "hold",
        "--ws-ping",
        "100ms",
        "-c",
        "100",
        "-d",
        "800ms",
        &url,
    ]);
    assert_eq!(count(&held, "failed"), 0, "{}", held["measured"]["errors"]);
    assert!(count(&held, "completed") >= 100, "pongs: {held}");
    assert_eq!(ask().1, 100, "the server held 100 connections at once");
    let notes = held["notes"].to_string();
    assert!(notes.contains("100 connections held open"), "{notes}");
    let before = ask().0;
    if let Some(apache) = Apache::proxying_to(&url) {
        // RFC 8441 through a server no one here wrote: 200 echoes over 2 connections.
        let url = format!("ws://127.0.0.1:{}/echo", apache.port);
        let h2 = run_json(&["--http2", "-c", "2", "--streams", "4", "-n", "200", &url]);
        assert_eq!(count(&h2, "failed"), 0, "{}", h2["measured"]["errors"]);
        assert_eq!(count(&h2, "completed"), 200);
        assert_eq!(h2["measured"]["connections_opened"], 2, "{h2}");
        assert_eq!(ask().0 - before, 200, "the backend read every echo");
    }
    let _ = server.kill();
    let _ = server.wait();
}

/// Apache httpd (Debian's apache2) configured from scratch on a loopback port: h2c with
/// `H2WebSockets on` (mod_http2 takes RFC 8441's extended CONNECT), `/echo` proxied by
/// mod_proxy_wstunnel to a WebSocket server. Stopped when dropped.
struct Apache {
    port: u16,
    dir: loadlab_testkit::ScratchDir,
}

impl Apache {
    /// `None` (said) without apache2 or its modules.
    fn proxying_to(backend: &str) -> Option<Apache> {
        let modules = Path::new("/usr/lib/apache2/modules");
        if !modules.join("mod_proxy_wstunnel.so").exists() {
            eprintln!(
                "SKIPPED over HTTP/2: no apache2 with mod_proxy_wstunnel; run scripts/setup.sh"
            );
            return None;
        }
        let dir = loadlab_testkit::ScratchDir::new("loadlab-ws-apache");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let d = dir.display();
        let m = modules.display();
        let conf = format!(
            "ServerRoot {d}\nServerName localhost\nListen 127.0.0.1:{port}\n\
             PidFile {d}/httpd.pid\nMutex file:{d} default\nDefaultRuntimeDir {d}\n\
             ErrorLog {d}/error.log\nUser www-data\nGroup www-data\n\
             LoadModule mpm_event_module {m}/mod_mpm_event.so\n\
             LoadModule authz_core_module {m}/mod_authz_core.so\n\
             LoadModule http2_module {m}/mod_http2.so\n\
             LoadModule proxy_module {m}/mod_proxy.so\n\
             LoadModule proxy_http_module {m}/mod_proxy_http.so\n\
             LoadModule proxy_wstunnel_module {m}/mod_proxy_wstunnel.so\n\
             StartServers 1\nProtocols h2c http/1.1\nH2WebSockets on\n\
             ProxyPass /echo {backend}\n"
        );
        std::fs::write(dir.join("httpd.conf"), conf).unwrap();
        let apache = Apache { port, dir };
        let started = apache.ctl("start");
        assert!(started.status.success(), "{started:?}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            let log = std::fs::read_to_string(apache.dir.join("error.log")).unwrap_or_default();
            assert!(
                std::time::Instant::now() < deadline,
                "apache2 never listened: {log}"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Some(apache)
    }

    fn ctl(&self, what: &str) -> std::process::Output {
        Command::new("apache2")
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .arg("-f")
            .arg(self.dir.join("httpd.conf"))
            .args(["-k", what])
            .output()
            .unwrap()
    }
}

impl Drop for Apache {
    fn drop(&mut self) {
        // Its SIGTERM: httpd ends its workers within about a second and a half, not awaited
        // (it writes nothing but its log to the directory removed meanwhile).
        let _ = self.ctl("stop");
    }
}

#[test]
fn against_websocketd_the_counts_are_the_servers() {
    if Command::new("websocketd")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: no websocketd; run scripts/setup.sh (Debian's websocketd)");
        return;
    }
    let dir = loadlab_testkit::ScratchDir::new("loadlab-websocketd");
    let counted = dir.path().join("count");
    let echo = dir.path().join("echo.sh");
    std::fs::write(
        &echo,
        format!(
            "#!/bin/sh\nwhile IFS= read -r line; do printf '%s\\n' \"$line\"; echo . >> '{}'; \
             done\n",
            counted.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&echo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let port = loadlab_testkit::closed_port();
    // Killed when the test ends, failed or not (a failed assertion once left it running).
    let _server = crate::common::Killed(
        Command::new("websocketd")
            .arg(format!("--port={port}"))
            .args(["--address=127.0.0.1", "--loglevel=error"])
            .arg(&echo)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("ws://127.0.0.1:{port}/");
    // Until it listens.
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed().as_secs() < 5, "websocketd did not listen");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let r = run_json(&["-c", "4", "-n", "1000", &url]);
    assert_eq!(count(&r, "failed"), 0, "{}", r["measured"]["errors"]);
    assert_eq!(count(&r, "completed"), 1_000);
    let lines = || {
        std::fs::read_to_string(&counted)
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!(lines(), 1_000);
}

#[test]
fn websocket_flags_that_make_no_sense_exit_2_with_the_fix() {
    for (args, says) in [
        (
            &["--streams", "4", "ws://127.0.0.1:9/"][..],
            "--streams: sets concurrent HTTP/2 streams per connection; add --http2",
        ),
        (
            &["--ws-mode", "hold", "http://127.0.0.1:9/"],
            "need a ws:// or wss:// URL",
        ),
        (
            &["--ws-mode", "hold", "--rate", "5", "ws://127.0.0.1:9/"],
            "--ws-mode connect",
        ),
        (
            &["--ws-connect-rate", "500/s", "ws://127.0.0.1:9/"],
            "--ws-connect-rate: paces the opening of held connections; add --ws-mode hold",
        ),
        (
            &[
                "--ws-mode",
                "hold",
                "--ws-connect-rate",
                "0/s",
                "ws://127.0.0.1:9/",
            ],
            "--ws-connect-rate: 0 connections a second: give more than 0",
        ),
        (
            &[
                "--ws-mode",
                "hold",
                "--ws-connect-rate",
                "fast",
                "ws://127.0.0.1:9/",
            ],
            "`fast` is not a rate: give connections per second above 0",
        ),
    ] {
        let out = loadlab().arg("run").args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// `loadlab capacity|sweep ... --json FILE` (quiet, unsaved): its exit code, stderr and the
/// document.
fn probe_json(args: &[&str]) -> (Option<i32>, String, serde_json::Value) {
    let dir = loadlab_testkit::ScratchDir::new("loadlab-ws-capacity");
    let json = dir.path().join("doc.json");
    let out = loadlab()
        .args(args)
        .args([
            "--no-save",
            "-q",
            "-t",
            "1",
            "--warmup",
            "0s",
            "--cooldown",
            "0s",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (
        out.status.code(),
        stderr,
        serde_json::from_str(&text).unwrap(),
    )
}

/// "How many held connections before the echo breaks": the server takes at most 12
/// connections; the echo load has one (--max-connections 1), so 11 held pass and 12 fail
/// (one of the 13 refused, and refused again after each back-off: some 8 failed exchanges
/// of 58, over the 8% allowed; a busy machine's unsent last message or two stays under it).
/// The search over whole counts lands on 11.
#[test]
fn capacity_over_held_connections_finds_the_servers_room() {
    use loadlab_testkit::{WsBehavior, WsServer};
    let server = WsServer::start(WsBehavior::EchoAtMost(12));
    let url = server.url("/");
    let (code, stderr, doc) = probe_json(&[
        "capacity",
        "--vary",
        "ws-held",
        "--echo-rate",
        "100",
        "--max-connections",
        "1",
        "--start",
        "8",
        "--max-rate",
        "64",
        "--repeats",
        "1",
        "--slo",
        "p99<2s, errors<8%",
        "-d",
        "500ms",
        &url,
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(doc["finding"]["estimate"], 11.0, "{doc:#}");
    assert_eq!(doc["policy"]["unit"], "held", "{doc:#}");
    // A probe may run twice (loadlab late once on a busy machine): the counts, in order.
    let mut held: Vec<u64> = doc["probes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["ws_held"].as_u64().unwrap())
        .collect();
    held.dedup();
    assert_eq!(held, [8, 16, 12, 10, 11], "{doc:#}");
    assert!(
        doc["verdict"]
            .as_str()
            .unwrap()
            .starts_with("capacity 11 held"),
        "{doc:#}"
    );
    // Every probe echoed at the fixed rate; only the probes past the room were refused.
    assert!(WsCounters::get(&server.counters().refused) >= 2);
}

/// A sweep of echo rates: every probe's echoes are messages the server read.
#[test]
fn a_sweep_of_echo_rates_counts_what_the_server_read() {
    use loadlab_testkit::{WsBehavior, WsServer};
    let server = WsServer::start(WsBehavior::Echo);
    let (code, stderr, doc) = probe_json(&[
        "sweep",
        "--rates",
        "50,100",
        "--slo",
        "p99<2s",
        "-d",
        "500ms",
        &server.url("/"),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let probes = doc["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 2, "{doc:#}");
    let completed: u64 = probes
        .iter()
        .map(|p| {
            let m = &p["measure"];
            // On a busy machine a message due in a probe's last moments may go unsent (an
            // error, never a completion): what fell due is all accounted for.
            let (due, done) = (m["due"].as_u64().unwrap(), m["completed"].as_u64().unwrap());
            assert_eq!(done + m["errors"].as_u64().unwrap(), due, "{p:#}");
            done
        })
        .sum();
    assert!(completed >= 60, "{doc:#}");
    let seen = WsCounters::get(&server.counters().messages);
    // The server may have read a last message whose echo came after a probe ended.
    assert!(
        seen >= completed && seen <= completed + 2,
        "server {seen}, loadlab {completed}"
    );
}

/// `--vary ws-held` needs its echo load; the count it searches is not also given.
#[test]
fn a_held_search_without_its_echo_load_exits_2_with_the_fix() {
    for (args, says) in [
        (&["--vary", "ws-held"][..], "--echo-rate 200"),
        (&["--echo-rate", "100"], "add --vary ws-held"),
        (
            &["--vary", "ws-held", "--echo-rate", "100", "--ws-held", "5"],
            "drop --ws-held",
        ),
    ] {
        let out = loadlab()
            .arg("capacity")
            .args(args)
            .arg("ws://127.0.0.1:9/")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// A server that pushes on its own cadence: the text summary says how many, their rate and
/// the gaps between them; the JSON's websocket section has the exact count.
#[test]
fn pushes_and_their_gaps_are_in_the_summary() {
    use loadlab_testkit::{WsBehavior, WsServer};
    let every = std::time::Duration::from_millis(20);
    let server = WsServer::start(WsBehavior::Push { count: 5, every });
    let out = loadlab()
        .args([
            "run",
            "-t",
            "1",
            "--no-save",
            "--ws-mode",
            "hold",
            "-c",
            "2",
            "-d",
            "400ms",
        ])
        .arg(server.url("/"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Pushed       10 messages, 40 bytes"),
        "{stdout}"
    );
    assert!(
        stdout.contains("(between two pushes on one connection, 8 gaps)"),
        "{stdout}"
    );
    assert_eq!(WsCounters::get(&server.counters().pushed), 10);
}
