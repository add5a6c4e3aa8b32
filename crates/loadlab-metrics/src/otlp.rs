//! OTLP/HTTP protobuf: the interval's series as an `ExportMetricsServiceRequest`, built from
//! the `opentelemetry-proto` crate's generated types (no tonic, no SDK pipeline). Counters are
//! cumulative monotonic sums from the run's start, everything else gauges. POSTed to
//! `.../v1/metrics` with `Content-Type: application/x-protobuf`.

use crate::figures::{Series, SeriesKind};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    metric, number_data_point, AggregationTemporality, Gauge, Metric, NumberDataPoint,
    ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

pub const CONTENT_TYPE: &str = "application/x-protobuf";

fn attribute(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_string())),
        }),
        ..Default::default()
    }
}

/// The request for these series; `run_start_unix_ms` is the counters' start time.
pub fn request(series: &[Series], run_start_unix_ms: i64) -> ExportMetricsServiceRequest {
    let nanos = |ms: i64| (ms.max(0) as u64) * 1_000_000;
    let metrics = series
        .iter()
        .map(|s| {
            let point = NumberDataPoint {
                attributes: s.labels.iter().map(|(k, v)| attribute(k, v)).collect(),
                start_time_unix_nano: nanos(run_start_unix_ms),
                time_unix_nano: nanos(s.at_unix_ms),
                value: Some(number_data_point::Value::AsDouble(s.value)),
                ..Default::default()
            };
            let data = match s.kind {
                SeriesKind::Counter => metric::Data::Sum(Sum {
                    data_points: vec![point],
                    aggregation_temporality: AggregationTemporality::Cumulative as i32,
                    is_monotonic: true,
                }),
                SeriesKind::Gauge => metric::Data::Gauge(Gauge {
                    data_points: vec![point],
                }),
            };
            Metric {
                name: s.name.clone(),
                data: Some(data),
                ..Default::default()
            }
        })
        .collect();
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: vec![attribute("service.name", "loadlab")],
                ..Default::default()
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "loadlab".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                metrics,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

pub fn encode(series: &[Series], run_start_unix_ms: i64) -> Vec<u8> {
    request(series, run_start_unix_ms).encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::{IntervalFigures, RunLabels};

    #[test]
    fn otlp_round_trips_through_the_opentelemetry_proto_types() {
        let fig = IntervalFigures {
            at_unix_ms: 1_700_000_001_000,
            completed_total: 900,
            achieved_per_s: 450.0,
            failed_total_by_class: vec![("connect".into(), 2)],
            grpc_messages_total: Some((1_200, 3_000)),
            ..Default::default()
        };
        let labels = RunLabels {
            run_id: "r9".into(),
            variant: "axum".into(),
            ..Default::default()
        };
        let series = fig.to_series(&labels);
        let body = encode(&series, 1_700_000_000_000);
        let back = ExportMetricsServiceRequest::decode(body.as_slice()).unwrap();
        assert_eq!(back, request(&series, 1_700_000_000_000));
        let metrics = &back.resource_metrics[0].scope_metrics[0].metrics;
        let completed = metrics
            .iter()
            .find(|m| m.name == "loadlab_requests_completed_total")
            .unwrap();
        let Some(metric::Data::Sum(sum)) = &completed.data else {
            panic!("a counter must be a Sum")
        };
        assert!(sum.is_monotonic);
        let p = &sum.data_points[0];
        assert_eq!(p.value, Some(number_data_point::Value::AsDouble(900.0)));
        assert_eq!(p.time_unix_nano, 1_700_000_001_000_000_000);
        assert!(p.attributes.iter().any(|kv| kv.key == "variant"));
        let rate = metrics
            .iter()
            .find(|m| m.name == "loadlab_achieved_rate_per_second")
            .unwrap();
        assert!(matches!(rate.data, Some(metric::Data::Gauge(_))));
        // A gRPC run's messages are counters too: cumulative monotonic sums.
        for (name, n) in [
            ("loadlab_grpc_messages_sent_total", 1_200.0),
            ("loadlab_grpc_messages_received_total", 3_000.0),
        ] {
            let metric = metrics.iter().find(|m| m.name == name).unwrap();
            let Some(metric::Data::Sum(sum)) = &metric.data else {
                panic!("{name} must be a Sum")
            };
            assert!(sum.is_monotonic, "{name}");
            let value = sum.data_points[0].value;
            assert_eq!(value, Some(number_data_point::Value::AsDouble(n)));
        }
        let plain = IntervalFigures::default().to_series(&labels);
        assert!(plain.iter().all(|s| !s.name.starts_with("loadlab_grpc_")));
    }
}
