//! gRPC calls on the engine's HTTP/2 connections: against the mock upstream (tonic's codec on
//! hyper, written by no one here as far as gRPC goes) the completed count equals the server's
//! own, closed and open loop; against the testkit's scripted server every status code is its
//! own class and every hostile answer a named failure.

use loadlab_engine::grpc::{Data, GrpcSpec, DEFAULT_MAX_MESSAGE_BYTES};
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{grpc_frame, GrpcAnswer, GrpcServer};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::common;

pub(crate) fn upstream_call() -> GrpcSpec {
    GrpcSpec {
        method: "loadlab.upstream.v1.Upstream/Call".into(),
        protos: vec![
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../loadlab-upstream/proto/upstream.proto")
        ],
        includes: Vec::new(),
        reflect: None,
        data: Data::Json("{}".into()),
        deadline: None,
        gzip: false,
        max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        messages: None,
        message_rate: None,
    }
}

pub(crate) fn grpc(url: String, call: GrpcSpec) -> RunSpec {
    RunSpec {
        url,
        grpc: Some(Arc::new(call.prepare().unwrap())),
        threads: Some(2),
        ..RunSpec::default()
    }
}

/// Runs `spec` against a mock upstream on its own thread; returns the result and the
/// upstream's counts after the run.
pub(crate) fn against_upstream(
    spec: impl FnOnce(String) -> RunSpec,
) -> (RunResult, loadlab_upstream::Stats) {
    let server = loadlab_upstream::Upstream::start_on_thread(Default::default()).unwrap();
    let url = server.grpc_url().to_string();
    let r = common::run_within(spec(url), Duration::from_secs(30));
    (r, server.stop())
}

#[test]
fn unary_closed_loop_completes_exactly_what_the_server_counts() {
    let (r, up) = against_upstream(|url| RunSpec {
        connections: Some(4),
        streams: 8,
        requests: Some(3_000),
        ..grpc(url, upstream_call())
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(m.requests.completed, 3_000);
    assert_eq!(up.grpc_requests, 3_000);
    assert_eq!(up.grpc_connections, 4);
    assert_eq!(r.load.connections, 4);
    assert_eq!(r.load.protocol, "grpc");
    assert_eq!(r.load.streams, 8);
}

#[test]
fn unary_open_loop_completes_exactly_what_the_server_counts() {
    let (r, up) = against_upstream(|url| RunSpec {
        rate: Some(2_000.0),
        duration: Some(Duration::from_millis(700)),
        streams: 4,
        ..grpc(url, upstream_call())
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert!(m.requests.completed >= 1_000, "{}", m.requests.completed);
    assert_eq!(m.requests.completed, up.grpc_requests);
}

/// A run of 17 calls on one stream: call k answered with status k, once each.
#[test]
fn every_status_code_is_its_own_failure_class() {
    let mut answers = vec![GrpcAnswer::ok()];
    for code in 1..=16u32 {
        // Half trailers-only, half after headers; one message with a terminal escape.
        let message = if code == 13 {
            "boom%1B[2J".to_string()
        } else {
            format!("code%20{code}")
        };
        answers.push(if code % 2 == 0 {
            GrpcAnswer::trailers_only(code, &message)
        } else {
            GrpcAnswer::status(code, &message)
        });
    }
    let server = GrpcServer::start(answers);
    let r = common::run_within(
        RunSpec {
            connections: Some(1),
            threads: Some(1),
            requests: Some(17),
            ..grpc(server.url(), upstream_call())
        },
        Duration::from_secs(30),
    );
    let m = &r.measured;
    assert_eq!(m.requests.completed, 1);
    assert_eq!(m.requests.failed, 16);
    for name in &loadlab_engine::grpc::status::CODES[1..] {
        let key = format!("grpc_{}", name.to_ascii_lowercase());
        assert_eq!(m.errors.get(&key), Some(&1), "{key}: {:?}", m.errors);
    }
    assert_eq!(
        m.error_details["grpc_not_found"],
        "the server answered NOT_FOUND (5): code 5"
    );
    assert_eq!(
        m.error_details["grpc_internal"],
        "the server answered INTERNAL (13): boom\\u{1b}[2J"
    );
    assert_eq!(
        server
            .counters()
            .calls
            .load(std::sync::atomic::Ordering::SeqCst),
        17
    );
}

#[test]
fn hostile_answers_are_named_failures() {
    let huge = bytes::Bytes::from_static(&[0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3]);
    let cut = bytes::Bytes::from_static(&[0, 0, 0, 0, 9, 1]);
    let mut compressed = grpc_frame(b"x").to_vec();
    compressed[0] = 1;
    let answers = vec![
        GrpcAnswer::ok_with_data(vec![huge]),
        GrpcAnswer::ok_with_data(vec![cut]),
        GrpcAnswer::ok_with_data(vec![compressed.into()]),
        GrpcAnswer {
            trailers: None,
            ..GrpcAnswer::ok()
        },
        GrpcAnswer {
            http_status: 503,
            headers: vec![("content-type", "text/html".into())],
            data: vec![bytes::Bytes::from_static(b"<html>busy</html>")],
            trailers: None,
            ..GrpcAnswer::ok()
        },
    ];
    let server = GrpcServer::start(answers);
    let r = common::run_within(
        RunSpec {
            connections: Some(1),
            threads: Some(1),
            requests: Some(5),
            ..grpc(server.url(), upstream_call())
        },
        Duration::from_secs(30),
    );
    let m = &r.measured;
    assert_eq!(
        m.errors.get("malformed_response"),
        Some(&4),
        "{:?}",
        m.errors
    );
    assert_eq!(m.errors.get("grpc_unavailable"), Some(&1), "{:?}", m.errors);
    assert!(m.error_details["grpc_unavailable"].contains("HTTP status 503"));
    // The first malformed answer is the one kept: the 4 GiB prefix, refused unread.
    assert!(
        m.error_details["malformed_response"].contains("4294967295 bytes"),
        "{:?}",
        m.error_details
    );
}

#[test]
fn metadata_deadline_and_gzip_go_with_every_call() {
    let server = GrpcServer::start(vec![GrpcAnswer::ok()]);
    let call = GrpcSpec {
        deadline: Some(Duration::from_millis(1500)),
        gzip: true,
        ..upstream_call()
    };
    let r = common::run_within(
        RunSpec {
            connections: Some(1),
            requests: Some(3),
            headers: vec!["x-test: yes".into()],
            ..grpc(server.url(), call)
        },
        Duration::from_secs(30),
    );
    assert_eq!(r.measured.requests.completed, 3, "{:?}", r.measured.errors);
    let seen = server.counters().last_headers.lock().unwrap().clone();
    for pair in [
        ("grpc-timeout", "1500000u"),
        ("grpc-encoding", "gzip"),
        ("x-test", "yes"),
    ] {
        assert!(
            seen.contains(&(pair.0.into(), pair.1.into())),
            "{pair:?} in {seen:?}"
        );
    }
}

/// An HTTP/1.1 server is told apart at once: no gRPC call is counted as sent to it.
#[test]
fn an_http1_server_is_a_protocol_error_saying_so() {
    let server = loadlab_testkit::TestServer::start(loadlab_testkit::Behavior::Fixed(
        loadlab_testkit::response(200, "ok"),
    ));
    let r = common::run_within(
        RunSpec {
            connections: Some(1),
            requests: Some(3),
            ..grpc(format!("http://{}", server.addr()), upstream_call())
        },
        Duration::from_secs(30),
    );
    let m = &r.measured;
    assert_eq!(m.requests.completed, 0);
    assert_eq!(m.requests.failed, 3, "{:?}", m.errors);
    let detail = m.error_details.values().next().cloned().unwrap_or_default();
    assert!(detail.contains("HTTP/1"), "{:?}", m.error_details);
}

/// The server's deadline and loadlab's own timeout are told apart; a reset stream is the
/// server's RST_STREAM, with its code.
#[test]
fn deadline_exceeded_timeout_and_reset_are_three_classes() {
    let answers = vec![
        GrpcAnswer::trailers_only(4, "Deadline%20Exceeded"),
        GrpcAnswer {
            delay: Duration::from_secs(5),
            ..GrpcAnswer::ok()
        },
        GrpcAnswer {
            reset: Some(h2::Reason::CANCEL),
            ..GrpcAnswer::ok()
        },
    ];
    let server = GrpcServer::start(answers);
    let call = GrpcSpec {
        deadline: Some(Duration::from_millis(100)),
        ..upstream_call()
    };
    let r = common::run_within(
        RunSpec {
            connections: Some(1),
            threads: Some(1),
            requests: Some(3),
            timeout: Duration::from_millis(150),
            ..grpc(server.url(), call)
        },
        Duration::from_secs(30),
    );
    let m = &r.measured;
    for class in ["grpc_deadline_exceeded", "request_timeout", "stream_reset"] {
        assert_eq!(m.errors.get(class), Some(&1), "{class}: {:?}", m.errors);
    }
    assert!(
        m.error_details["stream_reset"].contains("CANCEL"),
        "{:?}",
        m.error_details
    );
}

/// Over TLS, h2 agreed by ALPN, with the TLS flags of any https run.
#[test]
fn unary_over_tls() {
    let ca = loadlab_testkit::TestCa::new();
    let server = GrpcServer::start_tls(vec![GrpcAnswer::ok()], &ca);
    let r = common::run_within(
        RunSpec {
            connections: Some(2),
            streams: 4,
            requests: Some(200),
            tls: loadlab_engine::tls::TlsSpec {
                ca_pem: Some(ca.pem().into_bytes()),
                ..Default::default()
            },
            ..grpc(
                format!("https://localhost:{}", server.addr().port()),
                upstream_call(),
            )
        },
        Duration::from_secs(30),
    );
    let m = &r.measured;
    assert_eq!(
        m.requests.completed, 200,
        "{:?} {:?}",
        m.errors, m.error_details
    );
    assert_eq!(m.tls_full + m.tls_resumed, 2);
    let calls = server
        .counters()
        .calls
        .load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(calls, 200);
}

/// The descriptors of the upstream's `.proto` (last) and, `with_imports`, its imports,
/// serialized, as a server's reflection sends them: the testkit answers a question by the
/// service's name with its file alone, so the client asks for each import by name.
pub(crate) fn upstream_descriptors(with_imports: bool) -> Vec<Vec<u8>> {
    use prost::Message as _;
    let proto = upstream_call().protos[0].clone();
    let mut compiler = protox::Compiler::new([proto.parent().unwrap()]).unwrap();
    compiler.include_imports(with_imports);
    compiler.open_file(&proto).unwrap();
    let set = compiler.file_descriptor_set();
    set.file.iter().map(|f| f.encode_to_vec()).collect()
}

fn reflecting(server: &GrpcServer) -> GrpcSpec {
    GrpcSpec {
        protos: Vec::new(),
        reflect: Some(loadlab_engine::grpc::reflect::Target {
            host: "127.0.0.1".into(),
            port: server.addr().port(),
            authority: server.addr().to_string(),
            tls: None,
            timeout: Duration::from_secs(5),
        }),
        ..upstream_call()
    }
}

#[test]
fn reflection_gives_the_schema_v1_or_v1alpha() {
    let v1 = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
    let v1alpha = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";
    for path in [v1, v1alpha] {
        let files = upstream_descriptors(true);
        let server = GrpcServer::start_reflecting(vec![GrpcAnswer::ok()], path, files);
        let call = reflecting(&server).prepare();
        let call = call.unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(call.path, "/loadlab.upstream.v1.Upstream/Call");
        assert_eq!(call.output, "google.protobuf.BytesValue");
    }
}

#[test]
fn reflection_refused_or_incomplete_is_an_error_saying_so() {
    let server = GrpcServer::start(vec![GrpcAnswer::ok()]);
    let err = reflecting(&server).prepare().unwrap_err().to_string();
    assert!(
        err.starts_with("--reflect: the server does not serve reflection"),
        "{err}"
    );
    assert!(err.contains("--proto"), "{err}");
    // A server whose reflection sends the service's file but never its imports.
    let v1 = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
    let only_service = upstream_descriptors(false);
    let server = GrpcServer::start_reflecting(vec![GrpcAnswer::ok()], v1, only_service);
    let err = reflecting(&server).prepare().unwrap_err().to_string();
    assert!(err.contains("did not send google/protobuf/"), "{err}");
}

/// Reflection over TLS: the target built from an https URL with the run's TLS settings, then
/// the run itself over the same TLS.
#[test]
fn reflection_and_calls_over_tls() {
    let ca = loadlab_testkit::TestCa::new();
    let v1 = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
    let files = upstream_descriptors(true);
    let server = GrpcServer::start_reflecting_tls(vec![GrpcAnswer::ok()], v1, files, &ca);
    let url = format!("https://localhost:{}", server.addr().port());
    let tls = loadlab_engine::tls::TlsSpec {
        ca_pem: Some(ca.pem().into_bytes()),
        ..Default::default()
    };
    let target = loadlab_engine::grpc::reflect::Target::new(&url, &tls, Duration::from_secs(5));
    let call = GrpcSpec {
        protos: Vec::new(),
        reflect: Some(target.unwrap()),
        ..upstream_call()
    };
    let r = common::run_within(
        RunSpec {
            url,
            tls,
            connections: Some(1),
            requests: Some(50),
            grpc: Some(Arc::new(call.prepare().unwrap())),
            ..RunSpec::default()
        },
        Duration::from_secs(30),
    );
    assert_eq!(r.measured.requests.completed, 50, "{:?}", r.measured.errors);
    let calls = server
        .counters()
        .calls
        .load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(calls, 50);
}
