//! What the store's tests share: the real result fixtures (the report crate's, read by
//! relative path), a result that exercises every summary column, a result full of secrets,
//! and stores in temporary directories.

use loadlab_result::{FirstRequests, RunResult, ServerReport};
use loadlab_store::Store;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// The report crate's result fixtures: `(file name, text)`, sorted by name.
pub fn fixture_texts() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../loadlab-report/tests/fixtures");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 3,
        "expected the result fixtures in {}",
        dir.display()
    );
    files
        .iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(p).unwrap())
        })
        .collect()
}

/// One fixture, parsed: `ok`, `open` or `refused`.
pub fn fixture(name: &str) -> RunResult {
    let (_, text) = fixture_texts()
        .into_iter()
        .find(|(n, _)| n == &format!("{name}.json"))
        .unwrap_or_else(|| panic!("no fixture {name}.json"));
    serde_json::from_str(&text).unwrap()
}

/// `ok.json` with a launched server that was OOM-killed, and a cold start: every summary
/// column has a value.
pub fn with_server() -> RunResult {
    let mut result = fixture("ok");
    let report: ServerReport = serde_json::from_value(serde_json::json!({
        "source": "launched",
        "description": "./server --port 0",
        "pid": 4242,
        "startup": {
            "ready_s": 0.25,
            "health_url": "http://127.0.0.1:18080/health",
            "idle_rss_bytes": 1_000_000
        },
        "sample_interval_s": 0.1,
        "summary": {
            "windows": 3,
            "cpu_cores": {"p50": 0.5, "p99": 0.875, "max": 0.9, "mean": 0.6},
            "rss_bytes": {"p50": 2.0e6, "p99": 3.5e6, "max": 3.5e6, "mean": 2.5e6},
            "memory_bytes": {"p50": 4.0e6, "p99": 5.25e6, "max": 5.5e6, "mean": 4.5e6},
            "threads_max": 4,
            "fds_max": 10,
            "processes_max": 1,
            "generator_cpu_cores": {"p50": 0.1, "p99": 0.2, "max": 0.2, "mean": 0.1}
        },
        "exit": {"at_s": 1.5, "status": "signal 9 (SIGKILL)", "oom_killed": true},
        "samples": []
    }))
    .unwrap();
    loadlab_result::attach_server(&mut result, report);
    let latency = result.measured.latency_us.clone().unwrap();
    result.first_requests = Some(FirstRequests {
        requests: 20,
        window_s: 0.01,
        latency_us: latency.clone(),
        rest_us: latency,
        cold_start: true,
    });
    result
}

/// Every secret the tests plant contains this, and nothing else in a result does.
pub const SECRET: &str = "S3CRET";

/// `ok.json` with a secret in every place a person could put one: each secret header in
/// each command-line form and case, URL passwords, the plan, verdicts, warnings, error
/// details, the server's command and health URL.
pub fn with_secrets() -> RunResult {
    let mut result = with_server();
    result.command = [
        "loadlab",
        "run",
        "-H",
        "Authorization: Bearer S3CRET-1",
        "-HcOOkie: session=S3CRET-2",
        "--header=X-API-KEY: S3CRET-3",
        "--header",
        "proxy-authorization: Basic S3CRET-4",
        "-H",
        "x-api-key:S3CRET-5",
        "--header=AUTHORIZATION:S3CRET-6",
        "-qH",
        "Cookie:S3CRET-7",
        "--tag",
        "visible-marker",
        "http://alice:S3CRET-8@127.0.0.1:18080/",
    ]
    .map(String::from)
    .to_vec();
    result.target.url = "http://alice:S3CRET-9@127.0.0.1:18080/".into();
    result.load.plan = "closed loop: 20 connections, Authorization: Bearer S3CRET-10".into();
    result
        .verdicts
        .push("the server answered 401 to Cookie: S3CRET-11".into());
    result
        .warnings
        .push("https://bob:S3CRET-12@example.invalid/x redirected".into());
    result
        .measured
        .error_details
        .insert("status".into(), r#"{"X-Api-Key": "S3CRET-13"}"#.into());
    let server = result.server.as_mut().unwrap();
    server.description = "./server --upstream http://u:S3CRET-14@db/".into();
    server.startup.as_mut().unwrap().health_url = "http://h:S3CRET-15@127.0.0.1/health".into();
    result
}

/// Configuration and environment JSON with secrets in them.
pub fn secret_config() -> serde_json::Value {
    serde_json::json!({
        "headers": ["Authorization: Bearer S3CRET-20", "Accept: */*"],
        "X-Api-Key": "S3CRET-21",
        "url": "http://carol:S3CRET-22@127.0.0.1:18080/",
        "har": [{"name": "cookie", "value": "S3CRET-23"}],
    })
}

pub fn secret_environment() -> serde_json::Value {
    serde_json::json!({
        "cpu_model": "test CPU",
        "proxy": "http://proxy:S3CRET-24@proxy.invalid:3128",
        "Proxy_Authorization": "S3CRET-25",
        "loadlab_commit": "abc123",
    })
}

/// A fresh store in its own temporary directory (kept alive by the returned guard).
pub fn temp_store() -> (TempDir, PathBuf, Store) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("loadlab.db");
    let store = Store::open(&path).unwrap();
    (dir, path, store)
}

/// The redacted result, as the CLI writes it with `--json`.
pub fn redacted(result: &RunResult) -> RunResult {
    let mut result = result.clone();
    loadlab_store::redact(&mut result);
    result
}

/// What `loadlab run --json` writes: the JSON exporter's output, reproduced here with
/// serde_json alone.
pub fn json_file_bytes(result: &RunResult) -> String {
    serde_json::to_string_pretty(result).unwrap() + "\n"
}

/// Two long texts are equal; on failure, says where they part instead of printing both.
pub fn assert_same_text(got: &str, want: &str, what: &str) {
    if got == want {
        return;
    }
    let at = got
        .bytes()
        .zip(want.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    let around = |s: &str| {
        s.get(at.saturating_sub(40)..(at + 40).min(s.len()))
            .map(String::from)
    };
    panic!(
        "{what}: texts differ at byte {at} (lengths {} and {}): got {:?}, want {:?}",
        got.len(),
        want.len(),
        around(got),
        around(want)
    );
}
