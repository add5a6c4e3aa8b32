//! The agent's accept loop: TLS on every connection (no plaintext mode), HTTP/1.1 with a
//! header timeout, at most `max_connections` at once, a lease supervisor, and shutdown
//! injected (mini-redis style).
//!
//! It must not let one connection hold up another: handshakes and requests run in tasks of
//! their own, with timeouts. Nor may connections that never authenticate lock out those
//! that do: a connection counts as unauthenticated until a request on it passes the token;
//! one peer address holds at most [`UNAUTHENTICATED_PER_PEER`] of those (its oldest is
//! dropped for a new one), and when the bound is reached the oldest unauthenticated
//! connection of anyone makes room. Only when every connection is authenticated is a new
//! one closed at once.

use crate::config::{AgentConfig, AgentError};
use crate::session::lock;
use crate::state::{Slot, State};
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// A TLS handshake or a request's headers slower than this close the connection.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the supervisor looks at the lease: a session whose lease ran out stops
/// within lease + this + the stop grace (2 s).
pub const LEASE_TICK: Duration = Duration::from_millis(250);
/// Unauthenticated connections one peer address may hold at once.
pub const UNAUTHENTICATED_PER_PEER: usize = 8;

/// A connection being served: its peer, whether a request on it passed the token, and its
/// cancel (dropping it ends the connection).
struct Tracked {
    id: u64,
    peer: std::net::IpAddr,
    authenticated: Arc<AtomicBool>,
    _cancel: tokio::sync::oneshot::Sender<()>,
}

/// The connections being served, oldest first.
#[derive(Default)]
struct Connections {
    next_id: u64,
    live: Vec<Tracked>,
}

impl Connections {
    /// Makes room for a connection from `peer` (dropping the oldest unauthenticated one of
    /// that peer beyond its share, then the oldest unauthenticated one of anyone beyond the
    /// bound) and registers it; `None` when every connection is authenticated and the bound
    /// is reached.
    fn admit(
        &mut self,
        peer: std::net::IpAddr,
        max: usize,
    ) -> Option<(u64, Arc<AtomicBool>, tokio::sync::oneshot::Receiver<()>)> {
        let unauthenticated = |t: &Tracked| !t.authenticated.load(Ordering::Relaxed);
        let of_peer = self
            .live
            .iter()
            .filter(|t| t.peer == peer && unauthenticated(t))
            .count();
        if of_peer >= UNAUTHENTICATED_PER_PEER {
            if let Some(i) = self
                .live
                .iter()
                .position(|t| t.peer == peer && unauthenticated(t))
            {
                self.live.remove(i);
            }
        }
        if self.live.len() >= max {
            let i = self.live.iter().position(unauthenticated)?;
            self.live.remove(i);
        }
        let (cancel, cancelled) = tokio::sync::oneshot::channel();
        let authenticated = Arc::new(AtomicBool::new(false));
        self.next_id += 1;
        self.live.push(Tracked {
            id: self.next_id,
            peer,
            authenticated: authenticated.clone(),
            _cancel: cancel,
        });
        Some((self.next_id, authenticated, cancelled))
    }

    fn end(&mut self, id: u64) {
        self.live.retain(|t| t.id != id);
    }
}

/// Serves until `shutdown` completes, then stops what a session launched and removes its
/// cgroups.
pub async fn run(
    listener: TcpListener,
    config: AgentConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), AgentError> {
    if config.max_connections == 0 {
        return Err(AgentError::Invalid(
            "max_connections must be at least 1".into(),
        ));
    }
    // A launched server's PID stays its own until its session ends only because the agent
    // reaps it: with SIGCHLD inherited as ignored (some launchers and init scripts do), the
    // kernel reaps children at their exit and their PIDs can be reused while a session still
    // names them. SAFETY: sets a disposition to the default; installs no handler.
    unsafe { libc::signal(libc::SIGCHLD, libc::SIG_DFL) };
    let state = Arc::new(State::new(config));
    let acceptor = tokio_rustls::TlsAcceptor::from(state.config.tls.clone());
    let tracked = Arc::new(Mutex::new(Connections::default()));
    let mut connections = JoinSet::new();
    let supervisor = tokio::spawn(supervise(state.clone()));
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(accepted) => accepted,
                    // Out of descriptors or a connection reset before accept: back off a
                    // little rather than spin, and keep serving.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let admitted = lock(&tracked).admit(peer.ip(), state.config.max_connections);
                let Some((id, authenticated, cancelled)) = admitted else {
                    drop(tcp);
                    continue;
                };
                let (state, acceptor, tracked) = (state.clone(), acceptor.clone(), tracked.clone());
                connections.spawn(async move {
                    tokio::select! {
                        _ = serve_connection(state, acceptor, tcp, authenticated) => {}
                        // Dropped from the table to make room: end it.
                        _ = cancelled => {}
                    }
                    lock(&tracked).end(id);
                });
            }
        }
    }
    supervisor.abort();
    connections.shutdown().await;
    let session = match std::mem::replace(&mut *lock(&state.slot), Slot::Free) {
        Slot::Open(s) => Some(s),
        _ => None,
    };
    if let Some(session) = session {
        let _ = tokio::task::spawn_blocking(move || session.close()).await;
    }
    let load = lock(&state.load).take();
    if let Some(load) = load {
        let _ = tokio::task::spawn_blocking(move || load.close()).await;
    }
    Ok(())
}

async fn serve_connection(
    state: Arc<State>,
    acceptor: tokio_rustls::TlsAcceptor,
    tcp: tokio::net::TcpStream,
    authenticated: Arc<AtomicBool>,
) {
    // Clock exchanges need it: Nagle and delayed ACKs would add 20 ms.
    let _ = tcp.set_nodelay(true);
    let Ok(local) = tcp.local_addr() else {
        return;
    };
    let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await else {
        return;
    };
    let service = service_fn(move |req| {
        crate::handler::handle(state.clone(), local, req, authenticated.clone())
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(tls), service)
        .await;
}

/// Every [`LEASE_TICK`], ends the session whose lease ran out: stops its sampling and what
/// it launched, removes its cgroups, frees the slot.
async fn supervise(state: Arc<State>) {
    let mut tick = tokio::time::interval(LEASE_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let expired = {
            let mut slot = lock(&state.slot);
            match &*slot {
                Slot::Open(s) if s.expired(Instant::now()) => {
                    let s = s.clone();
                    *slot = Slot::Closing(s.busy.clone());
                    Some(s)
                }
                _ => None,
            }
        };
        if let Some(session) = expired {
            let _ = tokio::task::spawn_blocking(move || session.close()).await;
            *lock(&state.slot) = Slot::Free;
        }
        // A load whose coordinator stopped asking: stopped, and its slot freed.
        let load = {
            let mut slot = lock(&state.load);
            match slot.as_ref() {
                Some(l) if l.expired(Instant::now()) => slot.take(),
                _ => None,
            }
        };
        if let Some(load) = load {
            let _ = tokio::task::spawn_blocking(move || load.close()).await;
        }
    }
}

/// [`run`] on a runtime of its own, for the CLI: blocks until `shutdown` completes.
pub fn serve(
    listener: std::net::TcpListener,
    config: AgentConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), AgentError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("loadlab-agent")
        .build()
        .map_err(AgentError::Runtime)?;
    listener.set_nonblocking(true).map_err(AgentError::Accept)?;
    runtime.block_on(async move {
        let listener = TcpListener::from_std(listener).map_err(AgentError::Accept)?;
        run(listener, config, shutdown).await
    })
}
