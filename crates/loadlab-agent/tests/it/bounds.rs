//! What a token holder sends, bounded before it is read (issue 51): a load refused by role
//! or slot before its body, one load body read at a time, names bounded and printable, ids
//! shown to no one but their holder, a finished load's result kept for its coordinator, and
//! a load's threads bounded by this host's CPUs.

use crate::support::{eventually, start, Agent, Req};
use loadlab_agent::clock::LocalClock;
use loadlab_agent::protocol::load::{LoadBatch, LoadStarted, StartLoad, WireLoad};
use loadlab_agent::protocol::{Hello, OpenSession, ServerRequest};
use loadlab_engine::shard::Shard;
use loadlab_engine::RunSpec;
use loadlab_testkit::{response, Behavior, TestServer};
use std::time::{Duration, Instant};

/// A `POST /v1/loads` head announcing `len` bytes of body, none of them sent (a body left
/// unread when the agent closes would turn its close into a reset, and the answer could be
/// lost with it).
fn load_head(len: usize) -> String {
    Agent::raw_request("POST", "/v1/loads", b"")
        .replace("content-length: 0", &format!("content-length: {len}"))
}

/// A load refused for its role or because another load holds the slot is refused at once,
/// without reading its body; a second body while one is being read is refused too. Before
/// the fix each body (up to 16 MiB) was read and parsed first: a body sent slowly was only
/// cut off after 10 s (408), and 27 of them at once held 585 MB.
#[test]
fn a_load_is_refused_before_its_body_is_read() {
    let agent = start(|_| {});
    let began = Instant::now();
    let answer = agent.raw_with_wait(&load_head(8 << 20), Duration::from_secs(30));
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("--generator"), "{answer}");
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );

    let generator = start(|c| c.generator = true);
    // One body being read (its sender holds it open), and another refused at once. The
    // agent takes its one reading permit as it reads a head: a second head that reached it
    // before the first's would hold the permit itself (the first then refused, and every
    // later second read in turn: the cold CI run saw this), so a round that saw no refusal
    // starts again with a new first, the last one's connection closed.
    let refused = eventually(Duration::from_secs(20), || {
        let _first = generator.send_and_hold(&load_head(8 << 20));
        generator
            .raw_with_wait(&load_head(8 << 20), Duration::from_secs(3))
            .starts_with("HTTP/1.1 409")
    });
    assert!(refused, "a second load body was read while the first was");
}

fn start_load(spec: &RunSpec, client: &str) -> StartLoad {
    let at = LocalClock::new().now_ns() + 100_000_000;
    StartLoad {
        load: WireLoad::from_spec(spec, Shard { index: 0, count: 1 }).unwrap(),
        start_at_ns: at,
        agreed_start_ns: at,
        client: client.into(),
        run: Some("r".into()),
        lease_ms: Some(10_000),
    }
}

/// A finished load's result waits for its coordinator: another coordinator's start is
/// refused (409) until the first closes its load, and the first still reads its result.
/// Ids are 128 random bits and shown to no one but their holder. Before the fix, the second
/// start replaced the first load (its result gone: 404), and `hello` showed its id.
#[test]
fn a_finished_loads_result_is_kept_for_its_coordinator() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let agent = start(|c| c.generator = true);
    let spec = RunSpec {
        url: server.url("/"),
        connections: Some(1),
        requests: Some(5),
        ..RunSpec::default()
    };
    let answer = agent.post("/v1/loads", &start_load(&spec, "first"));
    assert_eq!(
        answer.status,
        201,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let id = answer.json::<LoadStarted>().load;
    assert_eq!(id.len(), 32, "{id}");
    let hello: Hello = agent.get("/v1/hello").json();
    assert_eq!(
        hello.load_busy.unwrap().session,
        "",
        "the load's id was shown"
    );
    // Ended (the server answered all 5), not yet closed by its coordinator.
    assert!(eventually(Duration::from_secs(20), || {
        server.counters().requests() >= 5
            && agent
                .get(&format!("/v1/loads/{id}/intervals?after=0&wait_ms=500"))
                .json::<LoadBatch>()
                .done
    }));
    let second = agent.post("/v1/loads", &start_load(&spec, "second"));
    assert_eq!(
        second.status,
        409,
        "{}",
        String::from_utf8_lossy(&second.body)
    );
    let error = second.error();
    assert!(error.error.contains("result is kept"), "{}", error.error);
    assert_eq!(error.busy.unwrap().session, "");
    let batch: LoadBatch = agent
        .get(&format!("/v1/loads/{id}/intervals?after=0"))
        .json();
    assert!(batch.done && batch.result.is_some(), "{:?}", batch.error);
    assert_eq!(
        agent
            .call(Req::new("DELETE", &format!("/v1/loads/{id}")))
            .status,
        200
    );
    assert_eq!(
        agent.post("/v1/loads", &start_load(&spec, "second")).status,
        201
    );
}

/// A client's and a run's name are at most 128 bytes of printable characters (they are
/// shown to other clients); a session's id is not shown to them. Before the fix a 15 MiB
/// name came back in every `hello`, escapes and all.
#[test]
fn names_are_bounded_and_printable_and_ids_are_not_shown() {
    let agent = start(|_| {});
    let open = |client: &str, run: Option<&str>| OpenSession {
        server: ServerRequest::Pid {
            pid: std::process::id(),
        },
        client: client.into(),
        run: run.map(str::to_string),
        lease_ms: None,
    };
    for (client, run, field) in [
        ("x".repeat(200), None, "client"),
        ("a\u{1b}[2Jb".to_string(), None, "client"),
        ("ok".to_string(), Some("r\r\nFAKE: all good"), "run"),
    ] {
        let answer = agent.post("/v1/sessions", &open(&client, run));
        assert_eq!(answer.status, 400, "{field}");
        assert_eq!(answer.error().field.as_deref(), Some(field));
    }
    let answer = agent.post("/v1/sessions", &open(&"é".repeat(64), Some("run 1")));
    assert_eq!(
        answer.status,
        201,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let hello: Hello = agent.get("/v1/hello").json();
    let busy = hello.busy.unwrap();
    assert_eq!(busy.session, "", "the session's id was shown");
    let again = agent.post("/v1/sessions", &open("other", None));
    assert_eq!(again.status, 409);
    assert_eq!(again.error().busy.unwrap().session, "");
}

/// A load's threads are at most 4 per CPU of the generator's host, said with the bound.
/// Before the fix they were bounded only by its connections.
#[test]
fn a_loads_threads_are_bounded_by_the_hosts_cpus() {
    let agent = start(|c| c.generator = true);
    let spec = RunSpec {
        url: "http://127.0.0.1:9/".into(),
        connections: Some(100_000),
        threads: Some(50_000),
        requests: Some(1),
        ..RunSpec::default()
    };
    let answer = agent.post("/v1/loads", &start_load(&spec, "c"));
    assert_eq!(
        answer.status,
        400,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let error = answer.error();
    assert_eq!(error.field.as_deref(), Some("load.threads"));
    assert!(error.error.contains("per CPU"), "{}", error.error);
}
