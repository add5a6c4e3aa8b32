//! The experiment file's `[metrics]` table: the same wiring as the command's metrics flags
//! (`--server-metrics`, `--metrics-out`, ...), kept with the experiment so every run of it is
//! scraped and sent alike. Strings only, as written: the command checks them exactly as it
//! checks its flags (one parser per thing users type), and flags given on the command line
//! replace the table whole. Not part of the plan's hash: metrics do not change what is
//! measured.

use serde::{Deserialize, Serialize};

/// `[metrics]` as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsFile {
    /// Endpoints scraped every interval of every run (`--server-metrics`).
    #[serde(default)]
    pub server_metrics: Vec<String>,
    /// Series kept (`--server-metrics-select`).
    #[serde(default)]
    pub select: Vec<String>,
    /// How often to scrape, e.g. "500ms" (`--server-metrics-interval`).
    pub interval: Option<String>,
    /// Receivers of each interval (`--metrics-out`).
    #[serde(default)]
    pub out: Vec<String>,
    /// The format of plain http(s):// `out` URLs (`--metrics-out-format`).
    pub out_format: Option<String>,
    /// Labels on every series sent, "NAME=VALUE" (`--metrics-label`).
    #[serde(default)]
    pub labels: Vec<String>,
    /// A PEM file of CAs for https:// endpoints, relative to the experiment file.
    pub cacert: Option<String>,
    /// A file holding a bearer token, relative to the experiment file.
    pub token_file: Option<String>,
}

impl MetricsFile {
    pub fn is_empty(&self) -> bool {
        self == &MetricsFile::default()
    }

    pub(super) fn check(&self) -> Result<(), String> {
        let given = !self.server_metrics.is_empty() || !self.out.is_empty();
        let needs_scrape = !self.select.is_empty() || self.interval.is_some();
        if needs_scrape && self.server_metrics.is_empty() {
            return Err(
                "[metrics] select and interval apply to server_metrics: give \
                        server_metrics = [\"http://HOST:PORT/metrics\"] too"
                    .into(),
            );
        }
        if (self.out_format.is_some() || !self.labels.is_empty()) && self.out.is_empty() {
            return Err("[metrics] out_format and labels apply to out: give out = \
                        [\"prometheus+remote-write://HOST:PORT/api/v1/write\"] too"
                .into());
        }
        if !given && (self.cacert.is_some() || self.token_file.is_some()) {
            return Err(
                "[metrics] cacert and token_file apply to server_metrics and out: \
                        give one of them too"
                    .into(),
            );
        }
        Ok(())
    }
}
