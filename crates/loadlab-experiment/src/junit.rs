//! Gates as a JUnit XML report, the format CI systems show as test results: one test suite,
//! one test case per gate and subject (a run, an arm, a comparison), a `<failure>` for a gate
//! that failed and `<skipped>` for one that could not be decided. Text only; escaped.

use crate::gates::GateOutcome;
use std::fmt::Write as _;

/// One gate judged on one subject.
#[derive(Debug, Clone)]
pub struct Case {
    /// What was judged: `run`, `portfolio-migration:axum`, `a against b`.
    pub subject: String,
    pub gate: String,
    pub outcome: GateOutcome,
}

fn xml(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&apos;".to_string(),
            c => c.to_string(),
        })
        .collect()
}

pub fn render(cases: &[Case]) -> String {
    let failures = cases
        .iter()
        .filter(|c| matches!(c.outcome, GateOutcome::Fail(_)))
        .count();
    let skipped = cases
        .iter()
        .filter(|c| matches!(c.outcome, GateOutcome::Inconclusive(_)))
        .count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites><testsuite name=\"loadlab gates\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">",
        cases.len()
    );
    for c in cases {
        let _ = write!(
            out,
            "  <testcase classname=\"{}\" name=\"{}\">",
            xml(&c.subject),
            xml(&c.gate)
        );
        match &c.outcome {
            GateOutcome::Pass(m) => {
                let _ = write!(out, "<system-out>{}</system-out>", xml(m));
            }
            GateOutcome::Fail(m) => {
                let _ = write!(out, "<failure message=\"{}\">{}</failure>", xml(m), xml(m));
            }
            GateOutcome::Inconclusive(m) => {
                let _ = write!(out, "<skipped message=\"{}\"/>", xml(m));
            }
        }
        out.push_str("</testcase>\n");
    }
    out.push_str("</testsuite></testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_and_skips_are_counted_and_text_escaped() {
        let cases = vec![
            Case {
                subject: "run".into(),
                gate: "p99 > 50ms".into(),
                outcome: GateOutcome::Fail("p99 > 50ms: p99 was 80 ms <&>".into()),
            },
            Case {
                subject: "a against b".into(),
                gate: "p99 regressed > 5%".into(),
                outcome: GateOutcome::Inconclusive("too few runs".into()),
            },
            Case {
                subject: "run".into(),
                gate: "errors > 1%".into(),
                outcome: GateOutcome::Pass("ok".into()),
            },
        ];
        let x = render(&cases);
        assert!(
            x.contains("tests=\"3\" failures=\"1\" skipped=\"1\""),
            "{x}"
        );
        assert!(x.contains("name=\"p99 &gt; 50ms\""), "{x}");
        assert!(x.contains("80 ms &lt;&amp;&gt;"), "{x}");
        assert!(!x.contains("<&>"));
    }
}
