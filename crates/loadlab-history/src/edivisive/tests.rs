//! The detector's unit tests: q against its definition, known answers, and the fast search
//! against the plain one it replaced (the same to the bit).

use super::*;

/// q by its definition, pair by pair, to check the O(n²) update against.
fn q_direct(values: &[f64], tau: usize) -> f64 {
    let (x, y) = values.split_at(tau);
    if x.is_empty() || y.is_empty() {
        return 0.0;
    }
    let mean = |a: &[f64], b: &[f64]| {
        a.iter()
            .flat_map(|u| b.iter().map(move |v| (u - v).abs()))
            .sum::<f64>()
            / (a.len() * b.len()) as f64
    };
    let (n, m) = (x.len() as f64, y.len() as f64);
    n * m / (n + m) * (2.0 * mean(x, y) - mean(x, x) - mean(y, y))
}

#[test]
fn q_values_match_the_definition() {
    let values = [1.0, 3.0, 2.0, 8.0, 9.5, 7.0, 8.2, 1.5];
    let q = q_values(&values);
    for (tau, got) in q.iter().enumerate() {
        let want = q_direct(&values, tau);
        assert!((got - want).abs() < 1e-12, "τ={tau}: {got} against {want}");
    }
}

/// A hand-computed case: [0, 0, 1, 1] split in the middle: mean|x-y| = 1, within 0, so
/// E = 2 and q = 2·2/4·2 = 2; at τ=1, X=[0], Y=[0,1,1]: mean|x-y| = 2/3, within Y
/// 4/9, E = 4/3 - 4/9 = 8/9, q = 3/4 · 8/9 = 2/3.
#[test]
fn known_q_values() {
    let q = q_values(&[0.0, 0.0, 1.0, 1.0]);
    let want = [0.0, 2.0 / 3.0, 2.0, 2.0 / 3.0];
    for (got, want) in q.iter().zip(want) {
        assert!((got - want).abs() < 1e-12, "{q:?}");
    }
}

#[test]
fn short_or_constant_series_have_no_change_point() {
    let opts = Options::default();
    for series in [vec![], vec![1.0], vec![1.0; 5], vec![2.0; 40]] {
        assert!(e_divisive(&series, &opts).is_empty(), "{series:?}");
    }
}

/// Table: exact steps with no noise are found exactly, as one or several change points.
#[test]
fn noiseless_steps_are_found_where_they_are() {
    let step = |levels: &[(usize, f64)]| -> Vec<f64> {
        levels
            .iter()
            .flat_map(|&(n, v)| std::iter::repeat_n(v, n))
            .collect()
    };
    type Levels = &'static [(usize, f64)];
    let cases: &[(Levels, &[usize])] = &[
        (&[(10, 0.0), (10, 1.0)], &[10]),
        (&[(20, 0.0), (5, 0.5)], &[20]),
        (&[(10, 0.0), (10, 1.0), (10, 0.0)], &[10, 20]),
        (&[(8, 0.0), (8, 0.3), (8, 0.9), (8, 0.2)], &[8, 16, 24]),
    ];
    for (levels, want) in cases {
        let got: Vec<usize> = e_divisive(&step(levels), &Options::default())
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(&got, want, "{levels:?}");
    }
}

#[test]
fn a_change_shorter_than_min_size_at_the_end_is_not_split_off() {
    let mut values = vec![0.0; 20];
    values.extend([1.0, 1.0]);
    assert!(e_divisive(&values, &Options::default()).is_empty());
    values.push(1.0);
    let found = e_divisive(&values, &Options::default());
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].index, 20);
}

#[test]
fn the_same_series_and_seed_give_the_same_p_values() {
    let values: Vec<f64> = (0..30).map(|i| ((i * 7919) % 13) as f64 / 13.0).collect();
    let a = e_divisive(&values, &Options::default());
    let b = e_divisive(&values, &Options::default());
    assert_eq!(a, b);
}

/// Table: what taming keeps (steps, noiseless series, ordinary noise) and what it clips
/// (one wild value, to its neighbours' median plus four noise scales).
#[test]
fn taming_clips_a_wild_value_and_keeps_steps() {
    let noise = [0.0, 0.1, -0.1, 0.05, -0.05, 0.1, 0.0, -0.1, 0.05, 0.0];
    let cases: Vec<(Vec<f64>, Vec<f64>)> = vec![
        (vec![], vec![]),
        (vec![1.0; 6], vec![1.0; 6]),
        (
            vec![0.0, 0.0, 0.0, 5.0, 5.0, 5.0],
            vec![0.0, 0.0, 0.0, 5.0, 5.0, 5.0],
        ),
        (noise.to_vec(), noise.to_vec()),
    ];
    for (input, want) in cases {
        assert_eq!(tame(&input), want, "{input:?}");
    }
    let step: Vec<f64> = noise
        .iter()
        .enumerate()
        .map(|(i, v)| v + if i >= 5 { 3.0 } else { 0.0 })
        .collect();
    assert_eq!(tame(&step), step, "a step of 30 noise scales passes");
    let mut wild = noise.to_vec();
    wild[4] = 100.0;
    let tamed = tame(&wild);
    assert!(tamed[4] < 1.0, "{tamed:?}");
    assert_eq!(tamed[..4], wild[..4]);
    assert_eq!(tamed[5..], wild[5..]);
}

#[test]
fn the_shuffle_is_a_permutation() {
    let mut rng = SplitMix64(7);
    let mut v: Vec<f64> = (0..50).map(f64::from).collect();
    rng.shuffle(&mut v);
    assert_ne!(v, (0..50).map(f64::from).collect::<Vec<_>>());
    v.sort_by(f64::total_cmp);
    assert_eq!(v, (0..50).map(f64::from).collect::<Vec<_>>());
}

/// The search over τ and κ as it was first written: a len × len table of prefix sums of
/// distances. The O(len)-memory search must give its answer to the bit.
fn best_split_by_table(window: &[f64], min_size: usize) -> Option<(usize, f64)> {
    let len = window.len();
    if len < 2 * min_size {
        return None;
    }
    let below: Vec<Vec<f64>> = (0..len)
        .map(|k| {
            let mut row = vec![0.0];
            let mut sum = 0.0;
            for w in window {
                sum += (w - window[k]).abs();
                row.push(sum);
            }
            row
        })
        .collect();
    let mut best = None;
    let mut within_x = 0.0;
    for tau in 1..=len - min_size {
        within_x += below[tau - 1][tau - 1];
        if tau < min_size {
            continue;
        }
        let (mut within_y, mut between) = (0.0, 0.0);
        for (kappa, row) in below.iter().enumerate().skip(tau) {
            within_y += row[kappa] - row[tau];
            between += row[tau];
            let m = kappa + 1 - tau;
            if m >= min_size {
                best = keep_larger(best, (tau, q_of(within_x, within_y, between, tau, m)));
            }
        }
    }
    best
}

/// Table: noisy, stepped, tied and tiny series, each min_size: the same split and the same
/// q, bit for bit, as the table's search (so no answer on any series changed).
#[test]
fn the_search_without_a_table_gives_the_same_bits() {
    let mut rng = SplitMix64(99);
    let mut noise = |n: usize| -> Vec<f64> {
        (0..n)
            .map(|_| (rng.next() >> 11) as f64 / (1u64 << 53) as f64)
            .collect()
    };
    let mut series: Vec<Vec<f64>> = vec![
        vec![],
        vec![1.0; 6],
        vec![0.0, 0.0, 1.0, 1.0],
        [[0.0; 10], [1.0; 10], [0.0; 10]].concat(),
    ];
    for n in [5, 7, 12, 40, 97] {
        series.push(noise(n));
        let mut stepped = noise(n);
        stepped[n / 2..].iter_mut().for_each(|v| *v += 0.3);
        series.push(stepped);
        series.push(noise(n).iter().map(|v| (v * 4.0).round()).collect());
    }
    for values in &series {
        for min_size in [1, 2, 3, 5] {
            let want = best_split_by_table(values, min_size);
            let got = best_split(values, min_size, true);
            assert_eq!(
                got.map(|(t, q)| (t, q.to_bits())),
                want.map(|(t, q)| (t, q.to_bits())),
                "{values:?}, min_size {min_size}"
            );
        }
    }
}

/// Table: a permutation test keeps its 999 shuffles up to 250 values (so every answer on
/// such a series stays as it was), takes fewer past that, never fewer than alpha needs
/// (p down to alpha / 2), and counts only the windows long enough to split.
#[test]
fn the_shuffles_are_bounded_on_a_long_series() {
    let opts = Options::default();
    let cases: &[(&[(usize, usize)], usize)] = &[
        (&[(0, 40)], 999),
        (&[(0, 250)], 999),
        (&[(0, 100), (100, 350)], 861),
        (&[(0, 500)], 249),
        (&[(0, 1000)], 199),
        (&[(0, 12_000)], 199),
        (&[(0, 250), (250, 255)], 999),
    ];
    for &(windows, want) in cases {
        assert_eq!(permutations_for(windows, &opts), want, "{windows:?}");
    }
}

/// A long flat series is searched in O(len) memory and gives up its test as soon as p
/// cannot reach alpha: 3,000 values (72 MB a table before, and 999 shuffles) in well under
/// the time of one shuffle's table.
#[test]
fn a_long_flat_series_is_decided_quickly() {
    let mut rng = SplitMix64(5);
    let values: Vec<f64> = (0..3000)
        .map(|_| (rng.next() >> 11) as f64 / (1u64 << 53) as f64)
        .collect();
    let started = std::time::Instant::now();
    assert!(e_divisive(&values, &Options::default()).is_empty());
    println!("3,000 flat values: {:?}", started.elapsed());
}
