//! A target that went away during a run bounded by `-n`: once a worker thread has had
//! nothing answered for `give_up_after` (5 s unless set) while connections it tried failed to
//! open (refused, timed out, unreachable), the rest of the count is given up, so the run
//! ends. Without this a count-bounded run against a server that had gone retried the rest of
//! its count at ten connects a second per connection: one ran for 33 minutes. A run bounded
//! by time ends at its time anyway. What was given up, and when the target last answered,
//! go into the result (see `verdicts`).
//!
//! The rule reads the thread's own live counters; each thread applies it to itself, so a
//! thread still answered goes on.

use super::ThreadCtx;
use crate::error::ErrorClass;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How often the counters are read.
const EVERY: Duration = Duration::from_millis(100);

/// The classes that say a connection could not be opened.
const CONNECT: [ErrorClass; 3] = [
    ErrorClass::ConnectRefused,
    ErrorClass::ConnectTimeout,
    ErrorClass::ConnectError,
];

/// What the rule needs of a thread's counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Seen {
    pub completed: u64,
    pub connect_failed: u64,
}

/// The rule, on the counters alone: `last` is the reading when something last completed
/// (or the run started), `since` how long ago that was.
pub(super) fn gave_up(last: Seen, now: Seen, since: Duration, after: Duration) -> bool {
    now.completed == last.completed && now.connect_failed > last.connect_failed && since >= after
}

fn seen(ctx: &ThreadCtx) -> Seen {
    let p = &ctx.progress;
    Seen {
        completed: p.completed.load(Ordering::Relaxed),
        connect_failed: CONNECT
            .iter()
            .map(|c| p.failed_by_class[*c as usize].load(Ordering::Relaxed))
            .sum(),
    }
}

/// Watches the thread's counters until the run ends or the budget is given up.
pub(super) async fn watch(ctx: Rc<ThreadCtx>) {
    let Some(after) = ctx.budget.give_up_after() else {
        return;
    };
    let mut last = seen(&ctx);
    let mut last_at = Instant::now().max(ctx.start);
    loop {
        tokio::select! {
            biased;
            _ = ctx.stop.stopped() => return,
            _ = tokio::time::sleep(EVERY) => {}
        }
        let now = seen(&ctx);
        let at = Instant::now();
        if now.completed != last.completed {
            (last, last_at) = (now, at);
            continue;
        }
        if gave_up(last, now, at.saturating_duration_since(last_at), after) {
            ctx.budget
                .abandon(last_at.saturating_duration_since(ctx.start));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_failed_connects_with_nothing_answered_for_long_enough_give_up() {
        let s = |completed, connect_failed| Seen {
            completed,
            connect_failed,
        };
        let five = Duration::from_secs(5);
        assert!(gave_up(s(10, 2), s(10, 40), five, five));
        assert!(!gave_up(s(10, 2), s(10, 40), five / 2, five), "not yet");
        assert!(!gave_up(s(10, 2), s(11, 40), five, five), "an answer");
        // Slow or failing answers on open connections (timeouts, resets) are a target that
        // is still there: no failed connect, no giving up.
        assert!(!gave_up(s(10, 2), s(10, 2), five * 10, five));
    }
}
