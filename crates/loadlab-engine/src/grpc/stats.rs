//! A gRPC run's per-message figures, beside the run's per-call ones (a call is a request:
//! its latency, status and failures are the recorder's usual figures). One per worker thread,
//! held by its [`crate::stats::Recorder`] as a scenario's steps are, merged after the run,
//! measured part only; made into the result's `grpc` section by [`summarize`].

use crate::stats::new_histogram;
use hdrhistogram::Histogram;
use loadlab_result::grpc::{GrpcHistograms, GrpcSummary, GrpcTimes};

#[derive(Debug, Clone)]
pub struct GrpcStats {
    pub messages_sent: u64,
    pub messages_received: u64,
    /// Server streams ended by loadlab at the per-call cap.
    pub capped: u64,
    /// From a call's send to its first answer message, in nanoseconds.
    pub first_message: Histogram<u64>,
    /// Between consecutive answer messages of a call.
    pub gap: Histogram<u64>,
    /// Bidirectional: the n-th answer from when the n-th message was due.
    pub message_latency: Histogram<u64>,
}

impl Default for GrpcStats {
    fn default() -> Self {
        GrpcStats {
            messages_sent: 0,
            messages_received: 0,
            capped: 0,
            first_message: new_histogram(),
            gap: new_histogram(),
            message_latency: new_histogram(),
        }
    }
}

impl GrpcStats {
    pub fn merge(&mut self, o: &GrpcStats) {
        self.messages_sent += o.messages_sent;
        self.messages_received += o.messages_received;
        self.capped += o.capped;
        for (a, b) in [
            (&mut self.first_message, &o.first_message),
            (&mut self.gap, &o.gap),
            (&mut self.message_latency, &o.message_latency),
        ] {
            a.add(b).expect("same histogram bounds");
        }
    }
}

/// The result's `grpc` section: every gRPC run has one (the method and its kind); the
/// per-message figures when the thread recorded some.
pub fn summarize(config: &crate::RunConfig, stats: Option<&GrpcStats>) -> Option<GrpcSummary> {
    let call = config.grpc.as_ref()?;
    let mut summary = GrpcSummary {
        method: call.method.clone(),
        kind: call.kind.key().to_string(),
        messages_per_call: call.messages,
        message_rate_per_s: call
            .message_interval
            .filter(|i| !i.is_zero())
            .map(|i| 1.0 / i.as_secs_f64()),
        pace: call.kind.client_streams().then(|| {
            match (call.message_interval, call.kind) {
                (Some(i), _) if !i.is_zero() => "rate",
                (None, crate::grpc::CallKind::Bidi) => "ping_pong",
                _ => "back_to_back",
            }
            .to_string()
        }),
        messages_sent: 0,
        messages_received: 0,
        capped_calls: 0,
        first_message_us: None,
        message_gap_us: None,
        message_latency_us: None,
        histograms: GrpcHistograms::default(),
    };
    if let Some(s) = stats {
        summary.messages_sent = s.messages_sent;
        summary.messages_received = s.messages_received;
        summary.capped_calls = s.capped;
        summary.set_times(GrpcTimes {
            first_message: &s.first_message,
            message_gap: &s.gap,
            message_latency: &s.message_latency,
        });
    }
    Some(summary)
}
