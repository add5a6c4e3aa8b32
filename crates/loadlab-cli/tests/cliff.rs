//! Percentiles on a cliff, end to end: bimodal servers (fast answers, and a fixed share of
//! requests held 400 ms, as a CPU quota holds them 90 ms) measured by `loadlab run`, compared by
//! `loadlab compare`. p99 must be flagged in every run, get no "slower by" verdict, and the
//! share beyond the cliff must be compared instead; a unimodal pair with a true 2x shift must
//! still be called slower.

mod common;

use loadlab_testkit::ScratchDir;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How a [`BimodalServer`] delays request number i (counted across connections, from 0).
#[derive(Clone, Copy)]
enum Delay {
    /// `per_mille` of every 1,000 requests, spread evenly, held `slow` (the rest at once).
    Share { per_mille: u64, slow: Duration },
    /// Every request held this long.
    Fixed(Duration),
}

impl Delay {
    fn of(self, i: u64) -> Option<Duration> {
        match self {
            // Request i is held when the running count of held requests steps up at it:
            // exactly per_mille in every 1,000, none adjacent.
            Delay::Share { per_mille, slow } => {
                ((i + 1) * per_mille / 1000 > i * per_mille / 1000).then_some(slow)
            }
            Delay::Fixed(d) => Some(d),
        }
    }
}

/// A blocking thread-per-connection HTTP/1.1 server: precise sleeps, a shared request count.
struct BimodalServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl BimodalServer {
    fn start(delay: Delay) -> BimodalServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let s = stop.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::Acquire) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let count = count.clone();
                std::thread::spawn(move || serve(stream, delay, &count));
            }
        });
        BimodalServer { addr, stop }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for BimodalServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(mut stream: TcpStream, delay: Delay, count: &AtomicU64) {
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        // Requests carry no body: each ends at its blank line.
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            if let Some(d) = delay.of(count.fetch_add(1, Ordering::SeqCst)) {
                std::thread::sleep(d);
            }
            let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            if stream.write_all(answer).is_err() {
                return;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn tempdir(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("cliff-{name}"))
}

/// `runs` runs against a fresh server each (so each run's held share is exact), as JSON
/// files; returns their paths and the last run's summary.
fn arm(dir: &std::path::Path, name: &str, delay: Delay, runs: usize, n: &str) -> Vec<String> {
    (0..runs)
        .map(|i| {
            let server = BimodalServer::start(delay);
            let path = dir.join(format!("{name}{i}.json"));
            let out = Command::new(env!("CARGO_BIN_EXE_loadlab"))
                .args(["run", "-n", n, "-c", "8", "-t", "2", "--json"])
                .arg(&path)
                .arg(server.url())
                .output()
                .expect("loadlab runs");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            path.to_str().unwrap().to_string()
        })
        .collect()
}

fn compare(a: &[String], b: &[String], format: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(["compare", &a.join(","), &b.join(","), "--format", format])
        .output()
        .expect("loadlab compare runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn line<'a>(table: &'a str, label: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} row in:\n{table}"))
}

#[test]
fn p99_on_a_cliff_is_compared_by_the_share_beyond_it() {
    let dir = tempdir("bimodal");
    // Held 400 ms rather than a quota's 90: on a busy 2-core machine (a parallel build) the
    // fast mode's own stalls reach tens of milliseconds, which would fill a 90 ms cliff's 4x
    // gap; 400 ms keeps it as clear as 90 ms is of a quiet machine's sub-millisecond answers.
    let slow = Duration::from_millis(400);
    // 27 and 33 of 3,000 requests held: 0.9% and 1.1%, five runs each.
    let a = arm(&dir, "a", Delay::Share { per_mille: 9, slow }, 5, "3000");
    let b = arm(
        &dir,
        "b",
        Delay::Share {
            per_mille: 11,
            slow,
        },
        5,
        "3000",
    );
    // A stall of the busy machine (tens of milliseconds) can hold fast requests far enough
    // from the fast mode to count beyond the cliff: at most the 8 in flight per stall, and a
    // run of about 2 s has room for a stall or two. Runs without one are exact.
    const STALLED: u64 = 16;
    let mut exact = true;
    for (path, held) in a.iter().map(|p| (p, 27)).chain(b.iter().map(|p| (p, 33))) {
        let value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        common::assert_valid(&value);
        let cliffs = value["measured"]["cliffs"].as_array().expect("cliffs");
        let p99 = cliffs
            .iter()
            .find(|c| c["percentile"] == "p99")
            .unwrap_or_else(|| panic!("{path}: p99 not on a cliff: {cliffs:?}"));
        let beyond = (p99["slow_share"].as_f64().unwrap() * 3000.0).round() as u64;
        assert!((held..=held + STALLED).contains(&beyond), "{path}: {p99}");
        exact &= beyond == held;
        // The slow mode is the server's hold, whatever stalls joined it.
        assert!(
            p99["slow_mode_us"].as_f64().unwrap() >= 300_000.0,
            "{path}: {p99}"
        );
    }

    let table = compare(&a, &b, "text");
    let p99 = line(&table, "p99 ");
    assert!(p99.contains("on a cliff"), "{table}");
    assert!(
        !p99.contains("slower") && !p99.contains("faster"),
        "{table}"
    );
    let share = line(&table, "beyond ");
    assert!(share.contains("(the cliff)"), "{table}");
    if exact {
        // 33/27 - 1 = +22.2%, the same in every pair of runs: completely separated.
        assert!(share.contains("+22.2%"), "{table}");
        assert!(share.contains("more by 22%"), "{table}");
    }

    // The other formats carry the row too.
    let json: serde_json::Value = serde_json::from_str(&compare(&a, &b, "json")).unwrap();
    let rows = json[0]["rows"].as_array().unwrap();
    let row = rows
        .iter()
        .find(|r| r["metric"] == "beyond_cliff")
        .expect("a beyond_cliff row");
    assert!(
        row["cliff"]["threshold_us"].as_f64().unwrap() > 1_000.0,
        "{row}"
    );
    let ratio = row["comparison"]["ratio"].as_f64().unwrap();
    if exact {
        assert!((ratio - 33.0 / 27.0).abs() < 1e-6, "{row}");
    } else {
        let (lo, hi) = (33.0 / (27 + STALLED) as f64, (33 + STALLED) as f64 / 27.0);
        assert!((lo..=hi).contains(&ratio), "{row}");
    }
    assert!(rows
        .iter()
        .any(|r| r["metric"] == "p99" && r["comparison"].is_null()));
    let md = compare(&a, &b, "markdown");
    assert!(
        md.contains("(the cliff)") && md.contains("on a cliff"),
        "{md}"
    );
    let csv = compare(&a, &b, "csv");
    assert!(csv.lines().any(|l| l.contains(",beyond_cliff,")), "{csv}");

    // One run's own summary says so.
    let server = BimodalServer::start(Delay::Share {
        per_mille: 11,
        slow,
    });
    let out = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(["run", "-n", "3000", "-c", "8", "-t", "2", &server.url()])
        .output()
        .unwrap();
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("p99 is on a cliff: 1.1% of requests took"),
        "{summary}"
    );
    assert!(
        summary.contains("compare the share beyond the cliff, not p99"),
        "{summary}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_true_2x_shift_without_a_cliff_is_still_slower() {
    let dir = tempdir("shift");
    let a = arm(&dir, "a", Delay::Fixed(Duration::from_millis(1)), 5, "300");
    let b = arm(&dir, "b", Delay::Fixed(Duration::from_millis(2)), 5, "300");
    let table = compare(&a, &b, "text");
    assert!(line(&table, "p50 ").contains("slower by"), "{table}");
    for label in ["p50 ", "p90 ", "p99 ", "p99.9 "] {
        assert!(!line(&table, label).contains("cliff"), "{table}");
    }
    assert!(
        !table.lines().any(|l| l.trim_start().starts_with("beyond")),
        "{table}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
