//! The shards of a merged run in the text summary: one row per shard (its own rate, latency
//! and generator health, when it started against the earliest), then which shards reported
//! and how together they started. Parts that were not shards (repetitions) are not shown.

use super::grid;
use super::*;

/// The shards' table and the start line; nothing for a result that is not a merge of shards.
pub(super) fn shards_section(s: &mut String, r: &RunResult) {
    let Some(summary) = &r.shards else {
        return;
    };
    let earliest = r
        .parts
        .iter()
        .filter_map(|p| p.shard.as_ref().map(|i| i.started_unix_s))
        .fold(f64::INFINITY, f64::min);
    let columns: Vec<String> = [
        "shard",
        "host",
        "started",
        "offered/s",
        "achieved/s",
        "p50",
        "p99",
        "busiest",
        "sched p99",
        "failed",
    ]
    .map(String::from)
    .to_vec();
    let opt = |v: Option<f64>, f: fn(f64) -> String| v.map_or("-".to_string(), f);
    let rows: Vec<Vec<String>> = r
        .parts
        .iter()
        .map(|p| {
            let info = p.shard.as_ref();
            vec![
                info.map_or("-".into(), |i| format!("{}/{}", i.index, i.count)),
                p.hostname.clone(),
                info.map_or("-".into(), |i| {
                    format!("+{:.2} ms", (i.started_unix_s - earliest) * 1e3)
                }),
                opt(p.offered_per_s, rate),
                rate(p.per_second),
                opt(p.p50_us, duration_us),
                opt(p.p99_us, duration_us),
                opt(p.thread_busy_max, |b| format!("{:.0}%", b * 100.0)),
                opt(p.scheduler_lag_p99_us, duration_us),
                count(p.failed),
            ]
        })
        .collect();
    s.push_str("\nShards\n");
    for line in grid(&columns, &rows, 2).lines() {
        let _ = writeln!(s, "  {line}");
    }
    let mut line = format!("{} of {} reported", summary.reported.len(), summary.count);
    if !summary.missing.is_empty() {
        let missing: Vec<String> = summary.missing.iter().map(u32::to_string).collect();
        let _ = write!(line, " (missing: {})", missing.join(", "));
    }
    let _ = write!(
        line,
        "; started within {} of each other (bound {})",
        duration_us(summary.start_spread_s * 1e6),
        duration_us(summary.start_spread_bound_s * 1e6)
    );
    match summary.max_clock_error_s {
        Some(e) => {
            let _ = write!(
                line,
                "; clocks synchronised, error up to {}",
                duration_us(e * 1e6)
            );
        }
        None => line.push_str("; clock errors unknown"),
    }
    let _ = writeln!(s, "  {line}");
}
