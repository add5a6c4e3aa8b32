//! A server that answers by route, for scenario tests: the test's handler decides each
//! response from the request (method, path, headers, body, and which connection it came on),
//! and may make it wait. The server counts what a scenario test asserts: requests per path,
//! connections opened, the most open at once, and when each request arrived on each
//! connection (the gaps that think times and pacing make).
//!
//! It closes a connection after a response when the request asked for it
//! (`Connection: close`), as RFC 9112 requires.

use crate::background::Background;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// The path with its query.
    pub path: String,
    /// Names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The connection it came on, numbered from 0 in accept order.
    pub connection: u64,
}

impl Seen {
    /// The first value of a header (name case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path without its query.
    pub fn route(&self) -> &str {
        self.path.split('?').next().unwrap_or("")
    }
}

/// What the handler answers: the response's bytes, after an optional wait.
pub struct Answer {
    pub bytes: Vec<u8>,
    pub delay: Duration,
}

impl From<Vec<u8>> for Answer {
    fn from(bytes: Vec<u8>) -> Answer {
        Answer {
            bytes,
            delay: Duration::ZERO,
        }
    }
}

/// What the server has seen.
#[derive(Debug, Default)]
pub struct RouteCounters {
    accepted: AtomicU64,
    open: AtomicU64,
    max_open: AtomicU64,
    per_path: Mutex<BTreeMap<String, u64>>,
    /// Arrival times of requests, per connection.
    arrivals: Mutex<BTreeMap<u64, Vec<Instant>>>,
    seen: Mutex<Vec<Seen>>,
}

impl RouteCounters {
    /// Connections accepted.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }

    /// The most connections open at once.
    pub fn max_open(&self) -> u64 {
        self.max_open.load(Ordering::SeqCst)
    }

    /// Requests per route (path without query).
    pub fn per_route(&self) -> BTreeMap<String, u64> {
        self.per_path.lock().expect("not poisoned").clone()
    }

    /// Requests to one route.
    pub fn requests_to(&self, route: &str) -> u64 {
        self.per_route().get(route).copied().unwrap_or(0)
    }

    /// All requests.
    pub fn requests(&self) -> u64 {
        self.per_route().values().sum()
    }

    /// The gaps between consecutive requests on each connection.
    pub fn gaps(&self) -> Vec<Duration> {
        let arrivals = self.arrivals.lock().expect("not poisoned");
        arrivals
            .values()
            .flat_map(|times| times.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>())
            .collect()
    }

    /// Every request, in arrival order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("not poisoned").clone()
    }
}

type Handler = dyn Fn(&Seen) -> Answer + Send + Sync;

pub struct RouteServer {
    counters: Arc<RouteCounters>,
    /// Stops the server when dropped.
    background: Background,
}

impl RouteServer {
    /// Serves on 127.0.0.1:0, answering each request with `handler`'s answer.
    pub fn start(handler: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> RouteServer {
        Self::start_with(Arc::new(handler), None)
    }

    /// The same over TLS, with a certificate for 127.0.0.1 and localhost signed by `ca`
    /// (`ca.pem()` for the client's `--cacert`).
    pub fn start_tls(
        handler: impl Fn(&Seen) -> Answer + Send + Sync + 'static,
        ca: &crate::TestCa,
    ) -> RouteServer {
        Self::start_with(Arc::new(handler), Some(ca.server_config()))
    }

    /// The same over TLS on 127.0.0.1:`port` with a configuration the test made: a stand-in
    /// for a server that was given its port and certificate (a lab target's `PORT`,
    /// `TLS_CERT` and `TLS_KEY`).
    pub fn start_tls_on(
        handler: impl Fn(&Seen) -> Answer + Send + Sync + 'static,
        port: u16,
        config: Arc<rustls::ServerConfig>,
    ) -> RouteServer {
        Self::start_at(port, Arc::new(handler), Some(config))
    }

    fn start_with(handler: Arc<Handler>, tls: Option<Arc<rustls::ServerConfig>>) -> RouteServer {
        Self::start_at(0, handler, tls)
    }

    fn start_at(
        port: u16,
        handler: Arc<Handler>,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> RouteServer {
        let counters = Arc::new(RouteCounters::default());
        let c = counters.clone();
        let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
        let background = Background::start_on(port, move |listener| async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let id = c.accepted.fetch_add(1, Ordering::SeqCst);
                let open = c.open.fetch_add(1, Ordering::SeqCst) + 1;
                c.max_open.fetch_max(open, Ordering::SeqCst);
                let _ = stream.set_nodelay(true);
                let (c, handler, acceptor) = (c.clone(), handler.clone(), acceptor.clone());
                tokio::spawn(async move {
                    match acceptor {
                        None => serve(stream, id, &c, &*handler).await,
                        // A handshake the client aborts is the client's test.
                        Some(acceptor) => {
                            if let Ok(tls) = acceptor.accept(stream).await {
                                serve(tls, id, &c, &*handler).await;
                            }
                        }
                    }
                    c.open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        RouteServer {
            counters,
            background,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.background.addr
    }

    /// An `http://` URL on the server (a TLS server takes `https://` and its `localhost`).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr(), path)
    }

    pub fn counters(&self) -> &RouteCounters {
        &self.counters
    }
}

async fn serve(
    mut stream: impl AsyncRead + AsyncWrite + Unpin,
    id: u64,
    c: &RouteCounters,
    handler: &Handler,
) {
    let mut buf = Vec::new();
    while let Some(seen) = read(&mut stream, &mut buf, id).await {
        let now = Instant::now();
        *c.per_path
            .lock()
            .expect("not poisoned")
            .entry(seen.route().to_string())
            .or_insert(0) += 1;
        c.arrivals
            .lock()
            .expect("not poisoned")
            .entry(id)
            .or_default()
            .push(now);
        let close = seen
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let answer = handler(&seen);
        c.seen.lock().expect("not poisoned").push(seen);
        if !answer.delay.is_zero() {
            tokio::time::sleep(answer.delay).await;
        }
        if stream.write_all(&answer.bytes).await.is_err() || close {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

/// Reads one request: the head, and a Content-Length body.
async fn read(stream: &mut (impl AsyncRead + Unpin), buf: &mut Vec<u8>, id: u64) -> Option<Seen> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let mut lines = head.split("\r\n");
            let mut first = lines.next()?.split(' ');
            let (method, path) = (first.next()?.to_string(), first.next()?.to_string());
            let headers: Vec<(String, String)> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
                .collect();
            let body_len = headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .and_then(|(_, v)| v.parse::<usize>().ok())
                .unwrap_or(0);
            let total = end + 4 + body_len;
            if buf.len() >= total {
                let body = buf[end + 4..total].to_vec();
                buf.drain(..total);
                return Some(Seen {
                    method,
                    path,
                    headers,
                    body,
                    connection: id,
                });
            }
        }
        let mut chunk = [0u8; 8192];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}
