//! What the tests share: a seeded generator with normal noise, and histories built from
//! known levels (per revision, in the runs' own values) without the store.

use loadlab_history::series::Point;
use loadlab_store::{RunId, Summary};

/// SplitMix64 with Box-Muller normals: the tests' noise, the same on every machine.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// `level` times log-normal noise of `sigma` (about sigma as a share of it).
    pub fn around(&mut self, level: f64, sigma: f64) -> f64 {
        level * (sigma * self.normal()).exp()
    }
}

/// A summary whose p50 is `p99 / 2`, whose p99 is `p99_us` and whose throughput is `rps`.
pub fn summary(p99_us: f64, rps: f64) -> Summary {
    Summary {
        target_url: "http://127.0.0.1/".into(),
        load_model: "closed_loop".into(),
        duration_s: Some(10.0),
        requests_issued: 1000,
        requests_completed: 1000,
        requests_failed: 0,
        rps,
        latency_p50_us: Some(p99_us / 2.0),
        latency_p90_us: Some(p99_us * 0.8),
        latency_p99_us: Some(p99_us),
        latency_p99_9_us: Some(p99_us * 1.2),
        latency_max_us: Some(p99_us * 1.5),
        error_rate: Some(0.0),
        bytes_sent: None,
        bytes_received: None,
        busiest_second_sent_bytes: None,
        server_cpu_p50_cores: None,
        server_cpu_p99_cores: None,
        server_rss_p99_bytes: None,
        server_memory_p99_bytes: None,
        generator_cpu_s_per_100k: None,
        cold_start: None,
        ready_s: None,
    }
}

/// Revisions `r000`, `r001`... in order, each with `runs` runs around its p99 level (µs)
/// with log-normal noise `sigma`, all in environment `env(i)`.
pub fn history(
    levels: &[f64],
    runs: usize,
    sigma: f64,
    seed: u64,
    env: &dyn Fn(usize) -> String,
) -> Vec<Point> {
    let mut rng = Rng(seed);
    let mut id = 0;
    levels
        .iter()
        .enumerate()
        .map(|(i, &level)| Point {
            revision: format!("r{i:03}"),
            branch: Some("main".into()),
            first_started_at: format!(
                "2026-11-{:02}T{:02}:{:02}:00Z",
                1 + i / 60,
                i % 60 / 6,
                i % 6
            ),
            environment: env(i),
            runs: (0..runs)
                .map(|_| {
                    id += 1;
                    let p99 = rng.around(level, sigma);
                    (RunId(id), summary(p99, 1e6 / p99))
                })
                .collect(),
        })
        .collect()
}

/// `n` revisions at 1000 µs, multiplied by `factor` from each `(at, factor)` on.
pub fn steps(n: usize, steps: &[(usize, f64)]) -> Vec<f64> {
    (0..n)
        .map(|i| {
            steps
                .iter()
                .filter(|(at, _)| i >= *at)
                .fold(1000.0, |v, (_, f)| v * f)
        })
        .collect()
}

pub fn same_env(_: usize) -> String {
    "cpu test".into()
}
