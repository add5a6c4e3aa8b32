//! What the HTML report embeds verbatim: uPlot (vendored in `vendor/uplot/`), the report's own
//! script and styles, and the Content-Security-Policy that lets only these scripts run.
//!
//! The policy forbids every network request (`default-src 'none'`) and allows exactly the two
//! inline scripts by their SHA-256 hashes, so even markup that slipped through escaping could
//! neither run a script nor an event handler, nor load anything. This module must not hold
//! anything that varies with a result: the hashes are of fixed text.

use base64::Engine as _;
use std::sync::OnceLock;

/// uPlot's version, as vendored (see `vendor/uplot/README.md`).
pub const UPLOT_VERSION: &str = "1.6.32";
pub const UPLOT_JS: &str = include_str!("../../vendor/uplot/uPlot.iife.min.js");
pub const UPLOT_CSS: &str = include_str!("../../vendor/uplot/uPlot.min.css");

/// The report's script, kept in `js/` a file per concept and embedded as one: the files in
/// this order, inside one strict function whose scope they share (state.js declares what the
/// others use; main.js draws). One inline script, so one hash in the policy and one nonce on
/// the live page, as before the split.
macro_rules! report_js {
    ($($file:literal),+) => {
        pub const REPORT_JS: &str =
            concat!("\"use strict\";\n(function () {\n", $(include_str!($file),)+ "})();\n");
        /// Each file of [`REPORT_JS`], for the test that every one starts with its role.
        #[cfg(test)]
        const REPORT_JS_FILES: &[&str] = &[$(include_str!($file)),+];
    };
}
report_js!(
    "js/state.js",
    "js/format.js",
    "js/chart.js",
    "js/runs.js",
    "js/curve.js",
    "js/history.js",
    "js/main.js"
);
pub const REPORT_CSS: &str = include_str!("report.css");

/// The page's policy: no network at all, the two embedded scripts only, inline styles (uPlot
/// sets element styles), and `data:` images (the empty favicon that keeps browsers from
/// asking for `/favicon.ico`).
pub fn content_security_policy() -> &'static str {
    static POLICY: OnceLock<String> = OnceLock::new();
    POLICY.get_or_init(|| {
        format!(
            "default-src 'none'; script-src '{}' '{}'; style-src 'unsafe-inline'; \
             img-src data:; base-uri 'none'; form-action 'none'",
            script_hash(UPLOT_JS),
            script_hash(REPORT_JS)
        )
    })
}

/// A CSP source for an inline script: `sha256-` and the base64 of its SHA-256.
fn script_hash(script: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, script.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An inline script ends at the first `</script`, and `<!--` with `<script` changes how
    /// it is parsed: none may appear in what is embedded.
    #[test]
    fn embedded_scripts_cannot_end_early() {
        for text in [UPLOT_JS, REPORT_JS, UPLOT_CSS, REPORT_CSS] {
            let lower = text.to_ascii_lowercase();
            assert!(!lower.contains("<script") && !lower.contains("</script"));
            assert!(!lower.contains("<!--"));
            assert!(!lower.contains("</style"));
        }
        assert!(UPLOT_JS.contains(&format!("(v{UPLOT_VERSION})")));
    }

    /// Each of the report's script files says its role, and is embedded whole.
    #[test]
    fn every_report_script_file_starts_with_its_role() {
        for file in REPORT_JS_FILES {
            assert!(file.starts_with("// "), "{}", &file[..file.len().min(80)]);
            assert!(REPORT_JS.contains(file));
        }
        // Strings from a result reach the page as text only.
        for banned in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
        ] {
            assert!(!REPORT_JS.contains(banned), "{banned}");
        }
        assert!(REPORT_JS.starts_with("\"use strict\";\n(function () {\n"));
    }

    #[test]
    fn the_policy_names_both_scripts_by_hash() {
        // The well-known SHA-256 of "", as CSP writes it.
        assert_eq!(
            script_hash(""),
            "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
        );
        let policy = content_security_policy();
        assert_eq!(policy.matches("'sha256-").count(), 2, "{policy}");
        assert!(policy.starts_with("default-src 'none';"));
        assert!(
            !policy.contains(['"', '<', '>', '&']),
            "safe in an attribute as is"
        );
    }
}
