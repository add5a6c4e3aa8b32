//! Hypervisor steal, sampled per timeline interval from `/proc/stat` on a thread of its own:
//! on a VM another tenant's load shows here, and a noisy run says so.

use super::*;

/// Samples hypervisor steal at each interval boundary on a thread of its own.
pub(super) struct StealSampler {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Vec<f64>>>,
}

impl StealSampler {
    pub(super) fn start(start: Instant, interval: Duration) -> StealSampler {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let thread = std::thread::Builder::new()
            .name("loadlab-steal".into())
            .spawn(move || {
                // At the default priority: its reading at each boundary takes microseconds,
                // and a read delayed by busy workers would blame one interval's steal on the
                // next.
                let mut out = Vec::new();
                let mut last = sys::cpu_steal_ticks();
                let mut next = start + interval;
                loop {
                    // Asleep to the boundary: `finish` wakes it early at the run's end.
                    loop {
                        let now = Instant::now();
                        if now >= next || flag.load(Ordering::Acquire) {
                            break;
                        }
                        std::thread::park_timeout(next - now);
                    }
                    let now = sys::cpu_steal_ticks();
                    if let (Some((s0, t0)), Some((s1, t1))) = (last, now) {
                        let dt = t1.saturating_sub(t0);
                        out.push(if dt > 0 {
                            s1.saturating_sub(s0) as f64 / dt as f64
                        } else {
                            0.0
                        });
                    }
                    last = now;
                    next += interval;
                    if flag.load(Ordering::Acquire) {
                        return out;
                    }
                }
            })
            .ok();
        StealSampler { done, thread }
    }

    pub(super) fn finish(self) -> Vec<f64> {
        self.done.store(true, Ordering::Release);
        self.thread
            .and_then(|t| {
                t.thread().unpark();
                t.join().ok()
            })
            .unwrap_or_default()
    }
}
