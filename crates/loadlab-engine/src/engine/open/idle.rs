//! The open loop's idle connections: a stack, so that the connection freed last is reused
//! first and the ones not needed sink to the bottom, where those idle longer than
//! [`IDLE_CLOSE`] are closed. A stall (of the generator or of the target) piles up due
//! requests, and connections are opened for them; once it is over they are not needed, and
//! kept for a day-long run they would only accumulate: memory, file descriptors and the
//! target's own resources for connections nobody uses. Go's HTTP client lets idle connections
//! go after 90 s, for the same reason.
//!
//! It reads no clock (callers pass `now`), so its tests drive time by hand.

use crate::engine::exchange::Due;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How long a connection may stay idle before it is closed, unless it is the last idle one.
pub(super) const IDLE_CLOSE: Duration = Duration::from_secs(30);

/// How often the pool looks for connections idle too long.
const EXPIRE_EVERY: Duration = Duration::from_secs(1);

/// How an idle connection receives its next request, or is told to close.
pub(super) struct Slot {
    pub(super) work: Cell<Option<Due>>,
    pub(super) wake: Notify,
    idle_at: Cell<Option<Instant>>,
    closed: Cell<bool>,
}

impl Slot {
    pub(super) fn new() -> Slot {
        Slot {
            work: Cell::new(None),
            wake: Notify::new(),
            idle_at: Cell::new(None),
            closed: Cell::new(false),
        }
    }

    /// The pool let this connection go: it must close.
    pub(super) fn closed(&self) -> bool {
        self.closed.get()
    }
}

#[derive(Default)]
pub(super) struct IdlePool {
    stack: RefCell<Vec<Rc<Slot>>>,
    /// Since when some connection has been idle (`None` while none is).
    since: Cell<Option<Instant>>,
    next_expiry: Cell<Option<Instant>>,
}

impl IdlePool {
    /// `slot`'s connection went idle at `now`.
    pub(super) fn put(&self, slot: Rc<Slot>, now: Instant) {
        let mut stack = self.stack.borrow_mut();
        if stack.is_empty() {
            self.since.set(Some(now));
        }
        slot.idle_at.set(Some(now));
        stack.push(slot);
    }

    /// The connection that went idle last.
    pub(super) fn take(&self) -> Option<Rc<Slot>> {
        let mut stack = self.stack.borrow_mut();
        let slot = stack.pop();
        if stack.is_empty() {
            self.since.set(None);
        }
        slot
    }

    /// Since when some connection has been idle.
    pub(super) fn since(&self) -> Option<Instant> {
        self.since.get()
    }

    /// At most once a second: tells the connections idle for [`IDLE_CLOSE`] or longer by
    /// `now` to close, except the one idle the shortest. Returns how many it told.
    pub(super) fn expire(&self, now: Instant) -> usize {
        if self.next_expiry.get().is_some_and(|t| now < t) {
            return 0;
        }
        self.next_expiry.set(Some(now + EXPIRE_EVERY));
        let mut stack = self.stack.borrow_mut();
        // The stack's bottom went idle first: the expired ones are a prefix of it.
        let expired = stack
            .iter()
            .take(stack.len().saturating_sub(1))
            .take_while(|s| s.idle_at.get().is_some_and(|t| now >= t + IDLE_CLOSE))
            .count();
        for slot in stack.drain(..expired) {
            slot.closed.set(true);
            slot.wake.notify_one();
        }
        expired
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.stack.borrow().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_idle_too_long_close_oldest_first_and_the_last_idle_one_stays() {
        let pool = IdlePool::default();
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let slots: Vec<Rc<Slot>> = (0..4).map(|_| Rc::new(Slot::new())).collect();
        // Idle at 0, 5 and 10 s; the one idle since 10 s is taken again and freed at 21 s,
        // and a fourth goes idle at 40 s.
        for (slot, s) in slots.iter().zip([0, 5, 10]) {
            pool.put(slot.clone(), at(s));
        }
        assert_eq!(pool.since(), Some(at(0)));
        assert!(
            Rc::ptr_eq(&pool.take().unwrap(), &slots[2]),
            "the last freed goes first"
        );
        pool.put(slots[2].clone(), at(21));
        pool.put(slots[3].clone(), at(40));
        let ms = |ms: u64| t0 + Duration::from_millis(ms);
        // At 29 s nothing has been idle 30 s.
        assert_eq!(pool.expire(at(29)), 0);
        // At 34.5 s the one idle since 0 s has expired.
        assert_eq!(pool.expire(ms(34_500)), 1);
        // At 35.2 s so has the one idle since 5 s, but the pool looks only once a second.
        assert_eq!(pool.expire(ms(35_200)), 0);
        assert_eq!(pool.expire(ms(35_500)), 1);
        assert!(slots[0].closed() && slots[1].closed() && !slots[2].closed());
        assert_eq!(pool.len(), 2);
        // Much later, everything has been idle long, but the last idle one stays open.
        assert_eq!(pool.expire(at(500)), 1);
        assert!(slots[2].closed() && !slots[3].closed());
        assert!(Rc::ptr_eq(&pool.take().unwrap(), &slots[3]));
        assert_eq!((pool.len(), pool.since()), (0, None));
    }
}
