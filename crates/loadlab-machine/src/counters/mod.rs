//! The kernel's own TCP counters around a run: read from `/proc/net/netstat` (`TcpExt`) and
//! `/proc/net/snmp` (`Tcp`) at the start and the end of the measured time, and the sockets in
//! TIME_WAIT on the target's port (`sock_diag`). Their deltas go in the result, and the ones
//! that mean something become plain words ([`findings`]: "the server's listen queue
//! overflowed 1,234 times: its backlog (BACKLOG=0 here) is too small for this load").
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
//!
//! Over QUIC, UDP's receive-buffer drops too ([`udp`]: `Udp RcvbufErrors`, `InErrors`).

use crate::netns::Scope;
use loadlab_result::machine::{KernelCounters, TimeWait, UdpCounters};
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
    /// UDP's counters (IPv4 and IPv6), every scope.
    pub udp: Option<Udp>,
    /// TIME_WAIT sockets on the target's port, either end, every scope.
    pub time_wait: Option<u64>,
    /// The listening socket's backlog on the target's port, in the first scope that has it.
    pub backlog: Option<u32>,
}

/// Reads the counters of every scope (and, with a port, TIME_WAIT and the listener there).
pub fn snapshot(scopes: &[Scope], port: Option<u16>) -> Snapshot {
    let at = Instant::now();
    let mut tcp: Option<Tcp> = None;
    let mut udp: Option<Udp> = None;
    let mut time_wait: Option<u64> = None;
    let mut backlog = None;
    for scope in scopes {
        let read = scope.run(move || {
            let netstat = std::fs::read_to_string("/proc/thread-self/net/netstat").ok();
            let snmp = std::fs::read_to_string("/proc/thread-self/net/snmp").ok();
            // Without IPv6 the file is absent: its counters are none.
            let snmp6 = std::fs::read_to_string("/proc/thread-self/net/snmp6").unwrap_or_default();
            let udp = snmp.as_deref().and_then(|s| Udp::from_tables(s, &snmp6));
            let tcp = match (netstat, snmp) {
                (Some(n), Some(s)) => Some(Tcp::from_tables(&n, &s)),
                _ => None,
            };
            let tw = port.and_then(|p| loadlab_probe::sockets::time_wait(p).ok());
            let queue = port.and_then(|p| loadlab_probe::sockets::listen_queue(p).ok().flatten());
            (tcp, udp, tw, queue)
        });
        let Ok((t, u, tw, queue)) = read else {
            continue;
        };
        if let Some(t) = t {
            tcp = Some(tcp.unwrap_or_default() + t);
        }
        if let Some(u) = u {
            udp = Some(udp.unwrap_or_default() + u);
        }
        if let Some(tw) = tw {
            time_wait = Some(time_wait.unwrap_or(0) + tw);
        }
        backlog = backlog.or(queue.map(|q| q.backlog));
    }
    Snapshot {
        at,
        tcp,
        udp,
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

/// The counters over the measured time; `None` when they could not be read. UDP's are
/// among them whenever both ends read them (the session keeps them for a run over QUIC).
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
        udp: match (before.udp, after.udp) {
            (Some(b), Some(a)) => Some(UdpCounters {
                datagrams_received: a.in_datagrams.saturating_sub(b.in_datagrams),
                receive_buffer_errors: a.rcvbuf_errors.saturating_sub(b.rcvbuf_errors),
                in_errors: a.in_errors.saturating_sub(b.in_errors),
                send_buffer_errors: a.sndbuf_errors.saturating_sub(b.sndbuf_errors),
            }),
            _ => None,
        },
    })
}

mod findings;
mod udp;
pub use findings::{findings, spare_the_target_for_udp_drops, udp_findings, Context, Findings};
pub use udp::Udp;

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
    fn udp_receive_buffer_drops_are_counted() {
        use std::os::fd::AsRawFd;
        let ns = TestNetns::new(format!("loadlab-test-udp-{}", std::process::id()));
        let scope = ns.scope();
        let sent = 300u64;
        let before = snapshot(std::slice::from_ref(&scope), None);
        let received = scope
            .run(move || {
                let receiver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
                // The smallest buffer the kernel gives: a few datagrams fit, the rest drop.
                let one: libc::c_int = 1;
                // SAFETY: an open socket, a c_int and its size.
                let set = unsafe {
                    libc::setsockopt(
                        receiver.as_raw_fd(),
                        libc::SOL_SOCKET,
                        libc::SO_RCVBUF,
                        (&one as *const libc::c_int).cast(),
                        std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                    )
                };
                assert_eq!(set, 0);
                let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
                let to = receiver.local_addr().unwrap();
                for _ in 0..sent {
                    sender.send_to(&[7u8; 1200], to).unwrap();
                }
                receiver.set_nonblocking(true).unwrap();
                let mut buf = [0u8; 2048];
                let mut n = 0u64;
                while receiver.recv(&mut buf).is_ok() {
                    n += 1;
                }
                n
            })
            .unwrap();
        let after = snapshot(std::slice::from_ref(&scope), None);
        let k = delta(&before, &after, "test".into(), None).unwrap();
        let udp = k.udp.unwrap();
        // The namespace is this test's alone: every drop is one of its datagrams.
        assert!(received < sent, "{received} of {sent} fit");
        assert_eq!(udp.receive_buffer_errors, sent - received, "{udp:?}");
        assert_eq!(udp.in_errors, sent - received, "{udp:?}");
        assert_eq!(udp.datagrams_received, received, "{udp:?}");
        let f = findings(
            &k,
            &Context {
                quic: true,
                ..Context::default()
            },
        );
        let lost = format!("the kernel dropped {} datagrams", sent - received);
        assert!(f.warnings.iter().any(|w| w.starts_with(&lost)), "{f:?}");
    }

    #[test]
    fn this_namespace_reads() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let before = snapshot(&[Scope::Own], Some(port));
        assert!(before.tcp.is_some());
        assert!(before.udp.is_some());
        assert_eq!(before.time_wait, Some(0));
        assert!(before.backlog.is_some());
        let after = snapshot(&[Scope::Own], Some(port));
        let k = delta(&before, &after, describe(&[Scope::Own]), Some(port)).unwrap();
        assert!(k.scope.contains("whole host"));
        assert_eq!(k.time_wait.unwrap().port, port);
    }
}
