//! Shards: one of N loadlab processes (usually on N machines), each running an equal part of
//! one planned load, all started at one wall-clock instant.
//!
//! - the arithmetic of a share: connections and request counts dealt out with the remainder
//!   going to the first shards, and the open loop's slot in the global arrival sequence
//!   ([`Shard::slot`]), so that N shards together send exactly the unsharded schedule;
//! - `--start-at`: parsing (RFC 3339 or `@UNIX_SECONDS`), the bounds, and the wait itself;
//! - what the kernel says about this clock's error (`adjtimex`), recorded with the result
//!   because a common start is only as common as the clocks are;
//! - the plan's digest, so that `loadlab merge` can refuse shards of different runs.
//!
//! It must not decide how shards' results merge: that is `loadlab-result`'s `shards` module.

use crate::config::{Model, RunConfig, Stop};
use loadlab_result::ShardInfo;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The most shards one run may have: far beyond any fleet, low enough that a typo such as
/// `1/30000000` is caught.
pub const MAX_SHARDS: u32 = 10_000;
/// The furthest ahead `--start-at` may be: a day. Further is almost surely a mistake.
pub const MAX_START_AHEAD: Duration = Duration::from_secs(24 * 3600);
/// How far in the past `--start-at` may be and still start (at once): a second, for the
/// shard that got its command a little late. Later than that the shards cannot start
/// together any more, and the run is refused.
pub const MAX_START_LATE: Duration = Duration::from_secs(1);

/// Shard `index` (from 0) of `count`; on the command line `--shard I/N` with I from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Parses `I/N`, 1 <= I <= N.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || {
            format!(
                "`{text}` is not a shard: write I/N with 1 <= I <= N, e.g. 2/3 for the second of \
                 three"
            )
        };
        let (i, n) = text.trim().split_once('/').ok_or_else(bad)?;
        let i: u32 = i.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        if i == 0 || n == 0 || i > n {
            return Err(bad());
        }
        if n > MAX_SHARDS {
            return Err(format!(
                "{n} shards is more than loadlab allows ({MAX_SHARDS})"
            ));
        }
        Ok(Shard {
            index: i - 1,
            count: n,
        })
    }

    /// This shard's part of `total` things dealt out in turn: the first `total % N` shards
    /// get one more.
    pub fn share(&self, total: u64) -> u64 {
        let n = u64::from(self.count);
        total / n + u64::from(u64::from(self.index) < total % n)
    }

    /// Worker thread `thread` of `threads` of this shard: its slot in the whole run's arrival
    /// sequence, and how many slots there are (see [`crate::schedule`]).
    pub fn slot(&self, thread: usize, threads: usize) -> (usize, usize) {
        let n = self.count as usize;
        (self.index as usize + n * thread, n * threads)
    }

    /// The shard's `local`-th connection, numbered across the whole run (a staged closed loop
    /// activates connections by that number, so the shards together follow the stages).
    pub fn global_connection(&self, local: usize) -> usize {
        self.index as usize + self.count as usize * local
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.count)
    }
}

/// A shard's place in its run, as validated: what the engine and the result need.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardPlan {
    pub shard: Shard,
    /// `--start-at`: when every shard starts.
    pub start_at: Option<SystemTime>,
    /// The whole run's closed-loop connections (or the open loop's per-shard cap) and stop,
    /// before this shard's share was taken.
    pub whole_connections: usize,
    pub whole_stop: Stop,
    /// A digest of everything the shards of one run share (see [`plan_id`]).
    pub plan_id: String,
}

/// Parses `--start-at`: an RFC 3339 time (`2026-05-01T12:00:00Z`, `...T14:00:00.5+02:00`) or
/// `@UNIX_SECONDS` (fractions allowed, as `date +@%s.%N` prints).
pub fn parse_start_at(text: &str) -> Result<SystemTime, String> {
    let text = text.trim();
    let bad = || {
        format!(
            "`{text}` is not a time: give RFC 3339 (2026-05-01T12:00:00Z) or @UNIX_SECONDS \
             (@1777636800)"
        )
    };
    if let Some(secs) = text.strip_prefix('@') {
        let secs: f64 = secs.parse().map_err(|_| bad())?;
        if !(secs.is_finite() && secs >= 0.0) {
            return Err(bad());
        }
        return Ok(UNIX_EPOCH + Duration::from_secs_f64(secs));
    }
    // humantime reads UTC times; a numeric offset is taken off by hand.
    let (base, offset_s) = match text.len().checked_sub(6).map(|i| text.split_at(i)) {
        Some((base, off))
            if (off.starts_with('+') || off.starts_with('-')) && off.as_bytes()[3] == b':' =>
        {
            let h: i64 = off[1..3].parse().map_err(|_| bad())?;
            let m: i64 = off[4..6].parse().map_err(|_| bad())?;
            let sign = if off.starts_with('-') { -1 } else { 1 };
            (format!("{base}Z"), sign * (h * 3600 + m * 60))
        }
        _ => (text.to_string(), 0),
    };
    let utc = humantime::parse_rfc3339(&base).map_err(|_| bad())?;
    let shifted = if offset_s >= 0 {
        utc.checked_sub(Duration::from_secs(offset_s as u64))
    } else {
        utc.checked_add(Duration::from_secs((-offset_s) as u64))
    };
    shifted.ok_or_else(bad)
}

/// Refuses a start time more than [`MAX_START_LATE`] ago or [`MAX_START_AHEAD`] ahead of `now`.
pub fn check_start_at(at: SystemTime, now: SystemTime) -> Result<(), String> {
    match at.duration_since(now) {
        Ok(ahead) if ahead > MAX_START_AHEAD => Err(format!(
            "{} is {} ahead, more than loadlab waits (24h); pick a nearer time",
            humantime::format_rfc3339_millis(at),
            humantime::format_duration(Duration::from_secs(ahead.as_secs()))
        )),
        Ok(_) => Ok(()),
        Err(past) if past.duration() > MAX_START_LATE => Err(format!(
            "{} passed {:.1} s ago: the shards can no longer start together; pick a time a few \
             seconds ahead of the slowest shard's launch (e.g. @$(( $(date +%s) + 10 )))",
            humantime::format_rfc3339_millis(at),
            past.duration().as_secs_f64()
        )),
        Err(_) => Ok(()),
    }
}

/// Sleeps until `at` by this machine's clock, or until `stopped()` says so. Sleeps in short
/// steps (so a Ctrl-C is seen) and spins the last 2 ms, so that the start is within tens of
/// microseconds of `at` rather than a scheduler's wake-up later.
pub fn wait_until(at: SystemTime, stopped: impl Fn() -> bool) {
    const SPIN: Duration = Duration::from_millis(2);
    const STEP: Duration = Duration::from_millis(50);
    loop {
        let Ok(left) = at.duration_since(SystemTime::now()) else {
            return;
        };
        if stopped() || left.is_zero() {
            return;
        }
        if left > SPIN {
            std::thread::sleep((left - SPIN).min(STEP));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// What the kernel says about this machine's clock: whether NTP (or chrony, or PTP) keeps it
/// synchronised, and its estimated error, from `adjtimex` (read only: mode 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockReading {
    pub synced: bool,
    /// The estimated error, seconds; `None` when the clock is not synchronised.
    pub error_s: Option<f64>,
}

pub fn read_clock() -> Option<ClockReading> {
    // SAFETY: a zeroed timex with modes 0 only reads the kernel's clock state.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    let state = unsafe { libc::adjtimex(&mut tx) };
    if state < 0 {
        return None;
    }
    let synced = state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0;
    Some(ClockReading {
        synced,
        error_s: synced.then(|| tx.esterror as f64 / 1e6),
    })
}

/// A digest of what the shards of one run share: the request, the whole load and its timing,
/// the shard count and the start time. Two results with different digests are shards of
/// different runs. FNV-1a over a canonical text: stable across runs and machines (not
/// `std`'s hasher, which is seeded per process).
pub fn plan_id(config: &RunConfig, plan: &ShardPlan) -> String {
    let model = match &config.model {
        Model::Closed { stages } => format!("closed {stages:?}"),
        Model::Open { profile, arrival } => format!("open {profile:?} {arrival:?}"),
    };
    let start = plan
        .start_at
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let canonical = format!(
        "{}\n{}\n{:?}\n{:?}\n{:?}\n{model}\n{}\n{:?}\n{:?}\n{:?}\n{:?}\n{}\n{:?}\n{:?}\n{}\n{}\n{}\n{start}",
        config.method,
        config.url.original,
        config.headers,
        config.paths,
        fnv1a(&config.body),
        plan.whole_connections,
        plan.whole_stop,
        config.warmup,
        config.timeout,
        config.connect_timeout,
        config.keepalive,
        config.interval,
        config.tick,
        config.http2,
        config.streams,
        plan.shard.count,
    );
    format!("{:016x}", fnv1a(canonical.as_bytes()))
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A shard time as results write it: RFC 3339 with microseconds.
pub fn format_rfc3339_micros(t: SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The result's record of this shard: its place, the plan it belongs to, and when it really
/// started against when it was told to.
pub fn shard_info(plan: &ShardPlan, whole_plan: String, started: SystemTime) -> ShardInfo {
    let clock = read_clock();
    ShardInfo {
        index: plan.shard.index + 1,
        count: plan.shard.count,
        plan_id: plan.plan_id.clone(),
        whole_plan,
        start_at: plan.start_at.map(format_rfc3339_micros),
        start_at_unix_s: plan.start_at.map(unix_s),
        started_wall: format_rfc3339_micros(started),
        started_unix_s: unix_s(started),
        clock_synced: clock.map(|c| c.synced),
        clock_error_s: clock.and_then(|c| c.error_s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_deal_out_the_remainder_first() {
        let s = Shard::parse("2/3").unwrap();
        assert_eq!(s, Shard { index: 1, count: 3 });
        assert_eq!(s.to_string(), "2/3");
        for bad in [
            "", "3", "0/3", "4/3", "1/0", "a/b", "1/3/4", "-1/3", "1/20000",
        ] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        // 10 connections over 4 shards: 3, 3, 2, 2.
        let shares: Vec<u64> = (1..=4)
            .map(|i| Shard::parse(&format!("{i}/4")).unwrap().share(10))
            .collect();
        assert_eq!(shares, [3, 3, 2, 2]);
        assert_eq!(shares.iter().sum::<u64>(), 10);
        assert_eq!(Shard::parse("3/3").unwrap().slot(1, 2), (5, 6));
        assert_eq!(Shard::parse("2/3").unwrap().global_connection(4), 13);
    }

    #[test]
    fn start_times_parse_in_either_form_and_are_bounded() {
        let at = parse_start_at("@1777636800").unwrap();
        assert_eq!(at, UNIX_EPOCH + Duration::from_secs(1_777_636_800));
        assert_eq!(parse_start_at("2026-05-01T12:00:00Z").unwrap(), at);
        assert_eq!(parse_start_at("2026-05-01T14:00:00+02:00").unwrap(), at);
        assert_eq!(parse_start_at("2026-05-01T07:30:00-04:30").unwrap(), at);
        assert_eq!(
            parse_start_at("@1777636800.25").unwrap(),
            at + Duration::from_millis(250)
        );
        for bad in ["", "tomorrow", "@x", "@-5", "2026-13-01T00:00:00Z"] {
            assert!(parse_start_at(bad).is_err(), "{bad}");
        }
        let now = at;
        assert!(check_start_at(at + Duration::from_secs(5), now).is_ok());
        assert!(check_start_at(at - Duration::from_millis(500), now).is_ok());
        let late = check_start_at(at - Duration::from_secs(3), now).unwrap_err();
        assert!(late.contains("passed 3.0 s ago"), "{late}");
        let far = check_start_at(at + Duration::from_secs(25 * 3600), now).unwrap_err();
        assert!(far.contains("24h"), "{far}");
    }

    #[test]
    fn the_wait_ends_at_the_time_or_when_stopped() {
        // Late by a scheduler tick or two (the last 2 ms are spun), plus whatever the machine
        // held this thread off its CPU meanwhile, which the kernel counts (its run-queue
        // wait): a bound that holds on a busy machine too, where a fixed 50 ms did not.
        let stalled = || crate::sys::run_queue_wait().expect("the kernel's run-queue wait");
        let at = SystemTime::now() + Duration::from_millis(30);
        let before = stalled();
        wait_until(at, || false);
        let late = SystemTime::now().duration_since(at).unwrap();
        let stalls = stalled() - before;
        assert!(
            late < Duration::from_millis(50) + stalls,
            "{late:?} late, {stalls:?} held off the CPU"
        );
        // A stop ends the wait at once: well before the 60 s it was for (half of it bounds
        // it, where "under 1 s" was a guess at the machine).
        let t0 = std::time::Instant::now();
        wait_until(SystemTime::now() + Duration::from_secs(60), || true);
        assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    }
}
