//! The pacing decisions driven by a virtual clock: a dispatcher simulated with the same calls
//! `open::run` makes, waking late by a fixed timer latency after each sleep.

use super::*;
use crate::schedule::{Arrival, Profile};

/// One send the simulated dispatcher made.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sent {
    intended: Instant,
    at: Instant,
}

/// What a simulated run did.
struct Run {
    sent: Vec<Sent>,
    sleeps: usize,
    spins: usize,
}

/// Runs the dispatcher's loop on a virtual clock: each wake-up takes the batch due by
/// `batch_end`, then waits as `pacing.wait` says. A sleep wakes `latency` late; a spin wakes
/// on time. `stall`: the clock jumps over this window (the thread was descheduled).
fn simulate(
    profile: &str,
    arrival: Arrival,
    pacing: Pacing,
    latency: Duration,
    stall: Option<(Duration, Duration)>,
) -> (Instant, Vec<Instant>, Run) {
    let start = Instant::now();
    let profile = Profile::parse(profile).unwrap();
    let deadline = start + profile.duration();
    let expected: Vec<Instant> = {
        let mut s = Schedule::new(&profile, arrival, 0, 1);
        std::iter::from_fn(|| s.next_offset().map(|o| start + o)).collect()
    };
    let mut pending = Pending::new(Schedule::new(&profile, arrival, 0, 1), start);
    let mut run = Run {
        sent: Vec::new(),
        sleeps: 0,
        spins: 0,
    };
    let mut now = start;
    let mut stalled = false;
    loop {
        if let Some((from, len)) = stall {
            if !stalled && now >= start + from {
                now += len;
                stalled = true;
            }
        }
        let end = pacing.batch_end(now, deadline);
        while let Some(t) = pending.take_due(end) {
            run.sent.push(Sent {
                intended: t,
                at: now,
            });
        }
        let Some(next) = pending.peek() else { break };
        match pacing.wait(now, pending.wake_for(next, Duration::ZERO)) {
            Wait::Sleep(at) => {
                run.sleeps += 1;
                now = at + latency;
            }
            Wait::Spin(at) => {
                run.spins += 1;
                now = at;
            }
        }
    }
    (start, expected, run)
}

fn check_exact_and_honest(expected: &[Instant], run: &Run, pacing: Pacing) {
    // None lost, none invented, in order, each with its own intended time.
    let intended: Vec<Instant> = run.sent.iter().map(|s| s.intended).collect();
    assert_eq!(intended, expected);
    for s in &run.sent {
        // Early by at most the slack; a late one is late by exactly its lag.
        assert!(s.at + pacing.slack >= s.intended, "{s:?} went early");
        let origin = latency_origin(s.intended, s.at);
        assert!(origin <= s.at && origin <= s.intended);
    }
}

#[test]
fn sends_a_few_microseconds_apart_share_one_wake_up() {
    // 100,000/s: 10 µs apart. A wake-up that is 30 µs late finds three due and takes two
    // more within the 20 µs slack.
    let latency = Duration::from_micros(30);
    let (_, expected, run) = simulate(
        "10ms:100000",
        Arrival::Uniform,
        Pacing::EXACT,
        latency,
        None,
    );
    assert_eq!(expected.len(), 1000);
    check_exact_and_honest(&expected, &run, Pacing::EXACT);
    let wake_ups = run.sleeps + run.spins;
    assert!(wake_ups <= 1000 / 4, "{wake_ups} wake-ups for 1000 sends");
    // With no slack and no spin, the same clock needs more wake-ups, all sleeps.
    let (_, _, plain) = simulate("10ms:100000", Arrival::Uniform, Pacing::NONE, latency, None);
    assert_eq!(plain.spins, 0);
    assert!(plain.sleeps > wake_ups, "{} <= {wake_ups}", plain.sleeps);
}

#[test]
fn a_batch_takes_exactly_the_sends_due_by_its_end() {
    let start = Instant::now();
    let profile = Profile::parse("1ms:100000").unwrap();
    let mut pending = Pending::new(Schedule::new(&profile, Arrival::Uniform, 0, 1), start);
    let us = |n: u64| start + Duration::from_micros(n);
    let deadline = us(1_000);
    // Woken at 25 µs: due at 0, 10, 20 (late by 25, 15, 5 µs), 30 and 40 (early by 5 and
    // 15 µs, within the 20 µs slack); 50 waits for the next wake-up.
    let end = Pacing::EXACT.batch_end(us(25), deadline);
    let batch: Vec<Instant> = std::iter::from_fn(|| pending.take_due(end)).collect();
    assert_eq!(batch, [us(0), us(10), us(20), us(30), us(40)]);
    assert_eq!(pending.peek(), Some(us(50)));
    // Near the end, nothing due after the deadline goes early.
    assert_eq!(Pacing::EXACT.batch_end(us(990), deadline), deadline);
    assert_eq!(Pacing::EXACT.batch_end(us(1_500), deadline), us(1_500));
    // The next send 10 µs away is spun for; 50 µs away, slept for.
    assert_eq!(Pacing::EXACT.wait(us(40), us(50)), Wait::Spin(us(50)));
    assert_eq!(Pacing::EXACT.wait(us(0), us(50)), Wait::Sleep(us(50)));
    assert_eq!(Pacing::NONE.wait(us(49), us(50)), Wait::Sleep(us(50)));
    // An early send's response time counts from when it left, a late one's from when due.
    assert_eq!(latency_origin(us(40), us(25)), us(25));
    assert_eq!(latency_origin(us(10), us(25)), us(10));
}

#[test]
fn poisson_arrivals_are_all_sent_once_in_order() {
    let arrival = Arrival::Poisson { seed: 7 };
    let (_, expected, run) = simulate(
        "50ms:50000",
        arrival,
        Pacing::EXACT,
        Duration::from_micros(40),
        None,
    );
    assert!(expected.len() > 2000, "{}", expected.len());
    check_exact_and_honest(&expected, &run, Pacing::EXACT);
    assert!(run.sleeps + run.spins < expected.len());
}

#[test]
fn a_stall_sends_its_backlog_at_once_each_late_by_its_own_lag() {
    let stall = (Duration::from_millis(100), Duration::from_millis(100));
    let (start, expected, run) = simulate(
        "400ms:5000",
        Arrival::Uniform,
        Pacing::EXACT,
        Duration::from_micros(30),
        Some(stall),
    );
    assert_eq!(expected.len(), 2000);
    check_exact_and_honest(&expected, &run, Pacing::EXACT);
    // Everything due in the stall went out in the one wake-up that ended it, each late by
    // the time from its own due time to the stall's end.
    let resumed = run
        .sent
        .iter()
        .find(|s| s.at >= start + Duration::from_millis(200))
        .unwrap()
        .at;
    let backlog: Vec<&Sent> = run.sent.iter().filter(|s| s.at == resumed).collect();
    assert!(backlog.len() >= 499, "{}", backlog.len());
    for s in &backlog {
        assert_eq!(
            s.at.saturating_duration_since(s.intended),
            resumed - s.intended
        );
    }
    // Before and after the stall, at 200 µs apart with 30 µs wake-ups, no send is late by
    // more than the wake-up's latency.
    for s in run.sent.iter().filter(|s| s.at != resumed) {
        assert!(s.at.saturating_duration_since(s.intended) <= Duration::from_micros(30));
    }
}

#[test]
fn a_tick_never_sends_early_nor_spins() {
    let (_, expected, run) = simulate(
        "20ms:100000",
        Arrival::Uniform,
        Pacing::NONE,
        Duration::ZERO,
        None,
    );
    check_exact_and_honest(&expected, &run, Pacing::NONE);
    assert!(run.sent.iter().all(|s| s.at >= s.intended));
    assert_eq!(run.spins, 0);
}

#[test]
fn ticks_round_due_times_up_to_a_boundary() {
    let start = Instant::now();
    let profile = Profile::parse("1s:1000").unwrap();
    let pending = Pending::new(Schedule::new(&profile, Arrival::Uniform, 0, 1), start);
    let at = |us: u64| start + Duration::from_micros(us);
    let tick = Duration::from_millis(1);
    assert_eq!(pending.wake_for(at(0), tick), at(0));
    assert_eq!(pending.wake_for(at(1), tick), at(1_000));
    assert_eq!(pending.wake_for(at(1_000), tick), at(1_000));
    assert_eq!(pending.wake_for(at(2_400), tick), at(3_000));
    assert_eq!(pending.wake_for(at(2_400), Duration::ZERO), at(2_400));
}
