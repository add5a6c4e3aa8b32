//! A worker thread's side of the interval collector: at every interval boundary (one
//! timeline bucket late, so responses stamped just before it are in), the thread's finished
//! intervals (histograms and counts, and the CPU the thread spent since the last hand-over)
//! leave its recorder for the collector. Only the open interval and the fixed-size totals
//! stay with the thread.
//!
//! It must not touch the hot path: the recorder floors keep a late record in the open
//! interval, and this task runs only once an interval.

use super::{sys, ThreadCtx};
use crate::collector::Batch;
use crate::stats::{Bucket, Recorder, BUCKET};
use crate::timeline::buckets_per_interval;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::time::Duration;

/// Where one thread sends its batches, and how far its counts went.
pub(super) struct Feed {
    thread: usize,
    pub(super) tx: Sender<Batch>,
    counted_below: Cell<usize>,
    /// The thread's busy CPU time at its last hand-over (`None` before the run started).
    busy_at: Cell<Option<Duration>>,
}

/// The calling worker thread's CPU time so far, busy-polling's idle spins left out: what its
/// `thread_busy` in the result is made of.
pub(super) fn busy(ctx: &ThreadCtx) -> Duration {
    sys::thread_cpu_time()
        .total()
        .saturating_sub(ctx.spin_idle.get())
}

impl Feed {
    pub(super) fn new(thread: usize, tx: Sender<Batch>) -> Feed {
        Feed {
            thread,
            tx,
            counted_below: Cell::new(0),
            busy_at: Cell::new(None),
        }
    }

    /// The run started: the thread's CPU is counted from `busy` on.
    pub(super) fn started(&self, busy: Duration) {
        self.busy_at.set(Some(busy));
    }

    /// The CPU seconds spent since the last hand-over (the thread's `busy` now), shared by
    /// intervals `from..upto`, those this hand-over closes (more than one when the thread was
    /// too busy to hand over at each boundary, or at its end), in proportion to how much of
    /// each the run lasted (`ended`; each whole while it goes): the partial interval a run
    /// ends in gets its share, not half of its whole neighbour's. With none closed, it is
    /// kept for the next hand-over.
    fn cpu_by_interval(
        &self,
        busy: Duration,
        (from, upto): (usize, usize),
        length: Duration,
        ended: Option<Duration>,
    ) -> Vec<(usize, f64)> {
        if upto <= from {
            return Vec::new();
        }
        let Some(before) = self.busy_at.replace(Some(busy)) else {
            return Vec::new();
        };
        let spent = busy.saturating_sub(before).as_secs_f64();
        let share = |i: usize| {
            ended.map_or(1.0, |end| {
                let lived = end.saturating_sub(length * i as u32);
                (lived.as_secs_f64() / length.as_secs_f64().max(1e-9)).min(1.0)
            })
        };
        let all: f64 = (from..upto).map(share).sum();
        (from..upto)
            .map(|i| {
                let each = if all > 0.0 {
                    spent * share(i) / all
                } else {
                    spent / (upto - from) as f64
                };
                (i, each)
            })
            .collect()
    }

    /// Takes every interval before `below` out of the recorder (`usize::MAX`: all of them,
    /// the thread has ended after `ended`), with the thread's CPU, `busy` so far.
    pub(super) fn take(
        &self,
        rec: &mut Recorder,
        below: usize,
        ended: Option<Duration>,
        busy: Duration,
    ) -> Batch {
        let per = buckets_per_interval(rec.intervals.length);
        let histograms = rec.intervals.take_below(below);
        let from = self.counted_below.get();
        let upto = if below == usize::MAX {
            rec.timeline.end().div_ceil(per)
        } else {
            below
        };
        let buckets = (from..upto)
            .map(|i| (i, rec.timeline.span(i * per, (i + 1) * per)))
            .filter(|(_, span)| span.iter().any(|b| *b != Bucket::default()))
            .collect();
        let failures = rec.timeline.failures_by_interval(per, from, upto);
        let messages = rec.timeline.messages_by_interval(per, from, upto);
        let cpu = self.cpu_by_interval(busy, (from, upto), rec.intervals.length, ended);
        self.counted_below.set(upto.max(from));
        rec.timeline.drain_below(upto.max(from) * per);
        Batch {
            thread: self.thread,
            below,
            histograms,
            buckets,
            failures,
            messages,
            cpu,
            ended,
        }
    }
}

/// Hands the thread's finished intervals over at each boundary, until the run's end drops it.
pub(super) async fn tick(ctx: Rc<ThreadCtx>, feed: Rc<Feed>) {
    let len = ctx.recorder.borrow().intervals.length;
    let closed_below =
        || (ctx.start.elapsed().saturating_sub(BUCKET).as_nanos() / len.as_nanos().max(1)) as usize;
    feed.started(busy(&ctx));
    loop {
        let next = ctx.start + len * (closed_below() as u32 + 1) + BUCKET;
        tokio::time::sleep_until(next.into()).await;
        let batch = feed.take(
            &mut ctx.recorder.borrow_mut(),
            closed_below(),
            None,
            busy(&ctx),
        );
        // The collector only goes away when the run has ended.
        let _ = feed.tx.send(batch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-over's CPU: each interval it closes gets its share while the run goes; at the
    /// end, the partial interval the run ended in gets only the part it lasted; with nothing
    /// closed, the CPU waits for the next hand-over.
    #[test]
    fn a_threads_cpu_is_shared_by_the_intervals_each_hand_over_closes() {
        let feed = Feed::new(0, std::sync::mpsc::channel().0);
        let ms = Duration::from_millis;
        let len = ms(500);
        assert_eq!(feed.cpu_by_interval(ms(10), (0, 1), len, None), []);
        feed.started(ms(100));
        assert_eq!(
            feed.cpu_by_interval(ms(400), (0, 2), len, None),
            [(0, 0.15), (1, 0.15)]
        );
        assert_eq!(feed.cpu_by_interval(ms(900), (2, 2), len, None), []);
        // Ended 0.1 s into interval 3: 1 of 1.2 interval-lengths for 2, 0.2 for 3.
        let last = feed.cpu_by_interval(ms(1_000), (2, 4), len, Some(ms(1_600)));
        assert_eq!(last.len(), 2);
        assert!(
            (last[0].1 - 0.5).abs() < 1e-9 && (last[1].1 - 0.1).abs() < 1e-9,
            "{last:?}"
        );
    }
}
