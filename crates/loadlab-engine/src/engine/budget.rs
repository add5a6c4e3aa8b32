//! The `-n` request budget. Threads claim requests from a shared counter in small chunks so
//! that they touch the shared cache line once per chunk, not once per request; the chunk is
//! small enough that no thread sits idle for long while another still holds a claim.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[derive(Debug)]
pub(crate) struct SharedBudget {
    remaining: AtomicU64,
    chunk: u64,
}

impl SharedBudget {
    pub fn new(requests: u64, connections: usize) -> Self {
        SharedBudget {
            remaining: AtomicU64::new(requests),
            chunk: (requests / (connections as u64 * 8)).clamp(1, 256),
        }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_share_exactly_the_budget() {
        let shared = Arc::new(SharedBudget::new(100_003, 4));
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
}
