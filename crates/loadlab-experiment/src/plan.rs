//! The plan of an experiment: its arms (each variant under each combination of the matrix's
//! axis values) and the order of its runs, in randomized blocks. Each block runs every arm
//! once, in an order shuffled by a seeded generator, so that drift on a noisy machine (a
//! neighbour, thermal state, a filling disk) spreads over all arms instead of landing on the
//! one that ran last. Pure: no I/O, the same file and seed give the same plan, and the plan's
//! hash says whether a stored, interrupted experiment can be resumed.

use crate::file::{Experiment, Settings, Source};
use serde::Serialize;

/// One arm: a variant with its settings for one combination of axis values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Arm {
    /// `variant` or `variant[connections=50,cpus=0.5]`: how runs are stored and compared.
    pub label: String,
    pub variant: usize,
    /// The axis values of this arm, in axis order (`connections=50`).
    pub axes: Vec<(String, String)>,
    pub settings: Settings,
}

/// One run of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PlannedRun {
    /// Position in the plan, from 0.
    pub index: usize,
    /// The block (and so the repetition of its arm), from 0.
    pub block: usize,
    pub arm: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub arms: Vec<Arm>,
    pub runs: Vec<PlannedRun>,
    /// A hash of everything that decides what runs and how (FNV-1a of the canonical JSON).
    pub hash: String,
}

impl Plan {
    pub fn new(experiment: &Experiment) -> Result<Plan, String> {
        let arms = arms(experiment)?;
        let order = randomized_blocks(arms.len(), experiment.repetitions, experiment.seed);
        let runs = order
            .iter()
            .enumerate()
            .flat_map(|(block, arms)| arms.iter().map(move |&arm| (block, arm)))
            .enumerate()
            .map(|(index, (block, arm))| PlannedRun { index, block, arm })
            .collect();
        let canonical = serde_json::to_string(&(experiment, &arms)).expect("plain data");
        Ok(Plan {
            arms,
            runs,
            hash: format!("{:016x}", fnv1a(canonical.as_bytes())),
        })
    }

    /// Expected wall time: each run's warm-up, duration and cool-down, plus a start-up
    /// allowance for launched servers (`startup_s` each).
    pub fn expected_s(&self, experiment: &Experiment, startup_s: f64) -> f64 {
        self.runs
            .iter()
            .map(|r| {
                let arm = &self.arms[r.arm];
                let launched = !matches!(experiment.variants[arm.variant].source, Source::Url(_));
                arm.settings.warmup_s
                    + arm.settings.duration_s
                    + experiment.cooldown_s
                    + if launched { startup_s } else { 0.0 }
            })
            .sum()
    }

    /// The arms that are `arm`'s counterparts for comparison: the same axis values, the
    /// control variant.
    pub fn control_of(&self, arm: usize, control_variant: usize) -> Option<usize> {
        let axes = &self.arms[arm].axes;
        self.arms
            .iter()
            .position(|a| a.variant == control_variant && &a.axes == axes)
    }
}

fn arms(experiment: &Experiment) -> Result<Vec<Arm>, String> {
    // Every combination of axis values, the first axis varying slowest.
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for axis in &experiment.axes {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                axis.values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((axis.key.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    let mut arms = Vec::new();
    for (vi, variant) in experiment.variants.iter().enumerate() {
        for combo in &combos {
            let mut settings = experiment.base.clone();
            // Variant overrides come before the axes: an axis is what the experiment varies.
            settings.env.extend(variant.env.clone());
            if variant.cpus.is_some() {
                settings.cpus = variant.cpus;
            }
            if variant.memory.is_some() {
                settings.memory = variant.memory.clone();
            }
            if variant.pin.is_some() {
                settings.pin = variant.pin.clone();
            }
            settings.bandwidth.overridden_by(&variant.bandwidth);
            if let Some(h) = &variant.healthz {
                settings.healthz = h.clone();
            }
            if let Some(paths) = &variant.paths {
                settings.paths = paths.clone();
            }
            if let Some(scenario) = &variant.scenario {
                settings.scenario = Some(scenario.clone());
            }
            if let Some(warmup_s) = variant.target_warmup_s {
                settings.warmup_s = warmup_s;
            }
            for (key, value) in combo {
                settings.apply(key, value)?;
            }
            let label = if combo.is_empty() {
                variant.name.clone()
            } else {
                let axes: Vec<String> = combo.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{}[{}]", variant.name, axes.join(","))
            };
            arms.push(Arm {
                label,
                variant: vi,
                axes: combo.clone(),
                settings,
            });
        }
    }
    Ok(arms)
}

/// `blocks` blocks, each a permutation of `0..arms`, shuffled (Fisher-Yates) by a generator
/// seeded with `seed`.
pub fn randomized_blocks(arms: usize, blocks: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = SplitMix64(seed);
    (0..blocks)
        .map(|_| {
            let mut order: Vec<usize> = (0..arms).collect();
            for i in (1..order.len()).rev() {
                let j = (rng.next() % (i as u64 + 1)) as usize;
                order.swap(i, j);
            }
            order
        })
        .collect()
}

/// SplitMix64 (Steele, Lea, Flood 2014): a few lines, good enough to shuffle a plan, and
/// fixed forever so that a seed means the same order in every loadlab version.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// FNV-1a, 64 bits: a stable hash to recognise an unchanged plan (not for security).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_its_reference_sequence() {
        // The first outputs for seed 0, from the reference C implementation.
        let mut r = SplitMix64(0);
        assert_eq!(r.next(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn fnv1a_matches_known_values() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn every_block_runs_every_arm_once() {
        for (arms, blocks, seed) in [(1, 3, 1), (2, 5, 1), (3, 4, 7), (6, 10, 42)] {
            let order = randomized_blocks(arms, blocks, seed);
            assert_eq!(order.len(), blocks);
            for block in &order {
                let mut sorted = block.clone();
                sorted.sort();
                assert_eq!(sorted, (0..arms).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn the_seed_decides_the_order() {
        assert_eq!(randomized_blocks(4, 6, 9), randomized_blocks(4, 6, 9));
        assert_ne!(randomized_blocks(4, 6, 9), randomized_blocks(4, 6, 10));
        // Shuffled, not always the same within a plan: with 2 arms over 20 blocks both
        // orders occur.
        let order = randomized_blocks(2, 20, 1);
        assert!(order.iter().any(|b| b == &[0, 1]) && order.iter().any(|b| b == &[1, 0]));
    }
}
