//! The `-n` request budget. Threads claim requests from a shared counter in small chunks so
//! that they touch the shared cache line once per chunk, not once per request; the chunk is
//! small enough that no thread sits idle for long while another still holds a claim.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug)]
pub(crate) struct SharedBudget {
    remaining: AtomicU64,
    chunk: u64,
    /// How long the target may refuse every connection, answering nothing, before the rest
    /// of the budget is given up (see `gone`).
    pub give_up_after: Duration,
    /// Set when the budget was given up because the target went away (see `gone`).
    abandoned: Mutex<Option<Abandoned>>,
}

/// A budget given up: the target was last seen answering (or the run started) this long
/// after the start, and this many requests of it were never sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abandoned {
    pub last_seen: Duration,
    pub unsent: u64,
}

impl SharedBudget {
    pub fn new(requests: u64, connections: usize, give_up_after: Duration) -> Self {
        SharedBudget {
            remaining: AtomicU64::new(requests),
            chunk: (requests / (connections as u64 * 8)).clamp(1, 256),
            give_up_after,
            abandoned: Mutex::new(None),
        }
    }

    /// Gives up what is left, `also` (a thread's unspent claim) with it; the earliest
    /// `last_seen` of the threads that gave up is kept.
    fn abandon(&self, last_seen: Duration, also: u64) {
        let left = self.remaining.swap(0, Ordering::Relaxed) + also;
        if let Ok(mut a) = self.abandoned.lock() {
            let before = a.take();
            *a = Some(Abandoned {
                last_seen: before.map_or(last_seen, |b| b.last_seen.min(last_seen)),
                unsent: before.map_or(0, |b| b.unsent) + left,
            });
        }
    }

    /// The budget given up, if it was.
    pub fn abandoned(&self) -> Option<Abandoned> {
        self.abandoned.lock().ok().and_then(|a| *a)
    }

    /// Takes up to one chunk; 0 when the budget is spent.
    fn claim(&self) -> u64 {
        let mut current = self.remaining.load(Ordering::Relaxed);
        loop {
            if current == 0 {
                return 0;
            }
            let take = current.min(self.chunk);
            match self.remaining.compare_exchange_weak(
                current,
                current - take,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return take,
                Err(now) => current = now,
            }
        }
    }
}

/// One thread's view of the budget; unlimited when the run ends by time.
#[derive(Debug)]
pub(crate) struct Budget {
    shared: Option<Arc<SharedBudget>>,
    local: Cell<u64>,
}

impl Budget {
    pub fn new(shared: Option<Arc<SharedBudget>>) -> Self {
        Budget {
            shared,
            local: Cell::new(0),
        }
    }

    /// Takes one request; false when none is left.
    #[inline]
    pub fn take(&self) -> bool {
        let Some(shared) = &self.shared else {
            return true;
        };
        let mut local = self.local.get();
        if local == 0 {
            local = shared.claim();
            if local == 0 {
                return false;
            }
        }
        self.local.set(local - 1);
        true
    }

    /// Gives up the rest of the budget, this thread's claim included (see `gone`); nothing
    /// without one.
    pub fn abandon(&self, last_seen: Duration) {
        if let Some(shared) = &self.shared {
            shared.abandon(last_seen, self.local.replace(0));
        }
    }

    /// With a request count: how long the target may go away before it is given up.
    pub fn give_up_after(&self) -> Option<Duration> {
        self.shared.as_ref().map(|s| s.give_up_after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_share_exactly_the_budget() {
        let shared = Arc::new(SharedBudget::new(100_003, 4, Duration::from_secs(5)));
        let taken: u64 = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let shared = shared.clone();
                    s.spawn(move || {
                        let b = Budget::new(Some(shared));
                        let mut n = 0u64;
                        while b.take() {
                            n += 1;
                        }
                        n
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(taken, 100_003);
        assert!(Budget::new(None).take());
    }

    #[test]
    fn an_abandoned_budget_counts_what_was_never_sent_claims_included() {
        let shared = Arc::new(SharedBudget::new(1_000, 1, Duration::from_secs(5)));
        let (a, b) = (
            Budget::new(Some(shared.clone())),
            Budget::new(Some(shared.clone())),
        );
        assert!(a.take() && b.take());
        // Each holds a claim of a chunk (125 here), one request of it spent.
        a.abandon(Duration::from_secs(3));
        assert!(!a.take(), "nothing left for the thread that gave up");
        b.abandon(Duration::from_secs(2));
        assert!(!b.take());
        let gone = shared.abandoned().unwrap();
        assert_eq!(gone.unsent, 998, "1,000 less the two sent");
        assert_eq!(gone.last_seen, Duration::from_secs(2), "the earliest");
        assert_eq!(
            SharedBudget::new(5, 1, Duration::from_secs(5)).abandoned(),
            None
        );
    }
}
