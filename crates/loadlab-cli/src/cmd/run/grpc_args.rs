//! The gRPC flags (`--grpc` and its group), shared by every command that drives load through
//! `RequestArgs`, and their making into the engine's prepared call: the `.proto` files are
//! compiled and the message encoded here, before anything starts, so a misspelt field fails
//! in a second. Metadata is `-H`, as any request's header fields; the URL is the server's
//! origin (`http://` for h2c, `https://` with the usual TLS flags).

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use loadlab_engine::grpc::{
    reflect, Call, Data, GrpcSpec, DEFAULT_MAX_MESSAGE_BYTES, MAX_REQUEST_BYTES,
};
use loadlab_engine::tls::TlsSpec;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::parse::{count, parse_duration};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum CompressionArg {
    Gzip,
}

#[derive(Debug, Args)]
pub struct GrpcArgs {
    /// Call this gRPC method, `package.Service/Method`, on every request (unary or
    /// streaming, as the schema declares it; over HTTP/2, -c connections x --streams calls
    /// at once); the URL is the server's origin, e.g. http://127.0.0.1:50051. Metadata is
    /// given with -H. See docs/grpc.md.
    #[arg(long, value_name = "SERVICE/METHOD", help_heading = "gRPC")]
    pub grpc: Option<String>,

    /// A .proto file declaring the service (repeat for more); compiled at run time, no protoc
    /// needed. Its imports are found under -I folders, its own folder, and protobuf's
    /// well-known types.
    #[arg(long, value_name = "FILE", requires = "grpc", help_heading = "gRPC")]
    pub proto: Vec<PathBuf>,

    /// Ask the server for the schema (gRPC server reflection, v1 or v1alpha) instead of
    /// --proto, once, before the run.
    #[arg(
        long,
        requires = "grpc",
        conflicts_with = "proto",
        help_heading = "gRPC"
    )]
    pub reflect: bool,

    /// A folder the .proto files' imports are under (repeat for more), as protoc's -I.
    #[arg(
        short = 'I',
        long = "import-path",
        value_name = "DIR",
        requires = "grpc",
        help_heading = "gRPC"
    )]
    pub import_paths: Vec<PathBuf>,

    /// The request message in protobuf's JSON mapping, checked against the method's input
    /// type before the run [default: {}].
    #[arg(
        long,
        value_name = "JSON",
        requires = "grpc",
        conflicts_with = "data_file",
        help_heading = "gRPC"
    )]
    pub data: Option<String>,

    /// The request message's protobuf bytes, read from a file (checked to decode as the
    /// method's input type).
    #[arg(long, value_name = "FILE", requires = "grpc", help_heading = "gRPC")]
    pub data_file: Option<PathBuf>,

    /// The server's deadline for each call, sent as grpc-timeout; a call past it that the
    /// server ends is counted as grpc_deadline_exceeded (loadlab's own --timeout, which must
    /// be longer, as request_timeout).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, requires = "grpc", help_heading = "gRPC")]
    pub deadline: Option<Duration>,

    /// Compress the request message (grpc-encoding).
    #[arg(long, value_enum, requires = "grpc", help_heading = "gRPC")]
    pub compression: Option<CompressionArg>,

    /// The largest response message accepted, in bytes; a larger one fails its call as a
    /// malformed response, unread [default: 4194304, gRPC's own].
    #[arg(long, value_name = "BYTES", requires = "grpc", allow_hyphen_values = true, value_parser = count::<u32>, help_heading = "gRPC")]
    pub grpc_max_message: Option<u32>,

    /// Client and bidirectional streams: the messages each call sends [default: 10]. Server
    /// streams: the answers read before loadlab ends the call itself (RST_STREAM CANCEL,
    /// counted completed) [default: none, the server ends it; --timeout bounds it].
    #[arg(long, value_name = "M", requires = "grpc", allow_hyphen_values = true, value_parser = count::<u64>, help_heading = "gRPC")]
    pub grpc_messages: Option<u64>,

    /// Client and bidirectional streams: messages per second on each stream, each due on
    /// the schedule from the call's start (a bidirectional answer's latency counts from
    /// then), or max: back to back, all due at the start. Without it: back to back (client
    /// streams), ping-pong (bidirectional: each message after the last one's answer).
    #[arg(long, value_name = "R", requires = "grpc", allow_hyphen_values = true, value_parser = rate_per_s, help_heading = "gRPC")]
    pub grpc_message_rate: Option<f64>,
}

/// A rate: a number (per second), checked by the call's preparation, or `max` (infinite:
/// back to back).
fn rate_per_s(raw: &str) -> Result<f64, String> {
    if raw.trim() == "max" {
        return Ok(f64::INFINITY);
    }
    raw.trim().parse::<f64>().map_err(|_| {
        format!(
            "`{raw}` is not a rate: give messages per second on each stream, such as 100, or \
             max (back to back)"
        )
    })
}

impl GrpcArgs {
    /// The prepared call, or `None` without `--grpc`. With `--reflect`, the schema is asked
    /// of the server at `url` (over TLS with `tls`), within `timeout`.
    pub fn call(
        &self,
        url: &str,
        tls: &TlsSpec,
        timeout: Duration,
    ) -> anyhow::Result<Option<Arc<Call>>> {
        let Some(method) = &self.grpc else {
            return Ok(None);
        };
        let data = match (&self.data, &self.data_file) {
            (_, Some(path)) => Data::Binary(read_message(path)?),
            (Some(json), None) => Data::Json(json.clone()),
            (None, None) => Data::Json("{}".into()),
        };
        let spec = GrpcSpec {
            method: method.clone(),
            protos: self.proto.clone(),
            includes: self.import_paths.clone(),
            reflect: match self.reflect {
                true => Some(reflect::Target::new(url, tls, timeout)?),
                false => None,
            },
            data,
            deadline: self.deadline,
            gzip: self.compression.is_some(),
            max_message_bytes: self.grpc_max_message.unwrap_or(DEFAULT_MAX_MESSAGE_BYTES),
            messages: self.grpc_messages,
            message_rate: self.grpc_message_rate,
        };
        Ok(Some(Arc::new(spec.prepare()?)))
    }
}

/// `--data-file`'s bytes, at most [`MAX_REQUEST_BYTES`].
fn read_message(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    use std::io::Read as _;
    let cannot = || {
        format!(
            "--data-file: cannot read {}; check the path",
            path.display()
        )
    };
    let file = std::fs::File::open(path).with_context(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_REQUEST_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(cannot)?;
    if bytes.len() > MAX_REQUEST_BYTES {
        anyhow::bail!(
            "--data-file: {} is larger than 64 MiB, the most loadlab sends as one message",
            path.display()
        );
    }
    Ok(bytes)
}
