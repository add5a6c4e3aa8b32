//! Launches a server for a session: a lab target by name, or (with `--allow-exec`) a command
//! line, under the limits asked for, through the probe's launcher (readiness, start-up
//! timing, its own process group and cgroup, cleanup when dropped), as a local launch does.
//!
//! It must not decide whether exec is allowed (the handler does) nor keep the server: the
//! session owns what this returns.

use crate::protocol::LaunchOptions;
use crate::reply::Refusal;
use crate::state_dir::StateDir;
use loadlab_certs::CertDir;
use loadlab_lab::{Lab, ServeOptions, ServeTls};
use loadlab_probe::{Launch, Launched, Limits, LimitsMode, Readiness};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

/// What to launch, checked.
pub(crate) enum What<'a> {
    Target {
        name: &'a str,
        targets_dir: Option<&'a Path>,
        /// Why there is no lab, when `targets_dir` is `None`.
        no_lab_reason: &'a str,
    },
    Exec(&'a str),
}

/// A launched server and the throwaway certificates it serves with.
pub(crate) struct Started {
    pub launched: Launched,
    /// Kept for as long as the server runs: the server reads its files.
    pub certs: Option<CertDir>,
}

/// The limits as the user typed them, parsed; a bad one names its field.
pub(crate) fn limits(options: &LaunchOptions) -> Result<(Limits, LimitsMode), Refusal> {
    let online = loadlab_probe::limits::online_cpus();
    let field = |name: &str, e: loadlab_probe::ProbeError| {
        Refusal::field(format!("server.{name}"), e.to_string())
    };
    let limits = Limits {
        cpus: options
            .cpus
            .as_deref()
            .map(|c| loadlab_probe::limits::parse_cpus(c, online))
            .transpose()
            .map_err(|e| field("cpus", e))?,
        memory: options
            .memory
            .as_deref()
            .map(loadlab_probe::limits::parse_memory)
            .transpose()
            .map_err(|e| field("memory", e))?,
        pin: options
            .pin
            .as_deref()
            .map(|p| loadlab_probe::limits::parse_cpu_list(p, online))
            .transpose()
            .map_err(|e| field("pin", e))?,
    };
    let mode = match options.limits_mode.as_str() {
        "strict" => LimitsMode::Strict,
        "best-effort" => LimitsMode::BestEffort,
        other => {
            return Err(Refusal::field(
                "server.limits_mode",
                format!("limits_mode {other:?} is neither \"strict\" nor \"best-effort\""),
            ))
        }
    };
    if let Some(upstream) = &options.upstream {
        let parsed = url::Url::parse(upstream).ok().filter(|u| {
            matches!(u.scheme(), "http" | "https") && u.host().is_some() && u.username().is_empty()
        });
        if parsed.is_none() {
            return Err(Refusal::field(
                "server.upstream",
                format!(
                    "upstream {upstream:?} is not an http:// or https:// URL with a host (and no \
                     user name): the target calls it for /upstream"
                ),
            ));
        }
    }
    if !options.healthz.starts_with('/')
        || options
            .healthz
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(Refusal::field(
            "server.healthz",
            format!(
                "healthz {:?} must be a path starting with /, without spaces or control \
                 characters",
                options.healthz
            ),
        ));
    }
    if options.startup_timeout_ms == 0 || options.startup_timeout_ms > 600_000 {
        return Err(Refusal::field(
            "server.startup_timeout_ms",
            "startup_timeout_ms must be between 1 and 600000",
        ));
    }
    Ok((limits, mode))
}

/// Checks every variable of a launch's `env` with `allowed`; the first refused is a 403
/// that names it. Names must be shell names (no `=`, no NUL) whatever `allowed` says.
pub(crate) fn check_env(
    env: &[(String, String)],
    allowed: impl Fn(&str, &str) -> Result<(), String>,
) -> Result<(), Refusal> {
    for (name, value) in env {
        let refused = if !loadlab_lab::knobs::valid_name(name) {
            Err(format!(
                "{name:?} is not an environment variable name (a letter or _, then letters, \
                 digits and _)"
            ))
        } else if value.contains('\0') {
            Err(format!("{name}: a value cannot hold a NUL byte"))
        } else {
            allowed(name, value)
        };
        if let Err(why) = refused {
            return Err(Refusal {
                field: Some(format!("server.env.{name}")),
                ..Refusal::new(hyper::StatusCode::FORBIDDEN, why)
            });
        }
    }
    Ok(())
}

/// The most `WORKERS` a launch from another host may ask for: each may be a process (the
/// forking targets), and a million of them is a fork bomb under the agent's user.
pub(crate) const MAX_WORKERS: u64 = 1024;

fn check_workers(name: &str, value: &str) -> Result<(), String> {
    match value.parse::<u64>() {
        Ok(n) if name == "WORKERS" && n > MAX_WORKERS => Err(format!(
            "WORKERS={n} is more than {MAX_WORKERS}, the most a launch through the agent may \
             ask for (each worker may be a process)"
        )),
        _ => Ok(()),
    }
}

/// A free port on `host` (the launched server binds it a moment later).
fn free_port(host: IpAddr) -> Result<u16, Refusal> {
    std::net::TcpListener::bind((host, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| Refusal::internal(format!("cannot find a free port on {host}: {e}")))
}

/// Launches `what` listening on `host` (the address the generator reached the agent on).
/// Blocking: it waits for the server to be ready.
pub(crate) fn start(
    what: What<'_>,
    options: &LaunchOptions,
    host: IpAddr,
    state_dir: Option<&StateDir>,
) -> Result<Started, Refusal> {
    let (limits, mode) = limits(options)?;
    let port = free_port(host)?;
    let certs = if options.tls {
        let extra: Vec<IpAddr> = if host.is_loopback() {
            vec![]
        } else {
            vec![host]
        };
        // In the state dir when there is one: a successor removes what a killed agent left.
        let made = match state_dir {
            Some(dir) => CertDir::create_in(&dir.run_dir(), &extra),
            None => CertDir::create(&extra),
        };
        Some(made.map_err(Refusal::internal)?)
    } else {
        None
    };
    let tls = certs.as_ref().map(ServeTls::from_dir);
    let health_tls = tls
        .as_ref()
        .map(ServeTls::client_config)
        .transpose()
        .map_err(Refusal::internal)?;
    let addr = SocketAddr::new(host, port);
    let (command, description, readiness) = match what {
        What::Target {
            name,
            targets_dir,
            no_lab_reason,
        } => {
            let no_lab = |e: loadlab_lab::LabError| {
                Refusal::new(
                    hyper::StatusCode::CONFLICT,
                    format!("{e} (on the agent's host)"),
                )
            };
            // The lab was chosen and checked at start; never looked for again here (the
            // working directory's parents are not the agent's to trust).
            let Some(dir) = targets_dir else {
                return Err(Refusal::new(hyper::StatusCode::CONFLICT, no_lab_reason));
            };
            let untrusted = |why: String| {
                Refusal::new(
                    hyper::StatusCode::CONFLICT,
                    format!("the agent refuses to run its lab's target {name}: {why}"),
                )
            };
            crate::lab::check_path(dir).map_err(untrusted)?;
            let lab = Lab::open(dir).map_err(no_lab)?;
            let serve = ServeOptions {
                port,
                host,
                upstream_url: options.upstream.clone(),
                tls: tls.clone(),
                ready_timeout: Duration::from_millis(options.startup_timeout_ms),
                ..ServeOptions::default()
            };
            let target = lab
                .target(name)
                .map_err(|e| Refusal::field("server.name", e.to_string()))?;
            check_env(&options.env, |k, v| {
                target.check_knob(k, v).map_err(|e| e.0)?;
                check_workers(k, v)
            })?;
            let command = lab
                .command(name, &serve)
                .map_err(|e| Refusal::field("server.name", e.to_string()))?;
            // Every file it is about to run, now: the lab may have changed since the start.
            crate::lab::check_target(lab.root(), target).map_err(untrusted)?;
            (command, name.to_string(), Readiness::AddressLine)
        }
        What::Exec(cmd) => {
            if cmd.trim().is_empty() {
                return Err(Refusal::field("server.command", "the command is empty"));
            }
            // `--allow-exec` lets the command be anything, but where it listens and with
            // which key is the agent's to say: it reports that address.
            check_env(&options.env, |k, _| {
                if loadlab_lab::knobs::CONTRACT_VARIABLES.contains(&k) {
                    Err(format!(
                        "{k} is set by the agent alone (where the server listens, its TLS); \
                         it cannot be overridden"
                    ))
                } else {
                    Ok(())
                }
            })?;
            let tls = tls.as_ref().map(|t| (t.cert.as_path(), t.key.as_path()));
            let command = loadlab_probe::shell::exec_command(cmd, port, host, tls);
            (command, cmd.to_string(), Readiness::Address(addr))
        }
    };
    let mut command = command;
    command.envs(options.env.iter().map(|(k, v)| (k, v)));
    // Every process the server starts inherits it: a successor finds them by it.
    if let Some(dir) = state_dir {
        command.env(crate::state_dir::MARKER, dir.instance());
    }
    let launch = Launch {
        command,
        description,
        limits,
        mode,
        readiness,
        health_path: options.healthz.clone(),
        health_tls,
        timeout: Duration::from_millis(options.startup_timeout_ms),
        netns: None,
    };
    let launched = launch.start().map_err(|e| match e {
        loadlab_probe::ProbeError::LimitUnavailable { .. } => {
            Refusal::new(hyper::StatusCode::CONFLICT, e.to_string())
        }
        loadlab_probe::ProbeError::Invalid(_) => Refusal::field("server", e.to_string()),
        _ => Refusal::new(hyper::StatusCode::BAD_GATEWAY, e.to_string()),
    })?;
    if launched.addr() != addr {
        return Err(Refusal::new(
            hyper::StatusCode::BAD_GATEWAY,
            format!(
                "{} listens on {} though it was given PORT={port}: the server must bind the \
                 port in $PORT (see targets/CONTRACT.md)",
                launched.description(),
                launched.addr()
            ),
        ));
    }
    if let (Some(dir), Some(group)) = (state_dir, launched.cgroup()) {
        dir.note_cgroups(group.dirs(), false);
    }
    Ok(Started { launched, certs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_limits_name_their_field() {
        let bad = |options: LaunchOptions| limits(&options).unwrap_err().field.unwrap();
        let cpus = LaunchOptions {
            cpus: Some("lots".into()),
            ..LaunchOptions::default()
        };
        assert_eq!(bad(cpus), "server.cpus");
        let memory = LaunchOptions {
            memory: Some("12 parsecs".into()),
            ..LaunchOptions::default()
        };
        assert_eq!(bad(memory), "server.memory");
        let mode = LaunchOptions {
            limits_mode: "lenient".into(),
            ..LaunchOptions::default()
        };
        assert_eq!(bad(mode), "server.limits_mode");
        for upstream in [
            "file:///etc/passwd",
            "gopher://x",
            "http://user:pw@host/",
            "not a url",
        ] {
            let options = LaunchOptions {
                upstream: Some(upstream.into()),
                ..LaunchOptions::default()
            };
            assert_eq!(bad(options), "server.upstream", "{upstream}");
        }
        let ok = LaunchOptions {
            upstream: Some("https://10.0.0.7:8443/api".into()),
            ..LaunchOptions::default()
        };
        assert!(limits(&ok).is_ok());
        let crlf = LaunchOptions {
            healthz: "/healthz HTTP/1.1\r\nX: y".into(),
            ..LaunchOptions::default()
        };
        assert_eq!(bad(crlf), "server.healthz");
        assert!(limits(&LaunchOptions::default()).is_ok());
    }
}
