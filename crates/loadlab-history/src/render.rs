//! A history in words: the text `loadlab history` prints and the Markdown a pull request
//! comment takes (JSON is the [`History`] itself, serialised). This module must not compute
//! anything a reader could not check against the JSON.
//!
//! Every stored string (revisions, environments) may hold anything a run was saved with, so
//! each is escaped (`escape_debug`, as every string from a peer is) before it is printed.

use crate::analysis::{
    Change, Direction, History, MetricHistory, Newest, NewestCheck, RevisionStat, Size,
};
use crate::metric::{Metric, Scale};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// A value in the metric's unit, short.
pub fn value(metric: Metric, v: f64) -> String {
    match metric {
        Metric::P50 | Metric::P90 | Metric::P99 => {
            if v < 1_000.0 {
                format!("{v:.0} µs")
            } else if v < 1_000_000.0 {
                format!("{:.2} ms", v / 1e3)
            } else {
                format!("{:.2} s", v / 1e6)
            }
        }
        Metric::Rps => format!("{v:.0}/s"),
        Metric::ErrorRate => format!("{:.2}%", v * 100.0),
    }
}

/// `+30% [+27%, +33%]` for a ratio, `+1.20 pp [+0.80, +1.60]` for a difference.
pub fn size(s: &Size) -> String {
    let one = |v: f64| match s.scale {
        Scale::Ratio => format!("{:+.1}%", (v - 1.0) * 100.0),
        Scale::Difference => format!("{:+.2} pp", v * 100.0),
    };
    match s.interval {
        Some((lo, hi)) => format!("{} [{}, {}]", one(s.estimate), one(lo), one(hi)),
        None => format!("{} (too few runs for an interval)", one(s.estimate)),
    }
}

fn p(p: f64) -> String {
    if p < 0.0001 {
        "p<0.0001".into()
    } else if p < 0.01 {
        format!("p={p:.4}")
    } else {
        format!("p={p:.2}")
    }
}

/// How a history's revisions are shown: a commit hash shortened as git does, to 12
/// characters or to as many more as tell the series' hashes apart; any other name (a tag
/// such as `v1.0.0-beta.1`) in full, since a cut name reads as another name. Escaped.
#[derive(Debug, Clone)]
pub struct Names {
    hash_len: usize,
}

/// Git's usual abbreviation of a commit.
const SHORT_HASH: usize = 12;

/// Hex digits alone, as a commit hash is written; a shorter one is shown whole but still
/// counts when telling the longer ones apart.
fn is_hash(revision: &str) -> bool {
    !revision.is_empty() && revision.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Names {
    /// The shortest length past [`SHORT_HASH`] at which no two hashes of `h` read alike.
    pub fn of(h: &History) -> Names {
        Names::of_revisions(
            h.metrics
                .iter()
                .flat_map(|m| m.revisions.iter().map(|r| r.revision.as_str())),
        )
    }

    /// [`Names::of`] a list of revisions.
    pub fn of_revisions<'a>(revisions: impl IntoIterator<Item = &'a str>) -> Names {
        let mut hashes: Vec<&str> = revisions.into_iter().filter(|r| is_hash(r)).collect();
        hashes.sort_unstable();
        hashes.dedup();
        let shared = hashes
            .windows(2)
            .map(|w| {
                w[0].bytes()
                    .zip(w[1].bytes())
                    .take_while(|(a, b)| a == b)
                    .count()
            })
            .max()
            .unwrap_or(0);
        Names {
            hash_len: SHORT_HASH.max(shared + 1),
        }
    }

    pub fn show(&self, revision: &str) -> String {
        let shown = match is_hash(revision) {
            true => revision.get(..self.hash_len).unwrap_or(revision),
            false => revision,
        };
        shown.escape_debug().to_string()
    }
}

fn change_line(m: &MetricHistory, c: &Change, names: &Names) -> String {
    let word = match c.direction {
        Direction::Worse => "worse",
        Direction::Better => "better",
    };
    format!(
        "{} {word} from {}: {} ({}; {} runs before, {} after; detector {})",
        m.metric.name(),
        names.show(&c.revision),
        size(&c.size),
        p(c.p_value),
        c.runs_before,
        c.runs_after,
        p(c.detector_p)
    )
}

/// The newest revision's verdict in one sentence.
pub fn newest_line(m: &MetricHistory, n: &NewestCheck, names: &Names) -> String {
    let name = m.metric.name();
    let rev = names.show(&n.revision);
    let against = match &n.baseline_from {
        Some(from) => format!(
            "the {} revisions since {} ({} runs)",
            n.baseline_revisions,
            names.show(from),
            n.baseline_runs
        ),
        None => "nothing".into(),
    };
    match &n.verdict {
        Newest::Regression { size: s, p_value } => format!(
            "{name} REGRESSED at {rev}: {} against {against} ({})",
            size(s),
            p(*p_value)
        ),
        Newest::Improvement { size: s, p_value } => format!(
            "{name} improved at {rev}: {} against {against} ({})",
            size(s),
            p(*p_value)
        ),
        Newest::Unchanged { size: s, .. } => format!(
            "{name} unchanged at {rev}: {} against {against}, no significant change",
            size(s)
        ),
        Newest::ContinuesEarlierChange { since, size: s, .. } => format!(
            "{name} at {rev}: the change began at {} ({} from there on against the revisions \
             before it), not at this revision",
            names.show(since),
            size(s)
        ),
        Newest::NoBaseline => format!(
            "{name} at {rev}: the first revision measured in its environment; nothing to \
             compare with"
        ),
        Newest::TooFewRuns {
            runs,
            baseline_runs,
        } => format!(
            "{name} at {rev}: {runs} runs against {baseline_runs} cannot reach the gate's \
             confidence; it decides once more runs precede this revision (or more of it are \
             saved)"
        ),
    }
}

/// A row of the revisions table: a revision in one environment, its runs (the most any
/// metric has) and its cell under each metric.
struct Row<'a> {
    revision: &'a str,
    first_started_at: &'a str,
    environment: usize,
    runs: usize,
    cells: Vec<String>,
}

impl Row<'_> {
    /// `2026-11-01 18:00`.
    fn first_run(&self) -> String {
        let at = self.first_started_at;
        at.get(..16).unwrap_or(at).replace('T', " ")
    }
}

/// Every revision of any metric, in order; one pass over each metric's revisions, so a
/// long history costs no search per cell.
fn rows(h: &History) -> Vec<Row<'_>> {
    let mut at: HashMap<(&str, usize), usize> = HashMap::new();
    let mut rows: Vec<Row> = Vec::new();
    for (k, m) in h.metrics.iter().enumerate() {
        let starts: HashSet<usize> = m.changes.iter().map(|c| c.index).collect();
        for (i, r) in m.revisions.iter().enumerate() {
            let row = *at.entry((&r.revision, r.environment)).or_insert_with(|| {
                rows.push(Row {
                    revision: &r.revision,
                    first_started_at: &r.first_started_at,
                    environment: r.environment,
                    runs: 0,
                    cells: vec!["–".into(); h.metrics.len()],
                });
                rows.len() - 1
            });
            rows[row].runs = rows[row].runs.max(r.runs.len());
            rows[row].cells[k] = cell(m.metric, r, starts.contains(&i));
        }
    }
    // Stable: revisions first measured at the same instant keep their order.
    rows.sort_by(|a, b| a.first_started_at.cmp(b.first_started_at));
    rows
}

/// One cell: median ±half the range as a share of it, `*` where a change point begins.
fn cell(metric: Metric, r: &RevisionStat, starts_change: bool) -> String {
    let spread = if r.median != 0.0 {
        format!(" ±{:.0}%", (r.max - r.min) / 2.0 / r.median.abs() * 100.0)
    } else {
        String::new()
    };
    let mark = if starts_change { " *" } else { "" };
    format!("{}{spread}{mark}", value(metric, r.median))
}

/// `N revisions`, and when `--last` left older ones out, how many there were.
fn revisions_count(h: &History, shown: usize) -> String {
    match h.revisions_left_out {
        0 => format!("{shown} revisions"),
        out => format!(
            "the newest {shown} of {} revisions ({out} older left out: --last N to change)",
            shown + out
        ),
    }
}

pub fn text(h: &History) -> String {
    let mut out = String::new();
    let rows = rows(h);
    let names = Names::of(h);
    let _ = writeln!(
        out,
        "history of {}: {}, {} environment{}",
        h.series.escape_debug(),
        revisions_count(h, rows.len()),
        h.environments.len(),
        if h.environments.len() == 1 { "" } else { "s" }
    );
    if h.runs_without_revision > 0 {
        let _ = writeln!(
            out,
            "({} runs without a revision left out: save with --revision, in CI, or in a git checkout)",
            h.runs_without_revision
        );
    }
    let mut header = vec!["revision".to_string(), "first run".into(), "runs".into()];
    header.extend(h.metrics.iter().map(|m| m.metric.name().to_string()));
    let mut table = vec![header];
    let mut last_env = None;
    for row in rows {
        if last_env.is_some() && last_env != Some(row.environment) {
            let env = h.environments[row.environment].escape_debug();
            table.push(vec![format!("-- environment: {env}")]);
        }
        last_env = Some(row.environment);
        let mut line = vec![
            names.show(row.revision),
            row.first_run(),
            row.runs.to_string(),
        ];
        line.extend(row.cells);
        table.push(line);
    }
    let widths: Vec<usize> = (0..table[0].len())
        .map(|c| {
            table
                .iter()
                .filter(|r| r.len() > 1)
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &table {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, v)| match row.len() {
                1 => v.clone(),
                _ => format!("{v:<w$}", w = widths[c]),
            })
            .collect();
        let _ = writeln!(out, "  {}", line.join("  ").trim_end());
    }
    let _ = writeln!(
        out,
        "  (median of each revision's runs ±half their range; * a change point begins)"
    );
    let _ = writeln!(out, "\nchange points:");
    let changes: Vec<String> = h
        .metrics
        .iter()
        .flat_map(|m| m.changes.iter().map(|c| change_line(m, c, &names)))
        .collect();
    if changes.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for c in changes {
        let _ = writeln!(out, "  {c}");
    }
    if h.environments.len() > 1 {
        let _ = writeln!(
            out,
            "\nenvironments (each judged apart, so a move between machines is not a change):"
        );
        for (i, e) in h.environments.iter().enumerate() {
            let _ = writeln!(out, "  {}: {}", i + 1, e.escape_debug());
        }
    }
    let _ = writeln!(out, "\nnewest revision:");
    for m in &h.metrics {
        if let Some(n) = &m.newest {
            let _ = writeln!(out, "  {}", newest_line(m, n, &names));
        }
    }
    out
}

/// For a pull request comment: the verdicts first, the change points, then the revisions
/// folded away.
pub fn markdown(h: &History) -> String {
    let mut out = String::new();
    let names = Names::of(h);
    let _ = writeln!(out, "### loadlab history: `{}`\n", h.series.escape_debug());
    for m in &h.metrics {
        if let Some(n) = &m.newest {
            let icon = match n.verdict {
                Newest::Regression { .. } => "❌",
                Newest::Improvement { .. } => "✅",
                _ => "➖",
            };
            let _ = writeln!(out, "- {icon} {}", newest_line(m, n, &names));
        }
    }
    let _ = writeln!(
        out,
        "\n| metric | from revision | change | p | runs before / after |\n|---|---|---|---|---|"
    );
    let mut any = false;
    for m in &h.metrics {
        for c in &m.changes {
            any = true;
            let _ = writeln!(
                out,
                "| {} | `{}` | {} {} | {} | {} / {} |",
                m.metric.name(),
                names.show(&c.revision),
                if c.direction == Direction::Worse {
                    "worse"
                } else {
                    "better"
                },
                size(&c.size),
                p(c.p_value),
                c.runs_before,
                c.runs_after
            );
        }
    }
    if !any {
        let _ = writeln!(out, "| – | – | no change point | – | – |");
    }
    let rows = rows(h);
    let _ = writeln!(
        out,
        "\n<details><summary>{}</summary>\n",
        revisions_count(h, rows.len())
    );
    let metrics: Vec<&str> = h.metrics.iter().map(|m| m.metric.name()).collect();
    let _ = writeln!(
        out,
        "| revision | first run | {} |\n|---|---|{}",
        metrics.join(" | "),
        "---|".repeat(metrics.len())
    );
    for row in &rows {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} |",
            names.show(row.revision),
            row.first_run(),
            row.cells.join(" | ")
        );
    }
    let _ = writeln!(out, "\n</details>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table: hashes as git shortens them (12 characters, more where two share 12, never
    /// alike); tags, short names and names that are not hashes whole; control characters
    /// escaped.
    #[test]
    fn revisions_are_shown_short_but_never_alike() {
        type Case = (&'static [&'static str], &'static [&'static str]);
        let cases: &[Case] = &[
            (
                &["1a2b3c4d5e6f7a8b9c0d", "ffff3c4d5e6f7a8b9c0d"],
                &["1a2b3c4d5e6f", "ffff3c4d5e6f"],
            ),
            (
                &["1a2b3c4d5e6f0000", "1a2b3c4d5e6f1111", "abcdef"],
                &["1a2b3c4d5e6f0", "1a2b3c4d5e6f1", "abcdef"],
            ),
            (
                &["1a2b3c4d5e6f", "1a2b3c4d5e6f77"],
                &["1a2b3c4d5e6f", "1a2b3c4d5e6f7"],
            ),
            (
                &[
                    "v1.0.0-beta.1",
                    "v1.0.0-beta.2",
                    "release-2026-11-01-candidate",
                ],
                &[
                    "v1.0.0-beta.1",
                    "v1.0.0-beta.2",
                    "release-2026-11-01-candidate",
                ],
            ),
            (
                &["r001", "abc\u{1b}[2J\u{7}"],
                &["r001", "abc\\u{1b}[2J\\u{7}"],
            ),
        ];
        for (revisions, want) in cases {
            let names = Names::of_revisions(revisions.iter().copied());
            let shown: Vec<String> = revisions.iter().map(|r| names.show(r)).collect();
            assert_eq!(&shown, want, "{revisions:?}");
        }
    }
}
