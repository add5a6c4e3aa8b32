//! The kernel's own TCP counters around a run: read from `/proc/net/netstat` (`TcpExt`) and
//! `/proc/net/snmp` (`Tcp`) at the start and the end of the measured time, and the sockets in
//! TIME_WAIT on the target's port (`sock_diag`). Their deltas go in the result, and the ones
//! that mean something become plain words ("the server's listen queue overflowed 1,234
//! times: its backlog (BACKLOG=0 here) is too small for this load").
//!
//! These counters belong to a network namespace, not to a process: in the default namespace
//! every process on the host adds to them. A server behind a shaped link has a namespace of
//! its own, whose counters are the run's alone; both are read and added up.
//!
//! Which counter is which:
//! - listen queue overflows: `TcpExt ListenOverflows` (a completed handshake found the accept
//!   queue full) and `ListenDrops` (everything a listener dropped, overflows included);
//! - `TcpExt SyncookiesSent`, `TCPAbortOnOverflow`, `TCPTimeouts`, `TCPAbortOnData`;
//! - retransmissions: `Tcp RetransSegs` against `Tcp OutSegs`;
//! - resets sent: `Tcp OutRsts` (every segment sent with RST);
//! - `TcpExt TCPTimeWaitOverflow`: connections that closed without their TIME_WAIT because
//!   the namespace's table was full (`net.ipv4.tcp_max_tw_buckets`);
//! - resets received: Linux counts none as such. `Tcp EstabResets` counts connections that
//!   went from ESTABLISHED or CLOSE-WAIT straight to CLOSED, which is what a reset received on
//!   an open connection does; it also counts local aborts (closing with unread data, which
//!   sends a reset and moves `TCPAbortOnClose`/`TCPAbortOnData`). `TCPAbortOnData` alone is a
//!   reset *sent*, not received.

use crate::checks::thousands;
use crate::netns::Scope;
use loadlab_result::machine::{KernelCounters, TimeWait};
use std::collections::HashMap;
use std::time::Instant;

/// The counters, as read at one moment (cumulative since boot, or since the namespace was
/// made).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tcp {
    pub listen_overflows: u64,
    pub listen_drops: u64,
    pub syncookies_sent: u64,
    pub aborts_on_overflow: u64,
    pub retrans_segs: u64,
    pub out_segs: u64,
    pub timeouts: u64,
    pub out_rsts: u64,
    pub estab_resets: u64,
    pub aborts_on_data: u64,
    pub time_wait_overflows: u64,
}

impl std::ops::Add for Tcp {
    type Output = Tcp;
    fn add(self, o: Tcp) -> Tcp {
        Tcp {
            listen_overflows: self.listen_overflows + o.listen_overflows,
            listen_drops: self.listen_drops + o.listen_drops,
            syncookies_sent: self.syncookies_sent + o.syncookies_sent,
            aborts_on_overflow: self.aborts_on_overflow + o.aborts_on_overflow,
            retrans_segs: self.retrans_segs + o.retrans_segs,
            out_segs: self.out_segs + o.out_segs,
            timeouts: self.timeouts + o.timeouts,
            out_rsts: self.out_rsts + o.out_rsts,
            estab_resets: self.estab_resets + o.estab_resets,
            aborts_on_data: self.aborts_on_data + o.aborts_on_data,
            time_wait_overflows: self.time_wait_overflows + o.time_wait_overflows,
        }
    }
}

/// The `Prefix: Name Name ...` / `Prefix: 1 2 ...` pairs of lines of `/proc/net/netstat` and
/// `/proc/net/snmp`, as `Prefix.Name -> value`.
pub fn parse_tables(text: &str) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    let lines: Vec<&str> = text.lines().collect();
    for pair in lines.chunks(2) {
        let [names, values] = pair else { continue };
        let (Some((prefix, names)), Some((prefix2, values))) =
            (names.split_once(':'), values.split_once(':'))
        else {
            continue;
        };
        if prefix != prefix2 {
            continue;
        }
        for (name, value) in names.split_whitespace().zip(values.split_whitespace()) {
            // Tcp MaxConn is -1: not a counter.
            if let Ok(v) = value.parse::<u64>() {
                out.insert(format!("{prefix}.{name}"), v);
            }
        }
    }
    out
}

impl Tcp {
    /// From the texts of `netstat` and `snmp`; a counter the kernel lacks reads 0.
    pub fn from_tables(netstat: &str, snmp: &str) -> Tcp {
        let mut all = parse_tables(netstat);
        all.extend(parse_tables(snmp));
        let get = |k: &str| all.get(k).copied().unwrap_or(0);
        Tcp {
            listen_overflows: get("TcpExt.ListenOverflows"),
            listen_drops: get("TcpExt.ListenDrops"),
            syncookies_sent: get("TcpExt.SyncookiesSent"),
            aborts_on_overflow: get("TcpExt.TCPAbortOnOverflow"),
            retrans_segs: get("Tcp.RetransSegs"),
            out_segs: get("Tcp.OutSegs"),
            timeouts: get("TcpExt.TCPTimeouts"),
            out_rsts: get("Tcp.OutRsts"),
            estab_resets: get("Tcp.EstabResets"),
            aborts_on_data: get("TcpExt.TCPAbortOnData"),
            time_wait_overflows: get("TcpExt.TCPTimeWaitOverflow"),
        }
    }
}

/// Everything read at one moment, over every scope.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub at: Instant,
    pub tcp: Option<Tcp>,
    /// TIME_WAIT sockets on the target's port, either end, every scope.
    pub time_wait: Option<u64>,
    /// The listening socket's backlog on the target's port, in the first scope that has it.
    pub backlog: Option<u32>,
}

/// Reads the counters of every scope (and, with a port, TIME_WAIT and the listener there).
pub fn snapshot(scopes: &[Scope], port: Option<u16>) -> Snapshot {
    let at = Instant::now();
    let mut tcp: Option<Tcp> = None;
    let mut time_wait: Option<u64> = None;
    let mut backlog = None;
    for scope in scopes {
        let read = scope.run(move || {
            let netstat = std::fs::read_to_string("/proc/thread-self/net/netstat").ok();
            let snmp = std::fs::read_to_string("/proc/thread-self/net/snmp").ok();
            let tcp = match (netstat, snmp) {
                (Some(n), Some(s)) => Some(Tcp::from_tables(&n, &s)),
                _ => None,
            };
            let tw = port.and_then(|p| loadlab_probe::sockets::time_wait(p).ok());
            let queue = port.and_then(|p| loadlab_probe::sockets::listen_queue(p).ok().flatten());
            (tcp, tw, queue)
        });
        let Ok((t, tw, queue)) = read else { continue };
        if let Some(t) = t {
            tcp = Some(tcp.unwrap_or_default() + t);
        }
        if let Some(tw) = tw {
            time_wait = Some(time_wait.unwrap_or(0) + tw);
        }
        backlog = backlog.or(queue.map(|q| q.backlog));
    }
    Snapshot {
        at,
        tcp,
        time_wait,
        backlog,
    }
}

/// In words, what the scopes cover.
pub fn describe(scopes: &[Scope]) -> String {
    let own = "loadlab's network namespace (in the default namespace: the whole host, every \
               process's TCP counts)";
    if scopes.iter().any(|s| matches!(s, Scope::Netns(_))) {
        format!("{own}, plus the server's own namespace (the run's alone)")
    } else {
        own.to_string()
    }
}

/// The counters over the measured time; `None` when they could not be read.
pub fn delta(
    before: &Snapshot,
    after: &Snapshot,
    scope: String,
    port: Option<u16>,
) -> Option<KernelCounters> {
    let (b, a) = (before.tcp?, after.tcp?);
    let d = |f: fn(&Tcp) -> u64| f(&a).saturating_sub(f(&b));
    Some(KernelCounters {
        scope,
        measured_s: (after.at - before.at).as_secs_f64(),
        listen_overflows: d(|t| t.listen_overflows),
        listen_drops: d(|t| t.listen_drops),
        syncookies_sent: d(|t| t.syncookies_sent),
        aborts_on_overflow: d(|t| t.aborts_on_overflow),
        retransmitted_segments: d(|t| t.retrans_segs),
        segments_sent: d(|t| t.out_segs),
        timeouts: d(|t| t.timeouts),
        resets_sent: d(|t| t.out_rsts),
        resets_received: d(|t| t.estab_resets),
        aborts_on_data: d(|t| t.aborts_on_data),
        time_wait_overflows: Some(d(|t| t.time_wait_overflows)),
        time_wait: match (port, before.time_wait, after.time_wait) {
            (Some(port), Some(before), Some(after)) => Some(TimeWait {
                port,
                before,
                after,
            }),
            _ => None,
        },
        listen_backlog: before.backlog.or(after.backlog),
    })
}

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

#[cfg(test)]
mod tests {
    use super::*;

    const NETSTAT: &str = "TcpExt: SyncookiesSent SyncookiesRecv ListenOverflows ListenDrops TCPTimeouts TCPAbortOnData TCPAbortOnOverflow TCPTimeWaitOverflow\n\
TcpExt: 3 0 1234 1300 7 2 0 41\n\
IpExt: InNoRoutes InOctets\n\
IpExt: 0 999\n";
    const SNMP: &str = "Ip: Forwarding DefaultTTL\n\
Ip: 1 64\n\
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts\n\
Tcp: 1 200 120000 -1 10 10 0 5 3 100 1000 20 0 9\n";

    #[test]
    fn tables_parse_by_name() {
        let t = Tcp::from_tables(NETSTAT, SNMP);
        assert_eq!(
            t,
            Tcp {
                listen_overflows: 1234,
                listen_drops: 1300,
                syncookies_sent: 3,
                aborts_on_overflow: 0,
                retrans_segs: 20,
                out_segs: 1000,
                timeouts: 7,
                out_rsts: 9,
                estab_resets: 5,
                aborts_on_data: 2,
                time_wait_overflows: 41,
            }
        );
        // MaxConn (-1) is not a counter.
        assert!(!parse_tables(SNMP).contains_key("Tcp.MaxConn"));
        assert_eq!(parse_tables(NETSTAT)["IpExt.InOctets"], 999);
    }

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

    /// A network namespace made with `ip netns`, deleted when dropped.
    struct TestNetns(String);

    impl TestNetns {
        fn new(name: String) -> TestNetns {
            let ip = |args: &[&str]| {
                let status = std::process::Command::new("ip")
                    .args(args)
                    .status()
                    .unwrap();
                assert!(status.success(), "ip {args:?}: {status}");
            };
            ip(&["netns", "add", &name]);
            let ns = TestNetns(name);
            ip(&["-n", &ns.0, "link", "set", "lo", "up"]);
            ns
        }
        fn scope(&self) -> Scope {
            Scope::Netns(format!("/run/netns/{}", self.0).into())
        }
    }

    impl Drop for TestNetns {
        fn drop(&mut self) {
            let _ = std::process::Command::new("ip")
                .args(["netns", "delete", &self.0])
                .status();
        }
    }

    #[test]
    fn a_full_time_wait_table_is_counted_and_named() {
        let ns = TestNetns::new(format!("loadlab-test-tw-{}", std::process::id()));
        let scope = ns.scope();
        // Room for one TIME_WAIT socket in this namespace (/proc/sys/net is the namespace of
        // the thread that opens it): the second and third overflow.
        scope
            .run(|| std::fs::write("/proc/sys/net/ipv4/tcp_max_tw_buckets", "1"))
            .unwrap()
            .unwrap_or_else(|e| panic!("tcp_max_tw_buckets: {e}"));
        let listener = scope
            .run(|| std::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap()
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let before = snapshot(std::slice::from_ref(&scope), Some(port));
        scope
            .run(|| {
                for _ in 0..3 {
                    // The server closes first: its end would go to TIME_WAIT.
                    let client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
                    let (server, _) = listener.accept().unwrap();
                    drop(server);
                    drop(client);
                }
            })
            .unwrap();
        let after = snapshot(std::slice::from_ref(&scope), Some(port));
        let k = delta(&before, &after, "test".into(), Some(port)).unwrap();
        assert_eq!(k.time_wait_overflows, Some(2), "{k:?}");
        assert_eq!(k.time_wait.map(|tw| tw.after), Some(1), "{k:?}");
        let f = findings(&k, &Context::default());
        assert!(
            f.warnings
                .iter()
                .any(|w| w.starts_with("2 connections closed without")),
            "{f:?}"
        );
    }

    #[test]
    fn this_namespace_reads() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let before = snapshot(&[Scope::Own], Some(port));
        assert!(before.tcp.is_some());
        assert_eq!(before.time_wait, Some(0));
        assert!(before.backlog.is_some());
        let after = snapshot(&[Scope::Own], Some(port));
        let k = delta(&before, &after, describe(&[Scope::Own]), Some(port)).unwrap();
        assert!(k.scope.contains("whole host"));
        assert_eq!(k.time_wait.unwrap().port, port);
    }
}
