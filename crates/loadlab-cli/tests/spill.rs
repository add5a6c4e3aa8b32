//! The spill file of a real `loadlab run` (issue 34): a run killed with SIGKILL mid-way
//! leaves a file that `loadlab recover` turns into a valid, partial result whose totals are
//! exactly the merge of the intervals written; a run that ends well reads its timeline back
//! from the file and removes it. Against `loadlab upstream` on loopback, bounded. The
//! results store as the run's durable home (`--save`, experiments, sweeps) is in
//! `spill/store.rs`, with the helpers here.

mod common;
use common::loadlab;
use loadlab_testkit::ScratchDir;
#[path = "spill/store.rs"]
mod store;

use loadlab_result::{decode_histogram, new_histogram, IntervalSummary};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// `loadlab upstream` on a free loopback port, stopped (by its PID) when dropped.
struct Upstream {
    child: Child,
    addr: String,
}

impl Upstream {
    fn start() -> Upstream {
        let mut child = loadlab()
            .args(["upstream", "--port", "0", "--threads", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("loadlab upstream starts");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let addr = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("upstream's first line: {first:?}"))
            .to_string();
        Upstream { child, addr }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn temp_dir(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("spill-{name}"))
}

/// The whole intervals in a spill file, read with the format's own rule (`LEN JSON\n`),
/// independently of loadlab's reader: a torn tail is left out.
fn intervals_in(path: &Path) -> Vec<IntervalSummary> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let mut lines = bytes.split_inclusive(|b| *b == b'\n');
    if lines.next() != Some(&b"loadlab-spill 1\n"[..]) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (k, line) in lines.enumerate() {
        let Some(body) = line.strip_suffix(b"\n") else {
            break;
        };
        let text = std::str::from_utf8(body).unwrap();
        let (len, json) = text.split_once(' ').unwrap();
        if json.len() != len.parse::<usize>().unwrap() {
            break;
        }
        if k > 0 {
            out.push(serde_json::from_str(json).unwrap());
        }
    }
    out
}

#[test]
fn a_run_killed_with_sigkill_is_recovered_from_its_spill_file_exactly() {
    let dir = temp_dir("kill");
    let upstream = Upstream::start();
    let json = dir.join("run.json");
    let spill = dir.join("run.json.spill");
    let mut run = loadlab()
        .args([
            "run", "--rate", "400", "-d", "120s", "-t", "1", "-q", "--json",
        ])
        .arg(&json)
        .arg(format!("http://{}/", upstream.addr))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait on the file's content: three whole intervals written.
    let deadline = Instant::now() + Duration::from_secs(60);
    while intervals_in(&spill).len() < 3 {
        assert!(
            Instant::now() < deadline,
            "no 3 intervals in {}",
            spill.display()
        );
        assert!(run.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    run.kill().unwrap(); // SIGKILL: no handler runs
    run.wait().unwrap();
    let written = intervals_in(&spill);
    assert!(written.len() >= 3);

    let recovered = dir.join("recovered.json");
    let out = loadlab()
        .arg("recover")
        .arg(&spill)
        .arg("-q")
        .arg("-o")
        .arg(&recovered)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&recovered).unwrap()).unwrap();
    common::assert_valid(&value);
    let result: loadlab_result::RunResult = serde_json::from_value(value).unwrap();
    assert!(result.interrupted);
    assert!(
        result.warnings.iter().any(|w| w.contains("recovered from")),
        "{:?}",
        result.warnings
    );
    // Totals: exactly the merge of the intervals written.
    assert_eq!(result.timeline.len(), written.len());
    let completed: u64 = written.iter().map(|i| i.completed).sum();
    assert!(completed > 0);
    assert_eq!(result.measured.requests.completed, completed);
    let mut merged = new_histogram();
    for iv in &written {
        if let Some(text) = &iv.histogram {
            merged.add(decode_histogram(text).unwrap()).unwrap();
        }
    }
    let latency = decode_histogram(&result.measured.histograms.latency).unwrap();
    assert_eq!(latency.len(), completed);
    assert_eq!(latency, merged);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_that_ends_well_reads_its_timeline_back_and_removes_the_spill_file() {
    let dir = temp_dir("ok");
    let upstream = Upstream::start();
    let json = dir.join("run.json");
    let out = loadlab()
        .args([
            "run",
            "--rate",
            "200",
            "-d",
            "2s",
            "-t",
            "1",
            "--interval",
            "500ms",
        ])
        .arg("--json")
        .arg(&json)
        .arg(format!("http://{}/", upstream.addr))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("run.json.spill as the run goes"),
        "{stderr}"
    );
    assert!(!dir.join("run.json.spill").exists());
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    common::assert_valid(&value);
    let result: loadlab_result::RunResult = serde_json::from_value(value).unwrap();
    // The interval used is in the result, and the timeline has it.
    assert_eq!(result.load.interval_s, 0.5);
    assert_eq!(result.timeline.len(), 4);
    assert!(result.timeline.iter().all(|i| i.histogram.is_some()));
    let completed: u64 = result.timeline.iter().map(|i| i.completed).sum();
    assert_eq!(completed, result.measured.requests.completed);
    let mut merged = new_histogram();
    for iv in &result.timeline {
        merged
            .add(decode_histogram(iv.histogram.as_ref().unwrap()).unwrap())
            .unwrap();
    }
    assert_eq!(
        merged,
        decode_histogram(&result.measured.histograms.latency).unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
