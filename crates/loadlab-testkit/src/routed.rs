//! A loopback server that answers by route: every request (method, target, headers,
//! Content-Length body) goes to a handler that returns the whole response. For end-to-end
//! tests of scenarios: a site with several pages, a login that issues tokens and rejects any
//! other. HTTP/1.1 with keep-alive, over TCP or TLS; chunked request bodies are not read.

use crate::{background, Counters, TestCa};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// One request as the handler sees it.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: String,
    /// The request target: path and query.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// The first header of that name (case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The target without its query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

/// A complete response with a Content-Length body and extra headers.
pub fn reply(status: u16, content_type: &str, body: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} Test\r\nContent-Length: {}\r\nContent-Type: {content_type}\r\n",
        body.len()
    );
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    out.into_bytes()
}

type Handler = dyn Fn(&HttpRequest) -> Vec<u8> + Send + Sync;

pub struct RoutedServer {
    counters: Arc<Counters>,
    /// Stops the server when dropped.
    background: background::Background,
}

impl RoutedServer {
    pub fn start(handler: impl Fn(&HttpRequest) -> Vec<u8> + Send + Sync + 'static) -> RoutedServer {
        Self::start_with(Arc::new(handler), None)
    }

    /// The same over TLS, with a certificate for 127.0.0.1 and localhost signed by `ca`.
    pub fn start_tls(
        handler: impl Fn(&HttpRequest) -> Vec<u8> + Send + Sync + 'static,
        ca: &TestCa,
    ) -> RoutedServer {
        Self::start_with(Arc::new(handler), Some(ca.server_config()))
    }

    fn start_with(handler: Arc<Handler>, tls: Option<Arc<rustls::ServerConfig>>) -> RoutedServer {
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        let background = background::Background::start(move |listener| async move {
            let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                c.accepted.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_nodelay(true);
                let (handler, c) = (handler.clone(), c.clone());
                match &acceptor {
                    None => {
                        tokio::spawn(serve(stream, handler, c));
                    }
                    Some(acceptor) => {
                        let acceptor = acceptor.clone();
                        tokio::spawn(async move {
                            if let Ok(tls) = acceptor.accept(stream).await {
                                c.tls_full.fetch_add(1, Ordering::SeqCst);
                                serve(tls, handler, c).await;
                            }
                        });
                    }
                }
            }
        });
        RoutedServer {
            counters,
            background,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.background.addr
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr(), path)
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// One request from `buf`/`stream`, or `None` at EOF or on a head that is not HTTP.
async fn read_request(
    stream: &mut (impl AsyncRead + Unpin),
    buf: &mut Vec<u8>,
) -> Option<HttpRequest> {
    loop {
        if let Some(end) = find(buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let mut lines = head.split("\r\n");
            let mut start = lines.next()?.split(' ');
            let (method, target) = (start.next()?.to_string(), start.next()?.to_string());
            let headers: Vec<(String, String)> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
                .collect();
            let body_len = headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.parse::<usize>().ok())
                .unwrap_or(0);
            let total = end + 4 + body_len;
            if buf.len() >= total {
                let body = buf[end + 4..total].to_vec();
                buf.drain(..total);
                return Some(HttpRequest {
                    method,
                    target,
                    headers,
                    body,
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

async fn serve(
    mut stream: impl AsyncRead + AsyncWrite + Unpin,
    handler: Arc<Handler>,
    counters: Arc<Counters>,
) {
    let mut buf = Vec::new();
    while let Some(request) = read_request(&mut stream, &mut buf).await {
        counters.requests.fetch_add(1, Ordering::SeqCst);
        let response = handler(&request);
        if stream.write_all(&response).await.is_err() {
            return;
        }
        counters.answered.fetch_add(1, Ordering::SeqCst);
        let close = request
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        if close {
            let _ = stream.shutdown().await;
            return;
        }
    }
}
