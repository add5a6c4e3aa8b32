//! Each check against tables of machines and plans: no root, no /proc. This file holds the
//! fixtures (a well-set machine, closed and open plans, the table runner) and the test of the
//! whole list; the checks of `network` are tested in `network`, those of `host` and `busy`
//! in `host`.

mod host;
mod network;
mod udp;

use super::*;
use crate::plan::{OpenLoop, Target};
use crate::readings::CgroupReading;
use CheckStatus::{Fail, Pass};

/// A well-set machine: root, wide limits, nothing else running.
fn machine() -> Readings {
    Readings {
        nofile: Some((1024, 1_048_576)),
        port_range: Some((32768, 60999)),
        tcp_tw_reuse: Some(2),
        somaxconn: Some(4096),
        tcp_max_syn_backlog: Some(2048),
        tcp_syncookies: Some(1),
        conntrack: None,
        cgroup: CgroupReading {
            v2: Some(vec!["cpuset".into(), "cpu".into(), "memory".into()]),
            v1: Vec::new(),
        },
        root: true,
        governors: Vec::new(),
        idle_states: Vec::new(),
        pm_qos_device: true,
        steal: Some(0.0),
        sampled_s: 0.2,
        busy: Vec::new(),
        listener: None,
        stale_links: Vec::new(),
        iproute2: true,
        rmem_max: Some(8 << 20),
        wmem_max: Some(212_992),
    }
}

fn closed(connections: u64) -> PlannedRun {
    PlannedRun {
        connections,
        keepalive: true,
        target: Some(Target {
            port: 8080,
            loopback: true,
        }),
        generator_cpus: [0, 1].into(),
        pm_qos: true,
        ..PlannedRun::default()
    }
}

fn open(rate: f64, cap: u64) -> PlannedRun {
    PlannedRun {
        open_loop: Some(OpenLoop {
            peak_rate: rate,
            max_connections: cap,
        }),
        ..closed(0)
    }
}

/// Runs `f` on each `(readings, plan, status, needles)` row: the status must match and every
/// needle appear in `found`, `needs` or `fix`.
fn table(
    f: impl Fn(&Readings, &PlannedRun) -> Check,
    rows: Vec<(Readings, PlannedRun, CheckStatus, &[&str])>,
) {
    for (i, (r, p, status, needles)) in rows.into_iter().enumerate() {
        let c = f(&r, &p);
        assert_eq!(c.status, status, "row {i}: {}", line(&c));
        let text = line(&c);
        for n in needles {
            assert!(text.contains(n), "row {i}: `{text}` lacks `{n}`");
        }
        assert_eq!(
            c.fix.is_some(),
            status != Pass,
            "row {i}: a fix when not PASS: {text}"
        );
    }
}

/// A check that reads only the machine, as [`table`] runs it (the row's plan unused).
fn readings_only(check: fn(&Readings) -> Check) -> impl Fn(&Readings, &PlannedRun) -> Check {
    move |r, _| check(r)
}

fn with(f: impl FnOnce(&mut Readings)) -> Readings {
    let mut r = machine();
    f(&mut r);
    r
}

fn plan(base: PlannedRun, f: impl FnOnce(&mut PlannedRun)) -> PlannedRun {
    let mut p = base;
    f(&mut p);
    p
}

#[test]
fn all_in_order_and_worst() {
    let checks = all(&machine(), &closed(10));
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "open_files",
            "ephemeral_ports",
            "listen_backlog",
            "conntrack",
            "udp_buffers",
            "cgroup",
            "cpu_governor",
            "cpu_idle",
            "steal",
            "cpu_sharing",
            "busy_processes",
            "stale_links",
            "link"
        ]
    );
    assert_eq!(worst(&checks), Pass);
    let bad = all(&with(|r| r.nofile = Some((10, 10))), &closed(10));
    assert_eq!(worst(&bad), Fail);
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(1234567), "1,234,567");
}
