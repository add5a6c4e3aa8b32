//! Prometheus remote write 1.0: a protobuf `WriteRequest`, snappy block-compressed, POSTed
//! with the three headers the receiver checks. The four messages are declared here with
//! prost's derive: no maintained crate ships them without a `protoc` build step, and they are
//! small (see prometheus/prompb/types.proto and remote.proto; field numbers must match).

use crate::figures::Series;
use prost::Message;

pub const HEADERS: [(&str, &str); 3] = [
    ("Content-Encoding", "snappy"),
    ("Content-Type", "application/x-protobuf"),
    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
];

#[derive(Clone, PartialEq, Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// The request for these series: `__name__` first, labels sorted by name (the receiver
/// requires it), one sample each.
pub fn write_request(series: &[Series]) -> WriteRequest {
    WriteRequest {
        timeseries: series
            .iter()
            .map(|s| {
                let mut labels = vec![Label {
                    name: "__name__".into(),
                    value: s.name.clone(),
                }];
                labels.extend(s.labels.iter().map(|(k, v)| Label {
                    name: k.clone(),
                    value: v.clone(),
                }));
                labels.sort_by(|a, b| a.name.cmp(&b.name));
                TimeSeries {
                    labels,
                    samples: vec![Sample {
                        value: s.value,
                        timestamp: s.at_unix_ms,
                    }],
                }
            })
            .collect(),
    }
}

/// The HTTP body: the encoded request, snappy block-compressed.
pub fn encode(series: &[Series]) -> Vec<u8> {
    let raw = write_request(series).encode_to_vec();
    // Compressing a Vec in memory only fails past snappy's 4 GiB block limit.
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .unwrap_or_default()
}

/// The inverse of [`encode`], for tests and for a receiver written in Rust.
pub fn decode(body: &[u8]) -> Result<WriteRequest, String> {
    let raw = snap::raw::Decoder::new()
        .decompress_vec(body)
        .map_err(|e| format!("not a snappy block: {e}"))?;
    WriteRequest::decode(raw.as_slice()).map_err(|e| format!("not a WriteRequest: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::{IntervalFigures, RunLabels};

    #[test]
    fn remote_write_round_trips_with_sorted_labels() {
        let fig = IntervalFigures {
            at_unix_ms: 1_700_000_000_123,
            completed_total: 4242,
            failed_total_by_class: vec![("timeout".into(), 3)],
            latency_quantiles_s: vec![(0.99, 0.0125)],
            ..Default::default()
        };
        let labels = RunLabels {
            run_id: "r1".into(),
            shard: "0".into(),
            ..Default::default()
        };
        let series = fig.to_series(&labels);
        let decoded = decode(&encode(&series)).unwrap();
        assert_eq!(decoded, write_request(&series));
        let completed = decoded
            .timeseries
            .iter()
            .find(|t| t.labels[0].value == "loadlab_requests_completed_total")
            .unwrap();
        assert_eq!(completed.samples[0].value, 4242.0);
        assert_eq!(completed.samples[0].timestamp, 1_700_000_000_123);
        for ts in &decoded.timeseries {
            let names: Vec<&str> = ts.labels.iter().map(|l| l.name.as_str()).collect();
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(names, sorted);
            assert_eq!(names[0], "__name__");
        }
        assert!(decode(b"not snappy").is_err());
    }
}
