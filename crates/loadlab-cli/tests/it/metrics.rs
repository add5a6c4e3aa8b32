//! `loadlab run` wired to Prometheus, as a user runs it against real programs: a Python
//! prometheus_client app scraped during a run (`--server-metrics`), a dead endpoint counted and
//! named, a run's intervals sent to Debian's Prometheus (`--metrics-out`) and read back with
//! PromQL, and `--prometheus --query` over the run's window. Prometheus and the app's venv are
//! skipped (SKIPPED printed) when scripts/setup.sh has not installed them.

use crate::common;

// The real programs, started exactly as loadlab-metrics' own tests start them.
use crate::programs;

use common::assert_valid;
use loadlab_testkit::{response, Behavior, TestServer};
use std::process::{Command, Output};

fn run(args: &[&str], json: &std::path::Path) -> (Output, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args([
            "run",
            "--rate",
            "200",
            "-d",
            "2s",
            "--interval",
            "500ms",
            "-q",
        ])
        .arg("--json")
        .arg(json)
        .args(args)
        .output()
        .expect("loadlab runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "loadlab failed: {stderr}");
    let text = std::fs::read_to_string(json).expect("the result is written");
    let result: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_valid(&result);
    (out, result)
}

fn json_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "loadlab-cli-metrics-{name}-{}.json",
        std::process::id()
    ))
}

fn dead_url() -> String {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    format!("http://{addr}/metrics")
}

#[test]
fn a_dead_server_metrics_url_is_counted_and_named_and_the_run_completes() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dead = dead_url();
    let json = json_path("dead");
    let (_, r) = run(&["--server-metrics", &dead, &server.url("/")], &json);
    let _ = std::fs::remove_file(&json);
    assert_eq!(
        r["measured"]["requests"]["completed"], 400,
        "{}",
        r["measured"]
    );
    let e = &r["server_metrics"]["endpoints"][0];
    assert_eq!(e["url"], dead.as_str());
    assert_eq!(e["scrapes_ok"], 0);
    // Once at the start, every 500 ms, once at the end.
    assert!(e["scrapes_failed"].as_u64().unwrap() >= 4, "{e}");
    let last = e["last_error"].as_str().unwrap();
    assert!(last.contains(&dead) && last.contains("refused"), "{last}");
    // Nothing to stand in for the server: no server report.
    assert!(r["server"].is_null());
}

#[test]
fn server_metrics_put_a_python_apps_own_series_on_the_run() {
    let Some(app) = programs::python_app() else {
        return;
    };
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let url = format!("http://{}/metrics", app.addr);
    let json = json_path("app");
    let started = std::time::Instant::now();
    let (_, r) = run(
        &[
            "--server-metrics",
            &url,
            "--server-metrics-select",
            "process_cpu_seconds_total",
            "--server-metrics-select",
            "process_open_fds",
            &server.url("/"),
        ],
        &json,
    );
    let _ = std::fs::remove_file(&json);
    let e = &r["server_metrics"]["endpoints"][0];
    assert_eq!(
        (e["scrapes_failed"].as_u64(), e["last_error"].as_str()),
        (Some(0), None)
    );
    assert!(e["scrapes_ok"].as_u64().unwrap() >= 5, "{e}");
    assert_eq!(e["well_known"]["cpu_cores"], "process_cpu_seconds_total");
    assert_eq!(
        e["well_known"]["memory_bytes"],
        "process_resident_memory_bytes"
    );
    let series = e["series"].as_array().unwrap();
    let cpu = series
        .iter()
        .find(|s| s["series"] == "process_cpu_seconds_total")
        .unwrap();
    assert_eq!(cpu["per_s"], true);
    let fds = series
        .iter()
        .find(|s| s["series"] == "process_open_fds")
        .unwrap();
    assert_eq!(fds["per_s"], false);
    assert!(fds["points"][0]["value"].as_f64().unwrap() >= 3.0, "{fds}");
    // Points on the run's timeline, in order: the first taken as the run starts (a moment
    // before its load, so at a small negative time), the last as it stops (so not before
    // its 2 s less one 500 ms interval; a loaded machine only makes it later), and none
    // outside the command's own lifetime. Bounds that load cannot break.
    let wall = started.elapsed().as_secs_f64();
    let times: Vec<f64> = fds["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["t_s"].as_f64().unwrap())
        .collect();
    let (first, last) = (times[0], times[times.len() - 1]);
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    assert!(
        first > -wall && first < 1.5 && last >= 1.5 && last <= wall,
        "{times:?} wall {wall}"
    );
    // Nothing sampled the app: its own CPU and memory stand in, and say so.
    let s = &r["server"];
    assert_eq!(s["source"], "metrics");
    assert!(
        s["description"]
            .as_str()
            .unwrap()
            .contains("process_cpu_seconds_total"),
        "{s}"
    );
    assert!(
        s["summary"]["rss_bytes"]["max"].as_f64().unwrap() > 1e6,
        "{s}"
    );
    // The app burns a CPU-second after its first scrape: its CPU shows on the timeline.
    let peak = r["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["server"]["cpu_cores"].as_f64())
        .fold(0.0, f64::max);
    assert!(peak > 0.3, "{}", r["timeline"]);
}

#[test]
fn metrics_out_reaches_prometheus_and_query_reads_the_run_back() {
    let Some(prom) = programs::prometheus() else {
        return;
    };
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let run_id = format!("cli-test-{}", std::process::id());
    let out = format!("prometheus+remote-write://{}/api/v1/write", prom.addr);
    let completed =
        format!("max_over_time(loadlab_requests_completed_total{{run_id=\"{run_id}\"}}[1m])");
    let json = json_path("out");
    let (output, r) = run(
        &[
            "--metrics-out",
            &out,
            "--metrics-label",
            &format!("run_id={run_id}"),
            "--metrics-label",
            "variant=cli",
            "--prometheus",
            &format!("http://{}", prom.addr),
            "--query",
            &completed,
            &server.url("/"),
        ],
        &json,
    );
    let _ = std::fs::remove_file(&json);
    let measured = r["measured"]["requests"]["completed"].as_f64().unwrap();
    assert_eq!(measured, 400.0);
    // -q prints no summary, and no note either when every interval was sent.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("failed"), "{stderr}");
    assert!(r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|w| !w.as_str().unwrap().contains("metrics out")));
    // The query over the run's window, kept in the result: its last step is the run's count.
    let q = &r["server_metrics"]["queries"][0];
    assert!(q["error"].is_null(), "{q}");
    assert_eq!(q["step_s"], 0.5);
    let points = q["series"][0]["points"].as_array().unwrap();
    assert_eq!(
        points.last().unwrap()["value"].as_f64(),
        Some(measured),
        "{q}"
    );
    // Asked directly, Prometheus says the same: the completed count exactly.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert_eq!(programs::query(&prom.addr, &completed, now), Some(measured));
    let arm =
        "sum by (variant) (max_over_time(loadlab_requests_completed_total{variant=\"cli\"}[1m]))";
    assert_eq!(programs::query(&prom.addr, arm, now), Some(measured));
    // Percentiles were sent while the run went (each finished interval's), not only the
    // final figures' at the end.
    let p50s = format!(
        "count_over_time(loadlab_latency_seconds{{run_id=\"{run_id}\",quantile=\"0.5\"}}[1m])"
    );
    let sent = programs::query(&prom.addr, &p50s, now).unwrap_or(0.0);
    assert!(
        sent >= 2.0,
        "{sent} p50 samples for a 2 s run in 0.5 s intervals"
    );
    // Requests in flight and connections open were sent as the run went; at its end no
    // connection was open.
    let series = |q: String| programs::query(&prom.addr, &q, now);
    let in_flight =
        format!("count_over_time(loadlab_requests_in_flight{{run_id=\"{run_id}\"}}[1m])");
    let in_flight = series(in_flight).unwrap_or(0.0);
    assert!(in_flight >= 2.0, "{in_flight} in-flight samples");
    let open = |f: &str| {
        series(format!(
            "{f}(loadlab_connections_open{{run_id=\"{run_id}\"}}[1m])"
        ))
    };
    let opened = r["measured"]["connections_opened"].as_f64().unwrap();
    let most = open("max_over_time").unwrap_or(0.0);
    assert!(
        most >= 1.0 && most <= opened,
        "at most {most} open of {opened} opened"
    );
    assert_eq!(open("last_over_time"), Some(0.0));
}
