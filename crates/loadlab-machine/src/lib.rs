//! The machine and the wire around a run (issue 17).
//!
//! # Layout
//!
//! - [`plan`]: the run the machine is checked against ([`PlannedRun`]), as the session plans it.
//! - [`readings`]: what the machine is ([`Readings`]): limits, kernel settings, power
//!   management, neighbours; plain data. [`reader`] fills it from `/proc` and `/sys`.
//! - [`checks`]: pure functions of the two: PASS, WARN or FAIL, what the run needs and the
//!   command that fixes it (`loadlab doctor`, and before every run).
//! - [`counters`]: the kernel's TCP counters (`/proc/net/netstat`, `/proc/net/snmp`) and
//!   TIME_WAIT on the target's port (`sock_diag`) around the measured time, and what they
//!   mean in plain words.
//! - [`netns`]: doing a thing inside another network namespace from a thread of its own.
//! - [`nic`]: a generator's own link over a run: the busiest interface's bytes and what it
//!   can carry (a `tbf` rate, a NIC's speed), saturated or not.
//! - [`path`]: the path as one end's TCP stack sees it (a generator's connections, or the
//!   server's), sampled through `sock_diag` on a thread through a run.
//! - [`rate`]: bandwidth as people write it (`2MBps`: megabytes per second).
//! - [`link`]: a network namespace for the server behind a veth pair shaped by `tbf` (and
//!   `netem`), calibrated before the run and removed after it, stale ones swept by name.
//!
//! This crate must not print or read flags: the session turns its findings into notes and
//! result fields. The checks and the parsers are pure and table-tested; the parts that touch
//! the kernel are tested for real (as root) by the CLI's tests.

pub mod checks;
pub mod counters;
pub mod link;
pub mod netns;
pub mod nic;
pub mod path;
pub mod plan;
pub mod rate;
pub mod reader;
pub mod readings;

pub use link::{Link, LinkError, LinkSpec};
pub use netns::Scope;
pub use plan::PlannedRun;
pub use rate::Rate;
pub use readings::Readings;
