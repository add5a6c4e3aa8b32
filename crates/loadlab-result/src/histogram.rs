//! Histograms as results carry them: nanoseconds from 1 ns to one hour at 3 significant
//! digits, encoded in HdrHistogram's compressed V2 form, base64 (as HdrHistogram's own tools
//! print it), so that any two results' histograms can be added exactly.

use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Histograms count nanoseconds, from 1 ns to one hour, at 3 significant digits.
pub const HIST_MAX_NS: u64 = 3_600 * 1_000_000_000;
const HIST_SIGFIG: u8 = 3;

/// An empty histogram with the bounds every result uses.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, HIST_SIGFIG).expect("static histogram bounds")
}

/// Encodes a histogram in the compressed V2 format, base64 (as HdrHistogram's tools print it).
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    use base64::Engine as _;
    let mut bytes = Vec::new();
    // Serialising into a Vec cannot fail for a valid histogram.
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("in-memory serialisation");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes what [`encode_histogram`] produced.
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("histogram is not base64: {e}"))?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| format!("histogram does not decode: {e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_round_trip_exactly() {
        let mut h = new_histogram();
        for v in [1_000u64, 25_000, 25_001, 3_000_000, 59_000_000_000] {
            h.record(v).unwrap();
        }
        let back = decode_histogram(&encode_histogram(&h)).unwrap();
        assert_eq!(back, h);
        assert!(decode_histogram("not base64!").is_err());
    }
}
