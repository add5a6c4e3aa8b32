//! One session: the server it watches or launched, its sampling (a probe sampler streaming
//! into a bounded ring that `/samples` reads, each sample with the server's connections on
//! its port), the kernel counters around the sampling, and its lease.
//!
//! Sessions are one at a time (see `docs/agent-protocol.md`): the agent measures one server
//! for one generator, and a second generator sharing the host would spoil the figures.
//! Blocking work (joining the sampler, stopping a server) runs on the caller's blocking
//! thread; this module must not print.

use crate::config::Clock;
use crate::protocol::{Busy, WireExit, WireSample, WireThrottling};
use loadlab_machine::counters::{self, Snapshot};
use loadlab_machine::netns::Scope;
use loadlab_machine::path::{PathSampler, Side};
use loadlab_probe::{Launched, Sampler, Source};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Samples kept for `/samples?after=`; older ones are dropped (a generator polls every
/// second or so; 100,000 samples is hours at 100 ms).
pub(crate) const RING_SAMPLES: usize = 100_000;
/// How long a launched server has to stop after SIGTERM before its group is killed.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(2);

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The samples of the current sampling, shared with the sampler's thread.
#[derive(Debug, Default)]
pub(crate) struct Ring {
    pub samples: VecDeque<WireSample>,
    pub next_seq: u64,
    pub exit: Option<WireExit>,
    pub sampling: bool,
}

impl Ring {
    /// Samples after `after`, at most `limit`.
    pub fn after(&self, after: u64, limit: usize) -> Vec<WireSample> {
        self.samples
            .iter()
            .filter(|s| s.seq > after)
            .take(limit)
            .copied()
            .collect()
    }
}

/// What a session holds.
pub(crate) struct Held {
    pub source: Source,
    pub kind: &'static str,
    pub description: String,
    pub launched: Option<Launched>,
    pub certs: Option<loadlab_certs::CertDir>,
}

struct Sampling {
    sampler: Sampler,
    before: Snapshot,
    port: Option<u16>,
}

pub(crate) struct Session {
    pub id: String,
    pub busy: Busy,
    pub lease: Duration,
    /// The last request on the session: the lease runs from here.
    renewed: Mutex<Instant>,
    held: Mutex<Option<Held>>,
    sampling: Mutex<Option<Sampling>>,
    pub ring: Arc<Mutex<Ring>>,
    /// Woken on every new sample and on the end of sampling (the long poll waits on it).
    pub changed: Arc<tokio::sync::Notify>,
    clock: Clock,
    /// Where the launched server's cgroups are recorded, to be struck off once removed.
    state_dir: Option<Arc<crate::state_dir::StateDir>>,
}

impl Session {
    pub fn new(
        id: String,
        busy: Busy,
        lease: Duration,
        held: Held,
        clock: Clock,
        state_dir: Option<Arc<crate::state_dir::StateDir>>,
    ) -> Session {
        Session {
            id,
            busy,
            lease,
            renewed: Mutex::new(Instant::now()),
            held: Mutex::new(Some(held)),
            sampling: Mutex::new(None),
            ring: Arc::default(),
            changed: Arc::default(),
            clock,
            state_dir,
        }
    }

    pub fn renew(&self, now: Instant) {
        *lock(&self.renewed) = now;
    }

    pub fn expired(&self, now: Instant) -> bool {
        lease_expired(*lock(&self.renewed), self.lease, now)
    }

    /// The main PID of the server (an attached group's lowest), for `/host`'s nofile.
    pub fn server_pid(&self) -> Option<u32> {
        let held = lock(&self.held);
        let source = &held.as_ref()?.source;
        source
            .main_pid()
            .or_else(|| source.group().and_then(|g| g.pids().into_iter().min()))
    }

    /// Starts sampling every `every` (stopping a sampling already on), clearing old samples
    /// and reading the kernel counters.
    pub fn start_sampling(&self, every: Duration, port: Option<u16>) {
        if let Some(old) = lock(&self.sampling).take() {
            drop(old.sampler.finish());
        }
        let held = lock(&self.held);
        let Some(held) = held.as_ref() else {
            return;
        };
        *lock(&self.ring) = Ring {
            sampling: true,
            ..Ring::default()
        };
        let before = counters::snapshot(&[Scope::Own], port);
        let ring = self.ring.clone();
        let changed = self.changed.clone();
        let clock = self.clock;
        // The server's connections on its port, read with each sample (the sending end's
        // view of the path: docs/path.md); on this host's network namespace, as the
        // kernel counters are.
        let mut path = port.map(|port| PathSampler::new(Side::Server { port }));
        let sink = Box::new(
            move |s: &loadlab_probe::Sample, exit: Option<&loadlab_probe::sampler::Exit>| {
                let window = path.as_mut().and_then(PathSampler::sample);
                let mut ring = lock(&ring);
                ring.next_seq += 1;
                let mut sample = wire_sample(s, ring.next_seq, &clock);
                sample.path = window;
                if ring.samples.len() >= RING_SAMPLES {
                    ring.samples.pop_front();
                }
                ring.samples.push_back(sample);
                if let Some(e) = exit {
                    ring.exit = Some(WireExit {
                        at_ns: clock.at_ns(e.at),
                        status: e.status.clone(),
                        oom_killed: e.oom_killed,
                    });
                    ring.sampling = false;
                }
                drop(ring);
                changed.notify_waiters();
            },
        );
        let probe = held.launched.as_ref().map(Launched::exit_probe);
        let sampler = Sampler::start_streaming(
            None,
            held.source.clone(),
            every,
            probe,
            Box::new(|| {}),
            sink,
            // Streamed to the ring only: a session of a day would otherwise keep every sample.
            false,
        );
        *lock(&self.sampling) = Some(Sampling {
            sampler,
            before,
            port,
        });
    }

    /// Stops sampling (blocking: joins the sampler) and returns the kernel counters over it.
    pub fn stop_sampling(&self) -> Option<loadlab_result::machine::KernelCounters> {
        let sampling = lock(&self.sampling).take()?;
        drop(sampling.sampler.finish());
        lock(&self.ring).sampling = false;
        self.changed.notify_waiters();
        let after = counters::snapshot(&[Scope::Own], sampling.port);
        counters::delta(
            &sampling.before,
            &after,
            counters::describe(&[Scope::Own]),
            sampling.port,
        )
    }

    /// Stops everything (blocking, up to [`STOP_GRACE`] and a little): sampling, then a
    /// launched server (SIGTERM to its process group, then its group killed and its cgroup
    /// removed, which dropping [`Launched`] does). Returns what was done, in words.
    pub fn close(&self) -> Vec<String> {
        let mut done = Vec::new();
        if self.stop_sampling().is_some() {
            done.push("sampling".to_string());
        }
        let Some(held) = lock(&self.held).take() else {
            return done;
        };
        if let Some(launched) = held.launched {
            let pid = launched.pid();
            let how = if let Some(status) = launched.exit_status() {
                // Exited before the close: nothing of it is signalled but what is left in its
                // group and cgroup (by identity, when it is dropped below).
                format!(
                    "{} (pid {pid}) had already exited: {status}",
                    held.description
                )
            } else {
                launched.signal(libc::SIGTERM);
                match launched.wait_exit(STOP_GRACE) {
                    Some(status) => format!("stopped {} (pid {pid}): {status}", held.description),
                    None => format!(
                        "killed {} (pid {pid}): still running {} s after SIGTERM",
                        held.description,
                        STOP_GRACE.as_secs()
                    ),
                }
            };
            let group = launched.cgroup().map(|g| g.label().to_string());
            let dirs = launched
                .cgroup()
                .map(|g| g.dirs().to_vec())
                .unwrap_or_default();
            drop(launched);
            if let Some(state_dir) = &self.state_dir {
                state_dir.note_cgroups(&dirs, true);
            }
            done.push(how);
            if let Some(group) = group {
                done.push(format!("removed cgroup {group}"));
            }
        } else {
            done.push(format!("stopped watching {}", held.description));
        }
        if held.certs.is_some() {
            done.push("removed the throwaway certificates".into());
        }
        done
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Dropping the held server kills it and removes its cgroup (without the grace).
        if let Some(s) = lock(&self.sampling).take() {
            drop(s.sampler.finish());
        }
    }
}

/// Whether a lease renewed at `renewed` has run out at `now`.
pub(crate) fn lease_expired(renewed: Instant, lease: Duration, now: Instant) -> bool {
    now.saturating_duration_since(renewed) > lease
}

fn wire_sample(s: &loadlab_probe::Sample, seq: u64, clock: &Clock) -> WireSample {
    WireSample {
        seq,
        at_ns: clock.at_ns(s.at),
        cpu_ns: s.cpu_ns,
        throttling: s.throttling.map(|t| WireThrottling {
            periods: t.periods,
            throttled: t.throttled,
            throttled_ns: t.throttled_ns,
        }),
        rss_bytes: s.rss_bytes,
        memory_bytes: s.memory_bytes,
        threads: s.threads,
        fds: s.fds,
        processes: s.processes,
        sent_bytes: s.sent_bytes,
        oom_kills: s.oom_kills,
        path: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lease on a fake clock: instants made up, nothing waited for.
    #[test]
    fn the_lease_runs_out_only_after_its_length_without_renewal() {
        let t0 = Instant::now();
        let lease = Duration::from_millis(500);
        assert!(!lease_expired(t0, lease, t0));
        assert!(!lease_expired(t0, lease, t0 + Duration::from_millis(500)));
        assert!(lease_expired(t0, lease, t0 + Duration::from_millis(501)));
        // A renewal later than `now` (another thread's) is not an expiry.
        assert!(!lease_expired(t0 + Duration::from_secs(1), lease, t0));
    }

    #[test]
    fn the_ring_reads_after_a_sequence_number() {
        let mut ring = Ring::default();
        for seq in 1..=5 {
            ring.samples.push_back(WireSample {
                seq,
                at_ns: 0,
                cpu_ns: seq,
                throttling: None,
                rss_bytes: 0,
                memory_bytes: None,
                threads: 1,
                fds: 1,
                processes: 1,
                sent_bytes: None,
                oom_kills: None,
                path: None,
            });
        }
        let seqs = |v: Vec<WireSample>| v.iter().map(|s| s.seq).collect::<Vec<_>>();
        assert_eq!(seqs(ring.after(3, 10)), vec![4, 5]);
        assert_eq!(seqs(ring.after(0, 2)), vec![1, 2]);
        assert!(ring.after(5, 10).is_empty());
    }
}
