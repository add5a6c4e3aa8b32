//! A step's response judged, whatever the protocol carried it: its cookies into the user's
//! jar, its body decompressed (gzip, deflate, br) and weighed decoded, then the scenario
//! crate's verdict (captures into the user's values, checks). HTTP/1.1's `wire` and HTTP/2's
//! and HTTP/3's `mux` keep what a response needs (its header fields, and its body only when
//! the step reads it or it is compressed) and hand it here, so the three judge alike. It
//! does no I/O and keeps nothing between responses but the caller's buffer.

use loadlab_scenario::{CookieJar, Response, Step, Verdict};
use std::io::Read as _;

/// The most bytes of one response kept for checks; beyond it the body is cut (and a check
/// on the part cut away fails, saying what it looked for).
pub(super) const MAX_KEPT_BYTES: usize = 16 << 20;

/// What a step's response came to.
pub(super) struct Read {
    pub verdict: Verdict,
    /// `Content-Encoding`, as a name the statistics keep (`identity` when none).
    pub encoding: &'static str,
    /// The response's bytes with a compressed body counted at its decompressed size.
    pub decoded_bytes: u64,
}

/// A response as one protocol kept it, ready to be judged (see `scenario::finish`).
pub(super) trait Kept {
    /// Judges the response just received (`status`, and `received` its bytes as the
    /// protocol counts them): cookies into `jar`, captures into `values`, checks run.
    fn read(
        &mut self,
        step: &Step,
        status: u16,
        received: u64,
        values: &mut [String],
        jar: &mut CookieJar,
    ) -> Read;
}

/// Judges a response from its header fields (`fields` lists them, names and values as
/// received, each time it is called) and its `body` (HTTP/1.1's chunked framing already
/// removed). `decoded` is the caller's buffer for a compressed body, kept from one response
/// to the next so that a steady user does not allocate.
#[allow(clippy::too_many_arguments)]
pub(super) fn judge<'f, 'b, I>(
    step: &Step,
    status: u16,
    fields: impl Fn() -> I,
    mut body: &'b [u8],
    received: u64,
    values: &mut [String],
    jar: &mut CookieJar,
    decoded: &'b mut Vec<u8>,
) -> Read
where
    I: Iterator<Item = (&'f str, &'f [u8])>,
{
    let mut encoding = "identity";
    for (name, value) in fields() {
        if name.eq_ignore_ascii_case("set-cookie") {
            jar.set(value);
        } else if name.eq_ignore_ascii_case("content-encoding") {
            encoding = encoding_name(value);
        }
    }
    let mut decoded_bytes = received;
    if matches!(encoding, "gzip" | "deflate" | "br") && !body.is_empty() {
        decoded.clear();
        if decode(encoding, body, decoded) {
            // Over HTTP/2 a request's bytes are what crossed the thread's connections while
            // it ran, which may be fewer than its body (another request's share): never
            // below the decoded body.
            decoded_bytes = received.saturating_sub(body.len() as u64) + decoded.len() as u64;
            body = decoded;
        }
    }
    // Header values for captures only when a capture may read them: a Vec that is never
    // pushed to does not allocate.
    let mut headers: Vec<(&str, &[u8])> = Vec::new();
    if !step.captures.is_empty() {
        headers.extend(fields());
    }
    let response = Response {
        status,
        headers: &headers,
        body,
    };
    Read {
        verdict: step.judge(&response, values),
        encoding,
        decoded_bytes,
    }
}

/// Whether a `Content-Encoding` value names a coding whose body is kept to be weighed
/// decoded.
pub(super) fn is_compressed(value: &[u8]) -> bool {
    !matches!(encoding_name(value), "identity")
}

/// Decodes a gzip, deflate or br body into `out`; false when it does not decode.
fn decode(encoding: &str, body: &[u8], out: &mut Vec<u8>) -> bool {
    match encoding {
        "gzip" => flate2::read::MultiGzDecoder::new(body)
            .read_to_end(out)
            .is_ok(),
        "br" => brotli_decompressor::Decompressor::new(body, 4096)
            .read_to_end(out)
            .is_ok(),
        _ => flate2::read::ZlibDecoder::new(body)
            .read_to_end(out)
            .is_ok(),
    }
}

fn encoding_name(value: &[u8]) -> &'static str {
    let v = value.trim_ascii();
    for name in ["gzip", "deflate", "br", "zstd", "identity"] {
        if v.eq_ignore_ascii_case(name.as_bytes()) {
            return name;
        }
    }
    if v.eq_ignore_ascii_case(b"x-gzip") {
        "gzip"
    } else {
        "other"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What nginx 1.22's brotli filter (libnginx-mod-http-brotli-filter) sent for four
    /// lines of text, `Content-Encoding: br` (issue 29: br was not decoded, gzip was).
    const NGINX_BR: &[u8] = &[
        161, 184, 7, 0, 32, 234, 182, 110, 73, 11, 73, 186, 173, 253, 122, 225, 48, 29, 200, 131,
        176, 1, 7, 14, 105, 192, 22, 14, 108, 55, 150, 109, 158, 141, 178, 69, 115, 248, 83, 49, 7,
        12, 83, 71, 213, 233, 12, 48, 111, 64, 27, 21, 191, 182, 164, 72, 184, 78, 247, 70, 0,
    ];

    #[test]
    fn br_bodies_decode_like_gzip() {
        let line = "loadlab brotli: a compressible line of text for every server.\n";
        let mut out = Vec::new();
        assert!(decode("br", NGINX_BR, &mut out));
        assert_eq!(String::from_utf8(out).unwrap(), line.repeat(4));
        let mut out = Vec::new();
        assert!(!decode("br", b"not brotli at all", &mut out));
    }

    #[test]
    fn identity_is_not_compressed_and_the_others_are() {
        assert!(!is_compressed(b"identity"));
        assert!(!is_compressed(b" Identity "));
        for coding in ["gzip", "x-gzip", "br", "deflate", "zstd", "something"] {
            assert!(is_compressed(coding.as_bytes()), "{coding}");
        }
    }
}
