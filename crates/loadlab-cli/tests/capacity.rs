//! `loadlab capacity` and `loadlab sweep` end to end (issue 16): real processes (the
//! `loadlab` binary, the `loadlab-fixture` server with a known capacity, a lab target under
//! a CPU quota), real sockets on loopback, real cgroups.
//!
//! Capacities are measured on a 2-core machine: these tests run one at a time.

mod common;

use common::{loadlab, serial};
use loadlab_testkit::ScratchDir;
use serde_json::Value;
use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const FIXTURE: &str = env!("CARGO_BIN_EXE_loadlab-fixture");

fn scratch(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("capacity-{name}"))
}

/// Runs a command, killing it if it outlives `limit` (a hang is a failure, not a stuck CI).
fn finish_within(mut child: Child, what: &str, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn run_capacity(cmd: &mut Command, dir: &Path) -> (Output, Value) {
    let json = dir.join("capacity.json");
    let child = cmd
        .args(["--no-save", "-q", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("loadlab runs");
    let out = finish_within(child, "loadlab capacity", Duration::from_secs(240));
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| {
        panic!(
            "no document ({e}); stdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, serde_json::from_str(&text).expect("JSON"))
}

fn estimate(doc: &Value) -> f64 {
    assert_eq!(doc["finding"]["kind"], "capacity", "{}", doc["verdict"]);
    doc["finding"]["estimate"].as_f64().unwrap()
}

fn probes(doc: &Value) -> usize {
    doc["probes"].as_array().unwrap().len()
}

/// The short probes these tests use: a second measured after 300 ms of warm-up.
const QUICK: [&str; 8] = [
    "-d",
    "1s",
    "--warmup",
    "300ms",
    "--cooldown",
    "300ms",
    "--tolerance",
    "0.05",
];

#[test]
fn a_single_server_with_a_fixed_service_time_is_found_at_one_over_that_time() {
    let _serial = serial();
    let dir = scratch("service");
    // One worker, 5 ms a request: 200 requests/s (long enough that the fixture's own
    // per-request overhead, tens of microseconds, stays under 1% of it).
    let exec = format!("{FIXTURE} --service-us 5000");
    let (out, doc) = run_capacity(
        loadlab()
            .args(["capacity", "--exec", &exec, "--slo", "p99<100ms"])
            .args(QUICK)
            .args([
                "--start",
                "50",
                "--repeats",
                "2",
                "--max-connections",
                "100",
                "/",
            ]),
        &dir,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c = estimate(&doc);
    // 200/s exactly on a quiet machine. With both cores busy (four CPU hogs beside the test)
    // it came out 186/s, between 172 and 200: loadlab's own threads wake late and the probes
    // near the boundary judge a little low. The bounds still fail a search that is off by
    // its tolerance twice over, or a fixture that is not a single server.
    assert!(
        (170.0..=210.0).contains(&c),
        "capacity {c}: {}",
        doc["verdict"]
    );
    let range = &doc["finding"];
    assert!(range["low"].as_f64().unwrap() >= 180.0, "{range}");
    assert!(range["high"].as_f64().unwrap() <= 210.0, "{range}");
    // A bisection to its tolerance, each probe repeated twice, stays within 16 on a quiet
    // machine; noise near the boundary costs re-probes (18 were seen with both cores saturated
    // by builds). A search that walks the rates one by one takes far more than 24.
    assert!(probes(&doc) <= 24, "{} probes", probes(&doc));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("capacity ") && text.contains("over 2 repeats"),
        "{text}"
    );
    // Every probe above the capacity was judged failed, and says why.
    for p in doc["probes"].as_array().unwrap() {
        let rate = p["measure"]["offered_per_s"].as_f64().unwrap();
        if rate > 225.0 {
            assert_eq!(p["judgment"]["pass"], false, "{p}");
            assert!(!p["judgment"]["missed"].as_array().unwrap().is_empty());
        }
    }
}

#[test]
fn a_token_bucket_is_found_at_its_rate() {
    let _serial = serial();
    let dir = scratch("bucket");
    // 503 above 2,000 requests/s; the search holds errors under 1%.
    let exec = format!("{FIXTURE} --token-bucket 2000");
    let (out, doc) = run_capacity(
        loadlab()
            .args(["capacity", "--exec", &exec])
            .args(QUICK)
            .args(["--start", "500", "--repeats", "2", "/"]),
        &dir,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c = estimate(&doc);
    assert!(
        (1_900.0..=2_100.0).contains(&c),
        "capacity {c}: {}",
        doc["verdict"]
    );
    // A bisection to its tolerance, each probe repeated twice, stays within 16 on a quiet
    // machine; noise near the boundary costs re-probes (18 were seen with both cores saturated
    // by builds). A search that walks the rates one by one takes far more than 24.
    assert!(probes(&doc) <= 24, "{} probes", probes(&doc));
    let failed: Vec<&Value> = doc["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["judgment"]["pass"] == false)
        .collect();
    assert!(failed.iter().any(|p| p["judgment"]["missed"][0]
        .as_str()
        .unwrap()
        .starts_with("errors was")));
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A cgroup v2 group for the test's own loadlab process, removed on drop.
struct TestGroup(PathBuf);

impl TestGroup {
    fn new(cpu_max: &str) -> Option<TestGroup> {
        let root = PathBuf::from("/sys/fs/cgroup");
        let controllers = std::fs::read_to_string(root.join("cgroup.subtree_control")).ok()?;
        if !controllers.split_whitespace().any(|c| c == "cpu") {
            return None;
        }
        let dir = root.join(format!("loadlab-test-{}-generator", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let group = TestGroup(dir);
        std::fs::write(group.0.join("cpu.max"), cpu_max).ok()?;
        Some(group)
    }
}

impl Drop for TestGroup {
    fn drop(&mut self) {
        // The group empties when its process exits; wait for that before removing it.
        for _ in 0..100 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn when_loadlab_is_the_bottleneck_the_search_says_so_and_blames_no_one_else() {
    let _serial = serial();
    if !is_root() {
        eprintln!("SKIPPED: a CPU quota for loadlab itself needs root and cgroup v2");
        return;
    }
    let Some(group) = TestGroup::new("5000 100000") else {
        eprintln!("SKIPPED: no cgroup v2 with the cpu controller here");
        return;
    };
    let dir = scratch("generator");
    // The server runs outside the group, free; loadlab gets 5% of a core.
    let port = loadlab_probe::launch::free_port().unwrap();
    let mut server = Command::new(FIXTURE)
        .args(["--port", &port.to_string()])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !loadlab_probe::launch::healthz(([127, 0, 0, 1], port).into(), "/") {
        assert!(Instant::now() < deadline, "the fixture did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    let procs = group.0.join("cgroup.procs");
    let url = format!("http://127.0.0.1:{port}/");
    let mut cmd = loadlab();
    cmd.args(["capacity", &url, "--slo", "p99<20ms", "-t", "1"])
        .args(QUICK)
        .args(["--start", "2000", "--repeats", "1"]);
    // SAFETY: only async-signal-safe calls (open, write, close) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(&procs)?;
            f.write_all(b"0")?;
            Ok(())
        });
    }
    let (out, doc) = run_capacity(&mut cmd, &dir);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        doc["finding"]["kind"], "generator_limit",
        "{}",
        doc["verdict"]
    );
    let verdict = doc["verdict"].as_str().unwrap();
    assert!(
        verdict.contains("loadlab itself was the limit"),
        "{verdict}"
    );
    let last = doc["probes"].as_array().unwrap().last().unwrap();
    assert!(last["judgment"]["generator_limited"].is_string(), "{last}");
}

#[test]
fn a_sweep_measures_every_load_and_marks_the_knee() {
    let _serial = serial();
    let dir = scratch("sweep");
    let exec = format!("{FIXTURE} --service-us 2000");
    let json = dir.join("sweep.json");
    let report = dir.join("sweep.html");
    let child = loadlab()
        .args([
            "sweep",
            "--exec",
            &exec,
            "--rates",
            "100,200,300,700",
            "--max-connections",
            "100",
            // 700/s against a 500/s server queues ~200 requests a second: p99 reaches
            // hundreds of ms, 40x and more the low-load p99 (2-10 ms). A factor of 20 still
            // marks it, where the default 3 also caught a loaded machine's stall at 300/s
            // (p99 28 ms against 7 ms).
            "--knee-factor",
            "20",
        ])
        .args([
            "-d",
            "1s",
            "--warmup",
            "200ms",
            "--cooldown",
            "300ms",
            "--no-save",
            "--json",
        ])
        .arg(&json)
        .arg("--report")
        .arg(&report)
        .arg("/")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = finish_within(child, "loadlab sweep", Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(probes(&doc), 4);
    // 700/s against a 500/s server: the queue grows, p99 leaves its low-load value far
    // behind: that is the knee, and the probe failed.
    assert_eq!(doc["knee"]["load"].as_f64(), Some(700.0), "{}", doc["knee"]);
    let last = &doc["probes"][3];
    assert_eq!(last["judgment"]["pass"], false);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("KNEE") && text.contains("knee: at 700/s"),
        "{text}"
    );
    assert!(text.contains("held its objectives up to 300/s"), "{text}");
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("\"curve\":{"), "the report carries the curve");
}

#[test]
fn bad_objectives_and_policies_are_refused_before_anything_starts() {
    for (args, words) in [
        (vec!["--slo", "p99>5ms"], "no < or <="),
        (vec!["--until", "memory=0.5"], "only criterion"),
        (vec!["--tolerance", "0.9"], "--tolerance"),
        (vec!["--start", "500", "--max-rate", "100"], "--max-rate"),
        (vec!["-d", "100ms"], "at least 500ms"),
    ] {
        let out = loadlab()
            .args(["capacity", "http://127.0.0.1:9/", "--no-save"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(words), "{args:?}: {err}");
    }
}

#[test]
fn a_lab_target_given_twice_the_cpu_sustains_about_twice_the_rate() {
    let _serial = serial();
    if !is_root() {
        eprintln!("SKIPPED: CPU quotas for the server need root");
        return;
    }
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let build = loadlab()
        .current_dir(&repo)
        .args(["lab", "build", "rust-axum"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let built = finish_within(
        build,
        "loadlab lab build rust-axum",
        Duration::from_secs(900),
    );
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let dir = scratch("quota");
    let mut found = Vec::new();
    for (cpus, quota) in [("0.25", 0.25), ("0.5", 0.5)] {
        let (out, doc) = run_capacity(
            loadlab()
                .current_dir(&repo)
                .args([
                    "capacity",
                    "--target",
                    "rust-axum",
                    "--cpus",
                    cpus,
                    "--pin",
                    "0",
                ])
                .args(["--slo", "p99<250ms"])
                .args(QUICK)
                .args(["--start", "1000", "--repeats", "1", "/plaintext"]),
            &dir,
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The server never had more than its quota in any probe (a second's CPU over a
        // second, so a period's worth of slack: 0.26 cores was seen at 0.25), and the search
        // went as far as the quota: a probe it missed found the server throttled by it (the
        // kernel's own count, which a busy machine cannot fake: a server starved by its
        // neighbours never reaches its quota, and a CPU figure near the quota would only
        // be a guess at it).
        let probes: Vec<(bool, f64, f64)> = doc["probes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let held = p["judgment"]["pass"].as_bool() == Some(true);
                (
                    held,
                    p["measure"]["server_cpu_cores"].as_f64().unwrap_or(0.0),
                    p["measure"]["server_throttled_share"]
                        .as_f64()
                        .unwrap_or(0.0),
                )
            })
            .collect();
        assert!(
            probes.iter().all(|(_, c, _)| *c <= quota * 1.15),
            "{cpus} cores: {probes:?}"
        );
        assert!(
            probes
                .iter()
                .any(|(held, _, throttled)| !held && *throttled > 0.0),
            "{cpus} cores: {probes:?}"
        );
        found.push(estimate(&doc));
    }
    let ratio = found[1] / found[0];
    eprintln!("rust-axum capacity at 0.25 and 0.5 cores: {found:?}, ratio {ratio:.2}");
    // About 2, but one search's estimate at a quota's edge varies a lot: at 0.25 cores, 20
    // searches on the 2-core VM found 5,750 to 11,000/s (median 7,250), and at 0.5 cores
    // 15,500 to 28,000/s, each with the server at its quota. The CPU a request costs falls
    // when the server, held back by its quota, finds several requests waiting at each
    // wake-up (8,000/s took 0.18 cores in one search and 0.25 in another), and a probe after
    // an overload starts with its queue. So the quota itself is checked above, probe by
    // probe, and the ratio only has to say that twice the CPU sustained clearly more: a
    // search that ignores the quota gives about 1. Ratios seen: 1.41 to 3.61.
    assert!((1.25..=5.0).contains(&ratio), "{found:?}: ratio {ratio:.2}");
}

#[test]
fn ctrl_c_keeps_the_probes_so_far_and_says_what_they_show() {
    let _serial = serial();
    let dir = scratch("interrupt");
    let json = dir.join("capacity.json");
    let exec = format!("{FIXTURE} --token-bucket 100000");
    let mut child = loadlab()
        .args([
            "capacity", "--exec", &exec, "--start", "200", "-d", "1s", "--warmup", "0s",
        ])
        .args(["--no-save", "--json"])
        .arg(&json)
        .arg("/")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The signal comes once the third probe has started (its progress line begins).
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 512];
        let mut told = false;
        while let Ok(n) = std::io::Read::read(&mut stderr, &mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            if !told && String::from_utf8_lossy(&seen).contains("probe 3") {
                told = true;
                let _ = tx.send(());
            }
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the third probe starts");
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill with a PID this test spawned and has not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = {
        let deadline = Instant::now() + Duration::from_secs(20);
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "capacity ignored Ctrl-C");
            std::thread::sleep(Duration::from_millis(20));
        }
        child.wait_with_output().unwrap()
    };
    let stderr = reader.join().unwrap();
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["stopped_by"], "interrupted");
    assert_eq!(probes(&doc), 3, "{}", doc["probes"]);
    let verdict = doc["verdict"].as_str().unwrap();
    assert!(
        verdict.contains("it held") && verdict.contains("(stopped: interrupted)"),
        "{verdict}"
    );
    // The probe cut short is kept, marked interrupted, and counts for nothing.
    let last = doc["probes"].as_array().unwrap().last().unwrap();
    assert_eq!(last["measure"]["interrupted"], true, "{last}");
}
