//! Checks of the network stack against the run: descriptors, local ports and TIME_WAIT,
//! listen backlogs, connection tracking.

use super::{check, thousands, SPARE_DESCRIPTORS, TIME_WAIT_S, WARN_SHARE};
use crate::plan::PlannedRun;
use crate::readings::Readings;
use loadlab_result::{Check, CheckStatus};

pub fn open_files(r: &Readings, p: &PlannedRun) -> Check {
    let peak = p.peak_connections();
    let needed = peak + SPARE_DESCRIPTORS;
    let what = match p.open_loop {
        Some(_) => format!(
            "up to {} descriptors: the open loop may open {} connections (--max-connections), \
             plus {SPARE_DESCRIPTORS}",
            thousands(needed),
            thousands(peak)
        ),
        None => format!(
            "{} descriptors: {} connections plus {SPARE_DESCRIPTORS}",
            thousands(needed),
            thousands(peak)
        ),
    };
    let Some((soft, hard)) = r.nofile else {
        return check(
            "open_files",
            CheckStatus::Pass,
            "unknown".into(),
            what,
            None,
        );
    };
    let found = format!(
        "open-files limit: soft {}, hard {} (loadlab raises the soft one to the hard one)",
        thousands(soft),
        thousands(hard)
    );
    if hard >= needed {
        return check("open_files", CheckStatus::Pass, found, what, None);
    }
    let target = needed.next_power_of_two().max(65_536);
    // An open loop's cap is only a cap: it may never open that many.
    let status = if p.open_loop.is_some() {
        CheckStatus::Warn
    } else {
        CheckStatus::Fail
    };
    check(
        "open_files",
        status,
        found,
        what,
        Some(format!(
            "ulimit -n {target} in the shell that starts loadlab (as root; LimitNOFILE={target} \
             in a systemd unit, or nofile in /etc/security/limits.conf), or fewer connections"
        )),
    )
}

pub fn ephemeral_ports(r: &Readings, p: &PlannedRun) -> Check {
    let Some((lo, hi)) = r.port_range else {
        return check(
            "ephemeral_ports",
            CheckStatus::Pass,
            "unknown".into(),
            "local ports for the connections".into(),
            None,
        );
    };
    let ports = u64::from(hi.saturating_sub(lo)) + 1;
    let loopback = p.target.as_ref().is_some_and(|t| t.loopback);
    let reuse = r.tcp_tw_reuse.unwrap_or(0);
    let reused = reuse == 1 || (reuse == 2 && loopback);
    let found = format!(
        "{} local ports ({lo}-{hi}), tcp_tw_reuse={reuse}{}",
        thousands(ports),
        match (reuse, reused, &p.target) {
            (2, true, _) => " (TIME_WAIT ports are reused for loopback targets)",
            (2, false, None) => " (TIME_WAIT ports are reused for loopback targets only)",
            (2, false, Some(_)) => " (reuse for loopback only: this target is not on loopback)",
            (1, _, _) => " (TIME_WAIT ports are reused after 1 s)",
            _ => "",
        }
    );
    let widen = format!(
        "sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"{}",
        if reused {
            String::new()
        } else {
            " and sysctl -w net.ipv4.tcp_tw_reuse=1".into()
        }
    );
    let peak = p.peak_connections();
    if peak > ports {
        let status = if p.open_loop.is_some() {
            CheckStatus::Warn
        } else {
            CheckStatus::Fail
        };
        return check(
            "ephemeral_ports",
            status,
            found,
            format!(
                "{} connections open at once to one address, each on a local port of its own",
                thousands(peak)
            ),
            Some(format!("{widen}, or fewer connections")),
        );
    }
    if p.keepalive {
        return check(
            "ephemeral_ports",
            CheckStatus::Pass,
            found,
            format!("{} local ports, held for the run", thousands(peak)),
            None,
        );
    }
    // A new connection per request: each closed connection holds its 4-tuple for 60 s on
    // the end that closed first. loadlab lets the server close first (so the server holds
    // it), but when loadlab has to close first its port is held.
    let sustainable = ports / TIME_WAIT_S;
    match p.new_connections_per_s() {
        Some(rate) if !reused && rate * TIME_WAIT_S as f64 > ports as f64 => check(
            "ephemeral_ports",
            CheckStatus::Warn,
            found,
            format!(
                "a new connection per request at {} requests/s leaves {} sockets in TIME_WAIT \
                 (60 s each), more than the local ports: if loadlab's end closes first, ports \
                 run out beyond {} new connections/s",
                thousands(rate as u64),
                thousands((rate * TIME_WAIT_S as f64) as u64),
                thousands(sustainable)
            ),
            Some(widen),
        ),
        Some(rate) => check(
            "ephemeral_ports",
            CheckStatus::Pass,
            found,
            format!(
                "a new connection per request at {} requests/s",
                thousands(rate as u64)
            ),
            None,
        ),
        None => check(
            "ephemeral_ports",
            CheckStatus::Pass,
            found,
            format!(
                "a new connection per request{}",
                if reused {
                    String::new()
                } else {
                    format!(
                        ": beyond {} requests/s the TIME_WAIT sockets (60 s each) outnumber \
                         the local ports, if loadlab's end is the one that closes",
                        thousands(sustainable)
                    )
                }
            ),
            None,
        ),
    }
}

pub fn listen_backlog(r: &Readings, p: &PlannedRun) -> Check {
    let somaxconn = r.somaxconn;
    let syn = r.tcp_max_syn_backlog;
    let mut found = format!(
        "somaxconn={}, tcp_max_syn_backlog={}, tcp_syncookies={}",
        somaxconn.map_or("?".into(), |v| v.to_string()),
        syn.map_or("?".into(), |v| v.to_string()),
        r.tcp_syncookies.map_or("?".into(), |v| v.to_string())
    );
    let backlog = p.backlog.clone().or_else(|| {
        r.listener.as_ref().map(|l| crate::plan::Backlog {
            value: l.backlog,
            source: "its listening socket".into(),
        })
    });
    let Some(backlog) = backlog else {
        return check(
            "listen_backlog",
            CheckStatus::Pass,
            found,
            "the server's backlog is not known here (not launched with BACKLOG, not listening \
             on this machine)"
                .into(),
            None,
        );
    };
    found.push_str(&format!(
        "; the server's backlog: {} ({})",
        backlog.value, backlog.source
    ));
    let effective = somaxconn.map_or(backlog.value, |m| backlog.value.min(m));
    // Connections that may arrive together: all of a closed loop's at the start (a
    // WebSocket one's a bounded number of handshakes at a time); an open loop's opened as it
    // needs them, at most its rate's worth in a second; with a new connection per request,
    // as many as are open at once, again and again.
    let peak = p.peak_connections();
    let at_once = |n: u64, how: &str| {
        let text = format!(
            "up to {} connections arriving at once ({how})",
            thousands(n)
        );
        (n, text)
    };
    let (burst, needs) = match (p.keepalive, p.arrivals, p.open_loop) {
        (false, _, _) => at_once(peak, "a new connection per request, all run long"),
        (true, crate::plan::Arrivals::AtMostAtOnce(n), _) => at_once(
            peak.min(n),
            &format!("at most {n} handshakes in flight at once"),
        ),
        (true, crate::plan::Arrivals::AsNeeded, Some(o)) => {
            let n = peak.min(o.peak_rate.ceil() as u64);
            let text = format!(
                "up to {} connections opening in a second (an open loop opens one as a \
                 message falls due with none free, not all at the start)",
                thousands(n)
            );
            (n, text)
        }
        (true, _, Some(o)) => at_once(peak.min(o.peak_rate.ceil() as u64), "at the start"),
        (true, _, None) => at_once(peak, "at the start"),
    };
    if let Some(m) = somaxconn.filter(|m| backlog.value > *m) {
        return check(
            "listen_backlog",
            CheckStatus::Warn,
            found,
            format!(
                "{needs}; the server asks for {} but gets {m}",
                backlog.value
            ),
            Some(format!("sysctl -w net.core.somaxconn={}", backlog.value)),
        );
    }
    if burst > u64::from(effective) {
        let raise = burst.min(65_535);
        return check(
            "listen_backlog",
            CheckStatus::Warn,
            found,
            format!(
                "{needs}: more than the backlog of {effective}; unless the server accepts \
                 faster than they come, the accept queue overflows (connections wait for a \
                 SYN retransmission, 1 s or more)"
            ),
            Some(format!(
                "raise the server's backlog (BACKLOG={raise} for the lab's targets){}",
                match somaxconn {
                    Some(m) if u64::from(m) < raise => {
                        format!(" and sysctl -w net.core.somaxconn={raise}")
                    }
                    _ => String::new(),
                }
            )),
        );
    }
    if let Some(s) = syn.filter(|s| u64::from(*s) < burst && r.tcp_syncookies == Some(0)) {
        return check(
            "listen_backlog",
            CheckStatus::Warn,
            found,
            format!("{needs}: more than the SYN queue of {s}, and SYN cookies are off"),
            Some(format!(
                "sysctl -w net.ipv4.tcp_max_syn_backlog={} (or net.ipv4.tcp_syncookies=1)",
                burst.min(65_535)
            )),
        );
    }
    check("listen_backlog", CheckStatus::Pass, found, needs, None)
}

pub fn conntrack(r: &Readings, p: &PlannedRun) -> Check {
    let Some(ct) = r.conntrack else {
        return check(
            "conntrack",
            CheckStatus::Pass,
            "connection tracking is not loaded".into(),
            "nothing: no table to fill".into(),
            None,
        );
    };
    let free = ct.max.saturating_sub(ct.count);
    let found = format!(
        "nf_conntrack_max={}, {} entries in use, TIME_WAIT entries kept {} s",
        thousands(ct.max),
        thousands(ct.count),
        ct.time_wait_s
    );
    // Each connection is an entry while open, and for the TIME_WAIT timeout after.
    let (needed, why) = match p.new_connections_per_s() {
        Some(rate) if rate > 0.0 => {
            let n = (rate * ct.time_wait_s as f64) as u64 + p.peak_connections();
            (
                n,
                format!(
                    "about {} entries: {} new connections/s, each kept {} s after it closes",
                    thousands(n),
                    thousands(rate as u64),
                    ct.time_wait_s
                ),
            )
        }
        _ => {
            let n = p.peak_connections();
            (n, format!("{} entries, one per connection", thousands(n)))
        }
    };
    let fix = Some(format!(
        "sysctl -w net.netfilter.nf_conntrack_max={}",
        (ct.count + needed).saturating_mul(2).next_power_of_two()
    ));
    if needed > free {
        check(
            "conntrack",
            CheckStatus::Fail,
            found,
            format!(
                "{why}: more than the {} free; new connections are then dropped",
                thousands(free)
            ),
            fix,
        )
    } else if needed as f64 > free as f64 * WARN_SHARE {
        check(
            "conntrack",
            CheckStatus::Warn,
            found,
            format!("{why}: most of the {} free", thousands(free)),
            fix,
        )
    } else {
        check("conntrack", CheckStatus::Pass, found, why, None)
    }
}
