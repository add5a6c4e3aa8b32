//! A gRPC server by hand on the h2 crate, that answers each call as a script says: OK with
//! one message, any status code (trailers-only, or after headers), or a hostile answer (a
//! huge length prefix, a cut message, a compressed message it did not announce, an HTTP
//! status that is not gRPC's). Call number n (counted across the server, from 0) gets
//! `answers[n % answers.len()]`, so a run of `answers.len()` calls on one stream sees each
//! answer once. It counts calls as they arrive: the server's own count a client's is held to.

use crate::background::Background;
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One answer, as the server writes it.
#[derive(Debug, Clone)]
pub struct GrpcAnswer {
    pub http_status: u16,
    /// Header fields besides `:status` (content-type included, when wanted).
    pub headers: Vec<(&'static str, String)>,
    /// DATA frames, each sent as given (already framed, or not, as the test wants).
    pub data: Vec<Bytes>,
    /// Trailers; `None`: the answer ends with its last DATA (or its headers).
    pub trailers: Option<Vec<(&'static str, String)>>,
    /// Instead of answering: reset the stream with this code (RST_STREAM).
    pub reset: Option<h2::Reason>,
    /// Hold the answer this long first (a server slower than the client's timeout).
    pub delay: std::time::Duration,
}

/// A Length-Prefixed-Message: flag 0, the length, the bytes.
pub fn grpc_frame(message: &[u8]) -> Bytes {
    let mut out = vec![0u8];
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    Bytes::from(out)
}

fn grpc_headers() -> Vec<(&'static str, String)> {
    vec![("content-type", "application/grpc".to_string())]
}

impl GrpcAnswer {
    /// OK, with one message (`BytesValue{value: "ok"}`'s bytes).
    pub fn ok() -> GrpcAnswer {
        GrpcAnswer {
            http_status: 200,
            headers: grpc_headers(),
            data: vec![grpc_frame(&[0x0a, 2, b'o', b'k'])],
            trailers: Some(vec![("grpc-status", "0".into())]),
            reset: None,
            delay: std::time::Duration::ZERO,
        }
    }

    /// `code` with `message` (sent as given: percent-encode it first, as a server must), as
    /// a trailers-only answer: the status in the headers, nothing after them.
    pub fn trailers_only(code: u32, message: &str) -> GrpcAnswer {
        let mut headers = grpc_headers();
        headers.push(("grpc-status", code.to_string()));
        headers.push(("grpc-message", message.to_string()));
        GrpcAnswer {
            headers,
            data: Vec::new(),
            trailers: None,
            ..GrpcAnswer::ok()
        }
    }

    /// `code` with `message` in trailers, after headers and no message.
    pub fn status(code: u32, message: &str) -> GrpcAnswer {
        GrpcAnswer {
            data: Vec::new(),
            trailers: Some(vec![
                ("grpc-status", code.to_string()),
                ("grpc-message", message.to_string()),
            ]),
            ..GrpcAnswer::ok()
        }
    }

    /// OK in the trailers, after `data` as the DATA frames.
    pub fn ok_with_data(data: Vec<Bytes>) -> GrpcAnswer {
        GrpcAnswer {
            data,
            ..GrpcAnswer::ok()
        }
    }
}

#[derive(Debug, Default)]
pub struct GrpcCounters {
    pub connections: AtomicU64,
    /// Calls (streams) received, whatever their answer.
    pub calls: AtomicU64,
    /// The last call's request headers' `grpc-timeout`, `grpc-encoding` and a metadata key
    /// `x-test`, as received (the test checks what loadlab sent).
    pub last_headers: std::sync::Mutex<Vec<(String, String)>>,
    /// Bytes of request DATA received, over all calls.
    pub request_bytes: AtomicU64,
}

pub struct GrpcServer {
    counters: Arc<GrpcCounters>,
    /// Stops the server when dropped.
    background: Background,
}

impl GrpcServer {
    /// h2c on 127.0.0.1:0, answering calls with `answers` in rotation.
    pub fn start(answers: Vec<GrpcAnswer>) -> GrpcServer {
        Self::start_with(answers, None)
    }

    /// Over TLS (h2 agreed by ALPN), with a certificate from `ca`.
    pub fn start_tls(answers: Vec<GrpcAnswer>, ca: &crate::TestCa) -> GrpcServer {
        let mut config = (*ca.server_config()).clone();
        config.alpn_protocols = vec![b"h2".to_vec()];
        Self::start_with(answers, Some(Arc::new(config)))
    }

    fn start_with(answers: Vec<GrpcAnswer>, tls: Option<Arc<rustls::ServerConfig>>) -> GrpcServer {
        assert!(
            !answers.is_empty(),
            "a GrpcServer needs at least one answer"
        );
        let counters = Arc::new(GrpcCounters::default());
        let c = counters.clone();
        let answers = Arc::new(answers);
        let background = Background::start(move |listener| async move {
            let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                c.connections.fetch_add(1, Ordering::SeqCst);
                let (answers, c, acceptor) = (answers.clone(), c.clone(), acceptor.clone());
                tokio::spawn(async move {
                    match acceptor {
                        Some(a) => {
                            if let Ok(tls) = a.accept(tcp).await {
                                serve(tls, answers, c).await;
                            }
                        }
                        None => serve(tcp, answers, c).await,
                    }
                });
            }
        });
        GrpcServer {
            counters,
            background,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.background.addr
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.background.addr)
    }

    pub fn counters(&self) -> &GrpcCounters {
        &self.counters
    }
}

async fn serve<T>(io: T, answers: Arc<Vec<GrpcAnswer>>, c: Arc<GrpcCounters>)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let Ok(mut conn) = h2::server::handshake(io).await else {
        return;
    };
    while let Some(Ok((request, mut respond))) = conn.accept().await {
        let n = c.calls.fetch_add(1, Ordering::SeqCst);
        let answer = answers[(n % answers.len() as u64) as usize].clone();
        let seen: Vec<(String, String)> = request
            .headers()
            .iter()
            .filter(|(k, _)| k.as_str().starts_with("grpc-") || k.as_str().starts_with("x-"))
            .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
            .collect();
        *c.last_headers.lock().unwrap() = seen;
        let c = c.clone();
        tokio::spawn(async move {
            let mut body = request.into_body();
            while let Some(Ok(chunk)) = body.data().await {
                c.request_bytes
                    .fetch_add(chunk.len() as u64, Ordering::SeqCst);
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            if !answer.delay.is_zero() {
                tokio::time::sleep(answer.delay).await;
            }
            if let Some(reason) = answer.reset {
                respond.send_reset(reason);
                return;
            }
            let mut head = http::Response::builder().status(answer.http_status);
            for (k, v) in &answer.headers {
                head = head.header(*k, v.as_str());
            }
            let end_at_head = answer.data.is_empty() && answer.trailers.is_none();
            let Ok(mut send) = respond.send_response(head.body(()).unwrap(), end_at_head) else {
                return;
            };
            let last = answer.data.len();
            for (i, chunk) in answer.data.into_iter().enumerate() {
                let end = i + 1 == last && answer.trailers.is_none();
                let _ = send.send_data(chunk, end);
            }
            if let Some(trailers) = answer.trailers {
                let mut map = http::HeaderMap::new();
                for (k, v) in trailers {
                    if let Ok(v) = http::HeaderValue::from_str(&v) {
                        map.append(k, v);
                    }
                }
                let _ = send.send_trailers(map);
            }
        });
    }
}
