//! Checks of the host around the run: cgroups for limits, CPU clock and idle states, steal,
//! CPUs shared with the server, leftovers of killed runs (busy neighbours: [`super::busy`]).

use super::{check, DEEP_IDLE_US, STEAL_WARN};
use crate::plan::PlannedRun;
use crate::readings::Readings;
use loadlab_result::{Check, CheckStatus};
use std::collections::BTreeSet;

fn cpu_list(set: &BTreeSet<usize>) -> String {
    loadlab_probe::limits::format_cpu_list(&set.iter().copied().collect::<Vec<_>>())
}

pub fn cgroup(r: &Readings, p: &PlannedRun) -> Check {
    let c = &r.cgroup;
    let found = match (&c.v2, c.v1.is_empty()) {
        (Some(v2), true) => format!("cgroup v2 (controllers: {})", v2.join(" ")),
        (Some(v2), false) => format!(
            "cgroup v1 and v2 (v1: {}; v2: {})",
            c.v1.join(" "),
            if v2.is_empty() {
                "none".into()
            } else {
                v2.join(" ")
            }
        ),
        (None, false) => format!("cgroup v1 (controllers: {})", c.v1.join(" ")),
        (None, true) => "no cgroup hierarchy mounted".into(),
    };
    let wanted = p.limits;
    if !wanted.any() {
        return check(
            "cgroup",
            CheckStatus::Pass,
            found,
            "nothing: no --cpus, --memory or --pin".into(),
            None,
        );
    }
    let has = |name: &str| {
        c.v2.as_ref().is_some_and(|v| v.iter().any(|x| x == name)) || c.v1.iter().any(|x| x == name)
    };
    let needed: Vec<&str> = [
        (wanted.cpu, "cpu"),
        (wanted.memory, "memory"),
        (wanted.cpuset, "cpuset"),
    ]
    .into_iter()
    .filter_map(|(w, n)| w.then_some(n))
    .collect();
    let missing: Vec<&str> = needed.iter().copied().filter(|n| !has(n)).collect();
    let needs = format!(
        "the {} controller{}",
        needed.join(", "),
        if needed.len() == 1 { "" } else { "s" }
    );
    if !r.root {
        return check(
            "cgroup",
            CheckStatus::Fail,
            found,
            format!("{needs}, and root to make a group"),
            Some(
                "run loadlab as root (sudo), or add --limits best-effort to run without the limits"
                    .into(),
            ),
        );
    }
    if !missing.is_empty() {
        return check(
            "cgroup",
            CheckStatus::Fail,
            found,
            format!("{needs}; missing: {}", missing.join(", ")),
            Some(format!(
                "enable them: echo \"{}\" > /sys/fs/cgroup/cgroup.subtree_control (v2), or mount \
                 their v1 hierarchies; or add --limits best-effort",
                missing
                    .iter()
                    .map(|m| format!("+{m}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )),
        );
    }
    check("cgroup", CheckStatus::Pass, found, needs, None)
}

pub fn cpu_governor(r: &Readings) -> Check {
    let needs = "a steady clock: the performance governor".to_string();
    if r.governors.is_empty() {
        return check(
            "cpu_governor",
            CheckStatus::Pass,
            "no cpufreq driver (on a virtual machine the host sets the clock)".into(),
            needs,
            None,
        );
    }
    let others: BTreeSet<&str> = r
        .governors
        .iter()
        .filter(|(_, g)| g != "performance")
        .map(|(_, g)| g.as_str())
        .collect();
    let cpus: BTreeSet<usize> = r
        .governors
        .iter()
        .filter(|(_, g)| g != "performance")
        .map(|(c, _)| *c)
        .collect();
    if others.is_empty() {
        return check(
            "cpu_governor",
            CheckStatus::Pass,
            "every CPU uses the performance governor".into(),
            needs,
            None,
        );
    }
    check(
        "cpu_governor",
        CheckStatus::Warn,
        format!(
            "CPU {} use{} the {} governor: the clock follows the load, and so do the figures",
            cpu_list(&cpus),
            if cpus.len() == 1 { "s" } else { "" },
            others.into_iter().collect::<Vec<_>>().join("/")
        ),
        needs,
        Some(
            "cpupower frequency-set -g performance (or: echo performance | tee \
             /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)"
                .into(),
        ),
    )
}

pub fn cpu_idle(r: &Readings, p: &PlannedRun) -> Check {
    let deep: Vec<&crate::readings::IdleState> = r
        .idle_states
        .iter()
        .filter(|s| !s.disabled && s.latency_us > DEEP_IDLE_US)
        .collect();
    let states = if r.idle_states.is_empty() {
        "no cpuidle states listed".to_string()
    } else {
        format!(
            "idle states {}",
            r.idle_states
                .iter()
                .map(|s| format!(
                    "{} ({} µs{})",
                    s.name,
                    s.latency_us,
                    if s.disabled { ", disabled" } else { "" }
                ))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let holds = p.pm_qos && r.pm_qos_device && r.root;
    let found = format!(
        "{states}; PM QoS (/dev/cpu_dma_latency) {}",
        match (r.pm_qos_device, holds) {
            (false, _) => "absent".to_string(),
            (true, true) => "held at 0 by loadlab during the run".into(),
            (true, false) if !p.pm_qos => "not held (--no-pm-qos)".into(),
            (true, false) => "not held (needs root)".into(),
        }
    );
    let needs = "CPUs that wake in microseconds: idle states no deeper than polling while \
                 measuring"
        .to_string();
    if holds {
        return check("cpu_idle", CheckStatus::Pass, found, needs, None);
    }
    if !r.pm_qos_device {
        return check(
            "cpu_idle",
            CheckStatus::Warn,
            found,
            needs,
            Some(
                "a kernel with PM QoS (CONFIG_CPU_IDLE), or limit idle states by hand: cpupower \
                 idle-set -D 10"
                    .into(),
            ),
        );
    }
    if deep.is_empty() && !r.idle_states.is_empty() {
        return check("cpu_idle", CheckStatus::Pass, found, needs, None);
    }
    check(
        "cpu_idle",
        CheckStatus::Warn,
        found,
        needs,
        Some(if p.pm_qos {
            "run loadlab as root, so it holds /dev/cpu_dma_latency at 0 during the run".into()
        } else {
            "drop --no-pm-qos (as root), or: cpupower idle-set -D 10".into()
        }),
    )
}

pub fn steal(r: &Readings) -> Check {
    let needs = format!(
        "less than {:.0}% of CPU time stolen by the hypervisor",
        STEAL_WARN * 100.0
    );
    match r.steal {
        None => check(
            "steal",
            CheckStatus::Pass,
            "not reported (not a virtual machine, or the hypervisor does not say)".into(),
            needs,
            None,
        ),
        Some(s) if s >= STEAL_WARN => check(
            "steal",
            CheckStatus::Warn,
            format!(
                "{:.1}% of CPU time stolen over {:.1} s: another tenant or the host is busy",
                s * 100.0,
                r.sampled_s
            ),
            needs,
            Some("run later, or on a dedicated host; repeat runs and compare their spread".into()),
        ),
        Some(s) => check(
            "steal",
            CheckStatus::Pass,
            format!(
                "{:.1}% of CPU time stolen over {:.1} s",
                s * 100.0,
                r.sampled_s
            ),
            needs,
            None,
        ),
    }
}

pub fn cpu_sharing(r: &Readings, p: &PlannedRun) -> Check {
    let server = p
        .server_cpus
        .clone()
        .or_else(|| r.listener.as_ref().map(|l| l.cpus.clone()));
    let needs = "loadlab and the server on CPUs of their own".to_string();
    let Some(server) = server else {
        return check(
            "cpu_sharing",
            CheckStatus::Pass,
            "the server's CPUs are not known here (not launched, not listening on this \
             machine)"
                .into(),
            needs,
            None,
        );
    };
    let shared: BTreeSet<usize> = server.intersection(&p.generator_cpus).copied().collect();
    let found = format!(
        "loadlab may run on CPU {}, the server on CPU {}",
        cpu_list(&p.generator_cpus),
        cpu_list(&server)
    );
    if shared.is_empty() {
        return check("cpu_sharing", CheckStatus::Pass, found, needs, None);
    }
    check(
        "cpu_sharing",
        CheckStatus::Warn,
        format!(
            "{found}: they share CPU {}, so loadlab's own work shows in the server's latency",
            cpu_list(&shared)
        ),
        needs,
        Some(
            "--pin CPUS for a server loadlab starts (loadlab then takes the others), or start \
             both under taskset -c with lists apart"
                .into(),
        ),
    )
}

pub fn stale_links(r: &Readings) -> Check {
    if r.stale_links.is_empty() {
        return check(
            "stale_links",
            CheckStatus::Pass,
            "no namespace or veth left by a killed loadlab".into(),
            "nothing".into(),
            None,
        );
    }
    check(
        "stale_links",
        CheckStatus::Warn,
        format!(
            "left by loadlab runs that were killed: {}",
            r.stale_links.join(", ")
        ),
        "nothing: they only clutter".into(),
        Some(format!(
            "the next loadlab run as root removes them; or by hand: {}",
            r.stale_links
                .iter()
                .map(|n| match n.strip_prefix("netns ") {
                    Some(ns) => format!("ip netns del {ns}"),
                    None => format!("ip link del {}", n.trim_start_matches("veth ")),
                })
                .collect::<Vec<_>>()
                .join("; ")
        )),
    )
}

pub fn link(r: &Readings, p: &PlannedRun) -> Check {
    let Some(netem) = p.link else {
        return check(
            "link",
            CheckStatus::Pass,
            "no shaped link asked (--bandwidth, --delay, --loss)".into(),
            "nothing".into(),
            None,
        );
    };
    let needs = format!(
        "root and iproute2 to make a network namespace, a veth pair and {}",
        if netem {
            "tbf and netem qdiscs (netem is tried when the link is made)"
        } else {
            "tbf qdiscs"
        }
    );
    let found = format!(
        "{}, iproute2 {}",
        if r.root { "root" } else { "not root" },
        if r.iproute2 { "installed" } else { "missing" }
    );
    if r.root && r.iproute2 {
        return check("link", CheckStatus::Pass, found, needs, None);
    }
    check(
        "link",
        CheckStatus::Fail,
        found,
        needs,
        Some(
            match (r.root, r.iproute2) {
                (false, false) => {
                    "run loadlab as root (sudo), with iproute2 installed (apt-get install iproute2)"
                }
                (false, true) => "run loadlab as root (sudo)",
                _ => "apt-get install iproute2 (or your system's iproute2 package)",
            }
            .into(),
        ),
    )
}
