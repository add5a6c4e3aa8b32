//! The path over HTTP/3 (issue 52): the same cap as over TCP, a `tbf` of 10 Mbit/s on the
//! bridge's side of a generator's link (invisible to it), in front of an HTTP/3 server that
//! serves far more (the in-process quinn server, its socket bound in the server's
//! namespace, answering 12 KB). quinn's round trips must show the queue the cap holds, and
//! the same rule name it; uncapped, no path is named.

use crate::common::serial;
use crate::netns::{in_ns, Lab};
use loadlab_testkit::{H3Server, ScratchDir, TestCa};
use serde_json::Value;
use std::net::SocketAddr;

/// `loadlab run --http3 ARGS URL` from `lab`'s generator host; its result.
fn run(lab: &Lab, dir: &ScratchDir, name: &str, url: &str, args: &[&str]) -> Value {
    let json = dir.join(format!("{name}.json"));
    let out = in_ns(&lab.hosts[0].0, env!("CARGO_BIN_EXE_loadlab"))
        .args([
            "run",
            "-q",
            "--no-save",
            "--http3",
            "--insecure",
            "-c",
            "16",
        ])
        .args(args)
        .arg("--json")
        .arg(&json)
        .arg(url)
        .output()
        .expect("loadlab runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = std::fs::read(&json)
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or_else(|e| panic!("no result ({e}): {said}"));
    eprintln!("{name}: {}\n{}", result["verdicts"], result["path"]);
    result
}

fn named_a_queue(result: &Value) -> bool {
    result["verdicts"]
        .to_string()
        .contains("a queue on the path, not in the server")
}

#[test]
fn over_http3_a_capped_path_is_named_a_queue_and_an_uncapped_one_is_not() {
    let _serial = serial();
    let lab = match Lab::new(1) {
        Ok(lab) => lab,
        Err(e) => {
            eprintln!("SKIPPED: no test hosts here ({e})");
            return;
        }
    };
    let dir = ScratchDir::new("paths-h3");
    let ca = TestCa::new();
    let (ns, addr) = lab.server.clone();
    let server = H3Server::start_on_socket(Lab::bind_udp_in(&ns, SocketAddr::from((addr, 0))), &ca);
    let url = format!("https://{addr}:{}/bytes?n=12288", server.addr().port());

    let open = run(
        &lab,
        &dir,
        "uncapped",
        &url,
        &["-d", "1s", "--warmup", "300ms"],
    );
    assert_eq!(open["path"][0]["transport"], "quic", "{}", open["path"]);
    assert!(!named_a_queue(&open), "uncapped: {}", open["verdicts"]);

    lab.cap_down(0, "10mbit").unwrap();
    let capped = run(
        &lab,
        &dir,
        "capped",
        &url,
        &["-d", "2s", "--warmup", "500ms"],
    );
    assert!(named_a_queue(&capped), "capped: {}", capped["verdicts"]);
    let verdict = capped["verdicts"].to_string();
    assert!(
        verdict.contains("the path to this machine carried"),
        "{verdict}"
    );
}
