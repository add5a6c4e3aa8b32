//! The results store as a run's durable home (issue 34): a `loadlab run --save` and an
//! experiment killed with SIGKILL mid-run leave a row that `loadlab runs list` shows as
//! interrupted and `loadlab runs show`/`export` give as a valid partial result, its totals
//! the exact merge of the intervals written, marked with the time of the last one; and the
//! spill files killed runs left in the temporary directory are named on start and by
//! `loadlab recover --list`, never deleted. Real processes against `loadlab upstream` on
//! loopback, real SQLite files, bounded.

use super::{common, loadlab, temp_dir, Upstream};
use loadlab_result::{decode_histogram, new_histogram, IntervalSummary, RunResult};
use loadlab_store::{RunId, Store};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits (bounded) until the store at `db` holds a streamed run with 3 intervals written;
/// returns its id.
fn wait_for_three_intervals(db: &Path, run: &mut Child) -> RunId {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        assert!(
            Instant::now() < deadline,
            "no 3 intervals in {}",
            db.display()
        );
        assert!(run.try_wait().unwrap().is_none(), "the run ended early");
        if db.exists() {
            let store = Store::open(db).unwrap();
            if let Some(open) = store.open_streams().unwrap().first() {
                if open.intervals >= 3 {
                    return open.run;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The intervals the store holds for `run`, read with the store's own reader.
fn written(db: &Path, run: RunId) -> Vec<IntervalSummary> {
    let store = Store::open(db).unwrap();
    let mut all = Vec::new();
    store
        .for_each_interval(run, |iv| {
            all.push(iv);
            Ok(())
        })
        .unwrap();
    all
}

/// `loadlab runs export ID` of a killed run: a valid partial result whose totals are the
/// exact merge of `written`, marked interrupted with the end of the last interval written.
fn assert_partial(db: &Path, run: RunId, written: &[IntervalSummary]) -> RunResult {
    let text = ok(&loadlab()
        .args(["runs", "export", &run.to_string(), "--db"])
        .arg(db)
        .output()
        .unwrap());
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    common::assert_valid(&value);
    let result: RunResult = serde_json::from_value(value).unwrap();
    assert!(result.interrupted);
    let completed: u64 = written.iter().map(|i| i.completed).sum();
    assert!(completed > 0);
    assert_eq!(result.measured.requests.completed, completed);
    assert_eq!(result.timeline.len(), written.len());
    let mut merged = new_histogram();
    for iv in written {
        if let Some(text) = &iv.histogram {
            merged.add(decode_histogram(text).unwrap()).unwrap();
        }
    }
    assert_eq!(
        decode_histogram(&result.measured.histograms.latency).unwrap(),
        merged
    );
    let last = written.last().unwrap();
    let last_end_s = last.start_s + last.duration_s;
    let killed_at = humantime::parse_rfc3339_weak(&result.started_at).unwrap()
        + Duration::from_secs_f64(last_end_s);
    let warning = result
        .warnings
        .iter()
        .find(|w| w.contains("recovered from"))
        .unwrap_or_else(|| panic!("{:?}", result.warnings));
    assert!(
        warning.contains(&format!(
            "killed at {}",
            humantime::format_rfc3339_seconds(killed_at)
        )) && warning.contains(&format!("{last_end_s:.0} s in")),
        "{warning}"
    );
    result
}

#[test]
fn a_saved_run_killed_with_sigkill_is_a_partial_run_in_the_store() {
    let dir = temp_dir("store-run");
    let db = dir.join("runs.db");
    // The server launched by loadlab (`loadlab upstream`), so that it is sampled: each
    // interval written carries the server's samples within it.
    let server = format!(
        "{} upstream --port {{port}} --threads 1",
        env!("CARGO_BIN_EXE_loadlab")
    );
    let mut run = loadlab()
        .args(["run", "--rate", "400", "-d", "120s", "-t", "1", "-q"])
        .args(["--exec", &server])
        .args(["--save", "--tag", "soak", "--db"])
        .arg(&db)
        .arg("/")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = wait_for_three_intervals(&db, &mut run);
    // While it runs, the store says so and leaves it alone.
    let list = ok(&loadlab()
        .args(["runs", "list", "--db"])
        .arg(&db)
        .output()
        .unwrap());
    assert!(list.contains("(running)"), "{list}");
    run.kill().unwrap(); // SIGKILL: no handler runs
    run.wait().unwrap();
    let written = written(&db, id);
    assert!(written.len() >= 3);

    let out = loadlab()
        .args(["runs", "list", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let list = ok(&out);
    let line = list
        .lines()
        .find(|l| l.trim_start().starts_with(&id.to_string()))
        .unwrap_or_else(|| panic!("run {id} not listed: {list}"));
    assert!(line.contains("(interrupted)"), "{line}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("was killed while it was written"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let show = ok(&loadlab()
        .args(["runs", "show", &id.to_string(), "--db"])
        .arg(&db)
        .output()
        .unwrap());
    assert!(show.contains(&format!("run {id}")), "{show}");
    let result = assert_partial(&db, id, &written);
    assert!(result.command.iter().any(|a| a == "--save"));
    // The server's samples were written with the intervals, and the recovered timeline
    // keeps them (the first interval may end before the sampler's first window).
    let sampled = result
        .timeline
        .iter()
        .filter(|i| i.server.is_some())
        .count();
    assert!(
        sampled + 1 >= result.timeline.len() && sampled >= 2,
        "{sampled} of {} intervals have the server's samples",
        result.timeline.len()
    );
    assert_eq!(
        result.timeline.iter().map(|i| i.server).collect::<Vec<_>>(),
        written.iter().map(|i| i.server).collect::<Vec<_>>()
    );
    // The tag stayed with the run.
    let by_tag = ok(&loadlab()
        .args(["runs", "export", "soak", "--db"])
        .arg(&db)
        .output()
        .unwrap());
    assert_eq!(serde_json::from_str::<RunResult>(&by_tag).unwrap(), result);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_saved_run_that_ends_well_replaces_its_row_and_keeps_its_timeline() {
    let dir = temp_dir("store-ok");
    let upstream = Upstream::start();
    let db = dir.join("runs.db");
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
        .args(["--save", "--db"])
        .arg(&db)
        .arg(format!("http://{}/", upstream.addr))
        .output()
        .unwrap();
    ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("saved as run 1"), "{stderr}");
    let store = Store::open(&db).unwrap();
    assert!(store.open_streams().unwrap().is_empty());
    assert_eq!(store.interval_count(RunId(1)).unwrap(), 0);
    let stored = store.run(RunId(1)).unwrap();
    assert!(!stored.row.interrupted);
    let result = stored.result;
    assert_eq!(result.timeline.len(), 4);
    assert!(result.timeline.iter().all(|i| i.histogram.is_some()));
    let completed: u64 = result.timeline.iter().map(|i| i.completed).sum();
    assert_eq!(completed, result.measured.requests.completed);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_experiment_killed_mid_run_keeps_the_interrupted_run_marked_and_out_of_the_statistics() {
    let dir = temp_dir("store-experiment");
    let upstream = Upstream::start();
    let db = dir.join("runs.db");
    let file = experiment_file(&dir, &upstream);
    let mut experiment = loadlab()
        .arg("experiment")
        .arg(&file)
        .arg("--db")
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = wait_for_three_intervals(&db, &mut experiment);
    experiment.kill().unwrap();
    experiment.wait().unwrap();
    let written = written(&db, id);
    let list = ok(&loadlab()
        .args(["runs", "list", "--db"])
        .arg(&db)
        .output()
        .unwrap());
    let line = list
        .lines()
        .find(|l| l.trim_start().starts_with(&id.to_string()))
        .unwrap_or_else(|| panic!("run {id} not listed: {list}"));
    assert!(
        line.contains("(interrupted)") && line.contains("experiment"),
        "{line}"
    );
    assert_partial(&db, id, &written);
    // The statistics never take it for a complete run: the store's completed runs leave it
    // out, and so does resuming (it is run again).
    let store = Store::open(&db).unwrap();
    let completed = store
        .list_runs(&loadlab_store::Filter {
            completed_only: true,
            ..Default::default()
        })
        .unwrap();
    assert!(completed.iter().all(|r| r.id != id));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_experiment_stopped_mid_run_says_its_statistics_leave_the_run_out() {
    let dir = temp_dir("store-experiment-stopped");
    let upstream = Upstream::start();
    let db = dir.join("runs.db");
    let file = experiment_file(&dir, &upstream);
    let mut experiment = loadlab()
        .arg("experiment")
        .arg(&file)
        .arg("--db")
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_three_intervals(&db, &mut experiment);
    // SAFETY: a signal to a PID this test spawned and has not yet waited for.
    unsafe { libc::kill(experiment.id() as i32, libc::SIGINT) };
    let out = experiment.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("1 interrupted run is left out of the statistics"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An experiment of two arms of 120 s each against `upstream` (stopped long before).
fn experiment_file(dir: &Path, upstream: &Upstream) -> PathBuf {
    let file = dir.join("e.toml");
    std::fs::write(
        &file,
        format!(
            r#"name = "killed"
repetitions = 1
seed = 7
warmup = "0s"
duration = "120s"
cooldown = "0s"
[load]
rate = 300
[[variant]]
name = "a"
url = "http://{0}/"
[[variant]]
name = "b"
url = "http://{0}/b"
"#,
            upstream.addr
        ),
    )
    .unwrap();
    file
}

#[test]
fn spill_files_of_killed_runs_are_named_on_start_and_listed_never_deleted() {
    let dir = temp_dir("store-orphans");
    let upstream = Upstream::start();
    // A writer that is gone: a child that has exited.
    let mut child = Command::new("true").spawn().unwrap();
    let gone = child.id();
    child.wait().unwrap();
    let unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let orphan = dir.join(format!("loadlab-{gone}-{unix_s}-0.spill"));
    std::fs::write(&orphan, vec![b'x'; 2_048]).unwrap();

    let list = ok(&loadlab()
        .args(["recover", "--list"])
        .env("TMPDIR", &dir)
        .output()
        .unwrap());
    assert_eq!(list.trim(), format!("{}\t2048\t{gone}", orphan.display()));

    let out = loadlab()
        .args(["run", "--rate", "50", "-d", "1s", "-t", "1"])
        .arg(format!("http://{}/", upstream.addr))
        .env("TMPDIR", &dir)
        .output()
        .unwrap();
    ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let named = format!(
        "{} (2 KiB): loadlab recover {}",
        orphan.display(),
        orphan.display()
    );
    assert_eq!(stderr.matches(&named).count(), 1, "{stderr}");
    assert!(orphan.exists(), "a person's data is never deleted");
    // The run's own temporary spill file went when it ended; the orphan is the only file.
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(left.len(), 1, "{left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sweeps_probes_are_written_as_they_go_and_stored_whole() {
    let dir = temp_dir("store-sweep");
    let upstream = Upstream::start();
    let db = dir.join("runs.db");
    let out = loadlab()
        .args(["sweep", "--rates", "100,200", "-d", "2s", "--warmup", "0s"])
        .args(["--cooldown", "0s", "-q", "--db"])
        .arg(&db)
        .arg(format!("http://{}/", upstream.addr))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::open(&db).unwrap();
    assert!(store.open_streams().unwrap().is_empty());
    let rows = store.list_runs(&Default::default()).unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(store.interval_count(row.id).unwrap(), 0, "intervals went");
        let result = store.run(row.id).unwrap().result;
        assert!(!result.interrupted);
        // The timeline read back from the store before the probe was judged and kept.
        assert!(result.timeline.len() >= 2, "run {}", row.id);
        assert!(result.timeline.iter().all(|i| i.histogram.is_some()));
        let completed: u64 = result.timeline.iter().map(|i| i.completed).sum();
        assert_eq!(completed, result.measured.requests.completed);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
