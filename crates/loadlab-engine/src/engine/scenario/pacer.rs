//! `--pace`: each virtual user's connection sends one request per period, as post 003's
//! Gatling scenario did, whatever the server does. Pure arithmetic over instants: the caller
//! waits, this says until when. A request is due at its slot, and measured from it: a
//! response slower than the period makes the next request late, and that lateness counts
//! (no slot is skipped, so a stall cannot hide).

use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub(super) struct Pacer {
    next: Instant,
    every: Duration,
}

impl Pacer {
    /// User `user` of `users` starts `user / users` of a period after `start`, so that the
    /// users' requests spread evenly over each period instead of all going at once.
    pub fn new(start: Instant, every: Duration, user: usize, users: usize) -> Pacer {
        let offset = every.mul_f64((user % users.max(1)) as f64 / users.max(1) as f64);
        Pacer {
            next: start + offset,
            every,
        }
    }

    /// The next request's due time; every call moves one period on.
    pub fn next_due(&mut self) -> Instant {
        let due = self.next;
        self.next += self.every;
        due
    }
}

/// The request rate `users` paced users offer.
pub(crate) fn offered_per_s(users: usize, every: Duration) -> f64 {
    users as f64 / every.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_one_period_apart_and_users_spread_over_a_period() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut first = Pacer::new(t0, s, 0, 4);
        let mut third = Pacer::new(t0, s, 2, 4);
        let a: Vec<Duration> = (0..3).map(|_| first.next_due() - t0).collect();
        let b: Vec<Duration> = (0..3).map(|_| third.next_due() - t0).collect();
        assert_eq!(a, [Duration::ZERO, s, 2 * s]);
        assert_eq!(b, [s / 2, s * 3 / 2, s * 5 / 2]);
        assert_eq!(offered_per_s(100, s), 100.0);
        assert_eq!(offered_per_s(3, Duration::from_millis(500)), 6.0);
    }
}
