//! Service-level objectives as people write them: `p99<50ms, errors<1%`, `p99.9<=200ms`,
//! `mean<5ms`, and `--until server-cpu=0.85` (post 003's criterion). Each probe is held
//! against every objective; the first it misses is named in the probe's judgment.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What an objective bounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Metric {
    /// A response-time percentile, e.g. 99.0 or 99.9 (of the measured phase).
    Percentile(f64),
    /// Mean response time.
    Mean,
    /// Longest response time.
    Max,
    /// Failed requests (transport errors, timeouts, never sent) and 4xx/5xx responses, as a
    /// share of the requests that fell due.
    Errors,
    /// The server's CPU as a share of its quota (`--cpus`), or of one core without a quota,
    /// averaged over whole seconds of the measured phase.
    ServerCpu,
}

/// One bound: `metric < limit` (or `<=`). Latency limits are in microseconds; errors and
/// server CPU are shares (0.01 for 1%).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    pub metric: Metric,
    pub limit: f64,
    pub inclusive: bool,
}

impl Objective {
    /// Whether `value` meets the objective.
    pub fn holds(&self, value: f64) -> bool {
        if self.inclusive {
            value <= self.limit
        } else {
            value < self.limit
        }
    }

    /// The metric's name as written (`p99`, `errors`, `server-cpu`).
    pub fn name(&self) -> String {
        match self.metric {
            Metric::Percentile(p) => format!("p{}", trim_number(p)),
            Metric::Mean => "mean".into(),
            Metric::Max => "max".into(),
            Metric::Errors => "errors".into(),
            Metric::ServerCpu => "server-cpu".into(),
        }
    }

    /// A value of this metric as a person reads it (`12.3 ms`, `0.4%`, `85% of its quota`).
    pub fn show(&self, value: f64) -> String {
        match self.metric {
            Metric::Percentile(_) | Metric::Mean | Metric::Max => show_us(value),
            Metric::Errors => format!("{}%", trim_number(round_to(value * 100.0, 3))),
            Metric::ServerCpu => format!("{:.0}%", value * 100.0),
        }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = if self.inclusive { "<=" } else { "<" };
        write!(
            f,
            "{}{op}{}",
            self.name(),
            self.show(self.limit).replace(' ', "")
        )
    }
}

/// Parses `--slo`: objectives separated by commas, each `METRIC<LIMIT` or `METRIC<=LIMIT`,
/// where METRIC is `pNN` (any percentile: p50, p99, p99.9), `mean`, `max` or `errors`.
/// Latency limits take a unit (`50ms`, `200us`, `1.5s`); `errors` a percentage (`1%`) or a
/// share (`0.01`).
pub fn parse_slo(text: &str) -> Result<Vec<Objective>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        out.push(parse_one(part)?);
    }
    if out.is_empty() {
        return Err(format!(
            "--slo {text:?}: no objective given; write e.g. \"p99<50ms, errors<1%\""
        ));
    }
    Ok(out)
}

/// Parses `--until server-cpu=0.85` (or `85%`): the probe fails once the server's CPU
/// reaches that share of its quota (or of one core).
pub fn parse_until(text: &str) -> Result<Objective, String> {
    let (name, value) = text.split_once('=').ok_or_else(|| {
        format!("--until {text:?}: write it as server-cpu=0.85 (a share of the server's quota)")
    })?;
    if name.trim() != "server-cpu" {
        return Err(format!(
            "--until {text:?}: the only criterion is server-cpu (e.g. server-cpu=0.85)"
        ));
    }
    let share = parse_share(value.trim())
        .ok_or_else(|| format!("--until {text:?}: {value:?} is not a share; write 0.85 or 85%"))?;
    if !(share > 0.0 && share <= 1.0) {
        return Err(format!(
            "--until {text:?}: the share must be above 0 and at most 1 (100%)"
        ));
    }
    Ok(Objective {
        metric: Metric::ServerCpu,
        limit: share,
        inclusive: false,
    })
}

fn parse_one(part: &str) -> Result<Objective, String> {
    let bad =
        |why: &str| format!("--slo: {part:?} {why}; write objectives like \"p99<50ms, errors<1%\"");
    let (name, inclusive, value) = if let Some((n, v)) = part.split_once("<=") {
        (n, true, v)
    } else if let Some((n, v)) = part.split_once('<') {
        (n, false, v)
    } else {
        return Err(bad("has no < or <="));
    };
    let name = name.trim().to_ascii_lowercase();
    let value = value.trim();
    let metric = match name.as_str() {
        "mean" | "avg" => Metric::Mean,
        "max" => Metric::Max,
        "errors" | "error" | "error-rate" => Metric::Errors,
        "server-cpu" => Metric::ServerCpu,
        p if p.starts_with('p') => {
            let q: f64 = p[1..]
                .parse()
                .map_err(|_| bad("names no percentile (p50, p99, p99.9)"))?;
            if !(q > 0.0 && q < 100.0) {
                return Err(bad("names a percentile outside 0 to 100"));
            }
            Metric::Percentile(q)
        }
        _ => return Err(bad("names an unknown metric (pNN, mean, max, errors)")),
    };
    let limit = match metric {
        Metric::Errors | Metric::ServerCpu => {
            parse_share(value).ok_or_else(|| bad("needs a percentage such as 1% or a share"))?
        }
        _ => parse_latency_us(value).ok_or_else(|| bad("needs a time such as 50ms or 1.5s"))?,
    };
    if !(limit.is_finite() && limit >= 0.0) {
        return Err(bad("needs a limit of 0 or more"));
    }
    Ok(Objective {
        metric,
        limit,
        inclusive,
    })
}

/// `1%` is 0.01; a bare number is already a share.
fn parse_share(value: &str) -> Option<f64> {
    match value.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().ok().map(|p| p / 100.0),
        None => value.parse().ok(),
    }
}

/// A time with a unit, in microseconds.
fn parse_latency_us(value: &str) -> Option<f64> {
    let split = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "us" | "µs" => 1.0,
        "ms" => 1_000.0,
        "s" => 1_000_000.0,
        _ => return None,
    };
    Some(number * scale)
}

fn show_us(us: f64) -> String {
    if us >= 1_000_000.0 {
        format!("{} s", trim_number(round_to(us / 1_000_000.0, 3)))
    } else if us >= 1_000.0 {
        format!("{} ms", trim_number(round_to(us / 1_000.0, 3)))
    } else {
        format!("{} us", trim_number(round_to(us, 3)))
    }
}

/// Rounds to `digits` significant digits.
fn round_to(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(digits - 1 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

fn trim_number(x: f64) -> String {
    let s = format!("{x:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse_as_written() {
        let got = parse_slo("p99<50ms, errors<1%, p99.9<=1.5s, mean<200us").unwrap();
        assert_eq!(got.len(), 4);
        assert_eq!(got[0].metric, Metric::Percentile(99.0));
        assert_eq!(got[0].limit, 50_000.0);
        assert!(!got[0].inclusive);
        assert_eq!(got[1].metric, Metric::Errors);
        assert!((got[1].limit - 0.01).abs() < 1e-12);
        assert_eq!(got[2].metric, Metric::Percentile(99.9));
        assert_eq!(got[2].limit, 1_500_000.0);
        assert!(got[2].inclusive);
        assert_eq!(got[3].metric, Metric::Mean);
        assert_eq!(got[3].limit, 200.0);
        assert_eq!(got[0].to_string(), "p99<50ms");
        assert_eq!(got[1].to_string(), "errors<1%");
        assert_eq!(got[2].to_string(), "p99.9<=1.5s");
    }

    #[test]
    fn bad_objectives_name_the_problem() {
        for (text, needle) in [
            ("p99>50ms", "no < or <="),
            ("p100<5ms", "outside 0 to 100"),
            ("px<5ms", "names no percentile"),
            ("p99<50", "needs a time"),
            ("errors<lots", "needs a percentage"),
            ("speed<5ms", "unknown metric"),
            ("", "no objective"),
        ] {
            let err = parse_slo(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn until_takes_a_share_or_a_percentage() {
        assert!((parse_until("server-cpu=0.85").unwrap().limit - 0.85).abs() < 1e-12);
        assert!((parse_until("server-cpu=85%").unwrap().limit - 0.85).abs() < 1e-12);
        assert!(parse_until("server-cpu=1.5")
            .unwrap_err()
            .contains("at most 1"));
        assert!(parse_until("memory=0.5")
            .unwrap_err()
            .contains("only criterion"));
        assert!(parse_until("0.85").unwrap_err().contains("server-cpu=0.85"));
    }

    #[test]
    fn limits_hold_strictly_or_inclusively() {
        let strict = parse_slo("p99<10ms").unwrap().remove(0);
        assert!(strict.holds(9_999.0) && !strict.holds(10_000.0));
        let inclusive = parse_slo("p99<=10ms").unwrap().remove(0);
        assert!(inclusive.holds(10_000.0) && !inclusive.holds(10_001.0));
    }
}
