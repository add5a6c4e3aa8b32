//! The fields of the kernel's `struct tcp_info` (linux/tcp.h) that say where a connection's
//! time went: its round trips, what it received and sent, and the sender's chrono stats
//! (busy, limited by the peer's window, limited by its own send buffer). Parsed from the
//! `INET_DIAG_INFO` attribute of a `sock_diag` dump ([`crate::sockets`] asks for it).
//!
//! The layout is the kernel's ABI: fields are only ever appended, so an older kernel gives
//! a shorter struct, and a field past its end is `None` rather than a wrong 0.

/// One connection's `tcp_info`, as far as the running kernel filled it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// Smoothed round trip, µs (`tcpi_rtt`): what the sender sees, delayed ACKs included.
    pub rtt_us: u32,
    /// The receiver's own round-trip estimate, µs (`tcpi_rcv_rtt`; 0 until it has one).
    pub rcv_rtt_us: u32,
    /// The lowest round trip seen over the kernel's window (5 minutes), µs: the path empty.
    pub min_rtt_us: Option<u32>,
    pub bytes_acked: Option<u64>,
    pub bytes_received: Option<u64>,
    /// Bytes written by the application and not yet sent (`tcpi_notsent_bytes`).
    pub notsent_bytes: Option<u32>,
    /// The sender's recent delivery rate, bytes/s.
    pub delivery_rate: Option<u64>,
    /// Time with data in flight or waiting to be sent, µs; and of it, the time the peer's
    /// receive window held it back and the time its own send buffer did. The rest of the
    /// busy time waited on the congestion window: the network.
    pub busy_us: Option<u64>,
    pub rwnd_limited_us: Option<u64>,
    pub sndbuf_limited_us: Option<u64>,
}

// Offsets in `struct tcp_info`: 8 bytes of u8 fields, then u32s from `tcpi_rto` at 8.
const RTT: usize = 68;
const RCV_RTT: usize = 92;
const BYTES_ACKED: usize = 120;
const BYTES_RECEIVED: usize = 128;
const NOTSENT_BYTES: usize = 144;
const MIN_RTT: usize = 148;
const DELIVERY_RATE: usize = 160;
const BUSY_TIME: usize = 168;
const RWND_LIMITED: usize = 176;
const SNDBUF_LIMITED: usize = 184;

impl TcpStats {
    /// `None` when the payload is too short to hold even the round trips (not a `tcp_info`).
    pub fn parse(payload: &[u8]) -> Option<TcpStats> {
        if payload.len() < RCV_RTT + 4 {
            return None;
        }
        let u32_at = |at: usize| {
            payload
                .get(at..at + 4)
                .map(|b| u32::from_ne_bytes(b.try_into().expect("4 bytes")))
        };
        let u64_at = |at: usize| {
            payload
                .get(at..at + 8)
                .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
        };
        Some(TcpStats {
            rtt_us: u32_at(RTT)?,
            rcv_rtt_us: u32_at(RCV_RTT)?,
            min_rtt_us: u32_at(MIN_RTT),
            bytes_acked: u64_at(BYTES_ACKED),
            bytes_received: u64_at(BYTES_RECEIVED),
            notsent_bytes: u32_at(NOTSENT_BYTES),
            delivery_rate: u64_at(DELIVERY_RATE),
            busy_us: u64_at(BUSY_TIME),
            rwnd_limited_us: u64_at(RWND_LIMITED),
            sndbuf_limited_us: u64_at(SNDBUF_LIMITED),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_at_their_offsets_and_a_short_struct_leaves_the_newer_ones_unknown() {
        let mut b = vec![0u8; 232];
        b[RTT..RTT + 4].copy_from_slice(&1500u32.to_ne_bytes());
        b[RCV_RTT..RCV_RTT + 4].copy_from_slice(&40_000u32.to_ne_bytes());
        b[MIN_RTT..MIN_RTT + 4].copy_from_slice(&50u32.to_ne_bytes());
        b[BYTES_RECEIVED..BYTES_RECEIVED + 8].copy_from_slice(&123_456u64.to_ne_bytes());
        b[BUSY_TIME..BUSY_TIME + 8].copy_from_slice(&9_000u64.to_ne_bytes());
        b[SNDBUF_LIMITED..SNDBUF_LIMITED + 8].copy_from_slice(&7u64.to_ne_bytes());
        let s = TcpStats::parse(&b).unwrap();
        assert_eq!(
            (s.rtt_us, s.rcv_rtt_us, s.min_rtt_us),
            (1500, 40_000, Some(50))
        );
        assert_eq!(s.bytes_received, Some(123_456));
        assert_eq!((s.busy_us, s.sndbuf_limited_us), (Some(9_000), Some(7)));
        // A 4.9 kernel's struct ends after tcpi_min_rtt's neighbours: no chrono stats.
        let old = TcpStats::parse(&b[..160]).unwrap();
        assert_eq!((old.min_rtt_us, old.busy_us), (Some(50), None));
        assert_eq!(TcpStats::parse(&b[..40]), None);
    }
}
