//! gRPC calls as load: what a user asks for ([`GrpcSpec`]), made once into a [`Call`] the
//! engine sends over its own HTTP/2 connections (see `docs/grpc.md` for why not tonic).
//!
//! - this module: the spec, the prepared call, and the one error type;
//! - `schema`: `.proto` files compiled at run time, the method found, the message from JSON;
//! - `reflect`: or the schema asked of the server (server reflection), before the run;
//! - `frame`: the five-byte Length-Prefixed-Message framing, and a bounded response walker;
//! - `status`: status codes as failure classes, `grpc-message`, `grpc-timeout`;
//! - `stats`: a streaming run's per-message figures (the run's own are per call);
//! - `steps`: a scenario's gRPC steps, prepared before its run.
//!
//! The hot path (`engine::h2::grpc`) reads a response's headers, DATA and trailers through
//! these pieces; nothing here knows a flag's spelling (errors name the setting as `--grpc`'s
//! group does, the CLI's only), and only `reflect` talks to the server.

pub mod frame;
pub mod reflect;
pub mod schema;
pub mod stats;
pub mod status;
pub mod steps;

use bytes::Bytes;
use std::path::PathBuf;
use std::time::Duration;

/// A response message larger than this is refused unless raised: gRPC's own default
/// receive limit (4 MiB), so loadlab accepts what a gRPC client of the service would.
pub const DEFAULT_MAX_MESSAGE_BYTES: u32 = 4 << 20;

/// The largest request message loadlab sends: held in memory and sent whole on every call.
pub const MAX_REQUEST_BYTES: usize = 64 << 20;

/// The request message, as given.
#[derive(Debug, Clone)]
pub enum Data {
    /// The protobuf JSON mapping of the method's input (`--data`).
    Json(String),
    /// The message's bytes, already encoded (`--data-file`).
    Binary(Vec<u8>),
}

/// What a user asked for: the method, where its schema is, the message and the call's
/// options. Checked and made into a [`Call`] by [`GrpcSpec::prepare`].
#[derive(Debug, Clone)]
pub struct GrpcSpec {
    /// `package.Service/Method`.
    pub method: String,
    /// `.proto` files declaring the service (their imports found through `includes`).
    pub protos: Vec<PathBuf>,
    pub includes: Vec<PathBuf>,
    /// Without `protos`: ask the server for the schema (server reflection) here.
    pub reflect: Option<reflect::Target>,
    pub data: Data,
    /// Sent as `grpc-timeout` on every call: the server's deadline.
    pub deadline: Option<Duration>,
    /// Compress the request message with gzip (`grpc-encoding: gzip`).
    pub gzip: bool,
    /// The largest response message accepted (a larger one fails the call, unread).
    pub max_message_bytes: u32,
    /// Client and bidirectional streams: the messages each call sends (default
    /// [`DEFAULT_STREAM_MESSAGES`]); server streams: the answers read before loadlab ends
    /// the call itself (default: none, the server ends it).
    pub messages: Option<u64>,
    /// Client and bidirectional streams: messages per second on each stream, infinite for
    /// back to back (`max`); `None`: back to back (client streams) or ping-pong
    /// (bidirectional: each after the last one's answer).
    pub message_rate: Option<f64>,
}

/// The messages a client or bidirectional stream sends when `--grpc-messages` is not given.
pub const DEFAULT_STREAM_MESSAGES: u64 = 10;

/// How a method streams, from its declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Unary,
    ServerStreaming,
    ClientStreaming,
    Bidi,
}

impl CallKind {
    /// The result's name for it (`grpc.kind`).
    pub fn key(self) -> &'static str {
        match self {
            CallKind::Unary => "unary",
            CallKind::ServerStreaming => "server_streaming",
            CallKind::ClientStreaming => "client_streaming",
            CallKind::Bidi => "bidi_streaming",
        }
    }

    /// The client sends a stream of messages.
    pub fn client_streams(self) -> bool {
        matches!(self, CallKind::ClientStreaming | CallKind::Bidi)
    }

    pub fn describe(self) -> &'static str {
        match self {
            CallKind::Unary => "unary",
            CallKind::ServerStreaming => "server streaming",
            CallKind::ClientStreaming => "client streaming",
            CallKind::Bidi => "bidirectional streaming",
        }
    }
}

/// A call ready to send, the same for every call of the run: made once, before the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// `/package.Service/Method`: the HTTP/2 request's path.
    pub path: String,
    pub kind: CallKind,
    /// The request message, framed (and compressed, with gzip).
    pub body: Bytes,
    /// The call's own header fields (content type, `te`, timeout, encoding), in the order
    /// sent, after the user's metadata.
    pub headers: Vec<(String, String)>,
    pub deadline: Option<Duration>,
    pub max_message_bytes: u32,
    /// The input and output types' full names, for the reports.
    pub input: String,
    pub output: String,
    /// `package.Service/Method`, for the reports.
    pub method: String,
    /// See [`GrpcSpec::messages`]: set for client and bidirectional streams (the default
    /// filled in), and for a server stream given a cap.
    pub messages: Option<u64>,
    /// A client or bidirectional stream's time between messages (`--grpc-message-rate`);
    /// zero: back to back, every message due at the call's start.
    pub message_interval: Option<Duration>,
    /// The schema the method was found in, as a `FileDescriptorSet` (protobuf bytes): what
    /// a fleet's generator rebuilds the call from ([`GrpcSpec::prepare_from_descriptors`]),
    /// so no `.proto` path and no second reflection travels.
    pub schema: Bytes,
    /// The request message, encoded and unframed (`body` is it framed, maybe compressed).
    pub message: Bytes,
}

/// Why a gRPC call cannot be made. Each names its setting and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrpcError {
    #[error("--proto: {0}")]
    Proto(String),
    #[error("--grpc: {0}")]
    Method(String),
    #[error("--data: {0}")]
    Data(String),
    #[error("--grpc-max-message: {0}")]
    Limit(String),
    #[error("--reflect: {0}")]
    Reflection(String),
    #[error("--grpc-messages: {0}")]
    Messages(String),
    #[error("--grpc-message-rate: {0}")]
    Rate(String),
}

impl GrpcSpec {
    /// Compiles the schema, finds the method and encodes the message: every check done
    /// here, once, so the run only sends.
    pub fn prepare(&self) -> Result<Call, GrpcError> {
        if self.protos.is_empty() && self.reflect.is_none() {
            return Err(GrpcError::Proto(
                "a gRPC run needs the service's schema: give its .proto file with --proto FILE \
                 (and -I DIR for the folders its imports are under), or --reflect to ask the \
                 server"
                    .into(),
            ));
        }
        let pool = match &self.reflect {
            Some(target) if self.protos.is_empty() => reflect::fetch(target, &self.method)?,
            _ => schema::compile(&self.protos, &self.includes)?,
        };
        self.prepare_in(&pool)
    }

    /// [`GrpcSpec::prepare`] with the schema given as a compiled `FileDescriptorSet`
    /// (`protos` and `reflect` unread): a fleet's generator rebuilds the coordinator's call
    /// from the one that travelled in its load ([`Call::schema`]), every check made again.
    pub fn prepare_from_descriptors(&self, set: &[u8]) -> Result<Call, GrpcError> {
        let pool = prost_reflect::DescriptorPool::decode(set).map_err(|e| {
            GrpcError::Proto(format!(
                "the schema sent is not a valid descriptor set: {e}"
            ))
        })?;
        self.prepare_in(&pool)
    }

    fn prepare_in(&self, pool: &prost_reflect::DescriptorPool) -> Result<Call, GrpcError> {
        if self.max_message_bytes == 0 {
            return Err(GrpcError::Limit(
                "must be at least 1 byte; the default is 4194304 (4 MiB, gRPC's own)".into(),
            ));
        }
        let method = schema::find_method(pool, &self.method)?;
        let kind = schema::kind(&method);
        let (messages, message_interval) = self.stream_plan(kind, method.full_name())?;
        let message = match &self.data {
            Data::Json(json) => schema::message_from_json(&method, json)?,
            Data::Binary(bytes) => {
                schema::check_binary(&method, bytes)?;
                bytes.clone()
            }
        };
        if message.len() > MAX_REQUEST_BYTES {
            return Err(GrpcError::Data(format!(
                "the message is {} bytes, more than the 64 MiB loadlab sends as one message",
                message.len()
            )));
        }
        let mut headers = Vec::new();
        push_call_headers(&mut headers, self.deadline, self.gzip);
        let service = method.parent_service();
        Ok(Call {
            path: format!("/{}/{}", service.full_name(), method.name()),
            kind,
            body: frame::encode(&message, self.gzip),
            headers,
            deadline: self.deadline,
            max_message_bytes: self.max_message_bytes,
            input: method.input().full_name().to_string(),
            output: method.output().full_name().to_string(),
            method: format!("{}/{}", service.full_name(), method.name()),
            messages,
            message_interval,
            schema: Bytes::from(pool.encode_to_vec()),
            message: Bytes::from(message),
        })
    }

    /// The messages per call and the time between them, checked against how the method
    /// streams: each flag is refused where it means nothing, not ignored.
    fn stream_plan(
        &self,
        kind: CallKind,
        name: &str,
    ) -> Result<(Option<u64>, Option<Duration>), GrpcError> {
        if self.messages == Some(0) {
            return Err(GrpcError::Messages(
                "must be at least 1 (a stream's messages per call)".into(),
            ));
        }
        let interval = match self.message_rate {
            None => None,
            Some(r) if r == f64::INFINITY => Some(Duration::ZERO),
            Some(r) if !(r.is_finite() && r > 0.0) || 1.0 / r < 1e-9 => {
                return Err(GrpcError::Rate(format!(
                    "`{r}` is not a rate: give messages per second on each stream, such as 100, \
                     or max (back to back)"
                )))
            }
            Some(r) => Some(Duration::from_secs_f64(1.0 / r)),
        };
        let takes = |what: &str| {
            format!(
                "{name} is a {} method: {what}; drop the flag",
                kind.describe()
            )
        };
        match kind {
            CallKind::Unary if self.messages.is_some() => Err(GrpcError::Messages(takes(
                "one message each way (for more calls, -n or -d)",
            ))),
            CallKind::Unary | CallKind::ServerStreaming if interval.is_some() => Err(
                GrpcError::Rate(takes("the client sends one message per call")),
            ),
            CallKind::Unary | CallKind::ServerStreaming => Ok((self.messages, None)),
            CallKind::ClientStreaming | CallKind::Bidi => Ok((
                Some(self.messages.unwrap_or(DEFAULT_STREAM_MESSAGES)),
                interval,
            )),
        }
    }
}

/// The header fields every call carries (a `--grpc` run's and a scenario step's alike).
pub(crate) fn push_call_headers(
    headers: &mut Vec<(String, String)>,
    deadline: Option<Duration>,
    gzip: bool,
) {
    headers.push(("content-type".into(), "application/grpc".into()));
    // gRPC requires it: it tells proxies the client reads trailers.
    headers.push(("te".into(), "trailers".into()));
    headers.push(("grpc-accept-encoding".into(), "identity,gzip".into()));
    if let Some(d) = deadline {
        headers.push(("grpc-timeout".into(), status::timeout_header(d)));
    }
    if gzip {
        headers.push(("grpc-encoding".into(), "gzip".into()));
    }
}

/// Header fields a gRPC call sets itself; given with `-H`, they would contradict it.
pub const RESERVED_HEADERS: [&str; 5] = [
    "content-type",
    "te",
    "grpc-timeout",
    "grpc-encoding",
    "grpc-accept-encoding",
];

#[cfg(test)]
mod tests;
