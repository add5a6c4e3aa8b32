//! The agent's accept loop: TLS on every connection (no plaintext mode), HTTP/1.1 with a
//! header timeout, at most `max_connections` at once, a lease supervisor, and shutdown
//! injected (mini-redis style).
//!
//! It must not let one connection hold up another: handshakes and requests run in tasks of
//! their own, with timeouts, and connections beyond the bound are closed at once.

use crate::config::{AgentConfig, AgentError};
use crate::session::lock;
use crate::state::{Slot, State};
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// A TLS handshake or a request's headers slower than this close the connection.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the supervisor looks at the lease: a session whose lease ran out stops
/// within lease + this + the stop grace (2 s).
pub const LEASE_TICK: Duration = Duration::from_millis(250);

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
    let state = Arc::new(State::new(config));
    let acceptor = tokio_rustls::TlsAcceptor::from(state.config.tls.clone());
    let permits = Arc::new(tokio::sync::Semaphore::new(state.config.max_connections));
    let mut connections = JoinSet::new();
    let supervisor = tokio::spawn(supervise(state.clone()));
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let tcp = match accepted {
                    Ok((tcp, _)) => tcp,
                    // Out of descriptors or a connection reset before accept: back off a
                    // little rather than spin, and keep serving.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    drop(tcp);
                    continue;
                };
                let (state, acceptor) = (state.clone(), acceptor.clone());
                connections.spawn(async move {
                    serve_connection(state, acceptor, tcp).await;
                    drop(permit);
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
    Ok(())
}

async fn serve_connection(
    state: Arc<State>,
    acceptor: tokio_rustls::TlsAcceptor,
    tcp: tokio::net::TcpStream,
) {
    // Clock exchanges need it: Nagle and delayed ACKs would add 20 ms.
    let _ = tcp.set_nodelay(true);
    let Ok(local) = tcp.local_addr() else {
        return;
    };
    let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await else {
        return;
    };
    let service = service_fn(move |req| crate::handler::handle(state.clone(), local, req));
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
