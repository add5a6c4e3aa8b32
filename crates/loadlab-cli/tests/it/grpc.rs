//! `loadlab run --grpc`: against the mock upstream's gRPC service the JSON result's count is
//! the server's own (and follows the schema); bad input exits 2 naming the flag and the fix.

use crate::common::{assert_valid, loadlab};
use std::path::{Path, PathBuf};

fn upstream_proto() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../loadlab-upstream/proto/upstream.proto")
}

#[test]
fn a_grpc_run_completes_exactly_what_the_server_counts() {
    let server = loadlab_upstream::Upstream::start_on_thread(Default::default()).unwrap();
    let url = server.grpc_url().to_string();
    let proto = upstream_proto();
    let out = loadlab()
        .args([
            "run",
            "--grpc",
            "loadlab.upstream.v1.Upstream/Call",
            "--proto",
        ])
        .arg(&proto)
        .args([
            "--data",
            "{}",
            "-c",
            "2",
            "--streams",
            "4",
            "-n",
            "800",
            "-t",
            "1",
        ])
        .args(["--json", "-", &url])
        .output()
        .unwrap();
    let stats = server.stop();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_valid(&value);
    assert_eq!(value["measured"]["requests"]["completed"], 800);
    assert_eq!(value["measured"]["requests"]["failed"], 0);
    assert_eq!(value["load"]["connections"], 2);
    assert_eq!(value["load"]["protocol"], "grpc");
    let plan = "gRPC unary loadlab.upstream.v1.Upstream/Call on http://";
    assert!(stderr.contains(plan), "{stderr}");
    assert_eq!(stats.grpc_requests, 800);
    assert_eq!(stats.grpc_connections, 2);
}

#[test]
fn bad_grpc_input_exits_2_naming_the_problem() {
    let proto = upstream_proto();
    let proto = proto.to_str().unwrap();
    let call = "loadlab.upstream.v1.Upstream/Call";
    let url = "http://127.0.0.1:9";
    let cases: &[(&[&str], &str)] = &[
        (&["--grpc", call], "--proto: a gRPC run needs"),
        (
            &["--grpc", call, "--proto", "/nonexistent/x.proto"],
            "is not a file",
        ),
        (
            &[
                "--grpc",
                "loadlab.upstream.v1.Upstream/Cal",
                "--proto",
                proto,
            ],
            "it has: Call",
        ),
        (
            &["--grpc", call, "--proto", proto, "--data", r#"{"x": 1}"#],
            "--data: does not match google.protobuf.Empty",
        ),
        (
            &["--grpc", call, "--proto", proto, "--http3"],
            "--http3: gRPC runs over HTTP/2",
        ),
        (
            &["--grpc", call, "--proto", proto, "-H", "grpc-timeout: 1S"],
            "-H/--header: `grpc-timeout` is set by the gRPC call itself",
        ),
        (
            &["--grpc", call, "--proto", proto, "--deadline", "1m"],
            "--deadline: 60s is longer than --timeout",
        ),
        (
            &["--grpc", call, "--reflect"],
            "--reflect: cannot connect to 127.0.0.1:9",
        ),
        (
            &["--grpc", call, "--reflect", "--proto", proto],
            "cannot be used with",
        ),
        (
            &["--grpc", call, "--proto", proto, "--grpc-messages", "3"],
            "--grpc-messages: loadlab.upstream.v1.Upstream.Call is a unary method",
        ),
        (
            &[
                "--grpc",
                "loadlab.upstream.v1.Upstream/Chat",
                "--proto",
                proto,
                "--grpc-messages",
                "100",
                "--grpc-message-rate",
                "10",
                "--timeout",
                "5s",
            ],
            "--grpc-message-rate: 100 messages at this rate take 9.9s",
        ),
        (
            &["--grpc", call, "--proto", proto, "--grpc-message-rate", "x"],
            "`x` is not a rate",
        ),
    ];
    for (args, words) in cases {
        let out = loadlab()
            .arg("run")
            .args(*args)
            .args(["-n", "1", url])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(words), "{args:?}: {stderr}");
    }
}

/// A grpcio server (Python, from the venv scripts/setup.sh makes) running `script` from
/// tests/grpc/: it prints its port, then its counts (numbers on a line) for each line it is
/// sent. None, with a note, where the venv is missing.
struct Grpcio {
    child: std::process::Child,
    to: Option<std::process::ChildStdin>,
    from: std::io::BufReader<std::process::ChildStdout>,
    url: String,
}

impl Grpcio {
    fn start(script: &str) -> Option<Grpcio> {
        let python =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/grpc-venv/bin/python");
        if !python.exists() {
            eprintln!("SKIPPED: no target/grpc-venv with grpcio; run scripts/setup.sh");
            return None;
        }
        let mut child = std::process::Command::new(&python)
            .arg(grpc_dir().join(script))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let to = child.stdin.take();
        let from = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut server = Grpcio {
            child,
            to,
            from,
            url: String::new(),
        };
        let port = server.line()[0];
        server.url = format!("http://127.0.0.1:{port}");
        Some(server)
    }

    fn line(&mut self) -> Vec<u64> {
        use std::io::BufRead as _;
        let mut line = String::new();
        self.from.read_line(&mut line).unwrap();
        let numbers: Result<Vec<u64>, _> = line.split_whitespace().map(str::parse).collect();
        match numbers {
            Ok(n) if !n.is_empty() => n,
            _ => panic!("not numbers: {line:?}"),
        }
    }

    /// The server's counts so far.
    fn counts(&mut self) -> Vec<u64> {
        use std::io::Write as _;
        writeln!(self.to.as_mut().unwrap()).unwrap();
        self.line()
    }
}

impl Drop for Grpcio {
    fn drop(&mut self) {
        // End of input ends it.
        drop(self.to.take());
        let _ = self.child.wait();
    }
}

fn grpc_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/grpc")
}

/// grpcio's own Health service (`tests/grpc/health_server.py`, from the venv
/// scripts/setup.sh makes), which no one here wrote: a closed loop and an open loop, each
/// completed count equal to the calls the server counted, no failure.
#[test]
fn against_grpcio_the_counts_are_the_servers() {
    let Some(mut server) = Grpcio::start("health_server.py") else {
        return;
    };
    let proto = grpc_dir().join("health.proto");
    let mut completed_so_far = 0;
    for load in [
        &["-c", "2", "--streams", "4", "-n", "1000"][..],
        &["--rate", "800", "-d", "800ms"],
    ] {
        let out = loadlab()
            .args(["run", "--grpc", "grpc.health.v1.Health/Check", "--proto"])
            .arg(&proto)
            .args(["--data", r#"{"service": ""}"#, "-t", "1", "--json", "-"])
            .args(load)
            .arg(&server.url)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{load:?}: {stderr}");
        let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let requests = &value["measured"]["requests"];
        assert_eq!(
            requests["failed"], 0,
            "{load:?}: {}",
            value["measured"]["errors"]
        );
        completed_so_far += requests["completed"].as_u64().unwrap();
        assert_eq!(server.counts(), [completed_so_far], "{load:?}");
    }
    assert!(completed_so_far >= 1_600, "{completed_so_far}");
}

/// Streaming methods on grpcio (`tests/grpc/stream_server.py`, one of each kind by
/// grpcio's generic handlers): for each, the calls completed and the messages each way
/// equal the server's own counts, no failure; ping-pong and on a rate, closed and open loop.
#[test]
fn streams_against_grpcio_count_what_the_server_counts() {
    let Some(mut server) = Grpcio::start("stream_server.py") else {
        return;
    };
    let proto = grpc_dir().join("streams.proto");
    let mut seen = [0u64; 3];
    for (method, data, load) in [
        (
            "Count",
            "5",
            &["-c", "2", "--streams", "4", "-n", "200"][..],
        ),
        (
            "Gather",
            "{}",
            &["--grpc-messages", "6", "-n", "200", "--streams", "4"],
        ),
        (
            "Chat",
            "{}",
            &["--grpc-messages", "8", "-n", "200", "--streams", "4"],
        ),
        (
            "Chat",
            "{}",
            &[
                "--grpc-messages",
                "4",
                "--grpc-message-rate",
                "100",
                "--rate",
                "100",
                "-d",
                "600ms",
            ],
        ),
    ] {
        let out = loadlab()
            .args([
                "run",
                "--grpc",
                &format!("loadlab.test.v1.Streams/{method}"),
            ])
            .arg("--proto")
            .arg(&proto)
            .args(["--data", data, "-t", "1", "--json", "-"])
            .args(load)
            .arg(&server.url)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{method} {load:?}: {stderr}");
        let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_valid(&value);
        let m = &value["measured"];
        assert_eq!(m["requests"]["failed"], 0, "{method}: {}", m["errors"]);
        let g = &value["grpc"];
        seen[0] += m["requests"]["completed"].as_u64().unwrap();
        seen[1] += g["messages_sent"].as_u64().unwrap();
        seen[2] += g["messages_received"].as_u64().unwrap();
        assert_eq!(server.counts(), seen, "{method} {load:?}: {g}");
    }
    // 200 + 200 + 200 closed-loop calls and an open loop's.
    assert!(seen[0] >= 640, "{seen:?}");
}

/// A gRPC run's text summary names the method and its kind, and shows gRPC statuses, not
/// the HTTP status every gRPC answer has ("Status 200" said nothing); a streaming run's
/// messages are counted with their times.
#[test]
fn the_text_summary_shows_grpc_statuses_and_messages() {
    let server = loadlab_upstream::Upstream::start_on_thread(Default::default()).unwrap();
    let url = server.grpc_url().to_string();
    let out = loadlab()
        .args([
            "run",
            "--grpc",
            "loadlab.upstream.v1.Upstream/Chat",
            "--proto",
        ])
        .arg(upstream_proto())
        .args([
            "--grpc-messages",
            "3",
            "-c",
            "1",
            "-n",
            "50",
            "-t",
            "1",
            &url,
        ])
        .output()
        .unwrap();
    let stats = server.stop();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("gRPC bidi streaming loadlab.upstream.v1.Upstream/Chat on http://"),
        "{stdout}"
    );
    assert!(stdout.contains("\ngRPC status  OK: 50\n"), "{stdout}");
    assert!(!stdout.contains("Status      "), "{stdout}");
    assert!(
        stdout.contains(
            "Messages     150 sent, 150 received (bidi streaming; 3 per call, ping-pong)"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("Msg latency  p50 "), "{stdout}");
    assert_eq!(
        (stats.grpc_messages_received, stats.grpc_messages_sent),
        (150, 150)
    );
}

/// Issue 53, a gRPC run is a run: a bidirectional-stream run's messages each way reach
/// Prometheus as `loadlab_grpc_messages_{sent,received}_total` (remote write, read back with
/// PromQL) equal to the result's `grpc` totals, which its timeline's intervals add up to.
#[test]
fn a_bidi_grpc_runs_message_counters_reach_prometheus_as_its_totals() {
    let Some(prom) = crate::programs::prometheus() else {
        return;
    };
    let server = loadlab_upstream::Upstream::start_on_thread(Default::default()).unwrap();
    let url = server.grpc_url().to_string();
    let run_id = format!("grpc-messages-{}", std::process::id());
    let json = std::env::temp_dir().join(format!("loadlab-cli-{run_id}.json"));
    let out = loadlab()
        .args(["run", "--grpc", "loadlab.upstream.v1.Upstream/Chat"])
        .arg("--proto")
        .arg(upstream_proto())
        .args(["--grpc-messages", "3", "--rate", "100", "-d", "1s"])
        .args(["--interval", "500ms", "-q", "--json"])
        .arg(&json)
        .arg("--metrics-out")
        .arg(format!(
            "prometheus+remote-write://{}/api/v1/write",
            prom.addr
        ))
        .args(["--metrics-label", &format!("run_id={run_id}"), &url])
        .output()
        .unwrap();
    let stats = server.stop();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    assert_valid(&r);
    let totals = ["messages_sent", "messages_received"].map(|k| r["grpc"][k].as_u64().unwrap());
    assert_eq!(
        totals[0],
        3 * r["measured"]["requests"]["completed"].as_u64().unwrap()
    );
    assert_eq!(
        totals,
        [stats.grpc_messages_received, stats.grpc_messages_sent]
    );
    let intervals = r["timeline"].as_array().unwrap();
    let over_timeline = ["sent", "received"].map(|k| {
        intervals
            .iter()
            .filter_map(|i| i["messages"][k].as_u64())
            .sum::<u64>()
    });
    assert_eq!(over_timeline, totals, "{}", r["timeline"]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    for (way, total) in ["sent", "received"].into_iter().zip(totals) {
        let q =
            format!("max_over_time(loadlab_grpc_messages_{way}_total{{run_id=\"{run_id}\"}}[1m])");
        assert_eq!(
            crate::programs::query(&prom.addr, &q, now),
            Some(total as f64),
            "{q}"
        );
    }
}
