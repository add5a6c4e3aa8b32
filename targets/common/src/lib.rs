//! What every Rust reference target shares: the workload contract's domain logic
//! (`../../CONTRACT.md`) and the start-up around it. Each target wires these pieces into its
//! framework the way that framework's documentation recommends; nothing here knows about a
//! framework, and nothing here may cache a response the contract says is built per request.
//!
//! Layout:
//! - [`config`]: the environment a target reads (`PORT`, `HOST`, `WORKERS`, `BACKLOG`,
//!   `UPSTREAM_URL`, `UPSTREAM_GRPC_URL`, `UPSTREAM_CA`, `TLS_CERT`, `TLS_KEY`, `CONTENT_DIR`).
//! - [`params`]: query-string parsing with the contract's maxima; bad input becomes a
//!   [`params::BadParam`] that targets turn into a 400.
//! - [`workload`]: the bodies of `/plaintext`, `/json`, `/compute`, `/bytes`.
//! - [`workload_grpc`]: the contract's gRPC service (`loadlab.lab.v1.Workload`, capability
//!   `grpc`), which a target routes inside its own HTTP/2 server, or puts in front of its
//!   routes ([`workload_grpc::WithGrpc`]).
//! - [`site`]: the portfolio (templates and Markdown posts from `targets/content`).
//! - [`upstream`]: the pooled and per-call clients behind `/upstream` (HTTP or HTTPS).
//! - [`upstream_grpc`]: the pooled and per-call gRPC channels behind `/upstream-grpc`, and the
//!   endpoint itself ([`upstream_grpc::respond`]).
//! - [`plain`]: plain HTTP from an accept loop of the target's own, HTTP/1.1 or h2c (the
//!   gRPC service's transport without TLS).
//! - [`tls`]: HTTPS: the rustls server configuration, the TLS accept loop (HTTP/1.1 and
//!   HTTP/2 by ALPN), and the roots an `https://` upstream client trusts.
//! - [`h3`] (feature `http3`): HTTP/3 over QUIC beside HTTPS, on the same port number over
//!   UDP, through the target's own service.
//! - [`startup`]: the shared [`AppState`], the runtime with `WORKERS` threads, binding with
//!   `BACKLOG`, the `listening on ADDR` line, and exit status 2 on any start-up error.

pub mod config;
#[cfg(feature = "http3")]
pub mod h3;
pub mod params;
pub mod plain;
pub mod site;
pub mod startup;
pub mod tls;
pub mod upstream;
pub mod upstream_grpc;
pub mod workload;
pub mod workload_grpc;

pub use config::{Config, TlsFiles};
pub use params::{BadParam, Params};
pub use site::Site;
pub use startup::AppState;
pub use upstream::{ClientMode, UpstreamClient, UpstreamError};
pub use upstream_grpc::GrpcUpstreamClient;
