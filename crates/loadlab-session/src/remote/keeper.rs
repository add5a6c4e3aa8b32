//! The keeper: a thread per remote server that long-polls the agent's samples while a run
//! samples, renews the lease between runs, estimates the clock again every minute, and notes
//! a lost agent; and what it collects, shared with the session.

use loadlab_agent::client::AgentClient;
use loadlab_agent::clock::{Estimate, LocalClock};
use loadlab_agent::protocol::{WireExit, WireSample};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Exchanges per clock estimate (NTP's clock filter keeps the best of 8).
pub(super) const CLOCK_BURST: usize = 8;
/// How often a long run estimates the clock again.
pub(super) const CLOCK_EVERY: Duration = Duration::from_secs(60);
/// How long the agent may fail to answer before it counts as lost.
pub(super) const LOST_AFTER: Duration = Duration::from_secs(3);
/// The longest one poll waits for a new sample: short, so that the end of a run is
/// collected promptly.
pub(super) const POLL_WAIT: Duration = Duration::from_millis(250);

#[derive(Default)]
/// What the keeper collects, shared with the session.
pub(super) struct Shared {
    /// Sampling is on: poll; otherwise renew.
    pub(super) sampling: bool,
    /// The last seq received.
    pub(super) after: u64,
    pub(super) samples: Vec<WireSample>,
    pub(super) exit: Option<WireExit>,
    /// loadlab's own CPU (ns) at local times (ns), to fill each sample's generator CPU.
    pub(super) own_cpu: Vec<(i64, u64)>,
    pub(super) estimates: Vec<Estimate>,
    pub(super) lost: Option<(i64, String)>,
    pub(super) on_exit: Option<Box<dyn FnOnce() + Send>>,
}

impl Shared {
    pub(super) fn take(
        &mut self,
        samples: Vec<WireSample>,
        exit: Option<WireExit>,
        clock: &LocalClock,
    ) {
        // The keeper's poll and the session's last drain may overlap: keep each seq once.
        let after = self.after;
        for sample in samples.into_iter().filter(|s| s.seq > after) {
            self.after = self.after.max(sample.seq);
            self.samples.push(sample);
        }
        self.samples.sort_by_key(|s| s.seq);
        self.own_cpu
            .push((clock.now_ns(), loadlab_probe::procfs::own_cpu_ns()));
        if exit.is_some() && self.exit.is_none() {
            self.exit = exit;
            if let Some(f) = self.on_exit.take() {
                f();
            }
        }
    }
}

/// loadlab's own CPU at local time `at`, linear between the readings around it.
pub(super) fn interpolate(readings: &[(i64, u64)], at: i64) -> u64 {
    let Some(first) = readings.first() else {
        return 0;
    };
    if at <= first.0 {
        return first.1;
    }
    let i = readings.partition_point(|r| r.0 <= at);
    if i >= readings.len() {
        return readings[readings.len() - 1].1;
    }
    let (a, b) = (readings[i - 1], readings[i]);
    let w = (at - a.0) as f64 / (b.0 - a.0).max(1) as f64;
    a.1 + ((b.1.saturating_sub(a.1)) as f64 * w) as u64
}

/// The keeper thread: polls while sampling, renews otherwise, estimates the clock again
/// every [`CLOCK_EVERY`], and notes a lost agent.
pub(super) struct Keeper {
    pub(super) client: AgentClient,
    pub(super) session: String,
    pub(super) lease: Duration,
    pub(super) clock: LocalClock,
    pub(super) shared: Arc<Mutex<Shared>>,
    pub(super) done: Arc<AtomicBool>,
}

impl Keeper {
    pub(super) fn run(mut self) {
        let mut last_ok = Instant::now();
        let mut last_renew = Instant::now();
        let mut last_clock = Instant::now();
        while !self.done.load(Ordering::Acquire) {
            let (sampling, after, lost) = {
                let s = self.shared.lock().unwrap_or_else(|e| e.into_inner());
                (s.sampling, s.after, s.lost.is_some())
            };
            if lost {
                std::thread::park_timeout(Duration::from_millis(200));
                continue;
            }
            let outcome = if sampling {
                self.client
                    .samples(&self.session, after, POLL_WAIT)
                    .map(|batch| {
                        let mut s = self.shared.lock().unwrap_or_else(|e| e.into_inner());
                        // Sampling may have stopped while the poll waited: keep what came.
                        s.take(batch.samples, batch.exit, &self.clock);
                    })
            } else if last_renew.elapsed() >= self.lease / 3 {
                self.client.renew(&self.session).map(|_| {
                    last_renew = Instant::now();
                })
            } else {
                std::thread::park_timeout(Duration::from_millis(100));
                Ok(())
            };
            match outcome {
                Ok(()) => last_ok = Instant::now(),
                Err(e) => {
                    if last_ok.elapsed() >= LOST_AFTER || matches!(e.status(), Some(404 | 410)) {
                        let mut s = self.shared.lock().unwrap_or_else(|e| e.into_inner());
                        s.lost = Some((self.clock.now_ns(), e.to_string()));
                        s.sampling = false;
                        continue;
                    }
                    std::thread::park_timeout(Duration::from_millis(100));
                }
            }
            if sampling && last_clock.elapsed() >= CLOCK_EVERY {
                last_clock = Instant::now();
                if let Ok(e) = self.client.estimate_clock(&self.clock, CLOCK_BURST) {
                    self.shared
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .estimates
                        .push(e);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::interpolate;

    #[test]
    fn own_cpu_is_interpolated_between_readings() {
        let r = [(1_000, 10), (2_000, 30)];
        assert_eq!(interpolate(&r, 500), 10);
        assert_eq!(interpolate(&r, 1_500), 20);
        assert_eq!(interpolate(&r, 2_500), 30);
        assert_eq!(interpolate(&[], 5), 0);
    }
}
