//! A worker thread's side of the interval collector: at every interval boundary (one
//! timeline bucket late, so responses stamped just before it are in), the thread's finished
//! intervals (histograms and counts) leave its recorder for the collector. Only the open
//! interval and the fixed-size totals stay with the thread.
//!
//! It must not touch the hot path: the recorder floors keep a late record in the open
//! interval, and this task runs only once an interval.

use super::ThreadCtx;
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
}

impl Feed {
    pub(super) fn new(thread: usize, tx: Sender<Batch>) -> Feed {
        Feed {
            thread,
            tx,
            counted_below: Cell::new(0),
        }
    }

    /// Takes every interval before `below` out of the recorder (`usize::MAX`: all of them,
    /// the thread has ended after `ended`).
    pub(super) fn take(&self, rec: &mut Recorder, below: usize, ended: Option<Duration>) -> Batch {
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
        self.counted_below.set(upto.max(from));
        rec.timeline.drain_below(upto.max(from) * per);
        Batch {
            thread: self.thread,
            below,
            histograms,
            buckets,
            failures,
            messages,
            ended,
        }
    }
}

/// Hands the thread's finished intervals over at each boundary, until the run's end drops it.
pub(super) async fn tick(ctx: Rc<ThreadCtx>, feed: Rc<Feed>) {
    let len = ctx.recorder.borrow().intervals.length;
    let closed_below =
        || (ctx.start.elapsed().saturating_sub(BUCKET).as_nanos() / len.as_nanos().max(1)) as usize;
    loop {
        let next = ctx.start + len * (closed_below() as u32 + 1) + BUCKET;
        tokio::time::sleep_until(next.into()).await;
        let batch = feed.take(&mut ctx.recorder.borrow_mut(), closed_below(), None);
        // The collector only goes away when the run has ended.
        let _ = feed.tx.send(batch);
    }
}
