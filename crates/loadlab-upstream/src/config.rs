//! The mock upstream's settings, validated by construction (a `Duration` cannot be negative).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// How the mock upstream behaves.
#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// Where [`crate::Upstream::start`] binds; loopback port 0 unless a caller needs a fixed one.
    pub addr: SocketAddr,
    /// Added before every counted answer: stands in for the remote service's work, so a target
    /// making N sequential calls takes at least N times this.
    pub delay: Duration,
    /// Serve HTTPS with this configuration (`loadlab upstream --tls`); each connection's
    /// handshake is counted, full or resumed. `None`: plain HTTP.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl Default for UpstreamConfig {
    fn default() -> Self {
        UpstreamConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            delay: Duration::ZERO,
            tls: None,
        }
    }
}

impl UpstreamConfig {
    /// The default config with a delay per call.
    pub fn with_delay(delay: Duration) -> Self {
        UpstreamConfig {
            delay,
            ..Self::default()
        }
    }

    /// The default config over HTTPS.
    pub fn with_tls(tls: Arc<rustls::ServerConfig>) -> Self {
        UpstreamConfig {
            tls: Some(tls),
            ..Self::default()
        }
    }

    /// `https` when serving TLS, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }
}
