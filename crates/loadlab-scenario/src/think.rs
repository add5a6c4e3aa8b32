//! Think time between steps (fixed, uniform, exponential), drawn from a seeded generator so a
//! run's waits are reproducible. Pure: it says how long to wait, the engine waits.

use std::time::Duration;

/// How long a virtual user waits after a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Think {
    Fixed(Duration),
    /// Evenly between the two bounds.
    Uniform(Duration, Duration),
    /// Exponentially distributed with this mean (a memoryless user).
    Exponential(Duration),
}

impl Think {
    pub const NONE: Think = Think::Fixed(Duration::ZERO);

    /// One wait.
    pub fn sample(&self, rng: &mut Rng) -> Duration {
        match *self {
            Think::Fixed(d) => d,
            Think::Uniform(lo, hi) => lo + (hi - lo).mul_f64(rng.unit()),
            Think::Exponential(mean) => mean.mul_f64(rng.exponential()),
        }
    }

    /// The mean wait, for the offered rate a scenario implies.
    pub fn mean(&self) -> Duration {
        match *self {
            Think::Fixed(d) | Think::Exponential(d) => d,
            Think::Uniform(lo, hi) => (lo + hi) / 2,
        }
    }

    pub fn is_zero(&self) -> bool {
        matches!(self, Think::Fixed(d) if d.is_zero())
    }
}

/// SplitMix64: small, and the same stream for a seed in every loadlab version (which `rand`
/// does not promise).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A generator for one virtual user of a run: different users draw different streams.
    pub fn for_user(seed: u64, user: usize) -> Rng {
        let mut mix = Rng(seed ^ (user as u64).wrapping_mul(0xA076_1D64_78BD_642F));
        Rng(mix.next_u64())
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A unit-mean exponential variate.
    pub fn exponential(&mut self) -> f64 {
        // In (0, 1]: never 0, so ln is finite.
        let u = ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
        -u.ln()
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.unit() * n as f64) as usize).min(n - 1)
    }
}

/// The longest think time: a week, as the engine's longest duration (`MAX_DURATION`, which
/// a test holds equal). Longer ones overflowed the clock's arithmetic and panicked a worker.
pub const MAX_THINK: Duration = Duration::from_secs(7 * 86_400);

/// Parses a duration as written in a scenario (`500ms`, `2s`, `1m`), at most [`MAX_THINK`].
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text.trim())
        .map_err(|e| format!("`{text}` is not a duration ({e}); write e.g. 500ms, 2s or 1m"))?;
    if d > MAX_THINK {
        return Err(format!(
            "`{text}` is longer than loadlab allows ({} days); give a shorter one",
            MAX_THINK.as_secs() / 86_400
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn fixed_and_uniform_stay_in_bounds() {
        let mut rng = Rng::new(7);
        assert_eq!(Think::Fixed(ms(250)).sample(&mut rng), ms(250));
        let u = Think::Uniform(ms(100), ms(300));
        let draws: Vec<Duration> = (0..10_000).map(|_| u.sample(&mut rng)).collect();
        assert!(draws.iter().all(|d| *d >= ms(100) && *d <= ms(300)));
        // Both halves are drawn about evenly.
        let low = draws.iter().filter(|d| **d < ms(200)).count();
        assert!(
            (4_500..5_500).contains(&low),
            "{low} of 10000 below the middle"
        );
        assert_eq!(u.mean(), ms(200));
    }

    #[test]
    fn exponential_has_its_mean_and_a_seed_repeats_its_draws() {
        let e = Think::Exponential(ms(500));
        let mut rng = Rng::new(42);
        let n = 20_000;
        let total: Duration = (0..n).map(|_| e.sample(&mut rng)).sum();
        let mean_ms = total.as_secs_f64() * 1000.0 / n as f64;
        assert!((480.0..520.0).contains(&mean_ms), "mean {mean_ms} ms");
        let a: Vec<_> = (0..5).map(|_| e.sample(&mut Rng::new(3))).collect();
        let b: Vec<_> = (0..5).map(|_| e.sample(&mut Rng::new(3))).collect();
        assert_eq!(a, b);
        let (mut u0, mut u1) = (Rng::for_user(3, 0), Rng::for_user(3, 1));
        assert_ne!(u0.next_u64(), u1.next_u64());
    }

    #[test]
    fn durations_parse_or_say_how_to_write_them() {
        assert_eq!(parse_duration("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_duration("300ms").unwrap(), ms(300));
        assert!(parse_duration("soon").unwrap_err().contains("500ms"));
        assert_eq!(parse_duration("7days").unwrap(), MAX_THINK);
        assert!(parse_duration("7days 1ns")
            .unwrap_err()
            .contains("longer than loadlab allows"));
    }
}
