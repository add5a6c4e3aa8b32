//! When a due request that finds no idle connection opens another one.
//!
//! An open loop sends each request when it is due, so when every connection is busy it opens
//! another. That is right when the target is slow or stuck: the requests in flight are old,
//! and a due request must not wait for them. It is wrong when the generator itself fell
//! behind (its thread descheduled for a few milliseconds, as virtual machines do): then the
//! connections are busy only because their responses had not been read, and they free up as
//! soon as the thread reads them. Opening connections then costs the generator (and the
//! target) a connect each while the backlog waits, which puts the generator further behind:
//! at 50,000/s on one machine, a 34 ms stall of the thread grew 200 connections to 4,900 in
//! 0.7 s, and the run never recovered (docs/open-loop.md).
//!
//! So a due request opens another connection freely while the connections are few for the
//! load (under twice what Little's law says the rate and the recent time a request holds its
//! connection need (from hand-off to the response's reading: with a tick, that includes the
//! wait for the tick),
//! plus [`HEADROOM`]); beyond that, only when the oldest request in flight has waited longer
//! than four such times (and at least [`STALLED_AFTER`]): the target is stuck, and
//! new connections are what an open loop owes it. But while the thread is saturated (at
//! work [`SATURATED`] of its last millisecond or more, where it sleeps between due times:
//! plain HTTP/1.1), only the first [`HEADROOM`] open: it is behind on its own work, so
//! requests in flight look overdue only because their responses are unread.
//!
//! Pure bookkeeping over instants it is given, so that its tests drive the clock by hand.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Connections opened freely beyond what the load needs.
const HEADROOM: f64 = 8.0;

/// The least the oldest request in flight must have waited for the target to count as stuck.
const STALLED_AFTER: Duration = Duration::from_millis(1);

/// Over how long the thread's share of time at work is measured.
const LOAD_WINDOW: Duration = Duration::from_millis(1);

/// At or above this share of time at work, the thread is saturated: behind on its own work.
const SATURATED: f64 = 0.8;

/// Weight of each new observation in the running averages.
const ALPHA: f64 = 1.0 / 32.0;

#[derive(Default)]
pub(super) struct Growth {
    /// When each request in flight was handed to its connection, by sequence number from
    /// `first`, and whether it has finished (they finish out of order).
    in_flight: RefCell<VecDeque<(Instant, bool)>>,
    first: Cell<u64>,
    /// Recent time a connection is busy with a request, from hand-off to the response's
    /// reading (running average, s).
    service_s: Cell<f64>,
    /// Recent time between due requests (running average, s).
    gap_s: Cell<f64>,
    last_due: Cell<Option<Instant>>,
    /// The thread's share of time at work (not resting) over its last [`LOAD_WINDOW`], when
    /// it rests between due times (`None` until known: never over TLS or HTTP/2).
    busy: Cell<Option<f64>>,
    window: Cell<Option<(Instant, Duration)>>,
    last_rest_end: Cell<Option<Instant>>,
}

impl Growth {
    /// Before any response: a guess of the response time (a connect's round trip).
    pub fn guess_service(&self, service: Duration) {
        if self.service_s.get() == 0.0 {
            self.service_s.set(service.as_secs_f64());
        }
    }

    /// A request due at `t` was taken from the schedule (in the schedule's order).
    pub fn due(&self, t: Instant) {
        if let Some(last) = self.last_due.replace(Some(t)) {
            let gap = t.saturating_duration_since(last).as_secs_f64();
            self.gap_s.set(average(self.gap_s.get(), gap));
        }
    }

    /// A request was handed to its connection at `at`; returns its number for [`Self::ended`].
    pub fn sent(&self, at: Instant) -> u64 {
        let mut in_flight = self.in_flight.borrow_mut();
        in_flight.push_back((at, false));
        self.first.get() + in_flight.len() as u64 - 1
    }

    /// Request `n`, handed over at `sent`, ended at `end` (its response read, or a failure).
    pub fn ended(&self, n: u64, sent: Instant, end: Instant) {
        let service = end.saturating_duration_since(sent).as_secs_f64();
        self.service_s.set(average(self.service_s.get(), service));
        let mut in_flight = self.in_flight.borrow_mut();
        if let Some(entry) = n
            .checked_sub(self.first.get())
            .and_then(|i| in_flight.get_mut(i as usize))
        {
            entry.1 = true;
        }
        while in_flight.front().is_some_and(|e| e.1) {
            in_flight.pop_front();
            self.first.set(self.first.get() + 1);
        }
    }

    /// The thread rested (slept or spun until a due time) from `from` to `to`; it was at work
    /// since its last rest.
    pub fn rested(&self, from: Instant, to: Instant) {
        let worked_since = self.last_rest_end.replace(Some(to)).unwrap_or(from);
        let work = from.saturating_duration_since(worked_since);
        let (start, busy) = self.window.get().unwrap_or((worked_since, Duration::ZERO));
        let busy = busy + work;
        let span = to.saturating_duration_since(start);
        if span >= LOAD_WINDOW {
            self.busy.set(Some(busy.as_secs_f64() / span.as_secs_f64()));
            self.window.set(Some((to, Duration::ZERO)));
        } else {
            self.window.set(Some((start, busy)));
        }
    }

    /// When a request in flight now would be overdue (the target stuck), if one is.
    pub fn reconsider_at(&self) -> Option<Instant> {
        let oldest = self.in_flight.borrow().front()?.0;
        Some(oldest + self.stalled_after() + Duration::from_micros(1))
    }

    fn stalled_after(&self) -> Duration {
        STALLED_AFTER.max(Duration::from_secs_f64(4.0 * self.service_s.get()))
    }

    /// Whether a due request that found no idle connection, at `now`, with `open` connections
    /// (the cap aside), opens another.
    pub fn may_open(&self, now: Instant, open: usize) -> bool {
        // A thread behind on its own work has responses it has not read yet: requests in
        // flight look overdue, and the burst it sends as it catches up makes the target's
        // recent response times look long, but new connections would only slow it more.
        if self.busy.get().is_some_and(|b| b >= SATURATED) {
            return (open as f64) < HEADROOM;
        }
        let (service, gap) = (self.service_s.get(), self.gap_s.get());
        let needed = if gap > 0.0 { service / gap } else { 0.0 };
        if (open as f64) < 2.0 * needed + HEADROOM {
            return true;
        }
        match self.in_flight.borrow().front() {
            Some(&(oldest, _)) => now.saturating_duration_since(oldest) > self.stalled_after(),
            None => true,
        }
    }
}

fn average(avg: f64, x: f64) -> f64 {
    if avg == 0.0 {
        x
    } else {
        avg + ALPHA * (x - avg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    /// 50,000/s (a request every 20 µs) against a target answering in 30 µs: 1.5 connections
    /// needed, so up to 11 open freely.
    fn steady(t0: Instant) -> Growth {
        let g = Growth::default();
        for k in 0..200u64 {
            let at = t0 + us(20 * k);
            g.due(at);
            let n = g.sent(at);
            g.ended(n, at, at + us(30));
        }
        g
    }

    #[test]
    fn a_few_connections_beyond_the_need_open_freely() {
        let t0 = Instant::now();
        let g = steady(t0);
        let now = t0 + us(4_000);
        assert!(g.may_open(now, 10));
        assert!(g.may_open(now, 0));
        // With nothing in flight there is nothing to wait for.
        assert!(g.may_open(now, 500));
    }

    #[test]
    fn after_the_generators_own_stall_the_backlog_waits_for_the_connections_it_has() {
        let t0 = Instant::now();
        let g = steady(t0);
        // The thread stalled 34 ms; on waking it read every response and sent 60 requests on
        // its 60 connections, 100 µs ago: young, so the next due ones wait for them.
        let woke = t0 + us(40_000);
        let sent: Vec<u64> = (0..60).map(|_| g.sent(woke)).collect();
        assert!(!g.may_open(woke + us(100), 60));
        // The oldest ends; the rest are still young.
        g.ended(sent[0], woke, woke + us(200));
        assert!(!g.may_open(woke + us(300), 60));
    }

    #[test]
    fn a_stuck_target_gets_new_connections_once_the_oldest_request_is_overdue() {
        let t0 = Instant::now();
        let g = steady(t0);
        let froze = t0 + us(4_000);
        let first = g.sent(froze);
        for k in 1..60 {
            g.sent(froze + us(20 * k));
        }
        // Four response times (120 µs) are under the 1 ms floor: not yet.
        assert!(!g.may_open(froze + us(900), 60));
        assert!(g.may_open(froze + us(1_100), 60));
        // Requests ending out of order leave the oldest in flight as it was...
        g.ended(first + 5, froze + us(100), froze + us(1_200));
        assert!(g.may_open(froze + us(1_300), 60));
        // ...until it ends too: the oldest is then the second, sent 20 µs later.
        g.ended(first, froze, froze + us(1_300));
        assert!(!g.may_open(froze + us(1_010), 60));
        assert!(g.may_open(froze + us(1_030), 60));
    }

    #[test]
    fn a_thread_behind_on_its_own_work_opens_no_more_even_with_requests_overdue() {
        let t0 = Instant::now();
        let g = steady(t0);
        let froze = t0 + us(4_000);
        g.sent(froze);
        let late = froze + us(2_000);
        // Resting 90 µs of every 100: idle, so the overdue request means a stuck target.
        let mut at = froze;
        for _ in 0..20 {
            g.rested(at + us(10), at + us(100));
            at += us(100);
        }
        assert!(g.may_open(late, 60));
        // Then at work 95 µs of every 100 for a millisecond: saturated.
        for _ in 0..12 {
            g.rested(at + us(95), at + us(100));
            at += us(100);
        }
        assert!(!g.may_open(late, 60));
        // Nor those Little's law would ask for (11 here), beyond the headroom.
        assert!(!g.may_open(late, 10));
        assert!(g.may_open(late, 7));
    }

    #[test]
    fn a_slow_target_at_a_low_rate_gets_the_connections_littles_law_asks() {
        // 1,000/s against 10 ms: 10 connections needed, up to 28 open freely.
        let t0 = Instant::now();
        let g = Growth::default();
        g.guess_service(Duration::from_millis(10));
        for k in 0..100u64 {
            g.due(t0 + Duration::from_millis(k));
        }
        let now = t0 + Duration::from_millis(100);
        g.sent(now);
        assert!(g.may_open(now, 27));
        assert!(!g.may_open(now, 28));
    }
}
