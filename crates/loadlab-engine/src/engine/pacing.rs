//! The open loop's pacing decisions: which sends one wake-up of the dispatcher takes, and how
//! it waits for the next. Pure arithmetic over instants: no clock is read and nothing is sent
//! here (`open` does both), so every decision is tested on a virtual clock.
//!
//! Each wake-up costs far more than a request on a virtual machine (an idle CPU's wake-up is
//! a VM exit, tens of microseconds), so the dispatcher makes each one count:
//! - a wake-up is set for the earliest due send, and takes every send due by then plus
//!   [`Pacing::slack`]: sends a few microseconds apart go out in one batch instead of one
//!   wake-up each. Each send keeps its own intended time: one sent late is late by exactly
//!   that (its send lag and response time count from its intended time), one sent up to
//!   `slack` early has no lag and its response time counts from when it was actually sent,
//!   so an early send never shortens a latency;
//! - a wait shorter than [`Pacing::spin_below`] is spun, not slept: sleeping would cost a
//!   wake-up and overshoot by the timer's own latency.
//!
//! With `--tick` neither applies: sends wait for the tick boundary, never go early.

use crate::schedule::Schedule;
use std::time::{Duration, Instant};

/// This thread's share of the schedule, as absolute instants.
pub(crate) struct Pending {
    schedule: Schedule,
    start: Instant,
    next: Option<Instant>,
}

impl Pending {
    pub fn new(mut schedule: Schedule, start: Instant) -> Pending {
        let next = schedule.next_offset().map(|o| start + o);
        Pending {
            schedule,
            start,
            next,
        }
    }

    /// When to wake for a request due at `t`: at `t` itself, or with a tick, at the first
    /// tick boundary (counted from the start) at or after it.
    pub fn wake_for(&self, t: Instant, tick: Duration) -> Instant {
        if tick.is_zero() {
            return t;
        }
        let offset = t.saturating_duration_since(self.start).as_nanos();
        let tick = tick.as_nanos();
        let ticks = offset.div_ceil(tick);
        self.start + Duration::from_nanos((ticks * tick).min(u64::MAX as u128) as u64)
    }

    pub fn peek(&self) -> Option<Instant> {
        self.next
    }

    pub fn take(&mut self) -> Option<Instant> {
        let t = self.next?;
        self.next = self.schedule.next_offset().map(|o| self.start + o);
        Some(t)
    }

    /// Takes the next send if it is due by `by`.
    pub fn take_due(&mut self, by: Instant) -> Option<Instant> {
        match self.next {
            Some(t) if t <= by => self.take(),
            _ => None,
        }
    }
}

/// How the dispatcher batches sends and waits between batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pacing {
    /// A wake-up also takes sends due up to this long after it.
    pub slack: Duration,
    /// Waits up to this long are spun instead of slept.
    pub spin_below: Duration,
}

/// How to wait until the next wake-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Sleep the thread (a timer wakes it).
    Sleep(Instant),
    /// Spin on the clock: shorter than a wake-up would cost.
    Spin(Instant),
}

impl Pacing {
    /// The exact mode's pacing. The slack is well below the 100 µs a send may be late by at
    /// p99 and below a VM's timer wake-up latency, so a batch takes only sends the wake-up
    /// would have been late for anyway, give or take; the spin is below what a wake-up
    /// costs. Both were chosen by counting wake-ups (docs/open-loop.md).
    pub const EXACT: Pacing = Pacing {
        slack: Duration::from_micros(20),
        spin_below: Duration::from_micros(20),
    };

    /// `--tick`: sends wait for the boundary; nothing goes early, nothing spins.
    pub const NONE: Pacing = Pacing {
        slack: Duration::ZERO,
        spin_below: Duration::ZERO,
    };

    /// The pacing for a run with `tick` (zero: exact).
    pub fn for_tick(tick: Duration) -> Pacing {
        if tick.is_zero() {
            Pacing::EXACT
        } else {
            Pacing::NONE
        }
    }

    /// The latest intended time a wake-up at `now` sends, within a schedule that ends at
    /// `deadline`: sends due after the deadline are never sent early.
    pub fn batch_end(&self, now: Instant, deadline: Instant) -> Instant {
        (now + self.slack).min(deadline).max(now)
    }

    /// How to wait, at `now`, for a wake-up at `wake_at`.
    pub fn wait(&self, now: Instant, wake_at: Instant) -> Wait {
        if wake_at.saturating_duration_since(now) <= self.spin_below {
            Wait::Spin(wake_at)
        } else {
            Wait::Sleep(wake_at)
        }
    }
}

/// Where a response time starts: when the request was due, or when it was sent if that was
/// earlier (a send taken early by a batch): never after the request left.
pub(crate) fn latency_origin(intended: Instant, sent_at: Instant) -> Instant {
    intended.min(sent_at)
}

#[cfg(test)]
#[path = "pacing_tests.rs"]
mod tests;
