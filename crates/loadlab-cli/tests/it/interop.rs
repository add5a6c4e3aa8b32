//! The interop matrix's fast subset (issue 29): loadlab against servers no one here wrote
//! (Debian's nginx and Apache httpd, and go-httpbin), each cell's completed count checked
//! exactly against the server's own count. HTTP/1.1 with keep-alive, pipelined 16 deep, and a
//! connection per request; HTTPS with certificates made by the `openssl` command line: a leaf
//! under a test CA, a chain through an intermediate CA, and `openssl req -x509`'s self-signed
//! one (CA:TRUE, trusted with --cacert); h2 over TLS; a 1 MiB POST with `Expect:
//! 100-continue` (and HAProxy's answer before the body, when HAProxy is installed); every
//! scenario feature against go-httpbin; and HTTP/3 against Caddy (when installed), closed and
//! open loop over 100 streams, counted against the HTTP/3 lines of its JSON access log.
//!
//! The cells are `bench/interop.sh --fast`, the same code as the full matrix, run with this
//! build's loadlab; this test reads the cells it wrote. Without nginx, apache2 or go-httpbin
//! (`bash scripts/setup.sh` installs them) it prints SKIPPED and passes.

use crate::common;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Every cell of the fast subset, all of which must be exact.
const CELLS: [(&str, &[&str]); 3] = [
    ("nginx", &COMMON),
    ("apache", &COMMON),
    (
        "httpbin",
        &[
            "h1 keep-alive",
            "h1 new connection",
            "h1 pipeline 16",
            "https rsa2048",
            "https chain",
            "https req -x509 (CA:TRUE)",
            "h2 tls 8 streams",
            "post 1m expect-100",
            "scenario: every feature",
        ],
    ),
];
const COMMON: [&str; 8] = [
    "h1 keep-alive",
    "h1 new connection",
    "h1 pipeline 16",
    "https rsa2048",
    "https chain",
    "https req -x509 (CA:TRUE)",
    "h2 tls 8 streams",
    "post 1m expect-100",
];
/// HAProxy's `http-request return` answers a POST with `Expect: 100-continue` before its
/// body: loadlab must not send the body, and must end each connection with the answer (the
/// cell checks one connection per request). Checked when HAProxy is installed.
const HAPROXY: (&str, &[&str]) = ("haproxy", &["post 1m expect-100"]);
/// Caddy's HTTP/3 (quic-go): a closed loop of 500 requests on one connection's 100 streams,
/// an open loop of 500 in one second, and 200 requests on new connections of 5 streams with
/// --http3-0rtt (some sent as early data, every one accepted). Checked when Caddy is
/// installed.
const CADDY: (&str, &[&str]) = (
    "caddy",
    &[
        "h3 100 streams",
        "h3 open loop 100 streams",
        "h3 0-rtt new connections",
    ],
);

fn on_path(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn missing_tools() -> Vec<String> {
    let mut missing: Vec<String> = ["nginx", "apache2", "openssl", "curl", "python3"]
        .into_iter()
        .filter(|t| !on_path(t))
        .map(String::from)
        .collect();
    let httpbin = Path::new(ROOT).join("target/interop-tools/go-httpbin");
    if !httpbin.exists() {
        missing.push(httpbin.display().to_string());
    }
    missing
}

fn out_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loadlab-interop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn nginx_apache_and_go_httpbin_count_exactly_what_loadlab_completed() {
    let missing = missing_tools();
    if !missing.is_empty() {
        eprintln!(
            "SKIPPED: the interop test needs {} (bash scripts/setup.sh installs them)",
            missing.join(", ")
        );
        return;
    }
    let out = out_dir();
    let run = Command::new("bash")
        .arg(Path::new(ROOT).join("bench/interop.sh"))
        .arg("--fast")
        .env("LOADLAB", env!("CARGO_BIN_EXE_loadlab"))
        .env("INTEROP_OUT", &out)
        .output()
        .expect("bash runs bench/interop.sh");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    let cells = std::fs::read_to_string(out.join("cells.tsv")).unwrap_or_default();
    let context = format!("{stdout}\n{stderr}\n(runs kept in {})", out.display());
    assert!(run.status.success(), "interop cells failed:\n{context}");
    let haproxy = on_path("haproxy");
    if !haproxy {
        eprintln!("SKIPPED: HAProxy's expect-100 cell (apt-get install haproxy to run it)");
    }
    let caddy = on_path("caddy");
    if !caddy {
        eprintln!("SKIPPED: Caddy's HTTP/3 cells (apt-get install caddy to run them)");
    }
    let cells_wanted = CELLS
        .iter()
        .copied()
        .chain(haproxy.then_some(HAPROXY))
        .chain(caddy.then_some(CADDY));
    for (server, features) in cells_wanted {
        for feature in features {
            let row = cells
                .lines()
                .map(|l| l.split('\t').collect::<Vec<_>>())
                .find(|c| c[0] == server && c[1] == *feature);
            let Some(row) = row else {
                panic!("no cell {server} / {feature}:\n{context}");
            };
            assert_eq!(
                row[2], "exact",
                "{server} / {feature}: {}\n{context}",
                row[3]
            );
        }
    }
    // Apache refusing a missing client certificate after a TLS 1.3 handshake (an alert on
    // the first read): refused as `tls_handshake`, and the message names the fix.
    let refusal = cells
        .lines()
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .find(|c| c[0] == "apache" && c[1] == "mtls without a cert, tls 1.3")
        .unwrap_or_else(|| panic!("no cell apache / mtls without a cert, tls 1.3:\n{context}"));
    assert_eq!(
        refusal[2], "refused as expected",
        "{}\n{context}",
        refusal[3]
    );
    assert!(
        refusal[3].contains("client certificate") && refusal[3].contains("--cert FILE --key FILE"),
        "{}",
        refusal[3]
    );
    // 0-RTT against a server no one here wrote: the early requests counted apart, in a
    // result that follows the schema.
    if caddy {
        let path = out.join("runs/caddy-h3_0-rtt_new_connections.json");
        let text = std::fs::read_to_string(&path).expect("the 0-RTT cell's result");
        let result: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        common::assert_valid(&result);
        let early = &result["measured"]["early_data"];
        let sent = early["requests"].as_u64().expect("early requests");
        assert!(sent > 0, "{early}");
        assert_eq!(early["requests_accepted"].as_u64(), Some(sent), "{early}");
        let resumed = early["connections_accepted"]
            .as_u64()
            .expect("0-RTT connections");
        assert_eq!(result["measured"]["tls_resumed"].as_u64(), Some(resumed));
    }
    // The table names every server and says how long it took.
    assert!(stdout.contains("wall time"), "{stdout}");
    let _ = std::fs::remove_dir_all(&out);
}
