//! The wire load both ways: every setting crosses whole, an older peer's load reads as it
//! meant, and what cannot travel is refused.

use super::*;

#[test]
fn a_load_crosses_the_wire_whole() {
    let spec = RunSpec {
        url: "https://10.0.0.5:8443/plaintext".into(),
        method: "POST".into(),
        headers: vec!["x-a: 1".into()],
        body: vec![0, 159, 146, 150, 255],
        connections: Some(30),
        duration: Some(Duration::from_millis(2500)),
        rate: Some(1234.5),
        arrival: loadlab_engine::schedule::Arrival::Poisson { seed: 7 },
        tick: Duration::from_micros(50),
        tls: TlsSpec {
            ca_pem: Some(b"-----BEGIN CERTIFICATE-----\n".to_vec()),
            version: Some(TlsVersion::V1_3),
            ..TlsSpec::default()
        },
        http3: true,
        http3_0rtt: true,
        streams: 8,
        pipeline: 4,
        paths: vec!["/a".into(), "/b?x=1".into()],
        pace: Some(Duration::from_millis(5)),
        seed: 99,
        ..RunSpec::default()
    };
    let shard = Shard { index: 1, count: 3 };
    let wire = WireLoad::from_spec(&spec, shard).unwrap();
    let json = serde_json::to_string(&wire).unwrap();
    let back: WireLoad = serde_json::from_str(&json).unwrap();
    let spec2 = back.to_spec().unwrap();
    assert_eq!(spec2.body, spec.body);
    assert_eq!(spec2.duration, spec.duration);
    assert_eq!(spec2.tick, spec.tick);
    assert_eq!(spec2.rate, spec.rate);
    assert_eq!(spec2.paths, spec.paths);
    assert_eq!(spec2.tls.ca_pem, spec.tls.ca_pem);
    assert!(matches!(spec2.tls.version, Some(TlsVersion::V1_3)));
    assert!(matches!(
        spec2.arrival,
        loadlab_engine::schedule::Arrival::Poisson { seed: 7 }
    ));
    assert_eq!(spec2.shard, Some(shard));
    assert_eq!(spec2.pace, spec.pace);
    // The protocol and its settings: a generator that dropped them would speak HTTP/1.1.
    assert!(spec2.http3 && spec2.http3_0rtt && !spec2.http2);
    assert_eq!(spec2.streams, 8);
    // A generator that dropped the pipeline's depth would send a quarter of the load.
    assert_eq!(spec2.pipeline, 4);
    // A load from a coordinator that knew no HTTP/3 reads as HTTP/1.1 or HTTP/2.
    let mut old = serde_json::to_value(&wire).unwrap();
    let fields = old.as_object_mut().unwrap();
    fields.remove("http3");
    fields.remove("http3_0rtt");
    fields.remove("pipeline");
    let old: WireLoad = serde_json::from_value(old).unwrap();
    assert!(!old.http3 && !old.http3_0rtt);
    assert_eq!(
        old.pipeline, 1,
        "an older coordinator's load does not pipeline"
    );
    assert!(
        !json.contains("\"grpc\""),
        "an HTTP load reads as before to an older generator"
    );
    let mut bad = back.clone();
    bad.shard_index = 3;
    assert!(bad.to_spec().unwrap_err().contains("shard"));
}

#[test]
fn a_scenario_crosses_the_wire_with_its_files_and_too_big_a_one_is_refused() {
    use loadlab_engine::scenario::{Scenario, ScenarioSource};
    let source = ScenarioSource {
        text: "name = \"s\"\n[[feeders]]\nfile = \"u.csv\"\n[[steps]]\nname = \"a\"\n\
               url = \"http://127.0.0.1:1/u/{{USER}}\"\n"
            .into(),
        overrides: vec![("X".into(), "1".into())],
        files: [("u.csv".to_string(), b"USER\nann\nbob\n".to_vec())].into(),
        grpc_descriptors: None,
    };
    let here = std::sync::Arc::new(Scenario::from_source(&source).unwrap());
    let spec = RunSpec {
        connections: Some(4),
        scenario: Some(here.clone()),
        ..RunSpec::default()
    };
    let wire = WireLoad::from_spec(&spec, Shard { index: 1, count: 2 }).unwrap();
    let back: WireLoad = serde_json::from_slice(&serde_json::to_vec(&wire).unwrap()).unwrap();
    let there = back.to_spec().unwrap().scenario.unwrap();
    assert_eq!(format!("{there:?}"), format!("{here:?}"));
    assert_eq!(there.source.files["u.csv"], b"USER\nann\nbob\n");

    let mut big = source.clone();
    big.files
        .insert("big.csv".into(), vec![b'x'; MAX_SCENARIO_FILE_BYTES]);
    let e = WireScenario::of(&big).unwrap_err();
    assert!(e.contains("more than a generator takes"), "{e}");
    // A file sent under another name than the scenario gives it is not looked for on disk.
    let mut renamed = back.scenario.clone().unwrap();
    renamed.files[0].name = "/etc/passwd".into();
    let e = renamed.compile().unwrap_err();
    assert!(e.contains("u.csv did not come with the scenario"), "{e}");
}

/// A scenario's gRPC steps cross with the schema the coordinator resolved (its `.proto`
/// files compiled there): the generator's scenario reads the descriptors, no path. Without
/// them (an older coordinator) the `.proto` files are refused, saying why.
#[test]
fn a_scenarios_grpc_schema_crosses_as_descriptors() {
    use loadlab_engine::scenario::grpc::GrpcSchema;
    use loadlab_engine::scenario::{Scenario, ScenarioSource};
    let source = ScenarioSource {
        text: "name = \"s\"\nbase_url = \"http://127.0.0.1:1\"\n[grpc]\nproto = [\"a.proto\"]\n\
               [[steps]]\nname = \"a\"\ngrpc = \"t.v1.S/M\"\n"
            .into(),
        ..ScenarioSource::default()
    };
    let e = Scenario::from_source(&source).unwrap_err().to_string();
    assert!(e.contains("came without their compiled schema"), "{e}");
    let set: std::sync::Arc<[u8]> = vec![0x0a, 0x01, b'x'].into();
    let mut here = source.clone();
    here.grpc_descriptors = Some(set.clone());
    let wire = WireScenario::of(&here).unwrap();
    let back: WireScenario = serde_json::from_slice(&serde_json::to_vec(&wire).unwrap()).unwrap();
    let there = back.compile().unwrap();
    assert_eq!(there.grpc, Some(GrpcSchema::Compiled(set)));
    // A scenario without gRPC steps carries no such field (it reads as before).
    let json = serde_json::to_string(&WireScenario::of(&ScenarioSource::default()).unwrap());
    assert!(!json.unwrap().contains("grpc_descriptors"));
}

/// A WebSocket load's settings cross whole (a generator that dropped them ran a hold or a
/// connect load as echo); an older coordinator's WebSocket load, without them, is refused; an
/// HTTP load carries no `ws` field, so it reads as before to an older generator.
#[test]
fn a_websocket_load_crosses_with_its_settings_and_an_older_ones_is_refused() {
    let shard = Shard { index: 1, count: 2 };
    let spec = RunSpec {
        url: "WSS://127.0.0.1:1/chat".into(),
        connections: Some(10),
        duration: Some(Duration::from_secs(3)),
        ws: WsSpec {
            mode: WsMode::Hold,
            binary: true,
            size: Some(512),
            ping: Some(Duration::from_millis(1500)),
            held: None,
            connect_rate: Some(250.0),
            no_deflate: true,
        },
        ..RunSpec::default()
    };
    let wire = WireLoad::from_spec(&spec, shard).unwrap();
    let json = serde_json::to_value(&wire).unwrap();
    let back: WireLoad = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(back.to_spec().unwrap().ws, spec.ws);
    for mode in [WsMode::Echo, WsMode::Connect] {
        let spec = RunSpec {
            ws: WsSpec {
                mode,
                ..WsSpec::default()
            },
            ..spec.clone()
        };
        let back = WireLoad::from_spec(&spec, shard)
            .unwrap()
            .to_spec()
            .unwrap();
        assert_eq!(back.ws.mode, mode);
    }
    // An HTTP URL with --ws-* travels too: the generator then refuses it as loadlab does.
    let http = RunSpec {
        url: "http://127.0.0.1:1/".into(),
        ..spec.clone()
    };
    assert_eq!(
        WireLoad::from_spec(&http, shard)
            .unwrap()
            .to_spec()
            .unwrap()
            .ws,
        spec.ws
    );

    // From a coordinator that knew no WebSocket fleet: refused, not run as echo.
    let mut old = json.clone();
    old.as_object_mut().unwrap().remove("ws");
    let old: WireLoad = serde_json::from_value(old).unwrap();
    let e = old.to_spec().unwrap_err();
    assert!(
        e.contains("load.ws is missing") && e.contains("too old"),
        "{e}"
    );
    let mut bad = json;
    bad["ws"]["mode"] = "storm\u{1b}[2J".into();
    let bad: WireLoad = serde_json::from_value(bad).unwrap();
    let e = bad.to_spec().unwrap_err();
    assert!(e.contains("load.ws.mode \"storm\\u{1b}[2J\" is not"), "{e}");

    // An HTTP load reads to an older generator as before: no `ws` field at all.
    let plain = RunSpec {
        url: "http://127.0.0.1:1/".into(),
        ..RunSpec::default()
    };
    let plain = serde_json::to_value(WireLoad::from_spec(&plain, shard).unwrap()).unwrap();
    assert!(plain.get("ws").is_none(), "{plain}");
    let read: WireLoad = serde_json::from_value(plain).unwrap();
    assert_eq!(read.to_spec().unwrap().ws, WsSpec::default());
}

/// `--ws-held` travels as the whole run's count (each shard holds its share), and is left
/// out of a load without it, which then reads as before to an older generator.
#[test]
fn a_load_with_ws_held_crosses_with_its_count() {
    let spec = RunSpec {
        url: "ws://127.0.0.1:1/".into(),
        rate: Some(100.0),
        duration: Some(Duration::from_secs(3)),
        ws: WsSpec {
            held: Some(500),
            ..WsSpec::default()
        },
        ..RunSpec::default()
    };
    let wire = WireLoad::from_spec(&spec, Shard { index: 0, count: 2 }).unwrap();
    let json = serde_json::to_value(&wire).unwrap();
    assert_eq!(json["ws"]["held"], 500);
    let back: WireLoad = serde_json::from_value(json).unwrap();
    assert_eq!(back.to_spec().unwrap().ws.held, Some(500));
    let plain = RunSpec {
        ws: WsSpec::default(),
        ..spec
    };
    let json =
        serde_json::to_value(WireLoad::from_spec(&plain, Shard { index: 0, count: 2 }).unwrap())
            .unwrap();
    assert!(json["ws"].get("held").is_none(), "{json}");
    assert!(json["ws"].get("connect_rate").is_none(), "{json}");
}

/// `--ws-connect-rate` travels as the whole run's rate (each shard opens its connections'
/// places in the whole schedule).
#[test]
fn a_held_load_crosses_with_its_connect_rate() {
    let spec = RunSpec {
        url: "ws://127.0.0.1:1/".into(),
        connections: Some(1_000),
        duration: Some(Duration::from_secs(3)),
        ws: WsSpec {
            mode: WsMode::Hold,
            connect_rate: Some(500.0),
            ..WsSpec::default()
        },
        ..RunSpec::default()
    };
    let json =
        serde_json::to_value(WireLoad::from_spec(&spec, Shard { index: 1, count: 2 }).unwrap())
            .unwrap();
    assert_eq!(json["ws"]["connect_rate"], 500.0);
    let back: WireLoad = serde_json::from_value(json).unwrap();
    assert_eq!(back.to_spec().unwrap().ws.connect_rate, Some(500.0));
}

/// A gRPC run's call travels with its schema (the descriptor set, no path) and its message,
/// and the generator's call, rebuilt from them alone, is the coordinator's: the method, the
/// kind, the framed (gzip) message, the deadline's header, the exact message interval. What
/// does not rebuild is refused naming the field.
#[test]
fn a_grpc_call_crosses_the_wire_with_its_schema() {
    use loadlab_engine::grpc::{Data, GrpcSpec};
    let dir = loadlab_testkit::ScratchDir::new("wire-grpc");
    let proto = dir.join("chat.proto");
    std::fs::write(
        &proto,
        "syntax = \"proto3\";\npackage t.v1;\nimport \"google/protobuf/wrappers.proto\";\n\
         service Room { rpc Talk(stream google.protobuf.StringValue) returns \
         (stream google.protobuf.StringValue); }\n",
    )
    .unwrap();
    let here = GrpcSpec {
        method: "t.v1.Room/Talk".into(),
        protos: vec![proto.clone()],
        includes: Vec::new(),
        reflect: None,
        data: Data::Json(r#""hi""#.into()),
        deadline: Some(Duration::from_millis(250)),
        gzip: true,
        max_message_bytes: 1000,
        messages: Some(7),
        // 1/3 s: a rate's reciprocal would not come back to the same nanosecond.
        message_rate: Some(3.0),
    }
    .prepare()
    .unwrap();
    let spec = RunSpec {
        url: "http://127.0.0.1:1".into(),
        grpc: Some(std::sync::Arc::new(here.clone())),
        ..RunSpec::default()
    };
    let wire = WireLoad::from_spec(&spec, Shard { index: 0, count: 2 }).unwrap();
    let json = serde_json::to_string(&wire).unwrap();
    assert!(!json.contains("chat.proto\""), "no path travels: {json}");
    // The coordinator's file is gone: the generator reads none.
    drop(dir);
    assert!(!proto.exists());
    let back: WireLoad = serde_json::from_str(&json).unwrap();
    let there = back.to_spec().unwrap().grpc.expect("the call");
    assert_eq!(*there, here);
    assert_eq!(there.messages, Some(7));
    assert_eq!(there.message_interval, here.message_interval);

    let mut bad = back.clone();
    bad.grpc.as_mut().unwrap().schema_b64 = "!".into();
    let e = bad.to_spec().unwrap_err();
    assert!(e.contains("load.grpc.schema_b64 is not base64"), "{e}");
    let mut bad = back.clone();
    bad.grpc.as_mut().unwrap().schema_b64 = "AAAA".into();
    let e = bad.to_spec().unwrap_err();
    assert!(e.contains("not a valid descriptor set"), "{e}");
    let mut bad = back;
    bad.grpc.as_mut().unwrap().method = "t.v1.Room/Shout".into();
    let e = bad.to_spec().unwrap_err();
    assert!(e.contains("has no method `Shout`; it has: Talk"), "{e}");
}
