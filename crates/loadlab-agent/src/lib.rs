//! loadlab's agent: the server seen from its own host.
//!
//! Layout:
//! - [`protocol`]: the wire types (JSON over HTTPS), shared by the agent and its client, and
//!   the certificate fingerprint helpers. Versioned by [`protocol::PROTOCOL`].
//!
//! This crate sits beside the session layer, over the probe: nothing in probe, lab, machine
//! or result depends on it. It must not print: the CLI does.

pub mod protocol;
