//! The engine's integration tests as one test binary: one link instead of eleven, and the
//! tests of every file share the test threads.
//!
//! What must not come here: a test that needs the machine to itself. `open_loop.rs` (it
//! checks latencies to the millisecond and serialises its tests) stays a binary of its own
//! beside this folder. A file added here must not use a fixed port, a fixed name in /tmp or a
//! global setting.

#[path = "../common/mod.rs"]
mod common;

mod alt_svc;
mod behind;
mod cacert_openssl;
mod drain;
mod engine;
mod expect_continue;
mod grpc;
mod grpc_streams;
mod h2_retry;
mod h3;
mod h3_paths;
mod http2;
mod mux_server;
mod nothing_listens;
mod parser_props;
mod partial_interval;
mod pipeline;
mod refused_streams;
mod scenario;
mod scenario_grpc;
mod scenario_mux;
mod scenario_ws;
mod shard_props;
mod stream_limit;
mod tls;
mod tls_advice;
mod unanswered;
mod ws;
mod ws_deflate;
mod ws_h2;
mod ws_ramp;
