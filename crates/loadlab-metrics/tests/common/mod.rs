//! Real processes for the tests: Debian's Prometheus and node_exporter on a loopback port they
//! choose themselves (port 0; the port is read from their log), the Python prometheus_client
//! app from the venv scripts/setup.sh makes. Each is killed by its own PID on drop.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub struct Running {
    pub child: Child,
    pub addr: String,
    pub dir: PathBuf,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loadlab-metrics-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temp dir");
    dir
}

/// Starts `cmd` and waits (up to 30 s) for a stderr or stdout line naming the address it
/// listens on, after `marker` (e.g. `msg="Listening on" address=`).
pub fn start_and_read_addr(mut cmd: Command, dir: PathBuf, marker: &'static str) -> Running {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the program starts");
    let (tx, rx) = mpsc::channel();
    for stream in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if let Some(rest) = line.split(marker).nth(1) {
                    let addr = rest.split_whitespace().next().unwrap_or("").to_string();
                    let _ = tx.send(addr);
                }
            }
        });
    }
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the program names its listening address within 30 s");
    Running { child, addr, dir }
}

pub fn prometheus() -> Option<Running> {
    if Command::new("prometheus")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("SKIPPED: prometheus is missing; scripts/setup.sh installs it (apt-get install prometheus)");
        return None;
    }
    let dir = temp_dir("prometheus");
    std::fs::write(
        dir.join("prometheus.yml"),
        "global:\n  scrape_interval: 1h\n",
    )
    .unwrap();
    let mut cmd = Command::new("prometheus");
    cmd.arg(format!(
        "--config.file={}",
        dir.join("prometheus.yml").display()
    ))
    .arg(format!(
        "--storage.tsdb.path={}",
        dir.join("data").display()
    ))
    .arg("--web.listen-address=127.0.0.1:0")
    .arg("--web.enable-remote-write-receiver");
    let running = start_and_read_addr(cmd, dir, "msg=\"Listening on\" address=");
    // Listening is not ready: wait for /-/ready (the TSDB opens after the listener).
    for _ in 0..300 {
        let url = format!("http://{}/-/ready", running.addr);
        if loadlab_metrics::http::get(&url, Duration::from_secs(1)).is_ok_and(|r| r.status == 200) {
            return Some(running);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("prometheus did not become ready in 30 s");
}

pub fn node_exporter() -> Option<Running> {
    if Command::new("prometheus-node-exporter")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("SKIPPED: prometheus-node-exporter is missing; scripts/setup.sh installs it");
        return None;
    }
    let dir = temp_dir("node-exporter");
    let mut cmd = Command::new("prometheus-node-exporter");
    cmd.arg("--web.listen-address=127.0.0.1:0");
    Some(start_and_read_addr(
        cmd,
        dir,
        "msg=\"Listening on\" address=",
    ))
}

/// The Python app: prometheus_client on port 0, and a thread burning CPU so its counter moves.
/// A Python app exporting prometheus-client's process metrics. It idles until its first
/// scrape has read the process collector (registered before ours, so collected first), then
/// burns exactly one CPU-second by its own clock and idles again: a known amount of CPU
/// between two idle scrapes. (One exposition is made before listening: the first one costs
/// tens of CPU-milliseconds of lazy work that /proc would see and the counter would not;
/// and `describe` keeps `register` from calling `collect`, which would start the burn.)
pub fn python_app() -> Option<Running> {
    let python =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/metrics-venv/bin/python");
    if !python.exists() {
        println!("SKIPPED: {} is missing; run scripts/setup.sh (it pip-installs prometheus-client into that venv)", python.display());
        return None;
    }
    let dir = temp_dir("pyapp");
    std::fs::write(
        dir.join("app.py"),
        "import sys, threading, time\n\
         from prometheus_client import REGISTRY, generate_latest, start_http_server\n\
         generate_latest(REGISTRY)\n\
         scraped = threading.Event()\n\
         class FirstScrape:\n    def describe(self):\n        return []\n    def collect(self):\n        scraped.set()\n        return []\n\
         REGISTRY.register(FirstScrape())\n\
         server, _ = start_http_server(0, addr='127.0.0.1')\n\
         print('listening on', '127.0.0.1:%d' % server.server_port, flush=True)\n\
         scraped.wait()\n\
         start = time.process_time()\n\
         while time.process_time() - start < 1.0:\n    pass\n\
         print('burned', flush=True)\n\
         sys.stdin.read()\n",
    )
    .unwrap();
    let mut cmd = Command::new(python);
    cmd.arg(dir.join("app.py")).stdin(Stdio::piped());
    Some(start_and_read_addr(cmd, dir, "listening on "))
}

/// A PromQL instant query's single value, or None when the result is empty.
pub fn query(prometheus: &str, promql: &str, at_unix_s: f64) -> Option<f64> {
    let url = format!(
        "http://{prometheus}/api/v1/query?query={}&time={at_unix_s:.3}",
        loadlab_metrics::http::encode_query_value(promql)
    );
    let r = loadlab_metrics::http::get(&url, Duration::from_secs(10)).expect("the query answers");
    let body: serde_json::Value = serde_json::from_slice(&r.body).expect("JSON from the query API");
    assert_eq!(body["status"], "success", "{promql}: {body}");
    let result = body["data"]["result"].as_array()?;
    assert!(result.len() <= 1, "{promql} gave several series: {body}");
    result.first()?["value"][1].as_str()?.parse().ok()
}
