//! The live page (`loadlab run --ui`) in a real browser: Debian's headless Chromium through
//! chromedriver, as the HTML report's browser test drives it (its WebDriver client, reused).
//! The page's count rises while the run goes, its charts are drawn by the report's code,
//! nothing is refused by its Content-Security-Policy, and its stop button ends the run with
//! the result written. Without Chromium the test prints SKIPPED and passes.

#[allow(dead_code)] // the report's client; this test uses part of it
#[path = "../../../loadlab-report/tests/browser/webdriver.rs"]
mod webdriver;

use loadlab_testkit::{response, Behavior, ScratchDir, TestServer};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Runs `script` in the page until it returns true (bounded).
fn until(session: &webdriver::Session, script: &str, what: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let value = session.execute(script).expect("the script runs");
        if value.as_bool() != Some(false) && !value.is_null() {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: never");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_live_page_rises_and_its_stop_button_stops_the_run() {
    if !Path::new(CHROMIUM).exists() || !Path::new(CHROMEDRIVER).exists() {
        println!(
            "SKIPPED: {CHROMIUM} or {CHROMEDRIVER} is missing (scripts/setup.sh installs them)"
        );
        return;
    }
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("live-browser");
    let json = dir.join("run.json");
    let target = server.url("/");
    let (child, addr) = super::live::start(&[
        "-c",
        "1",
        "-d",
        "60s",
        "--json",
        json.to_str().unwrap(),
        &target,
    ]);
    let url = format!("http://{addr}/");

    let driver = webdriver::Driver::start(Path::new(CHROMEDRIVER), &dir.join("chromedriver.log"))
        .expect("chromedriver starts");
    let profile = dir.join("profile");
    std::fs::create_dir_all(&profile).unwrap();
    let session = driver
        .session(Path::new(CHROMIUM), &profile)
        .expect("a Chromium session");
    session.goto(&url).expect("the page loads");

    let first = until(
        &session,
        "return window.__live && window.__live.completed > 0 && window.__live.completed",
        "a first count",
    );
    let first = first.as_u64().unwrap();
    until(
        &session,
        &format!("return window.__live.completed > {first}"),
        "the count rising",
    );
    until(
        &session,
        "return window.__loadlab.charts.length > 0",
        "the report's charts drawn",
    );
    let shown = session
        .execute("return document.getElementById('since-completed').textContent")
        .unwrap();
    assert!(shown.as_str().is_some_and(|s| s != "–"), "{shown}");

    session
        .execute("document.getElementById('stop').click(); return true")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "stopped as by Ctrl-C");
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(result["interrupted"], true);

    let errors = session.execute("return window.__loadlab.errors").unwrap();
    assert_eq!(errors, serde_json::json!([]), "script errors");
    let refused: Vec<Value> = session
        .browser_log()
        .unwrap()
        .into_iter()
        .filter(|m| {
            m["message"]
                .as_str()
                .is_some_and(|t| t.contains("Content Security Policy"))
        })
        .collect();
    assert!(refused.is_empty(), "the policy refused: {refused:?}");
}

/// A chromedriver session on a fresh profile, or `None` (SKIPPED) without Chromium.
fn browser(dir: &ScratchDir) -> Option<webdriver::Driver> {
    if !Path::new(CHROMIUM).exists() || !Path::new(CHROMEDRIVER).exists() {
        println!(
            "SKIPPED: {CHROMIUM} or {CHROMEDRIVER} is missing (scripts/setup.sh installs them)"
        );
        return None;
    }
    Some(
        webdriver::Driver::start(Path::new(CHROMEDRIVER), &dir.join("chromedriver.log"))
            .expect("chromedriver starts"),
    )
}

/// With LOADLAB_SCREENSHOTS=DIR, the window as `DIR/NAME` (how docs/live-*.png are made).
fn keep_screenshot(session: &webdriver::Session, name: &str) {
    if let Some(dir) = std::env::var_os("LOADLAB_SCREENSHOTS") {
        let png = session.screenshot().expect("a screenshot");
        std::fs::write(Path::new(&dir).join(name), png).unwrap();
    }
}

/// `capacity --ui`, `experiment --ui` and `run --ui --generators` in Chromium: the probes'
/// table grows with their figures and the answer marked not final; the experiment's runs are
/// named, a hostile arm label stays text; a fleet's generators are a row each; no script
/// error, nothing refused by the policy.
#[test]
fn the_pages_of_a_capacity_search_and_an_experiment() {
    let dir = ScratchDir::new("live-browser-command");
    let Some(driver) = browser(&dir) else {
        return;
    };
    let profile = dir.join("profile");
    std::fs::create_dir_all(&profile).unwrap();
    let session = driver
        .session(Path::new(CHROMIUM), &profile)
        .expect("a Chromium session");
    session.set_window(1100, 1300).unwrap();
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let url = server.url("/");

    let (search, addr) = super::live::start_command(
        "capacity",
        &[
            "--no-save",
            "-q",
            "-d",
            "1s",
            "--warmup",
            "0s",
            "--cooldown",
            "0s",
            "--repeats",
            "1",
            "--start",
            "100",
            "--max-rate",
            "400",
            "--slo",
            "p99<250ms",
            &url,
        ],
    );
    session
        .goto(&format!("http://{addr}/"))
        .expect("the page loads");
    until(
        &session,
        "return document.querySelectorAll('#steps-body tr.pass, #steps-body tr.fail').length >= 2 \
         && window.__live.runs >= 3 \
         && document.getElementById('last-completed').textContent !== '–'",
        "two probes judged, the third under way and its first interval shown",
    );
    let cells = session
        .execute(
            "return Array.from(document.querySelectorAll('#steps-body tr')[0].children)\
             .map(function (c) { return c.textContent; })",
        )
        .unwrap();
    assert_eq!(cells[2], "100", "the first probe's rate: {cells}");
    let answer = session
        .execute("return document.getElementById('sofar-final').textContent")
        .unwrap();
    assert_eq!(answer, "not final");
    keep_screenshot(&session, "live-capacity.png");
    let out = search.wait_with_output().unwrap();
    // 0: a capacity; 4: none in the bounds (it held at --max-rate).
    assert!(matches!(out.status.code(), Some(0 | 4)), "{:?}", out.status);
    until(
        &session,
        "return document.getElementById('sofar-final').textContent === 'final'",
        "the answer, final",
    );

    let exp_dir = ScratchDir::new("live-browser-experiment");
    let file = super::live_command::experiment_file(&exp_dir, &url, 2);
    let db = exp_dir.join("runs.db");
    let (experiment, addr) = super::live::start_command(
        "experiment",
        &[
            &file,
            "--db",
            db.to_str().unwrap(),
            "--limits",
            "best-effort",
        ],
    );
    session
        .goto(&format!("http://{addr}/"))
        .expect("the page loads");
    until(
        &session,
        "return document.querySelectorAll('#steps-body tr.done').length >= 3",
        "three runs finished",
    );
    let arms = session
        .execute(
            "return Array.from(document.querySelectorAll('#steps-body tr'))\
             .map(function (r) { return r.children[2].textContent; })",
        )
        .unwrap();
    assert!(
        arms.as_array()
            .unwrap()
            .iter()
            .any(|a| a == "b<img/src=x/onerror=alert(1)>"),
        "the arm's label as text: {arms}"
    );
    let images = session
        .execute("return document.querySelectorAll('main img').length")
        .unwrap();
    assert_eq!(images, 0, "no markup from a label");
    keep_screenshot(&session, "live-experiment.png");
    let out = experiment.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));

    // A run over a fleet of two loopback generators: a row each, named as the fleet names
    // them, beside the merged figures.
    let fleet_dir = ScratchDir::new("live-browser-fleet");
    let (_generators, fleet) = super::generators::loopback_fleet(fleet_dir.path(), 2);
    let (run, addr) = super::live::start_command(
        "run",
        &[
            "--generators",
            fleet.to_str().unwrap(),
            "-q",
            "-c",
            "4",
            "-d",
            "4s",
            "--interval",
            "500ms",
            &url,
        ],
    );
    session
        .goto(&format!("http://{addr}/"))
        .expect("the page loads");
    let names = until(
        &session,
        "var rows = document.querySelectorAll('#parts-body tr'); \
         return rows.length === 2 && window.__loadlab.charts.length > 0 \
         && Number(document.getElementById('last-completed').textContent.replace(/,/g, '')) > 0 \
         && Array.from(rows).map(function (r) { return r.children[0].textContent; })",
        "both generators' rows and the merged figures",
    );
    assert_eq!(names, serde_json::json!(["gen0", "gen1"]));
    // The merged figures come as the run goes, not all at its end (a saturated closed loop's
    // generators once held their intervals until the load ended: their collectors ran only
    // on an idle core): at least half the intervals are on the page a second before the end
    // is. And each generator's row has its health.
    let mut seen: Vec<(Instant, u64)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let ended_at = loop {
        let now = session
            .execute(
                "return [window.__live.intervals, \
                 document.getElementById('status').textContent.indexOf('ended') === 0, \
                 Array.from(document.querySelectorAll('#parts-body tr')).map(function (r) \
                 { return r.children[5].textContent; })]",
            )
            .unwrap();
        if now[1] == true || Instant::now() > deadline {
            break Instant::now();
        }
        let intervals = now[0].as_u64().unwrap_or(0);
        if seen.last().map(|s| s.1) != Some(intervals) {
            assert!(
                now[2].as_array().unwrap().iter().all(|cpu| cpu != "–"),
                "a generator's CPU: {now}"
            );
            seen.push((Instant::now(), intervals));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let all = session.execute("return window.__live.intervals").unwrap();
    let early = seen
        .iter()
        .filter(|s| s.0 + Duration::from_secs(1) <= ended_at)
        .map(|s| s.1)
        .max()
        .unwrap_or(0);
    let steps: Vec<_> = seen.iter().map(|s| (ended_at - s.0, s.1)).collect();
    assert!(
        2 * early >= all.as_u64().unwrap(),
        "{early} of {all} intervals a second before the end (before the end, intervals): {steps:?}"
    );
    // The picture once the run has ended (its every interval on the charts), so that it is
    // the same picture each time.
    until(
        &session,
        "return document.getElementById('status').textContent.indexOf('ended') === 0",
        "the run's end",
    );
    let target = session
        .execute("return document.getElementById('target').textContent")
        .unwrap();
    assert_eq!(
        target,
        format!("GET {url}"),
        "a page opened before the run started"
    );
    keep_screenshot(&session, "live-fleet.png");
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));

    let errors = session.execute("return window.__loadlab.errors").unwrap();
    assert_eq!(errors, serde_json::json!([]), "script errors");
    let refused: Vec<Value> = session
        .browser_log()
        .unwrap()
        .into_iter()
        .filter(|m| {
            m["message"]
                .as_str()
                .is_some_and(|t| t.contains("Content Security Policy"))
        })
        .collect();
    assert!(refused.is_empty(), "the policy refused: {refused:?}");
}
