//! A tag means its runs (issue 27, item 6): runs saved under one tag with `run --save --tag`
//! in a real SQLite store are one arm of that many runs in `loadlab compare`; `TAG@last` is the
//! latest alone and `TAG@all` the same as the plain tag. The table says how many runs each
//! arm holds.

use crate::common;
use common::loadlab;
use loadlab_testkit::{response, Behavior, TestServer};
use std::path::Path;

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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn compare(db: &Path, a: &str, b: &str) -> String {
    let out = loadlab()
        .args(["compare", a, b, "--db"])
        .arg(db)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn a_tag_is_every_run_saved_with_it() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let url = server.url("/");
    let dir = std::env::temp_dir().join(format!("loadlab-compare-tags-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("loadlab.db");
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
    let out = loadlab()
        .args(["runs", "list", "--db"])
        .arg(db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Issue 44: `--save`, `--no-save`, `--tag` and `--db` are one set of flags (StoreArgs) with
/// one meaning of `--tag`, the name the kept runs are found by: giving it keeps the run (it
/// required --save), `--no-save` with it is refused, and the last of --save/--no-save wins.
#[test]
fn a_tag_alone_keeps_the_run_and_no_save_keeps_nothing() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let url = server.url("/");
    let dir = std::env::temp_dir().join(format!("loadlab-store-args-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("loadlab.db");
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

    let tagged = run(&["--tag", "solo"]);
    assert!(
        tagged.status.success(),
        "{}",
        String::from_utf8_lossy(&tagged.stderr)
    );
    let list = runs_list(&db);
    assert_eq!(list.matches("solo").count(), 1, "{list}");

    let unsaved = run(&["--save", "--no-save"]);
    assert!(
        unsaved.status.success(),
        "{}",
        String::from_utf8_lossy(&unsaved.stderr)
    );
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
