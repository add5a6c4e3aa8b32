//! Prometheus both ways against real programs: a run's intervals sent by remote write to
//! Debian's Prometheus and read back with PromQL; a receiver that stalls or refuses; a Python
//! prometheus_client app and node_exporter scraped, the app's CPU from its own counter against
//! /proc sampling of the same process.

mod common;

use loadlab_metrics::scraper::{Scraper, ScraperConfig};
use loadlab_metrics::sender::{MetricsOut, OutTarget};
use loadlab_metrics::{IntervalFigures, RunLabels, Selector};
use std::net::TcpListener;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Ten one-second intervals of a run that completes 1234 requests a second, ending now.
fn intervals(end_ms: i64) -> Vec<IntervalFigures> {
    (1..=10u64)
        .map(|i| IntervalFigures {
            at_unix_ms: end_ms - (10 - i as i64) * 1000,
            offered_per_s: Some(1250.0),
            achieved_per_s: 1234.0,
            completed_total: 1234 * i,
            failed_total_by_class: vec![("timeout".into(), i), ("status".into(), 2 * i)],
            in_flight: Some(7),
            latency_quantiles_s: vec![(0.5, 0.002), (0.99, 0.011)],
            connections_open: Some(16),
            generator_cpu_cores: Some(0.4),
            grpc_messages_total: None,
        })
        .collect()
}

fn labels(run_id: &str, variant: &str, shard: &str) -> RunLabels {
    RunLabels {
        run_id: run_id.into(),
        tag: "h7".into(),
        experiment: "wiring".into(),
        variant: variant.into(),
        shard: shard.into(),
        extra: Vec::new(),
    }
}

#[test]
fn remote_write_reaches_a_real_prometheus_and_promql_gives_back_the_run() {
    let Some(prom) = common::prometheus() else {
        return;
    };
    let end_ms = now_ms();
    let target = OutTarget::parse(
        &format!("prometheus+remote-write://{}/api/v1/write", prom.addr),
        None,
    )
    .unwrap();
    // Two shards of one arm, and one shard of another arm.
    for (variant, shard) in [("axum", "0"), ("axum", "1"), ("actix", "0")] {
        let mut out = MetricsOut::start(
            target.clone(),
            labels("run-1", variant, shard),
            end_ms - 10_000,
            64,
            Duration::from_secs(5),
        );
        for interval in intervals(end_ms) {
            out.offer(interval);
        }
        let report = out.finish(Duration::from_secs(30));
        assert_eq!(
            (report.sent, report.dropped, report.failed),
            (10, 0, 0),
            "{report:?}"
        );
    }
    let at = end_ms as f64 / 1000.0;
    let q = |promql: &str| common::query(&prom.addr, promql, at);
    // The completed count of one shard, exactly, and the shards adding up.
    let one = "max_over_time(loadlab_requests_completed_total{run_id=\"run-1\",variant=\"axum\",shard=\"0\"}[1m])";
    assert_eq!(q(one), Some(12340.0));
    let arm = "sum(max_over_time(loadlab_requests_completed_total{variant=\"axum\"}[1m]))";
    assert_eq!(q(arm), Some(24680.0));
    // The achieved rate from the counter over the run's 10 s window.
    let rate = "sum(rate(loadlab_requests_completed_total{variant=\"actix\"}[10s]))";
    let r = q(rate).unwrap();
    assert!((r - 1234.0).abs() / 1234.0 < 0.01, "rate {r}");
    // The docs' panels (docs/prometheus.md), each tried here.
    let by_arm = "sum by (variant) (loadlab_achieved_rate_per_second{variant=\"axum\"})";
    assert_eq!(q(by_arm), Some(2468.0));
    let p99 = "max by (shard) (loadlab_latency_seconds{quantile=\"0.99\",variant=\"actix\"})";
    assert_eq!(q(p99), Some(0.011));
    let errors =
        "sum by (class) (max_over_time(loadlab_requests_failed_total{class=\"status\"}[1m]))";
    assert_eq!(q(errors), Some(60.0));
}

#[test]
fn a_receiver_that_stalls_or_refuses_never_slows_the_sender() {
    // Stalls: accepts connections and never answers.
    let stall = TcpListener::bind("127.0.0.1:0").unwrap();
    let stall_addr = stall.local_addr().unwrap();
    // Refuses: a port bound then closed.
    let refused_addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    for (addr, what) in [(stall_addr, "stalls"), (refused_addr, "refuses")] {
        let target = OutTarget::parse(
            &format!("prometheus+remote-write://{addr}/api/v1/write"),
            None,
        )
        .unwrap();
        let mut out = MetricsOut::start(
            target,
            labels("r", "v", "0"),
            now_ms(),
            2,
            Duration::from_millis(300),
        );
        let figures = intervals(now_ms());
        let offering = Instant::now();
        for _ in 0..20 {
            for f in &figures {
                out.offer(f.clone());
            }
        }
        // An offer that waited for the receiver would wait out at least one send timeout
        // (300 ms above): offering all 200 takes less than that one timeout (it was a fixed
        // 100 ms, a third of it, which a busy machine could break).
        let offer_ms = offering.elapsed().as_millis();
        assert!(
            offer_ms < 300,
            "{what}: offering 200 intervals took {offer_ms} ms, a send timeout's worth"
        );
        let finishing = Instant::now();
        let report = out.finish(Duration::from_millis(500));
        assert!(
            finishing.elapsed() < Duration::from_secs(2),
            "{what}: finish took too long"
        );
        assert_eq!(report.offered, 200);
        assert_eq!(report.sent, 0, "{what}: {report:?}");
        if what == "stalls" {
            // One send in progress (300 ms) and two queued: everything else is dropped.
            assert!(report.dropped >= 190, "{what}: {report:?}");
            assert!(report.failed + report.dropped <= 200);
        } else {
            // Refused sends fail at once, so how many are dropped depends on scheduling;
            // every interval is either failed or dropped.
            assert_eq!(report.failed + report.dropped, 200, "{report:?}");
            assert!(report.failed >= 1 && !report.abandoned, "{report:?}");
            let last = report.last_error.unwrap();
            assert!(last.contains("connection refused"), "{last}");
        }
    }
    drop(stall);
}

#[test]
fn a_python_apps_own_cpu_counter_agrees_with_proc_sampling_and_node_exporter_fills_the_host() {
    let Some(app) = common::python_app() else {
        return;
    };
    let node = common::node_exporter();
    let pid = app.child.id();
    let mut urls = vec![format!("http://{}/metrics", app.addr)];
    if let Some(node) = &node {
        urls.push(format!("http://{}/metrics", node.addr));
    }
    let cpu_before_ns = loadlab_probe::procfs::cpu_ns(pid).unwrap();
    // The scraper scrapes once at start and once at finish, both while the app idles (it
    // burns only after the first scrape): the scraped counter and /proc bracket the same
    // CPU-second of work.
    let scraper = Scraper::start(ScraperConfig {
        urls: urls.clone(),
        selectors: vec![Selector::parse("process_cpu_seconds_total").unwrap()],
        interval: Duration::from_millis(200),
        timeout: Duration::from_secs(2),
        http: Default::default(),
    })
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while loadlab_probe::procfs::cpu_ns(pid).unwrap() - cpu_before_ns < 1_000_000_000 {
        assert!(
            Instant::now() < deadline,
            "the app never burned its CPU-second"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let report = scraper.finish();
    let cpu_after_ns = loadlab_probe::procfs::cpu_ns(pid).unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let app_points: Vec<_> = report.points.iter().filter(|p| p.url == urls[0]).collect();
    assert!(app_points.len() >= 5, "{} scrapes", app_points.len());
    let mut scraped_cpu_s = 0.0;
    for pair in app_points.windows(2) {
        let wk = &pair[1].well_known;
        assert_eq!(wk.cpu_series, Some("process_cpu_seconds_total"));
        scraped_cpu_s += wk.cpu_cores.unwrap() * (pair[1].at_s - pair[0].at_s);
        assert!(wk.memory_bytes.unwrap() > 1e6);
        assert_eq!(pair[1].picked.len(), 1);
    }
    let sampled_cpu_s = (cpu_after_ns - cpu_before_ns) as f64 / 1e9;
    let off = (scraped_cpu_s - sampled_cpu_s).abs();
    println!("app CPU: scraped {scraped_cpu_s:.3} s, /proc {sampled_cpu_s:.3} s, {off:.3} s apart");
    // The app's counter moves in 10 ms clock ticks, read at two idle moments; the rest is the
    // few milliseconds its idle thread spends answering the scrapes.
    assert!(
        off < 0.05,
        "scraped {scraped_cpu_s} s against /proc {sampled_cpu_s} s"
    );
    if node.is_some() {
        // The host burned at least the app's core while the app burned.
        let node_cores: Vec<f64> = (report.points.iter())
            .filter(|p| p.url == urls[1])
            .filter_map(|p| p.well_known.cpu_cores)
            .collect();
        assert!(node_cores.iter().any(|&c| c > 0.5), "{node_cores:?}");
        let last = report.points.iter().rfind(|p| p.url == urls[1]).unwrap();
        assert!(last.well_known.memory_bytes.unwrap() > 1e6);
    }

    // A failing endpoint is counted and named, never fatal.
    let dead = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let scraper = Scraper::start(ScraperConfig {
        urls: vec![format!("http://{dead}/metrics"), urls[0].clone()],
        selectors: vec![],
        interval: Duration::from_millis(200),
        timeout: Duration::from_millis(500),
        http: Default::default(),
    })
    .unwrap();
    let report = scraper.finish();
    assert_eq!(report.failures.len(), 1);
    assert!(report.failures[0].url.contains(&dead.to_string()));
    assert_eq!(report.failures[0].count, 2);
    assert_eq!(report.scrapes_ok, 2);
}
