//! A process killed in the middle of writing leaves a valid database: a child process (this
//! test binary again, running [`child_writer`]) stores large runs in a tight loop and prints
//! each id once its transaction has committed; the parent SIGKILLs it by its PID after a few,
//! then checks the file: integrity, every committed run present, every stored run whole.

use crate::support::{assert_same_text, fixture, json_file_bytes, redacted};
use loadlab_result::RunResult;
use loadlab_store::{Filter, RunId, RunMeta, Store};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set in the child: the database it writes to.
const WRITER_ENV: &str = "LOADLAB_STORE_TEST_WRITER_DB";

/// What the writer stores, every time: a real result, and a configuration large enough
/// (about 1 MiB) that most of the writer's time is spent inside a transaction, so the kill
/// almost always lands in the middle of one.
fn run_to_write() -> (RunResult, RunMeta) {
    let padding: Vec<u64> = (0..100_000u64).map(|i| i * 1_000_000_007).collect();
    let meta = RunMeta {
        tag: Some("crash".into()),
        config: Some(json!({ "padding": padding })),
        ..RunMeta::default()
    };
    (fixture("open"), meta)
}

#[test]
#[ignore = "the child process of a_writer_killed_mid_write_leaves_a_valid_database"]
fn child_writer() {
    let Some(db) = std::env::var_os(WRITER_ENV) else {
        return;
    };
    let store = Store::open(db).unwrap();
    let (result, meta) = run_to_write();
    loop {
        let id = store.save_run(&result, &meta).unwrap();
        println!("saved {id}");
    }
}

/// Starts the writer, lets it commit `runs` runs (and then some: `extra` more ms), kills it;
/// returns the ids it reported committed.
fn write_then_kill(db: &Path, runs: usize, extra: Duration) -> Vec<RunId> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash::child_writer", "--ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(WRITER_ENV, db)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut lines = stdout.lines();
    let mut saved = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while saved.len() < runs {
        assert!(Instant::now() < deadline, "the writer stalled");
        let line = lines.next().expect("the writer ended early").unwrap();
        if let Some(id) = line.strip_prefix("saved ") {
            saved.push(RunId(id.parse().unwrap()));
        }
    }
    std::thread::sleep(extra);
    // `Child::kill` is SIGKILL on Unix, sent to the child's PID: no destructor, no rollback,
    // no checkpoint runs in the child.
    let pid = child.id();
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "writer {pid} was killed: {status:?}");
    // Ids it committed before it died, printed but not yet read.
    saved.extend(
        lines
            .map_while(Result::ok)
            .filter_map(|l| l.strip_prefix("saved ").map(|id| RunId(id.parse().unwrap()))),
    );
    saved
}

#[test]
fn a_writer_killed_mid_write_leaves_a_valid_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let (result, meta) = run_to_write();
    let expected_export = json_file_bytes(&redacted(&result));
    let mut committed: Vec<RunId> = Vec::new();
    let rounds: u64 = std::env::var("ROUNDS").ok().map_or(4, |r| r.parse().unwrap());
    for round in 0..rounds {
        committed.extend(write_then_kill(&db, 3, Duration::from_millis(round * 7 % 23)));
        eprintln!("round {round}: uncommitted tail {}", uncommitted_frames(&db));

        let store = Store::open(&db).unwrap();
        store.check_integrity().unwrap();
        let conn = rusqlite::Connection::open(&db).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok", "round {round}");

        let stored: Vec<RunId> = store
            .list_runs(&Filter::default())
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect();
        for id in &committed {
            assert!(stored.contains(id), "round {round}: committed run {id} is missing");
        }
        // At most the run whose commit beat the kill but not its `println`.
        assert!(
            stored.len() <= committed.len() + round as usize + 1,
            "round {round}: {} stored, {} reported: {stored:?} {committed:?}",
            stored.len(),
            committed.len()
        );
        for id in stored {
            let run = store.run(id).unwrap();
            assert_eq!(run.result, redacted(&result), "round {round}: run {id}");
            assert_eq!(run.config, meta.config, "round {round}: run {id}");
            assert_same_text(&store.export_json(id).unwrap(), &expected_export, "export");
        }
    }
}

/// How many frames of an unfinished transaction the write-ahead log ends with: more than 0
/// means the writer died in the middle of writing a run (0: between transactions, or before
/// its transaction wrote anything). Reads the WAL format directly: a 32-byte header (page
/// size at 8, salts at 16 and 20), then frames of a 24-byte header (the database size at 4,
/// non-zero only on a transaction's commit frame; the salts at 8 and 12) and one page.
fn uncommitted_frames(db: &Path) -> usize {
    let Ok(wal) = std::fs::read(format!("{}-wal", db.display())) else {
        return 0;
    };
    if wal.len() < 32 {
        return 0;
    }
    let be = |at: usize| u32::from_be_bytes(wal[at..at + 4].try_into().unwrap());
    let page = be(8) as usize;
    let salts = (be(16), be(20));
    let (mut at, mut tail) = (32, 0);
    while at + 24 <= wal.len() && (be(at + 8), be(at + 12)) == salts {
        if at + 24 + page > wal.len() {
            return tail + 1; // a frame cut off mid-write
        }
        tail = if be(at + 4) != 0 { 0 } else { tail + 1 };
        at += 24 + page;
    }
    tail
}
