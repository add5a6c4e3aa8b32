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
