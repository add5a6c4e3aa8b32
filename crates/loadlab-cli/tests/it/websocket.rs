//! `loadlab run ws://...` against WebSocket servers no one here wrote: Python's `websockets`
//! (`tests/ws/echo_server.py`, from the venv scripts/setup.sh makes) and Debian's
//! `websocketd` running a shell loop that echoes and counts each line. The echoes loadlab
//! completed equal the messages each server counted (closed and open loop), and a held load
//! holds the server's connections; bad combinations exit 2 naming the flag and the fix.

use crate::common::{assert_valid, loadlab};
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
    let _ = server.kill();
    let _ = server.wait();
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
    let mut server = Command::new("websocketd")
        .arg(format!("--port={port}"))
        .args(["--address=127.0.0.1", "--loglevel=error"])
        .arg(&echo)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
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
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn websocket_flags_that_make_no_sense_exit_2_with_the_fix() {
    for (args, says) in [
        (
            &["--http2", "ws://127.0.0.1:9/"][..],
            "--http2: a WebSocket runs over HTTP/1.1",
        ),
        (
            &["--ws-mode", "hold", "http://127.0.0.1:9/"],
            "need a ws:// or wss:// URL",
        ),
        (
            &["--ws-mode", "hold", "--rate", "5", "ws://127.0.0.1:9/"],
            "--ws-mode connect",
        ),
    ] {
        let out = loadlab().arg("run").args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
