//! The flags that wire a run to the monitoring world, shared by `run`, `experiment`,
//! `capacity` and `sweep` (`#[command(flatten)]`): scrape the server's own Prometheus
//! endpoints onto the timeline, send loadlab's figures live by remote write or OTLP, ask a
//! Prometheus server for queries over the run's window, over https with a CA file and a
//! bearer token when the endpoints want them. Declarations and their checks only (every URL
//! parsed once, by the `url` crate, files read, before anything starts); running them is
//! the session's (`loadlab_session::metrics`).

use super::parse::parse_duration;
use clap::Args;
use loadlab_metrics::http::{check_url, HttpOptions};
use loadlab_session::metrics::{MetricsPlan, OutTarget, RunLabels, Selector};
use std::path::PathBuf;
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

    /// Send each interval's figures live (repeat for more): http://HOST:PORT/api/v1/write
    /// (also /api/v1/push, /api/v1/receive) is Prometheus remote write, http://HOST:PORT/v1/metrics
    /// OTLP; any other http(s):// URL needs --metrics-out-format (or write
    /// prometheus+remote-write:// or otlp+http://). A slow or absent receiver never slows the
    /// run: intervals are dropped and counted.
    #[arg(long = "metrics-out", value_name = "URL", help_heading = "Metrics")]
    pub metrics_out: Vec<String>,

    /// The format of plain http(s):// --metrics-out URLs, remote-write or otlp (wins over
    /// what their path says).
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

    /// Trust the CA certificate(s) in this PEM file (instead of the system's roots) for
    /// https:// --server-metrics, --metrics-out and --prometheus endpoints; a self-signed
    /// certificate given as the file is trusted, as --cacert trusts it.
    #[arg(long, value_name = "FILE", help_heading = "Metrics")]
    pub metrics_cacert: Option<PathBuf>,

    /// Send the token in this file as "Authorization: Bearer TOKEN" to the --server-metrics,
    /// --metrics-out and --prometheus endpoints (never stored in the result).
    #[arg(long, value_name = "FILE", help_heading = "Metrics")]
    pub metrics_token_file: Option<PathBuf>,
}

impl MetricsArgs {
    /// Any metrics flag was given.
    pub fn is_given(&self) -> bool {
        !self.server_metrics.is_empty()
            || !self.metrics_out.is_empty()
            || self.prometheus.is_some()
            || self.metrics_cacert.is_some()
            || self.metrics_token_file.is_some()
            || !self.metrics_labels.is_empty()
    }
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
        .map(|u| endpoint_url(u, "--server-metrics", "http://127.0.0.1:9100/metrics"))
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
        .map(|u| endpoint_url(u, "--prometheus", "http://127.0.0.1:9090"))
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
        http: http_options(args)?,
    })
}

/// The CA file and the token file, read now so a bad file fails before anything starts.
fn http_options(args: &MetricsArgs) -> anyhow::Result<HttpOptions> {
    let ca = match &args.metrics_cacert {
        Some(path) => Some(HttpOptions::read_ca(&path.display().to_string())?),
        None => None,
    };
    let bearer_token = match &args.metrics_token_file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                anyhow::anyhow!(
                    "--metrics-token-file {}: cannot read it ({e}); give a file holding the token",
                    path.display()
                )
            })?;
            let token = text.trim();
            if token.is_empty() || token.contains(char::is_whitespace) {
                anyhow::bail!(
                    "--metrics-token-file {}: give a file holding one token (no spaces), as a \
                     Prometheus endpoint's bearer_token_file does",
                    path.display()
                );
            }
            Some(token.to_string())
        }
        None => None,
    };
    Ok(HttpOptions { ca, bearer_token })
}

/// An `http://` or `https://` URL with a host, parsed by the `url` crate.
fn endpoint_url(raw: &str, flag: &str, example: &str) -> anyhow::Result<String> {
    check_url(raw).map_err(|e| {
        let problem = match e {
            loadlab_metrics::http::HttpError::BadUrl { problem, .. } => problem,
            other => other.to_string(),
        };
        anyhow::anyhow!(
            "{flag} {raw:?} is not an http:// or https:// URL with a host ({problem}); write e.g. {example}"
        )
    })?;
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
            server_metrics: vec!["ftp://h/metrics".into()],
            ..Default::default()
        });
        assert!(
            e.contains("--server-metrics") && e.contains("http://"),
            "{e}"
        );
        let e = bad(MetricsArgs {
            server_metrics: vec!["https://h/metrics".into()],
            metrics_token_file: Some("/nonexistent/token".into()),
            ..Default::default()
        });
        assert!(e.contains("--metrics-token-file"), "{e}");
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
