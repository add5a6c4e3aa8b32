//! A tag means its runs (issue 27, item 6): runs saved under one tag with `run --save --tag`
//! in a real SQLite store are one arm of that many runs in `loadlab compare`; `TAG@last` is the
//! latest alone and `TAG@all` the same as the plain tag. The table says how many runs each
//! arm holds.

use crate::common;
use common::loadlab;
use loadlab_testkit::{response, Behavior, TestServer};
use std::path::{Path, PathBuf};
use std::process::Output;

/// The standard output of a command that must have succeeded.
fn succeeded(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A server answering 200, and a store file in a directory of its own (removed first).
fn server_and_store(name: &str) -> (TestServer, String, PathBuf, PathBuf) {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let url = server.url("/");
    let dir = std::env::temp_dir().join(format!("loadlab-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("loadlab.db");
    (server, url, dir, db)
}

fn save(db: &Path, tag: &str, url: &str) {
    let out = loadlab()
        .args([
            "run", "-q", "-n", "200", "-c", "2", "-t", "1", "--save", "--tag", tag,
        ])
        .arg("--db")
        .arg(db)
        .arg(url)
        .output()
        .unwrap();
    succeeded(&out);
}

fn compare(db: &Path, a: &str, b: &str) -> String {
    let out = loadlab()
        .args(["compare", a, b, "--db"])
        .arg(db)
        .output()
        .unwrap();
    succeeded(&out)
}

#[test]
fn a_tag_is_every_run_saved_with_it() {
    let (_server, url, dir, db) = server_and_store("compare-tags");
    for _ in 0..3 {
        save(&db, "baseline", &url);
    }
    for _ in 0..2 {
        save(&db, "candidate", &url);
    }

    let all = compare(&db, "baseline", "candidate");
    assert!(all.contains("baseline (control, n=3)"), "{all}");
    assert!(all.contains("candidate (test, n=2)"), "{all}");

    let synonym = compare(&db, "baseline@all", "candidate@all");
    assert!(synonym.contains("(control, n=3)"), "{synonym}");
    assert!(synonym.contains("(test, n=2)"), "{synonym}");

    let last = compare(&db, "baseline@last", "candidate");
    assert!(last.contains("baseline@last (control, n=1)"), "{last}");
    assert!(last.contains("candidate (test, n=2)"), "{last}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn runs_list(db: &Path) -> String {
    // `--db` after the subcommand: the one StoreArgs declares it global, as `runs` did.
    succeeded(
        &loadlab()
            .args(["runs", "list", "--db"])
            .arg(db)
            .output()
            .unwrap(),
    )
}

/// Issue 44: `--save`, `--no-save`, `--tag` and `--db` are one set of flags (StoreArgs) with
/// one meaning of `--tag`, the name the kept runs are found by: giving it keeps the run (it
/// required --save), `--no-save` with it is refused, and the last of --save/--no-save wins.
#[test]
fn a_tag_alone_keeps_the_run_and_no_save_keeps_nothing() {
    let (_server, url, dir, db) = server_and_store("store-args");
    let run = |extra: &[&str]| {
        loadlab()
            .args(["run", "-q", "-n", "50", "-c", "1", "-t", "1"])
            .args(extra)
            .arg("--db")
            .arg(&db)
            .arg(&url)
            .output()
            .unwrap()
    };

    succeeded(&run(&["--tag", "solo"]));
    let list = runs_list(&db);
    assert_eq!(list.matches("solo").count(), 1, "{list}");

    succeeded(&run(&["--save", "--no-save"]));
    assert_eq!(
        runs_list(&db).lines().count(),
        list.lines().count(),
        "--no-save came last"
    );

    let refused = run(&["--no-save", "--tag", "x"]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("'--no-save' cannot be used with '--tag <NAME>'"),
        "{stderr}"
    );
    assert_eq!(runs_list(&db).lines().count(), list.lines().count());
    let _ = std::fs::remove_dir_all(&dir);
}
