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

/// grpcio's own Health service (`tests/grpc/health_server.py`, from the venv
/// scripts/setup.sh makes), which no one here wrote: a closed loop and an open loop, each
/// completed count equal to the calls the server counted, no failure.
#[test]
fn against_grpcio_the_counts_are_the_servers() {
    use std::io::{BufRead as _, BufReader, Write as _};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/grpc");
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/grpc-venv/bin/python");
    if !python.exists() {
        eprintln!("SKIPPED: no target/grpc-venv with grpcio; run scripts/setup.sh");
        return;
    }
    let mut server = std::process::Command::new(&python)
        .arg(dir.join("health_server.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut to_server = server.stdin.take().unwrap();
    let mut from_server = BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    let mut read_number = |line: &mut String| -> u64 {
        line.clear();
        from_server.read_line(line).unwrap();
        line.trim()
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {line:?}"))
    };
    let port = read_number(&mut line);
    let url = format!("http://127.0.0.1:{port}");
    let proto = dir.join("health.proto");
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
            .arg(&url)
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
        writeln!(to_server).unwrap();
        assert_eq!(read_number(&mut line), completed_so_far, "{load:?}");
    }
    assert!(completed_so_far >= 1_600, "{completed_so_far}");
    drop(to_server);
    let _ = server.wait();
}
