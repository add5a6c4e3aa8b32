//! The path over QUIC (HTTP/3): a window of the engine's QUIC connections as quinn sees them
//! ([`loadlab_engine::engine::QuicPaths`]), in the same [`PathWindow`] the TCP sockets give,
//! so that the same intervals, report and rule apply (docs/path.md, "Over HTTP/3").
//!
//! What differs from `tcp_info`: the smoothed round trip is quinn's, which takes out the
//! ACK delay the peer reports (TCP's estimate keeps a delayed ACK's wait in it); the minimum
//! is over quinn's raw samples (as `tcpi_min_rtt`); the bytes are UDP payloads (QUIC's
//! headers and acknowledgements in them), "acked" being those sent less those quinn
//! declared lost. No receiver's estimate, no chrono stats, no send queue: the window leaves
//! them empty.

use loadlab_engine::engine::QuicTake;
use loadlab_result::path::PathWindow;

/// The window of one take (`t_s` and `dt_s` left for the caller).
pub(super) fn window(take: QuicTake) -> PathWindow {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| v[v.len() / 2])
    };
    // As over TCP: the round trips of the connections that carried bytes in the window only
    // (an idle one keeps its last exchange's estimate, which says nothing of the path now).
    let rtt_us = median(
        take.open
            .iter()
            .filter(|c| c.received_bytes > 0 || c.sent_bytes > 0)
            .filter_map(|c| c.rtt_us)
            .filter(|&r| r > 0.0)
            .collect(),
    );
    PathWindow {
        sockets: take.open.len() as u32,
        received_bytes: take.closed_received_bytes
            + take.open.iter().map(|c| c.received_bytes).sum::<u64>(),
        acked_bytes: take.closed_sent_bytes + take.open.iter().map(|c| c.sent_bytes).sum::<u64>(),
        rtt_us,
        min_rtt_us: take
            .open
            .iter()
            .filter_map(|c| c.min_rtt_us)
            .filter(|&m| m > 0.0)
            .min_by(f64::total_cmp),
        ..PathWindow::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_engine::engine::QuicConnection;

    fn conn(rtt: Option<f64>, min: Option<f64>, received: u64) -> QuicConnection {
        QuicConnection {
            rtt_us: rtt,
            min_rtt_us: min,
            received_bytes: received,
            sent_bytes: 0,
            cwnd_bytes: 12_000,
            congestion_events: 0,
        }
    }

    #[test]
    fn a_window_counts_closed_connections_and_judges_only_active_round_trips() {
        let take = QuicTake {
            open: vec![
                conn(Some(900.0), Some(50.0), 4_000),
                conn(Some(100.0), Some(40.0), 500),
                // No acknowledgement yet: no round trip, and no minimum either.
                conn(None, None, 1_200),
                // Idle through the window: its old round trip is not the path's now.
                conn(Some(5.0), Some(30.0), 0),
                conn(Some(700.0), Some(45.0), 10),
            ],
            closed_received_bytes: 7_000,
            closed_sent_bytes: 300,
        };
        let w = window(take);
        assert_eq!(w.sockets, 5);
        assert_eq!(w.received_bytes, 7_000 + 4_000 + 500 + 1_200 + 10);
        assert_eq!(w.acked_bytes, 300);
        assert_eq!(w.rtt_us, Some(700.0), "the median of the active ones");
        assert_eq!(w.min_rtt_us, Some(30.0), "the least of every connection's");
        assert_eq!((w.busy_us, w.rcv_rtt_us), (None, None));
    }
}
