//! `loadlab ui` only reads: it opens the store with SQLite's read-only open, so serving its
//! pages changes not a byte of the file nor its mtime, a run killed while it was written is
//! shown as it is (killed, not sealed: sealing is for the commands that write), and a store
//! that would need migrating is refused, naming the command that migrates it. And a live
//! page that needs its token (`--ui-token-file`) is listed as needing it, not linked (the
//! link answered 401), the registry keeping the token's file, never the token.

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
    assert!(as_found(&db) == before, "the store's file changed");
    let store = Store::open_read_only(&db).unwrap();
    assert_eq!(store.open_streams().unwrap().len(), 1, "not sealed");

    // A file no loadlab has written to yet (its schema at 0): refused, the file left empty.
    let empty = dir.join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let out = loadlab().args(["ui", "--db"]).arg(&empty).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("opened here to read only: `loadlab runs list --db ")
            && stderr.contains("migrates it"),
        "{stderr}"
    );
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
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
    assert!(page.contains("Live now"), "{page}");
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
