//! The statistics behind `loadlab compare A B`: is the test arm B better, worse, the same or
//! equivalent to the control arm A, judged from repeated runs of each (benchstat-style).
//!
//! # Layout
//!
//! - [`compare`](mod@compare): the entry points, [`compare()`] for one metric and
//!   [`compare_many`] for several with Holm adjustment. Works on log values, so every
//!   difference is a ratio test/control.
//! - [`verdict`]: the rules that turn a p-value and an interval into a [`Verdict`], and how
//!   many runs an inconclusive comparison needs.
//! - [`describe`](mod@describe): verdicts in plain words.
//! - [`mann_whitney`](mod@mann_whitney): the exact two-sided Mann-Whitney U test, with ties
//!   handled exactly, and the smallest p-value a number of runs can give.
//! - [`hodges_lehmann`](mod@hodges_lehmann): the shift estimate and its exact
//!   distribution-free interval.
//! - [`holm`](mod@holm): Holm-Bonferroni adjustment.
//! - [`null_distribution`]: exact counts of the Mann-Whitney statistic's null distribution.
//! - [`normal`]: the normal tail for the large-sample fallback (over 100 runs in total).
//! - [`arm`]: descriptive summary of one arm (median, range, noise).
//!
//! Nothing here reads files, knows metric names or prints: the CLI gathers runs and words the
//! metric's sense ("faster", "higher").
//!
//! ```
//! use loadlab_compare::{compare, Better, Options, Verdict};
//!
//! // p99 latency in ms from five runs of each arm.
//! let a = [10.0, 10.1, 9.9, 10.2, 9.8];
//! let b = [8.8, 8.9, 8.7, 9.0, 8.6];
//! let c = compare(&a, &b, Better::Lower, &Options::default()).unwrap();
//! assert!(matches!(c.verdict, Verdict::Better { .. }));
//! assert_eq!(c.describe("faster", "slower"), "faster by 12% [9.2%, 15%] (p=0.0079)");
//! ```

pub mod arm;
pub mod compare;
pub mod describe;
pub mod hodges_lehmann;
pub mod holm;
pub mod mann_whitney;
pub mod normal;
pub mod null_distribution;
pub mod verdict;

pub use arm::Arm;
pub use compare::{compare, compare_many, Better, CompareError, MetricComparison, Options};
pub use hodges_lehmann::{hodges_lehmann, HodgesLehmann};
pub use holm::holm;
pub use mann_whitney::{mann_whitney, min_attainable_p, MannWhitney};
pub use verdict::{runs_needed, Verdict};
