//! Load profiles and arrival schedules: pure arithmetic, no I/O and no clock.
//!
//! A [`Profile`] is a list of stages, each holding a level (a request rate, or in a closed
//! loop a connection count) constant or ramping linearly: `10s:1000, 30s:1000->5000`.
//! A [`Schedule`] turns a rate profile into the exact intended send time of every request,
//! as an offset from the start of the run. Both arrival processes use the same idea: with
//! N(t) the expected number of arrivals by time t, the k-th arrival is at N⁻¹(x_k), where
//! x_k = k for evenly spaced arrivals and x_k = a sum of k unit exponentials for Poisson
//! arrivals (the time-rescaling theorem), so ramps work the same way for both.
//!
//! Threads, and shards of a run spread over several loadlab processes, each take a share (a
//! *slot*) of one global sequence of arrivals: slot j of S sends arrivals j, j+S, j+2S, ...
//! (a shard's threads are slots `shard + N * thread` of `N * threads`, see
//! [`crate::shard`]). Every slot computes the same x_k with the same floating-point
//! operations in the same order, so the union of the slots' send times is the unsharded
//! schedule exactly, bit for bit, whatever the number of threads or shards. For Poisson
//! arrivals that means every slot walks the whole seeded sequence of gaps and keeps its own
//! arrivals: S draws per arrival sent, a few nanoseconds each (at 8 shards of 16 threads,
//! about a microsecond per arrival).

use std::time::Duration;

/// One stage of a profile: `level` goes linearly from `from` to `to` over `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub duration: Duration,
    pub from: f64,
    pub to: f64,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Profile {
    pub stages: Vec<Stage>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--stages: {0}")]
pub struct ProfileError(pub String);

impl Profile {
    /// One stage at a constant level.
    pub fn constant(level: f64, duration: Duration) -> Profile {
        Profile {
            stages: vec![Stage {
                duration,
                from: level,
                to: level,
            }],
        }
    }

    /// Parses `10s:1000, 30s:1000->5000, 10s:5000`.
    pub fn parse(text: &str) -> Result<Profile, ProfileError> {
        let mut stages = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let err = |why: &str| {
                ProfileError(format!(
                    "stage `{part}` {why}; write DURATION:LEVEL or DURATION:FROM->TO, e.g. \"10s:1000, 30s:1000->5000\""
                ))
            };
            let (duration, level) = part.split_once(':').ok_or_else(|| err("has no `:`"))?;
            let duration = humantime::parse_duration(duration.trim())
                .map_err(|_| err("does not start with a duration such as 10s"))?;
            if duration.is_zero() {
                return Err(err("lasts no time"));
            }
            let number = |s: &str| {
                s.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| err("has a level that is not a number >= 0"))
            };
            let (from, to) = match level.split_once("->") {
                Some((a, b)) => (number(a)?, number(b)?),
                None => {
                    let v = number(level)?;
                    (v, v)
                }
            };
            stages.push(Stage { duration, from, to });
        }
        if stages.is_empty() {
            return Err(ProfileError(
                "no stages given; write e.g. \"10s:1000, 30s:1000->5000\"".into(),
            ));
        }
        Ok(Profile { stages })
    }

    pub fn duration(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    /// The level at `t` into the profile (the last level after the end).
    pub fn level_at(&self, t: Duration) -> f64 {
        let mut start = Duration::ZERO;
        for s in &self.stages {
            if t < start + s.duration {
                let f = (t - start).as_secs_f64() / s.duration.as_secs_f64();
                return s.from + (s.to - s.from) * f;
            }
            start += s.duration;
        }
        self.stages.last().map_or(0.0, |s| s.to)
    }

    /// The earliest moment at or after `after` when the level is at least `level` (plus a
    /// microsecond, so that the level read then is past it despite rounding); `None` if the
    /// level never gets there.
    pub fn when_at_least(&self, level: f64, after: Duration) -> Option<Duration> {
        let mut start = Duration::ZERO;
        for s in &self.stages {
            let end = start + s.duration;
            if end > after {
                let t0 = after.max(start);
                let at = |t: Duration| {
                    s.from + (s.to - s.from) * (t - start).as_secs_f64() / s.duration.as_secs_f64()
                };
                if at(t0) >= level {
                    return Some(t0);
                }
                if s.to >= level && s.to > s.from {
                    let frac = (level - s.from) / (s.to - s.from);
                    let t = start + s.duration.mul_f64(frac) + Duration::from_micros(1);
                    return Some(t.max(t0).min(end));
                }
            }
            start = end;
        }
        None
    }

    /// Expected arrivals (the integral of the level) from the start until `t`.
    pub fn cumulative(&self, t: Duration) -> f64 {
        let mut start = Duration::ZERO;
        let mut total = 0.0;
        for s in &self.stages {
            let end = start + s.duration;
            if t <= start {
                break;
            }
            let span = (t.min(end) - start).as_secs_f64();
            let slope = (s.to - s.from) / s.duration.as_secs_f64();
            total += s.from * span + slope * span * span / 2.0;
            start = end;
        }
        total
    }

    /// Expected arrivals over the whole profile when levels are rates.
    pub fn total_arrivals(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| (s.from + s.to) / 2.0 * s.duration.as_secs_f64())
            .sum()
    }

    /// A human description of the plan, printed before a run.
    pub fn describe(&self, unit: &str) -> String {
        let mut out = Vec::new();
        for s in &self.stages {
            let d = humantime::format_duration(s.duration);
            if s.from == s.to {
                out.push(format!("{d} at {} {unit}", fmt_level(s.from)));
            } else {
                out.push(format!(
                    "{d} from {} to {} {unit}",
                    fmt_level(s.from),
                    fmt_level(s.to)
                ));
            }
        }
        out.join(", then ")
    }
}

fn fmt_level(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// How arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Evenly spaced (at a constant rate R, exactly 1/R apart).
    Uniform,
    /// Exponential gaps: a Poisson process, with this seed for reproducible runs.
    Poisson { seed: u64 },
}

/// The intended send times of one slot's share of a rate profile.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Cumulative arrivals at the start of each stage, with stage start times.
    stages: Vec<StageMark>,
    arrival: Arrival,
    /// How many slots share the global sequence (this one takes every `slots`-th arrival).
    slots: u64,
    /// Index of the next arrival in the global uniform sequence.
    next_k: u64,
    /// For Poisson: the running sum of the global sequence's unit exponentials, up to the
    /// last arrival this slot took.
    poisson_sum: f64,
    /// For Poisson: how many gaps of the global sequence lie before this slot's next arrival
    /// (its index plus one at first, then `slots`).
    gaps_to_next: u64,
    rng: SplitMix64,
    /// The stage the last answer fell in (answers only move forward).
    stage: usize,
}

#[derive(Debug, Clone, Copy)]
struct StageMark {
    start_s: f64,
    duration_s: f64,
    /// Expected arrivals before this stage.
    before: f64,
    /// Rate at the stage start and its slope (per second per second).
    rate: f64,
    slope: f64,
}

impl Schedule {
    /// Slot `index` of `slots` takes its share of `profile` (levels are requests/s): the
    /// arrivals `index`, `index + slots`, ... of the one global sequence.
    pub fn new(profile: &Profile, arrival: Arrival, index: usize, slots: usize) -> Schedule {
        let mut stages = Vec::with_capacity(profile.stages.len());
        let (mut start_s, mut before) = (0.0, 0.0);
        for s in &profile.stages {
            let duration_s = s.duration.as_secs_f64();
            stages.push(StageMark {
                start_s,
                duration_s,
                before,
                rate: s.from,
                slope: (s.to - s.from) / duration_s,
            });
            start_s += duration_s;
            before += (s.from + s.to) / 2.0 * duration_s;
        }
        let seed = match arrival {
            Arrival::Poisson { seed } => seed,
            Arrival::Uniform => 0,
        };
        Schedule {
            stages,
            arrival,
            slots: slots.max(1) as u64,
            next_k: index as u64,
            poisson_sum: 0.0,
            gaps_to_next: index as u64 + 1,
            rng: SplitMix64(seed),
            stage: 0,
        }
    }

    /// The next intended send time as an offset from the start, or `None` after the end.
    pub fn next_offset(&mut self) -> Option<Duration> {
        let target = match self.arrival {
            Arrival::Uniform => {
                let k = self.next_k;
                self.next_k += self.slots;
                k as f64
            }
            Arrival::Poisson { .. } => {
                // Arrival k is at the sum of the first k + 1 gaps of the one seeded sequence;
                // the other slots' gaps are drawn and added here too, in the same order.
                for _ in 0..self.gaps_to_next {
                    self.poisson_sum += self.rng.exponential();
                }
                self.gaps_to_next = self.slots;
                self.poisson_sum
            }
        };
        self.invert(target).map(Duration::from_secs_f64)
    }

    /// N⁻¹(target): the time by which `target` arrivals are expected.
    fn invert(&mut self, target: f64) -> Option<f64> {
        while let Some(s) = self.stages.get(self.stage) {
            let total = s.rate * s.duration_s + s.slope * s.duration_s * s.duration_s / 2.0;
            let c = target - s.before;
            if c < total {
                // Solve slope/2 t² + rate t = c; this form is stable for slope = 0 and < 0.
                let disc = (s.rate * s.rate + 2.0 * s.slope * c).max(0.0);
                let denom = s.rate + disc.sqrt();
                let t = if denom > 0.0 { 2.0 * c / denom } else { 0.0 };
                return Some(s.start_s + t.min(s.duration_s));
            }
            self.stage += 1;
        }
        None
    }
}

/// SplitMix64: a tiny, well-known generator. Hand-written rather than taken from `rand` so
/// that a seed gives the same schedule in every loadlab version (`rand` does not promise
/// stable streams across versions), and because this is all the randomness loadlab needs.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A unit-mean exponential variate.
    fn exponential(&mut self) -> f64 {
        // 53 random bits in (0, 1]: never 0, so ln is finite.
        let u = ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
        -u.ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn all(mut s: Schedule) -> Vec<Duration> {
        std::iter::from_fn(|| s.next_offset()).collect()
    }

    fn close(a: &[Duration], b: &[Duration]) {
        assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
        for (x, y) in a.iter().zip(b) {
            let d = x.as_secs_f64() - y.as_secs_f64();
            assert!(d.abs() < 1e-9, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn parse_stages() {
        let p = Profile::parse("10s:1000, 30s:1000->5000, 500ms:0").unwrap();
        assert_eq!(
            p.stages,
            vec![
                Stage {
                    duration: Duration::from_secs(10),
                    from: 1000.0,
                    to: 1000.0
                },
                Stage {
                    duration: Duration::from_secs(30),
                    from: 1000.0,
                    to: 5000.0
                },
                Stage {
                    duration: ms(500),
                    from: 0.0,
                    to: 0.0
                },
            ]
        );
        assert_eq!(p.duration(), ms(40_500));
        assert_eq!(
            p.describe("requests/s"),
            "10s at 1000 requests/s, then 30s from 1000 to 5000 requests/s, then 500ms at 0 requests/s"
        );
        for bad in ["", "10s", "x:5", "10s:-1", "10s:a->b", "0s:5"] {
            let err = Profile::parse(bad).unwrap_err().to_string();
            assert!(err.starts_with("--stages:"), "{bad}: {err}");
        }
    }

    #[test]
    fn constant_rate_is_evenly_spaced() {
        let p = Profile::constant(10.0, ms(500));
        let got = all(Schedule::new(&p, Arrival::Uniform, 0, 1));
        close(&got, &[ms(0), ms(100), ms(200), ms(300), ms(400)]);
    }

    #[test]
    fn threads_deal_out_the_global_sequence() {
        let p = Profile::constant(10.0, ms(500));
        close(
            &all(Schedule::new(&p, Arrival::Uniform, 0, 2)),
            &[ms(0), ms(200), ms(400)],
        );
        close(
            &all(Schedule::new(&p, Arrival::Uniform, 1, 2)),
            &[ms(100), ms(300)],
        );
    }

    #[test]
    fn steps_change_the_spacing_at_the_boundary() {
        let p = Profile::parse("1s:2, 1s:4").unwrap();
        let got = all(Schedule::new(&p, Arrival::Uniform, 0, 1));
        close(
            &got,
            &[ms(0), ms(500), ms(1000), ms(1250), ms(1500), ms(1750)],
        );
    }

    #[test]
    fn ramps_follow_the_integral_of_the_rate() {
        // Rate 0 -> 8/s over 1 s: N(t) = 4 t², so arrival k is at sqrt(k / 4).
        let p = Profile::parse("1s:0->8").unwrap();
        let got = all(Schedule::new(&p, Arrival::Uniform, 0, 1));
        let want: Vec<Duration> = (0..4)
            .map(|k| Duration::from_secs_f64((k as f64 / 4.0).sqrt()))
            .collect();
        close(&got, &want);
        // Ramping down 8 -> 0: N(t) = 8t - 4t².
        let p = Profile::parse("1s:8->0").unwrap();
        let got = all(Schedule::new(&p, Arrival::Uniform, 0, 1));
        let want: Vec<Duration> = (0..4)
            .map(|k| Duration::from_secs_f64((8.0 - (64.0 - 16.0 * k as f64).sqrt()) / 8.0))
            .collect();
        close(&got, &want);
    }

    #[test]
    fn zero_rate_stages_send_nothing() {
        let p = Profile::parse("1s:0, 1s:2").unwrap();
        close(
            &all(Schedule::new(&p, Arrival::Uniform, 0, 1)),
            &[ms(1000), ms(1500)],
        );
    }

    #[test]
    fn poisson_mean_rate_within_2_percent_and_reproducible() {
        let p = Profile::constant(1_000.0, Duration::from_secs(10));
        let a = all(Schedule::new(&p, Arrival::Poisson { seed: 42 }, 0, 1));
        let b = all(Schedule::new(&p, Arrival::Poisson { seed: 42 }, 0, 1));
        assert_eq!(a, b, "same seed, same schedule");
        let n = a.len() as f64;
        assert!((n - 10_000.0).abs() / 10_000.0 < 0.02, "{n} arrivals");
        // Exponential gaps: the coefficient of variation is 1.
        let gaps: Vec<f64> = a.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.05,
            "cv {}",
            var.sqrt() / mean
        );
        // Two threads together keep the rate.
        let both = all(Schedule::new(&p, Arrival::Poisson { seed: 7 }, 0, 2)).len()
            + all(Schedule::new(&p, Arrival::Poisson { seed: 7 }, 1, 2)).len();
        assert!((both as f64 - 10_000.0).abs() / 10_000.0 < 0.02, "{both}");
    }

    #[test]
    fn when_a_level_is_reached() {
        let p = Profile::parse("10s:2, 10s:2->12, 5s:0").unwrap();
        assert_eq!(p.when_at_least(1.0, ms(0)), Some(ms(0)));
        // Level 7 is halfway up the ramp.
        assert_eq!(
            p.when_at_least(7.0, ms(0)),
            Some(ms(15_000) + Duration::from_micros(1))
        );
        assert_eq!(p.when_at_least(7.0, ms(17_000)), Some(ms(17_000)));
        assert_eq!(p.when_at_least(1.0, ms(20_000)), None);
        assert_eq!(p.when_at_least(13.0, ms(0)), None);
        let steps = Profile::parse("1s:1, 1s:3").unwrap();
        assert_eq!(steps.when_at_least(2.0, ms(0)), Some(ms(1_000)));
    }

    #[test]
    fn level_at_interpolates() {
        let p = Profile::parse("10s:10, 10s:10->20").unwrap();
        assert_eq!(p.level_at(ms(5_000)), 10.0);
        assert_eq!(p.level_at(ms(15_000)), 15.0);
        assert_eq!(p.level_at(ms(99_000)), 20.0);
        assert_eq!(p.total_arrivals(), 100.0 + 150.0);
        assert_eq!(p.cumulative(ms(5_000)), 50.0);
        assert_eq!(p.cumulative(ms(20_000)), 250.0);
        assert_eq!(p.cumulative(ms(99_000)), 250.0);
        assert!((p.cumulative(ms(15_000)) - (100.0 + 62.5)).abs() < 1e-9);
    }
}
