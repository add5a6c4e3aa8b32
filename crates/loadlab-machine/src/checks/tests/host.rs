//! The host checks (cgroup, CPU governor, idle states, steal, CPU sharing, busy processes,
//! stale links, the shaped link's tools) against tables of machines and plans.

use super::*;
use crate::plan::WantedControllers;
use crate::readings::{BusyProcess, CgroupReading, IdleState, Listener};
use CheckStatus::{Fail, Pass, Warn};

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
        crate::checks::cgroup,
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
    table(
        readings_only(crate::checks::cpu_governor),
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
        crate::checks::cpu_idle,
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
    table(
        readings_only(crate::checks::steal),
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
        crate::checks::cpu_sharing,
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
    table(
        readings_only(crate::checks::busy_processes),
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
    table(
        readings_only(crate::checks::stale_links),
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
fn link() {
    let shaped = |netem| plan(closed(1), |p| p.link = Some(netem));
    table(
        crate::checks::link,
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
