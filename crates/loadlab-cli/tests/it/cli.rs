//! The `loadlab` binary as a user runs it: real processes against real loopback servers.

use crate::common;
use common::loadlab;
use loadlab_testkit::ScratchDir;

use common::assert_valid;
use loadlab_testkit::{response, Behavior, H2Behavior, H2Server, TestCa, TestServer};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

fn run(args: &[&str]) -> Output {
    loadlab().args(args).output().expect("loadlab runs")
}

fn tempdir() -> ScratchDir {
    ScratchDir::new("cli-test")
}

#[test]
fn bad_flags_exit_2_naming_the_flag_and_the_fix() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["run", "-c", "0", "http://127.0.0.1:9/"],
            &["-c/--connections", "-c 50"],
        ),
        (
            &["run", "localhost:8080/"],
            &["no scheme", "http://localhost:8080/"],
        ),
        (
            &["run", "-H", "NoColon", "http://127.0.0.1:9/"],
            &["-H/--header", "Name: value"],
        ),
        (
            &["run", "-d", "10x", "http://127.0.0.1:9/"],
            &["--duration", "e.g. 10s"],
        ),
        (
            &["run", "-t", "0", "http://127.0.0.1:9/"],
            &["-t/--threads"],
        ),
        (
            &[
                "run",
                "--json",
                "/nonexistent-dir/x.json",
                "http://127.0.0.1:9/",
            ],
            &["--json", "/nonexistent-dir/x.json"],
        ),
        (
            &[
                "run",
                "--body-file",
                "/nonexistent-file",
                "http://127.0.0.1:9/",
            ],
            &["--body-file"],
        ),
        (
            &["run", "--rate", "0", "http://127.0.0.1:9/"],
            &["--rate", "--rate 1000"],
        ),
        (
            &["run", "--rate", "10", "-c", "5", "http://127.0.0.1:9/"],
            &["-c/--connections", "--max-connections"],
        ),
        (
            &["run", "--stages", "10s", "http://127.0.0.1:9/"],
            &["--stages", "DURATION:LEVEL"],
        ),
        (
            &["run", "--rate", "10", "-n", "5", "http://127.0.0.1:9/"],
            &["-n/--requests", "-d/--duration"],
        ),
        (
            &["run", "--insecure", "http://127.0.0.1:9/"],
            &["URL", "https://"],
        ),
        (
            &[
                "run",
                "--cacert",
                "/nonexistent.pem",
                "https://127.0.0.1:9/",
            ],
            &["--cacert", "/nonexistent.pem"],
        ),
        (
            &["run", "--cert", "Cargo.toml", "https://127.0.0.1:9/"],
            &["--cert", "--key"],
        ),
        (
            &["run", "--streams", "10", "http://127.0.0.1:9/"],
            &["--streams", "--http2"],
        ),
        (
            &["run", "--http2", "--no-keepalive", "http://127.0.0.1:9/"],
            &["--no-keepalive", "HTTP/2"],
        ),
    ];
    for (args, needles) in cases {
        let out = run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        for n in *needles {
            assert!(stderr.contains(n), "{args:?}: `{stderr}` lacks `{n}`");
        }
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn json_result_follows_the_schema() {
    let server = TestServer::start(Behavior::Fixed(response(200, "Hello, World!")));
    let dir = tempdir();
    let path = dir.join("result.json");
    let out = run(&[
        "run",
        "-n",
        "500",
        "-c",
        "4",
        "-t",
        "2",
        "--warmup",
        "100ms",
        "--json",
        path.to_str().unwrap(),
        &server.url("/"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_valid(&value);
    assert_eq!(value["measured"]["requests"]["completed"], 500);
    assert!(value["warmup"].is_object());
    // The generator's own connections, sampled for the path's figures (docs/path.md).
    assert_eq!(value["path"][0]["side"], "generator", "{}", value["path"]);
    assert_eq!(value["path"][0]["transport"], "tcp");
    // The human summary went to standard output.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("500 completed of 500 issued"), "{stdout}");

    // `--json -` puts JSON alone on standard output, a failing run included.
    let out = run(&["run", "-n", "3", "--json", "-", "http://127.0.0.1:9/"]);
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_valid(&value);
    assert_eq!(value["measured"]["errors"]["connect_refused"], 3);
    assert!(String::from_utf8_lossy(&out.stderr).contains("connect_refused"));

    // An open loop with stages, its timeline and an HdrHistogram log.
    let hlog = dir.join("run.hlog");
    let out = run(&[
        "run",
        "--stages",
        "1s:200, 1s:200->400",
        "--arrival",
        "poisson",
        "--interval",
        "500ms",
        "--json",
        "-",
        "--hdr-log",
        hlog.to_str().unwrap(),
        &server.url("/"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_valid(&value);
    assert_eq!(value["load"]["model"], "open_loop");
    assert_eq!(value["load"]["arrival"], "poisson");
    assert!(value["timeline"].as_array().unwrap().len() >= 4);
    assert!(value["measured"]["service_time_us"].is_object());
    let log = std::fs::read_to_string(&hlog).unwrap();
    assert!(
        log.lines()
            .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
            .count()
            >= 4,
        "{log}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .contains("open loop, poisson arrivals: 1s at 200 requests/s, then 1s from 200 to 400"),
        "{stderr}"
    );
}

#[test]
fn ctrl_c_prints_and_writes_the_partial_result() {
    // Ctrl-C, and what `timeout`, `docker stop` and CI cancellations send: each saves the
    // partial result and exits 128 + the signal (130, 143, 129).
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        interrupted_by(signal);
    }
}

fn interrupted_by(signal: i32) {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = tempdir();
    let path = dir.join(format!("partial-{signal}.json"));
    let child = loadlab()
        .args([
            "run",
            "-d",
            "60s",
            "-c",
            "2",
            "--json",
            path.to_str().unwrap(),
            &server.url("/"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while server.counters().answered() < 100 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the run never started"
        );
        std::thread::yield_now();
    }
    // SAFETY: signalling our own child by its PID.
    unsafe { libc::kill(child.id() as i32, signal) };
    let out = child.wait_with_output().unwrap();
    // 128 + the signal: SIGINT 130, SIGTERM 143, SIGHUP 129.
    assert_eq!(out.status.code(), Some(128 + signal), "signal {signal}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("INTERRUPTED"), "{stdout}");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_valid(&value);
    assert_eq!(value["interrupted"], true);
    // The signal, not the 60 s deadline, ended it: by the run's own clock (the test's wall
    // clock, "under 20 s", was a bound a busy machine could break).
    let ran_s = value["measured"]["duration_s"].as_f64().unwrap();
    assert!(
        ran_s < 60.0,
        "signal {signal} did not stop the run: {ran_s} s"
    );
    // The server had answered 100 when the signal went; at most the 2 responses in flight on
    // the 2 connections may not have been read by then.
    assert!(value["measured"]["requests"]["completed"].as_u64().unwrap() >= 98);
}

/// An earlier result at the --json path survives a run that fails before it starts or is
/// killed: results are written beside it and renamed into place only when whole.
#[test]
fn an_earlier_result_is_never_truncated() {
    let dir = tempdir();
    let path = dir.join("kept.json");
    std::fs::write(&path, "{\"earlier\": true}\n").unwrap();
    let p = path.to_str().unwrap();
    // An up-front failure: a host that does not resolve, a bad --hdr-log path.
    let out = run(&[
        "run",
        "-d",
        "1s",
        "--json",
        p,
        "http://no-such-host.invalid:8080/",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&[
        "run",
        "-d",
        "1s",
        "--json",
        p,
        "--hdr-log",
        "/nonexistent/dir/x.hlog",
        "http://127.0.0.1:9/",
    ]);
    assert_eq!(out.status.code(), Some(2));
    // Killed mid-run (SIGKILL: nothing can save it, and nothing may destroy the old file).
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let mut child = loadlab()
        .args([
            "run",
            "-d",
            "60s",
            "-c",
            "2",
            "-q",
            "--json",
            p,
            &server.url("/"),
        ])
        .spawn()
        .unwrap();
    let started = Instant::now();
    while server.counters().answered() < 50 && started.elapsed() < Duration::from_secs(20) {
        std::thread::yield_now();
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\"earlier\": true}\n"
    );
    // A run that completes replaces it whole.
    let out = run(&[
        "run",
        "-d",
        "300ms",
        "-c",
        "2",
        "-q",
        "--json",
        p,
        &server.url("/"),
    ]);
    assert!(out.status.success());
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_valid(&value);
}

#[test]
fn https_with_a_ca_file_and_the_summary_shows_tls() {
    let ca = TestCa::new();
    let server = TestServer::start_tls(Behavior::Fixed(response(200, "secure")), &ca);
    let dir = tempdir();
    let ca_path = dir.join("ca.pem");
    std::fs::write(&ca_path, ca.pem()).unwrap();
    let url = format!("https://localhost:{}/", server.addr().port());
    let out = run(&[
        "run",
        "-n",
        "300",
        "-c",
        "3",
        "--no-keepalive",
        "--tls-version",
        "1.3",
        "--cacert",
        ca_path.to_str().unwrap(),
        "--json",
        "-",
        &url,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&value);
    assert_eq!(value["measured"]["requests"]["completed"], 300);
    assert_eq!(value["target"]["tls"]["versions"], "1.3");
    assert!(value["measured"]["tls_resumed"].as_u64().unwrap() > 250);
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(
        summary.contains("TLS 1.3") && summary.contains("resumed of 300"),
        "{summary}"
    );
}

#[test]
fn http2_prior_knowledge_from_the_command_line() {
    let server = H2Server::start(H2Behavior::default());
    let out = run(&[
        "run",
        "--http2",
        "-c",
        "2",
        "--streams",
        "8",
        "-n",
        "400",
        "--json",
        "-",
        &format!("http://{}/", server.addr()),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&value);
    assert_eq!(value["load"]["protocol"], "h2");
    assert_eq!(value["measured"]["requests"]["completed"], 400);
    assert!(String::from_utf8_lossy(&out.stderr).contains("2 connections x 8 streams"));
}

/// Hostile command lines (issue 15): each exits 2 at once, naming the problem.
#[test]
fn impossible_runs_are_refused_up_front() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "-c", "900000", "-d", "1s", "http://127.0.0.1:9/"],
            "-c 900000",
        ),
        (
            &["run", "--rate", "1e12", "-d", "1s", "http://127.0.0.1:9/"],
            "--rate",
        ),
        (
            &["run", "-d", "1s", "http://127.0.0.1:99999/"],
            "invalid port",
        ),
        (
            &["run", "-d", "18446744073709551615s", "http://127.0.0.1:9/"],
            "duration",
        ),
        (
            &[
                "run",
                "--stages",
                "1s:2.5",
                "--closed",
                "http://127.0.0.1:9/",
            ],
            "not a whole number",
        ),
        // Not clap's tip "use '-- -1'", which would make it the URL.
        (
            &["run", "-c", "-1", "http://127.0.0.1:9/"],
            "`-1` is not a count",
        ),
        (
            &["run", "--pipeline", "0", "http://127.0.0.1:9/"],
            "--pipeline: must be at least 1",
        ),
        // HTTP/2 multiplexes already: the fix is its own flag.
        (
            &["run", "--pipeline", "16", "--http2", "http://127.0.0.1:9/"],
            "give --streams 16 instead",
        ),
    ];
    for (args, needle) in cases {
        let out = run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        // Up front: no run began, so no summary was printed (an invariant, where "under 5 s"
        // was a wall-clock bound a busy machine could break).
        assert!(
            out.stdout.is_empty(),
            "{args:?} ran: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// A host that does not resolve: one message, said once.
#[test]
fn a_resolver_error_is_said_once() {
    let out = run(&["run", "-d", "1s", "http://no-such-host.invalid:8080/"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.matches("cannot resolve").count(), 1, "{stderr}");
    // The resolver's reason appears once, in that sentence.
    let reason = stderr
        .split("cannot resolve `no-such-host.invalid`: ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .unwrap_or_default()
        .to_string();
    assert!(!reason.is_empty(), "{stderr}");
    assert_eq!(stderr.matches(reason.as_str()).count(), 1, "{stderr}");
}

/// A target's build does not inherit what points cargo elsewhere or wraps rustc for loadlab's
/// own build (its test suite compiles under clippy-driver as the workspace's rustc wrapper):
/// a Rust target built with them put its binary elsewhere, or failed on its own lints. The
/// rest of the environment, and the manifest's own variables, it keeps.
#[test]
fn a_targets_build_leaves_out_loadlabs_own_build_variables() {
    let dir = tempdir();
    let target = dir.join("envprobe");
    std::fs::create_dir_all(target.join("src")).unwrap();
    std::fs::write(target.join("src/main.txt"), "v1").unwrap();
    std::fs::write(
        target.join("target.toml"),
        r#"
name = "envprobe"
language = "shell"
framework = "none"
framework_version = "0"
toolchain = ["sh"]
toolchain_install = "apt-get install dash"
sources = ["src"]
warmup_secs = 1
[build]
command = ["sh", "-c", "mkdir -p out && env > out/env.txt"]
env = { FROM_MANIFEST = "kept" }
artifacts = ["out/env.txt"]
[run]
command = ["sh", "-c", "sleep 1"]
"#,
    )
    .unwrap();
    let out = loadlab()
        .args(["lab", "--targets"])
        .arg(dir.path())
        .args(["build", "envprobe"])
        .env("CARGO_TARGET_DIR", "/nonexistent/target")
        .env("CARGO_BUILD_TARGET_DIR", "/nonexistent/target")
        .env("RUSTC_WORKSPACE_WRAPPER", "/usr/bin/false")
        .env("CLIPPY_ARGS", "-D__CLIPPY_HACKERY__warnings")
        .env("LOADLAB_PROBE_KEPT", "yes")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let env = std::fs::read_to_string(target.join("out/env.txt")).unwrap();
    for gone in [
        "CARGO_TARGET_DIR=",
        "CARGO_BUILD_TARGET_DIR=",
        "RUSTC_WORKSPACE_WRAPPER=",
        "CLIPPY_ARGS=",
    ] {
        assert!(
            !env.lines().any(|l| l.starts_with(gone)),
            "{gone} reached the build"
        );
    }
    assert!(env.lines().any(|l| l == "LOADLAB_PROBE_KEPT=yes"), "{env}");
    assert!(env.lines().any(|l| l == "FROM_MANIFEST=kept"), "{env}");
}
