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
