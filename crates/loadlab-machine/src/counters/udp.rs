//! The kernel's UDP counters, for a run over QUIC (HTTP/3): datagrams dropped on arrival
//! because the socket's receive buffer was full (`Udp RcvbufErrors`), and every datagram
//! dropped on arrival for any reason (`Udp InErrors`: full buffers, bad checksums, memory),
//! IPv4's from `/proc/net/snmp` and IPv6's from `/proc/net/snmp6` added up.
//!
//! A QUIC client reads every response through one socket per thread: a burst that outgrows
//! the buffer between two reads is dropped here, then resent by QUIC after a loss timer, so
//! the server is blamed for latency that the machine's `net.core.rmem_max` made. These
//! counters say so. They are per network namespace, not per process: a server on this host
//! adds its own socket's drops, and so does any other UDP traffic.

use super::parse_tables;

/// The UDP counters at one moment (cumulative), IPv4 and IPv6 together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Udp {
    pub in_datagrams: u64,
    pub in_errors: u64,
    pub rcvbuf_errors: u64,
    pub sndbuf_errors: u64,
}

impl std::ops::Add for Udp {
    type Output = Udp;
    fn add(self, o: Udp) -> Udp {
        Udp {
            in_datagrams: self.in_datagrams + o.in_datagrams,
            in_errors: self.in_errors + o.in_errors,
            rcvbuf_errors: self.rcvbuf_errors + o.rcvbuf_errors,
            sndbuf_errors: self.sndbuf_errors + o.sndbuf_errors,
        }
    }
}

impl Udp {
    /// From the texts of `/proc/net/snmp` (`Udp:` header and value lines) and
    /// `/proc/net/snmp6` (`Udp6RcvbufErrors   12`, one counter a line; empty without IPv6).
    /// `None` when `snmp` has no `Udp` table (not a Linux `/proc`).
    pub fn from_tables(snmp: &str, snmp6: &str) -> Option<Udp> {
        let v4 = parse_tables(snmp);
        v4.get("Udp.InDatagrams")?;
        let v6 = parse_snmp6(snmp6);
        let get = |name: &str| {
            v4.get(&format!("Udp.{name}")).copied().unwrap_or(0)
                + v6.get(format!("Udp6{name}").as_str()).copied().unwrap_or(0)
        };
        Some(Udp {
            in_datagrams: get("InDatagrams"),
            in_errors: get("InErrors"),
            rcvbuf_errors: get("RcvbufErrors"),
            sndbuf_errors: get("SndbufErrors"),
        })
    }
}

/// `/proc/net/snmp6`: `Name value` per line.
fn parse_snmp6(text: &str) -> std::collections::HashMap<&str, u64> {
    text.lines()
        .filter_map(|line| {
            let mut it = line.split_whitespace();
            Some((it.next()?, it.next()?.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's files, copied after 500 datagrams of 1,200 bytes were sent over
    /// loopback to a socket with the smallest receive buffer, which read none: 499 were
    /// dropped for the full buffer (each also an InErrors).
    const SNMP: &str = include_str!("../../tests/fixtures/proc-net-snmp");
    const SNMP6: &str = include_str!("../../tests/fixtures/proc-net-snmp6");

    #[test]
    fn this_machines_files_parse() {
        let udp = Udp::from_tables(SNMP, SNMP6).unwrap();
        assert_eq!(
            udp,
            Udp {
                in_datagrams: 1_556_798,
                in_errors: 499,
                rcvbuf_errors: 499,
                sndbuf_errors: 0,
            }
        );
        // UdpLite's table, with the same names, is another protocol's.
        assert!(SNMP.contains("UdpLite: 0 0 0 0 0 0 0 0 0"));
    }

    #[test]
    fn ipv6_adds_up_and_a_missing_table_is_unknown() {
        let snmp6 = "Udp6InDatagrams                 \t10\nUdp6InErrors \t3\n\
                     Udp6RcvbufErrors\t2\nUdpLite6RcvbufErrors\t1000\n";
        let udp = Udp::from_tables(SNMP, snmp6).unwrap();
        assert_eq!(udp.rcvbuf_errors, 501);
        assert_eq!(udp.in_errors, 502);
        assert_eq!(udp.in_datagrams, 1_556_808);
        assert_eq!(Udp::from_tables("Tcp: A\nTcp: 1\n", snmp6), None);
    }
}
