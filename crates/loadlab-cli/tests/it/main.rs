//! loadlab-cli's integration tests that may run beside each other, as one test binary: one
//! link instead of eight, and the tests of every file share the test threads (a file whose
//! one slow test held its own binary, such as the interop matrix, now overlaps the others).
//!
//! What must not come here: a test that needs its process or the machine to itself. Those
//! stay one binary per file beside this folder: `session.rs` (counts this process's fds,
//! threads and children), `agent.rs`, `capacity.rs`, `cliff.rs`, `machine.rs` and
//! `server.rs` (they measure CPU, rates or latency and serialise among themselves), and
//! `spill.rs`, `metrics_everywhere.rs` and `ship.rs` (their runs are paced by the clock and
//! count intervals or requests exactly: beside the interop loads here they came out short on
//! a busy machine). A file added here must not use a fixed port, a fixed name in /tmp or a
//! global setting.

#[path = "../common/mod.rs"]
mod common;
#[path = "../netns/mod.rs"]
mod netns;
#[path = "../../../loadlab-metrics/tests/common/mod.rs"]
mod programs;

mod cli;
mod compare_tags;
mod dist;
mod fleet_grpc;
mod fleet_h3;
mod fleet_health;
mod fleet_ws;
mod generators;
mod grpc;
mod hostile;
mod hostile_fleet;
mod import;
mod interop;
mod live;
mod live_browser;
mod live_command;
mod metrics;
mod path_h3;
mod scenario;
mod server_path;
mod store_capacity;
mod store_ui;
mod store_ui_browser;
mod store_ui_readonly;
mod tui;
mod websocket;
