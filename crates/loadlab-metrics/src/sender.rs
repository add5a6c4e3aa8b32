//! `--metrics-out`: each interval's figures go to a Prometheus remote write or an OTLP/HTTP
//! receiver from a bounded queue on a thread of its own. `offer` never blocks: when the queue
//! is full the interval is dropped and counted, so a slow or absent receiver never slows the
//! load. A send that fails is counted and not retried (the next interval's cumulative counters
//! carry the totals forward).

use crate::figures::{IntervalFigures, RunLabels};
use crate::http::{self, HttpOptions};
use crate::{otlp, remote_write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutFormat {
    RemoteWrite,
    OtlpHttp,
}

impl OutFormat {
    pub fn name(self) -> &'static str {
        match self {
            OutFormat::RemoteWrite => "prometheus-remote-write",
            OutFormat::OtlpHttp => "otlp-http",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OutError {
    #[error("--metrics-out {0:?}: write prometheus+remote-write://HOST:PORT/api/v1/write or otlp+http://HOST:PORT/v1/metrics (+https for TLS: otlp+https://, prometheus+remote-write+https://), or an http(s):// URL ending in /api/v1/write or /v1/metrics (any other path with --metrics-out-format remote-write|otlp)")]
    Unrecognised(String),
    #[error("--metrics-out-format {0:?} is unknown; use remote-write or otlp")]
    UnknownFormat(String),
    #[error("--metrics-out {0:?}: its path does not say which protocol to send (.../api/v1/write, /api/v1/push or /api/v1/receive is Prometheus remote write, .../v1/metrics is OTLP); add --metrics-out-format remote-write|otlp, or write prometheus+remote-write://... or otlp+http://...")]
    Ambiguous(String),
}

/// The format a plain `http(s)://` URL's path names: the receivers' documented paths
/// (Prometheus and VictoriaMetrics `/api/v1/write`, Cortex and Mimir `/api/v1/push`, Thanos
/// `/api/v1/receive`; OTLP/HTTP's `/v1/metrics`, also under Prometheus' `/api/v1/otlp` and
/// Mimir's `/otlp`). Only the path's last segments count, whole: `/api/v1/writer` names
/// nothing, so a guess never sends one protocol's bytes to the other's receiver.
fn format_from_path(path: &str) -> Option<OutFormat> {
    let path = path.strip_suffix('/').unwrap_or(path);
    const REMOTE_WRITE: [&str; 3] = ["/api/v1/write", "/api/v1/push", "/api/v1/receive"];
    if REMOTE_WRITE.iter().any(|p| path.ends_with(p)) {
        Some(OutFormat::RemoteWrite)
    } else if path.ends_with("/v1/metrics") {
        Some(OutFormat::OtlpHttp)
    } else {
        None
    }
}

/// Where and how to send: `prometheus+remote-write://...` or `otlp+http://...` (with
/// `+https` for TLS), or a plain `http(s)://` URL whose format is given (`--metrics-out-format`,
/// which wins) or named by its path (`format_from_path`).
#[derive(Debug, Clone, PartialEq)]
pub struct OutTarget {
    pub format: OutFormat,
    pub url: String,
    /// The CA and token to reach it with (none by default).
    pub http: HttpOptions,
}

impl OutTarget {
    pub fn parse(spec: &str, format: Option<&str>) -> Result<OutTarget, OutError> {
        let explicit = match format {
            None => None,
            Some("remote-write" | "prometheus-remote-write") => Some(OutFormat::RemoteWrite),
            Some("otlp" | "otlp-http") => Some(OutFormat::OtlpHttp),
            Some(other) => return Err(OutError::UnknownFormat(other.to_string())),
        };
        let unrecognised = || OutError::Unrecognised(spec.to_string());
        // Parsed as a URL of its own scheme (`prometheus+remote-write://...` is one to the url
        // crate), then the same URL with the transport's scheme: everything after the
        // scheme's `://` kept as written.
        let parsed = url::Url::parse(spec).map_err(|_| unrecognised())?;
        // `otlp+http:/h/...` has a path and no host: not the same URL once it is `http:`.
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(unrecognised());
        }
        let scheme = parsed.scheme();
        let rest = &parsed[url::Position::BeforeUsername..];
        let (format, transport) = match (scheme, explicit) {
            ("prometheus+remote-write", _) => (OutFormat::RemoteWrite, "http"),
            ("prometheus+remote-write+https", _) => (OutFormat::RemoteWrite, "https"),
            ("otlp+http", _) => (OutFormat::OtlpHttp, "http"),
            ("otlp+https", _) => (OutFormat::OtlpHttp, "https"),
            ("http" | "https", Some(f)) => (f, scheme),
            ("http" | "https", None) => match format_from_path(parsed.path()) {
                Some(f) => (f, scheme),
                None => return Err(OutError::Ambiguous(spec.to_string())),
            },
            _ => return Err(unrecognised()),
        };
        let url = format!("{transport}://{rest}");
        http::check_url(&url).map_err(|_| unrecognised())?;
        Ok(OutTarget {
            format,
            url,
            http: HttpOptions::default(),
        })
    }
}

/// What the sender did, for the run's result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SenderReport {
    pub url: String,
    pub format: &'static str,
    pub offered: u64,
    pub sent: u64,
    /// Intervals dropped because the queue was full (the receiver was slow or absent).
    pub dropped: u64,
    /// Sends that failed (refused, timed out, or a non-2xx answer).
    pub failed: u64,
    pub last_error: Option<String>,
    /// True when `finish` gave up waiting for a send still under way.
    pub abandoned: bool,
}

#[derive(Default)]
struct Shared {
    sent: AtomicU64,
    failed: AtomicU64,
    last_error: Mutex<Option<String>>,
}

/// A running sender; `offer` each interval, `finish` at the end.
pub struct MetricsOut {
    target: OutTarget,
    tx: Option<SyncSender<IntervalFigures>>,
    done: Receiver<()>,
    shared: Arc<Shared>,
    offered: u64,
    dropped: u64,
}

impl MetricsOut {
    /// Starts the sending thread. `timeout` bounds each send; `queue_len` intervals wait at most.
    pub fn start(
        target: OutTarget,
        labels: RunLabels,
        run_start_unix_ms: i64,
        queue_len: usize,
        timeout: Duration,
    ) -> MetricsOut {
        let (tx, rx) = mpsc::sync_channel::<IntervalFigures>(queue_len.max(1));
        let (done_tx, done) = mpsc::channel();
        let shared = Arc::new(Shared::default());
        let thread_shared = Arc::clone(&shared);
        let thread_target = target.clone();
        // A CA that cannot be read fails every send, counted and named like any other.
        let client = http::Client::new(&target.http, timeout).map_err(|e| e.to_string());
        std::thread::Builder::new()
            .name("metrics-out".into())
            .spawn(move || {
                for figures in rx {
                    let series = figures.to_series(&labels);
                    let result = match (&client, thread_target.format) {
                        (Err(e), _) => Err(e.clone()),
                        (Ok(c), OutFormat::RemoteWrite) => c
                            .request(
                                "POST",
                                &thread_target.url,
                                &remote_write::HEADERS,
                                &remote_write::encode(&series),
                            )
                            .map_err(|e| e.to_string()),
                        (Ok(c), OutFormat::OtlpHttp) => c
                            .request(
                                "POST",
                                &thread_target.url,
                                &[("Content-Type", otlp::CONTENT_TYPE)],
                                &otlp::encode(&series, run_start_unix_ms),
                            )
                            .map_err(|e| e.to_string()),
                    };
                    let error = match result {
                        Ok(r) if (200..300).contains(&r.status) => None,
                        Ok(r) => Some(format!(
                            "{} answered {}: {}",
                            thread_target.url,
                            r.status,
                            String::from_utf8_lossy(&r.body).trim()
                        )),
                        Err(e) => Some(e),
                    };
                    match error {
                        None => thread_shared.sent.fetch_add(1, Ordering::Relaxed),
                        Some(e) => {
                            if let Ok(mut last) = thread_shared.last_error.lock() {
                                *last = Some(e);
                            }
                            thread_shared.failed.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                }
                let _ = done_tx.send(());
            })
            .ok();
        MetricsOut {
            target,
            tx: Some(tx),
            done,
            shared,
            offered: 0,
            dropped: 0,
        }
    }

    /// Queues one interval without ever blocking; a full queue drops it (counted).
    pub fn offer(&mut self, figures: IntervalFigures) {
        self.offered += 1;
        let Some(tx) = &self.tx else { return };
        match tx.try_send(figures) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => self.dropped += 1,
        }
    }

    /// Closes the queue and waits up to `wait` for what is queued to be sent.
    pub fn finish(mut self, wait: Duration) -> SenderReport {
        drop(self.tx.take());
        let abandoned = self.done.recv_timeout(wait).is_err();
        SenderReport {
            url: self.target.url.clone(),
            format: self.target.format.name(),
            offered: self.offered,
            sent: self.shared.sent.load(Ordering::Relaxed),
            dropped: self.dropped,
            failed: self.shared.failed.load(Ordering::Relaxed),
            last_error: self.shared.last_error.lock().ok().and_then(|e| e.clone()),
            abandoned,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_by_scheme_or_format() {
        let rw = OutTarget::parse(
            "prometheus+remote-write://127.0.0.1:9090/api/v1/write",
            None,
        )
        .unwrap();
        assert_eq!(rw.format, OutFormat::RemoteWrite);
        assert_eq!(rw.url, "http://127.0.0.1:9090/api/v1/write");
        let o = OutTarget::parse("otlp+http://h:4318/v1/metrics", None).unwrap();
        assert_eq!(o.format, OutFormat::OtlpHttp);
        let f = OutTarget::parse("http://h:4318/v1/metrics", Some("otlp")).unwrap();
        assert_eq!(f.format, OutFormat::OtlpHttp);
        assert!(OutTarget::parse("http://h/", None).is_err());
        assert!(OutTarget::parse("http://h/", Some("graphite")).is_err());
        assert!(OutTarget::parse("otlp+grpc://h/", None).is_err());
        let tls = OutTarget::parse("otlp+https://h:4318/v1/metrics", None).unwrap();
        assert_eq!(tls.url, "https://h:4318/v1/metrics");
        let tls = OutTarget::parse("https://h/api/v1/write", Some("remote-write")).unwrap();
        assert_eq!(tls.format, OutFormat::RemoteWrite);
        // Everything after the scheme is kept: an IPv6 host, the port, the query.
        let v6 = OutTarget::parse(
            "prometheus+remote-write://[::1]:9090/api/v1/write?x=1",
            None,
        );
        assert_eq!(v6.unwrap().url, "http://[::1]:9090/api/v1/write?x=1");
        for bad in [
            "otlp+http://",
            "otlp+http:/h/v1/metrics",
            "h:4318/v1/metrics",
            "",
        ] {
            assert!(OutTarget::parse(bad, None).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn plain_urls_take_their_format_from_a_well_known_path() {
        let format = |spec: &str| OutTarget::parse(spec, None).map(|t| t.format);
        for rw in [
            "http://127.0.0.1:9090/api/v1/write",
            "https://prom.example/api/v1/write",
            "http://mimir:8080/api/v1/push",
            "http://thanos:19291/api/v1/receive",
            "http://vm:8428/api/v1/write?extra_label=a=b",
        ] {
            assert_eq!(format(rw).unwrap(), OutFormat::RemoteWrite, "{rw}");
        }
        for otlp in [
            "http://collector:4318/v1/metrics",
            "https://collector/v1/metrics",
            "http://prom:9090/api/v1/otlp/v1/metrics",
            "http://mimir:8080/otlp/v1/metrics/",
        ] {
            assert_eq!(format(otlp).unwrap(), OutFormat::OtlpHttp, "{otlp}");
        }
        // The URL is kept as written.
        let t = OutTarget::parse("http://127.0.0.1:9090/api/v1/write", None).unwrap();
        assert_eq!(t.url, "http://127.0.0.1:9090/api/v1/write");
        // The flag still decides, and is still needed where the path says nothing.
        let t = OutTarget::parse("http://h/api/v1/write", Some("otlp")).unwrap();
        assert_eq!(t.format, OutFormat::OtlpHttp);
        for unclear in [
            "http://h/",
            "http://h:9090/ingest",
            "http://h/v1/metricsx",
            "http://h/api/v1/writer",
        ] {
            let e = OutTarget::parse(unclear, None).unwrap_err().to_string();
            assert!(e.contains("--metrics-out-format"), "{unclear}: {e}");
            assert!(
                e.contains("/api/v1/write") && e.contains("/v1/metrics"),
                "{e}"
            );
        }
    }
}
