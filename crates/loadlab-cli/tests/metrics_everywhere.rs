//! The metrics flags beyond `loadlab run` (issue 31), as a user runs them against real
//! programs: an experiment of two arms whose every stored run carries the Python app's scraped
//! series and whose live series Debian's Prometheus tells apart by arm; a capacity search
//! whose every probe carries its own scrapes and run id; and an https endpoint behind a bearer
//! token (a Python `ssl` server, its CA and certificate made by the `openssl` command line),
//! scraped with `--metrics-cacert` and `--metrics-token-file`, its refusals counted and named;
//! and the same endpoint with the self-signed certificate `openssl req -x509` makes, trusted
//! when `--metrics-cacert` names that very file (issue 45 item 3).
//! Programs that are missing are SKIPPED (scripts/setup.sh installs them).

mod common;
use loadlab_testkit::ScratchDir;

#[path = "../../loadlab-metrics/tests/common/mod.rs"]
mod programs;

use loadlab_testkit::{response, Behavior, TestServer};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LOADLAB: &str = env!("CARGO_BIN_EXE_loadlab");

fn scratch(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("metrics-cli-{name}"))
}

fn loadlab(args: &[&str]) -> Output {
    Command::new(LOADLAB)
        .args(args)
        .output()
        .expect("loadlab runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// Every stored run's result (`runs list`, then `runs export` each).
fn stored_runs(db: &Path) -> Vec<Value> {
    let db = db.to_str().unwrap();
    let listed = loadlab(&["runs", "list", "-n", "100", "--db", db]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|id| id.parse::<u64>().is_ok())
        .map(|id| {
            let out = loadlab(&["runs", "export", id, "--db", db]);
            assert!(out.status.success(), "{}", stderr(&out));
            let run: Value = serde_json::from_slice(&out.stdout).expect("JSON");
            common::assert_valid(&run);
            run
        })
        .collect()
}

fn now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The run's completed count as the live counter carried it (warm-up included).
fn completed_total(run: &Value) -> f64 {
    let warm = run["warmup"]["requests"]["completed"]
        .as_f64()
        .unwrap_or(0.0);
    run["measured"]["requests"]["completed"].as_f64().unwrap() + warm
}

#[test]
fn an_experiments_runs_carry_their_scrapes_and_prometheus_tells_the_arms_apart() {
    let Some(app) = programs::python_app() else {
        return;
    };
    let Some(prom) = programs::prometheus() else {
        return;
    };
    let fast = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let slow = TestServer::start(Behavior::Fixed(response(200, "slower")));
    let dir = scratch("experiment");
    let name = format!("h15-{}", std::process::id());
    let file = dir.join("e.toml");
    std::fs::write(
        &file,
        format!(
            r#"name = "{name}"
repetitions = 2
seed = 7
warmup = "0s"
duration = "1s"
cooldown = "0s"
[load]
rate = 100
[[variant]]
name = "fast"
url = "{}"
[[variant]]
name = "slow"
url = "{}"
"#,
            fast.url("").trim_end_matches('/'),
            slow.url("").trim_end_matches('/')
        ),
    )
    .unwrap();
    let db = dir.join("runs.db");
    let out = Command::new(LOADLAB)
        .arg("experiment")
        .arg(&file)
        .arg("--db")
        .arg(&db)
        .args([
            "--server-metrics",
            &format!("http://{}/metrics", app.addr),
            "--server-metrics-select",
            "process_open_fds",
            "--server-metrics-interval",
            "250ms",
            "--metrics-out",
            &format!("prometheus+remote-write://{}/api/v1/write", prom.addr),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = stored_runs(&db);
    assert_eq!(runs.len(), 4, "{}", stderr(&out));
    let mut by_arm = std::collections::BTreeMap::<String, f64>::new();
    for run in &runs {
        // Each stored run has its own scrapes, on its own timeline.
        let e = &run["server_metrics"]["endpoints"][0];
        assert_eq!(e["scrapes_failed"], 0, "{e}");
        assert!(e["scrapes_ok"].as_u64().unwrap() >= 4, "{e}");
        let fds = &e["series"][0];
        assert_eq!(fds["series"], "process_open_fds");
        let last_t = fds["points"].as_array().unwrap().last().unwrap()["t_s"]
            .as_f64()
            .unwrap();
        assert!((0.8..2.5).contains(&last_t), "{fds}");
        assert!(run["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| !w.as_str().unwrap().contains("metrics out")));
        let arm = run["command"][2].as_str().unwrap().to_string();
        assert!(arm.starts_with(&format!("{name}:")), "{arm}");
        *by_arm
            .entry(arm.rsplit(':').next().unwrap().to_string())
            .or_default() += completed_total(run);
    }
    assert_eq!(by_arm.len(), 2, "{by_arm:?}");
    // PromQL by the variant label gives back each arm's completed count exactly: two runs
    // each, told apart by their run ids.
    let now = now_s();
    for (arm, completed) in &by_arm {
        let promql = format!(
            "sum(max_over_time(loadlab_requests_completed_total{{experiment=\"{name}\",variant=\"{arm}\"}}[5m]))"
        );
        assert_eq!(
            programs::query(&prom.addr, &promql, now),
            Some(*completed),
            "{promql}"
        );
        let run_ids = format!(
            "count(count by (run_id) (loadlab_requests_completed_total{{variant=\"{arm}\"}}))"
        );
        assert_eq!(programs::query(&prom.addr, &run_ids, now), Some(2.0));
    }
}

#[test]
fn an_experiment_files_metrics_table_scrapes_every_run_and_a_bad_one_is_named() {
    let Some(app) = programs::python_app() else {
        return;
    };
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = scratch("experiment-table");
    let file = dir.join("e.toml");
    let experiment = |metrics: &str| {
        format!(
            r#"name = "table"
repetitions = 1
warmup = "0s"
duration = "1s"
cooldown = "0s"
[load]
rate = 50
[[variant]]
name = "a"
url = "{url}"
[[variant]]
name = "b"
url = "{url}"
[metrics]
{metrics}
"#,
            url = server.url("").trim_end_matches('/')
        )
    };
    std::fs::write(
        &file,
        experiment(&format!(
            "server_metrics = [\"http://{}/metrics\"]\ninterval = \"250ms\"",
            app.addr
        )),
    )
    .unwrap();
    let db = dir.join("runs.db");
    let out = Command::new(LOADLAB)
        .arg("experiment")
        .arg(&file)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = stored_runs(&db);
    assert_eq!(runs.len(), 2);
    for run in &runs {
        let e = &run["server_metrics"]["endpoints"][0];
        assert_eq!(e["scrapes_failed"], 0, "{e}");
        assert!(e["scrapes_ok"].as_u64().unwrap() >= 4, "{e}");
    }
    // A table the flags would refuse is refused the same way, naming the file and the table.
    std::fs::write(&file, experiment("server_metrics = [\"ftp://h/metrics\"]")).unwrap();
    let out = Command::new(LOADLAB)
        .arg("experiment")
        .arg(&file)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(
        e.contains("[metrics]") && e.contains("ftp") && e.contains("write e.g."),
        "{e}"
    );
}

#[test]
fn every_probe_of_a_capacity_search_carries_its_own_scrapes() {
    let Some(app) = programs::python_app() else {
        return;
    };
    let Some(prom) = programs::prometheus() else {
        return;
    };
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = scratch("capacity");
    let (db, json) = (dir.join("runs.db"), dir.join("capacity.json"));
    let tag = format!("h15-capacity-{}", std::process::id());
    // Doubling from 100/s to the 200/s ceiling: two probes, then the search stops there.
    let out = Command::new(LOADLAB)
        .args(["capacity", "--start", "100", "--max-rate", "200"])
        .args([
            "--repeats",
            "1",
            "-d",
            "1s",
            "--warmup",
            "0s",
            "--cooldown",
            "0s",
        ])
        .args(["--tag", &tag])
        .arg("--db")
        .arg(&db)
        .arg("--json")
        .arg(&json)
        .args([
            "--server-metrics",
            &format!("http://{}/metrics", app.addr),
            "--server-metrics-interval",
            "250ms",
            "--metrics-out",
            &format!("prometheus+remote-write://{}/api/v1/write", prom.addr),
            &server.url("/"),
        ])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out))),
    )
    .unwrap();
    let probes = doc["probes"].as_array().unwrap().len();
    assert!(probes >= 2, "{doc}");
    let runs = stored_runs(&db);
    assert_eq!(runs.len(), probes, "{}", stderr(&out));
    for run in &runs {
        let e = &run["server_metrics"]["endpoints"][0];
        assert_eq!(e["scrapes_failed"], 0, "{e}");
        assert!(e["scrapes_ok"].as_u64().unwrap() >= 4, "{e}");
        // The app's own CPU stands in for the server's, probe by probe.
        assert_eq!(run["server"]["source"], "metrics", "{}", run["server"]);
    }
    // Each probe's series under a run id of its own, all under the search's tag.
    let now = now_s();
    let run_ids =
        format!("count(count by (run_id) (loadlab_requests_completed_total{{tag=\"{tag}\"}}))");
    assert_eq!(
        programs::query(&prom.addr, &run_ids, now),
        Some(probes as f64)
    );
    let total =
        format!("sum(max_over_time(loadlab_requests_completed_total{{tag=\"{tag}\"}}[5m]))");
    let completed: f64 = runs.iter().map(completed_total).sum();
    assert_eq!(programs::query(&prom.addr, &total, now), Some(completed));
}

#[test]
fn every_step_of_a_sweep_carries_its_own_scrapes() {
    let Some(app) = programs::python_app() else {
        return;
    };
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = scratch("sweep");
    let (db, json) = (dir.join("runs.db"), dir.join("sweep.json"));
    let out = Command::new(LOADLAB)
        .args(["sweep", "--rates", "50,100", "-d", "1s", "--warmup", "0s"])
        .args(["--cooldown", "0s", "--db"])
        .arg(&db)
        .arg("--json")
        .arg(&json)
        .args([
            "--server-metrics",
            &format!("http://{}/metrics", app.addr),
            "--server-metrics-interval",
            "250ms",
            &server.url("/"),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = stored_runs(&db);
    assert_eq!(runs.len(), 2, "{}", stderr(&out));
    let mut completed: Vec<f64> = runs.iter().map(completed_total).collect();
    completed.sort_by(f64::total_cmp);
    assert_eq!(completed, vec![50.0, 100.0]);
    for run in &runs {
        let e = &run["server_metrics"]["endpoints"][0];
        assert_eq!(e["scrapes_failed"], 0, "{e}");
        assert!(e["scrapes_ok"].as_u64().unwrap() >= 4, "{e}");
    }
}

/// A CA, and a certificate for 127.0.0.1 it signed, made by the openssl command line.
fn make_certificates(dir: &Path) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let openssl = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .map(|o| assert!(o.status.success(), "openssl {args:?}: {}", stderr(&o)))
    };
    if openssl(&["version"]).is_err() {
        println!("SKIPPED: the openssl command line is missing (apt-get install openssl)");
        return None;
    }
    let subj_ca = "/CN=loadlab test CA";
    openssl(&[
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "1", "-subj", subj_ca,
    ])
    .unwrap();
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ])
    .unwrap();
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "1",
        "-extfile",
        "ext.cnf",
    ])
    .unwrap();
    Some((
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    ))
}

/// A Python https server answering /metrics only with `Authorization: Bearer TOKEN`.
fn https_metrics(dir: &Path, cert: &Path, key: &Path, token: &str) -> programs::Running {
    std::fs::write(
        dir.join("https_metrics.py"),
        format!(
            "import http.server, ssl, sys, time\n\
             start = time.time()\n\
             class H(http.server.BaseHTTPRequestHandler):\n    \
                 def do_GET(self):\n        \
                     if self.headers.get('Authorization') != 'Bearer {token}':\n            \
                         self.send_response(401); self.end_headers(); return\n        \
                     body = ('# TYPE app_uptime_seconds gauge\\napp_uptime_seconds %f\\n' % (time.time() - start)).encode()\n        \
                     self.send_response(200)\n        \
                     self.send_header('Content-Type', 'text/plain; version=0.0.4')\n        \
                     self.send_header('Content-Length', str(len(body)))\n        \
                     self.end_headers(); self.wfile.write(body)\n    \
                 def log_message(self, *a):\n        pass\n\
             s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)\n\
             ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n\
             ctx.load_cert_chain('{}', '{}')\n\
             s.socket = ctx.wrap_socket(s.socket, server_side=True)\n\
             print('listening on', '127.0.0.1:%d' % s.server_address[1], flush=True)\n\
             s.serve_forever()\n",
            cert.display(),
            key.display()
        ),
    )
    .unwrap();
    let mut cmd = Command::new("python3");
    cmd.arg(dir.join("https_metrics.py"));
    programs::start_and_read_addr(cmd, dir.to_path_buf(), "listening on ")
}

#[test]
fn an_https_endpoint_behind_a_token_is_scraped_with_its_ca_and_refusals_are_named() {
    let dir = scratch("https");
    let Some((ca, cert, key)) = make_certificates(&dir) else {
        return;
    };
    if Command::new("python3").arg("--version").output().is_err() {
        println!("SKIPPED: python3 is missing");
        return;
    }
    let token = "h15-secret-token";
    let token_file = dir.join("token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let wrong_token = dir.join("wrong");
    std::fs::write(&wrong_token, "not-it\n").unwrap();
    let https = https_metrics(&dir, &cert, &key, token);
    let url = format!("https://{}/metrics", https.addr);
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let run = |extra: &[&Path], flags: &[&str]| -> Value {
        let json = dir.join("run.json");
        let mut cmd = Command::new(LOADLAB);
        cmd.args([
            "run",
            "--rate",
            "100",
            "-d",
            "1s",
            "--interval",
            "200ms",
            "-q",
        ])
        .args(["--server-metrics", &url, "--server-metrics-select"])
        .arg("app_uptime_seconds")
        .arg("--json")
        .arg(&json);
        for (flag, path) in flags.iter().zip(extra) {
            cmd.arg(flag).arg(path);
        }
        let out = cmd.arg(server.url("/")).output().unwrap();
        // A failed scrape is never fatal: every run completes.
        assert!(out.status.success(), "{}", stderr(&out));
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        common::assert_valid(&r);
        assert_eq!(r["measured"]["requests"]["completed"], 100);
        // The token is never stored in the result.
        assert!(!r.to_string().contains(token));
        r
    };
    // The CA and the token: every scrape answers.
    let r = run(
        &[&ca, &token_file],
        &["--metrics-cacert", "--metrics-token-file"],
    );
    let e = &r["server_metrics"]["endpoints"][0];
    assert_eq!(e["scrapes_failed"], 0, "{e}");
    assert!(e["scrapes_ok"].as_u64().unwrap() >= 4, "{e}");
    assert_eq!(e["series"][0]["series"], "app_uptime_seconds");
    // Without the CA: the system's roots do not know it; counted and named, with the fix.
    let r = run(&[&token_file], &["--metrics-token-file"]);
    let e = &r["server_metrics"]["endpoints"][0];
    assert_eq!(e["scrapes_ok"], 0, "{e}");
    assert!(e["scrapes_failed"].as_u64().unwrap() >= 4, "{e}");
    let last = e["last_error"].as_str().unwrap();
    assert!(
        last.contains("TLS") && last.contains("--metrics-cacert"),
        "{last}"
    );
    // The wrong token: refused by the endpoint, named with the fix.
    let r = run(
        &[&ca, &wrong_token],
        &["--metrics-cacert", "--metrics-token-file"],
    );
    let e = &r["server_metrics"]["endpoints"][0];
    assert_eq!(e["scrapes_ok"], 0, "{e}");
    let last = e["last_error"].as_str().unwrap();
    assert!(
        last.contains("401") && last.contains("--metrics-token-file"),
        "{last}"
    );
    let _ = std::fs::remove_file(dir.join("run.json"));
}

/// `openssl req -x509` as users make a certificate for a local HTTPS service (CA:TRUE, its own
/// issuer), into `NAME.pem` and `NAME.key`; None (SKIPPED) without the openssl command line.
fn req_x509(dir: &Path, name: &str) -> Option<(PathBuf, PathBuf)> {
    let (cert, key) = (format!("{name}.pem"), format!("{name}.key"));
    let out = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out",
        ])
        .arg(&cert)
        .args(["-subj", "/CN=localhost", "-addext"])
        .arg("subjectAltName=DNS:localhost,IP:127.0.0.1")
        .args(["-days", "30"])
        .current_dir(dir)
        .output();
    let Ok(out) = out else {
        println!("SKIPPED: the openssl command line is missing (apt-get install openssl)");
        return None;
    };
    assert!(out.status.success(), "openssl req -x509: {}", stderr(&out));
    Some((dir.join(cert), dir.join(key)))
}

/// Issue 45 item 3: `--metrics-cacert` trusts the self-signed certificate `openssl req -x509`
/// makes when it is the file given, as `--cacert` does for the load; another such certificate
/// is refused on every scrape with the reason and the flag that fixes it.
#[test]
fn metrics_cacert_trusts_the_openssl_self_signed_certificate_it_names() {
    let dir = scratch("self-signed");
    let Some((cert, key)) = req_x509(&dir, "served") else {
        return;
    };
    let Some((other, _)) = req_x509(&dir, "other") else {
        return;
    };
    if Command::new("python3").arg("--version").output().is_err() {
        println!("SKIPPED: python3 is missing");
        return;
    }
    let token = "h45-secret-token";
    let token_file = dir.join("token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let python_dir = dir.join("python");
    std::fs::create_dir_all(&python_dir).unwrap();
    let https = https_metrics(&python_dir, &cert, &key, token);
    let url = format!("https://{}/metrics", https.addr);
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let endpoint = |cacert: &Path| -> Value {
        let json = dir.join("run.json");
        let out = Command::new(LOADLAB)
            .args(["run", "-c", "1", "-n", "20", "-q"])
            .args(["--server-metrics", &url, "--server-metrics-select"])
            .arg("app_uptime_seconds")
            .arg("--metrics-cacert")
            .arg(cacert)
            .arg("--metrics-token-file")
            .arg(&token_file)
            .arg("--json")
            .arg(&json)
            .arg(server.url("/"))
            .output()
            .unwrap();
        // A failed scrape is never fatal.
        assert!(out.status.success(), "{}", stderr(&out));
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        common::assert_valid(&r);
        r["server_metrics"]["endpoints"][0].clone()
    };
    // The very certificate as the file: every scrape answers (at least the one at the start
    // and the one at the stop, whatever the clock).
    let e = endpoint(&cert);
    assert_eq!(e["scrapes_failed"], 0, "{e}");
    assert!(e["scrapes_ok"].as_u64().unwrap() >= 2, "{e}");
    assert_eq!(e["series"][0]["series"], "app_uptime_seconds", "{e}");
    // Another `req -x509` certificate: refused, named, with the fix.
    let e = endpoint(&other);
    assert_eq!(e["scrapes_ok"], 0, "{e}");
    assert!(e["scrapes_failed"].as_u64().unwrap() >= 2, "{e}");
    let last = e["last_error"].as_str().unwrap();
    assert!(
        last.contains("self-signed") && last.contains("--metrics-cacert FILE"),
        "{last}"
    );
}
