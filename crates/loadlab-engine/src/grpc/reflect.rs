//! Server reflection: the schema asked of the server itself (`grpc.reflection.v1`, and
//! `v1alpha` for servers that predate it), instead of `.proto` files. It runs once, before
//! the run, on a connection of its own: the file declaring the service is asked for by the
//! service's name, then any file it imports that did not come with it, by file name, until
//! every import is known; the files make the same descriptor pool `.proto` files would.
//!
//! Each question is its own call (a bidirectional method with one message each way, which
//! every server answers), so no stream is held open. Answers are bounded: a reflection answer
//! larger than [`MAX_ANSWER_BYTES`], or more than [`MAX_FILES`] files, is refused.

use super::frame::{encode, PREFIX_BYTES};
use super::{status, GrpcError};
use bytes::Bytes;
use prost::Message as _;
use prost_reflect::DescriptorPool;
use std::collections::BTreeMap;
use std::time::Duration;

/// The reflection services' paths, the current one first.
const PATHS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// The most bytes one reflection answer may carry (a large schema is a few hundred KiB).
pub const MAX_ANSWER_BYTES: usize = 16 << 20;
/// The most files a schema may take.
pub const MAX_FILES: usize = 1_000;

/// `ServerReflectionRequest` (the fields loadlab asks with; v1 and v1alpha share them).
#[derive(Clone, PartialEq, prost::Message)]
struct Request {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(oneof = "Ask", tags = "3, 4")]
    ask: Option<Ask>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Ask {
    #[prost(string, tag = "3")]
    FileByFilename(String),
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
}

/// `ServerReflectionResponse`, the answers loadlab reads.
#[derive(Clone, PartialEq, prost::Message)]
struct Response {
    #[prost(message, optional, tag = "4")]
    file_descriptor_response: Option<FileDescriptorResponse>,
    #[prost(message, optional, tag = "7")]
    error_response: Option<ErrorResponse>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct FileDescriptorResponse {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ErrorResponse {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

/// Where to ask: the server's origin and, over TLS, the settings every https run uses.
#[derive(Debug, Clone)]
pub struct Target {
    pub host: String,
    pub port: u16,
    /// `:authority`, e.g. `localhost:8443`.
    pub authority: String,
    pub tls: Option<crate::tls::TlsSettings>,
    /// How long the whole exchange may take.
    pub timeout: Duration,
}

impl Target {
    /// The server at `url` (its origin; any path is ignored), over TLS for `https://` with
    /// `tls` as any https run builds it.
    pub fn new(
        url: &str,
        tls: &crate::tls::TlsSpec,
        timeout: Duration,
    ) -> Result<Target, GrpcError> {
        let parsed = url::Url::parse(url).map_err(|e| {
            refused(format!(
                "`{url}` is not a URL ({e}); give the server's origin"
            ))
        })?;
        let https = match parsed.scheme() {
            "http" => false,
            "https" => true,
            other => {
                return Err(refused(format!(
                    "`{other}://` is not http:// or https://; give the server's origin"
                )))
            }
        };
        let host = parsed
            .host_str()
            .ok_or_else(|| refused(format!("`{url}` names no host")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = parsed.port_or_known_default().unwrap_or(80);
        let tls = match https {
            true => Some(tls.build(&host, true).map_err(|e| refused(e.to_string()))?),
            false => None,
        };
        let authority = match parsed.port() {
            Some(p) => format!("{}:{p}", parsed.host_str().unwrap_or(&host)),
            None => parsed.host_str().unwrap_or(&host).to_string(),
        };
        Ok(Target {
            host,
            port,
            authority,
            tls,
            timeout,
        })
    }
}

fn refused(why: impl std::fmt::Display) -> GrpcError {
    GrpcError::Reflection(why.to_string())
}

/// The descriptor pool of the files declaring `service` and their imports, as the server
/// describes them.
pub fn fetch(target: &Target, service: &str) -> Result<DescriptorPool, GrpcError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(refused)?;
    runtime.block_on(async {
        tokio::time::timeout(target.timeout, fetch_async(target, service))
            .await
            .map_err(|_| {
                refused(format!(
                    "the server did not answer within {:?}; check the URL, or give --proto",
                    target.timeout
                ))
            })?
    })
}

async fn fetch_async(target: &Target, service: &str) -> Result<DescriptorPool, GrpcError> {
    let tcp = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| refused(format!("cannot connect to {}: {e}", target.authority)))?;
    let _ = tcp.set_nodelay(true);
    let send = match &target.tls {
        Some(tls) => {
            let stream = tls
                .connector
                .connect(tls.server_name.clone(), tcp)
                .await
                .map_err(|e| refused(format!("TLS handshake: {e}")))?;
            handshake(stream).await?
        }
        None => handshake(tcp).await?,
    };
    let scheme = if target.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let mut asker = Asker {
        send,
        base: format!("{scheme}://{}", target.authority),
        host: target.authority.clone(),
        path: None,
    };
    let symbol = service.strip_prefix('/').unwrap_or(service);
    let symbol = symbol.split('/').next().unwrap_or(symbol).to_string();
    let mut files: BTreeMap<String, prost_types::FileDescriptorProto> = BTreeMap::new();
    // Each question is asked once: a server that never sends an import is caught below,
    // not asked for ever.
    let mut asked: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut wanted = vec![Ask::FileContainingSymbol(symbol)];
    while let Some(ask) = wanted.pop() {
        for bytes in asker.ask(ask).await? {
            let file = prost_types::FileDescriptorProto::decode(&bytes[..]).map_err(|e| {
                refused(format!("the server sent a file that does not decode: {e}"))
            })?;
            files.insert(file.name().to_string(), file);
            if files.len() > MAX_FILES {
                return Err(refused(format!(
                    "the schema takes more than {MAX_FILES} files"
                )));
            }
        }
        let missing = files
            .values()
            .flat_map(|f| f.dependency.iter())
            .find(|dep| !files.contains_key(*dep) && !asked.contains(*dep))
            .cloned();
        if let Some(dep) = missing {
            asked.insert(dep.clone());
            wanted.push(Ask::FileByFilename(dep));
        }
    }
    if let Some(dep) = files
        .values()
        .flat_map(|f| f.dependency.iter())
        .find(|dep| !files.contains_key(*dep))
    {
        return Err(refused(format!(
            "the server did not send {dep}, which its schema imports"
        )));
    }
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_protos(files.into_values())
        .map_err(|e| refused(format!("the server's schema does not hold together: {e}")))?;
    Ok(pool)
}

async fn handshake<T>(io: T) -> Result<h2::client::SendRequest<Bytes>, GrpcError>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (send, connection) = h2::client::handshake(io).await.map_err(|e| {
        refused(format!(
            "HTTP/2 handshake: {e} (does the server speak gRPC?)"
        ))
    })?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(send)
}

/// Asks questions on one connection, on whichever reflection service the server has.
struct Asker {
    send: h2::client::SendRequest<Bytes>,
    /// `scheme://authority`.
    base: String,
    host: String,
    /// The service found to answer (v1, else v1alpha), once known.
    path: Option<&'static str>,
}

impl Asker {
    async fn ask(&mut self, ask: Ask) -> Result<Vec<Vec<u8>>, GrpcError> {
        let request = Request {
            host: self.host.clone(),
            ask: Some(ask.clone()),
        };
        let body = encode(&request.encode_to_vec(), false);
        let paths: Vec<&'static str> = match self.path {
            Some(p) => vec![p],
            None => PATHS.to_vec(),
        };
        let mut last = String::new();
        for path in paths {
            match self.call(path, body.clone()).await? {
                Ok(answer) => {
                    self.path = Some(path);
                    let response = Response::decode(&answer[..])
                        .map_err(|e| refused(format!("its answer does not decode: {e}")))?;
                    if let Some(e) = response.error_response {
                        return Err(refused(format!(
                            "the server could not answer {}: {} ({})",
                            describe(&ask),
                            status::message_text(e.error_message.as_bytes()),
                            status::CODES
                                .get(e.error_code as usize)
                                .unwrap_or(&"UNKNOWN")
                        )));
                    }
                    return Ok(response
                        .file_descriptor_response
                        .map(|f| f.file_descriptor_proto)
                        .unwrap_or_default());
                }
                Err(why) => last = why,
            }
        }
        Err(refused(format!(
            "the server does not serve reflection ({last}); give the service's .proto file \
             with --proto instead"
        )))
    }

    /// One call: `Ok(Ok(message))` on OK with a message, `Ok(Err(why))` on a gRPC refusal
    /// (another path may work), `Err` when the connection failed.
    async fn call(
        &mut self,
        path: &str,
        body: Bytes,
    ) -> Result<Result<Vec<u8>, String>, GrpcError> {
        let uri: http::Uri = format!("{}{path}", self.base)
            .parse()
            .map_err(|e| refused(format!("bad origin: {e}")))?;
        let mut request = http::Request::post(uri);
        for (k, v) in [("content-type", "application/grpc"), ("te", "trailers")] {
            request = request.header(k, v);
        }
        let request = request.body(()).map_err(refused)?;
        let lost = |e: h2::Error| refused(format!("the connection failed: {e}"));
        let mut ready = self.send.clone().ready().await.map_err(lost)?;
        let (response, mut tx) = ready.send_request(request, false).map_err(lost)?;
        tx.send_data(body, true).map_err(lost)?;
        let response = response.await.map_err(lost)?;
        let http_status = response.status().as_u16();
        let (head, mut data) = response.into_parts();
        let mut answer = Vec::new();
        while let Some(chunk) = data.data().await {
            let chunk = chunk.map_err(lost)?;
            let _ = data.flow_control().release_capacity(chunk.len());
            if answer.len() + chunk.len() > MAX_ANSWER_BYTES + PREFIX_BYTES {
                return Err(refused(format!(
                    "a reflection answer is larger than {MAX_ANSWER_BYTES} bytes"
                )));
            }
            answer.extend_from_slice(&chunk);
        }
        let trailers = data.trailers().await.map_err(lost)?.unwrap_or_default();
        let code = trailers
            .get("grpc-status")
            .or(head.headers.get("grpc-status"))
            .and_then(|v| status::parse_code(v.as_bytes()));
        if http_status != 200 {
            return Ok(Err(format!("HTTP status {http_status}")));
        }
        match code {
            Some(0) => {}
            Some(c) => {
                let name = status::CODES.get(c as usize).unwrap_or(&"UNKNOWN");
                return Ok(Err(format!("{path} answered {name}")));
            }
            None => return Ok(Err(format!("{path} answered without grpc-status"))),
        }
        // One message: its prefix, then its bytes (uncompressed: loadlab announced none).
        if answer.len() < PREFIX_BYTES || answer[0] != 0 {
            return Ok(Err(format!("{path} answered no uncompressed message")));
        }
        let length = u32::from_be_bytes([answer[1], answer[2], answer[3], answer[4]]) as usize;
        if answer.len() < PREFIX_BYTES + length {
            return Ok(Err(format!("{path} answered a message cut short")));
        }
        Ok(Ok(answer[PREFIX_BYTES..PREFIX_BYTES + length].to_vec()))
    }
}

fn describe(ask: &Ask) -> String {
    match ask {
        Ask::FileByFilename(name) => format!("the file {name}"),
        Ask::FileContainingSymbol(symbol) => format!("the service {symbol}"),
    }
}
