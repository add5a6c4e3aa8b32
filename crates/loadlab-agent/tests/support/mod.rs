//! The tests' agent and client: an agent started in-process on 127.0.0.1:0 with a test
//! token and a throwaway certificate, and a raw HTTPS client (hyper over tokio-rustls, a new
//! connection per request) that pins the agent's certificate by its fingerprint and lets a
//! test send what a real client never would (no token, an old protocol, a replayed nonce).

#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use loadlab_agent::protocol::{self, HEADER_NONCE, HEADER_PROTOCOL};
use loadlab_agent::{AgentConfig, Token};
use rustls::pki_types::ServerName;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// An agent serving on loopback until dropped.
pub struct Agent {
    pub addr: SocketAddr,
    pub fingerprint: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), loadlab_agent::AgentError>>>,
    client: Arc<rustls::ClientConfig>,
    runtime: tokio::runtime::Runtime,
}

pub fn start(adjust: impl FnOnce(&mut AgentConfig)) -> Agent {
    let ca = loadlab_certs::Authority::new("agent-test").unwrap();
    let issued = ca.issue_loopback(&[]).unwrap();
    let fingerprint = protocol::fingerprint(issued.cert_der.as_ref());
    let tls = loadlab_certs::server_config_for(&issued, &[b"http/1.1"]).unwrap();
    let mut config = AgentConfig::new(Token::new(TOKEN), tls);
    adjust(&mut config);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        loadlab_agent::serve(listener, config, async {
            let _ = stopped.await;
        })
    });
    Agent {
        addr,
        client: pinned_client(&fingerprint),
        fingerprint,
        stop: Some(stop),
        thread: Some(thread),
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A request as a test builds it; [`Req::new`] gives a well-formed one.
pub struct Req {
    pub method: hyper::Method,
    pub path: String,
    pub token: Option<String>,
    pub protocol: Option<String>,
    /// `None`: a fresh one on POST and DELETE.
    pub nonce: Option<String>,
    pub body: Vec<u8>,
}

impl Req {
    pub fn new(method: &str, path: &str) -> Req {
        Req {
            method: method.parse().unwrap(),
            path: path.to_string(),
            token: Some(TOKEN.to_string()),
            protocol: Some(protocol::PROTOCOL.to_string()),
            nonce: None,
            body: Vec::new(),
        }
    }

    pub fn json(mut self, value: &impl serde::Serialize) -> Req {
        self.body = serde_json::to_vec(value).unwrap();
        self
    }
}

pub struct Answer {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> T {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "{}: {e}: {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn error(&self) -> protocol::ErrorBody {
        self.json()
    }
}

pub fn fresh_nonce() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id() as u64;
    format!("{pid:016x}{n:016x}")
}

impl Agent {
    pub fn call(&self, req: Req) -> Answer {
        let (addr, client) = (self.addr, self.client.clone());
        self.runtime.block_on(async move {
            tokio::time::timeout(Duration::from_secs(30), send(addr, client, req))
                .await
                .expect("the agent answered within 30 s")
        })
    }

    /// Writes `head` (an HTTP/1.1 request head, no body) over TLS as is and returns what
    /// came back until the agent closed: for requests hyper's client would not send.
    pub fn raw(&self, head: &str) -> String {
        self.raw_with_wait(head, Duration::from_secs(10))
    }

    /// [`Agent::raw`], waiting up to `wait` for the agent to answer and close.
    pub fn raw_with_wait(&self, head: &str, wait: Duration) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (addr, client) = (self.addr, self.client.clone());
        let head = head.to_string();
        self.runtime.block_on(async move {
            let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            let mut tls = tokio_rustls::TlsConnector::from(client)
                .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
                .await
                .unwrap();
            tls.write_all(head.as_bytes()).await.unwrap();
            let mut out = Vec::new();
            let read = tls.read_to_end(&mut out);
            let _ = tokio::time::timeout(wait, read).await;
            String::from_utf8_lossy(&out).into_owned()
        })
    }

    /// Sends `bytes` over a new TLS connection from a thread of its own and holds the
    /// connection, reading nothing, until the returned sender is dropped: a client that goes
    /// away in the middle of its request.
    pub fn send_and_hold(&self, bytes: &str) -> std::sync::mpsc::Sender<()> {
        use tokio::io::AsyncWriteExt;
        let (addr, client, bytes) = (self.addr, self.client.clone(), bytes.to_string());
        let (hold, held) = std::sync::mpsc::channel::<()>();
        let (sent, wait_sent) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let tls = runtime.block_on(async move {
                let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
                let mut tls = tokio_rustls::TlsConnector::from(client)
                    .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
                    .await
                    .unwrap();
                tls.write_all(bytes.as_bytes()).await.unwrap();
                tls.flush().await.unwrap();
                tls
            });
            let _ = sent.send(());
            let _ = held.recv();
            drop(tls);
            drop(runtime);
        });
        wait_sent.recv().unwrap();
        hold
    }

    /// `GET /v1/hello` over a new connection that waits `delay` between its TLS handshake and
    /// its request (a client slow to authenticate); the answer as text, or what went wrong.
    pub fn slow_hello(&self, delay: Duration) -> Result<String, String> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (addr, client) = (self.addr, self.client.clone());
        let head = format!(
            "GET /v1/hello HTTP/1.1\r\nhost: agent\r\nauthorization: Bearer {TOKEN}\r\n\
             {HEADER_PROTOCOL}: {}\r\nconnection: close\r\n\r\n",
            protocol::PROTOCOL
        );
        self.runtime.block_on(async move {
            let tcp = tokio::net::TcpStream::connect(addr)
                .await
                .map_err(|e| format!("connect: {e}"))?;
            let mut tls = tokio_rustls::TlsConnector::from(client)
                .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
                .await
                .map_err(|e| format!("handshake: {e}"))?;
            tokio::time::sleep(delay).await;
            tls.write_all(head.as_bytes())
                .await
                .map_err(|e| format!("write: {e}"))?;
            let mut out = Vec::new();
            let read = tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut out));
            match read.await {
                Ok(Ok(_)) => Ok(String::from_utf8_lossy(&out).into_owned()),
                Ok(Err(e)) if !out.is_empty() => Err(format!(
                    "read: {e} after {:?}",
                    String::from_utf8_lossy(&out)
                )),
                Ok(Err(e)) => Err(format!("read: {e}")),
                Err(_) => Err("no answer within 10 s".into()),
            }
        })
    }

    /// A request as `send_and_hold` writes it: head and body, with the token.
    pub fn raw_request(method: &str, path: &str, body: &[u8]) -> String {
        format!(
            "{method} {path} HTTP/1.1\r\nhost: agent\r\nauthorization: Bearer {TOKEN}\r\n\
             {HEADER_PROTOCOL}: {}\r\n{HEADER_NONCE}: {}\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n{}",
            protocol::PROTOCOL,
            fresh_nonce(),
            body.len(),
            String::from_utf8_lossy(body)
        )
    }

    pub fn get(&self, path: &str) -> Answer {
        self.call(Req::new("GET", path))
    }

    pub fn post(&self, path: &str, body: &impl serde::Serialize) -> Answer {
        self.call(Req::new("POST", path).json(body))
    }
}

async fn send(addr: SocketAddr, client: Arc<rustls::ClientConfig>, req: Req) -> Answer {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let tls = tokio_rustls::TlsConnector::from(client)
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut builder = hyper::Request::builder()
        .method(req.method.clone())
        .uri(&req.path)
        .header("host", addr.to_string());
    if let Some(token) = &req.token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    if let Some(p) = &req.protocol {
        builder = builder.header(HEADER_PROTOCOL, p);
    }
    let nonce = req.nonce.clone().or_else(|| {
        matches!(req.method, hyper::Method::POST | hyper::Method::DELETE).then(fresh_nonce)
    });
    if let Some(n) = nonce {
        builder = builder.header(HEADER_NONCE, n);
    }
    let request = builder.body(Full::new(Bytes::from(req.body))).unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        headers,
        body: body.to_vec(),
    }
}

/// Trusts exactly the certificate with this fingerprint (loadlab_certs's one verifier, as
/// the agent's client does).
fn pinned_client(fingerprint: &str) -> Arc<rustls::ClientConfig> {
    let trust = loadlab_certs::Trust::Fingerprint {
        sha256: protocol::parse_fingerprint(fingerprint).unwrap(),
        flag: "the test's pin",
    };
    loadlab_certs::client_config_for(&trust, &[b"http/1.1"], None).unwrap()
}

/// Polls `check` every 20 ms until it holds or `limit` passes (a condition awaited, not a
/// time guessed).
pub fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + limit;
    loop {
        if check() {
            return true;
        }
        if std::time::Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A child process killed when dropped.
pub struct Child(pub std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
