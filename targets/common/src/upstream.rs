//! The clients behind `/upstream` (posts 003 and 004): N sequential GETs to `UPSTREAM_URL`,
//! either through one shared, pooled client (the production way) or through a client built
//! for every call (the mistake post 004 found, kept here so it can be measured). Over
//! `https://` the client speaks TLS through hyper-rustls, trusting `UPSTREAM_CA`: the pooled
//! client keeps its connections and its TLS sessions; the per-call client is new, TLS
//! configuration and session store included, so every call pays a full handshake. A plain
//! `http://` upstream builds no TLS at all, per call or otherwise.

use crate::tls;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Uri;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use std::fmt;
use std::sync::Arc;

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

/// A hyper-util client over plain TCP or over TLS.
#[derive(Debug, Clone)]
enum AnyClient {
    Http(Client<HttpConnector, Empty<Bytes>>),
    Https(Client<HttpsConnector<HttpConnector>, Empty<Bytes>>),
}

/// The shared pooled client plus the upstream's address (and, over HTTPS, the roots every
/// client trusts).
#[derive(Debug, Clone)]
pub struct UpstreamClient {
    url: Option<Uri>,
    /// `Some` for an `https://` upstream.
    roots: Option<Arc<rustls::RootCertStore>>,
    pooled: AnyClient,
}

fn new_client(roots: Option<&Arc<rustls::RootCertStore>>) -> AnyClient {
    match roots {
        None => AnyClient::Http(Client::builder(TokioExecutor::new()).build_http()),
        Some(roots) => {
            let connector = HttpsConnectorBuilder::new()
                .with_tls_config(tls::upstream_client_config(roots.clone()))
                .https_only()
                .enable_http1()
                .build();
            AnyClient::Https(Client::builder(TokioExecutor::new()).build(connector))
        }
    }
}

impl UpstreamClient {
    /// `url` comes from `UPSTREAM_URL` (already validated by [`crate::Config`]); `ca` is
    /// `UPSTREAM_CA`, read only for an `https://` URL.
    pub fn new(
        url: Option<&str>,
        ca: Option<&std::path::Path>,
    ) -> Result<Self, crate::startup::Error> {
        let url: Option<Uri> = url.and_then(|u| u.parse().ok());
        let roots = match &url {
            Some(u) if u.scheme_str() == Some("https") => Some(tls::upstream_roots(ca)?),
            _ => None,
        };
        Ok(UpstreamClient {
            pooled: new_client(roots.as_ref()),
            url,
            roots,
        })
    }

    /// Makes `calls` sequential GETs and returns how many body bytes came back.
    pub async fn call(&self, calls: u32, mode: ClientMode) -> Result<u64, UpstreamError> {
        let url = self.url.as_ref().ok_or(UpstreamError::NotConfigured)?;
        let mut total = 0u64;
        for _ in 0..calls {
            total += match mode {
                ClientMode::Pooled => get(&self.pooled, url).await?,
                ClientMode::PerCall => get(&new_client(self.roots.as_ref()), url).await?,
            };
        }
        Ok(total)
    }
}

async fn get(client: &AnyClient, url: &Uri) -> Result<u64, UpstreamError> {
    let response = match client {
        AnyClient::Http(c) => c.get(url.clone()).await,
        AnyClient::Https(c) => c.get(url.clone()).await,
    }
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
