//! `POST /v1/sessions`: takes the one session slot, attaches to or launches the server,
//! and answers what it holds.
//!
//! It must not run a command unless the agent was started with `--allow-exec`, and must not
//! leave the slot taken when opening fails.

use crate::handler::blocking;
use crate::launch::{self, What};
use crate::names::check_name;
use crate::protocol::{Busy, OpenSession, Opened, ServerRequest};
use crate::reply::{json, Refusal, Reply};
use crate::session::{lock, Held, Session};
use crate::state::{Slot, State};
use hyper::StatusCode;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest lease a client may ask for.
const MAX_LEASE_MS: u64 = 600_000;

pub(crate) const NO_EXEC: &str = "this agent was started without --allow-exec: a network \
    request that runs a command is remote code execution; start the agent with --allow-exec \
    on a host you trust, or launch a lab target by name";

pub(crate) async fn open(
    state: &Arc<State>,
    local: SocketAddr,
    open: OpenSession,
) -> Result<Reply, Refusal> {
    check_name("client", &open.client)?;
    if let Some(run) = &open.run {
        check_name("run", run)?;
    }
    let lease = match open.lease_ms {
        None => state.config.lease,
        Some(ms) if (100..=MAX_LEASE_MS).contains(&ms) => Duration::from_millis(ms),
        Some(ms) => {
            return Err(Refusal::field(
                "lease_ms",
                format!("lease_ms {ms} must be between 100 and {MAX_LEASE_MS}"),
            ))
        }
    };
    let server = match &open.server {
        ServerRequest::Default => state.config.default_server.clone().ok_or_else(|| {
            Refusal::field(
                "server",
                "this agent was started without --pid, --cgroup, --port or --container: name \
                 the server to watch or launch",
            )
        })?,
        other => other.clone(),
    };
    if matches!(server, ServerRequest::Exec { .. }) && !state.config.allow_exec {
        return Err(Refusal::new(StatusCode::FORBIDDEN, NO_EXEC));
    }
    // Checked before the slot is taken: a bad field is a 400 even when busy.
    if let ServerRequest::Target { launch, .. } | ServerRequest::Exec { launch, .. } = &server {
        launch::limits(launch)?;
    }
    let busy = Busy {
        session: new_id(),
        client: open.client.clone(),
        run: open.run.clone(),
        since_unix_s: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64(),
    };
    {
        let mut slot = lock(&state.slot);
        if let Some(holder) = state_busy(&slot) {
            return Err(Refusal {
                busy: Some(Box::new(holder.clone())),
                ..Refusal::new(
                    StatusCode::CONFLICT,
                    format!(
                        "busy with run {} from host {} since {:.0} (unix s): this agent serves \
                         one session at a time; wait for it to end or use another agent",
                        holder.run.as_deref().unwrap_or("(unnamed)"),
                        holder.client,
                        holder.since_unix_s
                    ),
                )
            });
        }
        *slot = Slot::Opening(busy.clone());
    }
    // The launch and the slot's next state belong to a task of their own, not to this
    // request: a client that goes away mid-launch (Ctrl-C, a cut network) drops this future,
    // and the slot must still end Open (under the lease, which then runs out) or Free.
    let guard = FreeOnDrop(Some(state.clone()));
    let state = state.clone();
    let task = tokio::spawn(async move {
        let targets_dir = state.config.targets_dir.clone();
        let no_lab = state.config.no_lab.clone();
        let host = local.ip();
        let state_dir = state.config.state_dir.clone();
        let held = blocking(move || {
            hold(
                &server,
                targets_dir.as_deref(),
                &no_lab,
                host,
                state_dir.as_deref(),
            )
        })
        .await
        .and_then(|r| r)?;
        let opened = opened(&busy.session, &held, host, lease);
        let session = Arc::new(Session::new(
            busy.session.clone(),
            busy,
            lease,
            held,
            state.config.clock,
            state.config.state_dir.clone(),
        ));
        *lock(&state.slot) = Slot::Open(session);
        guard.keep();
        Ok(opened)
    });
    let opened = task
        .await
        .map_err(|e| Refusal::internal(format!("the agent failed inside: {e}")))??;
    Ok(json(StatusCode::CREATED, &opened))
}

/// Frees the session slot when dropped, unless [`FreeOnDrop::keep`] was called: a launch or
/// a stop that fails, panics or is cancelled never leaves the slot opening or closing.
pub(crate) struct FreeOnDrop(pub Option<Arc<State>>);

impl FreeOnDrop {
    pub fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for FreeOnDrop {
    fn drop(&mut self) {
        if let Some(state) = self.0.take() {
            *lock(&state.slot) = Slot::Free;
        }
    }
}

fn state_busy(slot: &Slot) -> Option<&Busy> {
    match slot {
        Slot::Free => None,
        Slot::Opening(b) | Slot::Closing(b) => Some(b),
        Slot::Open(s) => Some(&s.busy),
    }
}

/// Attaches or launches (blocking).
fn hold(
    server: &ServerRequest,
    targets_dir: Option<&std::path::Path>,
    no_lab_reason: &str,
    host: std::net::IpAddr,
    state_dir: Option<&crate::state_dir::StateDir>,
) -> Result<Held, Refusal> {
    let attached = match server {
        ServerRequest::Pid { pid } => crate::attach::pid(*pid)?,
        ServerRequest::Cgroup { path } => crate::attach::cgroup(path)?,
        ServerRequest::Port { port } => crate::attach::port(*port)?,
        ServerRequest::Container { name } => crate::attach::container(name)?,
        ServerRequest::Default => {
            return Err(Refusal::field("server", "no default server here"));
        }
        ServerRequest::Target { name, launch } => {
            let what = What::Target {
                name,
                targets_dir,
                no_lab_reason,
            };
            return Ok(launched(launch::start(what, launch, host, state_dir)?));
        }
        ServerRequest::Exec { command, launch } => {
            return Ok(launched(launch::start(
                What::Exec(command),
                launch,
                host,
                state_dir,
            )?));
        }
    };
    Ok(Held {
        source: attached.source,
        kind: attached.kind,
        description: attached.description,
        launched: None,
        certs: None,
    })
}

fn launched(started: launch::Started) -> Held {
    Held {
        source: started.launched.source(),
        kind: "launched",
        description: started.launched.description().to_string(),
        launched: Some(started.launched),
        certs: started.certs,
    }
}

fn opened(id: &str, held: &Held, host: std::net::IpAddr, lease: Duration) -> Opened {
    let group = held.source.group();
    let mut opened = Opened {
        session: id.to_string(),
        kind: held.kind.to_string(),
        description: held.description.clone(),
        pid: held.source.main_pid(),
        host: None,
        port: None,
        scheme: None,
        ca_pem: held.certs.as_ref().map(|c| c.ca_pem().to_string()),
        startup: None,
        limits: None,
        quota_cores: group.and_then(|g| g.cpu_quota()),
        memory_limit_bytes: group.and_then(|g| g.memory_limit()),
        lease_ms: lease.as_millis() as u64,
        notes: Vec::new(),
    };
    if let Some(l) = &held.launched {
        let (idle_rss, idle_memory) = l.memory_now();
        opened.host = Some(host.to_string());
        opened.port = Some(l.addr().port());
        opened.scheme = Some(
            if held.certs.is_some() {
                "https"
            } else {
                "http"
            }
            .into(),
        );
        opened.startup = Some(loadlab_result::server::Startup {
            ready_s: l.ready_after().as_secs_f64(),
            health_url: l.health_url(),
            idle_rss_bytes: idle_rss,
            idle_memory_bytes: idle_memory,
        });
        opened.limits = Some(l.limits().clone());
        let held_limits = l.limits().describe();
        if !held_limits.is_empty() {
            opened.notes.push(format!(
                "limits: {} ({})",
                held_limits.join(", "),
                l.limits().mechanism
            ));
        }
    }
    opened
}

/// A session id: 128 random bits as hex (with the token, the right to act on the session).
fn new_id() -> String {
    crate::state_dir::random_hex(16)
}
