//! Shards beyond one machine, as a user runs them: `run --shard` with `--start-at` and
//! `merge`; the Kubernetes manifests read back through the typed API structures; results
//! collected from framed logs; and the Ansible playbook end to end, with ansible-core, on
//! three test hosts (network namespaces made here) loading one server whose own count of
//! requests must equal the merged result's.

use crate::common;
use crate::netns;
use common::loadlab;
use loadlab_testkit::ScratchDir;

use common::assert_valid;
use loadlab_result::{RunResult, ShardInfo};
use loadlab_testkit::{response, Behavior, TestServer};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn tempdir(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("dist-{name}"))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn read(path: &Path) -> RunResult {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The shards' start, by what a loaded machine cannot break: every shard was told one
/// instant and none began before it, the spread is the latest start less the earliest (by
/// the shards' own records), and the merge warns exactly when the spread passes its bound.
/// How close together three processes wake is the machine's to say: printed, not asserted.
fn check_start(merged: &RunResult, shown: &str) {
    let s = merged.shards.as_ref().unwrap();
    let infos: Vec<_> = merged
        .parts
        .iter()
        .map(|p| p.shard.as_ref().unwrap())
        .collect();
    let told = infos[0].start_at_unix_s.expect("--start-at");
    let starts: Vec<f64> = infos.iter().map(|i| i.started_unix_s).collect();
    for info in &infos {
        assert_eq!(info.start_at_unix_s, Some(told), "{info:?}");
        // Microseconds of rounding in the records, no more.
        assert!(info.started_unix_s >= told - 1e-5, "began early: {info:?}");
    }
    let (earliest, latest) = starts.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &t| {
        (lo.min(t), hi.max(t))
    });
    assert!(
        (s.start_spread_s - (latest - earliest)).abs() < 1e-5,
        "{s:?} {starts:?}"
    );
    let warned = shown.contains("shards started ");
    assert_eq!(
        warned,
        s.start_spread_s > s.start_spread_bound_s,
        "{s:?}\n{shown}"
    );
    // And says which shard began late, exactly when one did.
    let late = latest - told > s.start_spread_bound_s;
    assert_eq!(late, shown.contains("started after --start-at"), "{shown}");
    eprintln!(
        "shards started {:.1} ms apart, the latest {:.1} ms after --start-at",
        s.start_spread_s * 1e3,
        (latest - told) * 1e3
    );
}

/// `@UNIX_SECONDS` this far ahead.
fn start_in(d: Duration) -> String {
    let at = SystemTime::now() + d;
    format!(
        "@{:.3}",
        at.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
    )
}

#[test]
fn three_shards_started_together_merge_to_the_servers_own_count() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = tempdir("local");
    let at = start_in(Duration::from_millis(1500));
    let shards: Vec<_> = (1..=3)
        .map(|i| {
            let json = dir.join(format!("shard-{i}.json"));
            let child = loadlab()
                .args(["run", "--shard", &format!("{i}/3"), "--start-at", &at])
                .args(["--rate", "900", "-d", "1s", "-t", "1", "-q", "--json"])
                .arg(&json)
                .arg(server.url("/"))
                .spawn()
                .unwrap();
            (child, json)
        })
        .collect();
    let mut files = Vec::new();
    for (mut child, json) in shards {
        assert!(child.wait().unwrap().success());
        let value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_valid(&value);
        files.push(json);
    }
    let merged_path = dir.join("run.json");
    let db = dir.join("runs.db");
    let out = loadlab()
        .arg("merge")
        .args(&files)
        .arg("-o")
        .arg(&merged_path)
        .args(["--save", "--tag", "sharded", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("(tag sharded)"), "{shown}");
    let listed = loadlab()
        .args(["runs", "list", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(text(&listed).contains("sharded"), "{}", text(&listed));
    assert!(shown.contains("\nShards\n"), "{shown}");
    assert!(shown.contains("3 of 3 reported; started within"), "{shown}");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&merged_path).unwrap()).unwrap();
    assert_valid(&value);
    // Gates judge the merged result.
    let gated = loadlab()
        .arg("merge")
        .args(&files)
        .args(["-q", "--fail-if", "p99 > 1us", "--fail-if", "rps < 100"])
        .output()
        .unwrap();
    assert_eq!(gated.status.code(), Some(1), "{}", text(&gated));
    assert!(
        text(&gated).contains("gate FAILED: p99"),
        "{}",
        text(&gated)
    );
    assert!(
        text(&gated).contains("gate passed: rps"),
        "{}",
        text(&gated)
    );
    let merged = read(&merged_path);
    // Every arrival of the whole schedule, once: 900/s for 1 s, dealt out 300 each.
    assert_eq!(merged.measured.requests.issued, 900);
    assert_eq!(
        merged.measured.requests.completed,
        server.counters().requests()
    );
    assert_eq!(merged.parts.len(), 3);
    assert!(merged.parts.iter().all(|p| p.issued == 300));
    let s = merged.shards.as_ref().unwrap();
    assert_eq!(s.reported, [1, 2, 3]);
    check_start(&merged, &shown);
    assert!(
        merged
            .load
            .plan
            .starts_with("open loop, uniform arrivals: 1s at 900"),
        "{}",
        merged.load.plan
    );
}

#[test]
fn shards_of_different_runs_are_refused_and_a_late_start_too() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = tempdir("refuse");
    let run = |shard: &str, rate: &str, name: &str| {
        let json = dir.join(name);
        let out = loadlab()
            .args([
                "run", "--shard", shard, "--rate", rate, "-d", "200ms", "-t", "1", "-q",
            ])
            .arg("--json")
            .arg(&json)
            .arg(server.url("/"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        json
    };
    let a = run("1/2", "100", "a.json");
    let b = run("2/2", "200", "b.json");
    let out = loadlab().arg("merge").arg(&a).arg(&b).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("belongs to another run: its plan"),
        "{}",
        text(&out)
    );
    let c = run("2/3", "100", "c.json");
    let out = loadlab().arg("merge").arg(&a).arg(&c).output().unwrap();
    assert!(
        text(&out).contains("shard 2/3, but the first is one of 2 shards"),
        "{}",
        text(&out)
    );
    // A start time already gone.
    let out = loadlab()
        .args([
            "run",
            "--shard",
            "1/2",
            "--start-at",
            "@1000",
            "--rate",
            "10",
        ])
        .arg(server.url("/"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("can no longer start together"),
        "{}",
        text(&out)
    );
    // A closed loop too small to split.
    let out = loadlab()
        .args(["run", "--shard", "1/4", "-c", "3"])
        .arg(server.url("/"))
        .output()
        .unwrap();
    assert!(
        text(&out).contains("3 connections cannot be split into 4 shards"),
        "{}",
        text(&out)
    );
}

#[test]
fn kubernetes_manifests_parse_back_with_the_shards_the_plan_and_the_resources() {
    use loadlab_dist::k8s;
    let dir = tempdir("k8s");
    let body = dir.join("body.json");
    std::fs::write(&body, "{\"order\": 1}").unwrap();
    // A start time among the run flags: `run` takes it only beside `--shard`, which dist adds.
    let start_at = start_in(Duration::from_secs(3600));
    let out = loadlab()
        .args([
            "dist",
            "k8s",
            "--shards",
            "4",
            "--name",
            "checkout",
            "--namespace",
            "perf",
        ])
        .args([
            "--image",
            "registry.example/loadlab:0.1",
            "--cpu",
            "1500m",
            "--memory",
            "512Mi",
        ])
        .args([
            "--rate",
            "40000",
            "-d",
            "60s",
            "-H",
            "X-Test: a b",
            "-m",
            "POST",
            "--start-at",
            &start_at,
        ])
        .arg("--body-file")
        .arg(&body)
        .arg("http://checkout.perf.svc:8080/orders")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let yaml = String::from_utf8(out.stdout).unwrap();
    let m = k8s::parse(&yaml).expect("the manifests read back through the typed structures");
    let job = m.job.spec.as_ref().unwrap();
    assert_eq!(job.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!((job.completions, job.parallelism), (Some(4), Some(4)));
    assert_eq!(job.backoff_limit, Some(0));
    assert_eq!(m.job.metadata.namespace.as_deref(), Some("perf"));
    let pod = job.template.spec.as_ref().unwrap();
    let c = &pod.containers[0];
    assert_eq!(c.image.as_deref(), Some("registry.example/loadlab:0.1"));
    assert_eq!(
        c.command.as_ref().unwrap(),
        &[
            "loadlab",
            "dist",
            "pod",
            "--shards",
            "4",
            "--plan",
            "/etc/loadlab/args"
        ]
    );
    let res = c.resources.as_ref().unwrap();
    for side in [res.requests.as_ref().unwrap(), res.limits.as_ref().unwrap()] {
        assert_eq!(side["cpu"].0, "1500m");
        assert_eq!(side["memory"].0, "512Mi");
    }
    let anti = pod
        .affinity
        .as_ref()
        .unwrap()
        .pod_anti_affinity
        .as_ref()
        .unwrap();
    let term = &anti
        .required_during_scheduling_ignored_during_execution
        .as_ref()
        .unwrap()[0];
    assert_eq!(term.topology_key, "kubernetes.io/hostname");
    // The plan: one flag a line, the body file carried in the ConfigMap and pointed at.
    let data = m.plan.data.as_ref().unwrap();
    let args: Vec<&str> = data["args"].lines().collect();
    assert_eq!(
        args,
        [
            "--rate",
            "40000",
            "-d",
            "60s",
            "-H",
            "X-Test: a b",
            "-m",
            "POST",
            "--start-at",
            &start_at,
            "--body-file",
            "/etc/loadlab/body",
            "http://checkout.perf.svc:8080/orders"
        ]
    );
    assert_eq!(data["body"], "{\"order\": 1}");
    assert_eq!(
        pod.volumes.as_ref().unwrap()[0]
            .config_map
            .as_ref()
            .unwrap()
            .name,
        "checkout-plan"
    );
    // Written again from what was read, the same YAML: nothing was lost on the way.
    assert_eq!(k8s::to_yaml(&m), yaml);
    // Flags the shards set themselves, or that would act on each shard alone, are refused.
    for bad in [
        &["--shard", "1/2"][..],
        &["--json", "x.json"],
        &["--fail-if", "p99 > 1ms"],
    ] {
        let out = loadlab()
            .args(["dist", "k8s", "--shards", "2", "--rate", "10"])
            .args(bad)
            .arg("http://x:8080/")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}

/// A shard's result made from a saved one, as shard `index` of `count`.
fn synthetic_shard(index: u32, count: u32) -> RunResult {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../loadlab-report/tests/fixtures/open.json"
    );
    let mut r: RunResult = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    r.shard = Some(ShardInfo {
        index,
        count,
        plan_id: "0123456789abcdef".into(),
        whole_plan: "open loop, uniform arrivals: 10s at 4000 requests/s".into(),
        start_at: None,
        start_at_unix_s: None,
        started_wall: "2026-05-01T12:00:00.000000Z".into(),
        started_unix_s: 1_777_636_800.0 + f64::from(index) * 1e-4,
        clock_synced: Some(true),
        clock_error_s: Some(2e-4),
    });
    r
}

#[test]
fn collect_reads_framed_logs_and_names_a_missing_shard() {
    use loadlab_dist::frame::frame;
    let dir = tempdir("collect");
    let one = synthetic_shard(1, 4).measured.requests.completed;
    // Shard 1's log as `kubectl logs --prefix` shows it, the summary around the block.
    let prefixed: String = format!(
        "GET http://x/ ...\n{}Requests 1 completed\n",
        frame(&synthetic_shard(1, 4))
    )
    .lines()
    .map(|l| format!("[pod/checkout-0-x7k2p/loadlab] {l}\n"))
    .collect();
    let logs = [
        ("shard-0.log", prefixed),
        (
            "shard-1.log",
            "error: cannot resolve `checkout`: ...\n".to_string(),
        ),
        ("shard-2.log", frame(&synthetic_shard(3, 4))),
        (
            "shard-3.log",
            format!("noise\n{}", frame(&synthetic_shard(4, 4))),
        ),
    ];
    let paths: Vec<PathBuf> = logs
        .iter()
        .map(|(name, log)| {
            let p = dir.join(name);
            std::fs::write(&p, log).unwrap();
            p
        })
        .collect();
    let merged_path = dir.join("run.json");
    let out = loadlab()
        .args(["dist", "collect", "-o"])
        .arg(&merged_path)
        .arg("--from-logs")
        .args(&paths)
        .output()
        .unwrap();
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(5), "{shown}");
    assert!(
        shown.contains("3 of 4 shards reported: shard 2 missing"),
        "{shown}"
    );
    assert!(
        shown.contains("shard-1.log printed no result (its log ends: error: cannot resolve"),
        "{shown}"
    );
    let merged = read(&merged_path);
    assert_eq!(merged.measured.requests.completed, 3 * one);
    assert_eq!(merged.shards.as_ref().unwrap().missing, [2]);
    // With every shard's log, a whole run.
    std::fs::write(&paths[1], frame(&synthetic_shard(2, 4))).unwrap();
    let out = loadlab()
        .args(["dist", "collect", "-q", "-o"])
        .arg(&merged_path)
        .arg("--from-logs")
        .args(&paths)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(read(&merged_path).measured.requests.completed, 4 * one);
}

/// ansible-playbook: `$LOADLAB_ANSIBLE_PLAYBOOK`, the one scripts/setup.sh installs under
/// target/, or one on the PATH.
fn ansible_playbook() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LOADLAB_ANSIBLE_PLAYBOOK") {
        return Some(PathBuf::from(p));
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/ansible-venv/bin/ansible-playbook");
    if venv.exists() {
        return Some(venv);
    }
    let found = Command::new("ansible-playbook").arg("--version").output();
    found
        .ok()
        .filter(|o| o.status.success())
        .map(|_| PathBuf::from("ansible-playbook"))
}

#[test]
fn the_ansible_playbook_runs_three_shards_whose_merge_matches_the_servers_count() {
    let Some(playbook) = ansible_playbook() else {
        eprintln!(
            "SKIPPED: ansible-playbook is missing (bash scripts/setup.sh installs ansible-core)"
        );
        return;
    };
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: the test hosts are network namespaces, which need root");
        return;
    }
    let started = std::time::Instant::now();
    let dir = tempdir("ansible");
    // Three test hosts, each a network namespace with its own address, and the server in a
    // fourth; where namespaces cannot be made, three local hosts on loopback (and say why).
    let lab = match netns::Lab::new(3) {
        Ok(lab) => Some(lab),
        Err(why) => {
            eprintln!(
                "NOTE: no network namespaces here ({why}): three local hosts on loopback instead"
            );
            None
        }
    };
    let listener = match &lab {
        Some(lab) => netns::Lab::bind_in(&lab.server.0, (lab.server.1, 0).into()),
        None => std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
    };
    let server = common::Upstream::serve(listener);
    let addr = server.addr;
    let mut inventory = String::from("all:\n  hosts:\n");
    for i in 0..3 {
        inventory.push_str(&format!(
            "    gen{}:\n      ansible_connection: local\n      ansible_python_interpreter: \"{{{{ ansible_playbook_python }}}}\"\n",
            i + 1
        ));
        // Each host's files in this test's own directory: two runs at once must not meet
        // in /tmp/loadlab-gen1.
        inventory.push_str(&format!(
            "      loadlab_remote_dir: \"{}\"\n",
            dir.join(format!("gen{}", i + 1)).display()
        ));
        if let Some(lab) = &lab {
            inventory.push_str(&format!("      loadlab_netns: {}\n", lab.hosts[i].0));
        }
    }
    let inventory_path = dir.join("inventory.yml");
    std::fs::write(&inventory_path, inventory).unwrap();
    let merged_path = dir.join("run.json");
    let out = loadlab()
        .args(["dist", "ansible", "--inventory"])
        .arg(&inventory_path)
        .arg("--results-dir")
        .arg(dir.join("results"))
        .arg("--ansible-playbook")
        .arg(&playbook)
        .args(["--start-delay", "4s", "-o"])
        .arg(&merged_path)
        .args(["--rate", "600", "-d", "2s", "-t", "1"])
        .arg(format!("http://{addr}/"))
        .env("ANSIBLE_HOME", dir.join("ansible-home"))
        .env("ANSIBLE_LOCAL_TEMP", dir.join("ansible-tmp"))
        .env("ANSIBLE_REMOTE_TEMP", dir.join("ansible-tmp"))
        .env("ANSIBLE_NOCOLOR", "1")
        .output()
        .unwrap();
    let served = server.counters.snapshot().requests;
    drop(server);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    let merged = read(&merged_path);
    eprintln!(
        "{} shards through ansible-playbook: {} completed, the server counted {served}, in {:.1} s",
        merged.parts.len(),
        merged.measured.requests.completed,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(merged.measured.requests.completed, served);
    assert_eq!(merged.measured.requests.issued, 1_200);
    let s = merged.shards.as_ref().unwrap();
    assert_eq!((s.count, s.reported.as_slice()), (3, &[1, 2, 3][..]));
    check_start(&merged, &shown);
    assert!(shown.contains("3 of 3 reported"), "{shown}");
    drop(lab);
}
