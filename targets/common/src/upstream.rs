//! The clients behind `/upstream` (posts 003 and 004): N sequential GETs to `UPSTREAM_URL`,
//! either through one shared, pooled client (the production way) or through a client built
//! for every call (the mistake post 004 found, kept here so it can be measured).

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Uri;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use std::fmt;

/// How `/upstream` reaches the upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientMode {
    /// One client shared by every request; connections are kept alive and reused.
    Pooled,
    /// A new client (so a new connection) for every call.
    PerCall,
}

impl ClientMode {
    /// The name used in the query string and in the response.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientMode::Pooled => "pooled",
            ClientMode::PerCall => "per-call",
        }
    }
}

/// Why `/upstream` could not complete; targets answer 502 (503 for `NotConfigured`).
#[derive(Debug)]
pub enum UpstreamError {
    NotConfigured,
    Request(String),
    Status(u16),
}

impl fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpstreamError::NotConfigured => {
                write!(f, "no upstream: start the target with UPSTREAM_URL set")
            }
            UpstreamError::Request(e) => write!(f, "upstream request failed: {e}"),
            UpstreamError::Status(s) => write!(f, "upstream answered status {s}"),
        }
    }
}

impl std::error::Error for UpstreamError {}

/// The shared pooled client plus the upstream's address.
#[derive(Debug, Clone)]
pub struct UpstreamClient {
    url: Option<Uri>,
    pooled: Client<HttpConnector, Empty<Bytes>>,
}

fn new_client() -> Client<HttpConnector, Empty<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

impl UpstreamClient {
    /// `url` comes from `UPSTREAM_URL` (already validated by [`crate::Config`]).
    pub fn new(url: Option<&str>) -> Self {
        UpstreamClient {
            url: url.and_then(|u| u.parse().ok()),
            pooled: new_client(),
        }
    }

    /// Makes `calls` sequential GETs and returns how many body bytes came back.
    pub async fn call(&self, calls: u32, mode: ClientMode) -> Result<u64, UpstreamError> {
        let url = self.url.as_ref().ok_or(UpstreamError::NotConfigured)?;
        let mut total = 0u64;
        for _ in 0..calls {
            total += match mode {
                ClientMode::Pooled => get(&self.pooled, url).await?,
                ClientMode::PerCall => get(&new_client(), url).await?,
            };
        }
        Ok(total)
    }
}

async fn get(
    client: &Client<HttpConnector, Empty<Bytes>>,
    url: &Uri,
) -> Result<u64, UpstreamError> {
    let response = client
        .get(url.clone())
        .await
        .map_err(|e| UpstreamError::Request(e.to_string()))?;
    let status = response.status();
    // Read the whole body: only then does the connection go back to the pool.
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| UpstreamError::Request(e.to_string()))?
        .to_bytes();
    if !status.is_success() {
        return Err(UpstreamError::Status(status.as_u16()));
    }
    Ok(body.len() as u64)
}
