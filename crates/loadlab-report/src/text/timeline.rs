//! The timeline, the percentile table and the distribution drawn in the terminal.

use super::*;

/// At most this many rows of timeline; longer runs are shown in groups of intervals.
const TIMELINE_ROWS: usize = 20;

/// The run over time: a row per interval (or group of intervals).
pub(super) fn timeline(s: &mut String, r: &RunResult) {
    let t = &r.timeline;
    if t.len() < 2 {
        return;
    }
    let group = t.len().div_ceil(TIMELINE_ROWS);
    let open = r.load.model == "open_loop";
    let staged = t.iter().any(|i| i.connections.is_some());
    let _ = writeln!(
        s,
        "\nTimeline{}",
        if group > 1 {
            format!(" ({} intervals a row)", group)
        } else {
            String::new()
        }
    );
    let level = if open {
        "offered/s"
    } else if staged {
        "conns"
    } else {
        ""
    };
    let with_server = t.iter().any(|i| i.server.is_some());
    let _ = writeln!(
        s,
        "  {:>8} {:>10} {:>11} {:>9} {:>9} {:>9} {:>7}{}",
        "at",
        level,
        "achieved/s",
        "p50",
        "p99",
        "max",
        "failed",
        if with_server {
            format!(" {:>9} {:>10}", "srv cpu", "srv rss")
        } else {
            String::new()
        }
    );
    for rows in t.chunks(group) {
        let first = &rows[0];
        let secs: f64 = rows.iter().map(|i| i.duration_s).sum();
        let completed: u64 = rows.iter().map(|i| i.completed).sum();
        let failed: u64 = rows.iter().map(|i| i.failed).sum();
        let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
        for i in rows {
            if let Some(h) = i
                .histogram
                .as_deref()
                .and_then(|e| decode_histogram(e).ok())
            {
                match merged.as_mut() {
                    Some(m) => {
                        let _ = m.add(&h);
                    }
                    None => merged = Some(h),
                }
            }
        }
        let q = |q: f64| {
            merged.as_ref().map_or("-".to_string(), |h| {
                duration_us(h.value_at_quantile(q) as f64 / 1e3)
            })
        };
        let level = if open {
            let offered: f64 = rows
                .iter()
                .map(|i| i.offered_per_s.unwrap_or(0.0) * i.duration_s)
                .sum();
            format!("{:.0}", offered / secs)
        } else {
            first
                .connections
                .map_or(String::new(), |c| format!("{c:.0}"))
        };
        let server = if with_server {
            let secs_with: f64 = rows
                .iter()
                .filter(|i| i.server.is_some())
                .map(|i| i.duration_s)
                .sum();
            let cpu: f64 = rows
                .iter()
                .filter_map(|i| i.server.map(|x| x.cpu_cores * i.duration_s))
                .sum();
            let rss = rows
                .iter()
                .filter_map(|i| i.server.map(|x| x.rss_bytes))
                .max();
            match rss {
                Some(rss) if secs_with > 0.0 => format!(
                    " {:>9} {:>10}",
                    format!("{:.3}", cpu / secs_with),
                    bytes(rss as f64)
                ),
                _ => format!(" {:>9} {:>10}", "-", "-"),
            }
        } else {
            String::new()
        };
        // A row the run ended inside: its rate is per second of its real length; under half
        // an interval that rate is noise, so only the count is shown (never a drop to ~0).
        let partial = rows.iter().any(|i| i.partial);
        let nominal_s = r.load.interval_s * rows.len() as f64;
        let achieved = if partial && secs < nominal_s / 2.0 {
            "-".to_string()
        } else {
            format!("{:.0}", completed as f64 / secs)
        };
        let mark = if partial {
            format!("  partial: {} in {}", count(completed), seconds(secs))
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "  {:>7.1}s {:>10} {:>11} {:>9} {:>9} {:>9} {:>7}{}{}{}",
            first.start_s,
            level,
            achieved,
            q(0.5),
            q(0.99),
            merged
                .as_ref()
                .map_or("-".to_string(), |h| duration_us(h.max() as f64 / 1e3)),
            count(failed),
            server,
            if first.warmup { "  warm-up" } else { "" },
            mark
        );
    }
}

/// `0.45 s`, `30 ms`: a partial interval's real length.
fn seconds(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

pub(super) fn row(s: &mut String, label: &str, text: &str) {
    let _ = writeln!(s, "{label:<12} {text}");
}

pub(super) fn percentile_table(s: &mut String, l: &LatencySummary) {
    let cols = [
        ("p50", l.p50),
        ("p75", l.p75),
        ("p90", l.p90),
        ("p95", l.p95),
        ("p99", l.p99),
        ("p99.9", l.p99_9),
        ("p99.99", l.p99_99),
        ("max", l.max),
    ];
    let cells: Vec<(String, String)> = cols
        .iter()
        .map(|(h, v)| (h.to_string(), duration_us(*v)))
        .collect();
    let widths: Vec<usize> = cells
        .iter()
        .map(|(h, v)| h.chars().count().max(v.chars().count()))
        .collect();
    let mut head = String::from("  ");
    let mut vals = String::from("  ");
    for ((h, v), w) in cells.iter().zip(&widths) {
        let _ = write!(head, "{h:>w$}  ");
        let _ = write!(vals, "{v:>w$}  ");
    }
    let _ = writeln!(s, "{}", head.trim_end());
    let _ = writeln!(s, "{}", vals.trim_end());
}

/// Latency histogram on 1-2-5 bucket edges from the fastest to the slowest request.
pub(super) fn distribution(s: &mut String, m: &PhaseSummary) {
    let Ok(h) = decode_histogram(&m.histograms.latency) else {
        return;
    };
    if h.is_empty() {
        return;
    }
    let (lo, hi) = (h.min().max(1), h.max().max(1));
    // Bucket i holds latencies in (edge[i-1], edge[i]]; edges run from the first 1-2-5 value
    // at or above the fastest request to the first at or above the slowest.
    let mut edges = Vec::new();
    let mut decade = 1u64;
    'outer: loop {
        for step in [1, 2, 5] {
            let edge = decade * step;
            if edge >= lo {
                edges.push(edge);
            }
            if edge >= hi {
                break 'outer;
            }
        }
        decade *= 10;
    }
    let mut counts = vec![0u64; edges.len()];
    for v in h.iter_recorded() {
        let value = v.value_iterated_to();
        let i = edges
            .iter()
            .position(|&e| value <= e)
            .unwrap_or(edges.len() - 1);
        counts[i] += v.count_at_value();
    }
    let total = h.len() as f64;
    let peak = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    for (edge, n) in edges.iter().zip(&counts) {
        let share = *n as f64 / total;
        let cells = (*n as f64 / peak * BAR_WIDTH as f64 * 8.0).round() as usize;
        let mut bar = "█".repeat(cells / 8);
        if !cells.is_multiple_of(8) {
            bar.push(['▏', '▎', '▍', '▌', '▋', '▊', '▉'][cells % 8 - 1]);
        }
        let _ = writeln!(
            s,
            "  ≤ {:>9} {:>6.2}% {bar}",
            duration_us(*edge as f64 / 1_000.0),
            share * 100.0
        );
    }
}
