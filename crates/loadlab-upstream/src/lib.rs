//! The mock upstream that `/upstream` targets call (posts 003 and 004). It answers every path
//! with `200 ok` after a configurable delay, over HTTP or HTTPS, and counts what it sees, so a
//! test or `lab verify` can tell a pooled client (few connections, many requests) from a client
//! built per call (one connection per request). On the same port (without TLS) it serves one
//! unary gRPC method for `/upstream-grpc` (post 002's third case), told apart by HTTP/2's
//! prior-knowledge preface, and counts its calls, connections and streams beside the HTTP ones.
//! It must stay boring and predictable: no routing logic beyond `/__stats` and the one gRPC
//! method, no state other than the counters.
//!
//! Layout:
//! - [`config`]: [`UpstreamConfig`] (bind address, delay per call, TLS or not).
//! - [`stats`]: [`Counters`] (shared atomics) and [`Stats`] (a snapshot, the `/__stats` JSON:
//!   requests, connections, over HTTPS their handshakes, full and resumed, and the gRPC side's
//!   calls, connections and streams).
//! - [`grpc`]: the gRPC method ([`grpc::CALL_PATH`], `proto/upstream.proto`) over HTTP/2
//!   without TLS.
//! - [`server`]: [`run`], the accept loop; takes its listener and its shutdown signal as
//!   arguments so tests and the CLI inject their own (mini-redis style).
//! - [`handle`]: [`Upstream::start`], which runs the server on the current tokio runtime and
//!   returns an [`UpstreamHandle`] with `addr()`, `stats()` and `shutdown()`; and
//!   [`Upstream::start_on_thread`], the same on a thread of its own for a caller that blocks.

pub mod config;
pub mod grpc;
pub mod grpc_streams;
pub mod handle;
pub mod server;
pub mod stats;

pub use config::UpstreamConfig;
pub use handle::{Upstream, UpstreamHandle, UpstreamThread};
pub use server::run;
pub use stats::{Counters, Handshake, Stats};

/// What can go wrong starting or running the mock upstream.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("cannot bind the mock upstream to {addr}: {source} (pick another --port, or 0 for a free one)")]
    Bind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("the mock upstream's listener failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot start a runtime for the mock upstream's thread: {0}")]
    Runtime(std::io::Error),
}

/// The body of every answer other than `/__stats` (and the `value` of every gRPC reply).
pub const RESPONSE_BODY: &str = "ok";

/// The path that serves the counters instead of being counted.
pub const STATS_PATH: &str = "/__stats";
