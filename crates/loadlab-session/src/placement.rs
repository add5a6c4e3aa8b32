//! Where loadlab runs against where the server runs, and what follows: a launched server with
//! a CPU quota goes on CPUs of its own when the machine has them ([`apart`]); with CPUs of its
//! own, a closed loop busy-polls, so the server never pays to wake loadlab for each response
//! (an interrupt on the server's CPU that no remote client would cost it). Decided once, when
//! a session is prepared; read-only probes of the machine, no changes to it.

use crate::server::{cpus, ServerSpec};
use loadlab_engine::RunConfig;
use std::collections::BTreeSet;

/// Whether a closed loop polls for responses instead of sleeping between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BusyPoll {
    /// Poll when it is free: see [`busy_poll_auto`].
    #[default]
    Auto,
    /// Always (`--busy-poll`).
    On,
    /// Never (`--no-busy-poll`).
    Off,
}

/// Why polling is free here, or `None` when it is not. Polling costs the CPUs loadlab runs
/// on, so it is chosen only in a closed loop, with a thread per CPU at most, against a server
/// on this machine whose processes may not run on any of those CPUs (pinned apart, with
/// `taskset` or `--pin`), over HTTPS/1.1.
pub fn busy_poll_auto(config: &RunConfig) -> Option<String> {
    use std::net::ToSocketAddrs;
    // Over HTTP/2 loadlab's own CPU (the h2 stack) runs out about when nginx's does, and
    // polling showed no gain there against nginx (0.85x to 1.02x of sleeping, within this
    // VM's noise), where over HTTPS/1.1 it added a third. Over HTTP/3 it cost: 69k/s at
    // 0.91 CPU-s per 100k requests polling, 84k/s at 0.43 sleeping (bench/vs-h3.sh's server).
    // Over cleartext HTTP/1.1 it showed no gain: against nginx pinned apart on a 2-core AMD
    // EPYC VM, polling's median rate was 0.82x to 1.07x of sleeping's in six interleaved
    // runs (below 1 in five), at a higher CPU per request in five (`bench/vs-wrk.sh` and
    // others, 29 Nov 2026: docs/generator.md), where over HTTPS it added a third.
    if config.is_open_loop() || config.http2 || config.http3 || config.tls.is_none() {
        return None;
    }
    let own: BTreeSet<usize> = match &config.generator_cpus {
        Some(cpus) => cpus.iter().copied().collect(),
        None => loadlab_probe::affinity::of(0)?,
    };
    if config.threads > own.len() {
        return None;
    }
    let local = (config.url.host.as_str(), config.url.port)
        .to_socket_addrs()
        .ok()?
        .any(|a| a.ip().is_loopback());
    if !local {
        return None;
    }
    let pids = loadlab_probe::affinity::listeners(config.url.port);
    let mut theirs = BTreeSet::new();
    for &pid in &pids {
        theirs.extend(loadlab_probe::affinity::of_process(pid)?);
    }
    if theirs.is_empty() || !own.is_disjoint(&theirs) {
        return None;
    }
    let list = |set: &BTreeSet<usize>| cpus(&set.iter().copied().collect::<Vec<_>>());
    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
    Some(format!(
        "loadlab may run only on CPU {}, the server (pid {}) only on CPU {}",
        list(&own),
        pids.join(", "),
        list(&theirs)
    ))
}

/// The CPUs a launched server with a quota of `quota_cpus` cores goes on when nobody chose
/// (`--pin`), out of `available` (those loadlab may use): the last ⌈quota⌉, loadlab keeping
/// the others; `None` when that would leave loadlab none (on one CPU the two share it, and
/// the machine's `cpu_sharing` check says so).
///
/// Apart even for 0.08 of a CPU: a quota bounds the server's time, not when it runs, and on a
/// CPU loadlab also uses each response waits for loadlab's turn, so loadlab's work shows in
/// the server's latency. ⌈quota⌉ CPUs hold all the time the quota grants (more threads take
/// turns there, as in a container of that size). Only with a quota: a server without one is
/// meant to have the whole machine, and taking CPUs from it would measure a smaller server.
pub fn apart(quota_cpus: f64, available: &BTreeSet<usize>) -> Option<Vec<usize>> {
    // A hair below the quota first: 1.0 given as 1.0000000001 still needs one CPU.
    let needed = ((quota_cpus - 1e-9).ceil().max(1.0)) as usize;
    if !quota_cpus.is_finite() || needed >= available.len() {
        return None;
    }
    Some(available.iter().rev().take(needed).rev().copied().collect())
}

/// Pins `server` by [`apart`] when it is launched here with a quota and no `--pin`; returns
/// why, for the run's notes, and loadlab's CPUs: the rest of those it may use (not of every
/// CPU online: under `taskset` loadlab stays within what it was given). A server pinned by
/// the user, unlimited or watched stays as given.
pub(crate) fn place_apart(server: &mut ServerSpec) -> Option<(String, Vec<usize>)> {
    let quota = server.limits.cpus?;
    if !server.launches() || server.agent.is_some() || server.limits.pin.is_some() {
        return None;
    }
    // A pin nobody asked for must never make a run fail: in strict mode an unheld pin is
    // refused, so without a cpuset controller the two stay together (and the machine's
    // `cpu_sharing` check says so); best-effort pins by the affinity mask instead.
    if server.mode == loadlab_probe::LimitsMode::Strict && !loadlab_probe::cgroup::can_pin() {
        return None;
    }
    let available = loadlab_probe::affinity::of(0)?;
    let pin = apart(quota, &available)?;
    let why = format!(
        "apart by default: a quota of {quota} CPU fits on {} of the {} CPUs; --pin CPUS to choose",
        pin.len(),
        available.len()
    );
    let free = available.into_iter().filter(|c| !pin.contains(c)).collect();
    server.limits.pin = Some(pin);
    Some((why, free))
}

/// The run's note on where each side runs: `server` pinned, loadlab on `free`, `why` the
/// default's reason (`None`: the user's `--pin`).
pub(crate) fn describe(server: &[usize], free: &[usize], why: Option<&str>) -> String {
    format!(
        "placement: the server on CPU {}, loadlab on CPU {} ({})",
        cpus(server),
        cpus(free),
        why.unwrap_or("--pin")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where a quota goes on machines of 1 to 8 CPUs, and on a loadlab confined to some.
    #[test]
    fn apart_by_quota_and_cores() {
        let set = |v: &[usize]| v.iter().copied().collect::<BTreeSet<usize>>();
        // (quota, loadlab's CPUs, the server's CPUs)
        type Case = (f64, &'static [usize], Option<&'static [usize]>);
        let cases: &[Case] = &[
            // One CPU: nowhere apart; the two share it and the check warns.
            (0.08, &[0], None),
            (1.0, &[0], None),
            // Two: the flagship's 0.08 of a CPU, and a whole one, on CPU 1; loadlab on CPU 0.
            (0.08, &[0, 1], Some(&[1])),
            (1.0, &[0, 1], Some(&[1])),
            (1.000_000_000_1, &[0, 1], Some(&[1])),
            // A quota needing every CPU leaves loadlab none: shared.
            (1.5, &[0, 1], None),
            (2.0, &[0, 1], None),
            (0.5, &[0, 1, 2, 3], Some(&[3])),
            (1.5, &[0, 1, 2, 3], Some(&[2, 3])),
            (3.0, &[0, 1, 2, 3], Some(&[1, 2, 3])),
            (4.0, &[0, 1, 2, 3], None),
            (2.0, &[0, 1, 2, 3, 4, 5, 6, 7], Some(&[6, 7])),
            // loadlab under taskset -c 2,5,7: the server goes within those.
            (0.25, &[2, 5, 7], Some(&[7])),
            (f64::NAN, &[0, 1], None),
        ];
        for &(quota, available, want) in cases {
            assert_eq!(
                apart(quota, &set(available)),
                want.map(<[usize]>::to_vec),
                "quota {quota} on CPUs {available:?}"
            );
        }
    }

    #[test]
    fn describe_names_both_sides() {
        assert_eq!(
            describe(&[1], &[0], None),
            "placement: the server on CPU 1, loadlab on CPU 0 (--pin)"
        );
        assert_eq!(
            describe(&[6, 7], &[0, 1, 2, 3, 4, 5], Some("why")),
            "placement: the server on CPU 6-7, loadlab on CPU 0-5 (why)"
        );
    }
}
