//! `capacity --ui`, `sweep --ui` and `experiment --ui`: one page for the whole command, read
//! with a plain HTTP client: a step event per probe (the probe's record, as the document has
//! it) and the search's answer, final, equal to the document's verdict; an experiment's
//! stream names each run (block, arm) as it starts and ends; a page opened after the end
//! of a step gets the steps so far in its snapshot; the stop button ends the whole command.

use super::live::{next_event, open_events, request, start_command, whole, Sse};
use loadlab_testkit::{response, Behavior, ScratchDir, TestServer};
use serde_json::Value;

/// Every event of the stream until its end.
fn all_events(addr: &str) -> Vec<Sse> {
    let mut stream = open_events(addr, "");
    let mut events = Vec::new();
    while let Some(e) = next_event(&mut stream) {
        let end = e.kind == "end";
        events.push(e);
        if end {
            break;
        }
    }
    events
}

/// Short probes: half a second measured, none warmed, one round.
const QUICK: [&str; 16] = [
    "--no-save",
    "-q",
    "-d",
    "500ms",
    "--warmup",
    "0s",
    "--cooldown",
    "0s",
    "--repeats",
    "1",
    "--start",
    "50",
    "--max-rate",
    "100",
    "--min-rate",
    "40",
];

#[test]
fn a_capacity_search_shows_each_probe_and_ends_with_the_documents_answer() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("live-capacity");
    let json = dir.join("capacity.json");
    let url = server.url("/");
    let mut args = QUICK.to_vec();
    args.extend(["--json", json.to_str().unwrap(), &url]);
    let (child, addr) = start_command("capacity", &args);
    let events = all_events(&addr);
    let out = child.wait_with_output().unwrap();
    // 0: a capacity; 4: none in the bounds (it held at --max-rate on a quiet machine).
    assert!(matches!(out.status.code(), Some(0 | 4)), "{:?}", out.status);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();

    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"snapshot"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"end"), "{kinds:?}");
    // A judged probe's row carries its record: one per probe of the document, equal to it.
    let judged: Vec<&Value> = events
        .iter()
        .filter(|e| e.kind == "step" && e.data["row"]["state"] != "running")
        .map(|e| &e.data["row"]["record"])
        .collect();
    let probes = doc["probes"].as_array().unwrap();
    assert_eq!(judged.len(), probes.len(), "{kinds:?}");
    for (seen, probe) in judged.iter().zip(probes) {
        assert_eq!(*seen, probe, "the page's probe is the document's");
    }
    // Each probe was shown running before it was judged, and each run's figures began anew.
    let running = events
        .iter()
        .filter(|e| e.kind == "step" && e.data["row"]["state"] == "running")
        .count();
    assert_eq!(running, probes.len());
    assert_eq!(kinds.iter().filter(|k| **k == "run").count(), probes.len());
    assert!(
        kinds.contains(&"interval"),
        "each probe's intervals: {kinds:?}"
    );
    // Until the end the answer is not final; then it is the document's.
    let answers: Vec<&Value> = events
        .iter()
        .filter_map(|e| match e.kind.as_str() {
            "step" => Some(&e.data["so_far"]),
            "sofar" => Some(&e.data),
            _ => None,
        })
        .filter(|s| !s.is_null())
        .collect();
    let (last, before) = answers.split_last().unwrap();
    assert!(before.iter().all(|s| s["final"] == false));
    assert_eq!(last["final"], true);
    assert_eq!(last["text"], doc["verdict"]);
}

#[test]
fn a_reloaded_page_gets_the_probes_so_far_and_the_stop_ends_the_search() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("live-capacity-stop");
    let json = dir.join("sweep.json");
    let url = server.url("/");
    // A sweep of probes of 5 s (intervals of 500 ms): stopped from the page during its first.
    let (child, addr) = start_command(
        "sweep",
        &[
            "--no-save",
            "-q",
            "-d",
            "5s",
            "--warmup",
            "0s",
            "--rates",
            "50,60,70",
            "--json",
            json.to_str().unwrap(),
            &url,
        ],
    );
    let page = whole(request(
        &addr,
        &format!("GET / HTTP/1.0\r\nHost: {addr}\r\n"),
    ));
    let csrf = page
        .split("\"csrf\":\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_string();
    let mut stream = open_events(&addr, "");
    let mut last_id = 0;
    while let Some(e) = next_event(&mut stream) {
        last_id = e.id;
        if e.kind == "interval" {
            break;
        }
    }
    // A page opened now: the plan and the probe going on, in its snapshot.
    let mut again = open_events(&addr, "");
    let snapshot = next_event(&mut again).unwrap();
    assert_eq!(snapshot.kind, "snapshot");
    let command = &snapshot.data["command"];
    assert_eq!(command["plan"]["kind"], "sweep");
    assert_eq!(command["rows"][0]["state"], "running", "{command}");
    // One reconnecting with Last-Event-ID gets the events after it, not a snapshot.
    let mut resumed = open_events(&addr, &format!("Last-Event-ID: {}\r\n", last_id - 1));
    assert_eq!(next_event(&mut resumed).unwrap().id, last_id);

    let stopped = whole(request(
        &addr,
        &format!(
            "POST /stop HTTP/1.0\r\nHost: {addr}\r\nOrigin: http://{addr}\r\nX-Loadlab-Csrf: \
             {csrf}\r\nContent-Length: 0\r\n"
        ),
    ));
    assert!(stopped.starts_with("HTTP/1.0 202"), "{stopped}");
    let end = std::iter::from_fn(|| next_event(&mut stream))
        .find(|e| e.kind == "end")
        .expect("the stream ends");
    assert_eq!(end.data["interrupted"], true);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "as a Ctrl-C");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["stopped_by"], "interrupted");
    assert_eq!(
        doc["probes"].as_array().unwrap().len(),
        1,
        "no other probe started"
    );
}

/// An experiment file of two arms (one a hostile label) x `repetitions` blocks against
/// `url`, runs of half a second.
pub(crate) fn experiment_file(dir: &ScratchDir, url: &str, repetitions: usize) -> String {
    let file = dir.join("exp.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"live\"\nrepetitions = {repetitions}\nseed = 3\nwarmup = \"0s\"\n\
             duration = \"500ms\"\ncooldown = \"0s\"\n[load]\nrate = 100\n[[variant]]\n\
             name = \"a\"\nurl = \"{url}\"\n[[variant]]\nname = \"b<img/src=x/onerror=alert(1)>\"\nurl = \
             \"{url}\"\n"
        ),
    )
    .unwrap();
    file.to_str().unwrap().to_string()
}

#[test]
fn an_experiments_stream_names_each_run() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("live-experiment");
    let file = experiment_file(&dir, &server.url("/"), 1);
    let db = dir.join("runs.db");
    let (child, addr) = start_command(
        "experiment",
        &[
            &file,
            "--db",
            db.to_str().unwrap(),
            "--limits",
            "best-effort",
        ],
    );
    let events = all_events(&addr);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let plan = events
        .iter()
        .find_map(|e| match e.kind.as_str() {
            "plan" => Some(e.data.clone()),
            "snapshot" => Some(e.data["command"]["plan"].clone()).filter(|p| !p.is_null()),
            _ => None,
        })
        .expect("the plan");
    assert_eq!(plan["kind"], "experiment");
    let finished: Vec<&Value> = events
        .iter()
        .filter(|e| e.kind == "step" && e.data["row"]["state"] == "done")
        .map(|e| &e.data["row"]["cells"])
        .collect();
    assert_eq!(finished.len(), 2, "each run, as it ended");
    let mut arms: Vec<&str> = finished.iter().map(|c| c[2].as_str().unwrap()).collect();
    arms.sort();
    assert_eq!(
        arms,
        ["a", "b<img/src=x/onerror=alert(1)>"],
        "the arm, as text (the page sets it so)"
    );
    for cells in &finished {
        assert_eq!(cells[1], "1", "block 1");
        assert!(
            cells[3].as_str().unwrap().parse::<f64>().unwrap() > 0.0,
            "{cells}"
        );
    }
    let so_far: Vec<&Value> = events
        .iter()
        .filter_map(|e| match e.kind.as_str() {
            "step" => Some(&e.data["so_far"]),
            "sofar" => Some(&e.data),
            _ => None,
        })
        .filter(|s| !s.is_null())
        .collect();
    assert_eq!(so_far.last().unwrap()["final"], true);
    assert!(so_far.iter().rev().skip(1).all(|s| s["final"] == false));
}

/// Over a fleet, each generator's own intervals reach the page as it goes (a `part` event
/// each, before the merge), and what they count adds up to the merged stream's.
#[test]
fn a_fleets_generators_are_each_a_row() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("live-fleet");
    let (_generators, fleet) = super::generators::loopback_fleet(dir.path(), 2);
    let (child, addr) = start_command(
        "run",
        &[
            "--generators",
            fleet.to_str().unwrap(),
            "-q",
            "-c",
            "2",
            "-d",
            "1s",
            "--interval",
            "500ms",
            &server.url("/"),
        ],
    );
    let events = all_events(&addr);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let parts: Vec<&Value> = events
        .iter()
        .filter(|e| e.kind == "part")
        .map(|e| &e.data)
        .collect();
    for part in [0, 1] {
        let mine: Vec<&&Value> = parts.iter().filter(|p| p["part"] == part).collect();
        assert!(!mine.is_empty(), "no interval of generator {part}");
        // Named as the fleet file names it.
        assert_eq!(mine[0]["name"], format!("gen{part}"));
        assert!(mine
            .iter()
            .any(|p| p["last"]["completed"].as_u64() > Some(0)));
    }
    let by_parts: u64 = parts
        .iter()
        .filter(|p| p["last"]["warmup"] == false)
        .map(|p| p["last"]["completed"].as_u64().unwrap())
        .sum();
    let merged: u64 = events
        .iter()
        .filter(|e| e.kind == "interval" && e.data["last"]["warmup"] == false)
        .map(|e| e.data["last"]["completed"].as_u64().unwrap())
        .sum();
    assert_eq!(
        by_parts, merged,
        "the generators' rows add up to the merged stream"
    );
}

/// A `--resume`d experiment's runs kept before are rows of its page (marked so, with their
/// figures as the first process's page showed them), and count in the comparison so far.
#[test]
fn a_resumed_experiments_earlier_runs_are_rows() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("live-resume");
    let file = dir.join("exp.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"resumed\"\nrepetitions = 1\nseed = 3\nwarmup = \"0s\"\n\
             duration = \"300ms\"\ncooldown = \"0s\"\n[load]\nrate = 100\n[[variant]]\n\
             name = \"a\"\nurl = \"{0}\"\n[[variant]]\nname = \"b\"\nurl = \"{0}\"\n",
            server.url("/")
        ),
    )
    .unwrap();
    let db = dir.join("runs.db");
    let args = [
        file.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--limits",
        "best-effort",
    ];
    // The first process stopped once its first run is done: one run kept, one not.
    let (child, addr) = start_command("experiment", &args);
    let page = whole(request(
        &addr,
        &format!("GET / HTTP/1.0\r\nHost: {addr}\r\n"),
    ));
    let csrf = page
        .split("\"csrf\":\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_string();
    let mut stream = open_events(&addr, "");
    let first = std::iter::from_fn(|| next_event(&mut stream))
        .find(|e| e.kind == "step" && e.data["row"]["state"] == "done")
        .expect("a run done");
    let stopped = whole(request(
        &addr,
        &format!(
            "POST /stop HTTP/1.0\r\nHost: {addr}\r\nOrigin: http://{addr}\r\nX-Loadlab-Csrf: \
             {csrf}\r\nContent-Length: 0\r\n"
        ),
    ));
    assert!(stopped.starts_with("HTTP/1.0 202"), "{stopped}");
    while next_event(&mut stream).is_some_and(|e| e.kind != "end") {}
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));

    let mut again = args.to_vec();
    again.push("--resume");
    let (child, addr) = start_command("experiment", &again);
    let events = all_events(&addr);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let rows: Vec<&Value> = events
        .iter()
        .filter(|e| e.kind == "step" && e.data["row"]["state"] == "done")
        .map(|e| &e.data["row"])
        .collect();
    assert_eq!(rows.len(), 2, "the run kept before and the one run now");
    let kept = &rows[0]["cells"];
    let before = &first.data["row"]["cells"];
    assert_eq!(rows[0]["key"], first.data["row"]["key"]);
    // Run, block, arm, requests/s, p50, p99, failed: as the first page showed them.
    assert_eq!(
        kept.as_array().unwrap()[..7],
        before.as_array().unwrap()[..7]
    );
    assert!(
        kept[7].as_str().unwrap().starts_with("kept before (run "),
        "{kept}"
    );
    assert_eq!(rows[1]["cells"][7], "done");
    // Both runs counted: the comparison so far already pairs the arms after the second.
    let so_far = &events
        .iter()
        .find(|e| {
            e.kind == "step"
                && e.data["row"]["key"] == rows[1]["key"]
                && e.data["row"]["state"] == "done"
        })
        .unwrap()
        .data["so_far"];
    assert!(
        !so_far["text"]
            .as_str()
            .unwrap()
            .starts_with("no arm and its control"),
        "{so_far}"
    );
}
