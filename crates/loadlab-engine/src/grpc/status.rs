//! gRPC's status: the code a call ended with (`grpc-status`), its message (`grpc-message`,
//! percent-encoded on the wire), the code a client reads into an HTTP status that is not
//! 200 (gRPC's HTTP/2 protocol document: a proxy's 503 is UNAVAILABLE), and the
//! `grpc-timeout` a deadline is sent as. Pure: no I/O, nothing recorded.

use crate::error::ErrorClass;

/// The status codes of gRPC (`grpc/doc/statuscodes.md`), by their number on the wire: the
/// scenario crate's list, which `grpc_status` checks read names from.
pub const CODES: [&str; 17] = loadlab_scenario::grpc::STATUS_CODES;

/// The failure class of a call that ended with `code` (not OK): each code its own class, so
/// a report says how many calls were NOT_FOUND and how many UNAVAILABLE. A code beyond 16
/// is UNKNOWN, as gRPC's own clients read it.
pub fn class_of(code: u32) -> Option<ErrorClass> {
    use ErrorClass::*;
    Some(match code {
        0 => return None,
        1 => GrpcCancelled,
        3 => GrpcInvalidArgument,
        4 => GrpcDeadlineExceeded,
        5 => GrpcNotFound,
        6 => GrpcAlreadyExists,
        7 => GrpcPermissionDenied,
        8 => GrpcResourceExhausted,
        9 => GrpcFailedPrecondition,
        10 => GrpcAborted,
        11 => GrpcOutOfRange,
        12 => GrpcUnimplemented,
        13 => GrpcInternal,
        14 => GrpcUnavailable,
        15 => GrpcDataLoss,
        16 => GrpcUnauthenticated,
        _ => GrpcUnknown,
    })
}

/// The code a gRPC client reads from an answer whose HTTP status is not 200 (what a proxy or
/// a server that does not speak gRPC sends), per gRPC's `http-grpc-status-mapping.md`.
pub fn code_of_http_status(status: u16) -> u32 {
    match status {
        400 => 13,
        401 => 16,
        403 => 7,
        404 => 12,
        429 | 502..=504 => 14,
        _ => 2,
    }
}

/// `grpc-status`'s value as a code: ASCII digits. Anything else is not a status a server may
/// send; `None` lets the caller call the answer malformed.
pub fn parse_code(value: &[u8]) -> Option<u32> {
    if value.is_empty() || value.len() > 3 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// `grpc-message` as text to show: percent-decoded (the spec's encoding), then escaped by
/// the one rule for a peer's text (`loadlab_result::format::shown`: `escape_debug` when it
/// holds a control character) so a server's control characters never reach a terminal, and
/// cut to `MAX_MESSAGE_CHARS`.
pub fn message_text(value: &[u8]) -> String {
    let mut bytes = Vec::with_capacity(value.len());
    let mut i = 0;
    while i < value.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (value[i], value.get(i + 1), value.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                bytes.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                bytes.push(b);
                i += 1;
            }
        }
    }
    let text: String = String::from_utf8_lossy(&bytes)
        .chars()
        .take(MAX_MESSAGE_CHARS)
        .collect();
    loadlab_result::format::shown(&text).into_owned()
}

/// The most of a server's `grpc-message` kept: enough for any sentence, not a megabyte.
const MAX_MESSAGE_CHARS: usize = 300;

/// A deadline as `grpc-timeout`'s value: at most 8 digits and a unit, the finest unit that
/// holds it (so a deadline is sent as exactly as the header allows), rounded up so the
/// server never gets less time than asked.
pub fn timeout_header(deadline: std::time::Duration) -> String {
    const MAX: u128 = 99_999_999;
    let ns = deadline.as_nanos();
    for (unit, per) in [
        ("n", 1u128),
        ("u", 1_000),
        ("m", 1_000_000),
        ("S", 1_000_000_000),
        ("M", 60_000_000_000),
        ("H", 3_600_000_000_000),
    ] {
        let n = ns.div_ceil(per);
        if n <= MAX {
            return format!("{n}{unit}");
        }
    }
    format!("{MAX}H")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_code_but_ok_is_its_own_class() {
        assert_eq!(class_of(0), None);
        let classes: Vec<_> = (1..=16).map(|c| class_of(c).unwrap()).collect();
        let mut unique = classes.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 16);
        for (code, class) in (1..=16).zip(&classes) {
            let name = CODES[code as usize].to_ascii_lowercase();
            assert_eq!(class.key(), format!("grpc_{name}"), "code {code}");
        }
        assert_eq!(class_of(17), Some(ErrorClass::GrpcUnknown));
    }

    #[test]
    fn status_values() {
        for (raw, code) in [(&b"0"[..], Some(0)), (b"16", Some(16)), (b"", None)] {
            assert_eq!(parse_code(raw), code);
        }
        for raw in [&b"-1"[..], b"1a", b" 1", b"99999"] {
            assert_eq!(parse_code(raw), None, "{raw:?}");
        }
        assert_eq!(code_of_http_status(503), 14);
        assert_eq!(code_of_http_status(404), 12);
        assert_eq!(code_of_http_status(500), 2);
    }

    #[test]
    fn messages_are_decoded_then_escaped() {
        assert_eq!(message_text(b"not%20found"), "not found");
        assert_eq!(message_text(b"caf%C3%A9 100%"), "café 100%");
        // A terminal escape sent raw or percent-encoded is shown, not obeyed.
        assert_eq!(message_text(b"a\x1b[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(message_text(b"a%1B[2Jb%0A"), "a\\u{1b}[2Jb\\n");
        assert_eq!(message_text(&[b'x'; 5000]).len(), MAX_MESSAGE_CHARS);
        // Ordinary quotes stay as they are.
        assert_eq!(message_text(b"no 'x' in \"y\""), "no 'x' in \"y\"");
    }

    #[test]
    fn deadlines_as_headers() {
        assert_eq!(timeout_header(Duration::from_millis(250)), "250000u");
        assert_eq!(timeout_header(Duration::from_micros(2500)), "2500000n");
        assert_eq!(timeout_header(Duration::from_secs(1)), "1000000u");
        assert_eq!(timeout_header(Duration::from_secs(3600)), "3600000m");
        assert_eq!(timeout_header(Duration::from_nanos(1)), "1n");
        assert_eq!(timeout_header(Duration::from_secs(1 << 40)), "99999999H");
    }
}
