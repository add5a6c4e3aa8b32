//! `loadlab ui`: the results store in a browser, read with a plain HTTP client against a real
//! SQLite file (a real run, a real experiment, and runs saved through the store's own API:
//! a history of revisions, a capacity search's probes, hostile strings). Each page answers
//! with the right content, the filters select, a missing id is a clear 404, a hostile tag
//! or target stays text, and a run with `--ui` elsewhere on the machine is listed as live
//! while a stale entry is not.

use crate::common::loadlab;
use loadlab_result::RunResult;
use loadlab_store::{ExperimentId, ExperimentStatus, RunId, RunMeta, Store};
use loadlab_testkit::{response, Behavior, ScratchDir, TestServer};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A hostile tag (no white space: the store refuses it in a tag) and target.
pub(crate) const HOSTILE_TAG: &str = "\"><img/src/onerror=alert(1)>";
pub(crate) const HOSTILE_TARGET: &str = "http://x.test/<script>alert(2)</script>";

/// `loadlab ui --db DB ARGS` with `env`; its address once printed.
pub(crate) fn start_ui(db: &Path, args: &[&str], env: &[(&str, &Path)]) -> (Child, String) {
    let mut cmd = loadlab();
    cmd.args(["ui", "--db", db.to_str().unwrap()]).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
    let addr = address_printed(&mut child, "results store page: http://");
    (child, addr)
}

/// The address after `prefix` on the child's stderr; the rest drained.
pub(crate) fn address_printed(child: &mut Child, prefix: &str) -> String {
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "no {prefix}");
        if let Some(rest) = line.trim().strip_prefix(prefix) {
            break rest.split('/').next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    addr
}

/// `GET path` over HTTP/1.0: the status and the whole answer.
pub(crate) fn get(addr: &str, path: &str) -> (u16, String) {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(tcp, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    tcp.read_to_string(&mut text).unwrap();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

pub(crate) fn fixture() -> RunResult {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../loadlab-report/tests/fixtures/ok.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The history's revisions, and where its p99 steps up by half.
const REVISIONS: usize = 12;
const STEP: usize = 6;
/// The ids of the history's runs (3 a revision), the probes' and the hostile run's.
const BAR: std::ops::Range<i64> = 4..4 + 3 * REVISIONS as i64;
const PROBES: std::ops::Range<i64> = BAR.end..BAR.end + 3;
const HOSTILE: i64 = PROBES.end;

/// A store as `loadlab ui` meets one: run 1 a real run, experiment 1 a real experiment of
/// two arms of one run each (runs 2 and 3), then through the store's API a history `bar` of [`REVISIONS`]
/// revisions whose p99 steps up by half at [`STEP`], 3 probes of a capacity search, and a
/// run with a hostile tag and target.
pub(crate) fn fixture_store(dir: &ScratchDir, server: &TestServer) -> PathBuf {
    let db = dir.join("ui.db");
    let ok = |out: std::process::Output| {
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    ok(loadlab()
        .args(["run", "-n", "50", "-c", "1", "--db", db.to_str().unwrap()])
        .args([
            "--tag",
            "smoke",
            "--revision",
            "feedc0de",
            &server.url("/one"),
        ])
        .output()
        .unwrap());
    let file = dir.join("e.toml");
    // Screenshots for the docs want arms of several runs with charts over time (17 s); the
    // tests, one short run an arm.
    let (repetitions, duration) = match std::env::var_os("LOADLAB_SCREENSHOTS") {
        Some(_) => (4, "2s"),
        None => (1, "200ms"),
    };
    std::fs::write(
        &file,
        format!(
            "name = \"pair\"\nrepetitions = {repetitions}\nseed = 7\nwarmup = \"0s\"\n\
             duration = \"{duration}\"\ncooldown = \"0s\"\n[load]\nconnections = 1\n\
             [[variant]]\nname = \"a\"\nurl = \"{0}\"\n[[variant]]\nname = \"b\"\n\
             url = \"{1}\"\n",
            server.url("/a"),
            server.url("/b")
        ),
    )
    .unwrap();
    ok(loadlab()
        .args([
            "experiment",
            file.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ])
        .output()
        .unwrap());
    let store = Store::open(&db).unwrap();
    let base = fixture();
    for k in 0..REVISIONS {
        for run in 0..3 {
            let mut r = base.clone();
            r.started_at = format!("2026-11-{:02}T10:{run:02}:00.000Z", 1 + k);
            let latency = r.measured.latency_us.as_mut().unwrap();
            let p99 = if k >= STEP { 3_000.0 } else { 2_000.0 } + (run * 10 + k) as f64;
            (latency.p50, latency.p90, latency.p99) = (p99 / 2.0, p99 * 0.8, p99);
            let meta = RunMeta {
                tag: Some("bar".into()),
                revision: Some(format!("rev{k:02}aaaa")),
                branch: Some("main".into()),
                ..RunMeta::default()
            };
            store.save_run(&r, &meta).unwrap();
        }
    }
    for rate in [100, 200, 400] {
        let mut r = base.clone();
        r.command = [
            "loadlab",
            "capacity",
            "--max-rate",
            "400",
            "http://cap.test/",
        ]
        .map(String::from)
        .to_vec();
        r.target.url = "http://cap.test/".into();
        r.measured.requests.per_second = f64::from(rate);
        let meta = RunMeta {
            tag: Some("capacity".into()),
            ..RunMeta::default()
        };
        store.save_run(&r, &meta).unwrap();
    }
    let mut hostile = base.clone();
    hostile.target.url = HOSTILE_TARGET.into();
    let meta = RunMeta {
        tag: Some(HOSTILE_TAG.into()),
        ..RunMeta::default()
    };
    store.save_run(&hostile, &meta).unwrap();
    db
}

/// The runs a list links to, in its order.
fn linked_runs(page: &str) -> Vec<i64> {
    page.split("href=\"/run/")
        .skip(1)
        .filter_map(|s| s.split('"').next()?.parse().ok())
        .collect()
}

#[test]
fn every_page_of_the_store_answers_with_its_content_and_filters_select() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("store-ui");
    let db = fixture_store(&dir, &server);
    let (mut child, addr) = start_ui(&db, &[], &[("XDG_RUNTIME_DIR", &dir.join("none"))]);
    let page = |path: &str| get(&addr, path);

    // The runs: 1 real, 2 of the experiment, the history's, 3 probes, 1 hostile.
    let (status, all) = page("/");
    assert_eq!(status, 200, "{all}");
    assert_eq!(linked_runs(&all), (1..=HOSTILE).rev().collect::<Vec<_>>());
    assert!(all.contains("form-action 'self'") && all.contains("<form method=\"get\""));
    assert_eq!(linked_runs(&page("/?tag=smoke").1), [1]);
    let probes: Vec<i64> = PROBES.collect();
    let newest_probe_first: Vec<i64> = PROBES.rev().collect();
    assert_eq!(
        linked_runs(&page("/?target=cap.test").1),
        newest_probe_first
    );
    let rev01: Vec<i64> = (BAR.start + 3..BAR.start + 6).rev().collect();
    assert_eq!(linked_runs(&page("/?revision=rev01").1), rev01);
    assert_eq!(linked_runs(&page("/?revision=feed").1), [1]);
    let days = page("/?tag=bar&since=2026-11-02&until=2026-11-03").1;
    let days_runs: Vec<i64> = (BAR.start + 3..BAR.start + 9).rev().collect();
    assert_eq!(linked_runs(&days), days_runs);
    assert!(
        days.contains("value=\"2026-11-02\""),
        "the form keeps the filter"
    );
    let (status, bad) = page("/?since=yesterday");
    assert_eq!(status, 400);
    assert!(
        bad.contains("?since=yesterday: give a day as YYYY-MM-DD"),
        "{bad}"
    );

    // Hostile strings stay text, listed and echoed into the form.
    let (_, hostile) = page("/?target=%3Cscript%3E");
    assert_eq!(linked_runs(&hostile), [HOSTILE]);
    assert!(
        !hostile.contains("<script") && !hostile.contains("<img"),
        "{hostile}"
    );
    assert!(
        hostile.contains("&lt;script&gt;alert(2)&lt;/script&gt;"),
        "{hostile}"
    );
    assert!(
        hostile.contains("&quot;&gt;&lt;img/src/onerror=alert(1)&gt;"),
        "{hostile}"
    );

    // A run's page, and two side by side with their difference.
    let (status, run) = page("/run/1");
    assert_eq!(status, 200);
    assert!(run.contains("id=\"charts\"") && run.contains("script-src 'sha256-"));
    let (status, pair) = page("/compare?a=1&b=2");
    assert_eq!(status, 200, "{pair}");
    assert!(pair.contains("run 1") && pair.contains("run 2") && pair.contains("id=\"charts\""));
    assert!(
        pair.contains("run 2 against run 1"),
        "the difference: {pair}"
    );

    // Experiments, and one's report: its arms and their comparison.
    let (status, list) = page("/experiments");
    assert_eq!(status, 200);
    assert!(
        list.contains("href=\"/experiment/1\"") && list.contains(">pair<"),
        "{list}"
    );
    let (status, exp) = page("/experiment/1");
    assert_eq!(status, 200, "{exp}");
    assert!(
        exp.contains("a (1 runs)") && exp.contains("b (1 runs)"),
        "{exp}"
    );
    assert!(
        exp.contains("pair:b against pair:a"),
        "the comparison: {exp}"
    );
    assert!(!exp.contains("Not final"), "{exp}");

    // Histories: the list, and the step found where it is.
    let (status, histories) = page("/histories");
    assert_eq!(status, 200);
    assert!(
        histories.contains("href=\"/history?series=bar\""),
        "{histories}"
    );
    assert!(
        histories.contains("href=\"/history?series=pair%3Aa\""),
        "{histories}"
    );
    let (status, history) = page("/history?series=bar");
    assert_eq!(status, 200, "{history}");
    assert!(history.contains("rev06aaaa") && history.contains("loadlab history: bar"));
    assert!(
        history.contains("\"changes\":[[6,\"rev06aaaa"),
        "the change point: {history}"
    );

    // Capacity: the probes kept, said to be all that is kept.
    let (status, capacity) = page("/capacity");
    assert_eq!(status, 200);
    assert!(capacity.contains("3 probes, tag capacity"), "{capacity}");
    assert_eq!(linked_runs(&capacity), probes, "oldest probe first");
    assert!(capacity.contains("not the search itself"));

    // What is not there says so, and what it was.
    for (path, says) in [
        ("/run/999", "999"),
        ("/experiment/42", "42"),
        ("/compare?a=1&b=999", "999"),
        ("/history?series=nobody", "nobody"),
    ] {
        let (status, text) = page(path);
        assert_eq!(status, 404, "{path}: {text}");
        assert!(
            text.contains(says) && text.contains("text/plain"),
            "{path}: {text}"
        );
    }
    // An experiment not finished: its comparison said to be of the runs so far.
    Store::open(&db)
        .unwrap()
        .set_experiment_status(ExperimentId(1), ExperimentStatus::Interrupted)
        .unwrap();
    let (_, stopped) = page("/experiment/1");
    assert!(
        stopped.contains("Not final: the experiment was stopped"),
        "{stopped}"
    );
    assert_eq!(page("/compare?a=1").0, 400);
    assert_eq!(page("/run/x").0, 400);
    assert_eq!(page("/nothing").0, 404);
    child.kill().unwrap();
    child.wait().unwrap();
}

/// With a token (required off loopback, here given on loopback), a request without it is
/// refused, and every link and form of a page keeps it.
#[test]
fn with_a_token_every_link_and_form_keeps_it() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = ScratchDir::new("store-ui-token");
    let file = dir.join("token");
    let token = "0f3a9c27d41b86e5a0f3a9c27d41b86e";
    std::fs::write(&file, format!("{token}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let db = dir.join("one.db");
    let store = Store::open(&db).unwrap();
    store.save_run(&fixture(), &RunMeta::default()).unwrap();
    drop(store);
    let args = ["--ui-token-file", file.to_str().unwrap()];
    let (mut child, addr) = start_ui(&db, &args, &[("XDG_RUNTIME_DIR", &dir.join("none"))]);
    let (refused, _) = get(&addr, "/");
    let (status, page) = get(&addr, &format!("/?token={token}"));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(refused, 401);
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(&format!("href=\"/run/1?token={token}\"")),
        "{page}"
    );
    assert!(
        page.contains(&format!("href=\"/experiments?token={token}\"")),
        "{page}"
    );
    let hidden = format!("<input type=\"hidden\" name=\"token\" value=\"{token}\">");
    assert_eq!(page.matches(&hidden).count(), 2, "both forms: {page}");
}

/// The process start `/proc/PID/stat` gives (field 22), as the registry keeps it.
fn proc_start(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

/// `loadlab run --ui` of a minute in `runtime`; its page's address once it is registered
/// (the address is printed before the run registers it).
fn start_run(server: &TestServer, runtime: &Path, db: &Path) -> (Child, String) {
    let mut run = loadlab()
        .args([
            "run",
            "--ui=127.0.0.1:0",
            "-r",
            "50",
            "-d",
            "60s",
            "--save",
            "--db",
        ])
        .arg(db)
        .arg(server.url("/live"))
        .env("XDG_RUNTIME_DIR", runtime)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = address_printed(&mut run, "live page: http://");
    let own = runtime.join(format!("loadlab-live/{}.json", run.id()));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !own.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never registered"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    (run, addr)
}

#[test]
fn a_run_with_a_page_is_listed_live_and_stale_or_remote_entries_are_not() {
    use std::os::unix::fs::PermissionsExt as _;
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("store-ui-live");
    let runtime = dir.join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let db = dir.join("live.db");

    // The store named another way than `loadlab ui` names it: the same file.
    let (mut run, live_addr) = start_run(&server, &runtime, &dir.join(".").join("live.db"));
    let registry = runtime.join("loadlab-live");
    let own = registry.join(format!("{}.json", run.id()));
    // A run killed before it could remove its entry: its pid is gone.
    let mut gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    let entry = |addr: &str, pid: u32, start: u64, target: &str| {
        serde_json::json!({"addr": addr, "pid": pid, "proc_start": start,
            "started_at": "2026-12-07T10:00:00Z", "target": target, "command": target})
        .to_string()
    };
    std::fs::write(
        registry.join(format!("{gone_pid}.json")),
        entry("127.0.0.1:1", gone_pid, 1, "http://stale.test/"),
    )
    .unwrap();
    // A live process whose entry points off loopback: never linked.
    let me = std::process::id();
    std::fs::write(
        registry.join("remote.json"),
        entry("192.0.2.1:80", me, proc_start(me), "http://remote.test/"),
    )
    .unwrap();
    // A live process with a hostile target: listed, as text.
    std::fs::write(
        registry.join("hostile.json"),
        entry("127.0.0.1:2", me, proc_start(me), HOSTILE_TARGET),
    )
    .unwrap();
    std::fs::write(registry.join("junk.json"), "{not json").unwrap();
    // A live process saving to another store: listed apart, with its store.
    let mut elsewhere: serde_json::Value = serde_json::from_str(&entry(
        "127.0.0.1:3",
        me,
        proc_start(me),
        "http://else.test/",
    ))
    .unwrap();
    elsewhere["store"] = "/elsewhere/other.db".into();
    std::fs::write(registry.join("else.json"), elsewhere.to_string()).unwrap();

    let (mut ui, addr) = start_ui(&db, &[], &[("XDG_RUNTIME_DIR", &runtime)]);
    // The run is saved as it goes (`--save`): once it has written an interval, its row is
    // running and its page its intervals so far.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while Store::open(&db)
        .ok()
        .and_then(|s| s.interval_count(RunId(1)).ok())
        .unwrap_or(0)
        == 0
    {
        assert!(std::time::Instant::now() < deadline, "no interval written");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, page) = get(&addr, "/");
    let (run_status, run_page) = get(&addr, "/run/1");
    // Side by side (with itself), it is its intervals so far too, said to be not final.
    let (cmp_status, cmp_page) = get(&addr, "/compare?a=1&b=1");
    ui.kill().unwrap();
    ui.wait().unwrap();
    assert_eq!(run_status, 200, "{run_page}");
    assert!(run_page.contains("id=\"charts\""), "{run_page}");
    assert!(
        run_page.contains(
            "<h2>Not final</h2><p class=\"note\">Run 1 is still being written (its intervals \
             so far): its verdict below says interrupted because the run is not over yet"
        ),
        "{run_page}"
    );
    assert_eq!(cmp_status, 200, "{cmp_page}");
    assert!(
        cmp_page.contains(
            "Not final: run 1 is still being written (its intervals so far); run 1 is still \
             being written (its intervals so far)."
        ),
        "{cmp_page}"
    );
    assert_eq!(status, 200);
    // This store's live run first, with its run here, then the others apart; its row says
    // it runs, with its live page.
    let (ours, rest) = page
        .split_once("Other runs live on this machine")
        .expect("the other runs' section");
    let rows = rest.split_once("<form").map_or("", |(_, r)| r);
    assert!(ours.contains("Live now, saving to this store"), "{page}");
    let link = format!("<a href=\"http://{live_addr}/\">http://{live_addr}/</a>");
    assert!(ours.contains(&link), "the run's page linked: {page}");
    assert!(ours.contains(&server.url("/live")), "its target: {page}");
    assert!(
        ours.contains("<a href=\"/run/1\">run 1</a>, being written"),
        "{page}"
    );
    assert!(
        rows.contains("<strong>running now</strong>: ")
            && rows.contains(&format!(" intervals so far; live page: {link}")),
        "{page}"
    );
    assert!(
        rest.contains("else.test") && rest.contains("<code>/elsewhere/other.db</code>"),
        "{page}"
    );
    assert!(
        !ours.contains("else.test") && !ours.contains("alert(2)"),
        "{page}"
    );
    assert!(
        !page.contains("stale.test") && !page.contains("127.0.0.1:1/"),
        "{page}"
    );
    assert!(
        !page.contains("remote.test") && !page.contains("192.0.2.1"),
        "{page}"
    );
    assert!(
        page.contains("&lt;script&gt;alert(2)") && !page.contains("<script"),
        "{page}"
    );

    // As the run ends (a Ctrl-C once its load goes: before, Ctrl-C leaves at once and the
    // entry stays, stale), its entry goes.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while server.counters().requests() == 0 {
        assert!(std::time::Instant::now() < deadline, "the run never loaded");
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    assert_eq!(run.wait().unwrap().code(), Some(130));
    assert!(!own.exists(), "the entry removed at the end");
    // A run that registers clears the entries of processes gone (and no other).
    let (mut next, _) = start_run(&server, &runtime, &db);
    assert!(
        !registry.join(format!("{gone_pid}.json")).exists(),
        "stale entry cleared"
    );
    assert!(registry.join("hostile.json").exists() && registry.join("junk.json").exists());
    next.kill().unwrap();
    next.wait().unwrap();
}
