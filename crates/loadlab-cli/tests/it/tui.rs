//! `loadlab run --tui` in a real pseudo-terminal (util-linux `script`): the screen holds the
//! live figures and its last frame's since-the-start figures are the result file's; with no
//! terminal it says it is off and the run goes on. And the result's intervals carry their
//! failures by class, which add up to the result's classes (a server failing in two ways).
//! `capacity --tui`: a row per probe, its last frame's rows the document's probes.

use crate::common::{assert_valid, loadlab};
use loadlab_testkit::{response, Behavior, ScratchDir, TestServer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Stdio;

/// Answers in turn: a good response, one with bytes past its Content-Length
/// (`extra_bytes`), bytes that are not HTTP (`malformed_response`).
fn failing_two_ways() -> TestServer {
    TestServer::start(Behavior::Cycle(vec![
        response(200, "ok"),
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA".to_vec(),
        b"not http at all\r\n\r\n".to_vec(),
    ]))
}

fn read(path: &std::path::Path) -> Value {
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_valid(&json);
    json
}

fn counts(v: &Value) -> BTreeMap<String, u64> {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn with_no_terminal_tui_is_off_and_each_interval_carries_its_failures_by_class() {
    let server = failing_two_ways();
    let dir = ScratchDir::new("tui-off");
    let json = dir.join("run.json");
    let out = loadlab()
        .args([
            "run",
            "--tui",
            "-c",
            "2",
            "-d",
            "1200ms",
            "--interval",
            "200ms",
        ])
        .args(["--json", json.to_str().unwrap(), &server.url("/")])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--tui is off: standard output or error is not a terminal"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let result = read(&json);
    let whole = counts(&result["measured"]["errors"]);
    assert_eq!(
        whole.keys().collect::<Vec<_>>(),
        ["extra_bytes", "malformed_response"],
        "{whole:?}"
    );
    // Every interval's classes add up to its failures, and over the timeline to the
    // result's classes, exactly.
    let mut summed: BTreeMap<String, u64> = BTreeMap::new();
    let timeline = result["timeline"].as_array().unwrap();
    assert!(timeline.len() >= 5, "{} intervals", timeline.len());
    for iv in timeline {
        let classes = counts(&iv["errors"]);
        assert_eq!(
            classes.values().sum::<u64>(),
            iv["failed"].as_u64().unwrap()
        );
        for (class, n) in classes {
            *summed.entry(class).or_default() += n;
        }
    }
    assert_eq!(summed, whole);
    let with_classes = timeline
        .iter()
        .filter(|iv| iv["errors"].as_object().is_some_and(|m| m.len() == 2))
        .count();
    assert!(
        with_classes >= 1,
        "{with_classes} intervals with both classes"
    );
}

/// The since-the-start column of a frame's row `label`.
fn since_start(frame: &str, label: &str) -> String {
    let line = frame
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no {label} in the frame:\n{frame}"));
    // Columns: a label of 24, the last interval's of 20, then since the start.
    line.chars().skip(44).collect::<String>().trim().to_string()
}

#[test]
fn tui_draws_the_live_figures_in_a_terminal_and_its_last_frame_is_the_results() {
    let server = failing_two_ways();
    let dir = ScratchDir::new("tui-on");
    let json = dir.join("run.json");
    let command = format!(
        "{} run --tui -c 2 -d 1200ms --interval 200ms --json {} {}",
        env!("CARGO_BIN_EXE_loadlab"),
        json.display(),
        server.url("/")
    );
    // `script` gives loadlab a terminal for its input and both outputs, and copies the
    // screen to its own standard output.
    let out = std::process::Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let screen = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{screen}");
    assert!(
        screen.contains("\u{1b}[?1049h"),
        "the alternate screen: {screen}"
    );
    assert!(
        screen.contains("\u{1b}[?1049l"),
        "the terminal put back: {screen}"
    );
    assert!(!screen.contains("panicked"), "{screen}");
    // The frames, each drawn from the top; the last one once the result was made.
    let frames: Vec<String> = screen
        .split("\u{1b}[H")
        .skip(1)
        .map(|f| f.replace("\u{1b}[K", "").replace('\r', ""))
        .collect();
    assert!(frames.len() >= 3, "{} frames: {screen}", frames.len());
    let last = frames
        .iter()
        .rev()
        .find(|f| f.contains("ended: the result is written"))
        .unwrap_or_else(|| panic!("no last frame: {screen}"));
    for label in ["requests/s", "latency p50", "latency p99", "latency max"] {
        assert!(last.contains(label), "{label}: {last}");
    }
    assert!(last.contains("errors by class"), "{last}");
    assert!(last.contains("requests/s, the last"), "{last}");
    let result = read(&json);
    let m = &result["measured"];
    let completed = m["requests"]["completed"].as_u64().unwrap();
    assert!(completed > 0);
    assert_eq!(since_start(last, "completed"), completed.to_string());
    assert_eq!(
        since_start(last, "failed"),
        m["requests"]["failed"].as_u64().unwrap().to_string()
    );
    for (label, q) in [
        ("latency p50", "p50"),
        ("latency p99", "p99"),
        ("latency max", "max"),
    ] {
        let us = m["latency_us"][q].as_f64().unwrap();
        assert_eq!(
            since_start(last, label),
            format!("{:.3} ms", us / 1_000.0),
            "{q}"
        );
    }
    for (class, n) in counts(&m["errors"]) {
        assert_eq!(since_start(last, &class), n.to_string(), "{class}");
    }
    // The summary follows on the terminal put back, as without --tui.
    let back = screen.rfind("\u{1b}[?1049l").unwrap();
    assert!(screen[back..].contains("Requests"), "{}", &screen[back..]);
}

/// `q` stops the run as Ctrl-C does: the result written, marked interrupted, exit code 130.
#[test]
fn q_stops_the_run_as_ctrl_c_does() {
    use std::io::{Read as _, Write as _};
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("tui-q");
    let json = dir.join("run.json");
    let command = format!(
        "{} run --tui -c 2 -d 30s --interval 200ms --json {} {}",
        env!("CARGO_BIN_EXE_loadlab"),
        json.display(),
        server.url("/")
    );
    let mut child = std::process::Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    // Once a frame with an interval is on the screen (the run has started: before, a
    // Ctrl-C, and so `q`, leaves at once), `q`.
    let has_interval = |screen: &[u8]| {
        String::from_utf8_lossy(screen)
            .split("requests/s, the last ")
            .skip(1)
            .any(|rest| !rest.starts_with('0'))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut screen = Vec::new();
    while !has_interval(&screen) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(bytes) => screen.extend(bytes),
            Err(_) => {
                let _ = child.kill();
                panic!("no frame: {}", String::from_utf8_lossy(&screen));
            }
        }
    }
    let started = std::time::Instant::now();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"q").unwrap();
    stdin.flush().unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(15) {
            let _ = child.kill();
            panic!("q did not stop the run");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    drop(stdin);
    assert_eq!(status.code(), Some(130));
    let result = read(&json);
    assert_eq!(result["interrupted"], true);
    assert!(
        result["measured"]["requests"]["completed"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(result["measured"]["duration_s"].as_f64().unwrap() < 20.0);
}

/// `capacity --tui`: the command's page in the terminal. Its last frame (drawn once the
/// search has its answer) has a row per probe equal to the document's probes (number, round,
/// rate, rate answered, errors, verdict in the document's words) and the document's verdict,
/// final; no probe line of the progress is drawn over it.
#[test]
fn capacity_tui_draws_a_row_per_probe_and_its_last_frame_is_the_documents() {
    use loadlab_capacity::search::rate;
    use loadlab_capacity::ProbeRecord;
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("tui-capacity");
    let json = dir.join("capacity.json");
    // Wide enough for a verdict's whole words.
    let command = format!(
        "stty cols 220 rows 50; {} capacity --tui --no-save -d 500ms --warmup 0s --cooldown 0s \
         --repeats 1 --start 50 --max-rate 100 --min-rate 40 --json {} {}",
        env!("CARGO_BIN_EXE_loadlab"),
        json.display(),
        server.url("/")
    );
    let out = std::process::Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let screen = String::from_utf8_lossy(&out.stdout).into_owned();
    // 0: a capacity; 4: none in the bounds (it held at --max-rate on a quiet machine).
    assert!(matches!(out.status.code(), Some(0 | 4)), "{screen}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let probes: Vec<ProbeRecord> = serde_json::from_value(doc["probes"].clone()).unwrap();
    assert!(!probes.is_empty());
    let back = screen
        .rfind("\u{1b}[?1049l")
        .unwrap_or_else(|| panic!("the terminal put back: {screen}"));
    let last = screen[..back]
        .rsplit("\u{1b}[H")
        .next()
        .unwrap()
        .replace("\u{1b}[K", "")
        .replace("\u{1b}[J", "")
        .replace('\r', "");
    assert!(last.starts_with("loadlab capacity: ended"), "{last}");
    let lines: Vec<&str> = last.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with("probe  round  offered/s"))
        .unwrap_or_else(|| panic!("no rows: {last}"));
    let rows: Vec<Vec<&str>> = lines[header + 1..]
        .iter()
        .take_while(|l| !l.is_empty() && !l.starts_with("The search's answer"))
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    let expected: Vec<Vec<String>> = probes
        .iter()
        .map(|p| {
            vec![
                p.index.to_string(),
                p.round.map_or("–".into(), |r| (r + 1).to_string()),
                rate(p.load()),
                rate(p.measure.achieved_per_s),
                format!(
                    "{} ({:.2}%)",
                    p.measure.errors,
                    p.measure.error_share * 100.0
                ),
                p.verdict(),
            ]
        })
        .collect();
    let seen: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            // All but the objective's percentile (its own format, the page's).
            assert_eq!(r.len(), 7, "{r:?} in {last}");
            [0, 1, 2, 3, 5, 6]
                .iter()
                .map(|&i| r[i].to_string())
                .collect()
        })
        .collect();
    assert_eq!(seen, expected, "{last}");
    let answer = last
        .split("The search's answer (final):\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no final answer: {last}"));
    assert!(
        answer.starts_with(&format!("  {}", doc["verdict"].as_str().unwrap())),
        "{answer}"
    );
    // The progress's probe lines were not drawn: the rows say it.
    assert!(!screen[..back].contains("probe 1: "), "{screen}");
    // The table follows on the terminal put back.
    assert!(screen[back..].contains("round"), "{}", &screen[back..]);
}
