//! The spill file's tests. The two long ones run in a child process (this test binary run
//! again with `LOADLAB_SPILL_CHILD` set): its resident memory is its own, and it can be
//! killed with SIGKILL like a real run.

use super::recover::{read, recover, Totals};
use super::{SpillReader, SpillWriter};
use loadlab_result::{encode_histogram, new_histogram, IntervalSummary, RunResult};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod grpc;
mod stored;

const CHILD_ENV: &str = "LOADLAB_SPILL_CHILD";
const SOAK_INTERVALS: u64 = 20_000;

fn header() -> RunResult {
    let text = include_str!("../../../loadlab-report/tests/fixtures/open.json");
    let mut r: RunResult = serde_json::from_str(text).expect("the fixture is a result");
    r.timeline.clear();
    r.interrupted = false;
    r
}

/// How many distinct histograms the synthetic intervals cycle through: encoding one takes
/// a debug build a millisecond, 20,000 of them would take the test's time.
const DISTINCT: u64 = 16;

/// Each distinct histogram, encoded, with its median, 90th and 99th percentiles and maximum
/// (µs), which an interval carries as read from it.
fn templates() -> &'static [(String, [f64; 4])] {
    static T: std::sync::OnceLock<Vec<(String, [f64; 4])>> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        (0..DISTINCT)
            .map(|j| {
                let mut h = new_histogram();
                for k in 0..50u64 {
                    h.saturating_record(20_000 + (j * 7_919 + k * 104_729) % 5_000_000);
                }
                let us = |v: u64| v as f64 / 1_000.0;
                let q = [
                    us(h.value_at_quantile(0.5)),
                    us(h.value_at_quantile(0.9)),
                    us(h.value_at_quantile(0.99)),
                    us(h.max()),
                ];
                (encode_histogram(&h), q)
            })
            .collect()
    })
}

/// A second of a synthetic run: deterministic, its counts different every interval. Built
/// from JSON, as a reader sees it, so that fields added later take their defaults.
fn interval(i: u64) -> IntervalSummary {
    let (histogram, q) = &templates()[(i % DISTINCT) as usize];
    serde_json::from_value(serde_json::json!({
        "start_s": i as f64,
        "duration_s": 1.0,
        "warmup": false,
        "offered_per_s": 53.0,
        "connections": null,
        "achieved_per_s": 50.0,
        "completed": 50,
        "failed": i % 3,
        "p50_us": q[0],
        "p90_us": q[1],
        "p99_us": q[2],
        "max_us": q[3],
        "bytes_sent": 50 * 80,
        "bytes_received": 50 * 120 + i,
        "steal": null,
        "histogram": histogram,
    }))
    .expect("an interval")
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("loadlab-spill-{}-{name}", std::process::id()))
}

/// `temp_path` in memory (`/dev/shm`) where there is one: for a test that commits thousands
/// of transactions and checks what they hold, not that they reach the disk (each commit's
/// fsync cost 10 s of CI for 3,601 intervals).
fn memory_temp_path(name: &str) -> PathBuf {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        shm.join(format!("loadlab-spill-{}-{name}", std::process::id()))
    } else {
        temp_path(name)
    }
}

fn rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn assert_schema_valid(result: &RunResult) {
    let text = include_str!("../../../../schema/run-result.schema.json");
    let schema: serde_json::Value = serde_json::from_str(text).expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema is valid");
    let value = serde_json::to_value(result).expect("serialisable");
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "not schema-valid: {errors:#?}");
}

/// This test binary again, running only [`child`] with `what` to do.
fn spawn_child(what: &str) -> std::process::Child {
    Command::new(std::env::current_exe().expect("own path"))
        .args(["spill::tests::child", "--exact", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(CHILD_ENV, what)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the test binary runs again")
}

/// The child's side: `soak:PATH` writes 20,000 intervals and reads them back, printing its
/// memory; `kill:PATH` writes intervals until it is killed (at most a bounded number).
#[test]
fn child() {
    let Ok(what) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (mode, path) = what.split_once(':').expect("mode:path");
    let path = Path::new(path);
    let mut w = SpillWriter::create(path, &header(), Instant::now()).expect("created");
    match mode {
        "soak" => {
            let mut totals = Totals::default();
            let mut rss_after_100 = 0;
            for i in 0..SOAK_INTERVALS {
                let iv = interval(i);
                w.append(&iv, Instant::now()).expect("appended");
                totals.add(&iv).expect("added");
                if i == 100 {
                    rss_after_100 = rss_kb();
                }
            }
            let rss_written = rss_kb();
            w.finish(Instant::now()).expect("finished");
            let mut reader = SpillReader::open(path).expect("opened");
            let (_, streamed) = read(&mut reader, false).expect("read back");
            let rss_read = rss_kb();
            assert_eq!(streamed.measured.latency, totals.measured.latency);
            println!(
                "RESULT {rss_after_100} {rss_written} {rss_read} {} {} {}",
                streamed.measured.completed,
                streamed.measured.failed,
                encode_histogram(&streamed.measured.latency)
            );
        }
        "kill" => {
            for i in 0..1_000_000 {
                w.append(&interval(i), Instant::now()).expect("appended");
                // A fast run: an interval every millisecond rather than every second.
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        other => panic!("unknown child mode {other}"),
    }
}

#[test]
fn twenty_thousand_intervals_in_flat_memory_with_exact_totals() {
    let path = temp_path("soak");
    let child = spawn_child(&format!("soak:{}", path.display()));
    let out = child.wait_with_output().expect("child ran");
    let _ = std::fs::remove_file(&path);
    assert!(out.status.success(), "the child failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("RESULT ").map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no RESULT line in {stdout}"));
    let f: Vec<&str> = line.split(' ').collect();
    let kb = |i: usize| f[i].parse::<u64>().expect("a number");
    let (after_100, written, read_back) = (kb(0), kb(1), kb(2));
    // "Within a few MB": the intervals are on disk, not in memory (kept, they would take
    // about 20,000 x 1 KB here, and 5 KB each in a real run).
    assert!(
        written.saturating_sub(after_100) < 4_096 && read_back.saturating_sub(after_100) < 4_096,
        "RSS grew: {after_100} KiB after 100 intervals, {written} KiB after 20,000, \
         {read_back} KiB after reading them back"
    );
    // The same run kept in memory: every interval at once, merged.
    let all: Vec<IntervalSummary> = (0..SOAK_INTERVALS).map(interval).collect();
    let mut in_memory = Totals::default();
    for iv in &all {
        in_memory.add(iv).expect("added");
    }
    assert_eq!(kb(3), all.iter().map(|i| i.completed).sum::<u64>());
    assert_eq!(kb(4), all.iter().map(|i| i.failed).sum::<u64>());
    assert_eq!(f[5], encode_histogram(&in_memory.measured.latency));
}

#[test]
fn sigkill_mid_run_then_recover_gives_the_written_intervals() {
    let path = temp_path("kill");
    let mut child = spawn_child(&format!("kill:{}", path.display()));
    // Wait (bounded) until the child has written a few hundred intervals.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read(&path).map_or(0, |b| b.iter().filter(|c| **c == b'\n').count()) < 300 {
        assert!(Instant::now() < deadline, "the child wrote too little");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let result = recover(&path).expect("recovered").result;
    let mut reader = SpillReader::open(&path).expect("opened");
    reader.header().expect("header");
    let (mut count, mut completed, mut last_end) = (0u64, 0u64, 0.0f64);
    while let Some(iv) = reader.next_interval().expect("read") {
        count += 1;
        completed += iv.completed;
        last_end = iv.start_s + iv.duration_s;
    }
    let _ = std::fs::remove_file(&path);
    assert!(count >= 298, "only {count} intervals survived");
    assert_schema_valid(&result);
    assert!(result.interrupted);
    assert_eq!(result.measured.requests.completed, completed);
    assert_eq!(result.timeline.len() as u64, count);
    let warning = result.warnings.last().expect("a warning");
    assert!(
        warning.contains("recovered from") && warning.contains("killed at"),
        "{warning}"
    );
    assert!(
        warning.contains(&format!("{last_end:.0} s in")),
        "{warning}"
    );
}

#[test]
fn a_torn_last_record_is_left_out_and_counted() {
    let path = temp_path("torn");
    let t0 = Instant::now();
    // A header is summarized before the run, so an open loop's says it drained for 0 s.
    let mut head = header();
    head.measured.drain_s = Some(0.0);
    assert_schema_valid(&head);
    let mut w = SpillWriter::create(&path, &head, t0).expect("created");
    for i in 0..3 {
        w.append(&interval(i), t0).expect("appended");
    }
    w.finish(t0).expect("finished");
    let len = std::fs::metadata(&path).expect("exists").len();
    // Cut the last record short, as a kill in the middle of its write would.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("opened");
    file.set_len(len - 10).expect("truncated");
    let result = recover(&path).expect("recovered").result;
    let _ = std::fs::remove_file(&path);
    assert_eq!(result.timeline.len(), 2);
    assert_eq!(result.measured.requests.completed, 100);
    assert_eq!(result.measured.requests.failed, 1);
    // Its rates are over the intervals' time, which holds any drain: none is claimed apart.
    assert_eq!(result.measured.drain_s, None);
    assert!(result
        .warnings
        .last()
        .expect("warning")
        .contains("cut short"));
}

/// Issue 51: a record damaged in the middle was called "cut short by the kill" and every
/// intact interval after it dropped silently. A whole line that fails its check is damage
/// (a kill only cuts the last record short): skipped, named by number, and the intact
/// intervals after it recovered; a torn tail after them is still the kill's.
#[test]
fn damaged_records_in_the_middle_are_skipped_named_and_the_rest_recovered() {
    let path = temp_path("damaged");
    let t0 = Instant::now();
    let mut w = SpillWriter::create(&path, &header(), t0).expect("created");
    for i in 0..10 {
        w.append(&interval(i), t0).expect("appended");
    }
    w.finish(t0).expect("finished");
    let text = std::fs::read(&path).expect("written");
    let mut lines: Vec<Vec<u8>> = text
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    // Lines: the magic, the header, then interval records 1 to 10. Record 4's JSON loses
    // its opening brace (its length still right); record 6's length is off by one.
    let json_start = lines[5].iter().position(|b| *b == b'{').expect("JSON");
    lines[5][json_start] = b'[';
    lines[7].insert(0, b'1');
    // And a torn tail: half of an eleventh record, no newline.
    let eleventh = lines[11].clone();
    lines.push(eleventh[..eleventh.len() / 2].to_vec());
    std::fs::write(&path, lines.concat()).expect("altered");
    let recovered = recover(&path).expect("recovered");
    let _ = std::fs::remove_file(&path);
    let (result, damage) = (recovered.result, recovered.damage);
    assert_eq!((damage.records, damage.first.as_slice()), (2, &[4, 6][..]));
    assert_eq!(damage.intervals_after, 5, "intervals 5, 7, 8, 9 and 10");
    assert_eq!(result.timeline.len(), 8);
    assert_eq!(result.measured.requests.completed, 8 * 50);
    let starts: Vec<f64> = result.timeline.iter().map(|i| i.start_s).collect();
    assert_eq!(starts, [0.0, 1.0, 2.0, 4.0, 6.0, 7.0, 8.0, 9.0]);
    let first = &result.warnings[0];
    assert!(
        first.starts_with("DAMAGED") && first.contains("interval records 4, 6"),
        "{first}"
    );
    assert!(first.contains("the 5 intact intervals after"), "{first}");
    let last = result.warnings.last().expect("a warning");
    assert!(last.contains("cut short by the kill"), "{last}");
}

/// Issue 51: an escape in the header's URL reached the terminal raw. What no run writes
/// there comes back escaped, and the result says the file was altered.
#[test]
fn control_characters_in_the_header_come_back_escaped() {
    let path = temp_path("escaped");
    let mut h = header();
    h.target.url = "http://x/\u{1b}]0;pwned\u{7}\r\nFAKE: all requests succeeded".into();
    h.warnings.push("a line\nand another\u{1b}[2J".into());
    let t0 = Instant::now();
    let mut w = SpillWriter::create(&path, &h, t0).expect("created");
    w.append(&interval(0), t0).expect("appended");
    w.finish(t0).expect("finished");
    let result = recover(&path).expect("recovered").result;
    let _ = std::fs::remove_file(&path);
    assert_eq!(
        result.target.url,
        "http://x/\\u{1b}]0;pwned\\u{7}\\r\\nFAKE: all requests succeeded"
    );
    let json = serde_json::to_string(&result).expect("JSON");
    assert!(
        !json.contains("\\u001b") && !json.contains("\\u0007"),
        "{json}"
    );
    assert!(result
        .warnings
        .iter()
        .any(|w| w == "a line\nand another\\u{1b}[2J"));
    assert!(
        result
            .warnings
            .iter()
            .any(|w| w.contains("control characters, shown escaped")),
        "{:?}",
        result.warnings
    );
}

#[test]
fn fsync_at_most_once_a_second_by_the_clock_given() {
    let path = temp_path("sync");
    let t0 = Instant::now();
    let mut w = SpillWriter::create(&path, &header(), t0).expect("created");
    assert_eq!(w.syncs, 1, "the header is durable at once");
    for i in 0..25u32 {
        w.append(&interval(i.into()), t0 + Duration::from_millis(100) * i)
            .expect("appended");
    }
    // 0 to 2.4 s by 100 ms: syncs at 1.0 s and 2.0 s only.
    assert_eq!(w.syncs, 3);
    assert_eq!(w.intervals, 25);
    w.finish(t0 + Duration::from_secs(3)).expect("finished");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_file_that_is_not_a_spill_file_is_refused_with_the_fix() {
    let path = temp_path("not-spill");
    std::fs::write(&path, "{\"schema_version\": 1}\n").expect("written");
    let err = recover(&path).expect_err("refused").to_string();
    let _ = std::fs::remove_file(&path);
    assert!(
        err.contains("not a loadlab spill file") && err.contains("needs no recovery"),
        "{err}"
    );
}

/// A spill file altered after it was written (issue 46, item 7): an interval 1e308 s in
/// panicked `loadlab recover`; a negative duration and counts that wrap were taken silently.
/// Each is refused, naming the interval and what is wrong with it.
#[test]
fn altered_intervals_are_refused_naming_what_is_wrong() {
    let altered = |f: &dyn Fn(&mut IntervalSummary)| {
        let mut iv = interval(1);
        f(&mut iv);
        iv
    };
    let cases: Vec<(&str, Vec<IntervalSummary>, &str)> = vec![
        (
            "far",
            vec![altered(&|iv| iv.start_s = 1e308)],
            "starts 1e308 s into the run",
        ),
        (
            "before",
            vec![altered(&|iv| iv.start_s = -5.0)],
            "starts -5 s into the run",
        ),
        (
            "negative",
            vec![altered(&|iv| iv.duration_s = -1.0)],
            "lasts -1 s",
        ),
        (
            "long",
            vec![altered(&|iv| iv.duration_s = 1e308)],
            "lasts 1e308 s",
        ),
        (
            "wrapping",
            vec![
                altered(&|iv| iv.completed = u64::MAX),
                altered(&|iv| iv.completed = u64::MAX),
            ],
            "completed",
        ),
        (
            "wrapping-sum",
            // With the first interval's 50: u64::MAX completed, and one failed more.
            vec![altered(&|iv| {
                iv.completed = u64::MAX - 50;
                iv.failed = 1;
            })],
            "completed and failed",
        ),
        (
            "bytes",
            vec![
                altered(&|iv| iv.bytes_received = u64::MAX),
                altered(&|iv| iv.bytes_received = 1),
            ],
            "bytes received",
        ),
        // Issue 51: a duration of 1e-300 s made 1.8e18 requests/s; one past the run's
        // interval, or another interval's histogram, was taken as well.
        (
            "tiny",
            vec![altered(&|iv| iv.duration_s = 1e-300)],
            "lasts 1e-300 s, not between 0.001 s and the run's interval of 1 s",
        ),
        (
            "wide",
            vec![altered(&|iv| iv.duration_s = 1.5)],
            "lasts 1.5 s, not between",
        ),
        (
            "swapped",
            vec![altered(&|iv| iv.histogram = interval(2).histogram)],
            "another interval's histogram",
        ),
        (
            "recounted",
            vec![altered(&|iv| iv.completed = 49)],
            "50 response times for 49 requests completed",
        ),
    ];
    for (name, intervals, phrase) in cases {
        let path = temp_path(&format!("altered-{name}"));
        let t0 = Instant::now();
        let mut w = SpillWriter::create(&path, &header(), t0).expect("created");
        w.append(&interval(0), t0).expect("appended");
        for iv in &intervals {
            w.append(iv, t0).expect("appended");
        }
        w.finish(t0).expect("finished");
        let outcome = recover(&path);
        let _ = std::fs::remove_file(&path);
        let err = format!("{:#}", outcome.expect_err(name));
        assert!(err.contains(phrase), "{name}: {err}");
        assert!(
            err.contains("altered after it was written"),
            "{name}: {err}"
        );
    }
}
