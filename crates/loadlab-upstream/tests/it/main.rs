//! The mock upstream's integration tests as one test binary (one link, not four): HTTP, TLS,
//! gRPC and POST bodies against real loopback servers on port 0. A file added here must not
//! use a fixed port or a global setting.

mod grpc;
mod post_body;
mod tls;
mod upstream;
