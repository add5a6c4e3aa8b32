//! Sharding is exact: on generated profiles (steps and ramps), arrival processes (uniform,
//! Poisson with any seed), shard counts and thread counts, the N shards' intended send times
//! together are the unsharded run's, every one of them, bit for bit; and a closed loop's
//! connections and request count are dealt out with nothing lost or added.
//!
//! The schedules are the ones the engine's threads would follow (`thread_schedules`, built
//! from a validated `RunSpec` with `--shard`), not a re-implementation.

use loadlab_engine::engine::thread_schedules;
use loadlab_engine::schedule::{Arrival, Schedule};
use loadlab_engine::shard::Shard;
use loadlab_engine::{RunSpec, Stop};
use proptest::prelude::*;
use std::time::Duration;

/// `--stages` text of 1 to 3 stages, constant or ramping, a few hundred arrivals in all.
fn stages() -> impl Strategy<Value = String> {
    prop::collection::vec((1u64..=8, 0u32..=400, 0u32..=400, any::<bool>()), 1..=3).prop_map(
        |stages| {
            stages
                .into_iter()
                .map(|(tenths, from, to, ramp)| {
                    if ramp {
                        format!("{}ms:{from}->{to}", tenths * 100)
                    } else {
                        format!("{}ms:{from}", tenths * 100)
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        },
    )
}

fn arrival() -> impl Strategy<Value = Arrival> {
    prop_oneof![
        Just(Arrival::Uniform),
        any::<u64>().prop_map(|seed| Arrival::Poisson { seed })
    ]
}

fn spec(stages: &str, arrival: Arrival, warmup_ms: u64, threads: usize) -> RunSpec {
    RunSpec {
        url: "http://127.0.0.1:9/".into(),
        stages: Some(stages.into()),
        arrival,
        warmup: Duration::from_millis(warmup_ms),
        threads: Some(threads),
        ..RunSpec::default()
    }
}

fn drain(schedules: Vec<Schedule>) -> Vec<Duration> {
    let mut all: Vec<Duration> = schedules
        .into_iter()
        .flat_map(|mut s| std::iter::from_fn(move || s.next_offset()))
        .collect();
    all.sort();
    all
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn the_shards_schedules_together_are_the_unsharded_schedule(
        stages in stages(),
        arrival in arrival(),
        warmup_ms in prop_oneof![Just(0u64), 100u64..=500],
        whole_threads in 1usize..=4,
        count in 1u32..=6,
        shard_threads in prop::collection::vec(1usize..=4, 6),
    ) {
        let Ok(whole) = spec(&stages, arrival, warmup_ms, whole_threads).validate() else {
            // A profile with no arrival at all is refused; nothing to split.
            return Ok(());
        };
        let unsharded = drain(thread_schedules(&whole));
        // One thread, for the record: the thread split is itself exact.
        let single = drain(thread_schedules(&spec(&stages, arrival, warmup_ms, 1).validate().unwrap()));
        prop_assert_eq!(&unsharded, &single);
        let mut union = Vec::new();
        for i in 0..count {
            let config = RunSpec {
                shard: Some(Shard { index: i, count }),
                ..spec(&stages, arrival, warmup_ms, shard_threads[i as usize])
            }
            .validate()
            .unwrap();
            let part = drain(thread_schedules(&config));
            // Shard i has arrivals i, i + N, ...: its share, give or take one.
            let expected = unsharded.len() as u64 / u64::from(count);
            prop_assert!(part.len() as u64 >= expected && part.len() as u64 <= expected + 1);
            union.extend(part);
        }
        union.sort();
        prop_assert_eq!(union, unsharded);
    }

    #[test]
    fn a_closed_loop_is_dealt_out_whole(
        connections in 1usize..=500,
        requests in prop::option::of(1u64..=100_000),
        count in 1u32..=16,
    ) {
        let spec = |shard| RunSpec {
            url: "http://127.0.0.1:9/".into(),
            connections: Some(connections),
            requests,
            shard,
            ..RunSpec::default()
        };
        let (mut conns, mut reqs) = (0, 0);
        for index in 0..count {
            match spec(Some(Shard { index, count })).validate() {
                Ok(c) => {
                    conns += c.connections;
                    if let Stop::Requests(n) = c.stop {
                        reqs += n;
                    }
                }
                Err(e) => {
                    // Only when some shard would get nothing, and then it says so.
                    prop_assert!(connections < count as usize || requests.is_some_and(|n| n < u64::from(count)));
                    prop_assert!(e.to_string().contains("cannot be split"), "{}", e);
                    return Ok(());
                }
            }
        }
        prop_assert_eq!(conns, connections);
        prop_assert_eq!(reqs, requests.unwrap_or(0));
    }
}

#[test]
fn a_seed_gives_one_schedule_whatever_the_threads() {
    let a = drain(thread_schedules(
        &spec("2s:1000", Arrival::Poisson { seed: 9 }, 0, 1)
            .validate()
            .unwrap(),
    ));
    let b = drain(thread_schedules(
        &spec("2s:1000", Arrival::Poisson { seed: 9 }, 0, 3)
            .validate()
            .unwrap(),
    ));
    assert_eq!(a, b);
    assert!((a.len() as f64 - 2_000.0).abs() < 150.0, "{}", a.len());
}
