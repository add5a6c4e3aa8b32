//! loadlab's agent: the server seen from its own host.
//!
//! Layout:
//! - [`protocol`]: the wire types (JSON over HTTPS), shared by the agent and its client, and
//!   the certificate fingerprint helpers. Versioned by [`protocol::PROTOCOL`].
//! - [`server`]: the agent: [`run`] (shutdown injected) and [`serve`] (blocking, for the
//!   CLI); `state` (the one session slot, the token, nonce and protocol checks), `handler`
//!   (routing, bodies, the endpoints), `open` (a session's start), `attach` and `launch`
//!   (finding or starting the server), `session` (sampling into a ring, kernel counters,
//!   the lease, stopping), `host` (the host's facts), `reply` (JSON answers and refusals),
//!   `names` (the names a client gives itself, bounded and printable),
//!   `path` (the path check's bulk transfers, issue 52).
//! - [`lab`]: the lab, chosen once at start, and the ownership and mode check of every file
//!   it runs (StrictModes).
//! - [`config`]: [`AgentConfig`], [`Token`] (redacted), the agent's [`Clock`], [`AgentError`].
//! - [`client`]: the generator's side: a blocking client of one agent (lead's file).
//! - [`clock`]: one clock for two hosts (NTP's four timestamps), pure arithmetic.
//! - [`state_dir`]: the locked state directory: nonces kept across restarts, what the agent
//!   makes recorded before it is made, and what a killed agent left reaped at start.
//!
//! This crate sits beside the session layer, over the probe: nothing in probe, lab, machine
//! or result depends on it. It must not print: the CLI does.

mod attach;
pub mod client;
pub mod clock;
pub mod config;
#[doc(hidden)]
pub mod fuzzing;
mod handler;
mod host;
pub mod lab;
mod launch;
mod load;
mod names;
mod open;
mod path;
pub mod protocol;
mod reply;
pub mod server;
mod session;
mod state;
pub mod state_dir;

pub use config::{AgentConfig, AgentError, Clock, Token};
pub use server::{run, serve};
pub use state_dir::StateDir;
