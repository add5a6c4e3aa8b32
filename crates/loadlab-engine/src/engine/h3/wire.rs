//! An HTTP/3 connection's bytes on the wire: the UDP payloads quinn counts for it
//! (`Connection::stats`: `udp_tx.bytes`, `udp_rx.bytes`), QUIC's headers, encryption,
//! acknowledgements, handshake and packets sent again included. HTTP/3's `bytes` are DATA
//! payload alone (h3 writes HEADERS and QPACK itself and says nothing of their size), so
//! these are reported beside them, not in their place: over HTTP/1.1 and HTTP/2 `bytes` are
//! what the connection wrote and read before TLS, and UDP payloads, encrypted and with
//! QUIC's own traffic, are not that. Each request that ends books what crossed its connection
//! since the last one there did (one read of quinn's counters, under its connection lock),
//! so the phase totals are exact but for what crosses after a connection's last request
//! (its close, its last acknowledgements). It must not change a byte.

use super::super::ThreadCtx;
use crate::stats::Phase;
use std::cell::Cell;

/// One connection's counters as last booked.
pub(crate) struct Wire {
    connection: quinn::Connection,
    sent: Cell<u64>,
    received: Cell<u64>,
}

impl Wire {
    pub fn new(connection: quinn::Connection) -> Wire {
        Wire {
            connection,
            sent: Cell::new(0),
            received: Cell::new(0),
        }
    }

    /// Books what crossed the connection since the last booking to `phase`.
    pub fn book(&self, ctx: &ThreadCtx, phase: Phase) {
        let stats = self.connection.stats();
        let sent = stats.udp_tx.bytes;
        let received = stats.udp_rx.bytes;
        let crossed = loadlab_result::WireBytes {
            sent: sent.saturating_sub(self.sent.replace(sent)),
            received: received.saturating_sub(self.received.replace(received)),
        };
        ctx.recorder
            .borrow_mut()
            .phase(phase)
            .wire
            .get_or_insert_with(Default::default)
            .add(&crossed);
    }
}
