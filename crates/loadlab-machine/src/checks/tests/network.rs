//! The network checks (open files, ephemeral ports, listen backlog, conntrack) against
//! tables of machines and plans.

use super::*;
use crate::plan::{Arrivals, Backlog, Target};
use crate::readings::{Conntrack, Listener};
use CheckStatus::{Fail, Pass, Warn};

#[test]
fn open_files() {
    table(
        crate::checks::open_files,
        vec![
            (
                machine(),
                closed(10_000),
                Pass,
                &["hard 1,048,576", "10,064 descriptors"],
            ),
            (
                with(|r| r.nofile = Some((256, 256))),
                closed(1000),
                Fail,
                &[
                    "soft 256, hard 256",
                    "1,064 descriptors: 1,000 connections plus 64",
                    "ulimit -n 65536",
                ],
            ),
            // An open loop's cap is only a cap.
            (
                with(|r| r.nofile = Some((256, 256))),
                open(100.0, 10_000),
                Warn,
                &["up to 10,064"],
            ),
            (with(|r| r.nofile = None), closed(10), Pass, &["unknown"]),
        ],
    );
}

#[test]
fn ephemeral_ports() {
    let no_keepalive = |p: PlannedRun| plan(p, |p| p.keepalive = false);
    let remote = |p: PlannedRun| {
        plan(p, |p| {
            p.target = Some(Target {
                port: 80,
                loopback: false,
            })
        })
    };
    table(
        crate::checks::ephemeral_ports,
        vec![
            (
                machine(),
                closed(100),
                Pass,
                &["28,232 local ports (32768-60999)"],
            ),
            (
                machine(),
                closed(30_000),
                Fail,
                &["30,000 connections open at once", "ip_local_port_range"],
            ),
            // Loopback reuses TIME_WAIT ports with the default tcp_tw_reuse=2.
            (
                machine(),
                no_keepalive(open(5_000.0, 100)),
                Pass,
                &["reused for loopback"],
            ),
            // Off loopback it does not: 5,000/s x 60 s is past 28,232 ports.
            (
                machine(),
                remote(no_keepalive(open(5_000.0, 100))),
                Warn,
                &[
                    "300,000 sockets in TIME_WAIT",
                    "beyond 470 new connections/s",
                    "tcp_tw_reuse=1",
                ],
            ),
            (
                with(|r| r.tcp_tw_reuse = Some(1)),
                remote(no_keepalive(open(5_000.0, 100))),
                Pass,
                &["reused after 1 s"],
            ),
            (
                machine(),
                remote(no_keepalive(open(100.0, 100))),
                Pass,
                &["at 100 requests/s"],
            ),
            // A closed loop's rate is not known before it runs: the limit is said.
            (
                machine(),
                remote(no_keepalive(closed(10))),
                Pass,
                &["beyond 470 requests/s"],
            ),
            (
                with(|r| r.port_range = None),
                closed(10),
                Pass,
                &["unknown"],
            ),
        ],
    );
}

#[test]
fn listen_backlog() {
    let backlog = |value: u32, source: &str| {
        Some(Backlog {
            value,
            source: source.into(),
        })
    };
    table(
        crate::checks::listen_backlog,
        vec![
            (machine(), closed(100), Pass, &["not known here"]),
            (
                machine(),
                plan(closed(100), |p| {
                    p.backlog = backlog(1024, "the lab's default")
                }),
                Pass,
                &["1024 (the lab's default)"],
            ),
            (
                machine(),
                plan(closed(100), |p| p.backlog = backlog(1, "BACKLOG=1")),
                Warn,
                &[
                    "100 connections arriving at once",
                    "more than the backlog of 1",
                    "BACKLOG=100",
                ],
            ),
            (
                machine(),
                plan(closed(10), |p| p.backlog = backlog(8192, "BACKLOG=8192")),
                Warn,
                &["asks for 8192 but gets 4096", "net.core.somaxconn=8192"],
            ),
            // A server already listening: the kernel's figure.
            (
                with(|r| {
                    r.listener = Some(Listener {
                        backlog: 16,
                        pids: vec![7],
                        cpus: [0].into(),
                    })
                }),
                closed(50),
                Warn,
                &["16 (its listening socket)", "BACKLOG=50"],
            ),
            // A WebSocket closed loop: at most 64 handshakes at once, whatever -c.
            (
                machine(),
                plan(closed(2000), |p| {
                    p.backlog = backlog(100, "BACKLOG=100");
                    p.arrivals = Arrivals::AtMostAtOnce(64);
                }),
                Pass,
                &["up to 64 connections arriving at once (at most 64 handshakes in flight"],
            ),
            // A WebSocket open loop opens its connections as messages fall due, not at the
            // start: a second's worth, said so.
            (
                machine(),
                plan(open(1000.0, 200), |p| {
                    p.backlog = backlog(100, "BACKLOG=100");
                    p.arrivals = Arrivals::AsNeeded;
                }),
                Warn,
                &[
                    "up to 200 connections opening in a second (an open loop opens one as a \
                     message falls due",
                    "more than the backlog of 100",
                ],
            ),
            // An open loop with keep-alive opens at most about a second's arrivals at once.
            (
                machine(),
                plan(open(10.0, 10_000), |p| {
                    p.backlog = backlog(128, "BACKLOG=128")
                }),
                Pass,
                &[],
            ),
            (
                with(|r| r.tcp_syncookies = Some(0)),
                plan(closed(3000), |p| p.backlog = backlog(4096, "BACKLOG=4096")),
                Warn,
                &["SYN queue of 2048", "tcp_max_syn_backlog=3000"],
            ),
        ],
    );
}

#[test]
fn conntrack() {
    let ct = |max: u64, count: u64| {
        with(move |r| {
            r.conntrack = Some(Conntrack {
                max,
                count,
                time_wait_s: 120,
            })
        })
    };
    table(
        crate::checks::conntrack,
        vec![
            (machine(), closed(100), Pass, &["not loaded"]),
            (ct(65_536, 100), closed(1000), Pass, &["1,000 entries"]),
            (
                ct(65_536, 100),
                plan(open(1000.0, 100), |p| p.keepalive = false),
                Fail,
                &["120,100 entries", "nf_conntrack_max=262144"],
            ),
            (
                ct(2_000, 500),
                closed(1300),
                Warn,
                &["most of the 1,500 free"],
            ),
        ],
    );
}
