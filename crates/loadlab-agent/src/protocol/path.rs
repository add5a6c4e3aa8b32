//! The path check's wire types (issue 52): what a path between two agents' hosts carries,
//! measured iperf-style by a bounded bulk transfer each way before a fleet's load starts.
//!
//! One agent (the server's) listens for one check (`POST /v1/path/listen`) and answers with a
//! single-use ticket and a port; the other (a generator's) is told to check the path to it
//! (`POST /v1/path/check`) and answers with the goodput both ways. The bulk connections carry
//! only the ticket and zeros, never the agent's token: a ticket opens one transfer each way,
//! for a few seconds, and nothing else.
//!
//! Data only: no I/O here.

use serde::{Deserialize, Serialize};

/// The most bytes one direction of a check moves.
pub const MAX_PATH_BYTES: u64 = 16 * 1024 * 1024;
/// The longest one direction of a check lasts.
pub const MAX_PATH_MS: u64 = 3_000;
/// A ticket's length on the wire: 32 hexadecimal characters.
pub const TICKET_CHARS: usize = 32;

/// `POST /v1/path/listen`: listen for one check moving at most `bytes` each way, each
/// direction for at most `ms`.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct PathListen {
    pub bytes: u64,
    pub ms: u64,
}

/// The listening agent's answer: where to connect and the ticket to show there.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PathTicket {
    /// A port on the address the listen request arrived at.
    pub port: u16,
    /// Single use: one transfer each way, then the listener closes.
    pub ticket: String,
    pub bytes: u64,
    pub ms: u64,
}

/// `POST /v1/path/check`: measure the path to a listening agent, both ways.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PathCheck {
    /// The listening agent's host, as the coordinator reached it.
    pub host: String,
    pub port: u16,
    pub ticket: String,
    pub bytes: u64,
    pub ms: u64,
}

/// One direction of a transfer, as measured at its receiving end.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct Transfer {
    /// Bytes received.
    pub bytes: u64,
    /// From the ticket's arrival (or its sending, for the checker's download) to the last
    /// byte: one round trip and the slow start included, as iperf counts them.
    pub elapsed_us: u64,
    /// All the bytes asked for arrived (else the time bound cut the transfer short: the
    /// path carried less than `bytes` in `ms`).
    pub complete: bool,
}

impl Transfer {
    /// Goodput in bits per second; none when nothing measurable arrived.
    pub fn bits_per_s(&self) -> Option<f64> {
        (self.bytes > 0 && self.elapsed_us > 0)
            .then(|| self.bytes as f64 * 8.0 / (self.elapsed_us as f64 / 1e6))
    }
}

/// `POST /v1/path/check`'s answer.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct PathGoodput {
    /// From the listening agent (the server's host) to the checking one (a generator's):
    /// the direction the answers travel.
    pub down: Transfer,
    /// From the checking agent to the listening one: the direction the requests travel.
    pub up: Transfer,
}
