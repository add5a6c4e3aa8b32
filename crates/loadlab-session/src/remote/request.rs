//! What the session asks the agent for, from the server flags, and the server host's checks
//! for `doctor`, without opening a session.

use super::agent_error;
use crate::server::{ServerKind, ServerSpec};
use crate::SessionError;
use loadlab_agent::client::{AgentClient, AgentEndpoint};
use loadlab_agent::protocol::{LaunchOptions, ServerRequest};

/// What the run asks of the server's host.
pub(crate) fn demand(config: &loadlab_engine::RunConfig) -> crate::remote_host::Demand {
    crate::remote_host::Demand {
        connections: config.connections as u64,
        new_per_request: !config.keepalive,
    }
}

/// `loadlab doctor --agent URL`: the server host's checks, without opening a session.
pub fn doctor_checks(
    endpoint: &AgentEndpoint,
    config: &loadlab_engine::RunConfig,
) -> Result<Vec<loadlab_result::Check>, SessionError> {
    let (mut client, _) = AgentClient::connect(endpoint).map_err(agent_error)?;
    let info = client
        .host_info(Some(config.url.port))
        .map_err(agent_error)?;
    Ok(crate::remote_host::checks(&info, demand(config)))
}

/// What to ask the agent for, from the server flags.
pub(crate) fn request(spec: &ServerSpec) -> Result<ServerRequest, SessionError> {
    let agent = spec.agent.as_ref().expect("a remote spec has an agent");
    let launch = || LaunchOptions {
        env: spec.env.clone(),
        cpus: agent.cpus.clone(),
        memory: agent.memory.clone(),
        pin: agent.pin.clone(),
        limits_mode: match spec.mode {
            loadlab_probe::LimitsMode::Strict => "strict",
            loadlab_probe::LimitsMode::BestEffort => "best-effort",
        }
        .to_string(),
        tls: spec.tls,
        upstream: match &spec.kind {
            ServerKind::Target { upstream, .. } => upstream.clone(),
            _ => None,
        },
        healthz: spec.healthz.clone(),
        startup_timeout_ms: spec.startup_timeout.as_millis() as u64,
    };
    Ok(match &spec.kind {
        ServerKind::Target { name, dir, .. } => {
            if dir.is_some() {
                return Err(SessionError::Invalid(
                    "--targets names a directory on this machine; with --agent the agent's own \
                     lab is used (start the agent with --targets DIR on its host)"
                        .into(),
                ));
            }
            ServerRequest::Target {
                name: name.clone(),
                launch: launch(),
            }
        }
        ServerKind::Exec(command) => ServerRequest::Exec {
            command: command.clone(),
            launch: launch(),
        },
        ServerKind::Pid(pid) => ServerRequest::Pid { pid: *pid },
        ServerKind::Cgroup(path) => ServerRequest::Cgroup { path: path.clone() },
        ServerKind::Port(port) => ServerRequest::Port { port: *port },
        ServerKind::Container(name) => ServerRequest::Container { name: name.clone() },
        ServerKind::AgentDefault => ServerRequest::Default,
    })
}

/// The URL's port, for a `Default` request to an agent started without a server.
pub(crate) fn url_port(url: &str) -> Option<u16> {
    url::Url::parse(url).ok()?.port_or_known_default()
}

/// This machine's name, as the agent shows it to other generators while busy.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}
