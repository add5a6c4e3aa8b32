//! Gates for CI: `--fail-if` expressions, parsed once and evaluated after the run.
//!
//! ```text
//! p99 > 50ms            the measured p99 above 50 ms
//! errors > 1%           failed requests and 5xx responses above 1% of those issued
//! rps < 1000            fewer than 1,000 requests/s
//! server.cpu.p99 > 0.5  the server's CPU p99 above half a core
//! p99 > 50ms for 10s    any 10 s of the timeline (each interval) above 50 ms
//! p99 regressed > 5%    comparisons only: the upper end of the ratio's interval above 1.05
//! ```
//!
//! Pure: parsing and evaluation read values; exit codes are the CLI's business.

use crate::metrics;
use loadlab_result::RunResult;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }
}

/// One `--fail-if`.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// Fails when `metric op value` holds for the run (over `window_s`: for every interval
    /// of some window of that length).
    Absolute {
        text: String,
        metric: String,
        op: Op,
        value: f64,
        window_s: Option<f64>,
    },
    /// Fails when the metric regressed by more than `fraction` in a comparison.
    Regressed {
        text: String,
        metric: String,
        fraction: f64,
    },
}

/// How a gate came out.
#[derive(Debug, Clone, PartialEq)]
pub enum GateOutcome {
    Pass(String),
    Fail(String),
    /// A relative gate without enough runs to decide.
    Inconclusive(String),
}

impl Gate {
    pub fn text(&self) -> &str {
        match self {
            Gate::Absolute { text, .. } | Gate::Regressed { text, .. } => text,
        }
    }

    pub fn parse(raw: &str) -> Result<Gate, String> {
        let text = raw.trim().to_string();
        let words: Vec<&str> = text.split_whitespace().collect();
        let err = |why: &str| {
            format!(
                "--fail-if {raw:?}: {why}; write e.g. \"p99 > 50ms\", \"errors > 1%\", \
                 \"rps < 1000\", \"p99 > 50ms for 10s\" or \"p99 regressed > 5%\""
            )
        };
        let (metric, rest) = words.split_first().ok_or_else(|| err("empty"))?;
        let metric = metric.to_string();
        let known = metrics::value_keys().contains(&metric.as_str());
        if !known {
            return Err(err(&format!(
                "unknown metric {metric:?} (known: {})",
                metrics::value_keys().join(", ")
            )));
        }
        if rest.first() == Some(&"regressed") {
            if rest.get(1) != Some(&">") || rest.len() != 3 {
                return Err(err("a relative gate reads METRIC regressed > N%"));
            }
            let fraction = percent(rest[2]).ok_or_else(|| err("the threshold is a percentage"))?;
            return Ok(Gate::Regressed {
                text,
                metric,
                fraction,
            });
        }
        let op = match rest.first() {
            Some(&"<") => Op::Lt,
            Some(&"<=") => Op::Le,
            Some(&">") => Op::Gt,
            Some(&">=") => Op::Ge,
            _ => return Err(err("expected <, <=, > or >= after the metric")),
        };
        let raw_value = rest
            .get(1)
            .ok_or_else(|| err("a value after the operator"))?;
        let value = quantity(&metric, raw_value).ok_or_else(|| {
            err(&format!(
                "{raw_value:?} is not a value for {metric} (latencies take ms/us/s, errors a %)"
            ))
        })?;
        let window_s = match &rest[2..] {
            [] => None,
            ["for", d] => {
                Some(crate::file::duration_s(d, "for").map_err(|e| err(&e))?).filter(|w| *w > 0.0)
            }
            _ => return Err(err("only \"for DURATION\" may follow the value")),
        };
        Ok(Gate::Absolute {
            text,
            metric,
            op,
            value,
            window_s,
        })
    }

    /// Evaluates an absolute gate on one run; relative gates pass here (they judge
    /// comparisons).
    pub fn check_run(&self, r: &RunResult) -> GateOutcome {
        let Gate::Absolute {
            text,
            metric,
            op,
            value,
            window_s,
        } = self
        else {
            return GateOutcome::Pass(format!("{}: judged on comparisons", self.text()));
        };
        match window_s {
            None => match metrics::value(r, metric) {
                Some(v) if op.holds(v, *value) => {
                    GateOutcome::Fail(format!("{text}: {metric} was {}", show(metric, v)))
                }
                Some(v) => GateOutcome::Pass(format!("{text}: {metric} was {}", show(metric, v))),
                None => GateOutcome::Fail(format!(
                    "{text}: this run has no {metric} (nothing completed, or no server sampled)"
                )),
            },
            Some(window) => windowed(r, text, metric, *op, *value, *window),
        }
    }

    /// Evaluates a relative gate on a comparison's ratio interval (test / control) for its
    /// metric; `None` when the gate is about another metric or is absolute.
    pub fn check_comparison(
        &self,
        metric_key: &str,
        ci: Option<(f64, f64)>,
        higher_is_better: bool,
    ) -> Option<GateOutcome> {
        let Gate::Regressed {
            text,
            metric,
            fraction,
        } = self
        else {
            return None;
        };
        if metric != metric_key {
            return None;
        }
        let Some((lo, hi)) = ci else {
            return Some(GateOutcome::Inconclusive(format!(
                "{text}: too few runs for an interval at this confidence"
            )));
        };
        let regressed = if higher_is_better {
            lo < 1.0 - fraction
        } else {
            hi > 1.0 + fraction
        };
        let line = format!(
            "{text}: ratio interval [{:+.1}%, {:+.1}%]",
            (lo - 1.0) * 100.0,
            (hi - 1.0) * 100.0
        );
        Some(if regressed {
            GateOutcome::Fail(line)
        } else {
            GateOutcome::Pass(line)
        })
    }
}

/// Any `window` seconds of measured intervals in a row, each over the limit.
fn windowed(
    r: &RunResult,
    text: &str,
    metric: &str,
    op: Op,
    value: f64,
    window: f64,
) -> GateOutcome {
    let measured: Vec<_> = r.timeline.iter().filter(|i| !i.warmup).collect();
    let mut run_s = 0.0;
    let mut worst_run = 0.0f64;
    for iv in &measured {
        let v = match metric {
            "p50" => iv.p50_us,
            "p90" => iv.p90_us,
            "p99" => iv.p99_us,
            "max" => iv.max_us,
            "rps" => Some(iv.achieved_per_s),
            "errors" => {
                let n = iv.completed + iv.failed;
                (n > 0).then(|| iv.failed as f64 / n as f64)
            }
            "server.cpu.p99" | "server.cpu.p50" => iv.server.map(|s| s.cpu_cores),
            _ => {
                return GateOutcome::Fail(format!(
                    "{text}: {metric} has no per-interval value; windows work for p50, p90, \
                     p99, max, rps, errors and server.cpu"
                ))
            }
        };
        if v.is_some_and(|v| op.holds(v, value)) {
            run_s += iv.duration_s;
            worst_run = worst_run.max(run_s);
        } else {
            run_s = 0.0;
        }
    }
    if worst_run + 1e-9 >= window {
        GateOutcome::Fail(format!(
            "{text}: held for {worst_run:.0} s in a row (window {window:.0} s)"
        ))
    } else {
        GateOutcome::Pass(format!(
            "{text}: held for at most {worst_run:.0} s in a row (window {window:.0} s)"
        ))
    }
}

fn show(metric: &str, v: f64) -> String {
    match metrics::metric(metric) {
        Some(m) => metrics::format(m.unit, v),
        None if metric.starts_with('p') || metric == "max" || metric == "mean" => {
            metrics::duration_us(v)
        }
        None => format!("{v}"),
    }
}

fn percent(raw: &str) -> Option<f64> {
    raw.strip_suffix('%')?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| v / 100.0)
}

/// A threshold in the metric's own unit: microseconds for latencies, a fraction for errors,
/// cores for CPU, bytes for memory, requests/s for rps.
fn quantity(metric: &str, raw: &str) -> Option<f64> {
    let latency = metric.starts_with('p') || metric == "max" || metric == "mean";
    if latency {
        let (num, scale) = [
            ("ms", 1e3),
            ("us", 1.0),
            ("µs", 1.0),
            ("ns", 1e-3),
            ("s", 1e6),
        ]
        .iter()
        .find_map(|(suffix, scale)| raw.strip_suffix(suffix).map(|n| (n, *scale)))?;
        return num
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(|v| v * scale);
    }
    if metric == "errors" {
        return percent(raw).or_else(|| raw.parse().ok().filter(|v: &f64| *v <= 1.0));
    }
    if metric == "server.memory.p99" {
        let (num, scale) = [
            ("Gi", 1u64 << 30),
            ("Mi", 1 << 20),
            ("Ki", 1 << 10),
            ("GB", 1_000_000_000),
            ("MB", 1_000_000),
            ("KB", 1_000),
            ("B", 1),
        ]
        .iter()
        .find_map(|(s, k)| raw.strip_suffix(s).map(|n| (n, *k as f64)))
        .unwrap_or((raw, 1.0));
        return num.parse::<f64>().ok().map(|v| v * scale);
    }
    raw.parse::<f64>().ok().filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_parse_with_units_and_name_the_fix() {
        let g = Gate::parse("p99 > 50ms").unwrap();
        assert!(
            matches!(g, Gate::Absolute { op: Op::Gt, value, window_s: None, .. } if value == 50_000.0)
        );
        let g = Gate::parse("errors > 1%").unwrap();
        assert!(matches!(g, Gate::Absolute { value, .. } if (value - 0.01).abs() < 1e-12));
        let g = Gate::parse("p99 > 50ms for 10s").unwrap();
        assert!(matches!(g, Gate::Absolute { window_s: Some(w), .. } if w == 10.0));
        let g = Gate::parse("p99 regressed > 5%").unwrap();
        assert!(matches!(g, Gate::Regressed { fraction, .. } if (fraction - 0.05).abs() < 1e-12));
        let g = Gate::parse("server.memory.p99 > 100Mi").unwrap();
        assert!(matches!(g, Gate::Absolute { value, .. } if value == 100.0 * 1048576.0));
        for bad in [
            "",
            "p99",
            "p99 >",
            "p99 > fast",
            "latency > 5ms",
            "p99 > 5ms for",
            "rps regressed 5%",
        ] {
            let e = Gate::parse(bad).unwrap_err();
            assert!(e.contains("write e.g."), "{bad}: {e}");
        }
    }

    #[test]
    fn relative_gates_read_the_interval_by_the_metric_sense() {
        let g = Gate::parse("p99 regressed > 5%").unwrap();
        let fail = g
            .check_comparison("p99", Some((1.02, 1.08)), false)
            .unwrap();
        assert!(matches!(fail, GateOutcome::Fail(_)));
        let pass = g
            .check_comparison("p99", Some((0.97, 1.04)), false)
            .unwrap();
        assert!(matches!(pass, GateOutcome::Pass(_)));
        assert!(g.check_comparison("rps", Some((0.5, 0.6)), true).is_none());
        let undecided = g.check_comparison("p99", None, false).unwrap();
        assert!(matches!(undecided, GateOutcome::Inconclusive(_)));
        let rps = Gate::parse("rps regressed > 5%").unwrap();
        assert!(matches!(
            rps.check_comparison("rps", Some((0.90, 0.99)), true)
                .unwrap(),
            GateOutcome::Fail(_)
        ));
    }
}
