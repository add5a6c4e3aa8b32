//! The HTML report in a real browser: Debian's headless Chromium, driven through chromedriver
//! (`scripts/setup.sh` installs both). Each page must draw every chart, log no error, make no
//! network request, and show hostile strings as text without running them. Screenshots land
//! in `<target>/report-artifacts/`. Without Chromium the tests print SKIPPED and pass.

use crate::support;
#[path = "../browser/webdriver.rs"]
mod webdriver;

use loadlab_report::{html, render, HtmlExporter};
use loadlab_result::RunResult;
use serde_json::Value;
use std::path::{Path, PathBuf};
use support::{artifact_dir, fixture, hostile_run, ten_minute_run, with_early_data, PAYLOADS};
use webdriver::{Driver, Session};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// Screenshots stop at this height, however long the page.
const MAX_SCREENSHOT_HEIGHT: u32 = 6_000;

/// A browser for one test, or `None` (after printing SKIPPED) when none is installed.
struct Browser {
    dir: tempfile::TempDir,
    driver: Driver,
}

impl Browser {
    fn start(test: &str) -> Option<Browser> {
        if !Path::new(CHROMIUM).exists() || !Path::new(CHROMEDRIVER).exists() {
            println!(
                "SKIPPED {test}: {CHROMIUM} or {CHROMEDRIVER} is missing \
                 (bash scripts/setup.sh installs them, as root)"
            );
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let driver = Driver::start(
            Path::new(CHROMEDRIVER),
            &dir.path().join("chromedriver.log"),
        )
        .expect("chromedriver starts");
        Some(Browser { dir, driver })
    }

    fn session(&self) -> Session<'_> {
        let profile = self.dir.path().join("profile");
        std::fs::create_dir_all(&profile).unwrap();
        self.driver
            .session(Path::new(CHROMIUM), &profile)
            .expect("a Chromium session")
    }

    /// Writes a page into the temp dir and opens it from a file:// URL.
    fn open(&self, session: &Session, name: &str, page: &str) -> PathBuf {
        let path = self.dir.path().join(format!("{name}.html"));
        std::fs::write(&path, page).unwrap();
        session
            .goto(&format!("file://{}", path.display()))
            .expect("the page loads");
        path
    }
}

/// What a page must be in a browser: no errors, no network, every chart drawn.
fn check_page(session: &Session, name: &str, expected_charts: &[&str]) {
    let errors = session
        .execute(
            "return window.__loadlab ? window.__loadlab.errors : ['report script did not run'];",
        )
        .unwrap();
    assert_eq!(errors, serde_json::json!([]), "{name}: script errors");
    let log = session.browser_log().unwrap();
    let severe: Vec<&Value> = log.iter().filter(|e| e["level"] == "SEVERE").collect();
    assert!(severe.is_empty(), "{name}: console errors {severe:#?}");
    let requests = session
        .execute("return performance.getEntriesByType('resource').map(e => e.name);")
        .unwrap();
    assert_eq!(requests, serde_json::json!([]), "{name}: network requests");

    let charts = session.execute(CHART_PROBE).unwrap();
    let charts = charts.as_array().expect("a list of charts");
    let ids: Vec<&str> = charts.iter().filter_map(|c| c["id"].as_str()).collect();
    assert_eq!(ids, expected_charts, "{name}: charts");
    for c in charts {
        assert!(
            c["width"].as_u64() > Some(200) && c["height"].as_u64() > Some(100),
            "{name}: chart has no size: {c}"
        );
        // Series are coloured; axes, grid and text are grey. Coloured pixels inside the
        // plotting area mean the chart drew data, not only its frame.
        assert!(
            c["coloured"].as_u64() > Some(200),
            "{name}: chart drew no data: {c}"
        );
        assert!(c["points"].as_u64() > Some(0), "{name}: no data: {c}");
    }
}

/// For each chart: its canvas size, how many coloured pixels its plotting area has, and how
/// many values its uPlot instance holds.
const CHART_PROBE: &str = r#"
return window.__loadlab.charts.map(function (c) {
  var canvas = c.plot.ctx.canvas, b = c.plot.bbox;
  var px = c.plot.ctx.getImageData(b.left, b.top, b.width, b.height).data;
  var coloured = 0;
  for (var i = 0; i < px.length; i += 4) {
    var hi = Math.max(px[i], px[i + 1], px[i + 2]), lo = Math.min(px[i], px[i + 1], px[i + 2]);
    if (px[i + 3] > 0 && hi - lo > 40) coloured++;
  }
  var points = 0;
  c.plot.data.slice(1).forEach(function (s) { s.forEach(function (v) { if (v != null) points++; }); });
  return { id: c.id, width: canvas.width, height: canvas.height, coloured: coloured, points: points };
});
"#;

/// A PNG of the whole page (the window stretched to its height) in the artifacts folder.
fn screenshot(session: &Session, name: &str) -> PathBuf {
    let height = session
        .execute("return document.documentElement.scrollHeight;")
        .unwrap()
        .as_u64()
        .unwrap_or(900) as u32;
    session
        .set_window(1280, height.clamp(600, MAX_SCREENSHOT_HEIGHT))
        .unwrap();
    // Let the debounced resize handler run before taking the picture.
    session
        .execute("return new Promise(function (r) { setTimeout(r, 300); }).then(function () { return 1; });")
        .ok();
    let png = session.screenshot().unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    let path = artifact_dir().join(format!("report-{name}.png"));
    std::fs::write(&path, png).unwrap();
    println!("screenshot: {}", path.display());
    session.set_window(1280, 900).unwrap();
    path
}

const TIME_AND_SERVER: [&str; 5] = [
    "chart-rate",
    "chart-latency",
    "chart-cpu",
    "chart-memory",
    "chart-distribution",
];
/// `--server-metrics` series and a `--query`: a chart per selector or query.
const TIME_SERVER_AND_METRICS: [&str; 7] = [
    "chart-rate",
    "chart-latency",
    "chart-cpu",
    "chart-memory",
    "chart-metrics-0",
    "chart-metrics-1",
    "chart-distribution",
];
const TIME_ONLY: [&str; 3] = ["chart-rate", "chart-latency", "chart-distribution"];
/// A run shorter than two intervals has nothing to draw over time.
const DISTRIBUTION_ONLY: [&str; 1] = ["chart-distribution"];

/// `run` with two scraped series of one selector and a query, over its timeline.
fn with_metrics(run: &RunResult) -> RunResult {
    use loadlab_result::metrics::{MetricPoint, MetricSeries, MetricsEndpoint, MetricsQuery};
    let points = |k: f64| -> Vec<MetricPoint> {
        (run.timeline.iter())
            .map(|i| MetricPoint {
                t_s: i.start_s + i.duration_s,
                value: k * (1.0 + i.start_s),
            })
            .collect()
    };
    let series = |selector: &str, name: &str, k: f64| MetricSeries {
        selector: selector.into(),
        series: name.into(),
        per_s: true,
        points: points(k),
    };
    let mut r = run.clone();
    r.server_metrics = Some(loadlab_result::ServerMetrics {
        scrape_interval_s: 1.0,
        endpoints: vec![MetricsEndpoint {
            url: "http://127.0.0.1:9/metrics".into(),
            scrapes_ok: 10,
            series: vec![
                series(
                    "http_requests_total",
                    "http_requests_total{code=\"200\"}",
                    100.0,
                ),
                series(
                    "http_requests_total",
                    "http_requests_total{code=\"500\"}",
                    3.0,
                ),
            ],
            ..Default::default()
        }],
        queries: vec![MetricsQuery {
            url: "http://127.0.0.1:9".into(),
            query: "up".into(),
            step_s: 1.0,
            error: None,
            series: vec![series("up", "up{job=\"app\"}", 1.0)],
        }],
    });
    r
}

#[test]
fn reports_draw_in_a_real_browser() {
    let Some(browser) = Browser::start("reports_draw_in_a_real_browser") else {
        return;
    };
    let session = browser.session();
    let (ok, server, open) = (
        fixture("ok.json"),
        fixture("server.json"),
        fixture("open.json"),
    );
    let single: [(&str, &RunResult, &[&str]); 5] = [
        ("server", &server, &TIME_AND_SERVER),
        ("metrics", &with_metrics(&server), &TIME_SERVER_AND_METRICS),
        ("ok", &ok, &DISTRIBUTION_ONLY),
        ("open", &open, &TIME_ONLY),
        ("ten-minutes", &ten_minute_run(), &TIME_AND_SERVER),
    ];
    for (name, result, charts) in single {
        browser.open(&session, name, &render(&HtmlExporter, result));
        check_page(&session, name, charts);
        screenshot(&session, name);
    }
    // HTTP/3's 0-RTT figures: rows of the summary table, as a reader sees them.
    browser.open(
        &session,
        "early-data",
        &render(&HtmlExporter, &with_early_data(&ok, true)),
    );
    check_page(&session, "early-data", &DISTRIBUTION_ONLY);
    let rows = session
        .execute(
            "return Array.from(document.querySelectorAll('#summary tbody tr')) \
               .map(tr => Array.from(tr.cells).map(td => td.innerText)) \
               .filter(cells => cells[0].startsWith('0-RTT'));",
        )
        .unwrap();
    assert_eq!(
        rows,
        serde_json::json!([
            [
                "0-RTT handshake p50 / p99 / max",
                "2.06 ms / 9.66 ms / 10.1 ms"
            ],
            [
                "0-RTT requests sent early",
                "45: 40 accepted, 5 rejected (sent again)"
            ],
            ["0-RTT connections", "9: 8 accepted, 1 rejected"],
        ])
    );
    screenshot(&session, "early-data");

    // Overlaid: a run with a server and one without, each with its own series.
    let mut page = Vec::new();
    html::render_runs(
        &[("closed, 0.5 cores", &server), ("open loop", &open)],
        &mut page,
    )
    .unwrap();
    browser.open(&session, "overlay", &String::from_utf8(page).unwrap());
    check_page(&session, "overlay", &TIME_AND_SERVER);
    let legends = session
        .execute("return Array.from(document.querySelectorAll('#chart-latency .u-legend .u-label')).map(e => e.textContent);")
        .unwrap();
    assert!(legends.to_string().contains("open loop · p99"), "{legends}");
    screenshot(&session, "overlay");

    // A capacity search's page: the curve against load first, then the boundary runs.
    let curve = html::Curve {
        load_label: "offered requests/s".into(),
        open_loop: true,
        load: vec![250.0, 500.0, 600.0, 700.0, 800.0],
        achieved_per_s: vec![250.0, 498.0, 540.0, 545.0, 530.0],
        p50_us: vec![
            Some(2_100.0),
            Some(2_300.0),
            Some(90_000.0),
            Some(300_000.0),
            Some(500_000.0),
        ],
        p99_us: vec![
            Some(4_000.0),
            Some(6_000.0),
            Some(400_000.0),
            Some(900_000.0),
            None,
        ],
        held: vec![true, true, false, false, false],
        marker: Some(("capacity".into(), 500.0)),
    };
    let section = html::Section {
        title: "Capacity of http://127.0.0.1/".into(),
        columns: vec!["offered/s".into(), "verdict".into()],
        rows: vec![vec!["500".into(), "held".into()]],
        notes: vec!["capacity 500/s".into()],
        links: Vec::new(),
    };
    let mut page = Vec::new();
    html::render_curve_report(&[("500/s (held)", &open)], &[section], &curve, &mut page).unwrap();
    browser.open(&session, "capacity", &String::from_utf8(page).unwrap());
    let mut with_curve = vec!["chart-curve-rate", "chart-curve-latency"];
    with_curve.extend(TIME_ONLY);
    check_page(&session, "capacity", &with_curve);
    screenshot(&session, "capacity");
}

#[test]
fn hostile_strings_stay_text_in_a_real_browser() {
    let Some(browser) = Browser::start("hostile_strings_stay_text_in_a_real_browser") else {
        return;
    };
    let session = browser.session();
    let hostile = hostile_run();
    let mut page = Vec::new();
    html::render_runs(
        &[(PAYLOADS[0], &hostile), (PAYLOADS[2], &hostile)],
        &mut page,
    )
    .unwrap();
    let overlay = String::from_utf8(page).unwrap();
    for (name, page) in [
        ("hostile", render(&HtmlExporter, &hostile)),
        ("hostile-overlay", overlay),
    ] {
        browser.open(&session, name, &page);
        check_page(&session, name, &TIME_AND_SERVER);
        let pwned = session.execute("return typeof window.__pwned;").unwrap();
        assert_eq!(pwned, "undefined", "{name}: an injected script ran");
        let seen = session
            .execute(
                "return { text: document.body.innerText, \
                          imgs: document.getElementsByTagName('img').length, \
                          scripts: document.getElementsByTagName('script').length, \
                          legend: Array.from(document.querySelectorAll('.u-legend')).map(e => e.textContent).join(' ') };",
            )
            .unwrap();
        let text = seen["text"].as_str().unwrap();
        for p in PAYLOADS {
            assert!(text.contains(p), "{name}: {p} is not shown as text");
        }
        assert_eq!(seen["imgs"], 0, "{name}: an injected element");
        assert_eq!(seen["scripts"], 3, "{name}: an injected script element");
        if name == "hostile-overlay" {
            let legend = seen["legend"].as_str().unwrap();
            assert!(legend.contains(PAYLOADS[0]), "run labels as text: {legend}");
        }
        screenshot(&session, name);
    }
}
