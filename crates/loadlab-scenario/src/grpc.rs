//! A scenario's gRPC side as this crate knows it: where the schema is ([`GrpcSchema`]), what
//! a gRPC step sends ([`GrpcStep`]: the method, the message as a JSON template, metadata, a
//! deadline), and gRPC's status codes by name, for `grpc_status` checks. The schema itself
//! (compiling `.proto` files, matching the message and capture paths to the method's types,
//! encoding) is the engine's `grpc` module's: this crate has no protobuf, and sends nothing.

use crate::template::Template;
use std::path::PathBuf;
use std::time::Duration;

/// The status codes of gRPC (`grpc/doc/statuscodes.md`), by their number on the wire: the
/// one list (the engine's `grpc::status::CODES` is this).
pub const STATUS_CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// A code's name (`UNKNOWN` for one beyond the list, as gRPC's clients read it).
pub fn code_name(code: u32) -> &'static str {
    STATUS_CODES
        .get(code as usize)
        .copied()
        .unwrap_or("UNKNOWN")
}

/// A code by its name (any case) or its number, or a sentence with the fix.
pub fn parse_code(name: &str) -> Result<u32, String> {
    let trimmed = name.trim();
    if let Ok(n) = trimmed.parse::<u32>() {
        if (n as usize) < STATUS_CODES.len() {
            return Ok(n);
        }
    }
    STATUS_CODES
        .iter()
        .position(|c| c.eq_ignore_ascii_case(trimmed))
        .map(|i| i as u32)
        .ok_or_else(|| {
            format!(
                "`{name}` is not a gRPC status; give a name ({}) or a code from 0 to 16",
                STATUS_CODES.join(", ")
            )
        })
}

/// Where the scenario's gRPC steps find their schema (`[grpc]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrpcSchema {
    /// `.proto` files, resolved against the scenario file's folder, and the folders their
    /// imports are under.
    Protos {
        protos: Vec<PathBuf>,
        import_paths: Vec<PathBuf>,
    },
    /// Asked of the server (server reflection), once, before the run.
    Reflect,
    /// Resolved where the scenario was loaded: the `.proto` files compiled, or the server's
    /// reflection asked, once ([`crate::Scenario::with_grpc_descriptors`]).
    Compiled(GrpcDescriptors),
}

/// A compiled schema: a `FileDescriptorSet` in protobuf bytes (this crate only carries it;
/// the engine reads it).
pub type GrpcDescriptors = std::sync::Arc<[u8]>;

/// What a gRPC step sends.
#[derive(Debug, Clone)]
pub struct GrpcStep {
    /// `package.Service/Method`, as written.
    pub method: String,
    /// The request messages as JSON text (protobuf's JSON mapping), their strings
    /// templated: one, or a client or bidirectional stream's, in order (at least one).
    pub messages: Vec<Template>,
    /// A streaming call: the answer message (from 0) captures and checks read; `None`: the
    /// last.
    pub answer_index: Option<u64>,
    /// Metadata: names as written (checked tokens), values templated.
    pub metadata: Vec<(String, Template)>,
    /// Sent as `grpc-timeout`.
    pub deadline: Option<Duration>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_by_name_or_number() {
        assert_eq!(parse_code("NOT_FOUND"), Ok(5));
        assert_eq!(parse_code(" unavailable "), Ok(14));
        assert_eq!(parse_code("0"), Ok(0));
        assert_eq!(parse_code("16"), Ok(16));
        for bad in ["17", "NOPE", "", "-1"] {
            let err = parse_code(bad).unwrap_err();
            assert!(err.contains("not a gRPC status"), "{bad}: {err}");
        }
        assert_eq!(code_name(5), "NOT_FOUND");
        assert_eq!(code_name(99), "UNKNOWN");
    }
}
