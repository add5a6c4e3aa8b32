//! What the report tests share: the saved results, a long synthetic run built from one, a
//! result full of hostile strings, one with HTTP/3 0-RTT figures, and where test artifacts go.
#![allow(dead_code)] // each test binary uses part of this

use loadlab_result::RunResult;
use std::path::PathBuf;

/// A result saved from a real run (`tests/fixtures/*.json`).
pub fn fixture(name: &str) -> RunResult {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("fixture loads")
}

/// A 10-minute run at 1 s intervals with the server sampled every 100 ms (600 intervals,
/// 6,000 samples), built by repeating the server fixture's measured intervals and samples. A
/// few intervals fail requests and the first requests are a cold start, so every mark shows.
pub fn ten_minute_run() -> RunResult {
    let mut r = fixture("server.json");
    let intervals: Vec<_> = r.timeline.iter().filter(|i| !i.warmup).cloned().collect();
    let warmup = r.timeline.iter().find(|i| i.warmup).cloned();
    r.timeline = warmup.into_iter().collect();
    for n in 0..599 {
        let mut i = intervals[n % intervals.len()].clone();
        i.start_s = 1.0 + n as f64;
        if n % 97 == 40 {
            i.failed = 120 + n as u64;
        }
        r.timeline.push(i);
    }
    let server = r.server.as_mut().expect("the server fixture has a server");
    let samples = server.samples.clone();
    server.samples.clear();
    let dt = 0.1;
    for n in 0..6_000 {
        let mut w = samples[n % samples.len()];
        w.t_s = (n + 1) as f64 * dt;
        w.dt_s = dt;
        // A slow climb in memory, so the chart has a shape.
        w.rss_bytes += n as u64 * 1_000;
        w.memory_bytes = w.memory_bytes.map(|m| m + n as u64 * 900);
        server.samples.push(w);
    }
    r.load.duration_s = Some(599.0);
    r.measured.duration_s = 599.0;
    if let Some(first) = r.first_requests.as_mut() {
        first.cold_start = true;
        first.latency_us.p50 = 9_500.0;
        first.window_s = 0.6;
    }
    r
}

/// Strings that would run a script if a report put them into a page as markup.
pub const PAYLOADS: [&str; 3] = [
    "<script>window.__pwned=1</script>",
    "\"><img src=x onerror=\"window.__pwned=2\">",
    "</script><script>window.__pwned=3</script>",
];

/// A result whose server- and user-controlled strings all carry [`PAYLOADS`]: the command,
/// the URL, the plan, error details, verdicts, warnings, the server's description.
pub fn hostile_run() -> RunResult {
    let mut r = fixture("server.json");
    let all = PAYLOADS.join(" ");
    r.command.extend(PAYLOADS.iter().map(|p| p.to_string()));
    r.target.url = format!("http://127.0.0.1:8080/{}", PAYLOADS[0]);
    r.target.method = PAYLOADS[1].to_string();
    r.load.plan = format!("closed loop {}", PAYLOADS[2]);
    r.environment.hostname = PAYLOADS[1].to_string();
    r.measured.errors.insert("malformed_response".into(), 7);
    r.measured.error_details.insert(
        "malformed_response".into(),
        format!("bad status line \"HTTP/1.1 200 {all}\"\u{2028}<!-- x -->"),
    );
    r.measured
        .status_codes
        .insert(format!("599 {}", PAYLOADS[1]), 1);
    r.verdicts.push(format!("the server said: {}", PAYLOADS[0]));
    r.verdicts.push(PAYLOADS[2].to_string());
    r.warnings.push(format!("header X-Evil: {}", PAYLOADS[1]));
    if let Some(s) = r.server.as_mut() {
        s.description = all.clone();
        if let Some(st) = s.startup.as_mut() {
            st.health_url = format!("http://127.0.0.1/{}", PAYLOADS[2]);
        }
    }
    r
}

/// `run` as if it had used `--http3-0rtt`: 45 requests sent as early data on 9 connections,
/// of which the server took 40 on 8 and discarded 5 on 1; with `handshake`, the 0-RTT
/// handshakes took p50 2.06 ms, p99 9.66 ms, max 10.1 ms.
pub fn with_early_data(run: &RunResult, handshake: bool) -> RunResult {
    let mut r = run.clone();
    r.measured.early_data = Some(loadlab_result::EarlyData {
        connections: 9,
        connections_accepted: 8,
        connections_rejected: 1,
        requests: 45,
        requests_accepted: 40,
        requests_rejected: 5,
        handshake_us: handshake.then_some(loadlab_result::LatencySummary {
            count: 9,
            min: 1_500.0,
            mean: 3_000.0,
            stdev: 2_000.0,
            p50: 2_060.0,
            p75: 2_500.0,
            p90: 9_000.0,
            p95: 9_500.0,
            p99: 9_660.0,
            p99_9: 10_100.0,
            p99_99: 10_100.0,
            max: 10_100.0,
        }),
    });
    r
}

/// Where tests leave files for people to look at: `<target>/report-artifacts/`.
pub fn artifact_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target tmp dir has a parent")
        .join("report-artifacts");
    std::fs::create_dir_all(&dir).expect("artifact dir");
    dir
}
