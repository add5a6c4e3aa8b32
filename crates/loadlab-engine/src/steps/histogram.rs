//! A step's response times, exactly as the result's HdrHistogram holds them (1 ns to one
//! hour, 3 significant digits), in memory sized by what was recorded rather than by the
//! range. A full histogram of those bounds is 33,792 counters, 264 KiB; a scenario keeps two
//! per step in every worker thread, so 20,000 steps took 21 GB before a request was sent
//! (issue 46 item 4). Here a step that recorded nothing holds no heap, one that recorded a
//! few thousand distinct values a sorted list of (value, count), 16 bytes each, and only a
//! step past [`SPARSE_MAX`] distinct values an array of counters, grown to the largest value
//! it recorded (about 90 KiB when that is a millisecond).
//!
//! Exactness: a value is kept as the lowest value of its HdrHistogram bucket, clamped as
//! `saturating_record` clamps, so [`StepHistogram::to_histogram`] gives the very histogram
//! that recording every value into the result's bounds would have (the tests compare them,
//! encoding included). It must not round, drop or bucket differently from that.

use hdrhistogram::Histogram;
use loadlab_result::histogram::{new_histogram, HIST_MAX_NS};
use std::sync::LazyLock;

/// Distinct values a step keeps as a list before it switches to an array of counters: 2,048
/// of 16 bytes, 32 KiB, about a third of the array a millisecond's range needs. A step of a
/// large scenario rarely gets that far (each sees a small share of the requests); a step
/// that does is a busy one, where the array's constant-time count pays.
pub const SPARSE_MAX: usize = 2_048;

/// The largest value the result's histograms count as it is: their last bucket ends at the
/// first power of two times their 2,048 sub-buckets above [`HIST_MAX_NS`], minus one.
/// `saturating_record` counts anything above it as [`HIST_MAX_NS`].
pub const TOP_NS: u64 = {
    let mut top = 2_048u64;
    while top <= HIST_MAX_NS {
        top *= 2;
    }
    top - 1
};

/// The result's bucket layout, for `lowest_equivalent` (which depends on the layout, not on
/// the counts): bounds 1 to 2 at 3 digits have the same buckets as 1 ns to one hour, and 16 KiB
/// of counters instead of 264 KiB.
static LAYOUT: LazyLock<Histogram<u64>> =
    LazyLock::new(|| Histogram::new_with_bounds(1, 2, 3).expect("static histogram bounds"));

/// What `saturating_record` would count `value` as, in the result's bounds.
fn clamp(value_ns: u64) -> u64 {
    if value_ns > TOP_NS {
        HIST_MAX_NS
    } else {
        value_ns
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Counts {
    /// (lowest value of the bucket, count), ascending by value, at most [`SPARSE_MAX`].
    Sparse(Vec<(u64, u64)>),
    /// Past [`SPARSE_MAX`] distinct values: an auto-resizing histogram of the same layout.
    Dense(Box<Histogram<u64>>),
}

/// A step's response times; see the module comment.
#[derive(Debug, Clone, PartialEq)]
pub struct StepHistogram {
    counts: Counts,
}

impl Default for StepHistogram {
    fn default() -> Self {
        StepHistogram {
            counts: Counts::Sparse(Vec::new()),
        }
    }
}

impl StepHistogram {
    /// Counts one value, as `Histogram::saturating_record` does in the result's bounds.
    pub fn saturating_record(&mut self, value_ns: u64) {
        self.record_n(value_ns, 1);
    }

    fn record_n(&mut self, value_ns: u64, n: u64) {
        let value = clamp(value_ns);
        match &mut self.counts {
            Counts::Sparse(list) => {
                let key = LAYOUT.lowest_equivalent(value);
                match list.binary_search_by_key(&key, |e| e.0) {
                    Ok(i) => list[i].1 = list[i].1.saturating_add(n),
                    Err(i) if list.len() < SPARSE_MAX => list.insert(i, (key, n)),
                    Err(_) => {
                        self.densify();
                        self.record_n(value, n);
                    }
                }
            }
            Counts::Dense(h) => {
                // `value` is at most TOP_NS, which the layout reaches by resizing: on a 64-bit
                // target the resize cannot fail.
                h.record_n(value, n)
                    .expect("a clamped value fits the result's bounds");
            }
        }
    }

    /// From the list to an array of counters.
    fn densify(&mut self) {
        if let Counts::Sparse(list) = &self.counts {
            let mut h = Histogram::new_with_bounds(1, 2, 3).expect("static histogram bounds");
            h.auto(true);
            for &(value, n) in list {
                h.record_n(value, n)
                    .expect("a clamped value fits the result's bounds");
            }
            self.counts = Counts::Dense(Box::new(h));
        }
    }

    /// Adds another step histogram's counts (another thread's, for the same step).
    pub fn merge(&mut self, other: &StepHistogram) {
        match (&mut self.counts, &other.counts) {
            (Counts::Sparse(a), Counts::Sparse(b)) => {
                let merged = merge_sorted(a, b);
                if merged.len() <= SPARSE_MAX {
                    *a = merged;
                } else {
                    *a = Vec::new();
                    self.densify();
                    for &(value, n) in &merged {
                        self.record_n(value, n);
                    }
                }
            }
            (_, Counts::Sparse(b)) => {
                for &(value, n) in b {
                    self.record_n(value, n);
                }
            }
            (_, Counts::Dense(b)) => {
                self.densify();
                if let Counts::Dense(a) = &mut self.counts {
                    a.add(b.as_ref())
                        .expect("an auto-resizing histogram takes any count of the same layout");
                }
            }
        }
    }

    /// The histogram the result carries: the result's bounds, every count as recorded.
    pub fn to_histogram(&self) -> Histogram<u64> {
        let mut h = new_histogram();
        match &self.counts {
            Counts::Sparse(list) => {
                for &(value, n) in list {
                    h.saturating_record_n(value, n);
                }
            }
            Counts::Dense(d) => h
                .add(d.as_ref())
                .expect("values up to TOP_NS fit the result's bounds"),
        }
        h
    }

    pub fn is_empty(&self) -> bool {
        match &self.counts {
            Counts::Sparse(list) => list.is_empty(),
            Counts::Dense(h) => h.is_empty(),
        }
    }

    /// Bytes held on the heap for the counts: what a step costs, for the tests' bound.
    pub fn heap_bytes(&self) -> usize {
        match &self.counts {
            Counts::Sparse(list) => list.capacity() * std::mem::size_of::<(u64, u64)>(),
            Counts::Dense(h) => {
                std::mem::size_of::<Histogram<u64>>()
                    + h.distinct_values() * std::mem::size_of::<u64>()
            }
        }
    }
}

/// Two ascending (value, count) lists as one, counts of the same value added.
fn merge_sorted(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push((a[i].0, a[i].1.saturating_add(b[j].1)));
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_result::{encode_histogram, LatencySummary};

    /// xorshift64: the same values on every run.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// Values across the whole range, the edges of the bounds among them.
    fn values(rng: &mut Rng, n: usize) -> Vec<u64> {
        let edges = [
            0,
            1,
            2_047,
            2_048,
            HIST_MAX_NS - 1,
            HIST_MAX_NS,
            HIST_MAX_NS + 1,
            TOP_NS - 1,
            TOP_NS,
            TOP_NS + 1,
            u64::MAX,
        ];
        let mut out = edges.to_vec();
        for _ in 0..n {
            // Below 2^(bits + 1), bits uniform: from nanoseconds to hours, and now and then
            // beyond the bounds.
            let bits = rng.next() % 45;
            out.push(rng.next() >> (63 - bits));
        }
        out
    }

    fn reference(values: &[u64]) -> Histogram<u64> {
        let mut h = new_histogram();
        for &v in values {
            h.saturating_record(v);
        }
        h
    }

    fn step(values: &[u64]) -> StepHistogram {
        let mut h = StepHistogram::default();
        for &v in values {
            h.saturating_record(v);
        }
        h
    }

    #[test]
    fn the_largest_value_counted_as_it_is() {
        let mut h = new_histogram();
        assert!(h.record(TOP_NS).is_ok());
        assert!(h.record(TOP_NS + 1).is_err());
    }

    /// Few values (a list) and many (an array): the result's histogram, its encoding and its
    /// summary are those of recording every value into the result's bounds.
    #[test]
    fn the_histogram_is_the_one_the_result_bounds_give() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for n in [0, 1, 10, 1_000, SPARSE_MAX, 20_000] {
            let values = values(&mut rng, n);
            let want = reference(&values);
            let got = step(&values);
            // Both forms are compared: a list up to a thousand values, an array past 20,000
            // (random values repeat a bucket now and then, so SPARSE_MAX itself may be either).
            let dense = matches!(got.counts, Counts::Dense(_));
            assert!(n < 20_000 || dense, "{n} values");
            assert!(n > 1_000 || !dense, "{n} values");
            let got = got.to_histogram();
            assert_eq!(got, want, "{n} values");
            assert_eq!(
                encode_histogram(&got),
                encode_histogram(&want),
                "{n} values"
            );
            assert_eq!(
                LatencySummary::from_histogram(&got),
                LatencySummary::from_histogram(&want)
            );
        }
    }

    /// Threads merged in any mix of lists and arrays: the merge of their histograms.
    #[test]
    fn merged_threads_equal_the_merged_histograms() {
        let mut rng = Rng(17);
        for (n, m) in [
            (5, 7),
            (1_500, 1_500),
            (3_000, 10),
            (10, 3_000),
            (4_000, 4_000),
        ] {
            let (a, b) = (values(&mut rng, n), values(&mut rng, m));
            let mut want = reference(&a);
            want.add(reference(&b)).unwrap();
            let mut got = step(&a);
            got.merge(&step(&b));
            assert_eq!(got.to_histogram(), want, "{n} and {m} values");
            let mut empty = StepHistogram::default();
            empty.merge(&step(&a));
            assert_eq!(empty.to_histogram(), reference(&a));
        }
    }

    /// What a step costs: nothing until it records, 16 bytes a distinct value after, and the
    /// array only past SPARSE_MAX.
    #[test]
    fn memory_follows_what_was_recorded() {
        let mut h = StepHistogram::default();
        assert_eq!(h.heap_bytes(), 0);
        for v in 0..100u64 {
            h.saturating_record(1_000_000 + v * 1_000);
        }
        assert!(h.heap_bytes() <= 128 * 16, "{} bytes", h.heap_bytes());
        assert!(h.heap_bytes() < new_histogram().distinct_values() * 8 / 100);
    }
}
