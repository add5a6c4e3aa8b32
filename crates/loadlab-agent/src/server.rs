//! The agent's accept loop: TLS on every connection (no plaintext mode), HTTP/1.1 with a
//! header timeout, at most `max_connections` at once, a lease supervisor, and shutdown
//! injected (mini-redis style).
//!
//! It must not let one connection hold up another: handshakes and requests run in tasks of
//! their own, with timeouts. Nor may connections that never authenticate lock out those
//! that do: a connection counts as unauthenticated until a request on it passes the token;
//! one peer address holds at most [`UNAUTHENTICATED_PER_PEER`] of those, and when the
//! bound is reached one unauthenticated connection of anyone makes room. Which one: a
//! connection that has sent nothing yet before one that has (a client authenticating is
//! sending its handshake and request; a flood of bare connections sends nothing), the
//! oldest first within each. Only when every connection is authenticated is a new one
//! closed at once. What it cannot tell apart: a flood from the client's own address, faster
//! than [`UNAUTHENTICATED_PER_PEER`] connections in the time the client takes to send its
//! first bytes, or of full TLS handshakes that then send nothing.

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

/// A TLS handshake slower than this closes the connection (a request's headers: the
/// config's `read_timeout`).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the supervisor looks at the lease: a session whose lease ran out stops
/// within lease + this + the stop grace (2 s).
pub const LEASE_TICK: Duration = Duration::from_millis(250);
/// Unauthenticated connections one peer address may hold at once.
pub const UNAUTHENTICATED_PER_PEER: usize = 8;

/// A connection being served: its peer, whether it has sent a byte, whether a request on it
/// passed the token, and its cancel (dropping it ends the connection).
struct Tracked {
    id: u64,
    peer: std::net::IpAddr,
    received: Arc<AtomicBool>,
    authenticated: Arc<AtomicBool>,
    _cancel: tokio::sync::oneshot::Sender<()>,
}

impl Tracked {
    /// Among unauthenticated connections, which goes first to make room: lower first (one
    /// that has sent nothing, then one that has).
    fn evictable(&self) -> Option<u8> {
        if self.authenticated.load(Ordering::Relaxed) {
            None
        } else {
            Some(u8::from(self.received.load(Ordering::Relaxed)))
        }
    }
}

/// What the accept loop hands a connection it admitted.
struct Admitted {
    id: u64,
    received: Arc<AtomicBool>,
    authenticated: Arc<AtomicBool>,
    cancelled: tokio::sync::oneshot::Receiver<()>,
}

/// The connections being served, oldest first.
#[derive(Default)]
struct Connections {
    next_id: u64,
    live: Vec<Tracked>,
}

impl Connections {
    /// Makes room for a connection from `peer` (dropping one unauthenticated connection of
    /// that peer beyond its share, then one of anyone beyond the bound, as the module says)
    /// and registers it (`waiting`: bytes from it are there already); `None` when every
    /// connection is authenticated and the bound is reached.
    fn admit(&mut self, peer: std::net::IpAddr, max: usize, waiting: bool) -> Option<Admitted> {
        let of_peer = self
            .live
            .iter()
            .filter(|t| t.peer == peer && t.evictable().is_some())
            .count();
        if of_peer >= UNAUTHENTICATED_PER_PEER {
            self.evict(|t| t.peer == peer);
        }
        if self.live.len() >= max && !self.evict(|_| true) {
            return None;
        }
        let (cancel, cancelled) = tokio::sync::oneshot::channel();
        let received = Arc::new(AtomicBool::new(waiting));
        let authenticated = Arc::new(AtomicBool::new(false));
        self.next_id += 1;
        self.live.push(Tracked {
            id: self.next_id,
            peer,
            received: received.clone(),
            authenticated: authenticated.clone(),
            _cancel: cancel,
        });
        Some(Admitted {
            id: self.next_id,
            received,
            authenticated,
            cancelled,
        })
    }

    /// Drops the oldest unauthenticated connection among `which` that has sent nothing, else
    /// the oldest that has (the table is oldest first); false when there is none.
    fn evict(&mut self, which: impl Fn(&Tracked) -> bool) -> bool {
        let chosen = self
            .live
            .iter()
            .enumerate()
            .filter(|(_, t)| which(t))
            .filter_map(|(i, t)| t.evictable().map(|rank| (rank, i)))
            .min();
        match chosen {
            Some((_, i)) => {
                self.live.remove(i);
                true
            }
            None => false,
        }
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
                // Accepted from a long queue, a client's handshake is often there already:
                // counted as received from the start (its task may run only after many more
                // accepts).
                let waiting = bytes_waiting(&tcp);
                let admitted =
                    lock(&tracked).admit(peer.ip(), state.config.max_connections, waiting);
                let Some(Admitted { id, received, authenticated, cancelled }) = admitted else {
                    drop(tcp);
                    continue;
                };
                let (state, acceptor, tracked) = (state.clone(), acceptor.clone(), tracked.clone());
                connections.spawn(async move {
                    let tcp = Noticed { inner: tcp, received };
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

/// Whether the peer has sent bytes not read yet (a peek, never blocking).
fn bytes_waiting(tcp: &tokio::net::TcpStream) -> bool {
    use std::os::fd::AsRawFd as _;
    let mut byte = 0u8;
    // SAFETY: recv(2) into one byte we own, on a socket we own; MSG_PEEK leaves it queued.
    let n = unsafe {
        libc::recv(
            tcp.as_raw_fd(),
            (&mut byte as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n > 0
}

/// A connection's stream that notes its first byte received (see [`Connections::evict`]).
struct Noticed {
    inner: tokio::net::TcpStream,
    received: Arc<AtomicBool>,
}

impl tokio::io::AsyncRead for Noticed {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.received.store(true, Ordering::Relaxed);
        }
        polled
    }
}

impl tokio::io::AsyncWrite for Noticed {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

async fn serve_connection(
    state: Arc<State>,
    acceptor: tokio_rustls::TlsAcceptor,
    tcp: Noticed,
    authenticated: Arc<AtomicBool>,
) {
    // Clock exchanges need it: Nagle and delayed ACKs would add 20 ms.
    let _ = tcp.inner.set_nodelay(true);
    let Ok(local) = tcp.inner.local_addr() else {
        return;
    };
    let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await else {
        return;
    };
    let read_timeout = state.config.read_timeout;
    let service = service_fn(move |req| {
        crate::handler::handle(state.clone(), local, req, authenticated.clone())
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(read_timeout)
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
