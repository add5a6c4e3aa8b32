//! A tiny seeded random source for synthetic benchmark runs, so the tests need no rand crate
//! and every trial is reproducible from its seed.

/// SplitMix64 (Steele, Lea & Flood 2014): a full-period 64-bit generator, good enough for
/// noise in tests.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1): never exactly 0, so its log is finite.
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal by Box-Muller.
    pub fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// `count` runs of a metric centred on `centre` with multiplicative (lognormal) noise of
    /// relative size `noise`, the way run-to-run variation of latency or throughput behaves.
    pub fn runs(&mut self, count: usize, centre: f64, noise: f64) -> Vec<f64> {
        (0..count)
            .map(|_| centre * (noise * self.normal()).exp())
            .collect()
    }
}
