//! The UDP buffers check against a small and a large `net.core.rmem_max`, as root or not,
//! over HTTP/3 or TCP.

use super::*;
use CheckStatus::{Pass, Warn};

#[test]
fn udp_buffers() {
    let h3 = |p: PlannedRun| plan(p, |p| p.udp_receive_buffer_bytes = Some(4 << 20));
    let user = |rmem_max| {
        with(|r| {
            r.rmem_max = Some(rmem_max);
            r.root = false;
        })
    };
    table(
        crate::checks::udp_buffers,
        vec![
            // The kernel's default limit caps the 4 MiB asked: warned, with the sysctl.
            (
                user(212_992),
                h3(closed(4)),
                Warn,
                &[
                    "net.core.rmem_max=212992 (208 KiB)",
                    "net.core.wmem_max=212992",
                    "a 4 MiB receive buffer",
                    "caps it at 208 KiB",
                    "fix: sysctl -w net.core.rmem_max=8388608",
                ],
            ),
            // A limit as large as what is asked: nothing to fix.
            (
                user(4 << 20),
                h3(closed(4)),
                Pass,
                &[
                    "net.core.rmem_max=4194304 (4 MiB)",
                    "a 4 MiB receive buffer",
                ],
            ),
            (user(64 << 20), h3(open(10_000.0, 10)), Pass, &["64 MiB"]),
            // Root passes over the limit.
            (
                with(|r| r.rmem_max = Some(212_992)),
                h3(closed(4)),
                Pass,
                &["as root loadlab passes over net.core.rmem_max (208 KiB)"],
            ),
            // Over TCP no UDP socket is opened.
            (
                user(212_992),
                closed(4),
                Pass,
                &["only an HTTP/3 run (--http3) uses UDP"],
            ),
            (
                with(|r| {
                    r.rmem_max = None;
                    r.root = false
                }),
                h3(closed(4)),
                Pass,
                &["unknown"],
            ),
        ],
    );
}
