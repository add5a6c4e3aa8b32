//! A gRPC run's own figures, beside the run's per-call ones (`measured`: one request is one
//! call, its latency the call's, from when it was due to its end): the method and how it
//! streams, the messages each way, and per-message times (the first answer, the gaps between
//! answers, a bidirectional stream's answer from when its message was due). Measured part of
//! the run only, as a scenario's steps. Histograms are kept, encoded, so shards merge exactly.

use crate::histogram::{decode_histogram, encode_histogram, new_histogram};
use crate::latency::LatencySummary;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrpcSummary {
    /// `package.Service/Method`.
    pub method: String,
    /// `unary`, `server_streaming`, `client_streaming` or `bidi_streaming`, from the schema.
    pub kind: String,
    /// Client and bidirectional streams: the messages each call sends (`--grpc-messages`);
    /// server streams: the most answers loadlab reads before it ends the call itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_per_call: Option<u64>,
    /// The messages per second each stream sends (`--grpc-message-rate`); absent: back to
    /// back (client streams) or ping-pong (bidirectional: each after the last one's answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_rate_per_s: Option<f64>,
    /// Client and bidirectional streams: how the messages went: `rate`
    /// (`message_rate_per_s`), `back_to_back`, or `ping_pong` (each after the last one's
    /// answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<String>,
    /// Request messages sent, answer messages read (whole, well framed), over every call.
    pub messages_sent: u64,
    pub messages_received: u64,
    /// Server streams loadlab ended itself (RST_STREAM CANCEL) at `messages_per_call`:
    /// counted completed.
    pub capped_calls: u64,
    /// From a call's send to its first answer message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_message_us: Option<LatencySummary>,
    /// Between one answer message and the next, in a call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_gap_us: Option<LatencySummary>,
    /// Bidirectional: the n-th answer from when the n-th message was due (by the rate's
    /// schedule, or, ping-pong, when it was sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_latency_us: Option<LatencySummary>,
    #[serde(default, skip_serializing_if = "GrpcHistograms::is_empty")]
    pub histograms: GrpcHistograms,
}

/// The three per-message histograms, encoded (see `crate::histogram`); absent when empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GrpcHistograms {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_gap: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_latency: Option<String>,
}

impl GrpcHistograms {
    pub fn is_empty(&self) -> bool {
        self.first_message.is_none() && self.message_gap.is_none() && self.message_latency.is_none()
    }
}

/// The histograms a summary is made from, in nanoseconds.
pub struct GrpcTimes<'a> {
    pub first_message: &'a hdrhistogram::Histogram<u64>,
    pub message_gap: &'a hdrhistogram::Histogram<u64>,
    pub message_latency: &'a hdrhistogram::Histogram<u64>,
}

impl GrpcSummary {
    /// Sets the per-message summaries and their encoded histograms from `times`.
    pub fn set_times(&mut self, times: GrpcTimes<'_>) {
        let encoded =
            |h: &hdrhistogram::Histogram<u64>| (!h.is_empty()).then(|| encode_histogram(h));
        self.first_message_us = LatencySummary::from_histogram(times.first_message);
        self.message_gap_us = LatencySummary::from_histogram(times.message_gap);
        self.message_latency_us = LatencySummary::from_histogram(times.message_latency);
        self.histograms = GrpcHistograms {
            first_message: encoded(times.first_message),
            message_gap: encoded(times.message_gap),
            message_latency: encoded(times.message_latency),
        };
    }
}

/// The parts' gRPC sections merged: counts summed, histograms added. None when no part has
/// one; parts that called different methods are not one run (the caller's checks refuse
/// them first), and a part without the section adds nothing.
pub fn merge(parts: &[&GrpcSummary]) -> Result<Option<GrpcSummary>, String> {
    let Some(first) = parts.first() else {
        return Ok(None);
    };
    let mut merged = (*first).clone();
    let mut hists = [new_histogram(), new_histogram(), new_histogram()];
    for p in parts {
        if p.method != first.method {
            return Err(format!(
                "the parts called different gRPC methods ({} and {})",
                first.method, p.method
            ));
        }
        let h = &p.histograms;
        for (into, text) in
            hists
                .iter_mut()
                .zip([&h.first_message, &h.message_gap, &h.message_latency])
        {
            if let Some(text) = text {
                into.add(decode_histogram(text)?)
                    .map_err(|e| format!("{e:?}"))?;
            }
        }
    }
    merged.messages_sent = parts.iter().map(|p| p.messages_sent).sum();
    merged.messages_received = parts.iter().map(|p| p.messages_received).sum();
    merged.capped_calls = parts.iter().map(|p| p.capped_calls).sum();
    merged.set_times(GrpcTimes {
        first_message: &hists[0],
        message_gap: &hists[1],
        message_latency: &hists[2],
    });
    Ok(Some(merged))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_adds_counts_and_histograms() {
        let mut h = new_histogram();
        h.record(1_000).unwrap();
        let empty = new_histogram();
        let mut a = GrpcSummary {
            method: "s/M".into(),
            kind: "bidi_streaming".into(),
            messages_per_call: Some(3),
            message_rate_per_s: None,
            pace: Some("ping_pong".into()),
            messages_sent: 3,
            messages_received: 3,
            capped_calls: 0,
            first_message_us: None,
            message_gap_us: None,
            message_latency_us: None,
            histograms: GrpcHistograms::default(),
        };
        a.set_times(GrpcTimes {
            first_message: &h,
            message_gap: &empty,
            message_latency: &h,
        });
        let merged = merge(&[&a, &a]).unwrap().unwrap();
        assert_eq!((merged.messages_sent, merged.messages_received), (6, 6));
        assert_eq!(merged.message_latency_us.unwrap().count, 2);
        assert_eq!(merged.message_gap_us, None);
        let mut b = a.clone();
        b.method = "s/N".into();
        assert!(merge(&[&a, &b])
            .unwrap_err()
            .contains("different gRPC methods"));
    }
}
