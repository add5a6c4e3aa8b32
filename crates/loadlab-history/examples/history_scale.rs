//! How long the analysis of a long history takes, and how much memory: `N` revisions of 3
//! runs each (a 20% step at N/3, its fix at 2N/3, 3% noise per run), grouped as the store's
//! runs are (the newest `LAST` of them, as `history --last LAST`; all when not given),
//! analysed on the four default metrics and rendered as text. Run it under
//! `/usr/bin/time -v`:
//!
//! ```sh
//! cargo run --release -p loadlab-history --example history_scale -- 12000 500
//! ```
//!
//! A measuring tool, not a test: CI only builds it.

use loadlab_history::analysis::{analyse, Options};
use loadlab_history::series::{assemble, Filters};
use loadlab_history::{render, Metric};
use loadlab_store::{RunId, RunRow, RunStatus, SeriesRun, Summary};
use serde_json::json;
use std::time::Instant;

fn main() {
    let arg = |i: usize| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse::<usize>().ok())
    };
    let n = arg(1).unwrap_or(250);
    let last = arg(2);
    let mut state = 0x1234_5678_u64;
    let mut normal = move || {
        // Sum of twelve uniforms, less six: about normal, and no crate needed.
        (0..12)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (state >> 11) as f64 / (1u64 << 53) as f64
            })
            .sum::<f64>()
            - 6.0
    };
    let mut runs = Vec::new();
    for i in 0..n {
        let level = if (n / 3..2 * n / 3).contains(&i) {
            1200.0
        } else {
            1000.0
        };
        for k in 0..3 {
            let p99 = level * (0.03 * normal()).exp();
            let started_at = format!("2026-11-01T00:00:00.{i:06}{k}Z");
            runs.push(SeriesRun {
                row: RunRow {
                    id: RunId(runs.len() as i64 + 1),
                    created_at: started_at.clone(),
                    started_at,
                    tag: Some("scale".into()),
                    experiment: None,
                    interrupted: false,
                    status: RunStatus::Complete,
                    command: Vec::new(),
                    summary: summary(p99),
                    revision: Some(format!("{i:040x}")),
                    branch: Some("main".into()),
                },
                environment: Some(json!({"cpu_model": "cpu test"})),
            });
        }
    }
    let start = Instant::now();
    let filters = Filters {
        last,
        ..Filters::default()
    };
    let assembled = assemble(&runs, &filters).expect("no filter to fail");
    let points = assembled.points;
    let h = analyse("scale", &points, 0, &Metric::DEFAULT, &Options::default());
    let text = render::text(&h);
    let changes: usize = h.metrics.iter().map(|m| m.changes.len()).sum();
    eprintln!(
        "{n} revisions: {changes} change points, {} lines of text, {:.2} s",
        text.lines().count(),
        start.elapsed().as_secs_f64()
    );
}

fn summary(p99_us: f64) -> Summary {
    Summary {
        target_url: "http://127.0.0.1/".into(),
        load_model: "closed_loop".into(),
        duration_s: Some(10.0),
        requests_issued: 1000,
        requests_completed: 1000,
        requests_failed: 0,
        rps: 1e6 / p99_us,
        latency_p50_us: Some(p99_us / 2.0),
        latency_p90_us: Some(p99_us * 0.8),
        latency_p99_us: Some(p99_us),
        latency_p99_9_us: Some(p99_us * 1.2),
        latency_max_us: Some(p99_us * 1.5),
        error_rate: Some(0.0),
        bytes_sent: None,
        bytes_received: None,
        busiest_second_sent_bytes: None,
        server_cpu_p50_cores: None,
        server_cpu_p99_cores: None,
        server_rss_p99_bytes: None,
        server_memory_p99_bytes: None,
        generator_cpu_s_per_100k: None,
        cold_start: None,
        ready_s: None,
    }
}
