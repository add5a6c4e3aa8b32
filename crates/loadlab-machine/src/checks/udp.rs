//! The UDP socket buffers an HTTP/3 run needs: loadlab asks a receive buffer of
//! [`PlannedRun::udp_receive_buffer_bytes`] for each worker thread's socket, which
//! `net.core.rmem_max` caps unless loadlab runs as root (SO_RCVBUFFORCE passes over it).
//! What does not fit between two reads is dropped by the kernel and resent by QUIC late.

use super::check;
use crate::plan::PlannedRun;
use crate::readings::Readings;
use loadlab_result::{Check, CheckStatus};

/// `4 MiB`, `208 KiB`, `512 B`.
fn size(bytes: u64) -> String {
    loadlab_result::format::bytes(bytes as f64)
}

pub fn udp_buffers(r: &Readings, p: &PlannedRun) -> Check {
    let known = |v: Option<u64>| v.map_or("?".into(), |v| format!("{v} ({})", size(v)));
    let found = format!(
        "net.core.rmem_max={}, net.core.wmem_max={}",
        known(r.rmem_max),
        known(r.wmem_max)
    );
    // A full send buffer makes QUIC wait for room (the socket says "would block"); only a
    // full receive buffer loses datagrams, so only the receive limit is held to a figure.
    let send = "loadlab keeps the kernel's default send buffer (a full one only makes QUIC \
                wait, it loses nothing)";
    let Some(asked) = p.udp_receive_buffer_bytes else {
        return check(
            "udp_buffers",
            CheckStatus::Pass,
            found,
            "nothing: only an HTTP/3 run (--http3) uses UDP".into(),
            None,
        );
    };
    let needs = format!(
        "a {} receive buffer on each worker thread's UDP socket; {send}",
        size(asked)
    );
    match r.rmem_max {
        Some(max) if max < asked && !r.root => check(
            "udp_buffers",
            CheckStatus::Warn,
            found,
            format!(
                "{needs}: net.core.rmem_max caps it at {}, and responses arriving faster than \
                 loadlab reads them beyond that are dropped by the kernel (QUIC resends them \
                 after a loss timer: latency that is this machine's, not the server's)",
                size(max)
            ),
            Some(format!(
                "sysctl -w net.core.rmem_max={} (or run loadlab as root)",
                2 * asked
            )),
        ),
        Some(max) if max < asked => check(
            "udp_buffers",
            CheckStatus::Pass,
            found,
            format!(
                "{needs}: as root loadlab passes over net.core.rmem_max ({}) with SO_RCVBUFFORCE",
                size(max)
            ),
            None,
        ),
        Some(_) => check("udp_buffers", CheckStatus::Pass, found, needs, None),
        None => check(
            "udp_buffers",
            CheckStatus::Pass,
            "net.core.rmem_max unknown".into(),
            needs,
            None,
        ),
    }
}
