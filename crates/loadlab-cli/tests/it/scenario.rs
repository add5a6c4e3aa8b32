//! `loadlab run --scenario` as a user runs it: a real process against a loopback server that
//! counts what it receives; the JSON follows the schema, the summary has a row per step, and
//! a `--var` value never reaches the output. `capacity` and `sweep --scenario` too: their
//! probes counted in iterations against a server of known capacity.

use crate::common;
use loadlab_testkit::ScratchDir;

use common::assert_valid;
use loadlab_testkit::{response, RouteServer, Seen};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(args)
        .output()
        .expect("loadlab runs")
}

fn tempdir(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("cli-{name}"))
}

const PORTFOLIO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../scenarios/journeys/portfolio.toml"
);

/// The portfolio's four pages (with `blog` its blog page); anything else is a 404.
fn portfolio(blog: &'static str) -> RouteServer {
    RouteServer::start(move |req: &Seen| match req.route() {
        "/" | "/blogs" | "/version" => response(200, "<html>ok</html>").into(),
        r if r == blog => response(200, "<html>ok</html>").into(),
        _ => response(404, "<html>not found</html>").into(),
    })
}

#[test]
fn the_portfolio_journey_runs_with_a_row_per_step_and_hides_var_values() {
    let server = portfolio("/blogs/007");
    let url = server.url("");
    let out = run(&[
        "run",
        "--scenario",
        PORTFOLIO,
        "--var",
        &format!("URL={url}"),
        "--var",
        "BLOG_ID=007",
        "-c",
        "2",
        "-n",
        "50",
        "--no-pm-qos",
        "--json",
        "-",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_valid(&json);
    let steps = json["scenario"]["steps"].as_array().expect("steps");
    let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["home", "blogs", "blog", "version", "not-found"]);
    assert_eq!(steps[2]["request"], "GET /blogs/{{BLOG_ID}}");
    let total: u64 = steps.iter().map(|s| s["issued"].as_u64().unwrap()).sum();
    assert_eq!(total, 50);
    assert_eq!(server.counters().requests(), 50);
    for s in steps {
        assert_eq!(s["failed"], 0, "{s}");
    }
    assert_eq!(
        server.counters().requests_to("/blogs/007"),
        steps[2]["issued"].as_u64().unwrap()
    );
    let command = json["command"].to_string();
    assert!(command.contains("BLOG_ID=<redacted>"), "{command}");
    assert!(!command.contains("007"), "{command}");
    // The summary (on stderr, since the JSON took stdout) has the steps table.
    assert!(stderr.contains("Scenario `portfolio`"), "{stderr}");
    for name in ["home", "blogs", "not-found", "(iteration)"] {
        assert!(stderr.contains(name), "{name} missing from:\n{stderr}");
    }
}

#[test]
fn the_portfolio_journey_runs_as_an_open_loop_of_iterations() {
    let server = portfolio("/blogs/001");
    let url = server.url("");
    let out = run(&[
        "run",
        "--scenario",
        PORTFOLIO,
        "--var",
        &format!("URL={url}"),
        "--rate",
        "20",
        "-d",
        "1s",
        "--no-pm-qos",
        "--json",
        "-",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_valid(&json);
    let sc = &json["scenario"];
    assert_eq!(sc["offered_iterations_per_s"], 20.0);
    assert!(sc["virtual_users"].is_null(), "{sc}");
    // 20 iterations fell due; each started (its first step reached the server) or was
    // counted as not sent.
    let started = server.counters().requests_to("/");
    let not_sent = json["measured"]["requests"]["not_sent"].as_u64().unwrap();
    assert_eq!(started + not_sent, 20, "{stderr}");
    assert!(
        stderr.contains("open loop of scenario iterations"),
        "{stderr}"
    );
    assert!(stderr.contains("20.0 iterations/s offered"), "{stderr}");
}

#[test]
fn a_malformed_scenario_exits_2_naming_the_step_and_the_field() {
    let dir = tempdir("malformed");
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "name = \"bad\"\n[[steps]]\nname = \"login\"\nurl = \"http://127.0.0.1:9/{{NOPE}}\"\n",
    )
    .unwrap();
    let out = run(&["run", "--scenario", file.to_str().unwrap(), "-n", "1"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("step `login`: url: unknown variable `{{NOPE}}`"),
        "{stderr}"
    );
    assert!(stderr.contains("--var NOPE="), "{stderr}");
}

#[test]
fn a_scenario_travels_to_a_fleet_whole_and_its_shards_draw_different_feeder_rows() {
    let dir = tempdir("fleet-scenario");
    let (generators, fleet) = crate::generators::loopback_fleet(&dir, 2);
    let server = RouteServer::start(|_: &Seen| response(200, "ok").into());
    // The feeder file lives beside the scenario, in a directory the agents never see: it
    // travels with the scenario. Rows drawn at random from 100,000: each shard's one user
    // draws 20; had the shards the same random stream, they would draw the same 20.
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let mut rows = String::from("ID\n");
    for i in 0..100_000 {
        rows.push_str(&format!("{i}\n"));
    }
    std::fs::write(data.join("ids.csv"), rows).unwrap();
    let scenario = data.join("draw.toml");
    std::fs::write(
        &scenario,
        format!(
            "name = \"draw\"\n[[feeders]]\nfile = \"ids.csv\"\norder = \"random\"\n\
             [[steps]]\nname = \"row\"\nurl = \"{}\"\n",
            server.url("/row/{{ID}}")
        ),
    )
    .unwrap();
    let json = dir.join("run.json");
    let out = run(&[
        "run",
        "--generators",
        fleet.to_str().unwrap(),
        "--scenario",
        scenario.to_str().unwrap(),
        "-c",
        "2",
        "-n",
        "40",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_valid(&result);
    assert_eq!(
        result["measured"]["requests"]["completed"], 40,
        "{result:#}"
    );
    assert_eq!(result["scenario"]["steps"][0]["name"], "row");
    let per_route = server.counters().per_route();
    assert_eq!(per_route.values().sum::<u64>(), 40, "{per_route:?}");
    // 40 draws from 100,000 rows repeat one with odds under 1%: 38 distinct is a wide margin
    // (shared streams would give 20, each twice).
    assert!(
        per_route.len() >= 38,
        "{} distinct rows: {per_route:?}",
        per_route.len()
    );
    drop(generators);
}

/// A server that answers `per_s` requests a second, at most `burst` at once (a token bucket
/// full at the start); a request beyond it gets a 503.
fn token_bucket(per_s: f64, burst: f64) -> RouteServer {
    let bucket = std::sync::Mutex::new((burst, std::time::Instant::now()));
    RouteServer::start(move |_: &Seen| {
        let mut b = bucket.lock().unwrap();
        let now = std::time::Instant::now();
        b.0 = (b.0 + now.duration_since(b.1).as_secs_f64() * per_s).min(burst);
        b.1 = now;
        if b.0 >= 1.0 {
            b.0 -= 1.0;
            response(200, "ok").into()
        } else {
            response(503, "busy").into()
        }
    })
}

/// A two-step journey (`/a` then `/b`, `think` between them) against `server`.
fn two_steps(dir: &std::path::Path, server: &RouteServer, think: &str) -> std::path::PathBuf {
    let file = dir.join("journey.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"checkout\"\nbase_url = \"{}\"\n[[steps]]\nname = \"a\"\nurl = \"/a\"\n\
             think = {{ fixed = \"{think}\" }}\n[[steps]]\nname = \"b\"\nurl = \"/b\"\n",
            server.url("")
        ),
    )
    .unwrap();
    file
}

/// `loadlab capacity|sweep ... --json FILE` with short probes, quiet and unsaved: its exit
/// code, its terminal text and the document.
fn probes(args: &[&str], dir: &std::path::Path) -> (Option<i32>, String, serde_json::Value) {
    let json = dir.join("doc.json");
    let out = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(args)
        .args([
            "--no-save",
            "-q",
            "-t",
            "1",
            "--no-pm-qos",
            "--warmup",
            "0s",
        ])
        .args(["--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let doc = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}: {text}"));
    (out.status.code(), text, serde_json::from_str(&doc).unwrap())
}

/// "How many iterations a second of my journey before the objectives break": two requests an
/// iteration into a server that answers 50 a second is 25 iterations a second. The search
/// counts iterations (a probe of 40/s is 80 requests/s), finds the boundary within its
/// tolerance (20/s held, 40/s failed, then 28/s, which the bucket's 20 spare requests carry
/// over a probe of 1 s), names the scenario, and every iteration it counts is one the server
/// saw whole. The spare requests absorb loadlab's catch-up after a stall of 200 ms or more
/// on a busy machine (0.5 s probes with 10 spare failed there once in four runs); 40/s still
/// misses 10 of its 80 requests. The pause after a failed probe (`--cooldown`) refills the
/// bucket, as a real search's lets a queue drain.
#[test]
fn capacity_over_a_scenario_finds_the_iterations_per_second_the_server_sustains() {
    let dir = tempdir("capacity-scenario");
    let server = token_bucket(50.0, 20.0);
    let file = two_steps(&dir, &server, "0s");
    let (code, text, doc) = probes(
        &[
            "capacity",
            "--scenario",
            file.to_str().unwrap(),
            "--start",
            "20",
            "--tolerance",
            "0.5",
            "--repeats",
            "1",
            "-d",
            "1s",
            "--cooldown",
            "500ms",
        ],
        &dir,
    );
    assert_eq!(code, Some(0), "{text}");
    let estimate = doc["finding"]["estimate"].as_f64().unwrap();
    assert!((20.0..=30.0).contains(&estimate), "{doc:#}");
    assert_eq!(doc["scenario"], "checkout", "{doc:#}");
    let verdict = doc["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("scenario checkout, in iterations/s: capacity "),
        "{verdict}"
    );
    assert!(
        text.contains("scenario checkout: loads are iterations/s"),
        "{text}"
    );
    let probes = doc["probes"].as_array().unwrap();
    let mut completed = 0;
    for p in probes {
        let m = &p["measure"];
        assert_eq!(m["iterations"], true, "{p:#}");
        completed += m["completed"].as_u64().unwrap();
        // At 40/s the bucket refuses requests: those iterations failed.
        if m["offered_per_s"].as_f64().unwrap() >= 40.0 {
            assert_eq!(p["judgment"]["pass"], false, "{p:#}");
            assert!(m["errors"].as_u64().unwrap() > 0, "{p:#}");
        }
    }
    // Each iteration counted sent `/b` last; a probe may end with one more in flight.
    let seen = server.counters().requests_to("/b");
    assert!(
        seen >= completed && seen <= completed + probes.len() as u64,
        "server saw {seen} iterations end, the probes counted {completed}"
    );
}

/// A journey that thinks 100 ms between its steps: the iterations that began in a probe's
/// last 100 ms were still thinking when it ended, and are counted nowhere. Counted over the
/// probe's time less one median iteration, the probe carries its 40/s (over the whole probe
/// it read 36/s, "did not keep up", however fast the server); 37 leaves room for two
/// iterations a busy machine's stall may push past the probe's end.
#[test]
fn a_sweep_over_a_journey_with_think_times_keeps_up_with_its_rate() {
    let dir = tempdir("sweep-scenario");
    let server = RouteServer::start(|_: &Seen| response(200, "ok").into());
    let file = two_steps(&dir, &server, "100ms");
    let (code, text, doc) = probes(
        &[
            "sweep",
            "--scenario",
            file.to_str().unwrap(),
            "--rates",
            "40",
            "-d",
            "1s",
        ],
        &dir,
    );
    assert_eq!(code, Some(0), "{text}");
    let p = &doc["probes"][0];
    assert_eq!(p["measure"]["iterations"], true, "{p:#}");
    assert!(
        p["measure"]["achieved_per_s"].as_f64().unwrap() >= 37.0,
        "{p:#}"
    );
    let completed = p["measure"]["completed"].as_u64().unwrap();
    let seen = server.counters().requests_to("/b");
    assert!(seen >= completed && seen <= completed + 1, "{seen} {p:#}");
    assert!(
        doc["verdict"]
            .as_str()
            .unwrap()
            .starts_with("scenario checkout, in iterations/s: sweep: "),
        "{doc:#}"
    );
}

/// A sweep of a scenario over a fleet of two generators: each probe's iterations are split
/// between them (the file travels with the load, as for `run`), the probe counts them
/// merged, and the server saw every one counted.
#[test]
fn a_sweep_of_a_scenario_over_a_fleet_counts_both_generators_iterations() {
    let dir = tempdir("sweep-scenario-fleet");
    let (generators, fleet) = crate::generators::loopback_fleet(&dir, 2);
    let server = RouteServer::start(|_: &Seen| response(200, "ok").into());
    let file = two_steps(&dir, &server, "0s");
    let (code, text, doc) = probes(
        &[
            "sweep",
            "--generators",
            fleet.to_str().unwrap(),
            "--scenario",
            file.to_str().unwrap(),
            "--rates",
            "40",
            "-d",
            "500ms",
        ],
        &dir,
    );
    assert_eq!(code, Some(0), "{text}");
    let m = &doc["probes"][0]["measure"];
    assert_eq!(m["iterations"], true, "{m:#}");
    let completed = m["completed"].as_u64().unwrap();
    assert!(completed >= 15, "{m:#}");
    let seen = server.counters().requests_to("/b");
    assert!(seen >= completed && seen <= completed + 2, "{seen} {m:#}");
    assert_eq!(doc["scenario"], "checkout", "{doc:#}");
    drop(generators);
}

/// What a scenario cannot take is refused before anything runs, naming the fix: a file that
/// is not there, and flags a scenario's steps set or a virtual user cannot do.
#[test]
fn capacity_refuses_a_missing_scenario_or_flags_it_cannot_take_with_the_fix() {
    let dir = tempdir("capacity-scenario-refused");
    let server = RouteServer::start(|_: &Seen| response(200, "ok").into());
    let file = two_steps(&dir, &server, "0s");
    let file = file.to_str().unwrap();
    let missing = dir.join("missing.toml");
    for (args, says) in [
        (
            vec!["capacity", "--scenario", missing.to_str().unwrap()],
            "check the path",
        ),
        (
            vec!["capacity", "--scenario", file, "--pipeline", "4"],
            "--pipeline: does not apply to a scenario",
        ),
        (
            vec!["sweep", "--rates", "10", "--scenario", file, "-m", "POST"],
            "drop -m, -H and --body",
        ),
        (
            vec!["capacity", "--var", "A=1", "http://127.0.0.1:9/"],
            "--scenario",
        ),
    ] {
        let out = run(&[&args[..], &["--no-save"]].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert_eq!(server.counters().requests(), 0);
}
