//! The knee of a latency-throughput curve: the first load at which p99 departs from its
//! low-load value by a stated factor (posts 001 and 002 read it off by eye).

use serde::{Deserialize, Serialize};

/// Where the curve bends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// Index of the point, in the order given.
    pub index: usize,
    pub load: f64,
    /// `None`: no request got a response at this load.
    pub p99_us: Option<f64>,
    /// p99 at the lowest load measured.
    pub baseline_p99_us: f64,
    pub factor: f64,
}

/// The knee of `points` (load, p99 in microseconds), or `None` when p99 never reaches
/// `factor` times its value at the lowest load. Points without a p99 (nothing answered)
/// are past any knee: they count as one once a baseline exists.
pub fn knee(points: &[(f64, Option<f64>)], factor: f64) -> Option<Knee> {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| points[a].0.total_cmp(&points[b].0));
    let baseline = order.iter().find_map(|&i| points[i].1)?;
    order.into_iter().find_map(|i| {
        let (load, p99) = points[i];
        (p99.unwrap_or(f64::INFINITY) >= baseline * factor).then_some(Knee {
            index: i,
            load,
            p99_us: p99,
            baseline_p99_us: baseline,
            factor,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_knee_is_the_first_load_where_p99_departs_by_the_factor() {
        // Post 002's first table: offered rate, mean response time (ms) as the curve.
        let post_002 = [
            (1_000.0, Some(430.0)),
            (5_000.0, Some(444.0)),
            (10_000.0, Some(804.0)),
            (12_000.0, Some(1_400.0)),
            (14_000.0, Some(25_140.0)),
            (15_000.0, Some(30_770.0)),
        ];
        let k = knee(&post_002, 3.0).unwrap();
        assert_eq!((k.index, k.load), (3, 12_000.0));
        assert_eq!(k.baseline_p99_us, 430.0);
        assert_eq!(knee(&post_002, 10.0).unwrap().load, 14_000.0);
        assert_eq!(knee(&post_002, 100.0), None);
    }

    #[test]
    fn points_are_taken_in_load_order_and_a_silent_point_is_past_the_knee() {
        let points = [
            (2_000.0, Some(900.0)),
            (500.0, Some(300.0)),
            (1_000.0, None),
            (4_000.0, Some(5_000.0)),
        ];
        let k = knee(&points, 3.0).unwrap();
        assert_eq!(k.index, 2);
        assert_eq!(k.baseline_p99_us, 300.0);
        assert_eq!(knee(&[(1.0, None)], 3.0), None);
        assert_eq!(knee(&[], 3.0), None);
    }
}
