//! The `/metrics` checks (capability `metrics`, targets/CONTRACT.md): a Prometheus text
//! exposition whose process collector carries `process_cpu_seconds_total` and
//! `process_resident_memory_bytes`, the two series `--server-metrics` reads a server's CPU and
//! memory from. A target whose manifest does not declare the capability gets them as a
//! visible skip. The series are found by name in the text; the full exposition format is
//! parsed where it is used (loadlab-metrics), not here.

use super::cases::Runner;
use super::expect::{BodyRule, Expect};
use super::Outcome;
use hyper::header::CONTENT_TYPE;

const ENDPOINT: &str = "GET /metrics";
/// The process collector's series every client library exports under these names.
const SERIES: [&str; 2] = ["process_cpu_seconds_total", "process_resident_memory_bytes"];

/// The value of the first sample of `name` (with or without labels) in a text exposition.
fn sample(exposition: &str, name: &str) -> Option<f64> {
    exposition
        .lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let rest = line.strip_prefix(name)?;
            let value = match rest.strip_prefix('{') {
                Some(labelled) => labelled.split_once("} ")?.1,
                None => rest.strip_prefix(' ')?,
            };
            value.split_whitespace().next()?.parse().ok()
        })
}

impl Runner<'_> {
    /// Runs the checks, or records why they were skipped (`implemented`: the manifest's
    /// capability, or `lab verify URL --metrics`).
    pub(super) async fn metrics(&mut self, implemented: bool) {
        if !implemented {
            let reason = "the target does not implement /metrics (its target.toml lacks \
                          capabilities = [\"metrics\"])";
            for series in SERIES {
                let skipped = Outcome::Skip {
                    reason: reason.into(),
                };
                self.record(ENDPOINT, series, skipped);
            }
            return;
        }
        // The exposition's media type carries parameters of its own (`version=0.0.4`,
        // `escaping=...`), which the contract's common Content-Type rule refuses: checked here.
        let expect = Expect {
            status: 200,
            media_type: None,
            body: BodyRule::NonEmpty,
            min_elapsed: None,
        };
        let Some(reply) = self.get("/metrics", expect).await else {
            return;
        };
        let content_type = reply
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let media_type = content_type.split(';').next().unwrap_or("").trim();
        let outcome = if ["text/plain", "application/openmetrics-text"]
            .iter()
            .any(|m| media_type.eq_ignore_ascii_case(m))
        {
            Outcome::Pass
        } else {
            Outcome::Fail {
                expected: "text/plain (the Prometheus text format) or application/openmetrics-text"
                    .into(),
                got: format!("{content_type:?}"),
            }
        };
        self.record(ENDPOINT, "Content-Type", outcome);
        let exposition = String::from_utf8_lossy(&reply.body);
        for series in SERIES {
            let outcome = match sample(&exposition, series) {
                Some(value) if value.is_finite() && value >= 0.0 => Outcome::Pass,
                Some(value) => Outcome::Fail {
                    expected: "a finite value of 0 or more".into(),
                    got: value.to_string(),
                },
                None => Outcome::Fail {
                    expected: format!("a sample of {series}"),
                    got: "no such series in the exposition".into(),
                },
            };
            self.record(ENDPOINT, series, outcome);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sample;

    #[test]
    fn samples_are_found_by_name_with_or_without_labels_never_by_prefix() {
        let text = "# HELP process_cpu_seconds_total Total user and system CPU.\n\
                    # TYPE process_cpu_seconds_total counter\n\
                    process_cpu_seconds_total_extra 9\n\
                    process_cpu_seconds_total 0.04\n\
                    process_resident_memory_bytes{pid=\"7\"} 2.3588864e+07 1700000000\n";
        assert_eq!(sample(text, "process_cpu_seconds_total"), Some(0.04));
        assert_eq!(
            sample(text, "process_resident_memory_bytes"),
            Some(23_588_864.0)
        );
        assert_eq!(sample(text, "process_open_fds"), None);
        assert_eq!(
            sample("process_open_fds NaN\n", "process_open_fds").map(f64::is_nan),
            Some(true)
        );
    }
}
