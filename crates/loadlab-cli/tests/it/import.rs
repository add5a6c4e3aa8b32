//! `loadlab import` end to end: the real binary writes scenario files from the importer's
//! fixtures (crates/loadlab-import/tests/fixtures), refuses malformed input with exit code 2,
//! and the files it writes replay with `loadlab run --scenario` against loopback servers
//! that judge what they receive: post 000's collection against the portfolio (over TLS, as
//! the collection's `https://{{URL}}` asks), and a recorded login against a shop that issues
//! its own tokens and rejects any other.

use crate::common;
use common::loadlab;
use loadlab_testkit::ScratchDir;
use loadlab_testkit::{Answer, RouteServer, Seen, TestCa};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../loadlab-import/tests/fixtures")
        .join(name)
}

fn scratch(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("import-{name}"))
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `loadlab import KIND FIXTURE [ARGS...] -o OUT`, where each of `args` naming a fixture file
/// (`--environment shop.postman_environment.json`) is given by its path.
fn import_to(kind: &str, source: &str, args: &[&str], out: &Path) -> Output {
    let mut cmd = loadlab();
    cmd.args(["import", kind]).arg(fixture(source));
    for a in args {
        if a.ends_with(".json") {
            cmd.arg(fixture(a));
        } else {
            cmd.arg(a);
        }
    }
    cmd.arg("-o").arg(out).output().unwrap()
}

#[test]
fn import_writes_the_scenario_and_prints_the_report() {
    let dir = scratch("write");
    let file = dir.join("portfolio.toml");
    let out = import_to("postman", "post-000.postman_collection.json", &[], &file);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.is_empty(), "the scenario goes to the file: {stdout}");
    assert!(
        stderr.starts_with(&format!(
            "imported 5 steps and 2 variables to {}\nnot carried over, or carried over differently:\n  - step \"404 Not Found\": expects status 404",
            file.display()
        )),
        "{stderr}"
    );
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        written.contains("[variables]\nURL = \"localhost:8080\"\nBLOG_ID = \"001\"\n"),
        "{written}"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left: {leftovers:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_the_loader_cannot_load_yet_is_written_with_a_warning() {
    // The shop's form-data sends receipt.pdf, which is looked for next to the scenario.
    let dir = scratch("not-loadable");
    let file = dir.join("shop.toml");
    let out = import_to(
        "postman",
        "shop.postman_collection.json",
        &["--environment", "shop.postman_environment.json"],
        &file,
    );
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: `loadlab run --scenario` refuses the file as it is: ")
            && stderr.contains("receipt.pdf"),
        "{stderr}"
    );
    std::fs::copy(fixture("receipt.pdf"), dir.join("receipt.pdf")).unwrap();
    let again = import_to(
        "postman",
        "shop.postman_collection.json",
        &["--environment", "shop.postman_environment.json"],
        &file,
    );
    let (_, stderr) = text(&again);
    assert!(again.status.success(), "{:?} {stderr}", again.status);
    assert!(!stderr.contains("warning:"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_o_the_scenario_goes_to_standard_output() {
    let out = loadlab()
        .args([
            "import",
            "curl",
            "curl 'http://127.0.0.1:8080/echo' --data-raw 'a=1' -k",
            "--var",
            "X=1",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.starts_with("# Imported by `loadlab import curl`"),
        "{stdout}"
    );
    assert!(
        stdout.contains("[variables]\nBASE_URL = \"http://127.0.0.1:8080\"\nX = \"1\"\n"),
        "{stdout}"
    );
    assert!(
        stderr.contains("  - -k: not carried over (certificate checks were off"),
        "{stderr}"
    );
}

#[test]
fn bad_input_exits_2_naming_the_item_and_field_and_leaves_the_old_file() {
    let dir = scratch("bad");
    let file = dir.join("kept.toml");
    std::fs::write(&file, "# an earlier scenario\n").unwrap();
    let no_url = dir.join("no-url.json");
    std::fs::write(
        &no_url,
        r#"{"info": {"name": "t", "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},
            "item": [{"name": "Broken", "request": {"method": "GET", "url": ""}}]}"#,
    )
    .unwrap();
    let not_json = dir.join("not.har");
    std::fs::write(&not_json, "<html>not a recording</html>").unwrap();
    let post_000 = fixture("post-000.postman_collection.json");
    let missing = dir.join("missing.json");
    let cases: [(Vec<&std::ffi::OsStr>, &str); 5] = [
        (
            vec!["postman".as_ref(), no_url.as_os_str()],
            "error: item \"Broken\": request.url: no URL",
        ),
        (
            vec!["har".as_ref(), not_json.as_os_str()],
            "error: HAR file not.har is not JSON: expected value at line 1 column 1",
        ),
        (
            vec!["postman".as_ref(), post_000.as_os_str(), "--var".as_ref(), "BAD NAME=x".as_ref()],
            "error: --var BAD NAME=x: \"BAD NAME\" is not a variable name",
        ),
        (
            vec!["curl".as_ref(), "curl http://h/{{TOKEN}}".as_ref()],
            "error: step \"GET /{{TOKEN}}\": url: unknown variable {{TOKEN}}: define it in the source, or give it with --var TOKEN=VALUE",
        ),
        (
            vec!["postman".as_ref(), missing.as_os_str()],
            "error: cannot read the collection",
        ),
    ];
    for (args, want) in cases {
        let out = loadlab()
            .arg("import")
            .args(&args)
            .arg("-o")
            .arg(&file)
            .output()
            .unwrap();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with(want),
            "{args:?}:\nwant {want}\n got {stderr}"
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "# an earlier scenario\n"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- Replays (`loadlab run --scenario`) -------------------------------------------------

/// A whole response with a Content-Length body.
fn reply(status: u16, content_type: &str, body: &str, headers: &[(&str, &str)]) -> Answer {
    let mut out = format!(
        "HTTP/1.1 {status} Test\r\nContent-Length: {}\r\nContent-Type: {content_type}\r\n",
        body.len()
    );
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    Answer::from(out.into_bytes())
}

/// What a replay server saw: (path, status it answered) in order.
type Answered = Arc<Mutex<Vec<(String, u16)>>>;

/// The portfolio's pages, rendered by loadlab's reference renderer from targets/content,
/// over TLS with a certificate for 127.0.0.1 and localhost.
fn portfolio(ca: &TestCa, seen: Answered) -> RouteServer {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let site = loadlab_lab::content::ReferenceSite::load(&repo.join("targets/content"))
        .expect("the portfolio's content renders");
    let not_found = site
        .pages
        .iter()
        .find(|p| p.status == 404)
        .expect("a 404 page")
        .body
        .clone();
    RouteServer::start_tls(
        move |r: &Seen| {
            let (status, body) = site
                .pages
                .iter()
                .find(|p| p.path == r.route() && p.status == 200 && r.method == "GET")
                .map_or((404, not_found.as_str()), |p| (200, p.body.as_str()));
            seen.lock().unwrap().push((r.route().to_string(), status));
            reply(status, "text/html; charset=utf-8", body, &[])
        },
        ca,
    )
}

/// Every step of the result's scenario section: (name, completed, failed, status codes).
fn step_figures(doc: &Value) -> Vec<(String, u64, u64, Value)> {
    doc["scenario"]["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no scenario section: {doc}"))
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["completed"].as_u64().unwrap(),
                s["failed"].as_u64().unwrap(),
                s["status_codes"].clone(),
            )
        })
        .collect()
}

fn run_scenario(file: &Path, args: &[&str], json: &Path) -> (Output, Value) {
    let out = loadlab()
        .args(["run", "--scenario"])
        .arg(file)
        .args(args)
        .arg("--json")
        .arg(json)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    let doc = std::fs::read_to_string(json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| {
            panic!(
                "no result ({:?})\nstdout:\n{stdout}\nstderr:\n{stderr}",
                out.status
            )
        });
    (out, doc)
}

#[test]
fn post_000s_collection_replays_against_the_portfolio_with_every_step_as_expected() {
    let dir = scratch("post-000");
    let file = dir.join("portfolio.toml");
    let imported = import_to("postman", "post-000.postman_collection.json", &[], &file);
    assert!(imported.status.success(), "{}", text(&imported).1);

    let ca = TestCa::new();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let seen: Answered = Arc::default();
    let server = portfolio(&ca, seen.clone());
    let url = format!("localhost:{}", server.addr().port());
    let json = dir.join("result.json");
    let (out, doc) = run_scenario(
        &file,
        &[
            "--var",
            &format!("URL={url}"),
            "--cacert",
            ca_file.to_str().unwrap(),
            "-c",
            "2",
            "-d",
            "1s",
        ],
        &json,
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");

    // The server's own account: every page of the collection asked for, each answered as
    // the contract says.
    let seen = seen.lock().unwrap().clone();
    let mut by_path: HashMap<String, (u16, usize)> = HashMap::new();
    for (path, status) in &seen {
        let e = by_path.entry(path.clone()).or_insert((*status, 0));
        assert_eq!(e.0, *status, "{path} answered two ways");
        e.1 += 1;
    }
    let want = [
        ("/", 200),
        ("/blogs", 200),
        ("/blogs/001", 200),
        ("/version", 200),
        ("/not-found", 404),
    ];
    assert_eq!(by_path.len(), want.len(), "{by_path:?}");
    for (path, status) in want {
        let (got, n) = by_path[path];
        assert_eq!(got, status, "{path}");
        assert!(n >= 1);
    }
    // And loadlab's, step by step: the 404 was expected (a check said so), so nothing failed.
    let steps = step_figures(&doc);
    let names: Vec<&str> = steps.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        names,
        ["Home", "Blogs", "Blog 001", "Version", "404 Not Found"]
    );
    for (name, completed, failed, statuses) in &steps {
        assert!(*completed >= 1, "{name}: {stdout}");
        assert_eq!(*failed, 0, "{name}: {stdout}");
        let want = if name == "404 Not Found" {
            "404"
        } else {
            "200"
        };
        let got: Vec<&String> = statuses.as_object().unwrap().keys().collect();
        assert_eq!(got, [want], "{name}");
    }
    assert_eq!(doc["measured"]["requests"]["failed"], 0, "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A shop that issues a fresh token at every login and accepts only tokens it issued; the
/// ids it hands out depend on the token, so a replay that sends the recorded ones is refused.
#[derive(Default)]
struct Shop {
    /// token -> login number
    tokens: HashMap<String, u64>,
    logins: u64,
    rejected: u64,
    accepted: u64,
}

fn shop_server(shop: Arc<Mutex<Shop>>) -> RouteServer {
    RouteServer::start(move |r: &Seen| {
        let mut s = shop.lock().unwrap();
        let json = |status: u16, body: String| reply(status, "application/json", &body, &[]);
        match (r.method.as_str(), r.route()) {
            ("GET", "/") => {
                return reply(200, "text/html", "<!doctype html><title>Shop</title>", &[])
            }
            ("POST", "/api/login") => {
                // The recorded password was taken out at import: the replay gives it.
                if !String::from_utf8_lossy(&r.body).contains(r#""password": "correct horse""#) {
                    s.rejected += 1;
                    return json(401, r#"{"error":"wrong password"}"#.into());
                }
                s.logins += 1;
                let n = s.logins;
                let token = format!(
                    "srv{n:04}.{:016x}",
                    0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(n)
                );
                s.tokens.insert(token.clone(), n);
                let body = format!(
                    r#"{{"token":"{token}","user":{{"id":"u-srv{n:05}","name":"Alice"}}}}"#
                );
                let cookie = format!("sid=s{n:012}; Path=/; HttpOnly");
                return reply(200, "application/json", &body, &[("Set-Cookie", &cookie)]);
            }
            _ => {}
        }
        let user = r
            .header("authorization")
            .and_then(|a| a.strip_prefix("Bearer "))
            .and_then(|t| s.tokens.get(t).copied());
        let Some(n) = user else {
            s.rejected += 1;
            return json(401, r#"{"error":"bad token"}"#.into());
        };
        let order = format!("o-srv-{n:06}");
        let answer = match (r.method.as_str(), r.route()) {
            ("GET", "/api/orders") => json(
                200,
                format!(r#"{{"orders":[{{"id":"{order}","total":42}}]}}"#),
            ),
            ("GET", p) if p == format!("/api/orders/{order}") => {
                json(200, format!(r#"{{"id":"{order}"}}"#))
            }
            ("PATCH", p) if p == format!("/api/users/u-srv{n:05}") => {
                let body = String::from_utf8_lossy(&r.body);
                if body.contains(&format!("last_order={order}")) {
                    json(200, r#"{"ok":true}"#.into())
                } else {
                    json(
                        422,
                        format!(r#"{{"error":"last_order is not yours: {body}"}}"#),
                    )
                }
            }
            ("GET", "/api/recommendations") => json(404, r#"{"error":"not found"}"#.into()),
            _ => json(403, r#"{"error":"not yours"}"#.into()),
        };
        s.accepted += 1;
        answer
    })
}

#[test]
fn a_recorded_login_replays_against_a_server_that_rejects_a_wrong_token() {
    let dir = scratch("login");
    let file = dir.join("login.toml");
    let imported = import_to("har", "login.har", &["--think", "none"], &file);
    assert!(imported.status.success(), "{}", text(&imported).1);

    let shop: Arc<Mutex<Shop>> = Arc::default();
    let server = shop_server(shop.clone());
    // The server refuses the token the browser recorded: a replay that sent it would fail.
    let recorded = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLW9mLWFsaWNl";
    let mut probe = std::net::TcpStream::connect(server.addr()).unwrap();
    write!(probe, "GET /api/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {recorded}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    probe.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert_eq!(shop.lock().unwrap().rejected, 1);
    shop.lock().unwrap().rejected = 0;

    let json = dir.join("result.json");
    let base = format!("BASE_URL=http://{}", server.addr());
    let imported_text = std::fs::read_to_string(&file).unwrap();
    assert!(!imported_text.contains("correct horse"), "{imported_text}");
    let (out, doc) = run_scenario(
        &file,
        &[
            "--var",
            &base,
            "--var",
            "PASSWORD=correct horse",
            "-c",
            "2",
            "-d",
            "1s",
        ],
        &json,
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let s = shop.lock().unwrap();
    assert!(
        s.logins >= 2,
        "every virtual user logs in: {} logins",
        s.logins
    );
    assert_eq!(s.rejected, 0, "a request went without its own token");
    // Four authorized requests per iteration; the iterations still running when the run
    // ended (at most one per virtual user) may have stopped short.
    assert!(
        s.accepted >= 4 * s.logins.saturating_sub(2),
        "{} accepted for {} logins",
        s.accepted,
        s.logins
    );
    assert_eq!(doc["measured"]["requests"]["failed"], 0, "{stdout}");
    let statuses = &doc["measured"]["status_codes"];
    for bad in ["401", "403", "422"] {
        assert!(statuses.get(bad).is_none(), "{statuses}");
    }
    let steps = step_figures(&doc);
    assert_eq!(steps.len(), 6);
    for (name, completed, failed, _) in &steps {
        assert!(*completed >= 1, "{name}: {stdout}");
        assert_eq!(*failed, 0, "{name}: {stdout}");
    }
    drop(s);

    // Without the capture, the recorded token goes out and the shop refuses it: the same
    // run, through loadlab, fails where it should.
    let written = std::fs::read_to_string(&file).unwrap();
    let uncorrelated = written.replace("{{TOKEN}}", recorded).replace(
        "[[steps.captures]]\nvar = \"TOKEN\"\njson = \"$.token\"\n",
        "",
    );
    assert_ne!(uncorrelated, written);
    let stale = dir.join("stale.toml");
    std::fs::write(&stale, uncorrelated).unwrap();
    let (_, doc) = run_scenario(
        &stale,
        &["--var", &base, "-c", "1", "-d", "500ms"],
        &dir.join("stale.json"),
    );
    assert!(shop.lock().unwrap().rejected >= 1);
    let steps = step_figures(&doc);
    assert!(
        steps[2].2 >= 1,
        "GET /api/orders failed with the recorded token: {steps:?}"
    );
    assert_eq!(steps[2].3["401"], steps[2].2, "{steps:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
