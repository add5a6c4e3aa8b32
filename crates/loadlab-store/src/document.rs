//! A run's result document as the store keeps it: the exact bytes `loadlab run --json`
//! writes (pretty JSON and a newline, as the JSON exporter writes them), zlib-compressed, so
//! an export is a copy and never a re-serialisation that could drift. This module must not
//! touch the database or redact; it encodes and decodes.

use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use loadlab_result::RunResult;
use std::io::{Read, Write};

/// The bytes `loadlab run --json` writes for a result: pretty JSON and a newline (the JSON
/// exporter's output). The store keeps exactly these, for the redacted result.
pub fn export_text(result: &RunResult) -> String {
    let mut text = serde_json::to_string_pretty(result).expect("a result is plain data");
    text.push('\n');
    text
}

/// Deflates a document for the `result` column (`result_encoding = 'zlib'`).
pub(crate) fn compress(bytes: &[u8]) -> Vec<u8> {
    let mut z = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(bytes).expect("writing to memory");
    z.finish().expect("writing to memory")
}

/// Inflates a stored document; zlib's checksum catches a damaged one.
pub(crate) fn decompress(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    ZlibDecoder::new(bytes)
        .read_to_end(&mut out)
        .map_err(|e| format!("its compressed result does not inflate: {e}"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_inflate_to_what_was_deflated() {
        let text = b"{\n  \"a\": 1\n}\n".repeat(100);
        assert_eq!(decompress(&compress(&text)).unwrap(), text);
        let mut damaged = compress(&text);
        let last = damaged.len() - 1;
        damaged[last] ^= 0xff;
        assert!(decompress(&damaged).is_err());
    }
}
