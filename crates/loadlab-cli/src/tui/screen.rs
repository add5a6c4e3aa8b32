//! One frame of `--tui`, as lines of text: the live page's figures (last interval and since
//! the start, from the page's own [`Hub`]: percentiles merged from the intervals'
//! histograms, never averaged), errors by class, a chart of requests/s over the last
//! intervals and the server's CPU and memory when sampled; for a command of many runs, above
//! them, what its page shows: the plan, a row per probe or run, the answer so far (marked not
//! final) and a fleet's generators. Pure: no terminal, no clock, so a test reads a frame as a
//! string. Every string a user or a server gave (the target, a row's cells, an arm's label)
//! goes through [`shown`]; the rest is loadlab's own words and numbers.

use crate::live::hub::command::State;
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
/// A row's cell is cut to this width (but the last, which runs to the line's end).
const CELL: usize = 32;
/// Rows shown however small the terminal; and lines of the answer so far at most.
const MIN_ROWS: usize = 3;
const SO_FAR_LINES: usize = 12;

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
    let command = hub.command_state();
    let mut lines = Vec::new();
    let elapsed = elapsed_s.map_or(String::new(), |s| format!(" {s:.1} s,"));
    let mut above = Vec::new();
    match &command.plan {
        None => {
            let state = match stage {
                Stage::Running => "running; q or Ctrl-C stops it (the result is written)",
                Stage::Stopping => "stopping: the result is being written",
                Stage::LoadEnded => "load ended: the result is being made",
                Stage::Ended => "ended: the result is written",
            };
            let target = hub.target().unwrap_or_default();
            lines.push(format!("loadlab {}:{elapsed} {state}", shown(&target)));
        }
        Some(plan) => {
            let state = match stage {
                Stage::Running | Stage::LoadEnded => {
                    "running; q or Ctrl-C stops it (what was measured is kept, the document \
                     written)"
                }
                Stage::Stopping => "stopping: the run going on ends, no other starts",
                Stage::Ended => "ended",
            };
            above.push(format!("loadlab {}: {state}", plan.kind));
            above.extend(plan.lines.iter().map(|l| shown(l).into_owned()));
            lines.push(match hub.target() {
                None => "no run yet".into(),
                Some(target) => format!(
                    "run {}: {}:{elapsed} {}",
                    command.runs,
                    shown(&target),
                    match (stage, hub.load_ended) {
                        (Stage::Ended, _) | (_, true) => "ended",
                        _ => "running",
                    }
                ),
            });
        }
    }
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
    if command.plan.is_some() {
        lines.extend(generators(command));
        // The rows take what room the figures leave (the newest kept), the chart the rest.
        let room = height.saturating_sub(lines.len() + above.len() + 1);
        above.push(String::new());
        above.extend(steps(command, room));
        above.push(String::new());
        above.extend(lines);
        lines = above;
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

/// The rows (the newest that fit in `room` lines), then the answer so far.
fn steps(command: &State, room: usize) -> Vec<String> {
    let mut out = Vec::new();
    let columns = command.plan.as_ref().map_or(&[][..], |p| &p.columns[..]);
    let answer: Vec<String> = match &command.so_far {
        Some(s) => {
            let mark = if s.is_final {
                "final"
            } else {
                "so far, not final"
            };
            std::iter::once(format!("{} ({mark}):", shown(&s.title)))
                .chain(
                    s.text
                        .lines()
                        .take(SO_FAR_LINES)
                        .map(|l| format!("  {}", shown(l))),
                )
                .collect()
        }
        None => Vec::new(),
    };
    let fit = room.saturating_sub(answer.len() + 2).max(MIN_ROWS);
    let skipped = command.rows.len().saturating_sub(fit);
    let rows: Vec<Vec<String>> = command
        .rows
        .iter()
        .skip(skipped)
        .map(|r| r.cells.iter().map(|c| shown(c).into_owned()).collect())
        .collect();
    let header: Vec<String> = columns.to_vec();
    let width = |i: usize| {
        std::iter::once(&header)
            .chain(&rows)
            .filter_map(|cells| cells.get(i))
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0)
            .min(CELL)
    };
    let widths: Vec<usize> = (0..header
        .len()
        .max(rows.iter().map(Vec::len).max().unwrap_or(0)))
        .map(width)
        .collect();
    let line = |cells: &[String]| {
        let mut text = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                text.push_str(c);
            } else {
                let cut: String = c.chars().take(widths[i]).collect();
                text.push_str(&format!("{cut:<w$}  ", w = widths[i]));
            }
        }
        text
    };
    out.push(line(&header));
    if skipped > 0 {
        out.push(format!("({skipped} earlier not shown)"));
    }
    out.extend(rows.iter().map(|r| line(r)));
    out.extend(answer);
    out
}

/// A fleet's generators, each one's last interval (as the page's rows).
fn generators(command: &State) -> Vec<String> {
    if command.parts.is_empty() {
        return Vec::new();
    }
    let mut out = vec![String::new(), row("generator", "last interval", "")];
    for (part, iv) in &command.parts {
        let name = command
            .generators
            .get(*part)
            .map_or(format!("generator {}", part + 1), |n| shown(n).into_owned());
        let offered = iv
            .offered_per_s
            .map_or(String::new(), |o| format!(" of {o:.1}"));
        out.push(format!(
            "{:<LABEL$}{:.1}/s{offered}, {} failed, p99 {}{}",
            name.chars().take(LABEL - 1).collect::<String>(),
            iv.achieved_per_s,
            iv.failed,
            ms(iv.p99_us),
            iv.steal
                .map_or(String::new(), |s| format!(", steal {:.1}%", s * 100.0))
        ));
    }
    out
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

    /// A command's frame: its plan, the newest rows that fit (the rest counted), the answer
    /// so far marked not final; a hostile cell is shown inert.
    #[test]
    fn a_commands_frame_has_its_rows_and_answer_so_far() {
        use crate::live::hub::command::{Plan, Row, SoFar, Update as C};
        let mut hub = Hub::with_limits(100, 2);
        hub.apply(Update::Command(C::Plan(Box::new(Plan {
            kind: "experiment".into(),
            lines: vec!["e: 2 arms x 30 blocks".into()],
            columns: vec!["run".into(), "arm".into(), "state".into()],
        }))));
        for i in 1..=30 {
            hub.apply(Update::Command(C::Step(
                Box::new(Row {
                    key: format!("run {i}"),
                    cells: vec![i.to_string(), "a\u{1b}[2Jb".into(), "done".into()],
                    state: "done".into(),
                    record: None,
                }),
                Some(Box::new(SoFar {
                    title: "The comparison".into(),
                    text: "b against a: faster".into(),
                    is_final: false,
                })),
            )));
        }
        let text = frame(&hub, Stage::Running, None, 100, 40).join("\n");
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.starts_with("loadlab experiment: running"), "{text}");
        assert!(text.contains("\ne: 2 arms x 30 blocks\n"), "{text}");
        assert!(text.contains("\nrun  arm          state\n"), "{text}");
        assert!(text.contains("\n30   a\\u{1b}[2Jb  done\n"), "{text}");
        let shown = text.lines().filter(|l| l.ends_with("  done")).count();
        assert!((3..30).contains(&shown), "{shown} rows: {text}");
        assert!(text.contains(&format!("({} earlier not shown)", 30 - shown)));
        assert!(text.contains("The comparison (so far, not final):\n  b against a: faster"));
        assert!(
            text.contains("requests/s"),
            "the run's figures below: {text}"
        );
    }

    #[test]
    fn the_chart_scales_to_its_peak_in_eighths() {
        assert_eq!(chart(&[0.0, 4.0, 8.0], 1), [" ▄█"]);
        assert_eq!(chart(&[1.0, 2.0], 2), [" █", "██"]);
        assert_eq!(chart(&[0.0, 0.0], 1), [""]);
    }
}
