//! A process killed in the middle of writing leaves a valid database. A child process (this
//! test binary again, running [`child_writer`]) stores large runs in a tight loop and prints
//! each id once its transaction has committed; the parent SIGKILLs it by its PID, then checks
//! the file: `PRAGMA integrity_check` is "ok", every run reported committed is there, and
//! every stored run reads back whole.
//!
//! Each round kills the writer just after its next write begins (the write-ahead log changes
//! on disk), a little later each round, and the log is read after each kill to see whether
//! the writer died with a transaction's pages written but not committed; the test goes on
//! until that has happened, so it proves the mid-write case rather than hoping for it.

use crate::support::{assert_same_text, fixture, json_file_bytes, redacted};
use loadlab_result::RunResult;
use loadlab_store::{Filter, RunId, RunMeta, Store};
use serde_json::json;
use std::io::{BufRead, BufReader, Lines};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// Set in the child: the database it writes to.
const WRITER_ENV: &str = "LOADLAB_STORE_TEST_WRITER_DB";
/// What the child prints after each commit, before the id.
const COMMITTED: &str = "committed run ";
/// Rounds before giving up on killing the writer mid-write (each takes a fraction of a
/// second; between a third and three quarters land mid-write here).
const MAX_ROUNDS: u32 = 60;

/// What the writer stores, every time: a real result, and a configuration of about 1.4 MB,
/// so that writing one run takes SQLite some 350 pages and a few milliseconds.
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
        println!("{COMMITTED}{id}");
    }
}

/// The writer process, killed when the test is done with it, or fails before that.
struct Writer(Child);

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The next id the child reports committed; libtest may print its own text before it on
/// the same line.
fn next_committed(lines: &mut Lines<BufReader<ChildStdout>>) -> Option<RunId> {
    lines.map_while(Result::ok).find_map(|line| {
        let at = line.find(COMMITTED)? + COMMITTED.len();
        Some(RunId(line[at..].trim().parse().unwrap()))
    })
}

/// Starts the writer, lets it commit a run, waits for its next write to begin and then
/// `phase` (0 to 1) of a millisecond, SIGKILLs it; returns the ids it reported committed.
fn write_then_kill(db: &Path, phase: f64) -> Vec<RunId> {
    let mut child = Writer(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "crash::child_writer", "--ignored", "--nocapture"])
            .args(["--test-threads", "1"])
            .env(WRITER_ENV, db)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let mut saved = vec![next_committed(&mut lines).expect("the writer ended early")];
    // The log is touched only while a transaction writes its pages: wait for the next
    // write to begin, then give it `phase` of a millisecond to be under way.
    let wal = format!("{}-wal", db.display());
    let stamp = || {
        std::fs::metadata(&wal)
            .map(|m| (m.len(), m.modified().unwrap()))
            .ok()
    };
    let before = stamp();
    let deadline = Instant::now() + Duration::from_secs(60);
    while stamp() == before {
        assert!(Instant::now() < deadline, "the writer stalled");
        std::hint::spin_loop();
    }
    std::thread::sleep(Duration::from_secs_f64(phase / 1000.0));
    // `Child::kill` sends SIGKILL to the child's PID on Unix: no destructor, rollback or
    // checkpoint runs in the child.
    let pid = child.0.id();
    child.0.kill().unwrap();
    let status = child.0.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(9),
        "writer {pid} was killed: {status:?}"
    );
    // Commits it reported before it died, not yet read.
    saved.extend(std::iter::from_fn(|| next_committed(&mut lines)));
    saved
}

#[test]
fn a_writer_killed_mid_write_leaves_a_valid_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let (result, meta) = run_to_write();
    let expected_result = redacted(&result);
    let expected_export = json_file_bytes(&expected_result);
    let mut committed: Vec<RunId> = Vec::new();
    let mut mid_write = 0;
    let mut rounds = 0;
    let mut verified = RunId(0);
    while rounds < 3 || mid_write == 0 {
        assert!(
            rounds < MAX_ROUNDS,
            "in {rounds} rounds the writer was never killed in the middle of a write"
        );
        // Spread over the millisecond by the golden ratio's fractional part.
        let phase = 0.8 + 0.2 * (f64::from(rounds) * 0.618_034).fract();
        committed.extend(write_then_kill(&db, phase));
        rounds += 1;
        if uncommitted_frames(&db) > 0 {
            mid_write += 1;
        }

        let store = Store::open(&db).unwrap();
        let conn = rusqlite::Connection::open(&db).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok", "round {rounds}");
        store.check_integrity().unwrap();

        let stored: Vec<RunId> = store
            .list_runs(&Filter::default())
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect();
        for id in &committed {
            assert!(
                stored.contains(id),
                "round {rounds}: committed run {id} is missing"
            );
        }
        // Each round, at most the run whose commit beat the kill but not its `println`.
        assert!(
            stored.len() <= committed.len() + rounds as usize,
            "round {rounds}: {} stored, {} reported",
            stored.len(),
            committed.len()
        );
        // Runs of earlier rounds were read whole then; the integrity check covers their pages.
        for &id in stored.iter().filter(|&&id| id > verified) {
            let run = store.run(id).unwrap();
            assert!(run.result == expected_result, "round {rounds}: run {id}");
            assert!(run.config == meta.config, "round {rounds}: run {id}");
            assert_same_text(&store.export_json(id).unwrap(), &expected_export, "export");
        }
        verified = stored.first().copied().unwrap_or(verified);
    }
    eprintln!("killed mid-write in {mid_write} of {rounds} rounds");
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
