//! Each check against tables of machines and plans: no root, no /proc.

use super::*;
use crate::plan::{Backlog, OpenLoop, Target, WantedControllers};
use crate::readings::{BusyProcess, CgroupReading, Conntrack, IdleState, Listener};
use CheckStatus::{Fail, Pass, Warn};

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
    f: fn(&Readings, &PlannedRun) -> Check,
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
fn open_files() {
    table(
        super::open_files,
        vec![
            (
                machine(),
                closed(10_000),
                Pass,
                &["hard 1,048,576", "10,064 descriptors"],
            ),
            (
                with(|r| r.nofile = Some((256, 256))),
                closed(1000),
                Fail,
                &[
                    "soft 256, hard 256",
                    "1,064 descriptors: 1,000 connections plus 64",
                    "ulimit -n 65536",
                ],
            ),
            // An open loop's cap is only a cap.
            (
                with(|r| r.nofile = Some((256, 256))),
                open(100.0, 10_000),
                Warn,
                &["up to 10,064"],
            ),
            (with(|r| r.nofile = None), closed(10), Pass, &["unknown"]),
        ],
    );
}

#[test]
fn ephemeral_ports() {
    let no_keepalive = |p: PlannedRun| plan(p, |p| p.keepalive = false);
    let remote = |p: PlannedRun| {
        plan(p, |p| {
            p.target = Some(Target {
                port: 80,
                loopback: false,
            })
        })
    };
    table(
        super::ephemeral_ports,
        vec![
            (
                machine(),
                closed(100),
                Pass,
                &["28,232 local ports (32768-60999)"],
            ),
            (
                machine(),
                closed(30_000),
                Fail,
                &["30,000 connections open at once", "ip_local_port_range"],
            ),
            // Loopback reuses TIME_WAIT ports with the default tcp_tw_reuse=2.
            (
                machine(),
                no_keepalive(open(5_000.0, 100)),
                Pass,
                &["reused for loopback"],
            ),
            // Off loopback it does not: 5,000/s x 60 s is past 28,232 ports.
            (
                machine(),
                remote(no_keepalive(open(5_000.0, 100))),
                Warn,
                &[
                    "300,000 sockets in TIME_WAIT",
                    "beyond 470 new connections/s",
                    "tcp_tw_reuse=1",
                ],
            ),
            (
                with(|r| r.tcp_tw_reuse = Some(1)),
                remote(no_keepalive(open(5_000.0, 100))),
                Pass,
                &["reused after 1 s"],
            ),
            (
                machine(),
                remote(no_keepalive(open(100.0, 100))),
                Pass,
                &["at 100 requests/s"],
            ),
            // A closed loop's rate is not known before it runs: the limit is said.
            (
                machine(),
                remote(no_keepalive(closed(10))),
                Pass,
                &["beyond 470 requests/s"],
            ),
            (
                with(|r| r.port_range = None),
                closed(10),
                Pass,
                &["unknown"],
            ),
        ],
    );
}

#[test]
fn listen_backlog() {
    let backlog = |value: u32, source: &str| {
        Some(Backlog {
            value,
            source: source.into(),
        })
    };
    table(
        super::listen_backlog,
        vec![
            (machine(), closed(100), Pass, &["not known here"]),
            (
                machine(),
                plan(closed(100), |p| {
                    p.backlog = backlog(1024, "the lab's default")
                }),
                Pass,
                &["1024 (the lab's default)"],
            ),
            (
                machine(),
                plan(closed(100), |p| p.backlog = backlog(1, "BACKLOG=1")),
                Warn,
                &[
                    "100 connections arriving at once",
                    "more than the backlog of 1",
                    "BACKLOG=100",
                ],
            ),
            (
                machine(),
                plan(closed(10), |p| p.backlog = backlog(8192, "BACKLOG=8192")),
                Warn,
                &["asks for 8192 but gets 4096", "net.core.somaxconn=8192"],
            ),
            // A server already listening: the kernel's figure.
            (
                with(|r| {
                    r.listener = Some(Listener {
                        backlog: 16,
                        pids: vec![7],
                        cpus: [0].into(),
                    })
                }),
                closed(50),
                Warn,
                &["16 (its listening socket)", "BACKLOG=50"],
            ),
            // An open loop with keep-alive opens at most about a second's arrivals at once.
            (
                machine(),
                plan(open(10.0, 10_000), |p| {
                    p.backlog = backlog(128, "BACKLOG=128")
                }),
                Pass,
                &[],
            ),
            (
                with(|r| r.tcp_syncookies = Some(0)),
                plan(closed(3000), |p| p.backlog = backlog(4096, "BACKLOG=4096")),
                Warn,
                &["SYN queue of 2048", "tcp_max_syn_backlog=3000"],
            ),
        ],
    );
}

#[test]
fn conntrack() {
    let ct = |max: u64, count: u64| {
        with(move |r| {
            r.conntrack = Some(Conntrack {
                max,
                count,
                time_wait_s: 120,
            })
        })
    };
    table(
        super::conntrack,
        vec![
            (machine(), closed(100), Pass, &["not loaded"]),
            (ct(65_536, 100), closed(1000), Pass, &["1,000 entries"]),
            (
                ct(65_536, 100),
                plan(open(1000.0, 100), |p| p.keepalive = false),
                Fail,
                &["120,100 entries", "nf_conntrack_max=262144"],
            ),
            (
                ct(2_000, 500),
                closed(1300),
                Warn,
                &["most of the 1,500 free"],
            ),
        ],
    );
}

#[test]
fn cgroup() {
    let limits = |cpu, memory, cpuset| {
        plan(closed(10), |p| {
            p.limits = WantedControllers {
                cpu,
                memory,
                cpuset,
            }
        })
    };
    table(
        super::cgroup,
        vec![
            (
                machine(),
                closed(10),
                Pass,
                &["cgroup v2 (controllers: cpuset cpu memory)"],
            ),
            (
                machine(),
                limits(true, true, true),
                Pass,
                &["cpu, memory, cpuset controllers"],
            ),
            (
                with(|r| r.root = false),
                limits(true, false, false),
                Fail,
                &["root", "--limits best-effort"],
            ),
            (
                with(|r| {
                    r.cgroup = CgroupReading {
                        v2: Some(vec![]),
                        v1: vec!["cpu".into(), "cpuacct".into()],
                    }
                }),
                limits(true, true, false),
                Fail,
                &["cgroup v1 and v2", "missing: memory", "+memory"],
            ),
            (
                with(|r| r.cgroup = CgroupReading::default()),
                closed(1),
                Pass,
                &["no cgroup hierarchy"],
            ),
        ],
    );
}

#[test]
fn cpu_governor_idle_steal() {
    let gov = |g: &[&str]| {
        let g: Vec<(usize, String)> = g
            .iter()
            .enumerate()
            .map(|(i, s)| (i, s.to_string()))
            .collect();
        with(move |r| r.governors = g)
    };
    let run = |r: &Readings, _: &PlannedRun| super::cpu_governor(r);
    table(
        run,
        vec![
            (machine(), closed(1), Pass, &["no cpufreq driver"]),
            (
                gov(&["performance", "performance"]),
                closed(1),
                Pass,
                &["performance governor"],
            ),
            (
                gov(&["performance", "powersave"]),
                closed(1),
                Warn,
                &["CPU 1 uses the powersave governor", "cpupower"],
            ),
        ],
    );
    let deep = with(|r| {
        r.idle_states = vec![
            IdleState {
                name: "POLL".into(),
                latency_us: 0,
                disabled: false,
            },
            IdleState {
                name: "C6".into(),
                latency_us: 133,
                disabled: false,
            },
        ]
    });
    table(
        super::cpu_idle,
        vec![
            (
                deep.clone(),
                closed(1),
                Pass,
                &["C6 (133 µs)", "held at 0 by loadlab"],
            ),
            (
                deep.clone(),
                plan(closed(1), |p| p.pm_qos = false),
                Warn,
                &["--no-pm-qos"],
            ),
            (
                with(|r| {
                    r.root = false;
                    r.idle_states = deep.idle_states.clone()
                }),
                closed(1),
                Warn,
                &["needs root"],
            ),
            (
                with(|r| r.pm_qos_device = false),
                closed(1),
                Warn,
                &["absent"],
            ),
        ],
    );
    let run = |r: &Readings, _: &PlannedRun| super::steal(r);
    table(
        run,
        vec![
            (machine(), closed(1), Pass, &["0.0% of CPU time stolen"]),
            (
                with(|r| r.steal = Some(0.12)),
                closed(1),
                Warn,
                &["12.0% of CPU time stolen over 0.2 s"],
            ),
            (with(|r| r.steal = None), closed(1), Pass, &["not reported"]),
        ],
    );
}

#[test]
fn cpu_sharing_and_neighbours() {
    table(
        super::cpu_sharing,
        vec![
            (machine(), closed(1), Pass, &["not known here"]),
            (
                machine(),
                plan(closed(1), |p| {
                    p.server_cpus = Some([0].into());
                    p.generator_cpus = [1].into()
                }),
                Pass,
                &["loadlab may run on CPU 1, the server on CPU 0"],
            ),
            (
                with(|r| {
                    r.listener = Some(Listener {
                        backlog: 1,
                        pids: vec![9],
                        cpus: [0, 1].into(),
                    })
                }),
                closed(1),
                Warn,
                &["they share CPU 0-1", "--pin"],
            ),
        ],
    );
    let busy = |cores: &[f64]| {
        let list: Vec<BusyProcess> = cores
            .iter()
            .enumerate()
            .map(|(i, c)| BusyProcess {
                pid: 100 + i as u32,
                name: format!("job{i}"),
                cores: *c,
                kernel_thread: false,
            })
            .collect();
        with(move |r| r.busy = list)
    };
    let run = |r: &Readings, _: &PlannedRun| super::busy_processes(r);
    table(
        run,
        vec![
            (machine(), closed(1), Pass, &["no other process"]),
            (busy(&[0.05]), closed(1), Pass, &[]),
            (
                busy(&[0.95, 0.4, 0.01]),
                closed(1),
                Warn,
                &[
                    "2 other processes used 1.4 CPUs",
                    "job0 (pid 100) 95%",
                    "kill 100 101",
                ],
            ),
        ],
    );
    let run = |r: &Readings, _: &PlannedRun| super::stale_links(r);
    table(
        run,
        vec![
            (machine(), closed(1), Pass, &[]),
            (
                with(|r| {
                    r.stale_links = vec!["netns loadlab-77-0".into(), "veth loadlab-00004d0".into()]
                }),
                closed(1),
                Warn,
                &["ip netns del loadlab-77-0", "ip link del loadlab-00004d0"],
            ),
        ],
    );
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

#[test]
fn link() {
    let shaped = |netem| plan(closed(1), |p| p.link = Some(netem));
    table(
        super::link,
        vec![
            (machine(), closed(1), Pass, &["no shaped link asked"]),
            (
                machine(),
                shaped(false),
                Pass,
                &["root, iproute2 installed", "tbf qdiscs"],
            ),
            (machine(), shaped(true), Pass, &["netem is tried"]),
            (
                with(|r| r.root = false),
                shaped(false),
                Fail,
                &["not root", "sudo"],
            ),
            (
                with(|r| r.iproute2 = false),
                shaped(false),
                Fail,
                &["iproute2 missing", "apt-get install iproute2"],
            ),
        ],
    );
}
