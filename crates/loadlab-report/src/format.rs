//! Number formatting shared by the human-facing formats.

/// A latency in microseconds, with a unit a person reads at a glance: `812 µs`, `4.21 ms`.
pub fn duration_us(us: f64) -> String {
    if us < 10.0 {
        format!("{us:.2} µs")
    } else if us < 1_000.0 {
        format!("{us:.0} µs")
    } else if us < 10_000.0 {
        format!("{:.2} ms", us / 1_000.0)
    } else if us < 1_000_000.0 {
        format!("{:.1} ms", us / 1_000.0)
    } else {
        format!("{:.2} s", us / 1_000_000.0)
    }
}

/// An integer with thousands separators: `1,234,567`.
pub use loadlab_result::format::thousands as count;

/// A rate with thousands separators and one decimal: `112,908.1`.
pub fn rate(per_second: f64) -> String {
    let tenths = (per_second * 10.0).round() as u64;
    format!("{}.{}", count(tenths / 10), tenths % 10)
}

/// A byte count in binary units: `512 B`, `1.5 KiB`, `12.3 MiB` (the one rule, in
/// `loadlab_result::format`).
pub use loadlab_result::format::bytes;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(duration_us(4.216), "4.22 µs");
        assert_eq!(duration_us(812.4), "812 µs");
        assert_eq!(duration_us(4_210.0), "4.21 ms");
        assert_eq!(duration_us(42_100.0), "42.1 ms");
        assert_eq!(duration_us(2_500_000.0), "2.50 s");
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_234_567), "1,234,567");
    }
}
