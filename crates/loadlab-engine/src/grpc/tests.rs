//! `GrpcSpec::prepare` on real files: the upstream's own `.proto`, and small ones written
//! for each bad input, each rejection checked for the words that name the problem.

use super::*;
use std::path::Path;

/// A folder of `.proto` files for one test, removed when dropped.
struct Protos(PathBuf);

impl Protos {
    fn new(name: &str, files: &[(&str, &str)]) -> Protos {
        let dir = std::env::temp_dir().join(format!("loadlab-grpc-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (file, text) in files {
            let path = dir.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Protos(dir)
    }
    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for Protos {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const ECHO: &str = r#"
syntax = "proto3";
package t.v1;
import "msgs/req.proto";
service Echo {
  rpc Say(t.v1.Req) returns (t.v1.Req);
  rpc Watch(t.v1.Req) returns (stream t.v1.Req);
  rpc Gather(stream t.v1.Req) returns (t.v1.Req);
  rpc Chat(stream t.v1.Req) returns (stream t.v1.Req);
}
"#;
const REQ: &str = r#"
syntax = "proto3";
package t.v1;
message Req { string name = 1; int32 count = 2; }
"#;

fn spec(protos: Vec<PathBuf>, includes: Vec<PathBuf>, method: &str, json: &str) -> GrpcSpec {
    GrpcSpec {
        method: method.into(),
        protos,
        includes,
        reflect: None,
        data: Data::Json(json.into()),
        deadline: None,
        gzip: false,
        max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        messages: None,
        message_rate: None,
    }
}

fn upstream_proto() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../loadlab-upstream/proto/upstream.proto")
}

#[test]
fn the_upstreams_call_with_well_known_imports() {
    let s = spec(
        vec![upstream_proto()],
        vec![],
        "loadlab.upstream.v1.Upstream/Call",
        "{}",
    );
    let call = s.prepare().unwrap();
    assert_eq!(call.path, "/loadlab.upstream.v1.Upstream/Call");
    assert_eq!(call.kind, CallKind::Unary);
    // Empty encodes to nothing: a prefix alone.
    assert_eq!(&call.body[..], &[0, 0, 0, 0, 0]);
    assert_eq!(call.output, "google.protobuf.BytesValue");
}

#[test]
fn json_is_encoded_and_imports_found_through_includes() {
    let p = Protos::new(
        "ok",
        &[("api/echo.proto", ECHO), ("inc/msgs/req.proto", REQ)],
    );
    let mut s = spec(
        vec![p.path("api/echo.proto")],
        vec![p.path("inc")],
        "/t.v1.Echo/Say",
        r#"{"name": "a", "count": 3}"#,
    );
    s.deadline = Some(Duration::from_millis(1500));
    let call = s.prepare().unwrap();
    // Field 1 (string "a"), field 2 (varint 3).
    assert_eq!(&call.body[..], &[0, 0, 0, 0, 5, 0x0a, 1, b'a', 0x10, 3]);
    assert!(call
        .headers
        .contains(&("grpc-timeout".into(), "1500000u".into())));
    s.gzip = true;
    let call = s.prepare().unwrap();
    assert_eq!(call.body[0], 1);
    assert!(call
        .headers
        .contains(&("grpc-encoding".into(), "gzip".into())));
}

#[test]
fn bad_input_is_named() {
    let p = Protos::new(
        "bad",
        &[
            ("api/echo.proto", ECHO),
            ("inc/msgs/req.proto", REQ),
            (
                "broken.proto",
                "syntax = \"proto3\";\nmessage M { int32 x = ; }\n",
            ),
        ],
    );
    let echo = || vec![p.path("api/echo.proto")];
    let inc = || vec![p.path("inc")];
    let cases: Vec<(GrpcSpec, &str)> = vec![
        (
            spec(vec![], vec![], "t.v1.Echo/Say", "{}"),
            "needs the service's schema",
        ),
        (
            spec(vec![p.path("nope.proto")], vec![], "a/b", "{}"),
            "is not a file",
        ),
        (
            spec(vec![p.path("broken.proto")], vec![], "a/b", "{}"),
            "broken.proto: expected an integer, but found ';' (line 2, column 23)",
        ),
        // The import is under a folder not given with -I.
        (
            spec(echo(), vec![], "t.v1.Echo/Say", "{}"),
            "msgs/req.proto",
        ),
        (spec(echo(), inc(), "Say", "{}"), "is not SERVICE/METHOD"),
        (
            spec(echo(), inc(), "t.v1.Nope/Say", "{}"),
            "they declare: t.v1.Echo",
        ),
        (
            spec(echo(), inc(), "t.v1.Echo/Shout", "{}"),
            "it has: Say, Watch, Gather, Chat",
        ),
        (
            GrpcSpec {
                messages: Some(3),
                ..spec(echo(), inc(), "t.v1.Echo/Say", "{}")
            },
            "--grpc-messages: t.v1.Echo.Say is a unary method: one message each way",
        ),
        (
            GrpcSpec {
                message_rate: Some(10.0),
                ..spec(echo(), inc(), "t.v1.Echo/Watch", "{}")
            },
            "--grpc-message-rate: t.v1.Echo.Watch is a server streaming method: the client \
             sends one message per call",
        ),
        (
            GrpcSpec {
                messages: Some(0),
                ..spec(echo(), inc(), "t.v1.Echo/Chat", "{}")
            },
            "--grpc-messages: must be at least 1",
        ),
        (
            GrpcSpec {
                message_rate: Some(-1.0),
                ..spec(echo(), inc(), "t.v1.Echo/Chat", "{}")
            },
            "`-1` is not a rate",
        ),
        (
            spec(echo(), inc(), "t.v1.Echo/Say", r#"{"nam": "a"}"#),
            "nam",
        ),
        (
            spec(echo(), inc(), "t.v1.Echo/Say", r#"{"count": "x"}"#),
            "t.v1.Req",
        ),
        (spec(echo(), inc(), "t.v1.Echo/Say", r#"{} {}"#), "trailing"),
    ];
    for (s, words) in cases {
        let err = s.prepare().unwrap_err().to_string();
        assert!(err.contains(words), "{:?}: {err}", s.method);
    }
    let mut s = spec(echo(), inc(), "t.v1.Echo/Say", "{}");
    s.data = Data::Binary(vec![0xff, 0xff]);
    let err = s.prepare().unwrap_err().to_string();
    assert!(err.contains("does not decode as t.v1.Req"), "{err}");
    s.data = Data::Binary(vec![0x0a, 1, b'z']);
    assert_eq!(&s.prepare().unwrap().body[5..], &[0x0a, 1, b'z']);
}

#[test]
fn streaming_kinds_come_from_the_schema_with_their_plans() {
    let p = Protos::new(
        "streams",
        &[("api/echo.proto", ECHO), ("inc/msgs/req.proto", REQ)],
    );
    let prepared = |method: &str, messages: Option<u64>, rate: Option<f64>| {
        let s = GrpcSpec {
            messages,
            message_rate: rate,
            ..spec(
                vec![p.path("api/echo.proto")],
                vec![p.path("inc")],
                method,
                "{}",
            )
        };
        let c = s.prepare().unwrap();
        (c.kind, c.messages, c.message_interval, c.method)
    };
    assert_eq!(
        prepared("t.v1.Echo/Watch", None, None),
        (
            CallKind::ServerStreaming,
            None,
            None,
            "t.v1.Echo/Watch".into()
        )
    );
    assert_eq!(prepared("t.v1.Echo/Watch", Some(5), None).1, Some(5));
    // A client stream's default count; a rate is an interval.
    assert_eq!(
        prepared("t.v1.Echo/Gather", None, None),
        (
            CallKind::ClientStreaming,
            Some(DEFAULT_STREAM_MESSAGES),
            None,
            "t.v1.Echo/Gather".into()
        )
    );
    assert_eq!(
        prepared("t.v1.Echo/Chat", None, Some(f64::INFINITY)).2,
        Some(Duration::ZERO)
    );
    assert_eq!(
        prepared("t.v1.Echo/Chat", Some(4), Some(200.0)),
        (
            CallKind::Bidi,
            Some(4),
            Some(Duration::from_millis(5)),
            "t.v1.Echo/Chat".into()
        )
    );
}
