//! Numbers as people read them, and a peer's text as a terminal may show it, shared by every
//! crate that writes text (the report, the machine checks, the CLI, the engine's failure
//! details): one formatter each, not a copy per crate.

/// An integer with thousands separators: `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte count in binary units, the one rule every crate prints sizes with: below 1 KiB in
/// whole bytes (`512 B`); above, in the largest of KiB, MiB, GiB and TiB that leaves at least
/// 1, to three significant figures with trailing zeros dropped (`1.54 MiB`, `1.5 GiB`,
/// `12.3 MiB`, `471 KiB`, `4 MiB`, `208 KiB`). A float because rates are sizes too.
pub fn bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n;
    let mut unit = 0;
    // On while the figure as printed would reach 1024 (1023.7 KiB is `1 MiB`, not `1024 KiB`).
    while unit + 1 < UNITS.len() && value >= 1023.5 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        return format!("{value:.0} B");
    }
    // The thresholds are where rounding carries into one more digit (9.996 is `10`, not `10.00`).
    let text = if value < 9.995 {
        format!("{value:.2}")
    } else if value < 99.95 {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    };
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text} {}", UNITS[unit])
}

/// A peer's text (a server's reason phrase, an agent's words) as a terminal may show it:
/// escaped with `escape_debug` when it holds a control character (a screen clear, a title
/// escape, a line break that forges a line), as it is otherwise, so ordinary sentences keep
/// their quotes and text escaped once is not escaped again.
pub fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().any(char::is_control) {
        text.escape_debug().to_string().into()
    } else {
        text.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peers_text_is_escaped_only_when_it_holds_a_control_character() {
        assert_eq!(shown("closed: \"bye\""), "closed: \"bye\"");
        let hostile = "\u{1b}[2J\u{7}\r\nFAKE: all requests succeeded";
        let once = shown(hostile).into_owned();
        assert_eq!(once, "\\u{1b}[2J\\u{7}\\r\\nFAKE: all requests succeeded");
        assert_eq!(shown(&once), once, "escaped once, shown as it is");
    }

    #[test]
    fn sizes_in_binary_units_with_one_rule_for_decimals() {
        for (n, want) in [
            (0.0, "0 B"),
            (512.0, "512 B"),
            (1023.0, "1023 B"),
            (1023.6, "1 KiB"),
            (1024.0, "1 KiB"),
            (1536.0, "1.5 KiB"),
            (1_075.0, "1.05 KiB"),
            (9.996 * 1024.0, "10 KiB"),
            (99.96 * 1024.0, "100 KiB"),
            (157.0 * 1024.0, "157 KiB"),
            (470.9 * 1024.0, "471 KiB"),
            (212_992.0, "208 KiB"),
            (1023.6 * 1024.0, "1 MiB"),
            (1.54 * 1024.0 * 1024.0, "1.54 MiB"),
            (4.0 * 1024.0 * 1024.0, "4 MiB"),
            (12.3 * 1024.0 * 1024.0, "12.3 MiB"),
            ((128u64 << 20) as f64, "128 MiB"),
            ((3u64 << 29) as f64, "1.5 GiB"),
            ((5u64 << 40) as f64, "5 TiB"),
            ((3000u64 << 40) as f64, "3000 TiB"),
        ] {
            assert_eq!(bytes(n), want, "{n}");
        }
    }

    #[test]
    fn separators_every_three_digits_from_the_right() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
    }
}
