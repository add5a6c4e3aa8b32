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
    /// Reflection calls received (not among `calls`): how often a client asked the schema.
    pub reflections: AtomicU64,
}

pub struct GrpcServer {
    counters: Arc<GrpcCounters>,
    /// Stops the server when dropped.
    background: Background,
}

impl GrpcServer {
    /// h2c on 127.0.0.1:0, answering calls with `answers` in rotation.
    pub fn start(answers: Vec<GrpcAnswer>) -> GrpcServer {
        Self::start_with(answers, None, None)
    }

    /// [`GrpcServer::start`], serving reflection too on `path`'s service
    /// (`grpc.reflection.v1` or `v1alpha`: the other answers UNIMPLEMENTED) from `files`
    /// (serialized FileDescriptorProtos, a file after its imports; see `Script::reflection`).
    /// Reflection calls are not counted in `calls`.
    pub fn start_reflecting(
        answers: Vec<GrpcAnswer>,
        path: &'static str,
        files: Vec<Vec<u8>>,
    ) -> GrpcServer {
        Self::start_with(answers, None, Some((path, files)))
    }

    /// [`GrpcServer::start_reflecting`] over TLS (h2 by ALPN), with a certificate from `ca`.
    pub fn start_reflecting_tls(
        answers: Vec<GrpcAnswer>,
        path: &'static str,
        files: Vec<Vec<u8>>,
        ca: &crate::TestCa,
    ) -> GrpcServer {
        let mut config = (*ca.server_config()).clone();
        config.alpn_protocols = vec![b"h2".to_vec()];
        Self::start_with(answers, Some(Arc::new(config)), Some((path, files)))
    }

    /// Over TLS (h2 agreed by ALPN), with a certificate from `ca`.
    pub fn start_tls(answers: Vec<GrpcAnswer>, ca: &crate::TestCa) -> GrpcServer {
        let mut config = (*ca.server_config()).clone();
        config.alpn_protocols = vec![b"h2".to_vec()];
        Self::start_with(answers, Some(Arc::new(config)), None)
    }

    fn start_with(
        answers: Vec<GrpcAnswer>,
        tls: Option<Arc<rustls::ServerConfig>>,
        reflection: Option<(&'static str, Vec<Vec<u8>>)>,
    ) -> GrpcServer {
        assert!(
            !answers.is_empty(),
            "a GrpcServer needs at least one answer"
        );
        let counters = Arc::new(GrpcCounters::default());
        let c = counters.clone();
        let answers = Arc::new(Script {
            answers,
            reflection,
        });
        let counted = counters.clone();
        let background = Background::serve_each_tls(
            tls,
            move || {
                counted.connections.fetch_add(1, Ordering::SeqCst);
            },
            move |io| serve(io, answers.clone(), c.clone()),
        );
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

/// What the server answers: the calls' script, and reflection.
struct Script {
    answers: Vec<GrpcAnswer>,
    reflection: Option<(&'static str, Vec<Vec<u8>>)>,
}

impl Script {
    /// The answer to a reflection call on `path` asking `request` (its DATA, framed); `None`
    /// for another call. A question by file name gets that file; one by symbol gets the last
    /// file alone (protox lists a file after its imports), so a client must ask for each
    /// import by name.
    fn reflection(&self, path: &str, request: &[u8]) -> Option<GrpcAnswer> {
        if !path.starts_with("/grpc.reflection.") {
            return None;
        }
        let Some((_, files)) = self.reflection.as_ref().filter(|(p, _)| *p == path) else {
            return Some(GrpcAnswer::trailers_only(12, "unknown%20service"));
        };
        let mut answer: Vec<&Vec<u8>> = Vec::new();
        let mut fields = request.get(5..).unwrap_or_default();
        // ServerReflectionRequest: host (1), file_by_filename (3), file_containing_symbol (4);
        // every value short enough for a one-byte length.
        while let [tag, len, rest @ ..] = fields {
            let (value, next) = rest.split_at((*len as usize).min(rest.len()));
            match tag {
                0x1a => answer.extend(files.iter().filter(|f| name_of(f) == value)),
                0x22 => answer.extend(files.last()),
                _ => {}
            }
            fields = next;
        }
        // ServerReflectionResponse{file_descriptor_response (4):
        // FileDescriptorResponse{file_descriptor_proto (1): each file}}.
        let mut inner = Vec::new();
        for file in answer {
            inner.push(0x0a);
            varint(&mut inner, file.len());
            inner.extend_from_slice(file);
        }
        let mut outer = vec![0x22];
        varint(&mut outer, inner.len());
        outer.extend_from_slice(&inner);
        Some(GrpcAnswer::ok_with_data(vec![grpc_frame(&outer)]))
    }
}

/// A serialized FileDescriptorProto's name: its first field (1), as protox writes it.
fn name_of(file: &[u8]) -> &[u8] {
    match file {
        [0x0a, len, rest @ ..] => &rest[..(*len as usize).min(rest.len())],
        _ => &[],
    }
}

fn varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

async fn serve<T>(io: T, answers: Arc<Script>, c: Arc<GrpcCounters>)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let Ok(mut conn) = h2::server::handshake(io).await else {
        return;
    };
    while let Some(Ok((request, mut respond))) = conn.accept().await {
        let path = request.uri().path().to_string();
        let reflection = path.starts_with("/grpc.reflection.");
        let mut answer = if reflection {
            c.reflections.fetch_add(1, Ordering::SeqCst);
            GrpcAnswer::ok()
        } else {
            let n = c.calls.fetch_add(1, Ordering::SeqCst);
            let script = &answers.answers;
            script[(n % script.len() as u64) as usize].clone()
        };
        let seen: Vec<(String, String)> = request
            .headers()
            .iter()
            .filter(|(k, _)| k.as_str().starts_with("grpc-") || k.as_str().starts_with("x-"))
            .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
            .collect();
        *c.last_headers.lock().unwrap() = seen;
        let (c, script) = (c.clone(), answers.clone());
        tokio::spawn(async move {
            let mut body = request.into_body();
            let mut asked = Vec::new();
            while let Some(Ok(chunk)) = body.data().await {
                c.request_bytes
                    .fetch_add(chunk.len() as u64, Ordering::SeqCst);
                if reflection {
                    asked.extend_from_slice(&chunk);
                }
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            if let Some(reflected) = script.reflection(&path, &asked) {
                answer = reflected;
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
