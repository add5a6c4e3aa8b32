//! `loadlab run --grpc`: against the mock upstream's gRPC service the JSON result's count is
//! the server's own (and follows the schema); bad input exits 2 naming the flag and the fix.

use crate::common::{assert_valid, loadlab};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

fn upstream_proto() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../loadlab-upstream/proto/upstream.proto")
}

#[test]
fn a_grpc_run_completes_exactly_what_the_server_counts() {
    let (tx, rx) = mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let up = loadlab_upstream::Upstream::start(Default::default())
                .await
                .unwrap();
            tx.send(up.grpc_url()).unwrap();
            let _ = stop_rx.await;
            up.stats()
        })
    });
    let url = rx.recv().unwrap();
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
    stop_tx.send(()).unwrap();
    let stats = server.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_valid(&value);
    assert_eq!(value["measured"]["requests"]["completed"], 800);
    assert_eq!(value["measured"]["requests"]["failed"], 0);
    assert_eq!(value["load"]["connections"], 2);
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
