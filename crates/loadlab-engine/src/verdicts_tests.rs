//! The verdicts drawn from a run's outcome, through `summarize`, on hand-built outcomes.

use crate::config::RunSpec;
use crate::engine::{RunOutcome, ThreadReport};
use crate::stats::{Bucket, Phase, Recorder};
use crate::sys::CpuTime;
use std::time::{Duration, SystemTime};

/// The generator's verdict of a 2 s open loop at 1,000/s whose one thread noticed 3% of
/// its requests 5 ms late, used `cpu` and waited `waited` for its core.
fn generator_verdict(cpu: Duration, waited: Duration) -> Option<String> {
    verdicts_of(cpu, waited, 10, 0, Duration::from_secs(2))
        .into_iter()
        .find(|v| v.starts_with("the generator"))
}

/// Every verdict of that run, with `opened` connections (of a cap of 100) and `unsent`
/// requests due but never sent, its thread alive for `wall`.
fn verdicts_of(
    cpu: Duration,
    waited: Duration,
    opened: u64,
    unsent: u64,
    wall: Duration,
) -> Vec<String> {
    verdicts_served(
        cpu,
        waited,
        opened,
        unsent,
        wall,
        Duration::from_micros(200),
        2_000,
    )
}

/// As [`verdicts_of`], with each request holding its connection `service` from its send to
/// its answer, and `in_time` of the 2,000 sent completing within the schedule.
fn verdicts_served(
    cpu: Duration,
    waited: Duration,
    opened: u64,
    unsent: u64,
    wall: Duration,
    service: Duration,
    in_time: u64,
) -> Vec<String> {
    let config = RunSpec {
        url: "http://127.0.0.1:1/".into(),
        rate: Some(1_000.0),
        duration: Some(Duration::from_secs(2)),
        max_connections: Some(100),
        ..RunSpec::default()
    }
    .validate()
    .unwrap();
    let mut recorder = Recorder::default();
    let measured = recorder.phase(Phase::Measured);
    measured.connections_opened = opened;
    measured.not_sent = unsent;
    for i in 0..2_000u64 {
        let lag_ns = if i % 33 == 0 { 5_000_000 } else { 10_000 };
        measured.scheduler_lag.record(lag_ns).unwrap();
        measured.send_lag.record(lag_ns).unwrap();
        measured.latency.record(200_000).unwrap();
        measured.service.record(service.as_nanos() as u64).unwrap();
        measured.issued += 1;
        measured.completed += 1;
    }
    let mut traffic = crate::timeline::TrafficLog::new(&config);
    traffic.push(
        0,
        &[Bucket {
            completed: in_time,
            ..Bucket::default()
        }],
    );
    let thread = ThreadReport {
        recorder: Recorder::default(),
        crashed: false,
        cpu: CpuTime {
            user: cpu,
            system: Duration::ZERO,
        },
        wall,
        spin_idle: Duration::ZERO,
        waited: Some(waited),
    };
    let outcome = RunOutcome {
        address: "127.0.0.1:1".parse().unwrap(),
        started_at: SystemTime::now(),
        warmup: Duration::ZERO,
        elapsed: wall,
        interrupted: false,
        gave_up: None,
        recorder,
        traffic,
        intervals: Vec::new(),
        threads: vec![thread],
        nofile: None,
        pm_qos: Ok(()),
        steal: Vec::new(),
        udp_rcvbuf_bytes: None,
        alt_svc: None,
        ws: None,
    };
    crate::summary::summarize(&config, &outcome).verdicts
}

#[test]
fn a_late_generator_kept_off_its_core_is_told_to_get_a_core_of_its_own() {
    let v = generator_verdict(Duration::from_millis(500), Duration::from_millis(40)).unwrap();
    assert!(v.starts_with("the generator was late (it noticed due requests 5.00 ms late at p99, its worker threads were ready but waited 40 ms in all for a CPU that other tasks or a CPU quota held)"), "{v}");
    assert!(
        v.contains("run loadlab on cores of its own, without a CPU quota"),
        "{v}"
    );
}

#[test]
fn a_late_generator_nobody_crowded_is_told_to_get_more_threads() {
    let v = generator_verdict(Duration::from_millis(500), Duration::from_millis(1)).unwrap();
    assert!(
        v.starts_with("the generator was saturated (it noticed due requests 5.00 ms late at p99):"),
        "{v}"
    );
    assert!(v.contains("more threads (-t) or cores"), "{v}");
}

#[test]
fn a_busy_generator_is_saturated_whoever_else_ran() {
    let v = generator_verdict(Duration::from_millis(1_900), Duration::from_millis(40)).unwrap();
    assert!(v.starts_with("the generator was saturated (it noticed due requests 5.00 ms late at p99, a worker thread was busy 95% of the time, its worker threads were ready but waited 40 ms"), "{v}");
}

/// Requests never sent by a generator kept off its core, with connections to spare, are
/// not the target's failure; with every connection of the cap open, they are.
#[test]
fn requests_a_late_generator_never_sent_are_not_blamed_on_the_target() {
    let starved = verdicts_of(
        Duration::from_millis(100),
        Duration::from_secs(1),
        10,
        500,
        Duration::from_secs(2),
    );
    assert!(
        starved
            .iter()
            .any(|v| v.starts_with("the load fell behind its schedule")
                && v.contains(
                    "the generator's doing, not the target's; 500 requests were never sent"
                )),
        "{starved:?}"
    );
    assert!(
        !starved.iter().any(|v| v.contains("could not keep up")),
        "{starved:?}"
    );

    let capped = verdicts_of(
        Duration::from_millis(100),
        Duration::from_secs(1),
        100,
        500,
        Duration::from_secs(2),
    );
    assert!(
        capped
            .iter()
            .any(|v| v.starts_with("the target could not keep up")
                && v.contains(
                    "500 requests were never sent because every connection was busy (cap 100)"
                )),
        "{capped:?}"
    );
}

/// A late generator with CPU to spare whose requests went out, into a target that held
/// each for 400 ms and answered half of them within the schedule: the target set the pace
/// (the generator's 5 ms of lateness explains 5 of the 1,000 short), and requests never
/// sent waited for connections busy with the target, though fewer were open than the cap.
#[test]
fn a_late_generators_shortfall_the_target_explains_is_the_targets() {
    let slow = |unsent| {
        verdicts_served(
            Duration::from_millis(100),
            Duration::from_millis(300),
            10,
            unsent,
            Duration::from_secs(2),
            Duration::from_millis(400),
            1_000,
        )
    };
    let sent = slow(0);
    let all = sent.join("\n");
    assert!(
        sent.iter().any(|v| v.starts_with(super::TARGET_BEHIND)
            && v.ends_with(
                "the requests went out, their answers did not come in time: the target's \
                 limit, not the generator's (above)"
            )),
        "{all}"
    );
    assert!(
        sent.iter().any(|v| v.starts_with(
            "the generator noticed some requests late (it noticed due requests 5.00 ms late \
             at p99, its worker threads were ready but waited 300 ms in all"
        ) && v.contains("at most 5 of the 1000 requests that fell behind")),
        "{all}"
    );
    assert!(!all.contains("the generator's doing"), "{all}");
    assert!(!all.contains("may be faster than these numbers"), "{all}");
    let unsent = slow(500);
    let all = unsent.join("\n");
    assert!(
        unsent.iter().any(|v| v.starts_with(super::TARGET_BEHIND)
            && v.contains(
                "500 requests were never sent because every connection open was busy waiting \
                 for the target (10 opened, under the cap of 100)"
            )),
        "{all}"
    );
    assert!(!all.contains("the generator's doing"), "{all}");
}

/// Over a long run, a few milliseconds' wait is not what made the generator late: the wait
/// must also be 0.1% of the threads' time.
#[test]
fn a_long_runs_short_wait_does_not_excuse_the_generator() {
    let late = |waited_ms: u64| {
        verdicts_of(
            Duration::from_secs(10),
            Duration::from_millis(waited_ms),
            10,
            0,
            Duration::from_secs(100),
        )
        .into_iter()
        .find(|v| v.starts_with("the generator"))
        .unwrap()
    };
    assert!(
        late(8).starts_with("the generator was saturated"),
        "{}",
        late(8)
    );
    assert!(
        late(120).starts_with("the generator was late"),
        "{}",
        late(120)
    );
}

/// The warnings of an empty HTTP/3 run whose UDP sockets got `rcvbuf` bytes of receive
/// buffer.
fn warnings_with_udp_rcvbuf(rcvbuf: Option<u64>) -> Vec<String> {
    let config = RunSpec {
        url: "https://127.0.0.1:1/".into(),
        http3: true,
        requests: Some(1),
        ..RunSpec::default()
    }
    .validate()
    .unwrap();
    let outcome = RunOutcome {
        address: "127.0.0.1:1".parse().unwrap(),
        started_at: SystemTime::now(),
        warmup: Duration::ZERO,
        elapsed: Duration::from_secs(1),
        interrupted: false,
        gave_up: None,
        recorder: Recorder::default(),
        traffic: crate::timeline::TrafficLog::new(&config),
        intervals: Vec::new(),
        threads: Vec::new(),
        nofile: None,
        pm_qos: Ok(()),
        steal: Vec::new(),
        udp_rcvbuf_bytes: rcvbuf,
        alt_svc: None,
        ws: None,
    };
    crate::summary::summarize(&config, &outcome).warnings
}

#[test]
fn a_udp_receive_buffer_capped_by_the_kernel_is_warned_of_with_the_fix() {
    let capped = warnings_with_udp_rcvbuf(Some(212_992));
    let w = capped
        .iter()
        .find(|w| w.contains("UDP receive buffer"))
        .expect("a warning");
    assert!(w.contains("208 KiB, not the 4 MiB asked"), "{w}");
    assert!(w.contains("sysctl -w net.core.rmem_max=8388608"), "{w}");
    for fine in [Some(4 << 20), None] {
        let w = warnings_with_udp_rcvbuf(fine);
        assert!(!w.iter().any(|w| w.contains("UDP receive buffer")), "{w:?}");
    }
}

/// A verdict that blamed the target for falling behind is reworded once the machine is known
/// to have dropped the run's traffic; other verdicts stay as they are.
#[test]
fn the_target_is_spared_for_what_the_machine_dropped() {
    let mut verdicts = verdicts_of(
        Duration::from_millis(100),
        Duration::from_secs(1),
        100,
        500,
        Duration::from_secs(2),
    );
    let before = verdicts.clone();
    assert!(super::spare_the_target(
        &mut verdicts,
        "the kernel dropped 1,234 datagrams for a full receive buffer"
    ));
    assert!(
        !verdicts.iter().any(|v| v.starts_with(super::TARGET_BEHIND)),
        "{verdicts:?}"
    );
    let spared = verdicts
        .iter()
        .find(|v| v.starts_with("the load fell behind its schedule: "))
        .unwrap_or_else(|| panic!("{verdicts:?}"));
    assert!(spared.contains("requests/s completed while"), "{spared}");
    assert!(
        spared.contains("never sent because every connection was busy"),
        "{spared}"
    );
    assert!(
        spared.contains("meanwhile the kernel dropped 1,234 datagrams for a full receive buffer"),
        "{spared}"
    );
    assert!(
        spared.contains("not evidence against the target"),
        "{spared}"
    );
    assert_eq!(verdicts.len(), before.len());
    // Nothing to spare: nothing changes.
    let mut none = vec!["the generator was saturated".to_string()];
    assert!(!super::spare_the_target(&mut none, "x"));
    assert_eq!(none, ["the generator was saturated"]);
}
