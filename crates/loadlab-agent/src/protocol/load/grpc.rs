//! A gRPC load's call as it travels to a fleet's generator: the schema as a compiled
//! descriptor set (`FileDescriptorSet`, the coordinator's `--proto` files or what `--reflect`
//! asked of the server, once, there), the request message encoded, and the call's options.
//! No `.proto` path crosses: the generator rebuilds the call from these alone, through the
//! same preparation as the coordinator's (`GrpcSpec::prepare_from_descriptors`), every
//! check made again.

use super::{ns, MAX_SCENARIO_FILE_BYTES};
use loadlab_engine::grpc::{Call, Data, GrpcSpec};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `--grpc` and its group, as they travel (durations in nanoseconds).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct WireGrpc {
    /// `package.Service/Method`.
    pub method: String,
    /// The schema, a `FileDescriptorSet` in protobuf bytes, base64.
    pub schema_b64: String,
    /// The request message, encoded and unframed, base64.
    pub message_b64: String,
    pub deadline_ns: Option<u64>,
    /// `--compression gzip`.
    pub gzip: bool,
    pub max_message_bytes: u32,
    /// `--grpc-messages`, the default filled in for client and bidirectional streams.
    pub messages: Option<u64>,
    /// The time between a stream's messages (`--grpc-message-rate`), 0 for back to back;
    /// absent: back to back or ping-pong, as the kind's default.
    pub message_interval_ns: Option<u64>,
}

impl WireGrpc {
    /// `call` ready to travel; one whose schema and message are too large for a load is
    /// refused, saying so.
    pub fn of(call: &Call) -> Result<WireGrpc, String> {
        use base64::Engine as _;
        let total = call.schema.len() + call.message.len();
        if total > MAX_SCENARIO_FILE_BYTES {
            return Err(format!(
                "the gRPC schema and request message weigh {:.1} MiB, more than a generator \
                 takes ({:.1} MiB): send a smaller message, or run it from one loadlab",
                total as f64 / 1_048_576.0,
                MAX_SCENARIO_FILE_BYTES as f64 / 1_048_576.0
            ));
        }
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        Ok(WireGrpc {
            method: call.method.clone(),
            schema_b64: b64(&call.schema),
            message_b64: b64(&call.message),
            deadline_ns: call.deadline.map(ns),
            // The frame's compressed flag: set exactly when the call was prepared with gzip.
            gzip: call.body.first() == Some(&1),
            max_message_bytes: call.max_message_bytes,
            messages: call.messages,
            message_interval_ns: call.message_interval.map(ns),
        })
    }

    /// The call, rebuilt on the generator from what travelled.
    pub fn call(&self) -> Result<Call, String> {
        use base64::Engine as _;
        let decode = |field: &str, b64: &str| {
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| format!("load.grpc.{field} is not base64: {e}"))
        };
        let schema = decode("schema_b64", &self.schema_b64)?;
        let interval = self.message_interval_ns.map(Duration::from_nanos);
        let spec = GrpcSpec {
            method: self.method.clone(),
            protos: Vec::new(),
            includes: Vec::new(),
            reflect: None,
            data: Data::Binary(decode("message_b64", &self.message_b64)?),
            deadline: self.deadline_ns.map(Duration::from_nanos),
            gzip: self.gzip,
            max_message_bytes: self.max_message_bytes,
            messages: self.messages,
            // Checked here against the method's kind; the exact interval is set below (a
            // rate's reciprocal would round it).
            message_rate: interval.map(|d| match d.is_zero() {
                true => f64::INFINITY,
                false => 1.0 / d.as_secs_f64(),
            }),
        };
        // The error names the CLI's flag, as the coordinator's would: the same check.
        let mut call = spec
            .prepare_from_descriptors(&schema)
            .map_err(|e| format!("load.grpc: {e}"))?;
        call.message_interval = interval;
        Ok(call)
    }
}
