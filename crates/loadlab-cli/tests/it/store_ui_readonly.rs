//! `loadlab ui` only reads: it opens the store with SQLite's read-only open, so serving its
//! pages changes not a byte of the file nor its mtime, a run killed while it was written is
//! shown as it is (killed, not sealed: sealing is for the commands that write), and a store
//! that would need migrating is refused, naming the command that migrates it. And a live
//! page that needs its token (`--ui-token-file`) is listed as needing it, not linked (the
//! link answered 401), the registry keeping the token's file, never the token. A file that
//! is no store (empty, or not SQLite) is refused as what it is, with the fix.

use super::store_ui::{address_printed, fixture, get, start_ui};
use crate::common::loadlab;
use loadlab_store::{RunMeta, Store, Writer};
use loadlab_testkit::{response, Behavior, ScratchDir, TestServer};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The file's bytes and modification time.
fn as_found(path: &Path) -> (Vec<u8>, std::time::SystemTime) {
    let modified = std::fs::metadata(path).unwrap().modified().unwrap();
    (std::fs::read(path).unwrap(), modified)
}

#[test]
fn the_store_page_changes_nothing_and_shows_a_killed_run_as_it_is() {
    let dir = ScratchDir::new("store-ui-readonly");
    let db = dir.join("ro.db");
    let result = fixture();
    let store = Store::open(&db).unwrap();
    store.save_run(&result, &RunMeta::default()).unwrap();
    // A run killed while it was written: its writer gone, one interval written.
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let writer = Writer { pid, boot_id: None };
    let killed = store
        .begin_run(&result, &RunMeta::default(), &writer)
        .unwrap();
    store
        .append_interval(killed, 0, &result.timeline[0])
        .unwrap();
    drop(store);
    let before = as_found(&db);

    let (mut ui, addr) = start_ui(&db, &[], &[("XDG_RUNTIME_DIR", &dir.join("none"))]);
    let pages: Vec<(u16, String)> = [
        "/",
        "/run/1",
        &format!("/run/{killed}"),
        "/experiments",
        "/histories",
        "/capacity",
        &format!("/compare?a=1&b={killed}"),
    ]
    .iter()
    .map(|p| get(&addr, p))
    .collect();
    ui.kill().unwrap();
    ui.wait().unwrap();
    for (status, page) in &pages {
        assert_eq!(*status, 200, "{page}");
    }
    assert!(
        pages[0]
            .1
            .contains("<strong>killed while written</strong>: 1 intervals"),
        "{}",
        pages[0].1
    );
    assert!(pages[2].1.contains("id=\"charts\""), "its intervals so far");
    assert!(
        pages[2].1.contains(&format!(
            "Run {killed} was killed while it was written (the intervals it wrote): the next \
             command that writes to the store"
        )),
        "{}",
        pages[2].1
    );
    assert!(!pages[1].1.contains("Not final"), "a finished run is final");
    // Beside another, its intervals too (not its row's header, which has none), not final.
    assert!(
        pages[6].1.contains(&format!(
            "Not final: run {killed} was killed while it was written (the intervals it wrote)."
        )),
        "{}",
        pages[6].1
    );
    assert!(as_found(&db) == before, "the store's file changed");
    let store = Store::open_read_only(&db).unwrap();
    assert_eq!(store.open_streams().unwrap().len(), 1, "not sealed");
}

#[test]
fn a_live_page_behind_its_token_is_listed_as_needing_it() {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("store-ui-token");
    let runtime = dir.join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let token = "0123456789abcdef".repeat(4);
    let token_file = dir.join("ui.token");
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&token_file)
        .and_then(|mut f| std::io::Write::write_all(&mut f, token.as_bytes()))
        .unwrap();
    let db = dir.join("t.db");
    drop(Store::open(&db).unwrap());

    // Killed when the test ends, however it ends.
    let mut run = crate::common::Killed(
        loadlab()
            .args(["run", "--ui=127.0.0.1:0", "--ui-token-file"])
            .arg(&token_file)
            .args(["-r", "50", "-d", "60s"])
            .arg(server.url("/"))
            .env("XDG_RUNTIME_DIR", &runtime)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let live_addr = address_printed(&mut run.0, "live page: http://");
    let entry = runtime.join(format!("loadlab-live/{}.json", run.0.id()));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !entry.exists() {
        assert!(Instant::now() < deadline, "the run never registered");
        std::thread::sleep(Duration::from_millis(10));
    }
    let (mut ui, addr) = start_ui(&db, &[], &[("XDG_RUNTIME_DIR", &runtime)]);
    let (status, page) = get(&addr, "/");
    ui.kill().unwrap();
    ui.wait().unwrap();
    assert_eq!(status, 200, "{page}");
    // It keeps nothing (no --save): listed apart from this store's own.
    assert!(page.contains("Other runs live on this machine"), "{page}");
    assert!(!page.contains("Live now, saving to this store"), "{page}");
    assert!(
        !page.contains(&format!("href=\"http://{live_addr}/")),
        "a link that answers 401: {page}"
    );
    assert!(
        page.contains(&format!(
            "http://{live_addr}/ needs its token: open http://{live_addr}/?token=TOKEN, with \
             the token in <code>{}</code>",
            token_file.display()
        )),
        "{page}"
    );
    assert!(!page.contains(&token), "{page}");
    let kept = std::fs::read_to_string(&entry).unwrap();
    assert!(
        !kept.contains(&token),
        "the registry kept the token: {kept}"
    );
}

/// `loadlab ui --db FILE` of a file that is no store said "schema version 0, older than this
/// loadlab's" (an empty file) or SQLite's bare "file is not a database" with "check the path
/// and its permissions" (a text file): each is named for what it is, with the fix, and left
/// as it was; `loadlab runs list` says the same of the text file (an empty one it makes a
/// store, as it makes a missing one).
#[test]
fn a_file_that_is_no_store_is_named_with_the_fix() {
    let dir = ScratchDir::new("store-ui-nostore");
    let empty = dir.join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let text = dir.join("notes.txt");
    std::fs::write(&text, "some notes\n").unwrap();
    let said = |args: &[&str], db: &Path| {
        let out = loadlab().args(args).arg("--db").arg(db).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let e = empty.display();
    assert_eq!(
        said(&["ui"], &empty),
        format!(
            "error: {e} is not a loadlab results store yet (an empty file), and is opened here \
             to read only: `loadlab run --save --db {e} URL` makes it one, or give the store's \
             file with --db\n"
        )
    );
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0, "left empty");
    for args in [&["ui"][..], &["runs", "list"][..]] {
        assert_eq!(
            said(args, &text),
            format!(
                "error: {} is not a loadlab results store (not an SQLite file); it was left \
                 untouched: give loadlab a file of its own with --db\n",
                text.display()
            ),
            "{args:?}"
        );
    }
    assert_eq!(std::fs::read_to_string(&text).unwrap(), "some notes\n");
}
