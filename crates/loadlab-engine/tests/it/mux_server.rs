//! An HTTP/2 (h2 over TLS, h2c) or HTTP/3 server on 127.0.0.1:0 for the scenario tests
//! (`scenario_mux`): a handler answers each request by route (status, fields, body), may
//! hold it until a page's streams are all open at once on its connection, reset it, or
//! refuse it unprocessed. It counts connections, the requests it read (as testkit's `Seen`,
//! `:authority` among the headers) and the most streams open at once on one connection.
//! It runs on its own thread with its own runtime and stops when dropped.

use bytes::{Buf, Bytes};
use loadlab_testkit::{Seen, TestCa};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the server answers a request.
#[derive(Default)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
    /// Answer once this many streams are open at once on the request's connection (or after
    /// `TOGETHER_WAIT`, which only makes a failing test slow, never a passing one fail).
    pub together: Option<u64>,
    /// Reset the stream instead of answering.
    pub reset: bool,
    /// Refuse the stream unprocessed (REFUSED_STREAM, H3_REQUEST_REJECTED).
    pub refuse: bool,
}

const TOGETHER_WAIT: Duration = Duration::from_secs(3);

pub type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

/// What the server saw, across its connections.
#[derive(Default)]
pub struct Counts {
    pub connections: AtomicU64,
    /// The most streams open at once on one connection.
    pub most_streams: AtomicU64,
    pub seen: Mutex<Vec<Seen>>,
}

impl Counts {
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> u64 {
        self.seen.lock().unwrap().len() as u64
    }

    pub fn requests_to(&self, prefix: &str) -> u64 {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|s| s.route().starts_with(prefix))
            .count() as u64
    }
}

/// One connection's streams, for `Reply::together`.
#[derive(Default)]
struct Streams {
    open: AtomicU64,
    most: AtomicU64,
    changed: tokio::sync::Notify,
}

impl Streams {
    fn opened(&self, counts: &Counts) {
        let open = self.open.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(open, Ordering::SeqCst);
        counts.most_streams.fetch_max(open, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    fn closed(&self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }

    /// Waits until `k` streams have been open at once (or `TOGETHER_WAIT` has passed).
    async fn together(&self, k: u64) {
        let wait = async {
            loop {
                let changed = self.changed.notified();
                if self.most.load(Ordering::SeqCst) >= k {
                    return;
                }
                changed.await;
            }
        };
        let _ = tokio::time::timeout(TOGETHER_WAIT, wait).await;
    }
}

/// A request as the server read it; its `:authority` is listed among its headers.
fn seen(head: &http::request::Parts, body: Vec<u8>, connection: u64) -> Seen {
    let mut headers = vec![(
        ":authority".to_string(),
        head.uri
            .authority()
            .map(|a| a.to_string())
            .unwrap_or_default(),
    )];
    headers.extend(head.headers.iter().map(|(n, v)| {
        (
            n.as_str().to_string(),
            String::from_utf8_lossy(v.as_bytes()).into_owned(),
        )
    }));
    Seen {
        method: head.method.to_string(),
        path: head
            .uri
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default(),
        headers,
        body,
        connection,
    }
}

fn response(reply: &Reply) -> http::Response<()> {
    let mut r = http::Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        r = r.header(*name, value);
    }
    r.body(()).unwrap()
}

/// An HTTP/2 or HTTP/3 server on 127.0.0.1:0 on its own thread; it stops when dropped.
pub struct MuxServer {
    pub addr: SocketAddr,
    pub counts: Arc<Counts>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl MuxServer {
    /// h2c (prior knowledge), or h2 over TLS by ALPN with `ca`'s certificate.
    pub fn h2(handler: Arc<Handler>, ca: Option<&TestCa>) -> MuxServer {
        let tls = ca.map(|ca| {
            let mut config = (*ca.server_config()).clone();
            config.alpn_protocols = vec![b"h2".to_vec()];
            tokio_rustls::TlsAcceptor::from(Arc::new(config))
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        let stop = on_own_thread(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((tcp, _)) = listener.accept().await {
                let number = c.connections.fetch_add(1, Ordering::SeqCst);
                let (c, handler, tls) = (c.clone(), handler.clone(), tls.clone());
                tokio::spawn(async move {
                    match tls {
                        Some(tls) => {
                            if let Ok(io) = tls.accept(tcp).await {
                                serve_h2(io, handler, c, number).await;
                            }
                        }
                        None => serve_h2(tcp, handler, c, number).await,
                    }
                });
            }
        });
        MuxServer {
            addr,
            counts,
            _stop: stop,
        }
    }

    /// HTTP/3 over QUIC with `ca`'s certificate, ALPN h3.
    pub fn h3(handler: Arc<Handler>, ca: &TestCa) -> MuxServer {
        MuxServer::h3_with(handler, ca, |_| {})
    }

    /// As [`MuxServer::h3`], and takes 0-RTT early data from the sessions it resumes.
    pub fn h3_0rtt(handler: Arc<Handler>, ca: &TestCa) -> MuxServer {
        MuxServer::h3_with(handler, ca, |tls| {
            tls.max_early_data_size = u32::MAX;
            // rustls takes early data only on single-use (stateful) tickets.
            tls.ticketer = Arc::new(loadlab_testkit::NoTickets);
            tls.session_storage = rustls::server::ServerSessionMemoryCache::new(1024);
        })
    }

    fn h3_with(
        handler: Arc<Handler>,
        ca: &TestCa,
        edit: impl FnOnce(&mut rustls::ServerConfig),
    ) -> MuxServer {
        let mut tls = (*ca.server_config()).clone();
        tls.alpn_protocols = vec![b"h3".to_vec()];
        edit(&mut tls);
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
        let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = socket.local_addr().unwrap();
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        let stop = on_own_thread(async move {
            let endpoint = quinn::Endpoint::new(
                quinn::EndpointConfig::default(),
                Some(config),
                socket,
                Arc::new(quinn::TokioRuntime),
            )
            .unwrap();
            while let Some(incoming) = endpoint.accept().await {
                tokio::spawn(serve_h3(incoming, handler.clone(), c.clone()));
            }
        });
        MuxServer {
            addr,
            counts,
            _stop: stop,
        }
    }

    pub fn url(&self, https: bool) -> String {
        let scheme = if https { "https" } else { "http" };
        format!("{scheme}://localhost:{}", self.addr.port())
    }
}

/// Runs `serve` on a thread of its own with its own runtime, until the sender is dropped.
fn on_own_thread(
    serve: impl std::future::Future<Output = ()> + Send + 'static,
) -> tokio::sync::oneshot::Sender<()> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            tokio::select! {
                _ = stopped => {}
                _ = serve => {}
            }
        });
    });
    stop
}

async fn serve_h2<T>(io: T, handler: Arc<Handler>, counts: Arc<Counts>, number: u64)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let Ok(mut conn) = h2::server::handshake(io).await else {
        return;
    };
    let streams = Arc::new(Streams::default());
    while let Some(Ok((request, mut respond))) = conn.accept().await {
        let (handler, counts, streams) = (handler.clone(), counts.clone(), streams.clone());
        tokio::spawn(async move {
            streams.opened(&counts);
            let (head, mut body) = request.into_parts();
            let mut bytes = Vec::new();
            while let Some(Ok(chunk)) = body.data().await {
                bytes.extend_from_slice(&chunk);
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            let seen = seen(&head, bytes, number);
            counts.seen.lock().unwrap().push(seen.clone());
            let reply = handler(&seen);
            if let Some(k) = reply.together {
                streams.together(k).await;
            }
            if reply.refuse {
                respond.send_reset(h2::Reason::REFUSED_STREAM);
            } else if reply.reset {
                respond.send_reset(h2::Reason::INTERNAL_ERROR);
            } else if let Ok(mut send) = respond.send_response(response(&reply), false) {
                let _ = send.send_data(Bytes::from(reply.body), true);
            }
            streams.closed();
        });
    }
}

async fn serve_h3(incoming: quinn::Incoming, handler: Arc<Handler>, counts: Arc<Counts>) {
    let Ok(connection) = incoming.await else {
        return;
    };
    let number = counts.connections.fetch_add(1, Ordering::SeqCst);
    let Ok(mut h3) = h3::server::builder()
        .build::<_, Bytes>(h3_quinn::Connection::new(connection))
        .await
    else {
        return;
    };
    let streams = Arc::new(Streams::default());
    while let Ok(Some(resolver)) = h3.accept().await {
        let (handler, counts, streams) = (handler.clone(), counts.clone(), streams.clone());
        tokio::spawn(async move {
            let Ok((request, mut stream)) = resolver.resolve_request().await else {
                return;
            };
            streams.opened(&counts);
            let mut bytes = Vec::new();
            while let Ok(Some(mut chunk)) = stream.recv_data().await {
                while chunk.has_remaining() {
                    let piece = chunk.chunk();
                    bytes.extend_from_slice(piece);
                    let n = piece.len();
                    chunk.advance(n);
                }
            }
            let (head, ()) = request.into_parts();
            let seen = seen(&head, bytes, number);
            counts.seen.lock().unwrap().push(seen.clone());
            let reply = handler(&seen);
            if let Some(k) = reply.together {
                streams.together(k).await;
            }
            if reply.refuse {
                stream.stop_stream(h3::error::Code::H3_REQUEST_REJECTED);
                stream.stop_sending(h3::error::Code::H3_REQUEST_REJECTED);
            } else if reply.reset {
                stream.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
            } else if stream.send_response(response(&reply)).await.is_ok() {
                let _ = stream.send_data(Bytes::from(reply.body)).await;
                let _ = stream.finish().await;
            }
            streams.closed();
        });
    }
}
