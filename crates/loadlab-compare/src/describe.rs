//! Verdicts in plain words: "faster by 12% [8.3%, 15%] (p=0.0079)".
//!
//! Wording only; the caller names the metric's sense ("faster"/"slower" for latency,
//! "higher"/"lower" for throughput), since this crate does not know what a metric measures.
//! Nothing here may change a number or a verdict.

use crate::compare::MetricComparison;
use crate::verdict::Verdict;

impl Verdict {
    /// The verdict alone, without numbers: "faster by 12%", "~ no significant difference",
    /// "equivalent", "inconclusive: run at least 4 per arm".
    pub fn describe(&self, better_word: &str, worse_word: &str) -> String {
        match self {
            Verdict::Better { by } => format!("{better_word} by {}", percent(*by)),
            Verdict::Worse { by } => format!("{worse_word} by {}", percent(*by)),
            Verdict::NoDifference => "~ no significant difference".to_string(),
            Verdict::Equivalent => "equivalent".to_string(),
            Verdict::Inconclusive { runs_needed } => {
                format!("inconclusive{}", run_advice(*runs_needed, ": "))
            }
        }
    }
}

impl MetricComparison {
    /// The verdict with its evidence, e.g.
    /// - "slower by 12% [8.3%, 15%] (p=0.0079)"
    /// - "~ no significant difference (p=0.42; change +1.5% [-2.0%, +5.1%])"
    /// - "equivalent within ±3% (change +0.2% [-0.4%, +0.9%])"
    /// - "inconclusive: 3 runs per arm cannot reach 95% confidence (smallest possible
    ///   p = 0.10); run at least 4 per arm"
    pub fn describe(&self, better_word: &str, worse_word: &str) -> String {
        let p = self.p_adjusted.map(format_p).unwrap_or_default();
        match &self.verdict {
            Verdict::Better { .. } | Verdict::Worse { .. } => {
                let mut text = self.verdict.describe(better_word, worse_word);
                if let Some((lo, hi)) = self.ci {
                    // Both ends lie on the same side of 1, so their distances from 1 order
                    // the interval of the change.
                    let (a, b) = ((lo - 1.0).abs(), (hi - 1.0).abs());
                    let (a, b) = (a.min(b), a.max(b));
                    text += &format!(" [{}, {}]", percent(a), percent(b));
                }
                text + &format!(" (p={p})")
            }
            Verdict::NoDifference => format!(
                "~ no significant difference (p={p}{})",
                self.change_text("; ")
            ),
            Verdict::Equivalent => {
                let mut text = format!(
                    "equivalent within ±{}%",
                    plain_number(self.equivalence_margin * 100.0)
                );
                let change = self.change_text("");
                if !change.is_empty() {
                    text += &format!(" ({change})");
                }
                text
            }
            Verdict::Inconclusive { runs_needed } => {
                let runs = match (self.control.n, self.test.n) {
                    (1, 1) => "1 run per arm".to_string(),
                    (n, m) if n == m => format!("{n} runs per arm"),
                    (n, m) => format!("{n} control and {m} test runs"),
                };
                let family = if self.family_size > 1 {
                    format!(" after Holm adjustment over {} metrics", self.family_size)
                } else {
                    String::new()
                };
                let confidence = plain_number(self.confidence * 100.0);
                let min_p = format_p(self.min_p);
                format!(
                    "inconclusive: {runs} cannot reach {confidence}% confidence \
                     (smallest possible p = {min_p}{family}){}",
                    run_advice(*runs_needed, "; "),
                )
            }
        }
    }

    /// "change +1.5% [-2.0%, +5.1%]" after `lead`, or nothing without a ratio.
    fn change_text(&self, lead: &str) -> String {
        let Some(ratio) = self.ratio else {
            return String::new();
        };
        let mut text = format!("{lead}change {}", signed_percent(ratio - 1.0));
        if let Some((lo, hi)) = self.ci {
            text += &format!(
                " [{}, {}]",
                signed_percent(lo - 1.0),
                signed_percent(hi - 1.0)
            );
        }
        text
    }
}

fn run_advice(runs_needed: Option<usize>, lead: &str) -> String {
    match runs_needed {
        Some(n) => format!("{lead}run at least {n} per arm"),
        None => format!("{lead}no practical number of runs reaches it"),
    }
}

/// A fraction as a percentage: whole percents from 10% up, one decimal below, so small
/// changes do not all read "0%".
fn percent(fraction: f64) -> String {
    let value = fraction * 100.0;
    if value.abs() >= 9.95 {
        format!("{value:.0}%")
    } else {
        format!("{value:.1}%")
    }
}

fn signed_percent(fraction: f64) -> String {
    let text = percent(fraction.abs());
    // A change that rounds to zero reads "+0.0%", never "-0.0%".
    if fraction < 0.0 && text != "0.0%" {
        format!("-{text}")
    } else {
        format!("+{text}")
    }
}

/// Two decimals down to 0.10, two significant digits below that, and a floor at 0.0001,
/// since smaller values only suggest a precision the model does not have.
fn format_p(p: f64) -> String {
    if p >= 0.0995 {
        format!("{p:.2}")
    } else if p < 0.0001 {
        "<0.0001".to_string()
    } else {
        let decimals = (1 - p.log10().floor() as i32) as usize;
        format!("{p:.decimals$}")
    }
}

/// 95 -> "95", 99.9 -> "99.9".
fn plain_number(value: f64) -> String {
    if (value - value.round()).abs() < 1e-9 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(percent(0.12), "12%");
        assert_eq!(percent(0.083), "8.3%");
        assert_eq!(percent(0.03), "3.0%");
        assert_eq!(signed_percent(-0.02), "-2.0%");
        assert_eq!(signed_percent(0.0004), "+0.0%");
        assert_eq!(signed_percent(-0.0004), "+0.0%");
        assert_eq!(format_p(0.42), "0.42");
        assert_eq!(format_p(0.1), "0.10");
        assert_eq!(format_p(2.0 / 70.0), "0.029");
        assert_eq!(format_p(2.0 / 252.0), "0.0079");
        assert_eq!(format_p(1e-7), "<0.0001");
        assert_eq!(plain_number(95.0), "95");
        assert_eq!(plain_number(99.9), "99.9");
    }

    #[test]
    fn bare_verdicts() {
        assert_eq!(
            Verdict::Better { by: 0.12 }.describe("faster", "slower"),
            "faster by 12%"
        );
        assert_eq!(
            Verdict::Inconclusive {
                runs_needed: Some(4)
            }
            .describe("faster", "slower"),
            "inconclusive: run at least 4 per arm"
        );
    }
}
