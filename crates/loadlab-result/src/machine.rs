//! The machine and the wire around a run, as data: the preflight checks (`loadlab doctor`,
//! and the same before every run), the kernel's own TCP counters over the measured time, and
//! the shaped link when the server ran behind a bandwidth cap. Types only: reading the
//! machine and shaping the link are `loadlab-machine`'s job.

use serde::{Deserialize, Serialize};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    Pass,
    /// The run can go on, but the figures may suffer: say so.
    Warn,
    /// The run as planned will not hold (with `--strict`, it does not start).
    Fail,
}

impl CheckStatus {
    pub fn label(self) -> &'static str {
        match self {
            CheckStatus::Pass => "PASS",
            CheckStatus::Warn => "WARN",
            CheckStatus::Fail => "FAIL",
        }
    }
}

/// One check of the machine against the run planned on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// A stable name: `open_files`, `ephemeral_ports`, `listen_backlog`, `conntrack`, `cgroup`,
    /// `cpu_governor`, `cpu_idle`, `steal`, `cpu_sharing`, `busy_processes`, `stale_links`,
    /// `link`.
    pub name: String,
    pub status: CheckStatus,
    /// What the machine has, with the numbers.
    pub found: String,
    /// What the planned run needs.
    pub needs: String,
    /// The command (or setting) that fixes it; absent when nothing needs fixing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// The kernel's TCP counters (`/proc/net/netstat`, `/proc/net/snmp`), as deltas over the
/// measured time (warm-up excluded). They count per network namespace: in the default one,
/// every process on the host adds to them, not only this run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelCounters {
    /// Which namespaces were read, in words (the whole host, or the server's own).
    pub scope: String,
    /// Seconds between the two readings.
    pub measured_s: f64,
    /// `TcpExt ListenOverflows`: a completed handshake found the accept queue full.
    pub listen_overflows: u64,
    /// `TcpExt ListenDrops`: SYNs and handshakes a listener dropped, overflows included.
    pub listen_drops: u64,
    /// `TcpExt SyncookiesSent`: the SYN queue was full and the kernel answered with cookies.
    pub syncookies_sent: u64,
    /// `TcpExt TCPAbortOnOverflow`: handshakes answered with a reset on a full accept queue
    /// (only with `net.ipv4.tcp_abort_on_overflow=1`).
    pub aborts_on_overflow: u64,
    /// `Tcp RetransSegs`: segments sent again.
    pub retransmitted_segments: u64,
    /// `Tcp OutSegs`: segments sent, for the retransmitted share.
    pub segments_sent: u64,
    /// `TcpExt TCPTimeouts`: retransmission timeouts (each stalls a connection 200 ms or more).
    pub timeouts: u64,
    /// `Tcp OutRsts`: segments sent with the RST flag.
    pub resets_sent: u64,
    /// `Tcp EstabResets`: connections that went from ESTABLISHED or CLOSE-WAIT straight to
    /// CLOSED. Linux keeps no counter of resets received; this is the one a reset received on
    /// an open connection moves. It also counts local aborts (a socket closed with unread
    /// data, which sends a reset: `aborts_on_data`, `TCPAbortOnClose`).
    pub resets_received: u64,
    /// `TcpExt TCPAbortOnData`: resets sent because data arrived on (or was left unread in)
    /// a closed socket.
    pub aborts_on_data: u64,
    /// `TcpExt TCPTimeWaitOverflow`: connections that closed without their TIME_WAIT because
    /// the table of them was full (`net.ipv4.tcp_max_tw_buckets`); the TIME_WAIT counts are
    /// then short. Absent from results made before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_wait_overflows: Option<u64>,
    /// Sockets in TIME_WAIT with the target's port at either end, before and after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_wait: Option<TimeWait>,
    /// The target's listening socket as the kernel holds it (found on its port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen_backlog: Option<u32>,
    /// UDP's counters, over a run over QUIC (HTTP/3) only: over TCP they would be other
    /// processes' datagrams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpCounters>,
}

/// The kernel's UDP counters (`/proc/net/snmp` `Udp`, `/proc/net/snmp6` `Udp6`, added up) as
/// deltas over the measured time; per network namespace, as the TCP ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdpCounters {
    /// `InDatagrams`: datagrams delivered to a socket.
    pub datagrams_received: u64,
    /// `RcvbufErrors`: datagrams dropped on arrival because the socket's receive buffer was
    /// full (its size is capped by `net.core.rmem_max`); QUIC sends them again after a loss
    /// timer.
    pub receive_buffer_errors: u64,
    /// `InErrors`: every datagram dropped on arrival, full buffers included.
    pub in_errors: u64,
    /// `SndbufErrors`: datagrams not sent because the send buffer was full.
    pub send_buffer_errors: u64,
}

/// TIME_WAIT sockets on the target's port (either end), counted through `sock_diag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeWait {
    pub port: u16,
    /// Before the run started (before its warm-up, if it had one: counting them walks every
    /// TCP socket, too costly for the moment measurement begins).
    pub before: u64,
    /// At the end of the measured time.
    pub after: u64,
}

/// The link between loadlab and a server it launched in a network namespace of its own: a
/// veth pair, shaped in each direction by a qdisc (token bucket, `tbf`; `netem` for delay and
/// loss). Removed when the run ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkReport {
    /// The server's network namespace.
    pub namespace: String,
    /// loadlab's end of the veth pair, and the server's.
    pub client_address: String,
    pub server_address: String,
    /// Toward the server (requests); absent when not shaped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up: Option<LinkDirection>,
    /// Toward loadlab (responses); absent when not shaped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down: Option<LinkDirection>,
}

/// One direction of the link: what was asked, what a bulk transfer measured before the run,
/// and what the qdisc did during the measured time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkDirection {
    /// The interface whose egress carries this direction.
    pub device: String,
    /// The qdisc as configured (`tbf rate ... burst ... latency ...`).
    pub qdisc: String,
    /// The cap, in bytes per second on the wire (Ethernet, IP and TCP headers included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bytes_per_s: Option<f64>,
    /// `--delay`: added to every packet in this direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<f64>,
    /// `--loss`: packets dropped at random in this direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_percent: Option<f64>,
    /// Calibration: TCP payload bytes per second a bulk transfer achieved before the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrated_bytes_per_s: Option<f64>,
    /// The same transfer counted on the wire, headers included: what the cap limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrated_wire_bytes_per_s: Option<f64>,
    /// The qdisc's counters over the measured time.
    pub qdisc_stats: QdiscStats,
}

/// A qdisc's counters (`tc -s qdisc show`), as deltas.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QdiscStats {
    pub bytes: u64,
    pub packets: u64,
    /// Packets dropped: the queue was full (or netem's loss).
    pub drops: u64,
    /// Times a packet had to wait for tokens: the cap was reached.
    pub overlimits: u64,
    pub requeues: u64,
}

impl QdiscStats {
    /// `self - earlier`, counter by counter (a reset counter gives 0, not a wrap).
    pub fn since(self, earlier: QdiscStats) -> QdiscStats {
        QdiscStats {
            bytes: self.bytes.saturating_sub(earlier.bytes),
            packets: self.packets.saturating_sub(earlier.packets),
            drops: self.drops.saturating_sub(earlier.drops),
            overlimits: self.overlimits.saturating_sub(earlier.overlimits),
            requeues: self.requeues.saturating_sub(earlier.requeues),
        }
    }
}
