//! An HTTP/3 server on 127.0.0.1 over UDP (any free port, or one given, or a socket bound
//! elsewhere: a test's network namespace) with quinn and the h3 crates, for tests that need a
//! QUIC server without a quirk: it answers every request 200 with a short body (`/bytes?n=N`:
//! N bytes, as the fixture's), and counts the QUIC connections it accepted and the requests whose
//! response it finished, so that a test holds loadlab's counts against the server's own.
//!
//! It runs on its own thread with its own runtime (never the engine's event loop) and stops
//! when dropped. It must not misbehave: the engine's own tests script the failures.

use crate::TestCa;
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The body of every answer.
pub const H3_BODY: &[u8] = b"hello over h3";

/// What the server has counted so far.
#[derive(Clone, Default)]
pub struct H3Counters {
    connections: Arc<AtomicU64>,
    answered: Arc<AtomicU64>,
    closed: Arc<AtomicU64>,
    udp_sent: Arc<AtomicU64>,
    udp_received: Arc<AtomicU64>,
}

impl H3Counters {
    /// QUIC connections whose handshake ended.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }

    /// Requests whose response (head, body and end of stream) was sent.
    pub fn answered(&self) -> u64 {
        self.answered.load(Ordering::SeqCst)
    }

    /// Connections that have closed, their bytes counted in `udp_sent` and `udp_received`.
    pub fn closed(&self) -> u64 {
        self.closed.load(Ordering::SeqCst)
    }

    /// The UDP payload bytes the closed connections sent and received, as quinn counted them
    /// (`udp_tx.bytes`, `udp_rx.bytes`): the client's wire bytes seen from this side.
    pub fn udp_bytes(&self) -> (u64, u64) {
        (
            self.udp_sent.load(Ordering::SeqCst),
            self.udp_received.load(Ordering::SeqCst),
        )
    }
}

/// The server; it stops when dropped.
pub struct H3Server {
    addr: SocketAddr,
    counters: H3Counters,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl H3Server {
    /// Serves HTTP/3 with `ca`'s server certificate (for 127.0.0.1 and localhost), ALPN h3.
    pub fn start(ca: &TestCa) -> H3Server {
        H3Server::with_tls(ca, |_| {})
    }

    /// As [`H3Server::start`], and takes 0-RTT early data from the sessions it resumes (each
    /// ticket it gives is good for one resumption).
    pub fn start_0rtt(ca: &TestCa) -> H3Server {
        H3Server::with_tls(ca, |tls| {
            tls.max_early_data_size = u32::MAX;
            // rustls takes early data only on single-use (stateful) tickets.
            tls.ticketer = Arc::new(crate::NoTickets);
            tls.session_storage = rustls::server::ServerSessionMemoryCache::new(1024);
        })
    }

    /// Serves HTTP/3 on 127.0.0.1:`port` over UDP with `tls` (its ALPN replaced by h3): a
    /// stand-in for a server that was given its port and certificate (a lab target's `PORT`,
    /// `TLS_CERT` and `TLS_KEY`), beside its HTTPS on the same port number over TCP.
    pub fn start_on(port: u16, tls: &rustls::ServerConfig) -> H3Server {
        H3Server::bind(port, tls.clone())
    }

    /// Serves HTTP/3 on `socket`, already bound (inside a test's network namespace: a
    /// socket stays in the one it was made in), with `ca`'s server certificate.
    pub fn start_on_socket(socket: std::net::UdpSocket, ca: &TestCa) -> H3Server {
        H3Server::serve_on(socket, (*ca.server_config()).clone())
    }

    fn with_tls(ca: &TestCa, edit: impl FnOnce(&mut rustls::ServerConfig)) -> H3Server {
        let mut tls = (*ca.server_config()).clone();
        edit(&mut tls);
        H3Server::bind(0, tls)
    }

    fn bind(port: u16, tls: rustls::ServerConfig) -> H3Server {
        let socket = std::net::UdpSocket::bind(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("UDP socket on 127.0.0.1:{port}: {e}"));
        H3Server::serve_on(socket, tls)
    }

    fn serve_on(socket: std::net::UdpSocket, mut tls: rustls::ServerConfig) -> H3Server {
        tls.alpn_protocols = vec![b"h3".to_vec()];
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).expect("QUIC TLS");
        let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        let addr = socket.local_addr().expect("its address");
        let counters = H3Counters::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let counts = counters.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let endpoint = quinn::Endpoint::new(
                    quinn::EndpointConfig::default(),
                    Some(config),
                    socket,
                    Arc::new(quinn::TokioRuntime),
                )
                .expect("endpoint");
                let accepting = async {
                    while let Some(incoming) = endpoint.accept().await {
                        tokio::spawn(serve(incoming, counts.clone()));
                    }
                };
                tokio::select! {
                    _ = stopped => {}
                    _ = accepting => {}
                }
                endpoint.close(0u32.into(), b"");
            });
        });
        H3Server {
            addr,
            counters,
            _stop: stop,
        }
    }

    /// `https://localhost:PORT/` (the certificate's name; the port is UDP's).
    pub fn url(&self) -> String {
        format!("https://localhost:{}/", self.addr.port())
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn counters(&self) -> H3Counters {
        self.counters.clone()
    }
}

async fn serve(incoming: quinn::Incoming, counts: H3Counters) {
    let Ok(connection) = incoming.await else {
        return;
    };
    counts.connections.fetch_add(1, Ordering::SeqCst);
    let quic = connection.clone();
    if let Ok(mut h3) =
        h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(connection)).await
    {
        answer(&mut h3, &counts).await;
    }
    // Once closed, nothing more crosses: its counts are final.
    quic.closed().await;
    let udp = quic.stats();
    counts
        .udp_sent
        .fetch_add(udp.udp_tx.bytes, Ordering::SeqCst);
    counts
        .udp_received
        .fetch_add(udp.udp_rx.bytes, Ordering::SeqCst);
    counts.closed.fetch_add(1, Ordering::SeqCst);
}

/// Answers the connection's requests until it ends.
async fn answer(h3: &mut h3::server::Connection<h3_quinn::Connection, Bytes>, counts: &H3Counters) {
    while let Ok(Some(resolver)) = h3.accept().await {
        let counts = counts.clone();
        tokio::spawn(async move {
            let Ok((request, mut stream)) = resolver.resolve_request().await else {
                return;
            };
            let response = http::Response::builder().status(200).body(()).unwrap();
            if stream.send_response(response).await.is_ok()
                && stream.send_data(body(request.uri())).await.is_ok()
                && stream.finish().await.is_ok()
            {
                counts.answered.fetch_add(1, Ordering::SeqCst);
            }
        });
    }
}

/// The answer's body: [`H3_BODY`], or N bytes for `/bytes?n=N` (at most 16 MiB).
fn body(uri: &http::Uri) -> Bytes {
    let n = (uri.path() == "/bytes")
        .then(|| uri.query()?.strip_prefix("n=")?.parse::<usize>().ok())
        .flatten();
    match n {
        Some(n) => Bytes::from(vec![b'x'; n.min(16 << 20)]),
        None => Bytes::from_static(H3_BODY),
    }
}
