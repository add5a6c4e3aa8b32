//! How far ahead a fleet's run tells its generators to start: long enough for every
//! `POST /v1/loads`, measured on the fleet's previous run rather than fixed.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How far ahead of now the shards of a fleet's first run are told to start: time for every
/// `POST /v1/loads`. A later run of the same fleet (an experiment's next run, a capacity
/// search's next probe) knows how long its predecessor took to hand out its shards and is told
/// [`lead_after`] it instead: a quarter of a second on one machine or a LAN, not 1.5 s a run.
const FIRST_LEAD: Duration = Duration::from_millis(1500);
/// The least lead of a later run: a generator that takes longer than the last one did (a
/// busy host) still starts on time.
const MIN_LEAD: Duration = Duration::from_millis(250);
/// The most: an agent refuses a start more than a minute ahead.
const MAX_LEAD: Duration = Duration::from_secs(30);

/// The lead of a run whose fleet last took `posting` to hand out its shards: three times that,
/// and 100 ms, within [`MIN_LEAD`] and [`MAX_LEAD`]. A run that still starts a shard late is
/// not hidden: the shards' start spread is measured and named past 10 ms
/// (`loadlab_result::shards`), and the next run's lead grows with it.
pub(crate) fn lead_after(posting: Option<Duration>) -> Duration {
    match posting {
        None => FIRST_LEAD,
        Some(p) => (p * 3 + Duration::from_millis(100)).clamp(MIN_LEAD, MAX_LEAD),
    }
}

/// How long a fleet's last run took to hand out its shards (nanoseconds; 0 before its first
/// run). A measurement kept between runs, not part of what a fleet is: every two are equal,
/// and a clone shares it (an experiment hands each run a clone of its fleet).
#[derive(Debug, Default, Clone)]
pub(crate) struct Posting(Arc<std::sync::atomic::AtomicU64>);

impl Posting {
    pub(crate) fn last(&self) -> Option<Duration> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    pub(super) fn record(&self, took: Duration) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.0.store(ns, Ordering::Relaxed);
    }
}

impl PartialEq for Posting {
    fn eq(&self, _: &Posting) -> bool {
        true
    }
}
