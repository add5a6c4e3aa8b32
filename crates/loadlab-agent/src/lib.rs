//! loadlab's agent: the server seen from its own host.
//!
//! Layout:
//! - [`protocol`]: the wire types (JSON over HTTPS), shared by the agent and its client, and
//!   the certificate fingerprint helpers. Versioned by [`protocol::PROTOCOL`].
//! - [`client`]: the generator's side: a blocking client of one agent (lead's file).
//! - [`clock`]: one clock for two hosts (NTP's four timestamps), pure arithmetic.
//!
//! This crate sits beside the session layer, over the probe: nothing in probe, lab, machine
//! or result depends on it. It must not print: the CLI does.

pub mod client;
pub mod clock;
pub mod protocol;
