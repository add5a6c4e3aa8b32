//! The metrics a history follows, read from the store's summary columns: which way is
//! better, and on which scale changes are measured (latency and throughput as ratios on log
//! values; the error rate, often exactly 0, as a difference). This module must not judge or
//! read the store.

use loadlab_store::Summary;
use serde::Serialize;

/// One metric over revisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    P50,
    P90,
    P99,
    /// Completed requests per second.
    Rps,
    /// Failed over issued requests.
    ErrorRate,
}

/// Which direction of change is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Lower,
    Higher,
}

/// How a change is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// As a ratio after/before: the detector and the interval work on log values.
    Ratio,
    /// As a difference after - before, on the values themselves (an error rate of 0 has no
    /// log, and a ratio of two tiny rates says little).
    Difference,
}

impl Metric {
    /// The metrics `loadlab history` shows when `--metric` is not given, in order.
    pub const DEFAULT: [Metric; 4] = [Metric::P50, Metric::P99, Metric::Rps, Metric::ErrorRate];
    pub const ALL: [Metric; 5] = [
        Metric::P50,
        Metric::P90,
        Metric::P99,
        Metric::Rps,
        Metric::ErrorRate,
    ];

    /// The name a person types and reads.
    pub fn name(self) -> &'static str {
        match self {
            Metric::P50 => "p50",
            Metric::P90 => "p90",
            Metric::P99 => "p99",
            Metric::Rps => "rps",
            Metric::ErrorRate => "errors",
        }
    }

    /// `p99`, `rps`, `errors`... (and a few spellings people use).
    pub fn parse(text: &str) -> Result<Metric, String> {
        let t = text.trim().to_ascii_lowercase();
        let found = match t.as_str() {
            "requests/s" | "throughput" | "req/s" => Some(Metric::Rps),
            "error_rate" | "error-rate" | "errors%" => Some(Metric::ErrorRate),
            _ => Metric::ALL.into_iter().find(|m| m.name() == t),
        };
        found.ok_or_else(|| {
            let names: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
            format!(
                "--metric {text:?} is not a metric history follows; use one of {}",
                names.join(", ")
            )
        })
    }

    pub fn better(self) -> Better {
        match self {
            Metric::Rps => Better::Higher,
            _ => Better::Lower,
        }
    }

    pub fn scale(self) -> Scale {
        match self {
            Metric::ErrorRate => Scale::Difference,
            _ => Scale::Ratio,
        }
    }

    /// The unit of [`Metric::of`]'s values.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::P50 | Metric::P90 | Metric::P99 => "us",
            Metric::Rps => "requests/s",
            Metric::ErrorRate => "fraction",
        }
    }

    /// The run's value, if it has one usable on this metric's scale (a latency needs a
    /// completed request; a ratio needs a positive value).
    pub fn of(self, s: &Summary) -> Option<f64> {
        let value = match self {
            Metric::P50 => s.latency_p50_us,
            Metric::P90 => s.latency_p90_us,
            Metric::P99 => s.latency_p99_us,
            Metric::Rps => Some(s.rps),
            Metric::ErrorRate => s.error_rate,
        }?;
        let usable = value.is_finite()
            && match self.scale() {
                Scale::Ratio => value > 0.0,
                Scale::Difference => true,
            };
        usable.then_some(value)
    }

    /// Onto the scale the detector and the intervals work on.
    pub fn transform(self, value: f64) -> f64 {
        match self.scale() {
            Scale::Ratio => value.ln(),
            Scale::Difference => value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unknown_ones_say_what_is_known() {
        for m in Metric::ALL {
            assert_eq!(Metric::parse(m.name()), Ok(m));
        }
        assert_eq!(Metric::parse("P99"), Ok(Metric::P99));
        assert_eq!(Metric::parse("requests/s"), Ok(Metric::Rps));
        let err = Metric::parse("p98").unwrap_err();
        assert!(err.contains("p50, p90, p99, rps, errors"), "{err}");
    }
}
