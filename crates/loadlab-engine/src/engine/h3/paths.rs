//! The run's QUIC connections as the path sees them (docs/path.md): over TCP the kernel
//! keeps each connection's round trip and bytes (`tcp_info`, read by `loadlab-machine`
//! through sock_diag); over QUIC only quinn does. So each HTTP/3 connection is registered
//! here while it lives ([`QuicPaths::add`], from its set-up to its close), and the path's
//! sampler (`loadlab_machine::path`, on a thread of its own, reached through
//! [`crate::RunControl::quic_paths`]) takes a window of their figures every 100 ms
//! ([`QuicPaths::take`]): quinn's smoothed round trip (which has the peer's reported ACK
//! delay taken out) and its minimum (raw samples, as `tcpi_min_rtt`), and the UDP bytes
//! each carried since the last take. A connection that closed between two takes still
//! gives its last bytes (booked as it is removed, when its driver ends); what crosses after
//! that (the peer's last acknowledgement, a few hundred bytes) is not counted.
//!
//! It must not slow the event loops: a worker thread touches the registry's lock twice per
//! connection (opened, closed), never per request; the sampler holds it while it reads the
//! open connections' counters (each under quinn's own lock, as `wire` does). Memory is
//! bounded by the connections open at once. One taker per run: the windows are deltas.

use std::sync::{Arc, Mutex};

/// The run's registered QUIC connections (shared through the run's control).
#[derive(Debug, Default)]
pub struct QuicPaths {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    open: Vec<Entry>,
    /// Bytes of connections closed since the last take, not yet taken.
    closed: Bytes,
}

#[derive(Debug)]
struct Entry {
    id: u64,
    connection: quinn::Connection,
    /// What the last take handed out of its counters.
    taken: Bytes,
}

/// UDP payload bytes: received, and sent less what quinn declared lost (the acked
/// direction's stand-in: QUIC's sender knows no other).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Bytes {
    received: u64,
    sent: u64,
}

impl Bytes {
    fn of(stats: &quinn::ConnectionStats) -> Bytes {
        Bytes {
            received: stats.udp_rx.bytes,
            sent: stats.udp_tx.bytes.saturating_sub(stats.path.lost_bytes),
        }
    }

    fn since(self, before: Bytes) -> Bytes {
        Bytes {
            received: self.received.saturating_sub(before.received),
            sent: self.sent.saturating_sub(before.sent),
        }
    }

    fn add(&mut self, more: Bytes) {
        self.received += more.received;
        self.sent += more.sent;
    }
}

/// One open connection's figures at a take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuicConnection {
    /// quinn's smoothed round trip, µs (`None`: no acknowledgement received yet, so only
    /// the configured initial estimate, which is no measurement).
    pub rtt_us: Option<f64>,
    /// The least round trip it measured, µs (raw samples, ACK delay not taken out).
    pub min_rtt_us: Option<f64>,
    /// UDP bytes received since the last take.
    pub received_bytes: u64,
    /// UDP bytes sent since the last take, less those quinn declared lost.
    pub sent_bytes: u64,
    /// Its congestion window and congestion events so far (kept for the docs' measurements).
    pub cwnd_bytes: u64,
    pub congestion_events: u64,
}

/// What [`QuicPaths::take`] hands out: the open connections, and the bytes of those that
/// closed since the last take.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuicTake {
    pub open: Vec<QuicConnection>,
    pub closed_received_bytes: u64,
    pub closed_sent_bytes: u64,
}

/// A connection's place in the registry: removed (its last bytes booked) when dropped, as
/// its driver ends.
pub(crate) struct Registered {
    paths: Arc<QuicPaths>,
    id: u64,
}

impl QuicPaths {
    /// Registers `connection` until the returned guard is dropped.
    pub(crate) fn add(self: &Arc<Self>, connection: &quinn::Connection) -> Registered {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let id = inner.next_id;
        inner.next_id += 1;
        inner.open.push(Entry {
            id,
            connection: connection.clone(),
            taken: Bytes::default(),
        });
        Registered {
            paths: self.clone(),
            id,
        }
    }

    fn remove(&self, id: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = inner.open.iter().position(|e| e.id == id) {
            let entry = inner.open.swap_remove(at);
            let last = Bytes::of(&entry.connection.stats()).since(entry.taken);
            inner.closed.add(last);
        }
    }

    /// The window since the last take.
    pub fn take(&self) -> QuicTake {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let closed = std::mem::take(&mut inner.closed);
        let open = inner
            .open
            .iter_mut()
            .map(|e| {
                let stats = e.connection.stats();
                let now = Bytes::of(&stats);
                let crossed = now.since(e.taken);
                e.taken = now;
                let us = |d: std::time::Duration| d.as_secs_f64() * 1e6;
                // Round trips come from ACK frames only: before the first, quinn reports
                // its initial guess (333 ms) as both figures.
                let measured = stats.frame_rx.acks > 0;
                QuicConnection {
                    rtt_us: measured.then(|| us(stats.path.rtt)),
                    min_rtt_us: measured.then(|| us(stats.path.min_rtt)),
                    received_bytes: crossed.received,
                    sent_bytes: crossed.sent,
                    cwnd_bytes: stats.path.cwnd,
                    congestion_events: stats.path.congestion_events,
                }
            })
            .collect();
        QuicTake {
            open,
            closed_received_bytes: closed.received,
            closed_sent_bytes: closed.sent,
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.paths.remove(self.id);
    }
}
