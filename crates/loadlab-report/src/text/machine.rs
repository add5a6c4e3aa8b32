//! The machine and the wire in the text summary: the kernel's TCP counters over the measured
//! time (and UDP's drops over QUIC), TIME_WAIT on the target's port, the shaped link, and the checks that did not pass.

use super::row;
use super::*;
use loadlab_result::machine::LinkDirection;
use loadlab_result::CheckStatus;

pub(super) fn machine_section(s: &mut String, r: &RunResult) {
    let checks: Vec<String> = r
        .environment
        .checks
        .iter()
        .filter(|c| c.status != CheckStatus::Pass)
        .map(|c| format!("{} {}", c.status.label(), c.name))
        .collect();
    if r.kernel.is_none() && r.link.is_none() && checks.is_empty() {
        return;
    }
    s.push_str("\nMachine\n");
    if let Some(k) = &r.kernel {
        tcp_rows(s, k, "  ");
        row(s, "  Counted in", &k.scope);
    }
    if let Some(link) = &r.link {
        row(
            s,
            "  Link",
            &format!(
                "the server in namespace {} at {}, loadlab at {}",
                link.namespace, link.server_address, link.client_address
            ),
        );
        for (name, d) in [("  Up", &link.up), ("  Down", &link.down)] {
            if let Some(d) = d {
                row(s, name, &direction(d));
            }
        }
    }
    if !checks.is_empty() {
        row(
            s,
            "  Checks",
            &format!("{} (loadlab doctor explains)", checks.join(", ")),
        );
    }
}

/// The TCP counters' rows (and TIME_WAIT on the port), labels starting with `indent`: this
/// machine's in the Machine section, the server host's (through its agent) in the Server's.
pub(super) fn tcp_rows(s: &mut String, k: &loadlab_result::machine::KernelCounters, indent: &str) {
    row(
        s,
        &format!("{indent}TCP"),
        &format!(
            "{} listen queue overflows, {} listen drops, {} SYN cookies; {} of {} segments \
             retransmitted, {} timeouts; {} resets sent, {} connections reset",
            count(k.listen_overflows),
            count(k.listen_drops),
            count(k.syncookies_sent),
            count(k.retransmitted_segments),
            count(k.segments_sent),
            count(k.timeouts),
            count(k.resets_sent),
            count(k.resets_received)
        ),
    );
    if let Some(tw) = &k.time_wait {
        let mut line = format!(
            "on port {}: {} at the start, {} at the end",
            tw.port,
            count(tw.before),
            count(tw.after)
        );
        if let Some(n) = k.time_wait_overflows.filter(|n| *n > 0) {
            let _ = write!(
                line,
                "; {} connections closed without it (the table was full)",
                count(n)
            );
        }
        row(s, &format!("{indent}TIME_WAIT"), &line);
    }
    // Over QUIC, only when the kernel dropped something: datagrams received are no news.
    if let Some(u) = k
        .udp
        .filter(|u| u.in_errors > 0 || u.receive_buffer_errors > 0)
    {
        row(
            s,
            &format!("{indent}UDP"),
            &format!(
                "{} datagrams dropped for a full receive buffer, {} dropped on arrival in all, \
                 {} received",
                count(u.receive_buffer_errors),
                count(u.in_errors),
                count(u.datagrams_received)
            ),
        );
    }
}

fn direction(d: &LinkDirection) -> String {
    let mut line = d.qdisc.clone();
    if let (Some(wire), Some(payload)) = (d.calibrated_wire_bytes_per_s, d.calibrated_bytes_per_s) {
        let _ = write!(
            line,
            "; calibrated {} on the wire, {} of TCP payload",
            decimal_rate(wire),
            decimal_rate(payload)
        );
    }
    let q = &d.qdisc_stats;
    let _ = write!(
        line,
        "; measured: {} in {} packets, {} dropped, {} over the limit",
        bytes(q.bytes as f64),
        count(q.packets),
        count(q.drops),
        count(q.overlimits)
    );
    line
}

/// Link rates in decimal units, as they are set (`--bandwidth 2MBps`): `1.998 MB/s`.
fn decimal_rate(bytes_per_s: f64) -> String {
    match bytes_per_s {
        b if b >= 1e6 => format!("{:.3} MB/s", b / 1e6),
        b if b >= 1e3 => format!("{:.1} kB/s", b / 1e3),
        b => format!("{b:.0} B/s"),
    }
}
