//! One interval of a run as labelled series, the shape both encodings start from. The names
//! and labels here are the contract `docs/prometheus.md` documents; change both together.
//! It must not know about the engine: the caller copies an interval's figures in.

/// Labels every series carries, so shards add up and experiment arms can be told apart.
/// Empty values are left out (Prometheus treats an empty label as an absent one).
#[derive(Debug, Clone, Default)]
pub struct RunLabels {
    pub run_id: String,
    pub tag: String,
    pub experiment: String,
    pub variant: String,
    pub shard: String,
    /// More labels (`--metrics-label NAME=VALUE`), on every series.
    pub extra: Vec<(String, String)>,
}

/// One interval's figures; counters (`*_total`) are cumulative since the run's start.
#[derive(Debug, Clone, Default)]
pub struct IntervalFigures {
    /// End of the interval, Unix milliseconds: the samples' timestamp.
    pub at_unix_ms: i64,
    pub offered_per_s: Option<f64>,
    pub achieved_per_s: f64,
    pub completed_total: u64,
    /// Failures so far, by class (connect, timeout, reset, status, ...).
    pub failed_total_by_class: Vec<(String, u64)>,
    /// Requests sent and not yet answered; absent when not known (the series is then not
    /// sent).
    pub in_flight: Option<u64>,
    /// (quantile, latency in seconds) for this interval, e.g. (0.99, 0.012).
    pub latency_quantiles_s: Vec<(f64, f64)>,
    /// Connections open at that moment; absent when not known.
    pub connections_open: Option<u64>,
    pub generator_cpu_cores: Option<f64>,
    /// A gRPC run's stream messages so far `(sent, received)`, measured part only (as the
    /// result's `grpc` section counts them); absent for other runs (the series are then not
    /// sent).
    pub grpc_messages_total: Option<(u64, u64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesKind {
    Counter,
    Gauge,
}

/// One series at one instant; `labels` sorted by name, `__name__` not among them.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub kind: SeriesKind,
    pub value: f64,
    pub at_unix_ms: i64,
}

impl IntervalFigures {
    /// The interval as series named `loadlab_*`, each labelled with `labels`.
    pub fn to_series(&self, labels: &RunLabels) -> Vec<Series> {
        let base: Vec<(String, String)> = [
            ("experiment", &labels.experiment),
            ("run_id", &labels.run_id),
            ("shard", &labels.shard),
            ("tag", &labels.tag),
            ("variant", &labels.variant),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.to_string(), v.clone()))
        .chain(labels.extra.iter().cloned())
        .collect();
        let mut out = Vec::new();
        let mut push = |name: &str, kind: SeriesKind, value: f64, extra: Option<(&str, String)>| {
            let mut l = base.clone();
            if let Some((k, v)) = extra {
                l.push((k.to_string(), v));
            }
            l.sort();
            out.push(Series {
                name: name.to_string(),
                labels: l,
                kind,
                value,
                at_unix_ms: self.at_unix_ms,
            });
        };
        use SeriesKind::{Counter, Gauge};
        if let Some(offered) = self.offered_per_s {
            push("loadlab_offered_rate_per_second", Gauge, offered, None);
        }
        push(
            "loadlab_achieved_rate_per_second",
            Gauge,
            self.achieved_per_s,
            None,
        );
        push(
            "loadlab_requests_completed_total",
            Counter,
            self.completed_total as f64,
            None,
        );
        for (class, n) in &self.failed_total_by_class {
            push(
                "loadlab_requests_failed_total",
                Counter,
                *n as f64,
                Some(("class", class.clone())),
            );
        }
        if let Some(n) = self.in_flight {
            push("loadlab_requests_in_flight", Gauge, n as f64, None);
        }
        for (q, s) in &self.latency_quantiles_s {
            push(
                "loadlab_latency_seconds",
                Gauge,
                *s,
                Some(("quantile", q.to_string())),
            );
        }
        if let Some(n) = self.connections_open {
            push("loadlab_connections_open", Gauge, n as f64, None);
        }
        if let Some(cpu) = self.generator_cpu_cores {
            push("loadlab_generator_cpu_cores", Gauge, cpu, None);
        }
        if let Some((sent, received)) = self.grpc_messages_total {
            push(
                "loadlab_grpc_messages_sent_total",
                Counter,
                sent as f64,
                None,
            );
            push(
                "loadlab_grpc_messages_received_total",
                Counter,
                received as f64,
                None,
            );
        }
        out
    }
}
