//! One clock for two hosts: places the agent's timestamps on the generator's timeline.
//!
//! The agent stamps its samples with its own clock. The generator estimates the offset
//! between that clock and its own with NTP's four timestamps: it stamps `t1` when a request
//! leaves, the agent stamps `t2` when it arrives and `t3` when the answer leaves, and the
//! generator stamps `t4` when the answer is back. Then
//!
//! - offset = ((t2 - t1) + (t3 - t4)) / 2 (the agent's clock minus the generator's),
//! - delay = (t4 - t1) - (t3 - t2) (the round trip spent on the wire),
//!
//! and the offset is wrong by at most delay / 2, whatever the asymmetry of the two paths.
//! Of a burst of exchanges only the one with the smallest delay is kept (NTP's clock filter,
//! Cristian's algorithm): queueing only ever adds delay, so the fastest exchange is the
//! one least disturbed. Two free-running clocks drift (up to ~15 ppm, 9 ms in ten minutes),
//! so long runs estimate again; a timestamp is mapped with the offset interpolated between
//! the estimates around it.
//!
//! Pure arithmetic on nanoseconds: no I/O, no clock read here except [`LocalClock`], whose
//! readings the caller passes in. Tested with synthetic exchanges of known offset.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The generator's clock: unix nanoseconds read once from the wall clock, then advanced by
/// the monotonic clock, so that a step of the wall clock during a run (NTP, a person)
/// cannot move samples on the timeline.
#[derive(Debug, Clone, Copy)]
pub struct LocalClock {
    anchor: Instant,
    anchor_unix_ns: i64,
}

impl Default for LocalClock {
    fn default() -> Self {
        LocalClock::new()
    }
}

impl LocalClock {
    pub fn new() -> LocalClock {
        let anchor = Instant::now();
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        LocalClock {
            anchor,
            anchor_unix_ns: unix.as_nanos() as i64,
        }
    }

    /// Now, in unix nanoseconds on this clock.
    pub fn now_ns(&self) -> i64 {
        self.ns_of(Instant::now())
    }

    /// `at` in unix nanoseconds on this clock.
    pub fn ns_of(&self, at: Instant) -> i64 {
        if at >= self.anchor {
            self.anchor_unix_ns + (at - self.anchor).as_nanos() as i64
        } else {
            self.anchor_unix_ns - (self.anchor - at).as_nanos() as i64
        }
    }

    /// The instant that `ns` (unix nanoseconds on this clock) names.
    pub fn instant_of(&self, ns: i64) -> Instant {
        let d = ns - self.anchor_unix_ns;
        if d >= 0 {
            self.anchor + Duration::from_nanos(d as u64)
        } else {
            self.anchor
                .checked_sub(Duration::from_nanos(d.unsigned_abs()))
                .unwrap_or(self.anchor)
        }
    }
}

/// One request and its answer, in nanoseconds: `t1`, `t4` on the generator's clock, `t2`,
/// `t3` on the agent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchange {
    pub t1_ns: i64,
    pub t2_ns: i64,
    pub t3_ns: i64,
    pub t4_ns: i64,
}

impl Exchange {
    /// The agent's clock minus the generator's, as this exchange sees it.
    pub fn offset_ns(&self) -> i64 {
        ((self.t2_ns - self.t1_ns) + (self.t3_ns - self.t4_ns)) / 2
    }

    /// The time spent on the wire, both ways (never negative: clamps a broken exchange).
    pub fn delay_ns(&self) -> i64 {
        ((self.t4_ns - self.t1_ns) - (self.t3_ns - self.t2_ns)).max(0)
    }
}

/// An offset and how far from the truth it may be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The agent's clock minus the generator's.
    pub offset_ns: i64,
    /// At most this far from the true offset: half the chosen exchange's delay.
    pub uncertainty_ns: i64,
    /// When it was measured, on the generator's clock (the exchange's midpoint).
    pub at_ns: i64,
    /// The exchanges it was chosen from.
    pub exchanges: usize,
}

impl Estimate {
    /// The exchange with the smallest delay; `None` for an empty burst.
    pub fn from_burst(burst: &[Exchange]) -> Option<Estimate> {
        let best = burst.iter().min_by_key(|e| e.delay_ns())?;
        Some(Estimate {
            offset_ns: best.offset_ns(),
            uncertainty_ns: (best.delay_ns() + 1) / 2,
            at_ns: best.t1_ns + (best.t4_ns - best.t1_ns) / 2,
            exchanges: burst.len(),
        })
    }
}

/// The estimates of a run, in the order they were made, mapping agent time to generator
/// time.
#[derive(Debug, Clone, Default)]
pub struct ClockMap {
    estimates: Vec<Estimate>,
}

impl ClockMap {
    pub fn new(first: Estimate) -> ClockMap {
        ClockMap {
            estimates: vec![first],
        }
    }

    pub fn push(&mut self, estimate: Estimate) {
        self.estimates.push(estimate);
        self.estimates.sort_by_key(|e| e.at_ns);
    }

    pub fn estimates(&self) -> &[Estimate] {
        &self.estimates
    }

    /// The offset at generator time `at_ns`: the nearest estimate before the first or after
    /// the last, linear between two.
    pub fn offset_at(&self, at_ns: i64) -> Option<i64> {
        let es = &self.estimates;
        let first = es.first()?;
        if at_ns <= first.at_ns || es.len() == 1 {
            return Some(first.offset_ns);
        }
        let last = es.last()?;
        if at_ns >= last.at_ns {
            return Some(last.offset_ns);
        }
        let i = es.partition_point(|e| e.at_ns <= at_ns);
        let (a, b) = (&es[i - 1], &es[i]);
        let span = (b.at_ns - a.at_ns).max(1) as f64;
        let w = (at_ns - a.at_ns) as f64 / span;
        Some(a.offset_ns + ((b.offset_ns - a.offset_ns) as f64 * w).round() as i64)
    }

    /// An agent timestamp on the generator's clock.
    pub fn to_local(&self, agent_ns: i64) -> Option<i64> {
        // The offset is a function of generator time; a first guess with the agent's own
        // reading is within the offset's drift of the right one.
        let guess = agent_ns - self.offset_at(agent_ns)?;
        Some(agent_ns - self.offset_at(guess)?)
    }

    /// The largest uncertainty of any estimate.
    pub fn worst_uncertainty_ns(&self) -> Option<i64> {
        self.estimates.iter().map(|e| e.uncertainty_ns).max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An exchange against an agent whose clock is `offset` ahead, with `up` and `down`
    /// nanoseconds on the wire and `work` spent in the agent.
    fn exchange(t1: i64, offset: i64, up: i64, work: i64, down: i64) -> Exchange {
        let t2 = t1 + up + offset;
        let t3 = t2 + work;
        let t4 = t3 - offset + down;
        Exchange {
            t1_ns: t1,
            t2_ns: t2,
            t3_ns: t3,
            t4_ns: t4,
        }
    }

    #[test]
    fn a_symmetric_exchange_gives_the_exact_offset() {
        for offset in [0, 2_500_000_000, -7_000_000, 1] {
            let e = exchange(1_000_000, offset, 50_000, 10_000, 50_000);
            assert_eq!(e.offset_ns(), offset);
            assert_eq!(e.delay_ns(), 100_000);
        }
    }

    #[test]
    fn an_asymmetric_exchange_is_wrong_by_at_most_half_its_delay() {
        let offset = 123_456_789;
        for (up, down) in [(10_000, 90_000), (90_000, 10_000), (0, 100_000)] {
            let e = exchange(0, offset, up, 5_000, down);
            let err = (e.offset_ns() - offset).abs();
            assert!(err <= e.delay_ns() / 2, "{up} {down}: error {err}");
        }
    }

    #[test]
    fn the_burst_keeps_the_fastest_exchange() {
        let offset = -3_000_000;
        // Queueing adds delay on one side only: the slow exchanges are the most wrong.
        let burst = [
            exchange(0, offset, 40_000, 5_000, 4_000_000),
            exchange(10_000_000, offset, 50_000, 5_000, 60_000),
            exchange(20_000_000, offset, 3_000_000, 5_000, 40_000),
        ];
        let e = Estimate::from_burst(&burst).unwrap();
        assert_eq!(e.exchanges, 3);
        assert_eq!(e.uncertainty_ns, 55_000);
        assert!((e.offset_ns - offset).abs() <= 5_000, "{e:?}");
        assert!(Estimate::from_burst(&[]).is_none());
    }

    #[test]
    fn drift_is_interpolated_between_estimates() {
        let mut map = ClockMap::new(Estimate {
            offset_ns: 1_000_000,
            uncertainty_ns: 10_000,
            at_ns: 0,
            exchanges: 8,
        });
        map.push(Estimate {
            offset_ns: 1_009_000,
            uncertainty_ns: 20_000,
            at_ns: 600_000_000_000,
            exchanges: 8,
        });
        assert_eq!(map.offset_at(-5), Some(1_000_000));
        assert_eq!(map.offset_at(300_000_000_000), Some(1_004_500));
        assert_eq!(map.offset_at(900_000_000_000), Some(1_009_000));
        // An agent reading half-way maps back with the half-way offset.
        assert_eq!(
            map.to_local(300_000_000_000 + 1_004_500),
            Some(300_000_000_000)
        );
        assert_eq!(map.worst_uncertainty_ns(), Some(20_000));
    }

    #[test]
    fn the_local_clock_round_trips_instants() {
        let clock = LocalClock::new();
        let now = Instant::now();
        let ns = clock.ns_of(now);
        let back = clock.instant_of(ns);
        let diff = if back > now { back - now } else { now - back };
        assert!(diff < Duration::from_micros(1));
        let earlier = now - Duration::from_millis(5);
        assert_eq!(clock.ns_of(earlier), ns - 5_000_000);
    }
}
