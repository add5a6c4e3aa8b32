//! The client behind `/upstream-grpc` (post 002's third case): N sequential unary calls to
//! `loadlab.upstream.v1.Upstream/Call` at `UPSTREAM_GRPC_URL`, made with tonic, either through
//! one channel shared by the whole process (the production way: tonic's documentation has a
//! `Channel` cloned wherever it is needed; its calls share one HTTP/2 connection) or through a
//! new channel, so a new connection, for every call (the mistake, kept so it can be measured).
//!
//! The method's messages are protobuf's well-known `Empty` and `BytesValue`, which prost
//! implements as `()` and `Bytes`, so the call is written as tonic's generated clients write
//! it, with no code generation (`crates/loadlab-upstream/proto/upstream.proto` is the service).
//! [`respond`] is the whole endpoint, framework-neutral: each target only turns its [`Reply`]
//! into a response.

use crate::{params, workload, ClientMode};
use bytes::Bytes;
use std::sync::OnceLock;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::{Channel, Endpoint};
use tonic_prost::ProstCodec;

/// The mock upstream's one gRPC method.
pub const CALL_PATH: &str = "/loadlab.upstream.v1.Upstream/Call";

/// The pooled channel (made on first use) plus the upstream's address.
#[derive(Debug)]
pub struct GrpcUpstreamClient {
    endpoint: Option<Endpoint>,
    /// The one channel for the process. Made on the first call rather than at start-up
    /// because a tonic channel spawns its worker on the current tokio runtime, and targets
    /// build their state before their runtime exists; it is never replaced afterwards.
    pooled: OnceLock<Channel>,
}

/// Why `/upstream-grpc` could not complete: 503 for `NotConfigured`, 502 for the others.
#[derive(Debug)]
pub enum GrpcUpstreamError {
    NotConfigured,
    Connect(String),
    Call(tonic::Status),
}

impl std::fmt::Display for GrpcUpstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GrpcUpstreamError::NotConfigured => write!(
                f,
                "no gRPC upstream: start the target with UPSTREAM_GRPC_URL set"
            ),
            GrpcUpstreamError::Connect(e) => write!(f, "cannot connect to the gRPC upstream: {e}"),
            GrpcUpstreamError::Call(status) => write!(
                f,
                "the gRPC upstream call failed: {:?}: {}",
                status.code(),
                status.message()
            ),
        }
    }
}

impl std::error::Error for GrpcUpstreamError {}

impl GrpcUpstreamClient {
    /// `url` comes from `UPSTREAM_GRPC_URL` (already validated by [`crate::Config`]).
    pub fn new(url: Option<&str>) -> Self {
        GrpcUpstreamClient {
            endpoint: url.and_then(|u| Endpoint::from_shared(u.to_string()).ok()),
            pooled: OnceLock::new(),
        }
    }

    /// Makes `calls` sequential calls and returns how many payload bytes came back.
    pub async fn call(&self, calls: u32, mode: ClientMode) -> Result<u64, GrpcUpstreamError> {
        let endpoint = self
            .endpoint
            .as_ref()
            .ok_or(GrpcUpstreamError::NotConfigured)?;
        let mut total = 0u64;
        for _ in 0..calls {
            total += match mode {
                ClientMode::Pooled => {
                    let channel = self.pooled.get_or_init(|| endpoint.connect_lazy());
                    call(channel.clone()).await?
                }
                ClientMode::PerCall => {
                    let channel = endpoint
                        .connect()
                        .await
                        .map_err(|e| GrpcUpstreamError::Connect(e.to_string()))?;
                    call(channel).await?
                }
            };
        }
        Ok(total)
    }
}

/// One unary call, written as tonic's generated client code writes it.
async fn call(channel: Channel) -> Result<u64, GrpcUpstreamError> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| GrpcUpstreamError::Connect(e.to_string()))?;
    let codec = ProstCodec::<(), Bytes>::default();
    let reply = grpc
        .unary(
            tonic::Request::new(()),
            PathAndQuery::from_static(CALL_PATH),
            codec,
        )
        .await
        .map_err(GrpcUpstreamError::Call)?;
    Ok(reply.into_inner().len() as u64)
}

/// An answer for `/upstream-grpc`, before a framework turns it into a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

/// `GET /upstream-grpc?calls=N[&client=per-call]`: the same parameters and 400 rule as
/// `/upstream`; 503 without `UPSTREAM_GRPC_URL`; 502 when a call fails.
pub async fn respond(client: &GrpcUpstreamClient, query: Option<&str>) -> Reply {
    const TEXT: &str = "text/plain; charset=utf-8";
    let (calls, mode) = match params::upstream(query) {
        Ok(parsed) => parsed,
        Err(bad) => return reply(400, TEXT, bad.to_string()),
    };
    match client.call(calls, mode).await {
        Ok(bytes) => reply(
            200,
            "application/json",
            workload::upstream_json(calls, mode, bytes),
        ),
        Err(err @ GrpcUpstreamError::NotConfigured) => reply(503, TEXT, err.to_string()),
        Err(err) => reply(502, TEXT, err.to_string()),
    }
}

fn reply(status: u16, content_type: &'static str, body: String) -> Reply {
    Reply {
        status,
        content_type,
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn without_a_url_it_is_503_and_bad_parameters_are_400() {
        let client = GrpcUpstreamClient::new(None);
        let unset = respond(&client, Some("calls=1")).await;
        assert_eq!(unset.status, 503);
        assert!(unset.body.contains("UPSTREAM_GRPC_URL"), "{unset:?}");
        for bad in ["calls=65", "calls=-1", "calls=1&client=shared", ""] {
            assert_eq!(respond(&client, Some(bad)).await.status, 400, "{bad}");
        }
    }

    #[tokio::test]
    async fn an_unreachable_upstream_is_502() {
        // Port 1 on loopback: nothing listens there, so the connection is refused at once.
        let client = GrpcUpstreamClient::new(Some("http://127.0.0.1:1"));
        for query in ["calls=1", "calls=1&client=per-call"] {
            let reply = respond(&client, Some(query)).await;
            assert_eq!(reply.status, 502, "{query}: {reply:?}");
        }
        assert_eq!(
            respond(&client, Some("calls=0")).await.body,
            r#"{"calls":0,"client":"pooled","upstream_bytes":0}"#
        );
    }
}
