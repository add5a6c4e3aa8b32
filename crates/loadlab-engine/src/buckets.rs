//! A thread's traffic on the run's clock, in buckets of [`BUCKET`]: bytes, completions,
//! failures (and a gRPC run's stream messages, an open loop's lateness) by when they
//! happened, for the timeline's counts and the busiest second. Plain data and arithmetic: no clock is read here, the
//! caller says when.

use std::time::Duration;

/// Width of a timeline bucket; the busiest 1-second window is found by sliding over them.
pub const BUCKET: Duration = Duration::from_millis(100);
pub const BUCKETS_PER_SECOND: usize = 10;

/// Traffic per [`BUCKET`] since the start of the run (warm-up included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bucket {
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub completed: u64,
    pub failed: u64,
    /// Open loop: of the requests completed here, those noticed more than
    /// [`crate::verdicts::LATE_SCHEDULER_P99_US`] after they were due.
    pub late: u32,
    /// Open loop: the most any request completed here waited, once due, to be noticed (µs;
    /// 32 bits keep the bucket at 40 bytes and hold 71 minutes).
    pub lag_max_us: u32,
}

/// Failures by class: `(ErrorClass index, count)`, only the classes that occurred (so at
/// most `ErrorClass::COUNT` entries).
pub type ClassCounts = Vec<(u8, u64)>;

/// Adds `from` into `into`, class by class.
pub fn add_classes(into: &mut ClassCounts, from: &[(u8, u64)]) {
    for &(class, n) in from {
        match into.iter_mut().find(|(c, _)| *c == class) {
            Some((_, count)) => *count += n,
            None => into.push((class, n)),
        }
    }
}

/// Adds messages `[sent, received]` into `into`.
pub fn add_messages(into: &mut [u64; 2], from: &[u64; 2]) {
    into[0] += from[0];
    into[1] += from[1];
}

/// One thread's traffic per [`BUCKET`]. With an interval collector, buckets leave with their
/// interval (`drain_below`), so a day-long run holds only the open interval's; without one,
/// the whole run stays here for the end-of-run timeline.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    /// Buckets from index `first` on.
    buckets: Vec<Bucket>,
    first: usize,
    /// Failures by class as `(bucket index, class, count)`, in bucket order: apart from the
    /// buckets (which are `Copy` and 40 bytes) because most buckets of most runs have none,
    /// and a class array in each would be ten times their size.
    failures: Vec<(usize, u8, u64)>,
    /// A gRPC run's stream messages as `(bucket index, [sent, received])`, in bucket order:
    /// apart from the buckets for the same reason (only gRPC runs count any).
    messages: Vec<(usize, [u64; 2])>,
    /// The first bucket still open: those before it were handed to the interval collector,
    /// so a late write (a moment taken before the hand-over) lands here instead.
    pub floor: usize,
}

impl Timeline {
    /// The bucket for a moment `since_start` into the run, created on first use.
    #[inline]
    pub fn at(&mut self, since_start: Duration) -> &mut Bucket {
        let i = self.index(since_start) - self.first;
        if i >= self.buckets.len() {
            self.buckets.resize(i + 1, Bucket::default());
        }
        &mut self.buckets[i]
    }

    /// A failure of `class` at `since_start`: counted in its bucket and by class; the bucket
    /// is given back for its bytes.
    #[inline]
    pub fn fail(&mut self, since_start: Duration, class: u8) -> &mut Bucket {
        let index = self.index(since_start);
        // A thread's moments only move forward, so this bucket's classes are the last few.
        let same = self
            .failures
            .iter_mut()
            .rev()
            .take_while(|f| f.0 == index)
            .find(|f| f.1 == class);
        match same {
            Some(f) => f.2 += 1,
            None => self.failures.push((index, class, 1)),
        }
        let bucket = self.at(since_start);
        bucket.failed += 1;
        bucket
    }

    /// A gRPC call ended at `since_start` having sent `sent` messages and read `received`.
    pub fn messages(&mut self, since_start: Duration, sent: u64, received: u64) {
        let index = self.index(since_start);
        // Kept in bucket order even for a moment clamped to the floor behind later ones.
        let at = self.messages.partition_point(|m| m.0 <= index);
        match at.checked_sub(1).map(|k| &mut self.messages[k]) {
            Some((i, m)) if *i == index => add_messages(m, &[sent, received]),
            _ => self.messages.insert(at, (index, [sent, received])),
        }
        // Its bucket exists, so the timeline's end (what is handed over last) covers it.
        self.at(since_start);
    }

    /// Messages `[sent, received]` in each interval of `per` buckets from `from` to before
    /// `to` (interval indices), only the intervals that had some, in order.
    pub fn messages_by_interval(
        &self,
        per: usize,
        from: usize,
        to: usize,
    ) -> Vec<(usize, [u64; 2])> {
        let mut out: Vec<(usize, [u64; 2])> = Vec::new();
        for &(bucket, [sent, received]) in &self.messages {
            let i = bucket / per;
            if i < from || i >= to {
                continue;
            }
            match out.last_mut() {
                Some((j, m)) if *j == i => add_messages(m, &[sent, received]),
                _ => out.push((i, [sent, received])),
            }
        }
        out
    }

    fn index(&self, since_start: Duration) -> usize {
        let i = since_start.as_secs() as usize * BUCKETS_PER_SECOND
            + (since_start.subsec_millis() / 100) as usize;
        i.max(self.floor)
    }

    /// Failures by class in each interval of `per` buckets from `from` to before `to`
    /// (interval indices), only the intervals that had some, in order.
    pub fn failures_by_interval(
        &self,
        per: usize,
        from: usize,
        to: usize,
    ) -> Vec<(usize, ClassCounts)> {
        let mut out: Vec<(usize, ClassCounts)> = Vec::new();
        for &(bucket, class, n) in &self.failures {
            let i = bucket / per;
            if i < from || i >= to {
                continue;
            }
            // In bucket order, so an interval's entries are together.
            match out.last_mut() {
                Some((j, classes)) if *j == i => add_classes(classes, &[(class, n)]),
                _ => out.push((i, vec![(class, n)])),
            }
        }
        out
    }

    /// One past the last bucket written.
    pub fn end(&self) -> usize {
        self.first + self.buckets.len()
    }

    /// Buckets `from..to` (clamped to those written; those drained read as empty).
    pub fn span(&self, from: usize, to: usize) -> Vec<Bucket> {
        (from..to.min(self.end()))
            .map(|i| {
                i.checked_sub(self.first)
                    .and_then(|i| self.buckets.get(i))
                    .copied()
                    .unwrap_or_default()
            })
            .collect()
    }

    /// Forgets the buckets before `index` (handed to the collector), and keeps later writes
    /// out of them.
    pub fn drain_below(&mut self, index: usize) {
        self.floor = self.floor.max(index);
        let n = index.saturating_sub(self.first).min(self.buckets.len());
        self.buckets.drain(..n);
        self.first += n;
        let gone = self.failures.partition_point(|f| f.0 < index);
        self.failures.drain(..gone);
        let gone = self.messages.partition_point(|m| m.0 < index);
        self.messages.drain(..gone);
    }

    pub fn merge(&mut self, other: &Timeline) {
        // Drained timelines (a collector took their buckets) only keep their length.
        let first = match (self.buckets.is_empty(), other.buckets.is_empty()) {
            (true, _) => other.first,
            (false, true) => self.first,
            (false, false) => self.first.min(other.first),
        };
        let len = self.end().max(other.end());
        let mut merged = self.span(first, len);
        merged.resize(len - first, Bucket::default());
        for (a, b) in merged.iter_mut().zip(other.span(first, len)) {
            a.add(&b);
        }
        self.buckets = merged;
        self.first = first;
        self.failures.extend_from_slice(&other.failures);
        // Stable: each thread's entries stay in its order, and bucket order is kept.
        self.failures.sort_by_key(|f| f.0);
        self.messages.extend_from_slice(&other.messages);
        self.messages.sort_by_key(|m| m.0);
        self.floor = self.floor.max(other.floor);
    }
}

impl Bucket {
    pub fn add(&mut self, other: &Bucket) {
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.completed += other.completed;
        self.failed += other.failed;
        self.late = self.late.saturating_add(other.late);
        self.lag_max_us = self.lag_max_us.max(other.lag_max_us);
    }

    /// A request completed in this bucket was noticed `lag` after it was due (the same
    /// moment the phase's scheduler lag records).
    #[inline]
    pub fn noticed(&mut self, lag: Duration) {
        let us = u32::try_from(lag.as_micros()).unwrap_or(u32::MAX);
        self.lag_max_us = self.lag_max_us.max(us);
        if lag.as_nanos() > (crate::verdicts::LATE_SCHEDULER_P99_US * 1_000.0) as u128 {
            self.late = self.late.saturating_add(1);
        }
    }

    /// `buckets`' lateness: late requests summed, the worst lag (µs).
    pub fn lateness(buckets: &[Bucket]) -> (u64, u32) {
        buckets.iter().fold((0, 0), |(late, most), b| {
            (late + u64::from(b.late), most.max(b.lag_max_us))
        })
    }
}

/// The busiest 1-second window of traffic among buckets `from..to`, found as the buckets
/// pass by in order (summed over threads), holding one second of them: so that a day-long
/// run need not keep its timeline for one figure. A span shorter than a second counts as
/// one window of what there is.
#[derive(Debug, Clone)]
pub struct Busiest {
    to: usize,
    next: usize,
    window: std::collections::VecDeque<Bucket>,
    sum: (u64, u64),
    best: (u64, u64),
}

impl Busiest {
    pub fn new(from: usize, to: usize) -> Busiest {
        Busiest {
            to,
            next: from,
            window: std::collections::VecDeque::with_capacity(BUCKETS_PER_SECOND),
            sum: (0, 0),
            best: (0, 0),
        }
    }

    /// Bucket `index`, in increasing order of index (gaps are empty buckets). A window
    /// shorter than a second is a prefix of a longer one, so counting it changes no maximum.
    pub fn push(&mut self, index: usize, bucket: &Bucket) {
        if index < self.next || index >= self.to {
            return;
        }
        for gap in self.next..index.min(self.next + BUCKETS_PER_SECOND) {
            self.slide(gap, &Bucket::default());
        }
        self.slide(index, bucket);
    }

    fn slide(&mut self, index: usize, bucket: &Bucket) {
        self.next = index + 1;
        if self.window.len() == BUCKETS_PER_SECOND {
            let out = self.window.pop_front().unwrap_or_default();
            self.sum.0 -= out.bytes_sent;
            self.sum.1 -= out.bytes_received;
        }
        self.window.push_back(*bucket);
        self.sum.0 += bucket.bytes_sent;
        self.sum.1 += bucket.bytes_received;
        self.best.0 = self.best.0.max(self.sum.0);
        self.best.1 = self.best.1.max(self.sum.1);
    }

    pub fn result(&self) -> (u64, u64) {
        self.best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busiest_second_slides_over_buckets() {
        let mut t = Timeline::default();
        // 100 bytes in each of 30 buckets, plus a burst straddling seconds 1 and 2.
        for i in 0..30 {
            t.at(BUCKET * i).bytes_sent += 100;
        }
        t.at(Duration::from_millis(1_850)).bytes_sent += 5_000;
        t.at(Duration::from_millis(2_050)).bytes_sent += 5_000;
        let busiest_from = |from: usize| {
            let mut b = Busiest::new(from, usize::MAX);
            for (i, bucket) in t.span(0, t.end()).iter().enumerate() {
                b.push(i, bucket);
            }
            b.result()
        };
        // A window aligned to whole seconds would see only one half of the burst.
        assert_eq!(busiest_from(0).0, 10 * 100 + 10_000);
        // Starting after the burst, only the steady traffic is left.
        assert_eq!(busiest_from(21).0, 9 * 100);
        assert_eq!(busiest_from(99), (0, 0));
    }
}
