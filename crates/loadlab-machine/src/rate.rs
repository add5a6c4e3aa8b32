//! Bandwidth as people write it: `2MBps` is 2,000,000 bytes per second (megabytes, decimal,
//! as post 001 meant and as `tc` counts), `16Mbit` is 16,000,000 bits per second. Lower-case
//! `mbps`/`Mbps` is refused: half the world reads it as bits and half as bytes.

use std::fmt;

/// A rate in bytes per second.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Rate {
    pub bytes_per_s: f64,
}

/// The least rate a link may be capped at: below it tbf's bucket would hold less than a
/// second of full-sized packets and the cap would mostly measure timer granularity.
pub const MIN_BYTES_PER_S: f64 = 10_000.0;

impl Rate {
    pub fn parse(raw: &str) -> Result<Rate, String> {
        let text = raw.trim();
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let unit = unit.trim();
        let help = "write e.g. 2MBps (megabytes/s), 500kBps, 1GBps, or 16Mbit (megabits/s)";
        let value: f64 = number
            .parse()
            .map_err(|_| format!("{raw:?} is not a rate; {help}"))?;
        let per_s = match unit {
            "Bps" | "B/s" => 1.0,
            "kBps" | "KBps" | "kB/s" | "KB/s" => 1e3,
            "MBps" | "MB/s" => 1e6,
            "GBps" | "GB/s" => 1e9,
            "KiBps" | "KiB/s" => 1024.0,
            "MiBps" | "MiB/s" => 1024.0 * 1024.0,
            "bit" => 1.0 / 8.0,
            "kbit" | "Kbit" => 1e3 / 8.0,
            "Mbit" => 1e6 / 8.0,
            "Gbit" => 1e9 / 8.0,
            "mbps" | "Mbps" | "kbps" | "Kbps" | "gbps" | "Gbps" | "bps" => {
                return Err(format!(
                    "{raw:?} is ambiguous (bits or bytes?); write MBps for megabytes/s or Mbit \
                     for megabits/s"
                ))
            }
            "" => return Err(format!("{raw:?} has no unit; {help}")),
            _ => return Err(format!("{raw:?}: unknown unit {unit:?}; {help}")),
        };
        let bytes_per_s = value * per_s;
        if !bytes_per_s.is_finite() || bytes_per_s < MIN_BYTES_PER_S {
            return Err(format!(
                "{raw:?} is below the least cap loadlab shapes, 10kBps (10,000 bytes/s)"
            ));
        }
        if bytes_per_s > 4e9 {
            return Err(format!("{raw:?} is above 4GBps, more than tbf can shape"));
        }
        Ok(Rate { bytes_per_s })
    }
}

impl fmt::Display for Rate {
    /// `2 MB/s`, `500 kB/s`, `1.5 MB/s`: decimal units, as parsed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.bytes_per_s;
        let (value, unit) = if b >= 1e9 {
            (b / 1e9, "GB/s")
        } else if b >= 1e6 {
            (b / 1e6, "MB/s")
        } else if b >= 1e3 {
            (b / 1e3, "kB/s")
        } else {
            (b, "B/s")
        };
        let text = format!("{value:.3}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        write!(f, "{text} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_in_bytes_and_bits() {
        let cases: &[(&str, f64)] = &[
            ("2MBps", 2e6),
            ("6MBps", 6e6),
            ("10 MBps", 10e6),
            ("1.5MB/s", 1.5e6),
            ("500kBps", 5e5),
            ("500KBps", 5e5),
            ("1GBps", 1e9),
            ("1MiBps", 1_048_576.0),
            ("16Mbit", 2e6),
            ("800kbit", 1e5),
        ];
        for (raw, want) in cases {
            assert_eq!(Rate::parse(raw).unwrap().bytes_per_s, *want, "{raw}");
        }
    }

    #[test]
    fn bad_rates_say_why() {
        let cases: &[(&str, &str)] = &[
            ("2Mbps", "ambiguous"),
            ("2mbps", "ambiguous"),
            ("2", "no unit"),
            ("fast", "not a rate"),
            ("2MBs", "unknown unit"),
            ("1kBps", "below"),
            ("0MBps", "below"),
            ("5GBps", "above"),
        ];
        for (raw, needle) in cases {
            let e = Rate::parse(raw).unwrap_err();
            assert!(e.contains(needle), "{raw}: {e}");
        }
    }

    #[test]
    fn shown_in_decimal_units() {
        assert_eq!(Rate::parse("2MBps").unwrap().to_string(), "2 MB/s");
        assert_eq!(Rate::parse("1.5MBps").unwrap().to_string(), "1.5 MB/s");
        assert_eq!(Rate::parse("500kBps").unwrap().to_string(), "500 kB/s");
    }
}
