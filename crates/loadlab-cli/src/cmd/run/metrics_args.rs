//! The flags that wire a run to the monitoring world (`loadlab-metrics`): scrape the server's
//! own Prometheus endpoints onto the timeline, send loadlab's figures live by remote write or
//! OTLP, ask a Prometheus server for queries over the run's window. Declarations and their
//! checks only (every URL parsed once, by the `url` crate, before anything starts); running
//! them is `metrics.rs`.

use super::parse::parse_duration;
use clap::Args;
use loadlab_metrics::sender::OutTarget;
use loadlab_metrics::{RunLabels, Selector};
use std::time::Duration;

#[derive(Debug, Clone, Default, Args)]
pub struct MetricsArgs {
    /// Scrape this Prometheus or OpenMetrics text endpoint every interval of the run (repeat
    /// for more), e.g. http://127.0.0.1:9100/metrics. Counters become rates; well-known
    /// series (process_cpu_seconds_total, node_exporter's, cAdvisor's) fill the server's CPU
    /// and memory when nothing samples it locally. A failed scrape is counted, never fatal.
    #[arg(long = "server-metrics", value_name = "URL", help_heading = "Metrics")]
    pub server_metrics: Vec<String>,

    /// With --server-metrics: keep these series in the result and the report (repeat for
    /// more): a metric name with label matchers, e.g. http_requests_total{code=~"5.."}.
    #[arg(
        long = "server-metrics-select",
        value_name = "SELECTOR",
        requires = "server_metrics",
        help_heading = "Metrics"
    )]
    pub server_metrics_select: Vec<String>,

    /// With --server-metrics: scrape this often [default: the run's --interval].
    #[arg(long, value_name = "DURATION", requires = "server_metrics", allow_hyphen_values = true, value_parser = parse_duration, help_heading = "Metrics")]
    pub server_metrics_interval: Option<Duration>,

    /// Send each interval's figures live (repeat for more):
    /// prometheus+remote-write://HOST:PORT/api/v1/write or otlp+http://HOST:PORT/v1/metrics,
    /// or an http:// URL with --metrics-out-format. A slow or absent receiver never slows the
    /// run: intervals are dropped and counted.
    #[arg(long = "metrics-out", value_name = "URL", help_heading = "Metrics")]
    pub metrics_out: Vec<String>,

    /// The format of plain http:// --metrics-out URLs: remote-write or otlp.
    #[arg(
        long,
        value_name = "FORMAT",
        requires = "metrics_out",
        help_heading = "Metrics"
    )]
    pub metrics_out_format: Option<String>,

    /// A label on every series sent, NAME=VALUE (repeat for more); experiment=, variant=,
    /// run_id= set those labels (run_id defaults to one made for the run).
    #[arg(
        long = "metrics-label",
        value_name = "NAME=VALUE",
        requires = "metrics_out",
        help_heading = "Metrics"
    )]
    pub metrics_labels: Vec<String>,

    /// A Prometheus server to ask --query of after the run, e.g. http://127.0.0.1:9090.
    #[arg(
        long,
        value_name = "URL",
        requires = "queries",
        help_heading = "Metrics"
    )]
    pub prometheus: Option<String>,

    /// A PromQL query evaluated over the run's window (its interval as the step) and kept in
    /// the result (repeat for more).
    #[arg(
        long = "query",
        value_name = "PROMQL",
        requires = "prometheus",
        help_heading = "Metrics"
    )]
    pub queries: Vec<String>,
}

/// The checked flags.
#[derive(Debug, Clone, Default)]
pub struct MetricsPlan {
    pub scrape_urls: Vec<String>,
    pub selectors: Vec<Selector>,
    pub scrape_interval: Option<Duration>,
    pub outs: Vec<OutTarget>,
    pub labels: RunLabels,
    pub prometheus: Option<String>,
    pub queries: Vec<String>,
}

/// Checks the flags. `tag` and `shard` label the series sent.
pub fn plan(
    args: &MetricsArgs,
    tag: Option<&str>,
    shard: Option<String>,
) -> anyhow::Result<MetricsPlan> {
    let scrape_urls = args
        .server_metrics
        .iter()
        .map(|u| http_url(u, "--server-metrics", "http://127.0.0.1:9100/metrics"))
        .collect::<anyhow::Result<_>>()?;
    let selectors = args
        .server_metrics_select
        .iter()
        .map(|s| Selector::parse(s).map_err(|e| anyhow::anyhow!("--server-metrics-select: {e}")))
        .collect::<anyhow::Result<_>>()?;
    if args
        .server_metrics_interval
        .is_some_and(|d| d < Duration::from_millis(100))
    {
        anyhow::bail!("--server-metrics-interval: scrape at most every 100ms; give e.g. 1s");
    }
    let mut outs = Vec::new();
    for raw in &args.metrics_out {
        let parsed = url::Url::parse(raw).map_err(|e| {
            anyhow::anyhow!(
                "--metrics-out {raw:?} is not a URL ({e}); write e.g. \
                 prometheus+remote-write://127.0.0.1:9090/api/v1/write"
            )
        })?;
        if parsed.host_str().is_none() {
            anyhow::bail!("--metrics-out {raw:?} names no host; write e.g. otlp+http://127.0.0.1:4318/v1/metrics");
        }
        outs.push(OutTarget::parse(raw, args.metrics_out_format.as_deref())?);
    }
    let mut labels = RunLabels {
        run_id: run_id(),
        tag: tag.unwrap_or_default().to_string(),
        shard: shard.unwrap_or_default(),
        ..RunLabels::default()
    };
    for raw in &args.metrics_labels {
        let (name, value) = raw
            .split_once('=')
            .filter(|(n, _)| valid_label_name(n))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "--metrics-label {raw:?}: write NAME=VALUE with a Prometheus label name \
                     (letters, digits, _), e.g. --metrics-label variant=axum"
                )
            })?;
        match name {
            "run_id" => labels.run_id = value.into(),
            "tag" => labels.tag = value.into(),
            "experiment" => labels.experiment = value.into(),
            "variant" => labels.variant = value.into(),
            "shard" => labels.shard = value.into(),
            _ => labels.extra.push((name.into(), value.into())),
        }
    }
    let prometheus = args
        .prometheus
        .as_deref()
        .map(|u| http_url(u, "--prometheus", "http://127.0.0.1:9090"))
        .transpose()?;
    if args.queries.iter().any(|q| q.trim().is_empty()) {
        anyhow::bail!("--query is empty: give a PromQL expression, e.g. --query 'rate(process_cpu_seconds_total[1m])'");
    }
    Ok(MetricsPlan {
        scrape_urls,
        selectors,
        scrape_interval: args.server_metrics_interval,
        outs,
        labels,
        prometheus: prometheus.map(|u| u.trim_end_matches('/').to_string()),
        queries: args.queries.clone(),
    })
}

/// A plain `http://` URL, parsed by the `url` crate (the scraper speaks plain HTTP only).
fn http_url(raw: &str, flag: &str, example: &str) -> anyhow::Result<String> {
    let parsed = url::Url::parse(raw)
        .map_err(|e| anyhow::anyhow!("{flag} {raw:?} is not a URL ({e}); write e.g. {example}"))?;
    if parsed.scheme() != "http" {
        anyhow::bail!(
            "{flag} {raw:?}: only http:// is supported (not {}://); put a plain-HTTP endpoint, e.g. {example}",
            parsed.scheme()
        );
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        anyhow::bail!("{flag} {raw:?} names no host; write e.g. {example}");
    }
    Ok(raw.to_string())
}

fn valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with("__")
}

/// A run id for the series' `run_id` label: the start time in Unix milliseconds and the PID.
fn run_id() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!("{ms}-{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_name_their_flag_and_the_fix() {
        let bad = |args: MetricsArgs| plan(&args, None, None).unwrap_err().to_string();
        let e = bad(MetricsArgs {
            server_metrics: vec!["https://h/metrics".into()],
            ..Default::default()
        });
        assert!(
            e.contains("--server-metrics") && e.contains("http://"),
            "{e}"
        );
        let e = bad(MetricsArgs {
            server_metrics: vec!["not a url".into()],
            ..Default::default()
        });
        assert!(
            e.contains("--server-metrics") && e.contains("write e.g."),
            "{e}"
        );
        let e = bad(MetricsArgs {
            metrics_out: vec!["graphite://h:2003".into()],
            ..Default::default()
        });
        assert!(e.contains("--metrics-out"), "{e}");
        let e = bad(MetricsArgs {
            metrics_out: vec!["otlp+http://h:4318/v1/metrics".into()],
            metrics_labels: vec!["9x=1".into()],
            ..Default::default()
        });
        assert!(e.contains("--metrics-label"), "{e}");
        let ok = plan(
            &MetricsArgs {
                metrics_out: vec!["otlp+http://h:4318/v1/metrics".into()],
                metrics_labels: vec!["variant=axum".into(), "region=eu".into()],
                ..Default::default()
            },
            Some("t"),
            Some("1".into()),
        )
        .unwrap();
        assert_eq!(ok.labels.variant, "axum");
        assert_eq!(
            ok.labels.extra,
            vec![("region".to_string(), "eu".to_string())]
        );
        assert_eq!(
            (ok.labels.tag.as_str(), ok.labels.shard.as_str()),
            ("t", "1")
        );
    }
}
