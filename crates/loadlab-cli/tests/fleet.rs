//! The generator fleet as a user runs it (issue 41): test hosts are network namespaces made
//! here, joined by a bridge: a server host, a coordinator's host, and three generator hosts
//! each running `loadlab agent --generator`, each generator's link capped with `tbf` so that
//! one alone offers at most about half of what the server can serve.
//!
//! The server is the fixture with a fixed service time (500 µs: one server, so exactly
//! 2,000 requests/s). Each request carries a 2,000-byte body through its generator's link
//! (16 Mbit/s: about 950 requests/s each).
//!
//! Needs root and iproute2 with tbf: without them each test prints SKIPPED and passes.

mod common;
mod netns;

use common::{serial, shared, Killed};
use loadlab_testkit::ScratchDir;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const LOADLAB: &str = env!("CARGO_BIN_EXE_loadlab");
const FIXTURE: &str = env!("CARGO_BIN_EXE_loadlab-fixture");
/// The server's capacity: one server, 500 µs a request.
const CAPACITY: f64 = 2_000.0;
const SERVICE_US: &str = "500";
/// Each generator's link, and each request's body.
const LINK: &str = "16mbit";
const BODY_BYTES: usize = 2_000;

use netns::in_ns;

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A `loadlab agent --generator` in a host namespace, killed when dropped.
type Generator = netns::Agent;

fn generator(name: &str, ns: &str, addr: std::net::Ipv4Addr, dir: &Path) -> Generator {
    let listen = std::net::SocketAddr::from((addr, 7070));
    netns::Agent::start(LOADLAB, name, ns, listen, dir, &["--generator"])
}

/// The hosts: the server, the coordinator, three generators with capped links.
struct Fleet {
    lab: netns::Lab,
    server: Child,
    generators: Vec<Generator>,
    dir: ScratchDir,
    body: PathBuf,
}

impl Fleet {
    fn new(name: &str) -> Option<Fleet> {
        let lab = match netns::Lab::new(4) {
            Ok(lab) => lab,
            Err(e) => {
                eprintln!("SKIPPED: no test hosts here ({e})");
                return None;
            }
        };
        let dir = ScratchDir::new(&format!("fleet-{name}"));
        for (ns, _) in &lab.hosts[1..] {
            let shaped = Command::new("tc")
                .args([
                    "-n", ns, "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", LINK,
                ])
                .args(["burst", "32kb", "latency", "100ms"])
                .output();
            if !shaped.as_ref().is_ok_and(|o| o.status.success()) {
                eprintln!("SKIPPED: tc cannot shape a link here ({shaped:?})");
                return None;
            }
        }
        let (sns, saddr) = &lab.server;
        let server = in_ns(sns, FIXTURE)
            .args(["--service-us", SERVICE_US])
            .env("HOST", saddr.to_string())
            .env("PORT", "8081")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let generators = lab.hosts[1..]
            .iter()
            .enumerate()
            .map(|(i, (ns, addr))| generator(&format!("gen{}", i + 1), ns, *addr, &dir))
            .collect();
        let body = dir.join("body");
        std::fs::write(&body, vec![b'x'; BODY_BYTES]).unwrap();
        Some(Fleet {
            lab,
            server,
            generators,
            dir,
            body,
        })
    }

    /// A fleet file naming the generators `which` (indices).
    fn file(&self, which: &[usize]) -> PathBuf {
        let text: String = which
            .iter()
            .map(|i| self.generators[*i].entry.clone())
            .collect::<Vec<_>>()
            .join("\n");
        let path = self.dir.join(format!(
            "fleet-{}.toml",
            which.iter().map(|i| i.to_string()).collect::<String>()
        ));
        std::fs::write(&path, text).unwrap();
        path
    }

    fn url(&self) -> String {
        format!("http://{}:8081/", self.lab.server.1)
    }

    /// `loadlab ARGS` on the coordinator's host, bounded.
    fn loadlab(&self, args: &[&str], extra: impl FnOnce(&mut Command)) -> Output {
        let mut cmd = in_ns(&self.lab.hosts[0].0, LOADLAB);
        cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        extra(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(300);
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "loadlab {args:?} ran over 300 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        child.wait_with_output().unwrap()
    }

    fn capacity(&self, fleet: &Path) -> (Output, Value) {
        let json = self.dir.join("capacity.json");
        let body = self.body.display().to_string();
        let url = self.url();
        let out = self.loadlab(
            &[
                "capacity",
                "--no-save",
                "-q",
                "--slo",
                "p99<100ms",
                "-d",
                "2s",
                "--warmup",
                "500ms",
                "--cooldown",
                "300ms",
                "--tolerance",
                "0.04",
                "--start",
                "600",
                "--repeats",
                "1",
                "-m",
                "POST",
                "--body-file",
                &body,
            ],
            |c| {
                c.arg("--generators")
                    .arg(fleet)
                    .arg("--json")
                    .arg(&json)
                    .arg(&url);
            },
        );
        let doc = std::fs::read_to_string(&json)
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap_or_else(|e| panic!("no capacity document ({e}): {}", text(&out)));
        (out, doc)
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        for g in &mut self.generators {
            g.kill();
        }
    }
}

/// Three capped generators together find the server's capacity (within 5%); one of them
/// alone is named as the limit and no capacity is claimed.
#[test]
fn a_fleet_finds_the_servers_capacity_and_one_capped_generator_is_named_the_limit() {
    let _serial = serial();
    let Some(fleet) = Fleet::new("capacity") else {
        return;
    };
    let (out, doc) = fleet.capacity(&fleet.file(&[0, 1, 2]));
    assert_eq!(
        doc["finding"]["kind"],
        "capacity",
        "{}\n{}",
        doc["verdict"],
        text(&out)
    );
    let found = doc["finding"]["estimate"].as_f64().unwrap();
    eprintln!(
        "three generators: {found}/s against the server's {CAPACITY}/s, in {} probes",
        doc["probes"].as_array().map_or(0, Vec::len)
    );
    // 1,990/s on this VM in three runs out of three (the bar, 5%, is shown by
    // bench/fleet.sh). Asserted by what a busy machine cannot change: no search finds more
    // than the server serves; every probe's arrivals fell due on the fleet as offered (the
    // schedule is exact: a fleet that offered less would miss for want of load, not of the
    // server); and the estimate is near the capacity unless a probe below it missed, which a
    // server on a busy machine can (the capacity tests saw 186 for 200): then it is printed.
    assert!(
        found <= CAPACITY * 1.05,
        "the fleet found {found}/s, the server serves {CAPACITY}/s: {}",
        text(&out)
    );
    let probes = doc["probes"].as_array().unwrap();
    for p in probes {
        let m = &p["measure"];
        let asked = m["offered_per_s"].as_f64().unwrap() * m["duration_s"].as_f64().unwrap();
        let due = m["due"].as_u64().unwrap() as f64;
        // One arrival a generator either side of the measured phase's edges.
        assert!((due - asked).abs() <= 3.0 + asked * 0.001, "{m}");
    }
    let missed_below: Vec<f64> = probes
        .iter()
        .filter(|p| p["judgment"]["pass"].as_bool() != Some(true))
        .filter_map(|p| p["measure"]["offered_per_s"].as_f64())
        .filter(|&offered| offered < CAPACITY * 0.95)
        .collect();
    if missed_below.is_empty() {
        assert!(found >= CAPACITY * 0.88, "{found}: {}", text(&out));
    } else {
        eprintln!("NOTE: probes below the capacity missed ({missed_below:?}): a busy machine");
    }
    let (out, doc) = fleet.capacity(&fleet.file(&[1]));
    assert_eq!(
        doc["finding"]["kind"],
        "generator_limit",
        "one generator's link cannot offer the server's capacity: {}\n{}",
        doc["verdict"],
        text(&out)
    );
    eprintln!("one generator: {}", doc["verdict"]);
    let said = doc.to_string();
    assert!(said.contains("link was saturated"), "{said}");
    assert!(said.contains("gen2"), "the generator is named: {said}");
}

/// A count split over the fleet is exact: every request issued is answered, the shards add
/// up to the whole; then a generator's agent killed mid-run is named and the run is partial,
/// with what the others measured kept.
#[test]
fn a_fleet_run_is_exact_and_a_killed_generator_is_named() {
    // Counts, not rates: beside the fleet's other counting tests.
    let _shared = shared();
    let Some(mut fleet) = Fleet::new("run") else {
        return;
    };
    let file = fleet.file(&[0, 1, 2]);
    let json = fleet.dir.join("run.json");
    let url = fleet.url();
    let out = fleet.loadlab(&["run", "-q", "-c", "6", "-n", "3000"], |c| {
        c.arg("--generators")
            .arg(&file)
            .arg("--json")
            .arg(&json)
            .arg(&url);
    });
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let requests = &doc["measured"]["requests"];
    let warm = doc["warmup"]["requests"]["completed"].as_u64().unwrap_or(0);
    assert_eq!(
        requests["completed"].as_u64().unwrap() + warm,
        3000,
        "{requests}"
    );
    assert_eq!(requests["failed"], 0, "{requests}");
    assert_eq!(doc["shards"]["reported"], serde_json::json!([1, 2, 3]));
    let per_shard: Vec<u64> = doc["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["issued"].as_u64().unwrap())
        .collect();
    assert_eq!(per_shard.iter().sum::<u64>(), 3000, "{per_shard:?}");

    // Now a long run, and gen2's agent killed two seconds in.
    let json = fleet.dir.join("lost.json");
    let mut cmd = in_ns(&fleet.lab.hosts[0].0, LOADLAB);
    let run = cmd
        .args(["run", "-q", "--rate", "600", "-d", "8s"])
        .arg("--generators")
        .arg(&file)
        .arg("--json")
        .arg(&json)
        .arg(&url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Mid-run: waited for (the server has connections from the run), then two seconds in;
    // a fixed 4 s from the spawn let a slow fleet start lose gen2 before the run began.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = in_ns(&fleet.lab.server.0, "ss")
            .args(["-Htn", "state", "established", "( sport = :8081 )"])
            .output()
            .unwrap();
        if !out.stdout.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "the fleet's run never connected");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_secs(2));
    fleet.generators[1].kill();
    let out = run.wait_with_output().unwrap();
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}: {}", text(&out))),
    )
    .unwrap();
    assert_eq!(
        doc["shards"]["missing"],
        serde_json::json!([2]),
        "{}",
        text(&out)
    );
    let warnings = doc["warnings"].to_string();
    assert!(
        warnings.contains("generator gen2") && warnings.contains("was lost"),
        "{warnings}"
    );
    assert!(doc["verdicts"].to_string().contains("partial run"));
    // The other two generators' share is kept, whole: two thirds of the 4,800 arrivals of
    // 600/s over 8 s fell due on them, each one sent or counted as not sent (an exact
    // schedule, however busy the machine), and nothing was answered that was not sent.
    let count = |phase: &str, what: &str| doc[phase]["requests"][what].as_u64().unwrap_or(0);
    let due: u64 = ["warmup", "measured"]
        .iter()
        .map(|phase| count(phase, "issued") + count(phase, "not_sent"))
        .sum();
    assert_eq!(due, 3_200, "{}", doc["measured"]["requests"]);
    let completed = count("measured", "completed");
    assert!(
        completed > 0 && completed + count("measured", "failed") <= count("measured", "issued"),
        "{}",
        doc["measured"]["requests"]
    );
}

/// `/__stats`'s request count of a `loadlab upstream` on the server's host.
fn upstream_requests(fleet: &Fleet, port: u16) -> u64 {
    let url = format!("http://{}:{port}/__stats", fleet.lab.server.1);
    let out = in_ns(&fleet.lab.hosts[0].0, "curl")
        .args(["-sf", &url])
        .output()
        .expect("curl");
    let stats: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{url}: {e}: {}", text(&out)));
    stats["requests"].as_u64().unwrap()
}

/// Every stored run of `db`, exported (through the coordinator's loadlab).
fn stored_runs(fleet: &Fleet, db: &Path) -> Vec<Value> {
    let db = db.to_str().unwrap();
    let listed = fleet.loadlab(&["runs", "list", "-n", "100", "--db", db], |_| {});
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|id| id.parse::<u64>().is_ok())
        .map(|id| {
            let out = fleet.loadlab(&["runs", "export", id, "--db", db], |_| {});
            let run: Value = serde_json::from_slice(&out.stdout).expect("JSON");
            common::assert_valid(&run);
            run
        })
        .collect()
}

/// An interleaved experiment over the fleet (two servers, 1 ms and 4 ms a request) gives the
/// verdict one generator gives, and every request its runs issued reached its server: each
/// server's own count is its runs' issued requests plus the one readiness check.
#[test]
fn an_experiment_over_the_fleet_is_exact_and_decides_as_one_generator_does() {
    // Counts, not rates: beside the fleet's other counting tests.
    let _shared = shared();
    let Some(mut fleet) = Fleet::new("experiment") else {
        return;
    };
    let (sns, saddr) = fleet.lab.server.clone();
    let mut upstreams = Vec::new();
    // 9101 and 9102 for the experiment over the fleet, 9103 and 9104 for the one from the
    // coordinator alone, which runs at the same time (each server's count is its own runs').
    for (port, delay) in [
        (9101u16, "1ms"),
        (9102, "4ms"),
        (9103, "1ms"),
        (9104, "4ms"),
    ] {
        upstreams.push(Killed(
            in_ns(&sns, LOADLAB)
                .args(["upstream", "--host", &saddr.to_string(), "--port"])
                .arg(port.to_string())
                .args(["--delay", delay])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        ));
    }
    let experiment = |name: &str, quick: u16, slow: u16| {
        let file = fleet.dir.join(format!("{name}.toml"));
        std::fs::write(
            &file,
            format!(
                "name = \"{name}\"\nrepetitions = 5\nseed = 3\nwarmup = \"0s\"\nduration = \
                 \"1s\"\ncooldown = \"0s\"\n[load]\nrate = 300\n[[variant]]\nname = \
                 \"quick\"\nurl = \"http://{saddr}:{quick}\"\n[[variant]]\nname = \"slow\"\nurl \
                 = \"http://{saddr}:{slow}\"\n"
            ),
        )
        .unwrap();
        file
    };
    // Wait for both servers.
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline
        && [9101, 9102, 9103, 9104]
            .iter()
            .any(|&port| std::panic::catch_unwind(|| upstream_requests(&fleet, port)).is_err())
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    let before = [
        upstream_requests(&fleet, 9101),
        upstream_requests(&fleet, 9102),
    ];
    let db = fleet.dir.join("fleet.db");
    let fleet_file = fleet.file(&[0, 1, 2]);
    let local_db = fleet.dir.join("local.db");
    let (out, alone) = std::thread::scope(|s| {
        // The same experiment from the coordinator alone, at the same time.
        let alone = s.spawn(|| {
            fleet.loadlab(&["experiment"], |c| {
                c.arg(experiment("one-generator", 9103, 9104))
                    .arg("--db")
                    .arg(&local_db);
            })
        });
        let out = fleet.loadlab(&["experiment"], |c| {
            c.arg(experiment("over-fleet", 9101, 9102))
                .arg("--generators")
                .arg(&fleet_file)
                .arg("--db")
                .arg(&db);
        });
        (out, alone.join().unwrap())
    });
    assert!(out.status.success(), "{}", text(&out));
    let over_fleet = text(&out);
    let after = [
        upstream_requests(&fleet, 9101),
        upstream_requests(&fleet, 9102),
    ];
    let runs = stored_runs(&fleet, &db);
    assert_eq!(runs.len(), 10, "{over_fleet}");
    for (arm, port) in [("quick", 0usize), ("slow", 1)] {
        let issued: u64 = runs
            .iter()
            .filter(|r| {
                r["target"]["url"]
                    .as_str()
                    .unwrap()
                    .contains(&format!(":910{}", port + 1))
            })
            .map(|r| {
                r["measured"]["requests"]["issued"].as_u64().unwrap()
                    + r["warmup"]["requests"]["issued"].as_u64().unwrap_or(0)
            })
            .sum();
        assert_eq!(
            after[port] - before[port],
            issued + 1,
            "{arm}: the server counted {} requests; its runs issued {issued} (+1 readiness check)",
            after[port] - before[port]
        );
        for r in runs.iter().filter(|r| r["shards"]["count"] == 3) {
            assert_eq!(r["shards"]["reported"], serde_json::json!([1, 2, 3]));
        }
    }
    // The same experiment from the coordinator alone: the same verdict on p50.
    assert!(alone.status.success(), "{}", text(&alone));
    let alone = text(&alone);
    // The p50 row of the comparison table ("slow against ...", then a row per metric).
    let verdict = |said: &str| {
        said.lines()
            .skip_while(|l| !l.contains("slow against"))
            .find(|l| l.trim_start().starts_with("p50"))
            .map(|l| {
                if l.contains("slower") {
                    "slower"
                } else if l.contains("faster") {
                    "faster"
                } else {
                    "other"
                }
            })
            .unwrap_or("none")
    };
    assert_eq!(verdict(&over_fleet), "slower", "{over_fleet}");
    assert_eq!(verdict(&over_fleet), verdict(&alone), "{alone}");
    drop(upstreams);
    fleet.generators.clear();
}

/// `--generators ansible:INVENTORY:GROUP` end to end, with ansible-core against three
/// namespaced hosts (`ansible_connection: local`, each agent entered into its host's network
/// namespace by the playbook): the first run starts an agent on each host of the group and
/// its count is exact against the server's own; the second reuses them (same PIDs, nothing
/// started); the documented stop ends them, by the PIDs they recorded. A host outside the
/// group gets nothing; no token is ever printed.
#[test]
fn ansible_inventory_starts_generator_agents_reuses_them_and_stops_them() {
    // Counts, not rates: beside the fleet's other counting tests.
    let _shared = shared();
    let started = Instant::now();
    let ansible_playbook = std::env::var_os("LOADLAB_ANSIBLE_PLAYBOOK")
        .map(PathBuf::from)
        .or_else(|| {
            let venv = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/ansible-venv/bin/ansible-playbook");
            venv.exists().then_some(venv)
        })
        .or_else(|| {
            Command::new("ansible-playbook")
                .arg("--version")
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|_| PathBuf::from("ansible-playbook"))
        });
    let Some(ansible_playbook) = ansible_playbook else {
        eprintln!(
            "SKIPPED: ansible-playbook is missing (bash scripts/setup.sh installs ansible-core)"
        );
        return;
    };
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: the test hosts are network namespaces, which need root");
        return;
    }
    let lab = match netns::Lab::new(4) {
        Ok(lab) => lab,
        Err(e) => {
            eprintln!("SKIPPED: no test hosts here ({e})");
            return;
        }
    };
    let dir = ScratchDir::new("fleet-ansible");

    // The server: loadlab upstream in the server's namespace, counting what it answers.
    let server =
        common::Upstream::serve(netns::Lab::bind_in(&lab.server.0, (lab.server.1, 0).into()));
    let addr = server.addr;

    /// Each host's agent PID, from its state dir's record (`None` while none is recorded).
    fn agent_pid(state: &Path) -> Option<u32> {
        let record: Value =
            serde_json::from_slice(&std::fs::read(state.join("run/agent.json")).ok()?).ok()?;
        record["pid"].as_u64().map(|p| p as u32)
    }
    /// Alive: in /proc and not a zombie waiting for its reaper.
    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| !r.trim_start().starts_with('Z'))
        })
    }
    /// The agents the playbook started, killed by PID when the test ends, failed or not
    /// (only a process whose command line names this test's state dir).
    struct Agents(Vec<PathBuf>);
    impl Drop for Agents {
        fn drop(&mut self) {
            for state in &self.0 {
                let Some(pid) = agent_pid(state) else {
                    continue;
                };
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                if alive(pid)
                    && String::from_utf8_lossy(&cmdline).contains(&*state.to_string_lossy())
                {
                    // SAFETY: kill(2) on a PID checked just above to be this test's agent.
                    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                }
            }
        }
    }
    let hosts: Vec<(String, PathBuf)> = (1..=3)
        .map(|i| (format!("gen{i}"), dir.join(format!("gen{i}"))))
        .collect();
    let agents = Agents(hosts.iter().map(|(_, d)| d.join("state")).collect());

    let host_entry = |name: &str, ns: &str, ip: std::net::Ipv4Addr| {
        format!(
            "        {name}:\n          ansible_connection: local\n          \
             ansible_python_interpreter: \"{{{{ ansible_playbook_python }}}}\"\n          \
             loadlab_netns: {ns}\n          loadlab_agent_listen: \"{ip}:7070\"\n          \
             loadlab_generator_dir: \"{}\"\n",
            dir.join(name).display()
        )
    };
    let mut inventory = String::from("all:\n  children:\n    loadgen:\n      hosts:\n");
    for (i, (name, _)) in hosts.iter().enumerate() {
        let (ns, ip) = &lab.hosts[i + 1];
        inventory.push_str(&host_entry(name, ns, *ip));
    }
    // A host of another group, which must get nothing.
    inventory.push_str("    others:\n      hosts:\n");
    inventory.push_str(&host_entry("spare", &lab.hosts[0].0, lab.hosts[0].1));
    let inventory_path = dir.join("inventory.yml");
    std::fs::write(&inventory_path, inventory).unwrap();
    let xdg = dir.join("xdg-state");
    let ansible_env = |c: &mut Command| {
        c.env("LOADLAB_ANSIBLE_PLAYBOOK", &ansible_playbook)
            .env("XDG_STATE_HOME", &xdg)
            .env("ANSIBLE_HOME", dir.join("ansible-home"))
            .env("ANSIBLE_LOCAL_TEMP", dir.join("ansible-tmp"))
            .env("ANSIBLE_REMOTE_TEMP", dir.join("ansible-tmp"))
            .env("ANSIBLE_NOCOLOR", "1");
    };
    let fleet_arg = format!("ansible:{}:loadgen", inventory_path.display());
    let url = format!("http://{addr}/");

    // One run over the group, on the coordinator's host; the server's count is exact.
    let run = |n: u64, json: &Path| -> (Output, Value, u64) {
        let before = server.counters.snapshot().requests;
        let mut cmd = in_ns(&lab.hosts[0].0, LOADLAB);
        cmd.args(["run", "-q", "-c", "6", "-n", &n.to_string()])
            .args(["--generators", &fleet_arg, "--json"])
            .arg(json)
            .arg(&url)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        ansible_env(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(300);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("loadlab run --generators {fleet_arg} ran over 300 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        let issued = doc["measured"]["requests"]["issued"].as_u64().unwrap()
            + doc["warmup"]["requests"]["issued"].as_u64().unwrap_or(0);
        let completed = doc["measured"]["requests"]["completed"].as_u64().unwrap()
            + doc["warmup"]["requests"]["completed"].as_u64().unwrap_or(0);
        let served = server.counters.snapshot().requests - before;
        eprintln!(
            "{fleet_arg}: issued {issued}, completed {completed}, the server counted {served}; \
             shards reported {}",
            doc["shards"]["reported"]
        );
        for line in text(&out).lines() {
            if line.starts_with("generator agents from") {
                eprintln!("  {line}");
            }
        }
        assert_eq!(issued, n, "{}", text(&out));
        assert_eq!(completed, n, "{}", text(&out));
        assert_eq!(served, issued, "the server's own count against the issued");
        assert_eq!(doc["shards"]["reported"], serde_json::json!([1, 2, 3]));
        (out, doc, served)
    };

    let (first, _, _) = run(3000, &dir.join("first.json"));
    let said = text(&first);
    assert!(
        said.contains("started on gen1 (pid") && !said.contains("reused"),
        "{said}"
    );
    let pids: Vec<u32> = agents
        .0
        .iter()
        .map(|s| agent_pid(s).expect("each host's agent recorded its PID"))
        .collect();
    assert!(pids.iter().all(|p| alive(*p)), "{pids:?}");
    assert!(
        !dir.join("spare").exists(),
        "a host outside the group got an agent"
    );

    // The second command reuses them: nothing started, the same processes.
    let (second, _, _) = run(3000, &dir.join("second.json"));
    let said = text(&second);
    assert!(
        said.contains("already running, reused on gen1 (pid") && !said.contains("started on"),
        "{said}"
    );
    let again: Vec<u32> = agents.0.iter().map(|s| agent_pid(s).unwrap()).collect();
    assert_eq!(again, pids, "the agents were restarted");
    assert!(pids.iter().all(|p| alive(*p)), "{pids:?}");

    // What the controller kept: private, and no token in anything printed or logged.
    let kept = xdg.join("loadlab/generators");
    let key_dir = std::fs::read_dir(&kept)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mode = |p: &Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions())
            & 0o777
    };
    assert_eq!(mode(&key_dir), 0o700);
    for (name, state) in &hosts {
        let fetched = key_dir.join(name).join("token");
        assert_eq!(mode(&fetched), 0o600, "{}", fetched.display());
        let token = std::fs::read_to_string(state.join("state/token")).unwrap();
        assert_eq!(std::fs::read_to_string(&fetched).unwrap(), token);
        let ansible_log = std::fs::read_to_string(key_dir.join("ansible.log")).unwrap();
        for shown in [text(&first), text(&second), ansible_log] {
            assert!(!shown.contains(token.trim()), "{name}'s token was printed");
        }
    }

    // The documented stop: the playbook with loadlab_generators_state=stopped.
    let playbook =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/ansible/generators.yml");
    let mut stop = Command::new(&ansible_playbook);
    stop.arg("-i")
        .arg(&inventory_path)
        .arg(&playbook)
        .args([
            "-e",
            "loadlab_hosts=loadgen",
            "-e",
            "loadlab_generators_state=stopped",
        ])
        .env("LC_ALL", "C.UTF-8");
    ansible_env(&mut stop);
    let out = stop.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    for pid in &pids {
        assert!(
            text(&out).contains(&format!("stopped the agent (pid {pid})")),
            "{}",
            text(&out)
        );
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        pids.iter().all(|p| !alive(*p)),
        "an agent outlived the stop: {pids:?}"
    );
    eprintln!(
        "agents {pids:?} started, reused, stopped; in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    drop(agents);
    drop(server);
    drop(lab);
}

/// The limit loadlab cannot see (issue 52): a generator host whose downlink is capped where a
/// provider caps it (10 Mbit/s on the bridge's side, invisible from the host) runs against a
/// fast server answering 12 KB: the run names a queue on its path (docs/path.md). A host with
/// an uncapped path runs against a CPU-bound server (240 requests/s, one at a time): its
/// response times are as long, and no path is blamed. A capacity search over the capped
/// path claims no capacity for the server.
#[test]
fn a_capped_downlink_is_named_as_the_path_and_a_cpu_bound_server_behind_a_wide_one_is_not() {
    let _serial = serial();
    let lab = match netns::Lab::new(2) {
        Ok(lab) => lab,
        Err(e) => {
            eprintln!("SKIPPED: no test hosts here ({e})");
            return;
        }
    };
    if let Err(e) = lab.cap_down(0, "10mbit") {
        eprintln!("SKIPPED: tc cannot shape a link here ({e})");
        return;
    }
    let dir = ScratchDir::new("fleet-path-verdict");
    let (sns, saddr) = lab.server.clone();
    let serve = |port: &str, args: &[&str]| {
        let mut child = in_ns(&sns, FIXTURE)
            .args(args)
            .arg("--print-address")
            .env("HOST", saddr.to_string())
            .env("PORT", port)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        assert!(line.starts_with("listening on"), "{line}");
        Killed(child)
    };
    let _fast = serve("8081", &[]);
    let _serial_server = serve("8082", &["--service-us", "4166"]);
    let run = |host: usize, port: u16, name: &str| -> Value {
        let json = dir.join(name);
        let out = in_ns(&lab.hosts[host].0, LOADLAB)
            .args([
                "run",
                "--no-save",
                "-q",
                "-c",
                "16",
                "-d",
                "2s",
                "--warmup",
                "500ms",
            ])
            .arg("--json")
            .arg(&json)
            .arg(format!("http://{saddr}:{port}/bytes?n=12288"))
            .output()
            .unwrap();
        std::fs::read_to_string(&json)
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap_or_else(|e| panic!("no result ({e}): {}", text(&out)))
    };
    let on_path = |doc: &Value| {
        doc["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .find(|v| v.contains("a queue on the path"))
            .map(str::to_string)
    };
    let capped = run(0, 8081, "capped.json");
    let said = on_path(&capped).unwrap_or_else(|| {
        panic!(
            "the capped path is not named: {}\n{}",
            capped["verdicts"], capped["path"]
        )
    });
    eprintln!("capped: {said}");
    assert!(said.contains("the path to this machine carried"), "{said}");
    // The evidence: the generator's goodput at the cap (10 Mbit/s, less TCP's and HTTP's
    // overhead and the bucket's bursts), its round trip tens of milliseconds over the minimum.
    let report = &capped["path"][0];
    assert_eq!(report["side"], "generator");
    let measured: Vec<&Value> = report["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["warmup"] == false)
        .collect();
    for i in &measured {
        let mbit = i["received_per_s"].as_f64().unwrap() * 8.0 / 1e6;
        assert!((7.0..=10.5).contains(&mbit), "{mbit} Mbit/s: {i}");
    }
    // A capacity search from the capped host claims no capacity for the server: its first
    // probe (twice what the cap carries) misses with the queue on the path.
    let json = dir.join("capacity.json");
    let out = in_ns(&lab.hosts[0].0, LOADLAB)
        .args([
            "capacity",
            "--no-save",
            "-q",
            "--slo",
            "p99<500ms",
            "-d",
            "2s",
        ])
        .args(["--warmup", "500ms", "--cooldown", "300ms", "--repeats", "1"])
        .args(["--start", "200", "--json"])
        .arg(&json)
        .arg(format!("http://{saddr}:8081/bytes?n=12288"))
        .output()
        .unwrap();
    let doc: Value = std::fs::read_to_string(&json)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or_else(|e| panic!("no capacity document ({e}): {}", text(&out)));
    let verdict = doc["verdict"].as_str().unwrap_or_default();
    eprintln!("capacity: {verdict}");
    let evidence: Vec<&Value> = doc["probes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["measure"]["path"])
        .collect();
    assert_ne!(
        doc["finding"]["kind"], "capacity",
        "{verdict}\n{evidence:?}"
    );
    assert!(
        verdict.starts_with("no capacity found for the server: the path to this machine"),
        "{verdict}\n{}",
        text(&out)
    );
    assert_eq!(doc["probes"][0]["measure"]["path"][0]["verdict"], "path");
    let cpu = run(1, 8082, "cpu.json");
    assert_eq!(on_path(&cpu), None, "{}", cpu["verdicts"]);
    // It was the server's limit, with response times of the same order.
    let p50 = cpu["measured"]["latency_us"]["p50"].as_f64().unwrap();
    assert!(p50 > 20_000.0, "the CPU-bound server queued: p50 {p50} us");
}
