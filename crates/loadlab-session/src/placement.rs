//! Where loadlab runs against where the server runs, and what follows: with CPUs of its own,
//! a closed loop busy-polls, so the server never pays to wake loadlab for each response (an
//! interrupt on the server's CPU that no remote client would cost it). Decided once, when a
//! session is prepared; read-only probes of the machine, no changes to it.

use crate::server::cpus;
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
