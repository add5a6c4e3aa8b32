//! The server's own metrics in the text summary: one line per scraped endpoint (scrapes ok
//! and failed, the well-known series used, the series picked) and per `--query`.

use super::row;
use loadlab_result::ServerMetrics;

pub(super) fn metrics_section(s: &mut String, m: &ServerMetrics) {
    s.push_str("\nServer metrics\n");
    for e in &m.endpoints {
        let mut line = format!(
            "{}: {} scrape{} ok, {} failed",
            e.url,
            e.scrapes_ok,
            if e.scrapes_ok == 1 { "" } else { "s" },
            e.scrapes_failed
        );
        if let Some(err) = &e.last_error {
            line.push_str(&format!(" (last: {err})"));
        }
        let used: Vec<String> = e
            .well_known
            .iter()
            .map(|(figure, series)| format!("{figure} from {series}"))
            .collect();
        if !used.is_empty() {
            line.push_str(&format!("; {}", used.join(", ")));
        }
        if !e.series.is_empty() {
            line.push_str(&format!("; {} series picked", e.series.len()));
        }
        row(s, "  Endpoint", &line);
    }
    for q in &m.queries {
        let line = match &q.error {
            Some(err) => format!("{}: failed ({err})", q.query),
            None => format!("{}: {} series from {}", q.query, q.series.len(), q.url),
        };
        row(s, "  Query", &line);
    }
}
