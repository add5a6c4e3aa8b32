//! The server host's limits, as its agent reads them (`GET /v1/host`), checked against the
//! planned run: the same kind of check `loadlab doctor` makes of this machine, for the
//! machine that serves. Post 002's finding (a backlog of 0 overflows the server's listen
//! queue) and the open-files limit of a server holding thousands of connections are read
//! there, not here. Pure: the host's figures in, checks out.

use loadlab_agent::protocol::HostInfo;
use loadlab_result::{Check, CheckStatus};

/// What the planned run asks of the server's host.
#[derive(Debug, Clone, Copy)]
pub struct Demand {
    /// Connections open at once (the closed loop's, or the open loop's bound).
    pub connections: u64,
    /// A new connection per request: the listen queue takes every request's handshake.
    pub new_per_request: bool,
}

/// The checks, each named `server_*` so that they sit apart from this machine's.
pub fn checks(host: &HostInfo, demand: Demand) -> Vec<Check> {
    let mut out = Vec::new();
    let h = &host.hostname;
    let burst = demand.connections;
    if let Some(backlog) = host.listen_backlog {
        let (status, needs) = if backlog == 0 {
            (
                CheckStatus::Fail,
                "a backlog above 0: with 0 the kernel queues at most one handshake".to_string(),
            )
        } else if (backlog as u64) < burst && demand.new_per_request {
            (
                CheckStatus::Warn,
                format!("room for the {burst} connections that may open at once"),
            )
        } else {
            (CheckStatus::Pass, format!("at least {}", burst.min(128)))
        };
        out.push(Check {
            name: "server_listen_backlog".into(),
            status,
            found: format!("the listener on {h} has a backlog of {backlog}"),
            needs,
            fix: (status != CheckStatus::Pass).then(|| {
                format!(
                    "raise the server's listen backlog (its BACKLOG or listen() argument) and \
                     net.core.somaxconn on {h} (now {})",
                    host.somaxconn.map_or("unknown".into(), |v| v.to_string())
                )
            }),
        });
    }
    if let Some(somaxconn) = host.somaxconn {
        let low = somaxconn < burst.min(4096);
        out.push(Check {
            name: "server_somaxconn".into(),
            status: if low {
                CheckStatus::Warn
            } else {
                CheckStatus::Pass
            },
            found: format!("net.core.somaxconn = {somaxconn} on {h}"),
            needs: format!(
                "at least {} (every listener's backlog is capped there)",
                burst.min(4096)
            ),
            fix: low.then(|| format!("sysctl -w net.core.somaxconn=4096 (on {h})")),
        });
    }
    if let Some(soft) = host.nofile_soft {
        let wanted = burst + 64;
        let low = soft < wanted;
        out.push(Check {
            name: "server_open_files".into(),
            status: if low {
                CheckStatus::Fail
            } else {
                CheckStatus::Pass
            },
            found: format!(
                "the server on {h} may open {soft} files (hard limit {})",
                host.nofile_hard.map_or("unknown".into(), |v| v.to_string())
            ),
            needs: format!("{wanted}: one per connection, and some to spare"),
            fix: low.then(|| {
                format!("raise the server's RLIMIT_NOFILE (ulimit -n, or LimitNOFILE= in its systemd unit) on {h}")
            }),
        });
    }
    if let (Some(syn), Some(cookies)) = (host.tcp_max_syn_backlog, host.syncookies) {
        let low = syn < burst && cookies == 0;
        out.push(Check {
            name: "server_syn_backlog".into(),
            status: if low {
                CheckStatus::Warn
            } else {
                CheckStatus::Pass
            },
            found: format!("tcp_max_syn_backlog = {syn}, tcp_syncookies = {cookies} on {h}"),
            needs: format!("room for {burst} half-open connections, or SYN cookies"),
            fix: low.then(|| {
                format!(
                    "sysctl -w net.ipv4.tcp_max_syn_backlog={} (on {h})",
                    burst.max(1024)
                )
            }),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostInfo {
        HostInfo {
            hostname: "srv".into(),
            cpus: 1,
            memory_bytes: Some(1 << 30),
            somaxconn: Some(4096),
            tcp_max_syn_backlog: Some(4096),
            syncookies: Some(1),
            nofile_soft: Some(1024),
            nofile_hard: Some(4096),
            port_range: Some((32768, 60999)),
            listen_backlog: Some(1024),
            time_wait_on_port: None,
        }
    }

    fn status(checks: &[Check], name: &str) -> CheckStatus {
        checks.iter().find(|c| c.name == name).unwrap().status
    }

    #[test]
    fn a_backlog_of_zero_fails_and_a_roomy_host_passes() {
        let demand = Demand {
            connections: 500,
            new_per_request: true,
        };
        let ok = checks(&host(), demand);
        assert!(ok.iter().all(|c| c.status == CheckStatus::Pass), "{ok:#?}");
        let zero = checks(
            &HostInfo {
                listen_backlog: Some(0),
                ..host()
            },
            demand,
        );
        assert_eq!(status(&zero, "server_listen_backlog"), CheckStatus::Fail);
        let fix = zero[0].fix.as_deref().unwrap();
        assert!(fix.contains("BACKLOG") && fix.contains("srv"), "{fix}");
    }

    #[test]
    fn too_few_files_for_the_connections_fail_and_a_small_somaxconn_warns() {
        let demand = Demand {
            connections: 2500,
            new_per_request: false,
        };
        let c = checks(
            &HostInfo {
                somaxconn: Some(128),
                ..host()
            },
            demand,
        );
        assert_eq!(status(&c, "server_open_files"), CheckStatus::Fail);
        assert_eq!(status(&c, "server_somaxconn"), CheckStatus::Warn);
        // Kept-alive connections: a backlog below the count is not a warning.
        assert_eq!(status(&c, "server_listen_backlog"), CheckStatus::Pass);
    }

    #[test]
    fn figures_the_agent_could_not_read_make_no_check() {
        let bare = HostInfo {
            somaxconn: None,
            tcp_max_syn_backlog: None,
            syncookies: None,
            nofile_soft: None,
            nofile_hard: None,
            listen_backlog: None,
            ..host()
        };
        let demand = Demand {
            connections: 10,
            new_per_request: false,
        };
        assert!(checks(&bare, demand).is_empty());
    }
}
