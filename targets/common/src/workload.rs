//! Bodies of the fixed endpoints. `/json` and `/compute` are serialized per request on
//! purpose: that work is what those endpoints measure.

use bytes::Bytes;
use serde::Serialize;
use std::sync::OnceLock;

/// `/plaintext` body (13 bytes).
pub const PLAINTEXT: &str = "Hello, World!";
/// `/healthz` body.
pub const HEALTHZ: &str = "ok";
/// `/delay` and `/block` body.
pub const DONE: &str = "done";

/// `/json` body; serialized per request as `{"message":"Hello, World!"}`.
#[derive(Debug, Serialize)]
pub struct Message {
    pub message: &'static str,
}

/// The `/json` value, ready to serialize.
pub fn message() -> Message {
    Message { message: PLAINTEXT }
}

/// First state of the `/compute` generator.
pub const COMPUTE_SEED: u32 = 42;

/// The contract's generator: `x = (1103515245 * x + 12345) mod 2^31`, starting from
/// [`COMPUTE_SEED`]; returns `x1..=xn`. Wrapping 32-bit arithmetic then masking 31 bits
/// gives the same numbers in any language.
pub fn compute(n: usize) -> Vec<u32> {
    let mut x = COMPUTE_SEED;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345) & 0x7fff_ffff;
            x
        })
        .collect()
}

/// `/compute` body: the numbers as a JSON array without spaces.
pub fn compute_json(n: usize) -> Vec<u8> {
    // A Vec<u32> always serializes.
    serde_json::to_vec(&compute(n)).unwrap_or_default()
}

/// `/bytes?n=N` body: byte `i` is `b'a' + i % 26`. Slices one buffer built at first use,
/// as a production service serving a fixed payload would.
pub fn payload(n: usize) -> Bytes {
    static BUFFER: OnceLock<Bytes> = OnceLock::new();
    let buffer = BUFFER.get_or_init(|| {
        (0..crate::params::MAX_BYTES_N as usize)
            .map(|i| b'a' + (i % 26) as u8)
            .collect::<Vec<u8>>()
            .into()
    });
    buffer.slice(..n.min(buffer.len()))
}

/// `/upstream` body.
pub fn upstream_json(calls: u32, mode: crate::ClientMode, upstream_bytes: u64) -> String {
    format!(
        "{{\"calls\":{calls},\"client\":\"{}\",\"upstream_bytes\":{upstream_bytes}}}",
        mode.as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_body_is_exact() {
        assert_eq!(
            serde_json::to_string(&message()).unwrap(),
            r#"{"message":"Hello, World!"}"#
        );
    }

    #[test]
    fn compute_matches_the_contract_sequence() {
        assert_eq!(
            String::from_utf8(compute_json(3)).unwrap(),
            "[1250496027,1116302264,1000676753]"
        );
        assert_eq!(compute_json(0), b"[]");
    }

    #[test]
    fn payload_is_the_alphabet_repeated() {
        assert_eq!(&payload(28)[..], b"abcdefghijklmnopqrstuvwxyzab");
        assert_eq!(payload(0).len(), 0);
    }
}
