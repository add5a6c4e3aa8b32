//! The server's side of each interval written as the run goes (issue 34): the sampler hands
//! every sample to a small ring ([`LiveSamples`], the latest few only), and [`WithServer`]
//! lays the server's figures within each finished interval (CPU, RSS, charged memory,
//! throttled periods, the generator's CPU) on it before the real sink writes it, by the
//! result's own rule ([`loadlab_result::server::interval`]). A recovered result keeps them.
//!
//! It must not keep the run's samples (the sampler does, for the report): the ring is
//! bounded. An interval whose windows are not in the ring yet is written without them.

use loadlab_engine::collector::IntervalSink;
use loadlab_engine::RunControl;
use loadlab_probe::Sample;
use loadlab_result::{IntervalSummary, RunResult};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// How many of the latest samples the ring keeps: at the default of a sample every 100 ms,
/// the last 25 s, far more than an interval waits to be written.
const KEPT: usize = 256;

/// The latest samples of the run going on, shared by the sampler and the sink.
#[derive(Clone, Default)]
pub struct LiveSamples(Arc<Mutex<VecDeque<Sample>>>);

impl LiveSamples {
    pub fn push(&self, sample: Sample) {
        let mut ring = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if ring.len() == KEPT {
            ring.pop_front();
        }
        ring.push_back(sample);
    }

    pub fn clear(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    fn snapshot(&self) -> Vec<Sample> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .copied()
            .collect()
    }
}

/// A sink whose intervals carry the server's samples within them.
pub struct WithServer {
    inner: Box<dyn IntervalSink>,
    live: LiveSamples,
    /// The run's start (the timeline's origin), once it has started.
    origin: Box<dyn Fn() -> Option<Instant> + Send>,
}

impl WithServer {
    pub fn new(inner: Box<dyn IntervalSink>, live: LiveSamples, control: RunControl) -> Self {
        WithServer::with_origin(inner, live, Box::new(move || control.started_at()))
    }

    fn with_origin(
        inner: Box<dyn IntervalSink>,
        live: LiveSamples,
        origin: Box<dyn Fn() -> Option<Instant> + Send>,
    ) -> Self {
        WithServer {
            inner,
            live,
            origin,
        }
    }
}

impl IntervalSink for WithServer {
    fn start(&mut self, header: &RunResult) -> Result<(), String> {
        self.inner.start(header)
    }

    fn interval(&mut self, interval: &IntervalSummary) -> Result<(), String> {
        let origin = (self.origin)();
        match origin {
            Some(origin) if interval.server.is_none() => {
                let windows = loadlab_probe::report::windows(&self.live.snapshot(), origin);
                let mut iv = interval.clone();
                iv.server = loadlab_result::server::interval(&windows, iv.start_s, iv.duration_s);
                self.inner.interval(&iv)
            }
            _ => self.inner.interval(interval),
        }
    }

    fn finish(&mut self) -> Result<(), String> {
        self.inner.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    struct Kept(Arc<Mutex<Vec<IntervalSummary>>>);

    impl IntervalSink for Kept {
        fn start(&mut self, _: &RunResult) -> Result<(), String> {
            Ok(())
        }
        fn interval(&mut self, iv: &IntervalSummary) -> Result<(), String> {
            self.0.lock().unwrap().push(iv.clone());
            Ok(())
        }
        fn finish(&mut self) -> Result<(), String> {
            Ok(())
        }
    }

    fn sample(at: Instant, cpu_ns: u64, rss_bytes: u64) -> Sample {
        Sample {
            at,
            cpu_ns,
            throttling: None,
            rss_bytes,
            memory_bytes: None,
            threads: 1,
            fds: 3,
            generator_cpu_ns: cpu_ns / 2,
            processes: 1,
            sent_bytes: None,
            oom_kills: None,
        }
    }

    fn interval(start_s: f64) -> IntervalSummary {
        serde_json::from_value(serde_json::json!({
            "start_s": start_s, "duration_s": 1.0, "warmup": false, "offered_per_s": null,
            "connections": null, "achieved_per_s": 1.0, "completed": 1, "failed": 0,
            "p50_us": null, "p90_us": null, "p99_us": null, "max_us": null, "bytes_sent": 1,
            "bytes_received": 1, "steal": null,
        }))
        .unwrap()
    }

    #[test]
    fn each_interval_is_written_with_the_servers_samples_within_it() {
        let origin = Instant::now();
        let live = LiveSamples::default();
        let at = |ms: u64| origin + Duration::from_millis(ms);
        // Half a core over the first second, a full core over the second; RSS grows.
        live.push(sample(at(0), 0, 1_000));
        live.push(sample(at(500), 250_000_000, 2_000));
        live.push(sample(at(1_000), 500_000_000, 3_000));
        live.push(sample(at(2_000), 1_500_000_000, 4_000));
        let kept = Arc::new(Mutex::new(Vec::new()));
        let mut sink = WithServer::with_origin(
            Box::new(Kept(kept.clone())),
            live,
            Box::new(move || Some(origin)),
        );
        for i in 0..3 {
            sink.interval(&interval(i as f64)).unwrap();
        }
        let kept = kept.lock().unwrap();
        let first = kept[0].server.expect("samples in the first second");
        assert!((first.cpu_cores - 0.5).abs() < 1e-9, "{first:?}");
        assert_eq!(first.rss_bytes, 3_000);
        let second = kept[1].server.expect("samples in the second second");
        assert!((second.cpu_cores - 1.0).abs() < 1e-9, "{second:?}");
        assert_eq!(second.rss_bytes, 4_000);
        assert_eq!(kept[2].server, None, "no sample in the third second yet");
    }

    #[test]
    fn the_ring_keeps_the_latest_samples_only() {
        let live = LiveSamples::default();
        let t = Instant::now();
        for i in 0..(KEPT as u64 + 10) {
            live.push(sample(t, i, 0));
        }
        let kept = live.snapshot();
        assert_eq!(kept.len(), KEPT);
        assert_eq!(kept[0].cpu_ns, 10);
    }
}
