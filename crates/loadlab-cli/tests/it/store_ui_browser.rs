//! `loadlab ui` in a real browser: Debian's headless Chromium through chromedriver (the
//! report's WebDriver client, as the live page's browser test drives it). An experiment's
//! page and a history's page draw their charts under the store page's policy, with no script
//! error and nothing refused ([`draw_pages`]; a capacity search's page is drawn so by
//! `store_capacity`). With LOADLAB_SCREENSHOTS=DIR, their screenshots are written there
//! (docs/ui-experiment.png and docs/ui-history.png were made so). Without Chromium the test
//! prints SKIPPED and passes.

// The report's client, as the live page's browser test includes it (a module of its own
// there, private); this test uses part of it.
#[allow(dead_code, clippy::duplicate_mod)]
#[path = "../../../loadlab-report/tests/browser/webdriver.rs"]
mod webdriver;

use loadlab_testkit::{response, Behavior, ScratchDir, TestServer};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Opens `url` and waits (bounded) until the report's script has drawn its charts.
fn drawn(session: &webdriver::Session, url: &str) {
    session.goto(url).expect("the page loads");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let value = session
            .execute("return !!(window.__loadlab && window.__loadlab.charts.length > 0)")
            .expect("the script runs");
        if value == Value::Bool(true) {
            return;
        }
        assert!(Instant::now() < deadline, "{url}: no chart drawn");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether Chromium and chromedriver are here; says SKIPPED when not.
pub(crate) fn browser_here() -> bool {
    let here = Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists();
    if !here {
        println!(
            "SKIPPED: {CHROMIUM} or {CHROMEDRIVER} is missing (scripts/setup.sh installs them)"
        );
    }
    here
}

/// Opens each of `loadlab ui`'s `pages` at `addr` in headless Chromium (its profile and
/// driver's log under `dir`): each draws its charts with no script error, and the policy
/// refuses nothing. With LOADLAB_SCREENSHOTS=DIR, each page's screenshot is written there
/// under its name.
pub(crate) fn draw_pages(dir: &ScratchDir, addr: &str, pages: &[(&str, &str)]) {
    let driver = webdriver::Driver::start(Path::new(CHROMEDRIVER), &dir.join("chromedriver.log"))
        .expect("chromedriver starts");
    let profile = dir.join("profile");
    std::fs::create_dir_all(&profile).unwrap();
    let session = driver
        .session(Path::new(CHROMIUM), &profile)
        .expect("a Chromium session");
    session.set_window(1280, 1400).unwrap();
    let shots = std::env::var_os("LOADLAB_SCREENSHOTS").map(std::path::PathBuf::from);
    for (path, name) in pages {
        drawn(&session, &format!("http://{addr}{path}"));
        let errors = session.execute("return window.__loadlab.errors").unwrap();
        assert_eq!(errors, serde_json::json!([]), "{path}: script errors");
        if let Some(dir) = &shots {
            std::fs::write(dir.join(name), session.screenshot().unwrap()).unwrap();
        }
    }
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

#[test]
fn an_experiment_and_a_history_draw_their_charts_in_a_browser() {
    if !browser_here() {
        return;
    }
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("store-ui-browser");
    let db = super::store_ui::fixture_store(&dir, &server);
    let (mut ui, addr) =
        super::store_ui::start_ui(&db, &[], &[("XDG_RUNTIME_DIR", &dir.join("none"))]);
    draw_pages(
        &dir,
        &addr,
        &[
            ("/experiment/1", "ui-experiment.png"),
            ("/history?series=bar", "ui-history.png"),
        ],
    );
    ui.kill().unwrap();
    ui.wait().unwrap();
}
