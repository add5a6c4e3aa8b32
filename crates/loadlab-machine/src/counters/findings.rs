//! The kernel's counters in plain words: verdicts (who was the bottleneck) and warnings,
//! from the deltas [`super::delta`] made.

use crate::checks::thousands;
use loadlab_result::machine::KernelCounters;

/// What the verdicts need to know beyond the counters.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The server is on this machine (loopback or behind loadlab's link): its listen queue
    /// is among those counted.
    pub server_local: bool,
    /// `BACKLOG` as given to a launched server, when it was.
    pub backlog_env: Option<String>,
    /// Requests issued in the measured time.
    pub issued: u64,
    /// The run was over QUIC (HTTP/3): UDP's counters are its datagrams' (and the server's
    /// too, when it is local).
    pub quic: bool,
}

/// Conclusions in plain words: verdicts (who was the bottleneck) and warnings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Findings {
    pub verdicts: Vec<String>,
    pub warnings: Vec<String>,
}

/// Retransmissions above this share of segments sent are worth a warning.
pub const RETRANSMIT_SHARE: f64 = 0.01;
/// TIME_WAIT sockets on the port past this count are worth a warning.
pub const TIME_WAIT_MANY: u64 = 1_000;

pub fn findings(k: &KernelCounters, ctx: &Context) -> Findings {
    let mut f = Findings::default();
    let host_wide = if ctx.server_local {
        ""
    } else {
        " (counted for this whole host: the remote server's own kernel keeps its own counts)"
    };
    if ctx.server_local && (k.listen_overflows > 0 || k.listen_drops > 0) {
        let backlog = match (&ctx.backlog_env, k.listen_backlog) {
            (Some(env), Some(held)) => format!("BACKLOG={env} here; the kernel held {held}"),
            (Some(env), None) => format!("BACKLOG={env} here"),
            (None, Some(held)) => format!("{held}, as the kernel held it"),
            (None, None) => "not known here".into(),
        };
        let times = k.listen_overflows.max(k.listen_drops);
        f.verdicts.push(format!(
            "the server's listen queue overflowed {} time{}{}: its backlog ({backlog}) is too \
             small for this load, or it accepts too slowly; each connection turned away waits \
             for a SYN retransmission (1 s or more). Raise the backlog (BACKLOG for the lab's \
             targets, and net.core.somaxconn)",
            thousands(times),
            if times == 1 { "" } else { "s" },
            if k.listen_drops > k.listen_overflows {
                format!(
                    " ({} connection attempts dropped in all)",
                    thousands(k.listen_drops)
                )
            } else {
                String::new()
            }
        ));
    }
    if k.syncookies_sent > 0 {
        f.warnings.push(format!(
            "the kernel answered {} SYNs with cookies: a SYN queue was full \
             (net.ipv4.tcp_max_syn_backlog){host_wide}",
            thousands(k.syncookies_sent)
        ));
    }
    if k.aborts_on_overflow > 0 {
        f.warnings.push(format!(
            "{} handshakes were reset on a full accept queue (net.ipv4.tcp_abort_on_overflow=1): \
             clients saw connection resets{host_wide}",
            thousands(k.aborts_on_overflow)
        ));
    }
    let share = k.retransmitted_segments as f64 / k.segments_sent.max(1) as f64;
    if k.retransmitted_segments > 0 && share >= RETRANSMIT_SHARE {
        f.warnings.push(format!(
            "TCP retransmitted {} segments ({:.1}% of {} sent) and timed out {} times: packets \
             were lost or held up (a full queue, or a capped link's drops); each timeout \
             stalls a connection 200 ms or more{host_wide}",
            thousands(k.retransmitted_segments),
            share * 100.0,
            thousands(k.segments_sent),
            thousands(k.timeouts)
        ));
    }
    let resets_many = (ctx.issued / 100).max(10);
    if k.resets_received > resets_many {
        f.warnings.push(format!(
            "{} connections were reset while open (Tcp EstabResets: a reset received, or a \
             socket closed with unread data) and {} resets were sent{host_wide}",
            thousands(k.resets_received),
            thousands(k.resets_sent)
        ));
    }
    let overflows = k.time_wait_overflows.unwrap_or(0);
    if overflows > 0 {
        let short = match k.time_wait {
            Some(tw) => format!(", and the count of TIME_WAIT on port {} is short", tw.port),
            None => String::new(),
        };
        f.warnings.push(format!(
            "{} connections closed without their 60 s in TIME_WAIT: the kernel's table of \
             them was full (net.ipv4.tcp_max_tw_buckets){short}. Connections opened and closed \
             faster than the table drains; keep-alive avoids it{host_wide}",
            thousands(overflows)
        ));
    }
    if ctx.quic {
        udp_drops(&mut f, k, ctx);
    }
    if let Some(tw) = k.time_wait {
        if tw.before >= TIME_WAIT_MANY {
            f.warnings.push(format!(
                "the run started with {} sockets in TIME_WAIT on port {}, left by an earlier run \
                 (each lasts 60 s): wait a minute between runs with a new connection per request",
                thousands(tw.before),
                tw.port
            ));
        }
        if tw.after >= TIME_WAIT_MANY && tw.after > tw.before {
            f.warnings.push(format!(
                "{} sockets were in TIME_WAIT on port {} at the end ({} at the start): each holds \
                 its pair of ports for 60 s, and the next run starts with them",
                thousands(tw.after),
                tw.port,
                thousands(tw.before)
            ));
        }
    }
    f
}

/// The receive buffer size the fix asks for: twice what loadlab asks, since the kernel
/// counts its bookkeeping against the same limit.
pub const RMEM_MAX_FIX: u64 = 2 * loadlab_engine::engine::H3_UDP_RCVBUF_BYTES;

/// Takes a "could not keep up" verdict off the target when the kernel dropped datagrams for a
/// full receive buffer over a QUIC run (those losses are the machine's: QUIC resent them
/// after a loss timer). `host`: the generator host whose kernel it was, when not this run's
/// own machine. Returns whether there were drops.
pub fn spare_the_target_for_udp_drops(
    verdicts: &mut [String],
    k: &KernelCounters,
    host: Option<&str>,
) -> bool {
    let Some(dropped) = k.udp.map(|u| u.receive_buffer_errors).filter(|n| *n > 0) else {
        return false;
    };
    let whose = host.map_or("the kernel".to_string(), |h| {
        format!("the kernel of generator host {h}")
    });
    loadlab_engine::verdicts::spare_the_target(
        verdicts,
        &format!(
            "{whose} dropped {} datagrams for a full receive buffer",
            thousands(dropped)
        ),
    );
    true
}

/// UDP's findings alone, for a host that is only a generator of a fleet's QUIC load (its TCP
/// counters are other traffic's: the agent's own connection to the coordinator).
pub fn udp_findings(k: &KernelCounters) -> Findings {
    let mut f = Findings::default();
    let ctx = Context {
        server_local: false,
        backlog_env: None,
        issued: 0,
        quic: true,
    };
    udp_drops(&mut f, k, &ctx);
    f
}

/// Datagrams the kernel dropped for a full receive buffer over a run over QUIC: a warning,
/// never a verdict against the server (its work did not lose them, the buffers did).
fn udp_drops(f: &mut Findings, k: &KernelCounters, ctx: &Context) {
    let Some(u) = k.udp else { return };
    let whose = if ctx.server_local {
        "loadlab's sockets and the server's, both on this host"
    } else {
        "this host's sockets, loadlab's among them"
    };
    // A server's socket that asks no size of its own (quinn's do not) gets rmem_default.
    let server_too = if ctx.server_local {
        ", and net.core.rmem_default for a server that sizes no buffer of its own"
    } else {
        ""
    };
    if u.receive_buffer_errors > 0 {
        f.warnings.push(format!(
            "the kernel dropped {} datagram{} for a full receive buffer (Udp RcvbufErrors, {whose}): \
             QUIC sent them again after a loss timer, so part of the latency and of any falling \
             behind is this machine's, not the server's work: raise net.core.rmem_max (sysctl -w \
             net.core.rmem_max={RMEM_MAX_FIX}; as root loadlab passes over it){server_too}",
            thousands(u.receive_buffer_errors),
            if u.receive_buffer_errors == 1 { "" } else { "s" },
        ));
    }
    let other = u.in_errors.saturating_sub(u.receive_buffer_errors);
    if other > 0 {
        f.warnings.push(format!(
            "the kernel dropped {} more arriving datagram{} for other reasons than a full buffer \
             (Udp InErrors: bad checksums, no memory; {whose})",
            thousands(other),
            if other == 1 { "" } else { "s" },
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_result::machine::{TimeWait, UdpCounters};

    fn counters(f: impl FnOnce(&mut KernelCounters)) -> KernelCounters {
        let mut k = KernelCounters {
            scope: "test".into(),
            measured_s: 1.0,
            listen_overflows: 0,
            listen_drops: 0,
            syncookies_sent: 0,
            aborts_on_overflow: 0,
            retransmitted_segments: 0,
            segments_sent: 10_000,
            timeouts: 0,
            resets_sent: 0,
            resets_received: 0,
            aborts_on_data: 0,
            time_wait_overflows: Some(0),
            time_wait: None,
            listen_backlog: None,
            udp: None,
        };
        f(&mut k);
        k
    }

    #[test]
    fn findings_in_plain_words() {
        let local = Context {
            server_local: true,
            backlog_env: Some("0".into()),
            issued: 10_000,
            quic: false,
        };
        let cases: Vec<(KernelCounters, Context, Vec<&str>, Vec<&str>)> = vec![
            (counters(|_| {}), local.clone(), vec![], vec![]),
            (
                counters(|k| {
                    k.listen_overflows = 1234;
                    k.listen_drops = 1234;
                    k.listen_backlog = Some(0);
                }),
                local.clone(),
                vec!["overflowed 1,234 times: its backlog (BACKLOG=0 here; the kernel held 0) is too small"],
                vec![],
            ),
            (
                counters(|k| k.listen_drops = 1),
                Context {
                    backlog_env: None,
                    ..local.clone()
                },
                vec!["overflowed 1 time (1 connection attempts dropped in all): its backlog (not known here)"],
                vec![],
            ),
            // A remote server's queue is not among the counted.
            (
                counters(|k| k.listen_overflows = 5),
                Context::default(),
                vec![],
                vec![],
            ),
            (
                counters(|k| {
                    k.retransmitted_segments = 500;
                    k.timeouts = 3;
                }),
                local.clone(),
                vec![],
                vec!["retransmitted 500 segments (5.0% of 10,000 sent) and timed out 3 times"],
            ),
            // Under 1% of segments: noise.
            (
                counters(|k| k.retransmitted_segments = 50),
                local.clone(),
                vec![],
                vec![],
            ),
            (
                counters(|k| k.syncookies_sent = 12),
                Context::default(),
                vec![],
                vec!["answered 12 SYNs with cookies", "whole host"],
            ),
            (
                counters(|k| {
                    k.resets_received = 200;
                    k.resets_sent = 3;
                }),
                local.clone(),
                vec![],
                vec!["200 connections were reset while open", "3 resets were sent"],
            ),
            (
                counters(|k| {
                    k.time_wait = Some(TimeWait {
                        port: 8080,
                        before: 2_000,
                        after: 30_000,
                    })
                }),
                local.clone(),
                vec![],
                vec!["started with 2,000 sockets in TIME_WAIT on port 8080", "30,000 sockets were in TIME_WAIT"],
            ),
            (
                counters(|k| {
                    k.time_wait_overflows = Some(12_345);
                    k.time_wait = Some(TimeWait {
                        port: 8080,
                        before: 0,
                        after: 131_072,
                    })
                }),
                Context::default(),
                vec![],
                vec![
                    "12,345 connections closed without their 60 s in TIME_WAIT",
                    "net.ipv4.tcp_max_tw_buckets), and the count of TIME_WAIT on port 8080 is short",
                    "whole host",
                ],
            ),
        ];
        for (i, (k, ctx, verdicts, warnings)) in cases.into_iter().enumerate() {
            let f = findings(&k, &ctx);
            assert_eq!(f.verdicts.len(), verdicts.len().min(1), "case {i}: {f:?}");
            for v in verdicts {
                assert!(
                    f.verdicts.iter().any(|x| x.contains(v)),
                    "case {i}: {f:?} lacks {v}"
                );
            }
            if warnings.is_empty() {
                assert!(f.warnings.is_empty(), "case {i}: {f:?}");
            }
            for w in warnings {
                assert!(
                    f.warnings.iter().any(|x| x.contains(w)),
                    "case {i}: {f:?} lacks {w}"
                );
            }
        }
    }

    #[test]
    fn udp_drops_over_quic_are_the_machines_not_the_servers() {
        let dropped = counters(|k| {
            k.udp = Some(UdpCounters {
                datagrams_received: 100_000,
                receive_buffer_errors: 1234,
                in_errors: 1240,
                send_buffer_errors: 0,
            })
        });
        let quic = |server_local| Context {
            server_local,
            quic: true,
            ..Context::default()
        };
        let f = findings(&dropped, &quic(true));
        assert!(f.verdicts.is_empty(), "{f:?}");
        assert_eq!(f.warnings.len(), 2, "{f:?}");
        let w = &f.warnings[0];
        for needle in [
            "the kernel dropped 1,234 datagrams for a full receive buffer",
            "loadlab's sockets and the server's, both on this host",
            "not the server's work",
            "sysctl -w net.core.rmem_max=8388608",
        ] {
            assert!(w.contains(needle), "{w} lacks {needle}");
        }
        assert!(f.warnings[1].contains("6 more arriving datagrams"), "{f:?}");
        assert!(w.contains("net.core.rmem_default for a server"), "{w}");
        let remote = findings(&dropped, &quic(false));
        let w = &remote.warnings[0];
        assert!(
            w.contains("this host's sockets, loadlab's among them"),
            "{w}"
        );
        assert!(!w.contains("rmem_default"), "{w}");
        // Over TCP the same counters are other processes' datagrams: nothing said.
        let tcp = findings(&dropped, &Context::default());
        assert_eq!(tcp, Findings::default());
        // Nothing dropped: nothing said.
        let clean = counters(|k| {
            k.udp = Some(UdpCounters {
                datagrams_received: 100_000,
                ..UdpCounters::default()
            })
        });
        assert_eq!(findings(&clean, &quic(true)), Findings::default());
        // A fleet's generator host: UDP's words alone, as for a remote server, whatever its
        // TCP counters say (the agent's own connection's, not the load's).
        let busy_tcp = counters(|k| {
            k.udp = dropped.udp;
            k.listen_overflows = 50;
            k.resets_received = 50;
        });
        assert_eq!(udp_findings(&busy_tcp), remote);
        assert_eq!(udp_findings(&clean), Findings::default());
    }

    #[test]
    fn udp_drops_take_a_could_not_keep_up_verdict_off_the_target_naming_the_host() {
        let behind = || {
            vec![format!(
                "{}: 900 requests/s completed while 1,000 were due",
                loadlab_engine::verdicts::TARGET_BEHIND
            )]
        };
        let dropped = counters(|k| {
            k.udp = Some(UdpCounters {
                receive_buffer_errors: 1234,
                ..UdpCounters::default()
            })
        });
        let mut verdicts = behind();
        assert!(spare_the_target_for_udp_drops(
            &mut verdicts,
            &dropped,
            Some("gen2")
        ));
        assert!(
            verdicts[0].contains("the kernel of generator host gen2 dropped 1,234 datagrams"),
            "{verdicts:?}"
        );
        let mut verdicts = behind();
        assert!(spare_the_target_for_udp_drops(
            &mut verdicts,
            &dropped,
            None
        ));
        assert!(
            verdicts[0].contains("meanwhile the kernel dropped 1,234 datagrams"),
            "{verdicts:?}"
        );
        // Nothing dropped: the verdict stands.
        let clean = counters(|k| k.udp = Some(UdpCounters::default()));
        let mut verdicts = behind();
        assert!(!spare_the_target_for_udp_drops(&mut verdicts, &clean, None));
        assert_eq!(verdicts, behind());
    }
}
