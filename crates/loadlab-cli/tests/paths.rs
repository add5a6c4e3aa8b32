//! The limit loadlab cannot see on its own host (issue 52): a path between generator and
//! server that carries less than the server serves. Test hosts are network namespaces (see
//! `netns`): a server host running the fixture (a serial server, 240 requests/s, answering
//! 12 KB) and the server's `loadlab agent`, a coordinator's host, and three generator hosts
//! each running `loadlab agent --generator`. The cap goes where a provider puts it: on the
//! bridge's side of a generator's link, invisible to the generator.
//!
//! Needs root and iproute2 with tbf: without them each test prints SKIPPED and passes.

mod common;
#[path = "paths/h3.rs"]
mod h3;
mod netns;

use common::serial;
use loadlab_testkit::ScratchDir;
use netns::{in_ns, Agent, Lab};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Output, Stdio};

const LOADLAB: &str = env!("CARGO_BIN_EXE_loadlab");
const FIXTURE: &str = env!("CARGO_BIN_EXE_loadlab-fixture");
/// 240 requests/s, one at a time.
const SERVICE_US: &str = "4166";
/// The answer: 12 KB, as in the issue.
const PATH: &str = "/bytes?n=12288";

/// The server host (fixture and agent), the coordinator's host, three generators.
struct Hosts {
    lab: Lab,
    server: Child,
    server_agent: Agent,
    generators: Vec<Agent>,
    dir: ScratchDir,
}

impl Hosts {
    fn new(name: &str) -> Option<Hosts> {
        Hosts::with(name, 3)
    }

    /// The server host, the coordinator's host and `generators` generator hosts.
    fn with(name: &str, generators: usize) -> Option<Hosts> {
        let lab = match Lab::new(1 + generators) {
            Ok(lab) => lab,
            Err(e) => {
                eprintln!("SKIPPED: no test hosts here ({e})");
                return None;
            }
        };
        let dir = ScratchDir::new(&format!("paths-{name}"));
        let (sns, saddr) = lab.server.clone();
        let server = in_ns(&sns, FIXTURE)
            .args(["--service-us", SERVICE_US])
            .env("HOST", saddr.to_string())
            .env("PORT", "8081")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server_agent = Agent::start(
            LOADLAB,
            "server",
            &sns,
            SocketAddr::from((saddr, 7071)),
            &dir,
            &["--port", "8081"],
        );
        let generators = lab.hosts[1..]
            .iter()
            .enumerate()
            .map(|(i, (ns, addr))| {
                let name = format!("gen{}", i + 1);
                let listen = SocketAddr::from((*addr, 7070));
                Agent::start(LOADLAB, &name, ns, listen, &dir, &["--generator"])
            })
            .collect();
        Some(Hosts {
            lab,
            server,
            server_agent,
            generators,
            dir,
        })
    }

    fn fleet_file(&self) -> PathBuf {
        let text: Vec<String> = self.generators.iter().map(|g| g.entry.clone()).collect();
        let path = self.dir.join("fleet.toml");
        std::fs::write(&path, text.join("\n")).unwrap();
        path
    }

    fn url(&self) -> String {
        format!("http://{}:8081{PATH}", self.lab.server.1)
    }

    /// `loadlab ARGS` on the coordinator's host.
    fn loadlab(&self, args: &[String]) -> Output {
        in_ns(&self.lab.hosts[0].0, LOADLAB)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap()
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `loadlab doctor` with the fleet and the server's agent checks each generator's path both
/// ways. Uncapped, no path is named; with gen1's downlink capped at 10 Mbit/s on the
/// bridge's side (its own interface shows nothing), gen1 and only gen1 is named, with what
/// its path carried, before any load is sent.
#[test]
fn doctor_names_the_one_capped_generator_of_three_and_no_path_when_none_is() {
    let _serial = serial();
    let Some(hosts) = Hosts::new("doctor") else {
        return;
    };
    let mut args: Vec<String> = ["doctor", "--rate", "240", "--generators"]
        .map(String::from)
        .to_vec();
    args.push(hosts.fleet_file().display().to_string());
    args.extend(hosts.server_agent.flags());
    args.push(hosts.url());

    let out = hosts.loadlab(&args);
    let said = text(&out);
    assert!(
        said.contains("the paths from the server's host to the generators"),
        "{said}"
    );
    assert!(!said.contains("warning: the path"), "uncapped:\n{said}");

    hosts.lab.cap_down(1, "10mbit").unwrap();
    let out = hosts.loadlab(&args);
    let said = text(&out);
    eprintln!("{said}");
    let named: Vec<&str> = said
        .lines()
        .filter(|l| l.starts_with("warning: the path"))
        .collect();
    assert_eq!(named.len(), 1, "capped gen1:\n{said}");
    assert!(
        named[0].contains("from the server to generator gen1 carried"),
        "{said}"
    );
    // What it carried: the cap, within the transfer's slow start and the tbf's burst.
    let mbit: f64 = named[0]
        .split("carried ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    assert!((7.0..11.0).contains(&mbit), "{mbit} Mbit/s:\n{said}");
}

/// `loadlab capacity` over `fleet` with short probes, from the coordinator's host, with the
/// server's agent; the capacity document.
fn capacity(hosts: &Hosts, fleet: &std::path::Path, name: &str) -> (String, serde_json::Value) {
    let json = hosts.dir.join(format!("{name}.json"));
    let mut args: Vec<String> = [
        "capacity",
        "--no-save",
        "-q",
        "--slo",
        "p99<100ms",
        "-d",
        "800ms",
        "--warmup",
        "200ms",
        "--cooldown",
        "200ms",
        "--tolerance",
        "0.08",
        "--start",
        "200",
        "--max-rate",
        "480",
        "--repeats",
        "1",
    ]
    .map(String::from)
    .to_vec();
    args.push("--generators".into());
    args.push(fleet.display().to_string());
    args.extend(hosts.server_agent.flags());
    args.extend(["--json".into(), json.display().to_string(), hosts.url()]);
    let out = hosts.loadlab(&args);
    let said = text(&out);
    let doc: serde_json::Value = std::fs::read_to_string(&json)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or_else(|e| panic!("no capacity document ({e}): {said}"));
    (said, doc)
}

/// The issue's bar, end to end: the CPU-bound serial server (240/s) behind uncapped paths
/// gets its capacity over three generators with no path blamed; one generator behind a
/// 10 Mbit/s downlink (97 answers of 12 KB a second) is named before any probe and no
/// capacity is claimed for the server (it printed "capacity 96.9/s" as the server's).
///
/// Two capacity searches over four namespaced hosts take 45-75 s on a 2-core machine: too long
/// for CI's budget, so run by hand (`cargo test -p loadlab-cli --test paths -- --ignored`) and
/// by `bench/path-limits.sh`, whose table holds the same cases.
#[test]
#[ignore = "45-75 s end to end: bench/path-limits.sh runs the same cases"]
fn capacity_is_the_servers_uncapped_and_never_the_paths_when_one_generator_is_capped() {
    let _serial = serial();
    let Some(hosts) = Hosts::new("capacity") else {
        return;
    };
    let (said, doc) = capacity(&hosts, &hosts.fleet_file(), "uncapped");
    assert_eq!(doc["finding"]["kind"], "capacity", "{said}");
    let found = doc["finding"]["estimate"].as_f64().unwrap();
    eprintln!("uncapped, three generators: {found}/s (the server serves 240/s)");
    assert!((190.0..=252.0).contains(&found), "{found}: {said}");
    assert!(!said.contains("warning: the path"), "{said}");
    assert!(
        !doc["verdict"].to_string().contains("path"),
        "{}",
        doc["verdict"]
    );

    hosts.lab.cap_down(1, "10mbit").unwrap();
    let one = hosts.dir.join("gen1.toml");
    std::fs::write(&one, &hosts.generators[0].entry).unwrap();
    let (said, doc) = capacity(&hosts, &one, "capped");
    eprintln!("gen1 capped: {}\n{said}", doc["verdict"]);
    assert_ne!(doc["finding"]["kind"], "capacity", "{said}");
    let verdict = doc["verdict"].as_str().unwrap_or_default();
    assert!(
        verdict.contains("no capacity found for the server"),
        "{verdict}\n{said}"
    );
    assert!(verdict.contains("gen1"), "{verdict}");
}

/// Across a fleet: gen1 behind a 4 Mbit/s downlink, its share of 150/s (50/s of 12 KB, 5
/// Mbit/s) beyond it, the others' shares and the server (62% busy) comfortable: the run
/// names gen1 as departing from the others at the same share, in its verdicts and the JSON.
#[test]
fn a_run_names_the_generator_whose_response_time_departs_from_the_others() {
    let _serial = serial();
    let Some(hosts) = Hosts::new("departure") else {
        return;
    };
    hosts.lab.cap_down(1, "4mbit").unwrap();
    let json = hosts.dir.join("run.json");
    let mut args: Vec<String> = ["run", "-q", "--rate", "150", "-d", "2s", "--generators"]
        .map(String::from)
        .to_vec();
    args.push(hosts.fleet_file().display().to_string());
    args.extend(["--json".into(), json.display().to_string(), hosts.url()]);
    let out = hosts.loadlab(&args);
    let said = text(&out);
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}: {said}")),
    )
    .unwrap();
    let verdicts: Vec<&str> = doc["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .filter(|v| v.contains("at the same share"))
        .collect();
    eprintln!("{verdicts:#?}");
    assert_eq!(verdicts.len(), 1, "{said}\n{}", doc["verdicts"]);
    assert!(verdicts[0].starts_with("generator gen1"), "{}", verdicts[0]);
    assert!(
        verdicts[0].contains("its path, not the server"),
        "{}",
        verdicts[0]
    );
}

/// The server's agent samples the server's connections (issue 52): a run from the
/// coordinator's host, its downlink capped at 10 Mbit/s on the bridge's side (12 KB answers:
/// about 100 a second against the server's 240), gets the server's side of the path from the
/// agent, and its verdict says it in words: the path named, and "the server was N% busy
/// while its sockets were network-limited M% of the time".
#[test]
fn through_its_agent_the_servers_sockets_say_the_path_limited() {
    let _serial = serial();
    let Some(hosts) = Hosts::with("server-side", 0) else {
        return;
    };
    hosts.lab.cap_down(0, "10mbit").unwrap();
    let json = hosts.dir.join("run.json");
    let mut args: Vec<String> = ["run", "-q", "-c", "16", "-d", "2s"]
        .map(String::from)
        .to_vec();
    args.extend(hosts.server_agent.flags());
    args.extend(["--json".into(), json.display().to_string(), hosts.url()]);
    let out = hosts.loadlab(&args);
    let said = text(&out);
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}: {said}")),
    )
    .unwrap();
    let server = doc["path"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["side"] == "server")
        .unwrap_or_else(|| panic!("no server side: {:#}", doc["path"]));
    assert!(
        server["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["network_limited_share"].as_f64().is_some_and(|n| n > 0.8)),
        "the server's sockets waited on the network: {server:#}"
    );
    let verdict = doc["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .find(|v| v.contains("a queue on the path"))
        .unwrap_or_else(|| panic!("no path verdict: {}\n{said}", doc["verdicts"]));
    eprintln!("{verdict}");
    assert!(verdict.contains("the server was "), "{verdict}");
    assert!(
        verdict.contains("busy while its sockets were network-limited"),
        "{verdict}"
    );
}

/// An experiment over `[load] generators` with the server's agent checks the paths once,
/// before its first run: gen1, behind a 10 Mbit/s downlink, carries about 100 answers of
/// 12 KB a second, and its share is the experiment's 200/s: it is named, and the run's
/// result carries the check and says so in its verdicts.
#[test]
fn an_experiment_checks_the_paths_before_its_first_run_and_names_the_capped_one() {
    let _serial = serial();
    let Some(hosts) = Hosts::with("experiment", 1) else {
        return;
    };
    hosts.lab.cap_down(1, "10mbit").unwrap();
    let file = hosts.dir.join("paths.toml");
    let agent = &hosts.server_agent;
    let flags = agent.flags();
    std::fs::write(
        &file,
        format!(
            r#"name = "paths"
repetitions = 1
warmup = "0s"
duration = "1s"
cooldown = "0s"
[load]
rate = 200
path = "{PATH}"
generators = "{}"
[server]
agent = "{}"
agent_token_file = "{}"
agent_fingerprint = "{}"
[[variant]]
name = "capped"
url = "http://{}:8081"
"#,
            hosts.fleet_file().display(),
            flags[1],
            flags[3],
            flags[5],
            hosts.lab.server.1
        ),
    )
    .unwrap();
    let db = hosts.dir.join("runs.db");
    let mut args: Vec<String> = vec!["experiment".into(), file.display().to_string()];
    args.extend(["--db".into(), db.display().to_string()]);
    let out = hosts.loadlab(&args);
    let said = text(&out);
    eprintln!("{said}");
    assert!(out.status.success(), "{said}");
    assert_eq!(
        said.matches("measured both ways before the first run")
            .count(),
        1,
        "{said}"
    );
    assert!(
        said.contains("warning: the path to generator gen1 carries at most"),
        "{said}"
    );
    let export = hosts.dir.join("run.json");
    let listed = hosts.loadlab(&[
        "runs".into(),
        "list".into(),
        "--db".into(),
        db.display().to_string(),
    ]);
    let id = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .find(|l| l.contains(" experiment "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{}", text(&listed)))
        .to_string();
    let mut args: Vec<String> = ["runs", "export", &id, "--db"].map(String::from).to_vec();
    args.extend([
        db.display().to_string(),
        "-o".into(),
        export.display().to_string(),
    ]);
    let out = hosts.loadlab(&args);
    assert!(out.status.success(), "{}", text(&out));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    let gen1 = &doc["path_check"]["generators"][0];
    assert_eq!(gen1["generator"], "gen1", "{:#}", doc["path_check"]);
    assert!(gen1["named"].is_string(), "{gen1:#}");
    let down = gen1["down_bits_per_s"].as_f64().unwrap();
    assert!((7e6..11e6).contains(&down), "{gen1:#}");
    assert!(
        doc["verdicts"].as_array().unwrap().iter().any(|v| v
            .as_str()
            .is_some_and(|v| v.contains("the path check before the load"))),
        "{}",
        doc["verdicts"]
    );
}
