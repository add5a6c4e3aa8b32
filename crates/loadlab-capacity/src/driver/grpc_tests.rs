//! A search over a scenario whose gRPC schema comes from the server's reflection: the
//! schema is asked once, where the session is prepared, and every probe's validation reads
//! the descriptors the scenario then carries (it asked once per probe before).

use super::*;
use crate::search::Unit;
use loadlab_engine::scenario::Scenario;
use loadlab_engine::RunSpec;
use loadlab_session::{BusyPoll, MachineOptions, SessionSpec};
use loadlab_testkit::{GrpcAnswer, GrpcServer, ScratchDir};
use std::sync::Arc;

const SHOP: &str = "syntax = \"proto3\";\npackage t.v1;\n\
                    service Shop { rpc Get(Who) returns (Who); }\n\
                    message Who { string name = 1; }\n";

/// The files of a compiled `FileDescriptorSet` (field 1, repeated), each serialized as a
/// server's reflection sends them.
fn files_of(mut set: &[u8]) -> Vec<Vec<u8>> {
    let mut files = Vec::new();
    while let [0x0a, rest @ ..] = set {
        let (mut len, mut shift, mut at) = (0usize, 0, 0);
        loop {
            let byte = rest[at];
            len |= usize::from(byte & 0x7f) << shift;
            shift += 7;
            at += 1;
            if byte < 0x80 {
                break;
            }
        }
        files.push(rest[at..at + len].to_vec());
        set = &rest[at + len..];
    }
    files
}

struct Quiet;

impl Events for Quiet {
    fn starting(&mut self, _: usize, _: f64, _: Option<usize>) {}
    fn finished(&mut self, _: &ProbeRecord, _: &RunResult) -> Option<i64> {
        None
    }
}

#[test]
fn a_reflecting_scenarios_schema_is_asked_once_for_the_whole_search() {
    let dir = ScratchDir::new("capacity-reflect");
    let proto = dir.path().join("shop.proto");
    std::fs::write(&proto, SHOP).unwrap();
    let pool = loadlab_engine::grpc::schema::compile(&[proto], &[]).unwrap();
    let v1 = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
    // `BytesValue{value: "ok"}`'s bytes read as `Who{name: "ok"}`.
    let server =
        GrpcServer::start_reflecting(vec![GrpcAnswer::ok()], v1, files_of(&pool.encode_to_vec()));
    let text = format!(
        "name = \"r\"\nbase_url = \"{}\"\n[grpc]\nreflect = true\n[[steps]]\nname = \"get\"\n\
         grpc = \"t.v1.Shop/Get\"\n[[steps.checks]]\njson = \"$.name\"\nequals = \"ok\"",
        server.url()
    );
    let scenario = Scenario::from_toml_str(&text, dir.path()).unwrap();
    let run = RunSpec {
        scenario: Some(Arc::new(scenario)),
        rate: Some(1.0),
        duration: Some(Duration::from_millis(300)),
        threads: Some(1),
        pm_qos: false,
        ..RunSpec::default()
    };
    let spec = SessionSpec {
        run,
        server: None,
        busy_poll: BusyPoll::Off,
    };
    let quick = MachineOptions {
        strict: false,
        sample: Duration::ZERO,
    };
    let mut session = Session::prepare_with(spec, quick).unwrap();
    let search = SearchSpec {
        policy: Policy {
            start: 40.0,
            max_rate: 160.0,
            min_rate: 10.0,
            tolerance: 0.5,
            rounds: 1,
            unit: Unit::Rate,
        },
        variable: crate::Variable::Rate,
        criteria: Criteria::new(Vec::new()),
        shape: ProbeShape {
            warmup: Duration::ZERO,
            duration: Duration::from_millis(300),
            cooldown: Duration::ZERO,
            first_warmup: Duration::ZERO,
        },
        budget: None,
    };
    let report = run_search(&mut session, &search, &Stop::new(), &mut Quiet).unwrap();
    assert!(report.probes.len() >= 2, "{}", report.verdict);
    for p in &report.probes {
        assert_eq!(p.measure.errors, 0, "{}", report.verdict);
    }
    let counters = server.counters();
    assert!(counters.calls.load(Ordering::SeqCst) > 0);
    assert_eq!(counters.reflections.load(Ordering::SeqCst), 1);
}
