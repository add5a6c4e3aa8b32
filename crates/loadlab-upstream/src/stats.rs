//! The counters: requests answered, the connections that carried them, and over HTTPS those
//! connections' TLS handshakes, full or resumed; then the same for gRPC apart (plus gRPC's
//! HTTP/2 streams, and messages each way). Counting connections and handshakes (not just requests) is the point of
//! this crate: missing pooling shows up as a number, and a client that throws its TLS sessions
//! away shows up as full handshakes.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Live counters shared by the server's connection tasks and whoever reads them.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    requests: AtomicU64,
    connections: AtomicU64,
    tls_full: AtomicU64,
    tls_resumed: AtomicU64,
    grpc_requests: AtomicU64,
    grpc_connections: AtomicU64,
    grpc_streams: AtomicU64,
    grpc_messages_received: AtomicU64,
    grpc_messages_sent: AtomicU64,
}

/// How a counted connection's TLS handshake went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// A full handshake: certificate sent, key exchange, signatures.
    Full,
    /// An earlier session resumed (TLS 1.2 session id or ticket, TLS 1.3 PSK).
    Resumed,
}

impl Counters {
    /// A snapshot; cheap, and does not count as traffic (unlike `GET /__stats`).
    pub fn snapshot(&self) -> Stats {
        Stats {
            requests: self.inner.requests.load(Ordering::Acquire),
            connections: self.inner.connections.load(Ordering::Acquire),
            tls_full: self.inner.tls_full.load(Ordering::Acquire),
            tls_resumed: self.inner.tls_resumed.load(Ordering::Acquire),
            grpc_requests: self.inner.grpc_requests.load(Ordering::Acquire),
            grpc_connections: self.inner.grpc_connections.load(Ordering::Acquire),
            grpc_streams: self.inner.grpc_streams.load(Ordering::Acquire),
            grpc_messages_received: self.inner.grpc_messages_received.load(Ordering::Acquire),
            grpc_messages_sent: self.inner.grpc_messages_sent.load(Ordering::Acquire),
        }
    }

    pub(crate) fn add_request(&self) {
        self.inner.requests.fetch_add(1, Ordering::AcqRel);
    }

    /// A connection that carried its first counted request, with its handshake over HTTPS.
    pub(crate) fn add_connection(&self, handshake: Option<Handshake>) {
        self.inner.connections.fetch_add(1, Ordering::AcqRel);
        match handshake {
            Some(Handshake::Full) => self.inner.tls_full.fetch_add(1, Ordering::AcqRel),
            Some(Handshake::Resumed) => self.inner.tls_resumed.fetch_add(1, Ordering::AcqRel),
            None => 0,
        };
    }

    pub(crate) fn add_grpc_request(&self) {
        self.inner.grpc_requests.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn add_grpc_connection(&self) {
        self.inner.grpc_connections.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn add_grpc_stream(&self) {
        self.inner.grpc_streams.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn add_grpc_message_received(&self) {
        self.inner
            .grpc_messages_received
            .fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn add_grpc_message_sent(&self) {
        self.inner.grpc_messages_sent.fetch_add(1, Ordering::AcqRel);
    }
}

/// What `/__stats` serves: `{"requests":R,"connections":C,"tls_full":F,"tls_resumed":S,`
/// `"grpc_requests":G,"grpc_connections":H,"grpc_streams":T,"grpc_messages_received":I,`
/// `"grpc_messages_sent":O}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Requests answered, other than `/__stats` itself.
    pub requests: u64,
    /// Accepted connections that carried at least one counted request (so a connection used
    /// only to read `/__stats` does not count).
    pub connections: u64,
    /// Over HTTPS: those connections whose TLS handshake was a full one (0 over plain HTTP).
    #[serde(default)]
    pub tls_full: u64,
    /// Over HTTPS: those connections whose handshake resumed an earlier session. Over HTTPS
    /// `tls_full + tls_resumed == connections`.
    #[serde(default)]
    pub tls_resumed: u64,
    /// gRPC calls taken (`loadlab.upstream.v1.Upstream/Call`, and the streaming `Stream`,
    /// `Collect`, `Chat`: `grpc::streams`).
    #[serde(default)]
    pub grpc_requests: u64,
    /// HTTP/2 connections that carried at least one gRPC call.
    #[serde(default)]
    pub grpc_connections: u64,
    /// HTTP/2 streams opened on them, calls or not: a unary client opens one per call, so
    /// more streams than calls means calls to other methods (answered `UNIMPLEMENTED`).
    #[serde(default)]
    pub grpc_streams: u64,
    /// gRPC request messages read whole (a unary call's one included).
    #[serde(default)]
    pub grpc_messages_received: u64,
    /// gRPC answer messages handed to HTTP/2 (a stream the client ends early may not have
    /// read the last few).
    #[serde(default)]
    pub grpc_messages_sent: u64,
}

impl Stats {
    /// The traffic between `earlier` and `self`.
    pub fn since(&self, earlier: &Stats) -> Stats {
        Stats {
            requests: self.requests.saturating_sub(earlier.requests),
            connections: self.connections.saturating_sub(earlier.connections),
            tls_full: self.tls_full.saturating_sub(earlier.tls_full),
            tls_resumed: self.tls_resumed.saturating_sub(earlier.tls_resumed),
            grpc_requests: self.grpc_requests.saturating_sub(earlier.grpc_requests),
            grpc_connections: self
                .grpc_connections
                .saturating_sub(earlier.grpc_connections),
            grpc_streams: self.grpc_streams.saturating_sub(earlier.grpc_streams),
            grpc_messages_received: self
                .grpc_messages_received
                .saturating_sub(earlier.grpc_messages_received),
            grpc_messages_sent: self
                .grpc_messages_sent
                .saturating_sub(earlier.grpc_messages_sent),
        }
    }

    /// Requests per connection: 1.0 means no reuse at all; `None` before any connection.
    pub fn reuse_ratio(&self) -> Option<f64> {
        (self.connections > 0).then(|| self.requests as f64 / self.connections as f64)
    }

    /// TLS handshakes of either kind (0 over plain HTTP).
    pub fn handshakes(&self) -> u64 {
        self.tls_full + self.tls_resumed
    }

    /// gRPC calls per gRPC connection, as [`Stats::reuse_ratio`] for HTTP.
    pub fn grpc_reuse_ratio(&self) -> Option<f64> {
        (self.grpc_connections > 0)
            .then(|| self.grpc_requests as f64 / self.grpc_connections as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_and_reuse_ratio() {
        let before = Stats {
            requests: 2,
            connections: 1,
            tls_full: 1,
            tls_resumed: 0,
            grpc_requests: 1,
            grpc_connections: 1,
            grpc_streams: 1,
            grpc_messages_received: 1,
            grpc_messages_sent: 1,
        };
        let after = Stats {
            requests: 26,
            connections: 3,
            tls_full: 2,
            tls_resumed: 1,
            grpc_requests: 9,
            grpc_connections: 1,
            grpc_streams: 10,
            grpc_messages_received: 10,
            grpc_messages_sent: 10,
        };
        let delta = after.since(&before);
        assert_eq!(
            delta,
            Stats {
                requests: 24,
                connections: 2,
                tls_full: 1,
                tls_resumed: 1,
                grpc_requests: 8,
                grpc_connections: 0,
                grpc_streams: 9,
                grpc_messages_received: 9,
                grpc_messages_sent: 9,
            }
        );
        assert_eq!(delta.reuse_ratio(), Some(12.0));
        assert_eq!(delta.handshakes(), 2);
        assert_eq!(delta.grpc_reuse_ratio(), None);
        assert_eq!(after.grpc_reuse_ratio(), Some(9.0));
        assert_eq!(Stats::default().reuse_ratio(), None);
    }

    #[test]
    fn handshakes_are_counted_with_their_connection() {
        let counters = Counters::default();
        counters.add_connection(None);
        counters.add_connection(Some(Handshake::Full));
        counters.add_connection(Some(Handshake::Resumed));
        counters.add_connection(Some(Handshake::Resumed));
        let stats = counters.snapshot();
        assert_eq!(
            (stats.connections, stats.tls_full, stats.tls_resumed),
            (4, 1, 2)
        );
    }

    #[test]
    fn json_shape_is_the_contract() {
        let json = serde_json::to_string(&Stats {
            requests: 8,
            connections: 8,
            tls_full: 8,
            tls_resumed: 0,
            grpc_requests: 3,
            grpc_connections: 1,
            grpc_streams: 3,
            grpc_messages_received: 3,
            grpc_messages_sent: 3,
        })
        .unwrap();
        assert_eq!(
            json,
            r#"{"requests":8,"connections":8,"tls_full":8,"tls_resumed":0,"grpc_requests":3,"grpc_connections":1,"grpc_streams":3,"grpc_messages_received":3,"grpc_messages_sent":3}"#
        );
        // What an older mock upstream served (no TLS, no gRPC) still reads.
        let old: Stats = serde_json::from_str(r#"{"requests":1,"connections":1}"#).unwrap();
        assert_eq!(old.handshakes(), 0);
        assert_eq!(old.grpc_requests, 0);
    }
}
