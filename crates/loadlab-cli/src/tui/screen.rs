//! One frame of `--tui`, as lines of text: the live page's figures (last interval and since
//! the start, from the page's own [`Hub`]: percentiles merged from the intervals'
//! histograms, never averaged), errors by class, a chart of requests/s over the last
//! intervals and the server's CPU and memory when sampled. Pure: no terminal, no clock, so
//! a test reads a frame as a string. Every string a user or a server gave (the target) goes
//! through [`shown`]; the rest is loadlab's own words and numbers.

use crate::live::hub::Hub;
use loadlab_result::format::{bytes, shown};
use loadlab_result::IntervalSummary;
use std::collections::BTreeSet;

/// How the run stands, for the title line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Running,
    /// `q` or Ctrl-C was pressed: the run is stopping, its result being written.
    Stopping,
    /// The load is over: the result is being made.
    LoadEnded,
    Ended,
}

/// Rows of the rate chart.
const CHART_ROWS: usize = 6;
const BLOCKS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
const LABEL: usize = 24;
const COLUMN: usize = 20;

/// Latency as the frame shows it: milliseconds to the microsecond.
pub fn ms(us: Option<f64>) -> String {
    us.map_or("-".into(), |us| format!("{:.3} ms", us / 1_000.0))
}

/// The frame for a terminal of `width` columns and `height` rows; `elapsed_s` is how long
/// the run has gone (the engine's progress), when known.
pub fn frame(
    hub: &Hub,
    stage: Stage,
    elapsed_s: Option<f64>,
    width: usize,
    height: usize,
) -> Vec<String> {
    let since = hub.since_start();
    let last = hub.recent().next_back();
    let mut lines = Vec::new();
    let state = match stage {
        Stage::Running => "running; q or Ctrl-C stops it (the result is written)",
        Stage::Stopping => "stopping: the result is being written",
        Stage::LoadEnded => "load ended: the result is being made",
        Stage::Ended => "ended: the result is written",
    };
    let target = hub.target().unwrap_or_default();
    let elapsed = elapsed_s.map_or(String::new(), |s| format!(" {s:.1} s,"));
    lines.push(format!("loadlab {}:{elapsed} {state}", shown(&target)));
    lines.push(String::new());
    let partial = last.is_some_and(|l| l.partial);
    lines.push(row(
        "",
        if partial {
            "last (partial)"
        } else {
            "last interval"
        },
        "since the start",
    ));
    let per_s = |v: f64| format!("{v:.1}");
    lines.push(row(
        "requests/s",
        &last.map_or("-".into(), |l| per_s(l.achieved_per_s)),
        &per_s(since.per_s),
    ));
    if let Some(offered) = since.offered_per_s {
        lines.push(row(
            "offered/s",
            &last.and_then(|l| l.offered_per_s).map_or("-".into(), per_s),
            &per_s(offered),
        ));
    }
    let count = |f: fn(&IntervalSummary) -> u64| last.map_or("-".into(), |l| f(l).to_string());
    lines.push(row(
        "completed",
        &count(|l| l.completed),
        &since.completed.to_string(),
    ));
    lines.push(row(
        "failed",
        &count(|l| l.failed),
        &since.failed.to_string(),
    ));
    let whole = since.latency_us.as_ref();
    for (name, of_last, of_whole) in [
        (
            "latency p50",
            last.and_then(|l| l.p50_us),
            whole.map(|w| w.p50),
        ),
        (
            "latency p90",
            last.and_then(|l| l.p90_us),
            whole.map(|w| w.p90),
        ),
        (
            "latency p99",
            last.and_then(|l| l.p99_us),
            whole.map(|w| w.p99),
        ),
        (
            "latency max",
            last.and_then(|l| l.max_us),
            whole.map(|w| w.max),
        ),
    ] {
        lines.push(row(name, &ms(of_last), &ms(of_whole)));
    }
    let server = last.and_then(|l| l.server.as_ref());
    if server.is_some() || since.server_cpu_cores.is_some() {
        lines.push(row(
            "server CPU (cores)",
            &server.map_or("-".into(), |s| format!("{:.2}", s.cpu_cores)),
            &since
                .server_cpu_cores
                .map_or("-".into(), |c| format!("{c:.2} (mean)")),
        ));
        lines.push(row(
            "server memory (RSS)",
            &server.map_or("-".into(), |s| bytes(s.rss_bytes as f64)),
            &since
                .server_rss_max_bytes
                .map_or("-".into(), |b| format!("{} (highest)", bytes(b as f64))),
        ));
    }
    let classes: BTreeSet<&String> = since
        .errors
        .keys()
        .chain(last.into_iter().flat_map(|l| l.errors.keys()))
        .collect();
    if !classes.is_empty() {
        lines.push(String::new());
        lines.push(row("errors by class", "last interval", "since the start"));
        for class in classes {
            let n = |m: Option<&std::collections::BTreeMap<String, u64>>| {
                m.and_then(|m| m.get(class))
                    .copied()
                    .unwrap_or(0)
                    .to_string()
            };
            lines.push(row(
                class,
                &n(last.map(|l| &l.errors)),
                &n(Some(&since.errors)),
            ));
        }
    }
    // The chart takes what room is left, the newest interval at the right.
    let room = height.saturating_sub(lines.len() + 3);
    if room >= 2 {
        let columns = width.saturating_sub(1).max(1);
        let rates: Vec<f64> = hub
            .recent()
            .rev()
            .take(columns)
            .map(|i| i.achieved_per_s)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let peak = rates.iter().copied().fold(0.0, f64::max);
        lines.push(String::new());
        lines.push(format!(
            "requests/s, the last {} intervals (peak {peak:.1}/s)",
            rates.len()
        ));
        lines.extend(chart(&rates, room.min(CHART_ROWS)));
    }
    lines
        .into_iter()
        .take(height.max(1))
        .map(|l| l.chars().take(width).collect())
        .collect()
}

fn row(label: &str, last: &str, since: &str) -> String {
    format!("{label:<LABEL$}{last:<COLUMN$}{since}")
}

/// Bars of `values` (scaled to their peak), `rows` high, in eighths of a row.
pub fn chart(values: &[f64], rows: usize) -> Vec<String> {
    let peak = values.iter().copied().fold(0.0, f64::max);
    let eighths: Vec<usize> = values
        .iter()
        .map(|v| {
            if peak > 0.0 {
                ((v / peak) * (rows * 8) as f64).round() as usize
            } else {
                0
            }
        })
        .collect();
    (0..rows)
        .rev()
        .map(|r| {
            eighths
                .iter()
                .map(|e| BLOCKS[e.saturating_sub(r * 8).min(8)])
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::hub::Update;
    use loadlab_result::{encode_histogram, new_histogram};

    fn interval(i: usize, latency_ns: u64, failed: &[(&str, u64)]) -> IntervalSummary {
        let mut h = new_histogram();
        h.record(latency_ns).unwrap();
        let mut iv: IntervalSummary = serde_json::from_value(serde_json::json!({
            "start_s": i as f64, "duration_s": 1.0, "warmup": false, "offered_per_s": null,
            "connections": null, "achieved_per_s": 10.0 * (i + 1) as f64, "completed": 1,
            "failed": failed.iter().map(|(_, n)| n).sum::<u64>(), "p50_us": null,
            "p90_us": null, "p99_us": null, "max_us": latency_ns as f64 / 1000.0,
            "bytes_sent": 0, "bytes_received": 0, "steal": null,
            "histogram": encode_histogram(&h),
        }))
        .unwrap();
        iv.errors = failed.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        iv
    }

    /// The since-the-start figures are the hub's (the maximum of both intervals, failures by
    /// class summed), the last interval's its own; a hostile target is shown inert.
    #[test]
    fn a_frame_shows_both_columns_errors_by_class_and_the_rate_chart() {
        let mut hub = Hub::with_limits(100, 2);
        hub.set_target_for_test("http://x/\u{1b}[2Jevil");
        hub.apply(Update::Interval(Box::new(interval(
            0,
            2_000_000,
            &[("connect_refused", 2)],
        ))));
        hub.apply(Update::Interval(Box::new(interval(
            1,
            1_000_000,
            &[("connect_refused", 1), ("request_timeout", 4)],
        ))));
        let text = frame(&hub, Stage::Running, Some(2.0), 100, 40).join("\n");
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.contains("\\u{1b}[2Jevil"), "{text}");
        let line = |label: &str| {
            text.lines()
                .find(|l| l.starts_with(label))
                .unwrap_or_else(|| panic!("no {label} in\n{text}"))
                .split_whitespace()
                .skip(label.split_whitespace().count())
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(line("latency max"), "1.000 ms 2.001 ms");
        // Since the start: 2 completed in 2 s (the hub counts, it does not average rates).
        assert_eq!(line("requests/s"), "20.0 1.0");
        assert_eq!(line("failed"), "5 7");
        assert_eq!(line("connect_refused"), "1 3");
        assert_eq!(line("request_timeout"), "4 4");
        assert!(
            text.contains("the last 2 intervals (peak 20.0/s)"),
            "{text}"
        );
        // Six rows: 10/s is half of the peak, the bottom row full for both.
        assert!(text.ends_with(" █\n █\n █\n██\n██\n██"), "{text}");
        // A small terminal gets what fits, each line cut to its width.
        let small = frame(&hub, Stage::Ended, None, 30, 5);
        assert_eq!(small.len(), 5);
        assert!(small.iter().all(|l| l.chars().count() <= 30));
    }

    #[test]
    fn the_chart_scales_to_its_peak_in_eighths() {
        assert_eq!(chart(&[0.0, 4.0, 8.0], 1), [" ▄█"]);
        assert_eq!(chart(&[1.0, 2.0], 2), [" █", "██"]);
        assert_eq!(chart(&[0.0, 0.0], 1), [""]);
    }
}
